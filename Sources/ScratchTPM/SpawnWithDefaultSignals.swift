import Foundation
import KeychainLibc

/// `posix_spawn` failed with this error number.
public struct SpawnFailure: Error, CustomStringConvertible {
    /// The error number `posix_spawn` returned.
    public let code: Int32
    /// The program that did not start.
    public let executable: String

    public var description: String { "cannot start \(executable): errno \(code)" }
}

/// Starts `executable` with `posix_spawn` as the tests start the programs they drive: with no
/// signal blocked and SIGTERM, SIGINT, SIGHUP and SIGPIPE at their default actions (a child of
/// the test runner would otherwise inherit its blocked SIGTERM and stop only when killed), and
/// the descriptors `files` sets up. Not Foundation's `Process`, which takes a program that execs
/// another (setpriv, systemd-socket-activate) for ended when the first closes its descriptors,
/// and then blocks in `waitpid` on it, so that no other `Process` of the runner is seen to end.
/// - Returns: The child's pid.
/// - Throws: ``SpawnFailure``.
public func spawnWithDefaultSignals(
    _ executable: String, _ arguments: [String], environment: [String: String],
    files: (inout posix_spawn_file_actions_t) -> Void
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    files(&actions)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid: pid_t = 0
    let spawned = withDefaultSignals { posix_spawn(&pid, executable, &actions, &$0, argv, envp) }
    guard spawned == 0 else { throw SpawnFailure(code: spawned, executable: executable) }
    return pid
}
