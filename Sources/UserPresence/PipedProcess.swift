import CKeychainAgent
import Foundation
import KeychainLibc

/// A program started with its standard input and output on pipes of this process and its errors
/// thrown away, holding no other descriptor of ours, with the default signal actions
/// (``KeychainLibc/withDefaultSignals(_:)``): a dialog (pinentry) or a helper (polkit's) spoken
/// to line by line.
package struct PipedProcess: Sendable {
    /// The program's process.
    package let pid: pid_t
    /// Where this process writes the program's input.
    package let input: Int32
    /// Where this process reads the program's output.
    package let output: Int32

    /// Starts `arguments[0]` with `arguments` and exactly `environment`.
    /// - Throws: `errno`'s number, as a `POSIXError`, when a pipe cannot be made or the program
    ///   cannot be started.
    package init(arguments: [String], environment: [String: String]) throws {
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        guard ck_pipe_cloexec(&toChild) == 0 else { throw Self.error(errno) }
        guard ck_pipe_cloexec(&fromChild) == 0 else {
            let failure = errno
            close(toChild[0])
            close(toChild[1])
            throw Self.error(failure)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        _ = ck_spawn_add_closefrom(&actions, 3)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var child: pid_t = 0
        let spawned = withDefaultSignals { posix_spawn(&child, arguments[0], &actions, &$0, argv, envp) }
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw Self.error(spawned)
        }
        pid = child
        input = toChild[1]
        output = fromChild[0]
    }

    private static func error(_ number: Int32) -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: number) ?? .EIO)
    }

    /// Closes both pipes, ends the program if it still runs (`SIGTERM`, then `SIGKILL` after
    /// `grace`) and waits for it.
    /// - Returns: Its exit status, as `waitpid` gives it.
    @discardableResult
    package func finish(grace: Duration = .seconds(1)) -> Int32 {
        close(input)
        close(output)
        var status: Int32 = 0
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno != EINTR) { return status }
            usleep(10_000)
        }
        kill(pid, SIGTERM)
        usleep(50_000)
        if waitpid(pid, &status, WNOHANG) == pid { return status }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return status
    }
}
