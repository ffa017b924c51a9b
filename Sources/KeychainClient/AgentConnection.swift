import CKeychainAgent
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import KeychainLibc
import Synchronization

/// A connection to the session agent, for synchronous callers (`SecItem*` is synchronous).
///
/// It is a plain blocking Unix socket speaking D-Bus: no event loop and no thread of its own,
/// so a short-lived process pays for one `connect` and one round trip per call. The
/// authentication (`AUTH EXTERNAL`, the kernel's `SO_PEERCRED` is what the agent trusts) is
/// sent together with the first call, so connecting and asking take one round trip. Calls from
/// several threads are answered one after another.
public final class AgentConnection: Sendable {
    /// The agent's socket.
    public let socketPath: String
    /// The access groups this process narrows itself to on each connection (its
    /// `KEYCHAIN_ACCESS_GROUPS`), or `nil` for those the agent gives it.
    public let accessGroups: [String]?
    private let timeout: Duration
    private let state: Mutex<State>

    private struct State: ~Copyable {
        var socket: Int32 = -1
        var serial: UInt32 = 0
        var authenticated = false
        var buffer: [UInt8] = []
    }

    /// Connects to the agent listening at `socketPath`.
    /// - Parameters:
    ///   - socketPath: The agent's socket.
    ///   - timeout: How long a call waits for the agent's answer before it fails.
    ///   - accessGroups: The groups to narrow this connection to before its first call (the
    ///     agent refuses groups the process does not have); by default the process's
    ///     `KEYCHAIN_ACCESS_GROUPS`, as in-process. The agent serves every process of the user,
    ///     so this travels with the connection and never through the agent's environment.
    /// - Throws: ``KeychainCore/KeychainError`` `.notAvailable` when no agent listens there.
    public init(
        socketPath: String, timeout: Duration = .seconds(60),
        accessGroups: [String]? = AgentConnection.configuredAccessGroups()
    ) throws {
        self.socketPath = socketPath
        self.timeout = timeout
        self.accessGroups = accessGroups
        let socket = try Self.connect(socketPath, timeout: timeout)
        state = Mutex(State(socket: socket))
    }

    deinit { close() }

    /// Calls `method` with `arguments` and returns the agent's answer.
    ///
    /// When the connection has broken (the agent was restarted), the call is made once more on a
    /// new connection; a second failure is reported.
    /// - Throws: The agent's ``KeychainCore/KeychainError``, or `.interactionNotAllowed` when the
    ///   agent cannot be reached or does not answer.
    public func call(_ method: AgentInterface.Method, _ arguments: [DBusValue]) throws -> [DBusValue] {
        try call(method, arguments) { try $0.readAll() }
    }

    /// Calls `method` with `arguments` and reads the agent's answer with `read`, straight from
    /// its wire form (no ``DBusWire/DBusValue`` is built for what `read` reads itself).
    ///
    /// The connection is retried as ``call(_:_:)`` does.
    /// - Throws: The agent's ``KeychainCore/KeychainError``; `.interactionNotAllowed` when the
    ///   agent cannot be reached or does not answer; what `read` throws.
    package func call<Answer>(
        _ method: AgentInterface.Method, _ arguments: [DBusValue],
        reading read: (inout DBusBodyReader) throws -> Answer
    ) throws -> Answer {
        let message = DBusMessage.methodCall(
            path: AgentInterface.objectPath, interface: AgentInterface.name, member: method.rawValue, body: arguments)
        var answer = try state.withLock { state throws(KeychainError) -> DBusBodyReader in
            do {
                return try exchange(message, &state)
            } catch let failure as TransportFailure {
                // A broken connection: a new agent may be there now. Once, then give up.
                reset(&state)
                guard failure.mayRetry else { throw Self.unreachable(failure) }
                do {
                    state.socket = try Self.connect(socketPath, timeout: timeout)
                    return try exchange(message, &state)
                } catch let failure as TransportFailure {
                    reset(&state)
                    throw Self.unreachable(failure)
                } catch let error as KeychainError {
                    throw error
                } catch {
                    throw KeychainError(.interactionNotAllowed, "the keychain agent did not answer")
                }
            } catch let error as KeychainError {
                throw error
            } catch {
                throw KeychainError(.interactionNotAllowed, "the keychain agent did not answer")
            }
        }
        do {
            return try read(&answer)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(.decode, "the keychain agent's answer is malformed")
        }
    }

    /// Closes the connection; a later call connects again.
    public func close() {
        state.withLock { reset(&$0) }
    }

    /// The keychain at `path` (`""` for the agent's default keychain), as the agent serves it.
    public func keychain(at path: String) -> AgentKeychain { AgentKeychain(connection: self, keychain: path) }

    // MARK: One exchange

    /// A failure of the connection itself, not an answer of the agent.
    private struct TransportFailure: Error {
        var reason: String
        /// Whether nothing may have reached the agent, or the connection was already broken
        /// before this call (so the call can be made again on a new connection).
        var mayRetry: Bool
    }

    private static func unreachable(_ failure: TransportFailure) -> KeychainError {
        KeychainError(.interactionNotAllowed, "the keychain agent did not answer (\(failure.reason))")
    }

    private func reset(_ state: inout State) {
        if state.socket >= 0 { Glibc.close(state.socket) }
        state.socket = -1
        state.authenticated = false
        state.buffer = []
    }

    /// The groups `KEYCHAIN_ACCESS_GROUPS` configures for this process (as
    /// ``KeychainCore/AccessGroups/fromEnvironment(_:)`` reads it), or `nil` when it is unset.
    /// - Parameter environment: The environment; the process's when `nil`.
    public static func configuredAccessGroups(environment: [String: String]? = nil) -> [String]? {
        let environment = environment ?? ProcessEnvironment.current()
        guard environment[AccessGroups.environmentVariable] != nil else { return nil }
        return AccessGroups.fromEnvironment(environment).groups
    }

    /// Sends `message` and returns the body of its answer, unread (an error answer is thrown).
    /// A new connection is first narrowed to ``accessGroups``, in a round trip of its own: the
    /// agent may answer a quick read before a request sent ahead of it, so the call waits for
    /// the narrowing to be acknowledged. A refused narrowing closes the connection (nothing is
    /// asked with more groups than the process has configured).
    private func exchange(_ message: DBusMessage, _ state: inout State) throws -> DBusBodyReader {
        if !state.authenticated, let accessGroups, message.member != AgentInterface.Method.useAccessGroups.rawValue {
            do {
                _ = try exchange(
                    .methodCall(
                        path: AgentInterface.objectPath, interface: AgentInterface.name,
                        member: AgentInterface.Method.useAccessGroups.rawValue,
                        body: [.array(.string, accessGroups.map { .string($0) })]),
                    &state)
            } catch let error as KeychainError {
                reset(&state)
                throw error
            }
        }
        if state.socket < 0 {
            do {
                state.socket = try Self.connect(socketPath, timeout: timeout)
            } catch {
                throw TransportFailure(reason: "connect", mayRetry: false)
            }
        }
        state.serial = state.serial == UInt32.max ? 1 : state.serial + 1
        var outgoing = message
        outgoing.serial = state.serial
        var bytes: [UInt8] = []
        if !state.authenticated {
            // The NUL byte, AUTH and BEGIN, then the call: the agent reads them in order.
            bytes = [0] + Array("AUTH EXTERNAL \(Self.hexUID())\r\nBEGIN\r\n".utf8)
        }
        do {
            bytes += try outgoing.encoded()
        } catch {
            throw KeychainError(.parameter, "the request cannot be encoded as a D-Bus message")
        }
        let wasAuthenticated = state.authenticated
        try send(bytes, state.socket, mayRetry: wasAuthenticated)
        if !wasAuthenticated {
            try readAuthentication(&state)
            state.authenticated = true
        }
        while true {
            var (reply, body) = try readMessage(&state)
            guard reply.replySerial == outgoing.serial, reply.type == .methodReturn || reply.type == .error else {
                continue  // a signal, or the answer to a call abandoned earlier
            }
            guard reply.type == .error else { return body }
            guard let values = try? body.readAll() else {
                throw TransportFailure(reason: "malformed answer", mayRetry: false)
            }
            reply.body = values
            var error = DBusError(.remoteError, reply.errorMessage ?? "", errorName: reply.errorName)
            if case .string? = reply.body.first { error.details = Array(reply.body.dropFirst()) }
            if let keychainError = AgentCodec.keychainError(error) { throw keychainError }
            throw KeychainError(
                .interactionNotAllowed, "the keychain agent refused the call (\(reply.errorName ?? "error"))")
        }
    }

    private func send(_ bytes: [UInt8], _ socket: Int32, mayRetry: Bool) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && errno == EINTR {
                continue
            } else {
                // Nothing of a broken connection's write reached the agent's handler.
                throw TransportFailure(reason: "send: errno \(errno)", mayRetry: mayRetry)
            }
        }
    }

    private func readAuthentication(_ state: inout State) throws {
        while true {
            if let end = state.buffer.firstIndex(of: 10) {
                let line = String(decoding: state.buffer[..<end], as: UTF8.self)
                state.buffer.removeSubrange(...end)
                if line.hasPrefix("ERROR") {
                    // The agent's limit on connections (DBusServerLimits): said at once, not waited out.
                    let reason = line.dropFirst(5).filter { $0 != "\"" && $0 != "\r" }.prefix(120)
                    throw KeychainError(
                        .interactionNotAllowed,
                        "the keychain agent refused the connection:\(reason); close some of this process's connections")
                }
                guard line.hasPrefix("OK ") else {
                    throw KeychainError(
                        .interactionNotAllowed, "the keychain agent refused this process (another user's agent?)")
                }
                return
            }
            guard state.buffer.count < 512 else { throw TransportFailure(reason: "authentication", mayRetry: false) }
            try fill(&state, mayRetry: true)
        }
    }

    private func readMessage(_ state: inout State) throws -> (message: DBusMessage, body: DBusBodyReader) {
        while true {
            if state.buffer.count >= DBusMessage.fixedHeaderLength {
                guard let length = try? DBusMessage.frameLength(header: state.buffer[..<DBusMessage.fixedHeaderLength])
                else {
                    throw TransportFailure(reason: "malformed answer", mayRetry: false)
                }
                if state.buffer.count >= length {
                    let frame: [UInt8]
                    if state.buffer.count == length {
                        // The usual case, one answer and nothing after it: no copy.
                        frame = state.buffer
                        state.buffer = []
                    } else {
                        frame = Array(state.buffer[..<length])
                        state.buffer.removeSubrange(..<length)
                    }
                    guard let decoded = try? DBusMessage.decodeHeader(frame) else {
                        throw TransportFailure(reason: "malformed answer", mayRetry: false)
                    }
                    return decoded
                }
            }
            try fill(&state, mayRetry: false)
        }
    }

    /// Reads what the socket has into the buffer.
    ///
    /// It waits in `poll` for the socket to become readable, not in a blocking `recv`: a thread
    /// blocked in `recv` on a Unix stream socket is woken each time the agent reads a request
    /// from it (the kernel wakes every sleeper on the socket when its send buffer drains), and
    /// goes back to sleep; `poll` waits for input only. That wake-up was one context switch per
    /// call in this process and one in the agent, which runs it.
    private func fill(_ state: inout State, mayRetry: Bool) throws {
        while true {
            try waitUntilReadable(state.socket)
            var count = 0
            let chunk = [UInt8](unsafeUninitializedCapacity: Self.receiveSize) { buffer, initialized in
                count = recv(state.socket, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                initialized = max(0, count)
            }
            if count > 0 {
                // Into an empty buffer without a copy: the usual answer then becomes the frame.
                if state.buffer.isEmpty { state.buffer = chunk } else { state.buffer += chunk }
                return
            }
            if count < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { continue }
            // The agent closed the connection: it ended, or refused what it read.
            throw TransportFailure(reason: count == 0 ? "closed" : "recv: errno \(errno)", mayRetry: false)
        }
    }

    /// Waits until `socket` has input (or has been closed), at most the call's timeout.
    private func waitUntilReadable(_ socket: Int32) throws {
        let milliseconds = min(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000, Int64(Int32.max)
        )
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, Int32(milliseconds))
            if ready > 0 { return }
            if ready < 0 && errno == EINTR { continue }
            throw TransportFailure(
                reason: ready == 0 ? "no answer within \(timeout)" : "poll: errno \(errno)", mayRetry: false)
        }
    }

    /// The most one `recv` reads: a typical answer fits in one.
    private static let receiveSize = 64 * 1024

    // MARK: The socket

    private static func hexUID() -> String {
        String(getuid()).utf8.map { String($0, radix: 16) }.joined()
    }

    /// A connected, close-on-exec socket with send and receive timeouts.
    /// - Parameter checkingOwner: Whether to refuse (``ForeignListener``) a process of another
    ///   user listening at `path`: always, before anything is sent; only a probe that sends
    ///   nothing may leave it out.
    package static func connect(_ path: String, timeout: Duration, checkingOwner: Bool = true) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeychainError(.notAvailable, "cannot make a socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path), !bytes.contains(0) else {
            Glibc.close(fd)
            throw KeychainError(.parameter, "the agent's socket path is too long", isSetupProblem: true)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        var connected: Int32 = -1
        repeat {
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
        } while connected != 0 && errno == EINTR
        guard connected == 0 else {
            let code = errno
            Glibc.close(fd)
            throw KeychainError(
                .notAvailable, "no keychain agent answers at \(path) (errno \(code))", isSetupProblem: true)
        }
        // Nothing is sent (a password least of all) to a process of another user that listens at
        // the path: the kernel says who accepted the connection.
        var peer: uid_t = 0
        guard !checkingOwner || (ck_peer_uid(fd, &peer) == 0 && peer == getuid()) else {
            Glibc.close(fd)
            throw ForeignListener(path: path, uid: peer)
        }
        let seconds = timeout.components.seconds
        var interval = timeval(tv_sec: Int(seconds), tv_usec: Int(timeout.components.attoseconds / 1_000_000_000_000))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// A process of another user listens at the agent's path: nothing was sent to it, and no
    /// agent is started in its place (it could not bind there).
    package struct ForeignListener: Error {
        /// The socket's path.
        package var path: String
        /// The user the listening process runs as.
        package var uid: uid_t

        /// The error a client reports.
        package var keychainError: KeychainError {
            KeychainError(
                .notAvailable,
                "the process listening at \(path) is not running as you (uid \(uid)): nothing was sent to it; "
                    + "fix: stop it, or point \(AgentEndpoint.socketVariable) at your own agent's socket",
                isSetupProblem: true)
        }
    }

    /// Whether a process (of any user) accepts connections at `path` now; nothing is sent.
    public static func isAnswering(at path: String) -> Bool {
        guard let fd = try? connect(path, timeout: .seconds(1), checkingOwner: false) else { return false }
        Glibc.close(fd)
        return true
    }
}
