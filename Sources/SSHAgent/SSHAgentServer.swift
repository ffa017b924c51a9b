import CKeychainAgent
import DBusNIO
import Foundation
import KeychainAgent
import KeychainAgentProtocol
import KeychainLibc
import KeychainModel
import Synchronization
import UserPresence

/// keychaind's SSH agent socket: `ssh`, `ssh-add` and `ssh-keygen` reach it through
/// `SSH_AUTH_SOCK`. Each connection is served on a thread of its own (a client asks one thing at
/// a time, and few connect at once), its caller identified by the kernel (`SO_PEERCRED`, and a
/// pidfd where the kernel gives one) as every other client of the agent is (another user is
/// refused there, ``KeychainAgent/CallerDirectory``), and each request
/// runs on the agent's work queue against the default keychain, acting for the caller's groups.
///
/// ```swift
/// let server = try SSHAgentServer.start(
///     at: location.directory + "/" + SSHAgentServer.socketName, agent: SSHAgent(),
///     keychains: service, callers: directory) { line in log(line) }
/// ```
public final class SSHAgentServer: Sendable {
    /// The socket's name, beside the agent's own socket.
    public static let socketName = AgentEndpoint.sshSocketName
    /// The most connections served at once; more are closed at once.
    public static let maximumConnections = 64

    /// Where the socket is.
    public let path: String
    private let listening: Int32
    private let agent: SSHAgent
    private let keychains: AgentService
    private let callers: CallerDirectory
    private let log: @Sendable (String) -> Void
    private let connections = Mutex(0)
    /// The dialog that unlocks the keychain for a client that needs it locked, if any.
    private let unlockPrompt: SSHUnlockPrompt?

    private init(
        path: String, listening: Int32, agent: SSHAgent, keychains: AgentService, callers: CallerDirectory,
        unlockPrompt: SSHUnlockPrompt?, log: @escaping @Sendable (String) -> Void
    ) {
        self.path = path
        self.listening = listening
        self.agent = agent
        self.keychains = keychains
        self.callers = callers
        self.unlockPrompt = unlockPrompt
        self.log = log
    }

    /// Binds `path` (``KeychainAgent/AgentListener/listeningSocket(at:backlog:)``: a stale socket
    /// replaced, a live one or anything else refused, 0600), and serves it on a thread of its own for as long as the process runs; or serves
    /// `listening`, the socket systemd bound there (`keychaind.socket`).
    /// - Parameters:
    ///   - path: The socket's path, in the agent's private directory.
    ///   - listening: A socket already listening at `path`, or `nil` to bind one.
    ///   - agent: What answers the requests.
    ///   - keychains: The agent whose default keychain holds the keys.
    ///   - callers: Who the callers are.
    ///   - pinentry: The program that asks for the keychain's password when a client needs the
    ///     keychain while it is locked (on the client's terminal, or the display of
    ///     `environment`); `nil`: such requests fail.
    ///   - environment: The agent's environment, for the dialog (display, session bus, language).
    ///   - log: Where refusals are said (never a secret).
    /// - Throws: ``KeychainAgent/AgentError`` when the socket cannot be made.
    public static func start(
        at path: String, listening: Int32? = nil, agent: SSHAgent, keychains: AgentService, callers: CallerDirectory,
        pinentry: Pinentry? = nil, environment: [String: String] = [:], log: @escaping @Sendable (String) -> Void
    ) throws -> SSHAgentServer {
        let listening = try listening ?? AgentListener.listeningSocket(at: path)
        let server = SSHAgentServer(
            path: path, listening: listening, agent: agent, keychains: keychains, callers: callers,
            unlockPrompt: pinentry.map { SSHUnlockPrompt(pinentry: $0, environment: environment) }, log: log)
        let thread = Thread { server.acceptLoop() }
        thread.name = "ssh-agent"
        thread.start()
        return server
    }

    private func acceptLoop() {
        while true {
            let client = ck_accept_cloexec(listening)
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE { continue }
                log("ssh agent: the socket stopped accepting (errno \(errno))")
                return
            }
            let admitted = connections.withLock { count in
                guard count < Self.maximumConnections else { return false }
                count += 1
                return true
            }
            guard admitted else {
                close(client)
                continue
            }
            let thread = Thread { [self] in
                serve(client)
                close(client)
                connections.withLock { $0 -= 1 }
            }
            thread.name = "ssh-agent-client"
            thread.start()
        }
    }

    /// Answers one client's requests until it leaves or sends what the protocol does not allow.
    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        // A client that stops half-way through a message is let go.
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let credentials: DBusPeerCredentials
        do {
            credentials = try Self.credentials(of: client)
        } catch {
            log("ssh agent: a client without credentials was refused")
            return
        }
        defer { if let pidFD = credentials.pidFD { close(pidFD) } }
        // The process as polkit names it, read while it holds the connection: a pid read later
        // could be another process's, once the client is gone.
        let subject = try? ProcessSubject.of(pid: credentials.pid, uid: credentials.uid)
        while var request = readMessage(client) {
            let reply = answer(request, credentials: credentials, subject: subject)
            // An added key's request holds the private key: wiped once answered.
            request.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            var framed = SSHWriter()
            framed.string(reply)
            guard framed.bytes.withUnsafeBytes({ sendAll($0, to: client) }) else { return }
        }
    }

    private func answer(_ request: [UInt8], credentials: DBusPeerCredentials, subject: ProcessSubject?) -> [UInt8] {
        let groups: AccessGroups
        do {
            groups = try callers.accessGroups(for: credentials)
        } catch {
            log("ssh agent: the caller could not be identified (\(error))")
            return [SSHAgent.Message.failure.rawValue]
        }
        let reply = ask(request, for: groups, credentials: credentials, subject: subject)
        // Only a refusal costs the lock check: while the keychain is locked, the dialog, then one
        // more try.
        guard reply == [SSHAgent.Message.failure.rawValue], let unlockPrompt, agent.needsKeychain(request),
            isKeychainLocked(for: groups),
            unlockPrompt.unlock(
                forProcess: credentials.pid, isLocked: { isKeychainLocked(for: groups) },
                unlock: { password in try unlockKeychain(password, for: groups) })
        else { return reply }
        return ask(request, for: groups, credentials: credentials, subject: subject)
    }

    /// The most questions one request puts to the person: a key's access control asks its
    /// owner, the reader's state then a finger, and a security key, at most.
    static let mostQuestions = 4

    /// The agent's answer to `request`, on the work queue, acting for `groups`. A signature with
    /// a Secure Enclave key whose access control asks for the person has the person asked for
    /// the client's process (``KeychainAgent/AgentService/take(_:_:asking:)``: polkit, with this
    /// agent's own dialog where polkit has nobody to ask with; the fingerprint reader; a
    /// security key), then is made again with the answers, as a D-Bus client's use is.
    private func ask(
        _ request: [UInt8], for groups: AccessGroups, credentials: DBusPeerCredentials, subject: ProcessSubject?
    ) -> [UInt8] {
        let failure = [SSHAgent.Message.failure.rawValue]
        var answers = CallAuthentication(proof: nil)
        for _ in 0...Self.mostQuestions {
            var asking: KeychainError?
            let reply = try? keychains.onWorkQueueWaiting {
                AgentService.withAnswers(answers) {
                    // A refusal that asks is not said: the person is asked, and the request runs again.
                    agent.answer(
                        request, log: { line in if asking == nil { log(line) } },
                        used: { [keychains, callers] item in
                            keychains.logUse(
                                of: item,
                                caller: callers.logName(for: credentials) ?? "pid \(credentials.pid) (not identified)",
                                groups: groups)
                        }
                    ) { body in
                        do {
                            return try keychains.withKeychainOnWorkQueue(named: "", for: groups, body)
                        } catch let error as KeychainError where CallAuthentication.asksPerson(error) {
                            asking = error
                            throw error
                        }
                    }
                }
            }
            guard let error = asking else { return reply ?? failure }
            guard let step = answers.step(after: error) else {
                log("ssh agent: refused a request: \(error.message)")
                return failure
            }
            do {
                let person = try person(of: credentials, subject: subject)
                answers = try waitFor { [keychains, answers] in
                    var next = answers
                    try await keychains.take(step, &next, asking: person)
                    return next
                }
            } catch {
                log("ssh agent: refused a request: the key asks for the person, who did not answer (\(error))")
                return failure
            }
        }
        return failure
    }

    /// The client as the person is asked about it: its process, its terminal for a hint (not a
    /// sandboxed client's, whose terminal is named in another namespace), and this agent's
    /// dialog for a client that polkit has no authentication agent for.
    private func person(of credentials: DBusPeerCredentials, subject: ProcessSubject?) throws -> PersonAsked {
        guard let subject else { throw KeychainError(.interactionNotAllowed, "the client cannot be named to polkit") }
        let sandboxed: Bool
        switch try? callers.identity(for: credentials).tier {
        case .sandboxed?, .invalidSandbox?: sandboxed = true
        default: sandboxed = false
        }
        return PersonAsked(
            subject: subject, terminal: PinentryScreen(callerPID: credentials.pid, sandboxed: sandboxed).terminal,
            answering: unlockPrompt?.answering(forProcess: credentials.pid, sandboxed: sandboxed),
            pin: unlockPrompt?.securityKeyPIN(forProcess: credentials.pid, sandboxed: sandboxed))
    }

    /// Whether the default keychain is there and locked, for a caller of `groups`.
    private func isKeychainLocked(for groups: AccessGroups) -> Bool {
        (try? keychains.onWorkQueueWaiting {
            try keychains.withKeychainOnWorkQueue(named: "", for: groups) { $0.isLocked }
        }) ?? false
    }

    /// Unlocks the default keychain with `password`, as a client's `Unlock` does (counted in the
    /// agent's back-off after wrong passwords).
    private func unlockKeychain(_ password: Data, for groups: AccessGroups) throws {
        try waitFor { [keychains] in try await keychains.unlock(keychainNamed: "", password: password, for: groups) }
    }

    /// `SO_PEERCRED`, and `SO_PEERPIDFD` where the kernel has it (the caller then owns it).
    private static func credentials(of socket: Int32) throws -> DBusPeerCredentials {
        var credentials = try DBusPeerCredentials(socket: socket)
        var pidFD: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(socket, SOL_SOCKET, ck_so_peerpidfd(), &pidFD, &length) == 0, pidFD >= 0 {
            credentials.pidFD = pidFD
        }
        return credentials
    }

    /// The next message's contents, or `nil` at the end, on a read error, or for a length over
    /// ``SSHAgent/maximumMessageLength`` (the client is then let go, as OpenSSH's agent does).
    private func readMessage(_ client: Int32) -> [UInt8]? {
        guard let header = readExactly(4, from: client) else { return nil }
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length > 0, length <= SSHAgent.maximumMessageLength else {
            log("ssh agent: a request of \(length) bytes was refused")
            return nil
        }
        return readExactly(length, from: client)
    }

    private func readExactly(_ count: Int, from socket: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let received = bytes.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + offset, count - offset, 0) }
            if received > 0 {
                offset += received
            } else if received < 0 && errno == EINTR {
                continue
            } else {
                return nil
            }
        }
        return bytes
    }
}
