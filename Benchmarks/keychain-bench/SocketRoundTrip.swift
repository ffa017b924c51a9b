import Foundation
import KeychainLibc

/// The floor of any agent: a message sent over a Unix stream socket to another process that
/// writes it straight back (`keychain-bench --internal-echo`), timed as a lookup through
/// `keychaind` is, with a request's size. What a lookup through the agent costs above the same
/// lookup in process, less this round trip, is the agent's own work and its client's.
///
/// Both sides wait as the agent's do: the echo process in a blocking `read`, this one in
/// `poll` and then `recv`, as ``KeychainClient/AgentConnection`` waits. On a virtual machine
/// most of the round trip is waking a thread on the other core.
final class SocketEcho {
    private let socket: Int32
    private let pid: pid_t
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// The size of the message: about that of a lookup's request.
    static let messageSize = 300

    /// Starts `executable --internal-echo` on one end of a socket pair.
    init(executable: String) throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw BenchmarkFailure("socketpair failed: errno \(errno)")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[1], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        var child: pid_t = 0
        let arguments = [executable, "--internal-echo"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let spawned = posix_spawn(&child, executable, &actions, nil, argv, environ)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            throw BenchmarkFailure("cannot start \(executable) --internal-echo: errno \(spawned)")
        }
        socket = ends[0]
        pid = child
    }

    deinit {
        close(socket)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// Sends `message` and waits until all of it has come back.
    func roundTrip(_ message: [UInt8]) throws {
        let sent = message.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == message.count else { throw BenchmarkFailure("echo: send failed: errno \(errno)") }
        var received = 0
        while received < message.count {
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 10_000)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw BenchmarkFailure("echo: no answer within 10 s (poll: \(ready))") }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard count > 0 else { throw BenchmarkFailure("echo: the echo process closed the socket") }
            received += count
        }
    }

    /// The echo process's loop: writes back what standard input (a socket) reads, until it closes.
    static func serve() -> Int32 {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return 0 }
            var written = 0
            while written < count {
                let step = buffer.withUnsafeBytes { write(0, $0.baseAddress! + written, count - written) }
                if step < 0 && errno == EINTR { continue }
                guard step > 0 else { return 1 }
                written += step
            }
        }
    }
}
