import DBusNIO
import DBusWire
import Dispatch
import Foundation
import Synchronization
import KeychainAgentProtocol
import KeychainCore
import UserPresence

/// The agent's keychains, served over ``KeychainAgentProtocol/AgentInterface``: it opens each
/// keychain once, keeps its keys and lock state for every client (so an unlock lasts until a
/// lock, whichever process asked), and runs each request for the caller's access groups, which
/// come from who the caller is (``groups``), never from what it sends. A password keychain
/// whose settings have a lock interval is locked after that many seconds without a request
/// that uses it (see `IdleLock`).
///
/// ```swift
/// let service = AgentService(configuration: KeychainConfiguration()) { peer in
///     try resolver.identify(peer).accessGroups
/// }
/// let objects = DBusObjectTree()
/// try objects.register(service.interface, at: AgentInterface.objectPath)
/// ```
public final class AgentService: Sendable {
    /// How keychains are opened and created (device key, key derivation); its access groups
    /// are ignored: the service's own handles have none.
    public let configuration: KeychainConfiguration
    /// Where the default keychain is.
    public let paths: KeychainPaths
    /// The access groups of the caller behind a connection. Given to
    /// ``init(configuration:paths:groups:)``, it is also asked on an event loop for the quick
    /// requests answered there, so it must not block.
    public let groups: @Sendable (DBusPeerCredentials?) throws -> AccessGroups
    private let open = NSLock()
    nonisolated(unsafe) private var keychains: [String: KeychainDatabase] = [:]
    /// The absolute path each name a request used stands for (`""`: the default keychain),
    /// for the keychains in `keychains` (guarded by `open`): resolving a name reads every
    /// directory on its path, so a name is resolved once while its keychain is open.
    nonisolated(unsafe) private var spellings: [String: String] = [:]
    /// Back-off after repeated wrong passwords, per keychain (guarded by `open`).
    nonisolated(unsafe) private var throttle = UnlockThrottle(clock: ContinuousClock())

    /// Replaces the back-off's settings (tests: a delay after the first failure, long enough
    /// that no machine's slowness ends it before the next attempt).
    func setUnlockBackOff(freeFailures: Int, baseDelay: Duration) {
        open.withLock {
            throttle = UnlockThrottle(freeFailures: freeFailures, baseDelay: baseDelay, clock: ContinuousClock())
        }
    }
    /// Engine work blocks on SQLite and the disk: it runs here, never on an event loop or the
    /// cooperative pool.
    private let work = DispatchQueue(label: "keychain-agent.engine", attributes: .concurrent)
    /// Locks password keychains left unused for their settings' lock interval.
    let idle = IdleLock()
    /// The proofs that the person answered for a caller (`AuthenticateOwner`), which its reads
    /// offer (``KeychainModel/ItemQuery/ownerProof``).
    let ownerProofs = OwnerProofs()
    /// The polkit questions open for callers, one for each process at a time.
    let ownerQuestions = SharedQuestions<ProcessSubject, Void>()
    /// The fingerprint reader's questions open for callers, one for each process at a time; the
    /// answer is the reader's domain state the finger matched in.
    let fingerQuestions = SharedQuestions<ProcessSubject, Data>()
    /// The access-list questions open for callers, one for each process and item at a time.
    let applicationQuestions = SharedQuestions<ApplicationQuestion, ApplicationVerdict>()
    /// How callers an item's access list does not name are asked about (``askAboutApplications(through:environment:)``).
    let applicationPrompt = Mutex<ApplicationAccessPrompt?>(nil)
    /// The secrets given out, to whom (`AccessLog`): through this socket, and the Secret
    /// Service's.
    package let accessLog = AccessLog()
    /// Told of each keychain the service opens (keychaind starts its sync there).
    private let openedObserver = Mutex<(@Sendable (String, KeychainDatabase) -> Void)?>(nil)

    /// Who the callers are, when they are identified once per connection
    /// (``init(configuration:paths:callers:)``); else ``groups`` of each call's credentials.
    let callers: CallerDirectory?

    /// A service for keychains opened with `configuration`.
    public init(
        configuration: KeychainConfiguration, paths: KeychainPaths = KeychainPaths(),
        groups: @escaping @Sendable (DBusPeerCredentials?) throws -> AccessGroups
    ) {
        var configuration = configuration
        configuration.accessGroups = AccessGroups([])
        self.configuration = configuration
        self.paths = paths
        self.groups = groups
        callers = nil
    }

    /// A service whose callers are identified by `callers`, once per connection
    /// (``CallerDirectory/accessGroups(for:)-(DBusConnection)``): what `keychaind` runs.
    ///
    /// ```swift
    /// let callers = CallerDirectory(resolver: IdentityResolver())
    /// let service = AgentService(configuration: KeychainConfiguration(), callers: callers)
    /// ```
    /// - Parameters:
    ///   - configuration: How keychains are opened and created.
    ///   - paths: Where the default keychain is.
    ///   - callers: Who the callers are.
    public init(
        configuration: KeychainConfiguration, paths: KeychainPaths = KeychainPaths(), callers: CallerDirectory
    ) {
        var configuration = configuration
        configuration.accessGroups = AccessGroups([])
        self.configuration = configuration
        self.paths = paths
        self.groups = { try callers.accessGroups(for: $0) }
        self.callers = callers
    }

    /// The interface to register at ``KeychainAgentProtocol/AgentInterface/objectPath``: one
    /// handler for each method ``KeychainAgentProtocol/AgentInterface`` declares (see
    /// `AgentService+Methods.swift`).
    public var interface: DBusInterface {
        DBusInterface(AgentInterface.name, methods: served.map(\.method))
    }

    /// The access groups of the caller behind `connection`, as it narrowed them.
    func callerGroups(_ connection: DBusConnection) throws -> AccessGroups {
        try Self.narrowed(grantedGroups(connection), for: connection)
    }

    /// The access groups the caller behind `connection` has, before any narrowing.
    private func grantedGroups(_ connection: DBusConnection) throws -> AccessGroups {
        if let callers { return try callers.accessGroups(for: connection) }
        return try groups(connection.peerCredentials)
    }

    /// The access groups of the caller behind `connection` when they are known without
    /// identifying it first (``CallerDirectory/knownAccessGroups(for:)``), or `nil`. With a
    /// ``groups`` closure of its own, the closure's answer (it must then be quick).
    func knownGroups(_ connection: DBusConnection) throws -> AccessGroups? {
        let known: AccessGroups?
        if let callers {
            known = try callers.knownAccessGroups(for: connection)
        } else {
            known = try groups(connection.peerCredentials)
        }
        return known.map { Self.narrowed($0, for: connection) }
    }

    /// The groups a client narrowed its connection to (`UseAccessGroups`).
    struct RequestedGroups: Sendable {
        var groups: [String]
    }

    /// `granted` as the client behind `connection` narrowed it: the groups it asked for, in its
    /// order. Who manages the user's keychains is not narrowed: the groups say what it reads.
    static func narrowed(_ granted: AccessGroups, for connection: DBusConnection) -> AccessGroups {
        guard let requested = connection.value(of: RequestedGroups.self) else { return granted }
        return AccessGroups(requested.groups, managesKeychains: granted.managesKeychains)
    }

    /// `UseAccessGroups`: keeps the groups the client asks for with its connection, when the
    /// caller has every one of them (`*` only when it has `*`).
    /// - Throws: `.missingEntitlement` naming the first group it does not have; `.parameter`
    ///   for an empty list.
    func narrow(_ connection: DBusConnection, to requested: [String]) throws {
        guard !requested.isEmpty else {
            throw KeychainError(.parameter, "UseAccessGroups takes at least one group")
        }
        let granted = try grantedGroups(connection)
        if let missing = requested.first(where: { !Self.grants(granted, $0) }) {
            throw KeychainError(.missingEntitlement, "this program may not use the access group \(missing)")
        }
        connection.keep(RequestedGroups(groups: requested))
    }

    /// Whether `granted` lets its caller name `group`: a group it has, or any group with `*`
    /// (and `*` itself only then).
    static func grants(_ granted: AccessGroups, _ group: String) -> Bool {
        granted.groups.contains("*") || (group != "*" && granted.groups.contains(group))
    }

    /// Runs `body` on the default keychain, acting for `groups`, on the engine's work queue
    /// (another door to the same keychains, such as the Secret Service, uses this).
    /// - Throws: ``KeychainModel/KeychainError`` `.missingEntitlement` without groups, or what
    ///   `body` throws.
    public func withDefaultKeychain<T: Sendable>(
        for groups: AccessGroups, _ body: @escaping @Sendable (any KeychainHandle) throws -> T
    ) async throws -> T {
        try await withKeychain(named: "", for: groups, body)
    }

    /// Runs `body` on the keychain `name` (`""`: the default keychain; else an absolute path),
    /// acting for `groups`, on the engine's work queue, as ``withDefaultKeychain(for:_:)`` does.
    /// - Throws: ``KeychainModel/KeychainError`` `.missingEntitlement` without groups,
    ///   `.noSuchKeychain` when there is no such file, or what `body` throws.
    public func withKeychain<T: Sendable>(
        named name: String, for groups: AccessGroups, _ body: @escaping @Sendable (any KeychainHandle) throws -> T
    ) async throws -> T {
        try Self.requireSomeGroup(groups)
        return try await onWorkQueue { [self] in try withKeychainOnWorkQueue(named: name, for: groups, body) }
    }

    /// ``withKeychain(named:for:_:)`` for a caller already on the engine's work queue
    /// (``onWorkQueue(_:)``): runs `body` right here, opening the keychain when it must.
    /// - Throws: ``KeychainModel/KeychainError`` `.missingEntitlement` without groups,
    ///   `.noSuchKeychain` when there is no such file, or what `body` throws.
    package func withKeychainOnWorkQueue<T>(
        named name: String, for groups: AccessGroups, as caller: CallingApplication = busClient,
        _ body: (any KeychainHandle) throws -> T
    ) throws -> T {
        try Self.requireSomeGroup(groups)
        defer { MemoryHygiene.scrubStack() }
        let keychain = try keychain(name)
        return try idle.around(keychain, .use) {
            try KeychainDatabase.$callingApplication.withValue(caller) {
                try body(keychain.acting(for: groups))
            }
        }
    }

    /// Who a Secret Service or SSH agent caller is to an access list when the call does not say:
    /// nobody a list can name, so that an item with a list never goes to such a caller unasked.
    package static let busClient = CallingApplication.unnamed(pid: 0, "a Secret Service or SSH agent client")

    /// Unlocks the keychain `name` (`""`: the default one) with `password`, as a client's
    /// `Unlock` does: counted in the back-off after wrong passwords.
    /// - Throws: ``KeychainModel/KeychainError`` `.authFailed` for a wrong password, or while the
    ///   back-off lasts.
    public func unlock(keychainNamed name: String, password: Data, for groups: AccessGroups) async throws {
        try Self.requireSomeGroup(groups)
        _ = try await onWorkQueue { [self] in
            let keychain = try keychain(name)
            try idle.around(keychain, .reread) {
                try throttled(keychain.path ?? name, for: groups) {
                    try keychain.acting(for: groups).unlock(password: password)
                }
            }
        }
    }

    /// Makes the keychain at the absolute `path` the user's default, as `security
    /// default-keychain -s` does (kept in the preferences file): only for the user's own
    /// programs (`AccessGroups.managesKeychains`). The next request for the default keychain opens that one.
    public func setDefaultKeychain(_ path: String, for groups: AccessGroups) throws {
        try Self.requireUserProgram(groups)
        try KeychainPreferences.update(at: paths.preferencesFile) { $0.defaultKeychain = path }
        open.withLock { spellings[""] = nil }
    }

    /// Creating, deleting, choosing, naming and re-keying keychains is for the user's own
    /// programs (``KeychainModel/AccessGroups/managesKeychains``).
    /// - Throws: `.missingEntitlement` for any other caller.
    public static func requireUserProgram(_ groups: AccessGroups) throws {
        guard groups.managesKeychains else {
            throw KeychainError(.missingEntitlement, "only the user's own programs manage keychains")
        }
    }

    /// Runs `body` on the keychain `name` right here, on the calling thread, when this agent
    /// has it open already (no file is opened or created); `nil` when it does not. For quick
    /// reads answered on an event loop, as the agent's own lookups are; anything that may take
    /// long goes through ``withKeychain(named:for:_:)``.
    package func withOpenKeychain<T>(
        named name: String, for groups: AccessGroups, as caller: CallingApplication = busClient,
        _ body: (any KeychainHandle) throws -> T
    ) throws -> T? {
        guard !groups.groups.isEmpty,
            let keychain = open.withLock({ spellings[name].flatMap { keychains[$0] } })
        else { return nil }
        return try idle.around(keychain, .use) {
            try KeychainDatabase.$callingApplication.withValue(caller) {
                try body(keychain.acting(for: groups))
            }
        }
    }

    /// Creates a password-less keychain at the absolute `path`, as `security create-keychain`
    /// without a password does through the agent: only for the user's own programs (`AccessGroups.managesKeychains`).
    public func createKeychain(at path: String, for groups: AccessGroups) async throws {
        try Self.requireSomeGroup(groups)
        try Self.requireUserProgram(groups)
        try await onWorkQueue { [self] in try create(path, password: nil) }
    }

    /// Deletes the keychain at the absolute `path` (its file, log and settings), as `security
    /// delete-keychain` does through the agent: only for the user's own programs (`AccessGroups.managesKeychains`).
    public func deleteKeychain(at path: String, for groups: AccessGroups) async throws {
        try Self.requireSomeGroup(groups)
        try Self.requireUserProgram(groups)
        try await onWorkQueue { [self] in try deleteKeychain(path) }
    }

    /// Runs `body` on the engine's work queue and waits for it on this thread: for a server of
    /// the agent's own that serves each client on a plain thread (the SSH agent), never from an
    /// event loop or the cooperative pool.
    package func onWorkQueueWaiting<T>(_ body: () throws -> T) throws -> T {
        try work.sync(execute: body)
    }

    /// Runs `body` on the engine's work queue, where a call may wait on files and the engine
    /// (never on an event loop or the cooperative pool).
    package func onWorkQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            work.async { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// Locks every open password keychain whose settings say
    /// ``KeychainModel/KeychainSettings/locksOnSleep``: what the machine going to sleep, or the
    /// session locking, does (see ``SleepLock``). A keychain the agent has not opened is locked
    /// already; one whose settings cannot be read is left as it is, as the idle lock leaves it.
    ///
    /// - Returns: How many keychains it locked.
    @discardableResult
    public func lockKeychainsThatLockOnSleep() async -> Int {
        let locked = try? await onWorkQueue { [self] () -> Int in
            var locked = 0
            for keychain in open.withLock({ Array(keychains.values) }) where keychain.hasPassword && !keychain.isLocked
            {
                guard (try? keychain.settings)?.locksOnSleep == true else { continue }
                keychain.lock()
                if let path = keychain.path { idle.forget(path) }
                locked += 1
            }
            return locked
        }
        return locked ?? 0
    }

    // MARK: Requests

    /// `Create`: a keychain file at the absolute `path`, left unlocked when it has a password.
    func create(_ path: String, password: Data?) throws {
        let keychain = try KeychainDatabase.create(
            at: try absolute(path), password: password, configuration: configuration)
        remember(keychain)
        if let password { try keychain.unlock(password: password) }
        idle.reread(keychain)
    }

    /// `DeleteKeychain`: closes and deletes the keychain at the absolute `path`.
    func deleteKeychain(_ path: String) throws {
        let path = try absolute(path)
        forget(path)
        idle.forget(path)
        try KeychainDatabase.deleteKeychain(at: path)
    }

    /// `LockAll`: as `security lock-keychain -a`, after-first-unlock items too (an idle lock
    /// keeps them).
    func lockAll() {
        for keychain in open.withLock({ Array(keychains.values) }) {
            keychain.lock(includingAfterFirstUnlockItems: true)
            if let path = keychain.path { idle.forget(path) }
        }
    }

    /// Refuses a caller with no access group at all.
    static func requireSomeGroup(_ groups: AccessGroups) throws {
        guard !groups.groups.isEmpty else { throw KeychainError(.missingEntitlement, "the caller has no access group") }
    }

    /// Runs an operation that checks a password, refusing it while the keychain is in its
    /// back-off after repeated wrong passwords, and counting this attempt's outcome.
    ///
    /// The back-off is the caller's: its key is the keychain and the caller's groups, so an
    /// app's wrong passwords never keep the user's own programs (or another app) out. The user's
    /// unsandboxed programs share one (the agent cannot tell them apart); they can read the
    /// keychain file and guess offline anyway. While it runs, the caller is told how long to wait.
    func throttled<T>(_ path: String, for groups: AccessGroups, _ body: () throws -> T) throws -> T {
        let key = Self.throttleKey(path, groups)
        do {
            try open.withLock { try throttle.checkAttempt(for: key) }
        } catch let error as AgentError {
            throw KeychainError(.interactionNotAllowed, "\(path): \(error.message)", isSetupProblem: true)
        }
        do {
            let result = try body()
            open.withLock { throttle.recordSuccess(for: key) }
            return result
        } catch let error as KeychainError where error.code == .authFailed {
            open.withLock { throttle.recordFailure(for: key) }
            throw error
        }
    }

    /// The back-off's key for a caller of `path`: the path, then who asks (NUL-separated).
    static func throttleKey(_ path: String, _ groups: AccessGroups) -> String {
        ([path, groups.managesKeychains ? "*user*" : ""] + groups.groups).joined(separator: "\u{0}")
    }

    /// What a keychain as a caller sees it can do beyond its items (the engine's own handles
    /// can: hold token keys, make a recovery key, unlock on the boot state).
    /// - Throws: `.unimplemented`, saying `missing`, for a handle that cannot.
    func capability<Capability>(
        _ keychain: any KeychainHandle, as type: Capability.Type, _ missing: String
    ) throws -> Capability {
        guard let capable = keychain as? Capability else { throw KeychainError(.unimplemented, missing) }
        return capable
    }

    /// The token keys of a keychain as a caller sees it.
    func tokenHolder(_ keychain: any KeychainHandle) throws -> any TokenKeyHolder {
        try capability(keychain, as: (any TokenKeyHolder).self, "this keychain cannot hold token keys")
    }

    // MARK: Keychains

    /// The open keychain at `name` (`""`: the default keychain, created on first use).
    func keychain(_ name: String) throws -> KeychainDatabase {
        if let known = open.withLock({ spellings[name].flatMap { keychains[$0] } }) { return known }
        let path = name.isEmpty ? paths.defaultKeychain : try absolute(name)
        if let open = open.withLock({ keychains[path] }) {
            remember(name, as: path)
            return open
        }
        let opened =
            name.isEmpty
            ? try KeychainDatabase.openDefault(paths: paths, configuration: configuration)
            : try KeychainDatabase.open(at: path, configuration: configuration)
        let (keychain, isNew) = open.withLock {
            if let existing = keychains[path] { return (existing, false) }
            keychains[path] = opened
            return (opened, true)
        }
        remember(name, as: path)
        if isNew, let observer = openedObserver.withLock({ $0 }) { observer(path, keychain) }
        return keychain
    }

    /// Calls `observer` with each keychain the service opens from now on, by absolute path.
    public func whenKeychainOpens(_ observer: @escaping @Sendable (String, KeychainDatabase) -> Void) {
        openedObserver.withLock { $0 = observer }
    }

    /// Opens the default keychain now when its file exists (nothing is created), so that what
    /// ``whenKeychainOpens(_:)`` starts for it runs before any client asks.
    public func openDefaultKeychainIfPresent() {
        guard FileManager.default.fileExists(atPath: paths.defaultKeychain) else { return }
        _ = try? keychain("")
    }

    /// Whether the keychain named `name` is open in this agent under that very name, so that a
    /// request on it resolves no path and opens no file.
    func isOpen(_ name: String) -> Bool {
        open.withLock { spellings[name].map { keychains[$0] != nil } ?? false }
    }

    /// Records that `name` stands for the open keychain at `path` (a bounded table: a client
    /// naming keychains in endless new spellings only makes it start again).
    private func remember(_ name: String, as path: String) {
        open.withLock {
            guard keychains[path] != nil else { return }
            if spellings.count >= 1_024 { spellings.removeAll() }
            spellings[name] = path
        }
    }

    func remember(_ keychain: KeychainDatabase) {
        guard let path = keychain.path else { return }
        open.withLock { keychains[path] = keychain }
    }

    func forget(_ path: String) {
        open.withLock {
            keychains.removeValue(forKey: path)
            spellings = spellings.filter { $0.value != path }
        }
    }

    /// The one spelling of a keychain's path (`/a//b/./k` and a link to its directory name one
    /// keychain, with one lock state): its directory resolved as `security` resolves a path
    /// (``KeychainCore/CanonicalPath``), its file name as given, so that the engine still sees,
    /// and refuses, a link in place of the keychain's file.
    func absolute(_ path: String) throws -> String {
        guard path.hasPrefix("/") else { throw KeychainError(.parameter, "a keychain is named by its absolute path") }
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let directory = CanonicalPath.of(url.deletingLastPathComponent().path)
        return (directory == "/" ? "" : directory) + "/" + url.lastPathComponent
    }

}
