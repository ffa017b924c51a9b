import CKeychainAgent
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import KeychainLibc
import Synchronization

/// A connection to the session agent, for synchronous callers (`SecItem*` is synchronous).
///
/// It is a plain blocking Unix socket speaking D-Bus (``DBusWire/DBusSocket``): no event loop
/// and no thread of its own, so a short-lived process pays for one `connect` and one round trip
/// per call. The
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
        /// The connection, or `nil` between a broken one and the next call.
        var socket: DBusSocket?
        var serial: UInt32 = 0
        var authenticated = false
    }

    /// Connects to the agent listening at `socketPath`.
    /// - Parameters:
    ///   - socketPath: The agent's socket.
    ///   - timeout: How long a call waits for the agent's answer before it fails.
    ///   - accessGroups: The groups to narrow this connection to before its first call (the
    ///     agent refuses groups the process does not have); by default the process's
    ///     `KEYCHAIN_ACCESS_GROUPS`, as in-process. The agent serves every process of the user,
    ///     so this travels with the connection and never through the agent's environment.
    /// - Throws: ``KeychainModel/KeychainError`` `.notAvailable` when no agent listens there.
    public init(
        socketPath: String, timeout: Duration = .seconds(60),
        accessGroups: [String]? = AgentConnection.configuredAccessGroups()
    ) throws {
        self.socketPath = socketPath
        self.timeout = timeout
        self.accessGroups = accessGroups
        let socket = try Self.connect(socketPath, timeout: timeout)
        state = Mutex(State(socket: DBusSocket(adopting: socket, timeout: timeout)))
    }

    deinit { close() }

    /// Calls `method` with `arguments` and returns the agent's reply, read straight from its
    /// wire form.
    ///
    /// ```swift
    /// let status = try connection.call(AgentInterface.status, .init(keychain: ""))
    /// ```
    ///
    /// When the connection has broken (the agent was restarted), the call is made once more on a
    /// new connection; a second failure is reported.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.interactionNotAllowed` when the
    ///   agent cannot be reached or does not answer; `.decode` for a malformed reply.
    public func call<Arguments, Reply>(
        _ method: DBusMethodDeclaration<Arguments, Reply>, _ arguments: Arguments
    ) throws -> Reply {
        var answer = try exchangeRetrying(method.call(arguments, path: AgentInterface.objectPath))
        do {
            return try method.reply(reading: &answer)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError(.decode, "the keychain agent's answer is malformed")
        }
    }

    /// Sends `message` and returns the body of its answer, unread; a broken connection is
    /// replaced once.
    private func exchangeRetrying(_ message: DBusMessage) throws -> DBusBodyReader {
        try state.withLock { state throws(KeychainError) -> DBusBodyReader in
            do {
                return try exchange(message, &state)
            } catch let failure as TransportFailure {
                // A broken connection: a new agent may be there now. Once, then give up.
                reset(&state)
                guard failure.mayRetry else { throw Self.unreachable(failure) }
                do {
                    state.socket = DBusSocket(
                        adopting: try Self.connect(socketPath, timeout: timeout), timeout: timeout)
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
        state.socket?.close()
        state.socket = nil
        state.authenticated = false
    }

    /// The groups `KEYCHAIN_ACCESS_GROUPS` configures for this process (as
    /// ``KeychainModel/AccessGroups/fromEnvironment(_:)`` reads it), or `nil` when it is unset.
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
        if !state.authenticated, let accessGroups, message.member != AgentInterface.useAccessGroups.name {
            do {
                let narrowing = AgentInterface.useAccessGroups.call(
                    .init(groups: accessGroups), path: AgentInterface.objectPath)
                _ = try exchange(narrowing, &state)
            } catch let error as KeychainError {
                reset(&state)
                throw error
            }
        }
        if state.socket == nil {
            do {
                state.socket = DBusSocket(adopting: try Self.connect(socketPath, timeout: timeout), timeout: timeout)
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
            bytes = DBusSocket.pipelinedAuthentication(uid: getuid())
        }
        do {
            bytes += try outgoing.encoded()
        } catch {
            throw KeychainError(.parameter, "the request cannot be encoded as a D-Bus message")
        }
        let wasAuthenticated = state.authenticated
        // Nothing of a broken connection's write reached the agent's handler.
        try transport(mayRetry: wasAuthenticated) { try state.socket?.send(bytes) }
        if !wasAuthenticated {
            try authenticate(&state)
            state.authenticated = true
        }
        while true {
            let received = try transport(mayRetry: false) { () throws -> DBusSocket.Received? in
                try state.socket?.receiveMessage()
            }
            guard var received else { throw TransportFailure(reason: "closed", mayRetry: false) }
            guard received.message.replySerial == outgoing.serial,
                received.message.type == .methodReturn || received.message.type == .error
            else {
                continue  // a signal, or the answer to a call abandoned earlier
            }
            guard received.message.type == .error else { return received.body }
            received.message.body = try transport(mayRetry: false) { try received.body.readAll() }
            throw Self.refusal(received.message)
        }
    }

    /// Runs `body` on the connection: its ``DBusWire/DBusError`` is a ``TransportFailure``.
    private func transport<T>(mayRetry: Bool, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DBusError {
            let reason = error.code == .malformedMessage ? "malformed answer" : error.message
            throw TransportFailure(reason: reason, mayRetry: mayRetry)
        }
    }

    /// Waits for the agent's answer to the handshake sent with the first call.
    private func authenticate(_ state: inout State) throws {
        do {
            try state.socket?.awaitAuthentication()
        } catch let error as DBusError where error.code == .connectionRefused {
            // The agent's limit on connections (DBusServerLimits): said at once, not waited out.
            throw KeychainError(
                .interactionNotAllowed,
                "the keychain agent refused the connection: \(error.message); close some of this process's connections")
        } catch let error as DBusError where error.code == .authenticationFailed {
            throw KeychainError(
                .interactionNotAllowed, "the keychain agent refused this process (another user's agent?)")
        } catch let error as DBusError {
            throw TransportFailure(reason: error.message, mayRetry: true)
        }
    }

    /// The error an error reply carries: the agent's keychain error, or the D-Bus error's name.
    private static func refusal(_ reply: DBusMessage) -> KeychainError {
        var error = DBusError(.remoteError, reply.errorMessage ?? "", errorName: reply.errorName)
        if case .string? = reply.body.first { error.details = Array(reply.body.dropFirst()) }
        if let keychainError = AgentCodec.keychainError(error) { return keychainError }
        return KeychainError(
            .interactionNotAllowed, "the keychain agent refused the call (\(reply.errorName ?? "error"))")
    }

    // MARK: The socket

    /// A connected, close-on-exec socket (``DBusWire/DBusSocket/connectUnix(_:)``); its
    /// timeouts are set when a ``DBusWire/DBusSocket`` adopts it.
    /// - Parameter checkingOwner: Whether to refuse (``ForeignListener``) a process of another
    ///   user listening at `path`: always, before anything is sent; only a probe that sends
    ///   nothing may leave it out.
    package static func connect(_ path: String, timeout: Duration, checkingOwner: Bool = true) throws -> Int32 {
        let fd: Int32
        do {
            fd = try DBusSocket.connectUnix(path)
        } catch let error as DBusError where error.code == .invalidAddress {
            throw KeychainError(.parameter, "the agent's socket path is too long", isSetupProblem: true)
        } catch let error as DBusError {
            throw KeychainError(
                .notAvailable, "no keychain agent answers at \(path) (\(error.message))", isSetupProblem: true)
        }
        // Nothing is sent (a password least of all) to a process of another user that listens at
        // the path: the kernel says who accepted the connection.
        var peer: uid_t = 0
        guard !checkingOwner || (ck_peer_uid(fd, &peer) == 0 && peer == getuid()) else {
            Glibc.close(fd)
            throw ForeignListener(path: path, uid: peer)
        }
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
