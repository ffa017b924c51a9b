import DBusNIO
import DBusWire
import Dispatch
import Foundation
import Synchronization
import KeychainAgentProtocol
import KeychainCore

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
    /// Told of each keychain the service opens (keychaind starts its sync there).
    private let openedObserver = Mutex<(@Sendable (String, KeychainDatabase) -> Void)?>(nil)

    /// Who the callers are, when they are identified once per connection
    /// (``init(configuration:paths:callers:)``); else ``groups`` of each call's credentials.
    private let callers: CallerDirectory?

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

    /// The interface to register at ``KeychainAgentProtocol/AgentInterface/objectPath``.
    public var interface: DBusInterface {
        var methods: [DBusMethod] = []
        for method in AgentInterface.Method.allCases {
            var immediate: (@Sendable (DBusMethodCall) throws -> [DBusValue]?)?
            var wire: (@Sendable (DBusMethodCall, inout DBusBodyReader) throws -> [DBusValue]?)?
            if Self.quick.contains(method) {
                immediate = { [self] call in try respondImmediately(method, call) }
            }
            if method == .find || method == .findReadable {
                wire = { [self] call, body in try respondFromWire(method, call, &body) }
            }
            let handler: @Sendable (DBusMethodCall) async throws -> [DBusValue] = { [self] call in
                try await respond(method, call)
            }
            methods.append(
                DBusMethod(
                    method.rawValue, inputs: method.inputs, outputs: method.outputs, wireHandler: wire,
                    immediateHandler: immediate, handler: handler))
        }
        return DBusInterface(AgentInterface.name, methods: methods)
    }

    /// The requests that may be answered on the event loop that read them
    /// (``respondImmediately(_:_:)``): reads of a keychain already open, which never wait for
    /// a lock or the disk's writes.
    static let quick: Set<AgentInterface.Method> = [.find, .findReadable, .status, .settings]

    /// The most items a lookup answered on the event loop may ask for: a larger or unlimited
    /// one may decrypt thousands of items, and goes to the engine's queue.
    static let quickLimit = 16

    /// Runs one request: the engine's errors become the agent's D-Bus errors.
    func respond(_ method: AgentInterface.Method, _ call: DBusMethodCall) async throws -> [DBusValue] {
        let arguments = call.arguments
        let connection = call.connection
        do {
            if method == .useAccessGroups {
                return try await onWorkQueue { [self] in try narrow(connection, to: arguments) }
            }
            return try await onWorkQueue { [self] in
                defer { MemoryHygiene.scrubStack() }
                return try perform(method, arguments, groups: try callerGroups(connection))
            }
        } catch let error as KeychainError {
            throw AgentCodec.dbusError(error)
        } catch let error as AgentError {
            throw AgentCodec.dbusError(error.keychainError)
        }
    }

    /// Answers a quick read where it was read, on the connection's event loop, without the two
    /// hand-offs to the engine's queue and back: a lookup of a few items (``quickLimit``), the
    /// status or settings of a keychain this agent has already opened. Anything else (a
    /// keychain to open first, an unlimited lookup, an argument that does not decode) is
    /// declined (`nil`) and runs on the engine's queue as every other request does.
    func respondImmediately(_ method: AgentInterface.Method, _ call: DBusMethodCall) throws -> [DBusValue]? {
        let arguments = call.arguments
        guard case .string(let name)? = arguments.first, isOpen(name) else { return nil }
        if method == .find || method == .findReadable {
            guard arguments.count > 1, let limit = AgentCodec.queryLimit(arguments[1]), limit <= Self.quickLimit
            else { return nil }
        }
        do {
            // A caller not identified yet goes to the queue: identifying may read many files.
            guard let groups = try knownGroups(call.connection) else { return nil }
            defer { MemoryHygiene.scrubStack() }
            return try perform(method, arguments, groups: groups)
        } catch let error as KeychainError {
            throw AgentCodec.dbusError(error)
        } catch let error as AgentError {
            throw AgentCodec.dbusError(error.keychainError)
        }
    }

    /// Answers a lookup (`Find`, `FindReadable`: `s a{sv} b`) on the event loop as
    /// ``respondImmediately(_:_:)`` does, reading its arguments straight from the wire: the
    /// lookup every client makes, without building its query as D-Bus values first. Declines
    /// (`nil`) what ``respondImmediately(_:_:)`` declines; the call is then decoded and handled
    /// as usual.
    func respondFromWire(
        _ method: AgentInterface.Method, _ call: DBusMethodCall, _ body: inout DBusBodyReader
    ) throws -> [DBusValue]? {
        let name = try body.readString()
        guard isOpen(name) else { return nil }
        do {
            let query = try AgentCodec.decodeQuery(from: &body)
            let includeData = try body.readBoolean()
            try body.finish()
            guard let limit = query.limit, limit <= Self.quickLimit,
                let groups = try knownGroups(call.connection)
            else { return nil }
            try Self.requireSomeGroup(groups)
            defer { MemoryHygiene.scrubStack() }
            return try using(name, for: method, groups: groups) { keychain in
                try lookup(method, query, includeData: includeData, on: keychain)
            }
        } catch let error as KeychainError {
            throw AgentCodec.dbusError(error)
        } catch let error as AgentError {
            throw AgentCodec.dbusError(error.keychainError)
        }
    }

    /// The access groups of the caller behind `connection`, as it narrowed them.
    private func callerGroups(_ connection: DBusConnection) throws -> AccessGroups {
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
    private func knownGroups(_ connection: DBusConnection) throws -> AccessGroups? {
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
    private func narrow(_ connection: DBusConnection, to arguments: [DBusValue]) throws -> [DBusValue] {
        guard case .array(_, let values)? = arguments.first else {
            throw KeychainError(.parameter, "UseAccessGroups takes a list of groups")
        }
        let requested = values.compactMap(\.stringValue)
        guard !requested.isEmpty, requested.count == values.count else {
            throw KeychainError(.parameter, "UseAccessGroups takes at least one group")
        }
        let granted = try grantedGroups(connection)
        if let missing = requested.first(where: { !Self.grants(granted, $0) }) {
            throw KeychainError(.missingEntitlement, "this program may not use the access group \(missing)")
        }
        connection.keep(RequestedGroups(groups: requested))
        return []
    }

    /// Whether `granted` lets its caller name `group`: a group it has, or any group with `*`
    /// (and `*` itself only then).
    static func grants(_ granted: AccessGroups, _ group: String) -> Bool {
        granted.groups.contains("*") || (group != "*" && granted.groups.contains(group))
    }

    /// Runs `body` on the default keychain, acting for `groups`, on the engine's work queue
    /// (another door to the same keychains, such as the Secret Service, uses this).
    /// - Throws: ``KeychainCore/KeychainError`` `.missingEntitlement` without groups, or what
    ///   `body` throws.
    public func withDefaultKeychain<T: Sendable>(
        for groups: AccessGroups, _ body: @escaping @Sendable (any KeychainHandle) throws -> T
    ) async throws -> T {
        try await withKeychain(named: "", for: groups, body)
    }

    /// Runs `body` on the keychain `name` (`""`: the default keychain; else an absolute path),
    /// acting for `groups`, on the engine's work queue, as ``withDefaultKeychain(for:_:)`` does.
    /// - Throws: ``KeychainCore/KeychainError`` `.missingEntitlement` without groups,
    ///   `.noSuchKeychain` when there is no such file, or what `body` throws.
    public func withKeychain<T: Sendable>(
        named name: String, for groups: AccessGroups, _ body: @escaping @Sendable (any KeychainHandle) throws -> T
    ) async throws -> T {
        try Self.requireSomeGroup(groups)
        return try await onWorkQueue { [self] in
            defer { MemoryHygiene.scrubStack() }
            let keychain = try keychain(name)
            return try idle.around(keychain, .use) { try body(keychain.acting(for: groups)) }
        }
    }

    /// Unlocks the keychain `name` (`""`: the default one) with `password`, as a client's
    /// `Unlock` does: counted in the back-off after wrong passwords.
    /// - Throws: ``KeychainCore/KeychainError`` `.authFailed` for a wrong password, or while the
    ///   back-off lasts.
    public func unlock(keychainNamed name: String, password: Data, for groups: AccessGroups) async throws {
        _ = try await onWorkQueue { [self] in
            try perform(.unlock, [.string(name), .boolean(true), .bytes(Array(password))], groups: groups)
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
    /// programs (``KeychainCore/AccessGroups/managesKeychains``).
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
    public func withOpenKeychain<T>(
        named name: String, for groups: AccessGroups, _ body: (any KeychainHandle) throws -> T
    ) throws -> T? {
        guard !groups.groups.isEmpty,
            let keychain = open.withLock({ spellings[name].flatMap { keychains[$0] } })
        else { return nil }
        return try idle.around(keychain, .use) { try body(keychain.acting(for: groups)) }
    }

    /// Creates a password-less keychain at the absolute `path`, as `security create-keychain`
    /// without a password does through the agent: only for the user's own programs (`AccessGroups.managesKeychains`).
    public func createKeychain(at path: String, for groups: AccessGroups) async throws {
        _ = try await onWorkQueue { [self] in
            try perform(.create, [.string(path), .boolean(false), .bytes([])], groups: groups)
        }
    }

    /// Deletes the keychain at the absolute `path` (its file, log and settings), as `security
    /// delete-keychain` does through the agent: only for the user's own programs (`AccessGroups.managesKeychains`).
    public func deleteKeychain(at path: String, for groups: AccessGroups) async throws {
        _ = try await onWorkQueue { [self] in try perform(.deleteKeychain, [.string(path)], groups: groups) }
    }

    private func onWorkQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            work.async { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// Locks every open password keychain whose settings say
    /// ``KeychainCore/KeychainSettings/locksOnSleep``: what the machine going to sleep, or the
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

    /// The methods that manage keychains rather than items in them: only a caller whose groups
    /// include every group (the user's own programs, not a sandboxed or manifest-bound app).
    /// (A switch, not a set: every request asks, and a set hashes the method's name.)
    static func isAdministration(_ method: AgentInterface.Method) -> Bool {
        switch method {
        // Locking a keychain locks it for every program of the user: not for an app to do to
        // the others (issue 50, item 5).
        case .create, .deleteKeychain, .lockAll, .lock, .changePassword, .rotateKeys, .setSettings: true
        default: false
        }
    }

    /// What each request does to its keychain's idle timer (``IdleLock``): looking at the
    /// keychain leaves it running, using it starts it again.
    static func idleEffect(of method: AgentInterface.Method) -> IdleLock.Effect {
        switch method {
        case .status, .settings, .close, .create, .deleteKeychain, .lockAll, .useAccessGroups: .none
        case .find, .findReadable, .update, .delete: .lookup
        case .add, .addMany, .upsert, .createTokenKey, .useTokenKey, .storeTokenKey: .use
        case .unlock, .lock, .changePassword, .rotateKeys, .setSettings: .reread
        }
    }

    private func perform(
        _ method: AgentInterface.Method, _ arguments: [DBusValue], groups: AccessGroups
    ) throws -> [DBusValue] {
        try Self.requireSomeGroup(groups)
        if Self.isAdministration(method) { try Self.requireUserProgram(groups) }
        let name = method == .lockAll ? "" : try string(arguments, 0)
        switch method {
        case .create:
            let password = try password(arguments, 1)
            let keychain = try KeychainDatabase.create(
                at: try absolute(name), password: password, configuration: configuration)
            remember(keychain)
            if let password { try keychain.unlock(password: password) }
            idle.reread(keychain)
            return []
        case .deleteKeychain:
            let path = try absolute(name)
            forget(path)
            idle.forget(path)
            try KeychainDatabase.deleteKeychain(at: path)
            return []
        case .lockAll:
            // As `security lock-keychain -a`: after-first-unlock items too (an idle lock keeps them).
            for keychain in open.withLock({ Array(keychains.values) }) {
                keychain.lock(includingAfterFirstUnlockItems: true)
                if let path = keychain.path { idle.forget(path) }
            }
            return []
        case .close:
            return []
        case .lock:
            // As `security lock-keychain`: after-first-unlock items too (an idle lock keeps them).
            let keychain = try keychain(name)
            return try idle.around(keychain, Self.idleEffect(of: method)) {
                keychain.lock(includingAfterFirstUnlockItems: true)
                return []
            }
        case .unlock, .changePassword, .rotateKeys:
            let keychain = try keychain(name)
            return try idle.around(keychain, Self.idleEffect(of: method)) {
                try throttled(keychain.path ?? name, for: groups) {
                    try perform(method, arguments, on: keychain.acting(for: groups))
                }
            }
        default:
            return try using(name, for: method, groups: groups) { try perform(method, arguments, on: $0) }
        }
    }

    /// Runs `body` on the keychain `name` as `groups` see it, with `method`'s effect on the
    /// keychain's idle timer.
    private func using(
        _ name: String, for method: AgentInterface.Method, groups: AccessGroups,
        _ body: (any KeychainHandle) throws -> [DBusValue]
    ) throws -> [DBusValue] {
        let keychain = try keychain(name)
        return try idle.around(keychain, Self.idleEffect(of: method), seen: Self.sawItems) {
            try body(keychain.acting(for: groups))
        }
    }

    /// Whether a request's answer shows the caller some of the keychain's items: a lookup's
    /// items, or an update's or a delete's count.
    static func sawItems(_ answer: [DBusValue]) -> Bool {
        switch answer.first {
        case .array(_, let items)?: !items.isEmpty
        case .uint32(let count)?: count > 0
        default: true
        }
    }

    /// Refuses a caller with no access group at all.
    private static func requireSomeGroup(_ groups: AccessGroups) throws {
        guard !groups.groups.isEmpty else { throw KeychainError(.missingEntitlement, "the caller has no access group") }
    }

    /// Runs an operation that checks a password, refusing it while the keychain is in its
    /// back-off after repeated wrong passwords, and counting this attempt's outcome.
    ///
    /// The back-off is the caller's: its key is the keychain and the caller's groups, so an
    /// app's wrong passwords never keep the user's own programs (or another app) out. The user's
    /// unsandboxed programs share one (the agent cannot tell them apart); they can read the
    /// keychain file and guess offline anyway. While it runs, the caller is told how long to wait.
    private func throttled<T>(_ path: String, for groups: AccessGroups, _ body: () throws -> T) throws -> T {
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

    private func perform(
        _ method: AgentInterface.Method, _ arguments: [DBusValue], on keychain: any KeychainHandle
    ) throws -> [DBusValue] {
        switch method {
        case .add: return [AgentCodec.encode(try keychain.add(try AgentCodec.decodeItem(try value(arguments, 1))))]
        case .addMany:
            return [
                AgentCodec.encode(try keychain.add(contentsOf: try AgentCodec.decodeItems(try value(arguments, 1))))
            ]
        case .upsert:
            let (item, added) = try keychain.upsert(try AgentCodec.decodeItem(try value(arguments, 1)))
            return [AgentCodec.encode(item), .boolean(added)]
        case .find, .findReadable:
            let query = try AgentCodec.decodeQuery(try value(arguments, 1))
            return try lookup(method, query, includeData: try flag(arguments, 2), on: keychain)
        case .update:
            let query = try AgentCodec.decodeQuery(try value(arguments, 1))
            let changes = try AgentCodec.decodeAttributes(try value(arguments, 2))
            let data = try flag(arguments, 3) ? Data(try bytes(arguments, 4)) : nil
            return [.uint32(UInt32(clamping: try keychain.update(query, attributes: changes, data: data)))]
        case .delete:
            return [.uint32(UInt32(clamping: try keychain.delete(try AgentCodec.decodeQuery(try value(arguments, 1)))))]
        case .unlock:
            try keychain.unlock(password: try password(arguments, 1))
            return []
        case .status:
            return [
                .stringVariantDictionary([
                    "path": .string(keychain.path ?? ""), "hasPassword": .boolean(keychain.hasPassword),
                    "isLocked": .boolean(keychain.isLocked),
                    "accessGroups": .array(.string, keychain.accessGroups.groups.map { .string($0) }),
                ])
            ]
        case .changePassword:
            try keychain.changePassword(old: try password(arguments, 1), new: Data(try bytes(arguments, 3)))
            return []
        case .rotateKeys:
            try keychain.rotateKeys(password: try password(arguments, 1), newPassword: try password(arguments, 3))
            return []
        case .settings:
            return [AgentCodec.encode(try keychain.settings)]
        case .setSettings:
            try keychain.setSettings(try AgentCodec.decodeSettings(try value(arguments, 1)))
            return []
        case .createTokenKey:
            let template = try flag(arguments, 1) ? try AgentCodec.decodeItem(try value(arguments, 2)) : nil
            let created = try tokenHolder(keychain).createTokenKey(storing: template)
            return [.bytes(Array(created.publicKey)), .bytes(Array(created.handle))]
        case .useTokenKey:
            guard case .byte(let code) = try value(arguments, 2),
                let operation = TokenKeyRequest.Operation(rawValue: code),
                case .uint32(let kdfHash) = try value(arguments, 4), case .uint32(let size) = try value(arguments, 6)
            else { throw KeychainError(.parameter, "bad token key request") }
            let request = TokenKeyRequest(
                operation, input: Data(try bytes(arguments, 3)), kdfHash: Int(kdfHash),
                sharedInfo: Data(try bytes(arguments, 5)), outputSize: Int(size))
            return [.bytes(Array(try tokenHolder(keychain).useTokenKey(Data(try bytes(arguments, 1)), request)))]
        case .storeTokenKey:
            let template = try AgentCodec.decodeItem(try value(arguments, 2))
            return [.bytes(Array(try tokenHolder(keychain).storeTokenKey(Data(try bytes(arguments, 1)), as: template)))]
        case .create, .deleteKeychain, .lockAll, .close, .lock, .useAccessGroups:
            // Served by the caller of this function, on the keychain itself.
            return []
        }
    }

    /// `Find` or `FindReadable` of `query` on `keychain`, as the caller sees it, in the form the
    /// method returns.
    private func lookup(
        _ method: AgentInterface.Method, _ query: ItemQuery, includeData: Bool, on keychain: any KeychainHandle
    ) throws -> [DBusValue] {
        guard method == .findReadable else {
            return [AgentCodec.encode(try keychain.find(query, includeData: includeData))]
        }
        let found = try keychain.findReadable(query, includeData: includeData)
        return [AgentCodec.encode(found.items), .array(.string, found.unreadable.map { .string($0.description) })]
    }

    /// The token keys of a keychain as a caller sees it (the engine's own handle).
    private func tokenHolder(_ keychain: any KeychainHandle) throws -> any TokenKeyHolder {
        guard let holder = keychain as? any TokenKeyHolder else {
            throw KeychainError(.unimplemented, "this keychain cannot hold token keys")
        }
        return holder
    }

    // MARK: Keychains

    /// The open keychain at `name` (`""`: the default keychain, created on first use).
    private func keychain(_ name: String) throws -> KeychainDatabase {
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
    private func isOpen(_ name: String) -> Bool {
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

    private func remember(_ keychain: KeychainDatabase) {
        guard let path = keychain.path else { return }
        open.withLock { keychains[path] = keychain }
    }

    private func forget(_ path: String) {
        open.withLock {
            keychains.removeValue(forKey: path)
            spellings = spellings.filter { $0.value != path }
        }
    }

    /// The one spelling of a keychain's path (`/a//b/./k` and a link to its directory name one
    /// keychain, with one lock state): its directory resolved as `security` resolves a path
    /// (``KeychainCore/CanonicalPath``), its file name as given, so that the engine still sees,
    /// and refuses, a link in place of the keychain's file.
    private func absolute(_ path: String) throws -> String {
        guard path.hasPrefix("/") else { throw KeychainError(.parameter, "a keychain is named by its absolute path") }
        let url = URL(fileURLWithPath: path).standardizedFileURL
        let directory = CanonicalPath.of(url.deletingLastPathComponent().path)
        return (directory == "/" ? "" : directory) + "/" + url.lastPathComponent
    }

    // MARK: Arguments (the dispatcher has checked their types against the signature)

    private func value(_ arguments: [DBusValue], _ index: Int) throws -> DBusValue {
        guard index < arguments.count else { throw KeychainError(.parameter, "missing argument") }
        return arguments[index]
    }

    private func string(_ arguments: [DBusValue], _ index: Int) throws -> String {
        guard case .string(let string) = try value(arguments, index) else { return "" }
        return string
    }

    private func flag(_ arguments: [DBusValue], _ index: Int) throws -> Bool {
        guard case .boolean(let flag) = try value(arguments, index) else {
            throw KeychainError(.parameter, "expected a boolean")
        }
        return flag
    }

    private func bytes(_ arguments: [DBusValue], _ index: Int) throws -> [UInt8] {
        guard case .bytes(let bytes) = try value(arguments, index) else {
            throw KeychainError(.parameter, "expected bytes")
        }
        return bytes
    }

    /// A password given as a flag and bytes: `nil` when the flag is false.
    private func password(_ arguments: [DBusValue], _ index: Int) throws -> Data? {
        try flag(arguments, index) ? Data(try bytes(arguments, index + 1)) : nil
    }
}
