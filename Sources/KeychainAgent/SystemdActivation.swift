import DBusNIO
import DBusWire
import KeychainLibc

/// The listening socket systemd passes to a socket-activated service (`keychaind.socket`), read
/// as `sd_listen_fds(1)` reads it, without linking libsystemd.
///
/// systemd sets `LISTEN_PID` to the service's pid and `LISTEN_FDS` to the number of descriptors
/// it passed, starting at 3 (`SD_LISTEN_FDS_START`). keychaind listens on one socket: the first.
///
/// ```swift
/// if let fd = SystemdActivation.listeningSocket(environment: ProcessInfo.processInfo.environment) {
///     server = try await DBusServer.serve(listeningSocket: fd, unixPath: location.socketPath, objects: objects)
/// } else {
///     let listener = try AgentListener(location: location)
///     // …
/// }
/// ```
public enum SystemdActivation {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    public static let firstDescriptor: Int32 = 3

    /// The variables systemd sets for an activated service.
    public static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    /// The socket systemd passed, or `nil` when this process was not socket-activated.
    ///
    /// It is the descriptor 3 when `LISTEN_PID` is this process's pid and `LISTEN_FDS` is at
    /// least 1, and only if that descriptor is an `AF_UNIX` `SOCK_STREAM` socket in the listening
    /// state (`SO_DOMAIN`, `SO_TYPE`, `SO_ACCEPTCONN`). Every passed descriptor is made
    /// close-on-exec. The variables are removed from the process's environment afterwards, so
    /// that children do not see them, as `sd_listen_fds(1)` does.
    ///
    /// - Parameters:
    ///   - environment: The environment to read (the process's, in keychaind).
    ///   - unsettingVariables: Remove ``variables`` from the process's environment (with
    ///     `unsetenv`), whatever the outcome. On by default.
    /// - Returns: The listening socket, owned by the caller, or `nil`.
    public static func listeningSocket(environment: [String: String], unsettingVariables: Bool = true) -> Int32? {
        let sockets = listeningSockets(environment: environment, unsettingVariables: unsettingVariables)
        return sockets.first == firstDescriptor ? firstDescriptor : nil
    }

    /// Every socket systemd passed that is an `AF_UNIX` `SOCK_STREAM` socket in the listening
    /// state, in the order passed (`keychaind.socket` passes the agent's socket, then the SSH
    /// agent's); empty when this process was not socket-activated. As ``listeningSocket(environment:unsettingVariables:)``,
    /// every passed descriptor is made close-on-exec and the variables are removed.
    public static func listeningSockets(environment: [String: String], unsettingVariables: Bool = true) -> [Int32] {
        defer {
            if unsettingVariables { variables.forEach { unsetenv($0) } }
        }
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap({ Int32($0) }), count >= 1
        else { return [] }
        // Past the descriptors this process may have open, the count is nonsense.
        let limit = Int32(min(Int(count), 1024))
        for fd in firstDescriptor..<(firstDescriptor + limit) {
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
        return (firstDescriptor..<(firstDescriptor + limit)).filter(DBusServer.isListeningUnixStreamSocket)
    }

    /// The path a Unix socket is bound to (`getsockname`), or `nil` for an unbound or abstract one.
    public static func boundPath(of socket: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.hasPrefix("/") ? path : nil
    }
}
