import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import Synchronization

/// Where every module of this package gets its keychains (the default one, or one by its
/// path) and creates and deletes them: the one place that chooses between the session agent,
/// `keychaind`, and the in-process engine.
///
/// `KEYCHAIN_AGENT` decides (see ``AgentEndpoint/Mode``): with `auto`, the default, a keychain
/// is kept by the agent, started on first need when none answers (found beside the executable,
/// on `PATH` or at `KEYCHAIN_AGENT_PROGRAM`), so that an unlock in one process serves every
/// later process of the user; when there is no agent to start, or it fails to start (tried once
/// per process), keychains are opened in this process, silently. `off` opens every keychain in
/// this process; `required` fails rather than do that. In-memory keychains are always in this
/// process.
///
/// A task that runs under ``withDefault(_:operation:)-(_,()->R)`` keeps its keychains where its
/// default keychain is: the keychains it opens, creates or deletes by path are the agent's when
/// its default is an `AgentKeychain`, and this process's otherwise, whatever `KEYCHAIN_AGENT`
/// says (so tests that give a task an in-memory keychain never reach the user's agent).
///
/// ```swift
/// let keychain = try Keychains.current()
/// let memory = try KeychainDatabase.inMemory()
/// try Keychains.withDefault(memory) {
///     try codeThatUsesTheDefaultKeychain()
/// }
/// ```
public enum Keychains {
    /// The default keychain for the current task, when one was set with
    /// ``withDefault(_:operation:)-(_,()->R)``; `nil` otherwise.
    package static var defaultOverride: (any KeychainHandle)? { TaskDefaultKeychain.handle }

    /// The keychain that "the default keychain" means here: the one set for the current task
    /// by ``withDefault(_:operation:)-(_,()->R)``, else the user's default keychain, kept by the
    /// agent, or opened in this process (and created, password-less, on first use) and then
    /// reused, so that every module shares one handle, and so one lock state.
    /// - Throws: ``KeychainModel/KeychainError`` when the default keychain cannot be opened or created.
    public static func current() throws -> any KeychainHandle {
        if let handle = TaskDefaultKeychain.handle { return handle }
        if let agent = try agent(startingIfNeeded: true) {
            return try agentDefault(agent, chosen: KeychainSelection.processChosenDefault())
        }
        return try KeychainDatabase.processDefaultDatabase(configuration: KeychainConfiguration().askingTheUser)
    }

    /// The default keychain as the agent serves it to this process, `chosen` by it or not.
    ///
    /// The agent serves every process of the user and keeps its own environment, so what this
    /// process's environment chooses travels with its requests: a default chosen here
    /// (`KEYCHAIN_DEFAULT_PATH`) is sent by its path, and created password-less on first use as
    /// in-process; otherwise `""`, the user's default keychain, which the agent resolves from
    /// the user's preferences (`security default-keychain -s`), else the login keychain.
    /// - Throws: ``KeychainModel/KeychainError`` when the chosen keychain can be neither opened
    ///   nor created.
    static func agentDefault(_ agent: AgentConnection, chosen: String?) throws -> AgentKeychain {
        guard let chosen else { return agent.keychain(at: "") }
        if let known = chosenDefaults.withLock({ $0[chosen] }), known.connection === agent { return known }
        let keychain = agent.keychain(at: KeychainSelection.canonical(chosen))
        do {
            _ = try keychain.status()
        } catch let error as KeychainError where error.code == .noSuchKeychain {
            do {
                _ = try agent.createKeychain(at: keychain.keychain, password: nil)
            } catch let raced as KeychainError where raced.code == .duplicateKeychain {
                // Another process made it first: it is there to use.
            }
        }
        chosenDefaults.withLock { $0[chosen] = keychain }
        return keychain
    }

    /// The chosen default keychains this process has checked with the agent, by the path as
    /// chosen: the check (and the creation on first use) is made once, not before every call.
    private static let chosenDefaults = Mutex<[String: AgentKeychain]>([:])

    /// Opens the keychain file at `path`; a password keychain is locked unless the agent holds
    /// it unlocked.
    /// - Throws: ``KeychainModel/KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`, `.wrongVersion`, …).
    public static func open(
        at path: String, configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        if let agent = try taskAgent() {
            let keychain = agent.keychain(at: absolute(path))
            _ = try keychain.status()
            return keychain
        }
        return try KeychainDatabase.open(at: path, configuration: configuration.askingTheUser)
    }

    /// Opens the keychain at `path`, creating it password-less when there is none (the login
    /// keychain, which scripts may name before anything wrote to it).
    /// - Throws: ``KeychainModel/KeychainError`` when it can be neither opened nor created.
    public static func openCreatingIfMissing(
        at path: String, configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        try KeychainDatabase.openCreatingIfMissing(
            open: { try open(at: path, configuration: configuration) },
            create: { try create(at: path, password: nil, configuration: configuration) })
    }

    /// Opens the default keychain of `paths`, creating it password-less on first use.
    public static func openDefault(
        paths: KeychainPaths = KeychainPaths(), configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        if let agent = try taskAgent() {
            let keychain = try agentDefault(agent, chosen: paths.chosenDefault)
            // The agent's default is opened (and made on first use) when first asked for.
            if paths.chosenDefault == nil { _ = try keychain.status() }
            return keychain
        }
        return try KeychainDatabase.openDefault(paths: paths, configuration: configuration.askingTheUser)
    }

    /// Creates a keychain file protected by `password`'s bytes (by the device key alone when
    /// `nil`). Made by the agent, it is unlocked, as macOS leaves a keychain it has just
    /// created; made in this process, it starts locked.
    /// - Throws: ``KeychainModel/KeychainError`` (`.duplicateKeychain` when a file exists there).
    public static func create(
        at path: String, password: Data?, configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        if let agent = try taskAgent() { return try agent.createKeychain(at: absolute(path), password: password) }
        return try KeychainDatabase.create(at: path, password: password, configuration: configuration.askingTheUser)
    }

    /// A new, empty keychain kept in this process's memory (never the agent's), unlocked: what
    /// the in-memory keychains of `Keychain` and `SwiftKeychain` hold.
    /// - Throws: ``KeychainModel/KeychainError`` if the engine cannot start.
    package static func inMemory(configuration: KeychainConfiguration = .testing()) throws -> any KeychainHandle {
        try KeychainDatabase.inMemory(configuration: configuration)
    }

    /// Opens the keychain file at `path` in this process, whatever the agent, creating it
    /// password-less when there is none: a keychain no user's agent may hold (the System
    /// keychain, root's).
    /// - Throws: ``KeychainModel/KeychainError`` when it can be neither opened nor created.
    package static func openInProcessCreatingIfMissing(
        at path: String, configuration: KeychainConfiguration
    ) throws -> any KeychainHandle {
        let configuration = configuration.askingTheUser
        return try KeychainDatabase.openCreatingIfMissing(
            open: { try KeychainDatabase.open(at: path, configuration: configuration) },
            create: { try KeychainDatabase.create(at: path, password: nil, configuration: configuration) })
    }

    /// Deletes the keychain file at `path` and the files SQLite keeps beside it.
    /// - Throws: ``KeychainModel/KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`).
    public static func delete(at path: String) throws {
        if let agent = try taskAgent() {
            try agent.deleteKeychain(at: absolute(path))
            return
        }
        try KeychainDatabase.deleteKeychain(at: path)
    }

    /// The agent's access log (`security access-log`): a line for each secret it gave out, oldest
    /// first; `nil` when no agent serves this process (none is started to be asked).
    /// - Throws: ``KeychainModel/KeychainError`` (`.missingEntitlement` for an app).
    public static func accessLog() throws -> [String]? {
        guard let agent = try agent(startingIfNeeded: false) else { return nil }
        return try agent.call(AgentInterface.accessLog, DBusNoArguments()).entries
    }

    /// Locks every keychain the agent holds (`security lock-keychain -a`); without an agent,
    /// there is nothing unlocked beyond this process (and none is started to be told so).
    public static func lockAll() throws {
        let agent: AgentConnection?
        if let handle = TaskDefaultKeychain.handle {
            agent = (handle as? AgentKeychain)?.connection
        } else {
            agent = try self.agent()
        }
        if let agent { _ = try agent.call(AgentInterface.lockAll, DBusNoArguments()) }
    }

    /// Runs `operation` with `keychain` as the default keychain of the current task (and of
    /// the tasks it creates), for tests that run in parallel. The keychains the task opens,
    /// creates or deletes by path are then where `keychain` is: the agent's when it is an
    /// `AgentKeychain`, this process's otherwise.
    public static func withDefault<R>(_ keychain: any KeychainHandle, operation: () throws -> R) rethrows -> R {
        try TaskDefaultKeychain.$handle.withValue(keychain, operation: operation)
    }

    /// The asynchronous form of ``withDefault(_:operation:)-(_,()->R)``.
    public static func withDefault<R>(
        _ keychain: any KeychainHandle, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await TaskDefaultKeychain.$handle.withValue(keychain, operation: operation)
    }

    // MARK: The agent

    private enum Resolution {
        case unresolved
        /// In this process; `afterStart` when starting an agent was tried and failed (it is not
        /// tried again by this process).
        case inProcess(afterStart: Bool)
        case agent(AgentConnection)
    }

    private static let resolution = Mutex<Resolution>(.unresolved)

    /// The agent that keeps the current task's keychains: its default keychain's when the task
    /// runs under ``withDefault(_:operation:)-(_,()->R)`` (`nil`: an in-process keychain), else
    /// the process's agent, started on first need.
    static func taskAgent() throws -> AgentConnection? {
        if let handle = TaskDefaultKeychain.handle { return (handle as? AgentKeychain)?.connection }
        return try agent(startingIfNeeded: true)
    }

    /// The agent connection this process uses, or `nil` when its keychains are opened in
    /// this process. Decided on first use from `KEYCHAIN_AGENT` and then kept; a start that
    /// failed is not tried again by this process.
    ///
    /// - Parameter startingIfNeeded: Start `keychaind` when none answers, as every keychain
    ///   ``current()``, ``open(at:configuration:)`` and ``create(at:password:configuration:)``
    ///   give does in `auto` mode (`KEYCHAIN_AGENT=required` always does). `false` only asks
    ///   whether an agent answers (or was chosen already), as a probe.
    /// - Throws: ``KeychainModel/KeychainError`` for a bad `KEYCHAIN_AGENT`, or, with
    ///   `required`, `.notAvailable` when no agent can be reached or started.
    public static func agent(startingIfNeeded: Bool = false) throws -> AgentConnection? {
        try resolution.withLock { resolution throws(KeychainError) -> AgentConnection? in
            switch resolution {
            case .agent(let connection): return connection
            case .inProcess(let afterStart) where afterStart || !startingIfNeeded: return nil
            case .inProcess, .unresolved:
                let environment = ProcessEnvironment.current()
                let mode: AgentEndpoint.Mode
                do {
                    mode = try AgentEndpoint.Mode(environment: environment)
                } catch let error as KeychainError {
                    throw error
                } catch {
                    throw KeychainError(.parameter, "\(AgentEndpoint.modeVariable) is not a mode")
                }
                if mode == .off {
                    resolution = .inProcess(afterStart: true)
                    return nil
                }
                let path: String
                do {
                    path = try AgentEndpoint.socketPath(environment: environment, hostName: hostName())
                } catch {
                    // No place for the socket (neither XDG_RUNTIME_DIR nor HOME, as in some
                    // service environments): in auto mode, the keychains are this process's, as
                    // when there is no agent to start. A socket path given explicitly and wrong
                    // is reported.
                    let explicit = environment[AgentEndpoint.socketVariable].map { !$0.isEmpty } ?? false
                    guard mode == .required || explicit else {
                        resolution = .inProcess(afterStart: true)
                        return nil
                    }
                    throw (error as? KeychainError)
                        ?? KeychainError(.notAvailable, "the keychain agent's place cannot be found")
                }
                do {
                    let connection = try AgentConnection(socketPath: path)
                    resolution = .agent(connection)
                    return connection
                } catch let refusal as AgentConnection.ForeignListener {
                    throw refusal.keychainError
                } catch {
                    // Nothing answers: started below.
                }
                guard startingIfNeeded || mode == .required else {
                    resolution = .inProcess(afterStart: false)
                    return nil
                }
                do {
                    let connection = try AgentLauncher.start(socketPath: path, environment: environment)
                    resolution = .agent(connection)
                    return connection
                } catch {
                    // Not found, or it did not start: in auto mode, silently this process's
                    // keychains (and no second try by this process).
                    guard mode == .required else {
                        resolution = .inProcess(afterStart: true)
                        return nil
                    }
                    throw (error as? KeychainError)
                        ?? KeychainError(.notAvailable, "the keychain agent cannot be started")
                }
            }
        }
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `path` made absolute against the working directory, as the agent names keychains.
    static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        return FileManager.default.currentDirectoryPath + "/" + path
    }
}
