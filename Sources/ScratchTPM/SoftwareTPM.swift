import Foundation
import KeychainLibc

/// A running `swtpm` (Debian's `swtpm`): a TPM 2.0 of its own, with a state directory of its own
/// (a machine of its own), stopped by pid when released.
///
/// Its two sockets (commands, and the control channel tpm2-tss's `swtpm` TCTI uses) are Unix
/// sockets bound and listening *before* swtpm starts and handed to it by descriptor, so there is
/// no port to race for and no wait: a client's first connection queues until swtpm accepts it.
public final class SoftwareTPM: @unchecked Sendable {
    /// The TPM's state directory: start another `SoftwareTPM` on it for the same machine again
    /// (a directory this value made is removed when it is released).
    public let state: String
    /// The command socket; the control socket is beside it, with `.ctrl` appended.
    public let socketPath: String
    private var pid: pid_t = 0
    /// Whether this value made ``state`` (and so removes it when released).
    private let ownsState: Bool

    /// The TCTI configuration that reaches this TPM through tpm2-tss.
    public var tcti: String { "swtpm:path=\(socketPath)" }

    /// Starts a TPM on the state in `existing` (a fresh state directory when `nil`), its sockets
    /// reachable by `owner` as well as by this process's user.
    /// - Throws: when `/usr/bin/swtpm` is missing (`bash .ci/run` installs it) or does not start.
    public init(state existing: String? = nil, owner: (uid: uid_t, gid: gid_t)? = nil) throws {
        let swtpm = "/usr/bin/swtpm"
        guard FileManager.default.isExecutableFile(atPath: swtpm) else {
            throw SoftwareTPMFailure("\(swtpm) is missing (bash .ci/run installs swtpm)")
        }
        ownsState = existing == nil
        state = existing ?? NSTemporaryDirectory() + "swtpm-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        // A socket path of its own per start (sun_path holds 108 bytes).
        let sockets = NSTemporaryDirectory() + "tpm-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: true)
        socketPath = sockets + "/tpm"
        let commands = try Self.listeningSocket(at: socketPath)
        defer { close(commands) }
        let control = try Self.listeningSocket(at: socketPath + ".ctrl")
        defer { close(control) }
        if let owner {
            for path in [sockets, socketPath, socketPath + ".ctrl"] where chown(path, owner.uid, owner.gid) != 0 {
                throw SoftwareTPMFailure("chown \(path): errno \(errno)")
            }
        }
        pid = try spawnWithDefaultSignals(
            swtpm,
            [
                "socket", "--tpm2", "--tpmstate", "dir=\(state)", "--server", "type=unixio,fd=3", "--ctrl",
                "type=unixio,fd=4", "--flags", "not-need-init,startup-clear",
            ], environment: ["PATH": "/usr/bin:/bin"]
        ) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, state + "/swtpm.log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, commands, 3)
            posix_spawn_file_actions_adddup2(&actions, control, 4)
        }
    }

    /// Stops this TPM (SIGTERM, then SIGKILL after ten seconds), keeping its state.
    public func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        var waited = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if waited == 1_000 {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
            waited += 1
        }
        pid = 0
        try? FileManager.default.removeItem(atPath: (socketPath as NSString).deletingLastPathComponent)
    }

    deinit {
        stop()
        if ownsState { try? FileManager.default.removeItem(atPath: state) }
    }

    /// A Unix stream socket bound at `path` and listening.
    private static func listeningSocket(at path: String) throws -> Int32 {
        let low = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard low >= 0 else { throw SoftwareTPMFailure("socket: errno \(errno)") }
        // Above the descriptors the child gets (3 and 4), so that neither dup2 clobbers the other.
        let fd = fcntl(low, F_DUPFD_CLOEXEC, 10)
        close(low)
        guard fd >= 0 else { throw SoftwareTPMFailure("fcntl: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw SoftwareTPMFailure("bind/listen \(path): errno \(errno)")
        }
        return fd
    }
}

/// Why a ``SoftwareTPM`` did not start.
public struct SoftwareTPMFailure: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    init(_ text: String) { description = text }
}
