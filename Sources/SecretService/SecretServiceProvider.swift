import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore
import Synchronization

/// The freedesktop Secret Service (`org.freedesktop.secrets`) on the agent's keychains: the
/// Service, a collection per keychain (the default one also at the alias `default`), the
/// in-memory `session` collection, their items, and `plain` and
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` sessions. Each caller is identified through the bus
/// (`GetConnectionCredentials`) and sees only its access groups, as through the agent's socket.
///
/// ```swift
/// let provider = SecretServiceProvider(agent: service, directory: directory)
/// let bus = try await DBusConnection.connect(to: addresses, objects: provider.objects)
/// try await bus.hello()
/// let watcher = try await provider.watchSessions(on: bus)
/// ```
public final class SecretServiceProvider: Sendable {
    /// The well-known bus name.
    public static let busName = "org.freedesktop.secrets"
    static let servicePath = "/org/freedesktop/secrets"
    static let collectionPrefix = "/org/freedesktop/secrets/collection/"
    static let aliasPrefix = "/org/freedesktop/secrets/aliases/"
    static let sessionPrefix = "/org/freedesktop/secrets/session/"

    static let serviceInterface = SecretServiceInterface.service
    static let collectionInterface = SecretServiceInterface.collection
    static let itemInterface = SecretServiceInterface.item
    static let sessionInterface = SecretServiceInterface.session

    /// The secret struct `(oayays)`: session, parameters, value, content type.
    static let secretType = SecretServiceInterface.secretType

    /// How long the list of collections is kept before the keychains directory and the default
    /// keychain's preference are read again (a keychain made by `security` shows up after it).
    static let collectionListLifetime: Duration = .seconds(1)

    /// The objects to export on the bus connection.
    public let objects = DBusObjectTree()
    let agent: AgentService
    let directory: CallerDirectory
    /// Open sessions by path.
    let sessions = Mutex<[String: SecretSession]>([:])
    /// Where `OpenSession`'s key agreements run.
    let agreements = DiffieHellmanAgreements()
    let nextSession = Atomic<UInt64>(1)
    /// The access groups of each caller, by unique bus name: a name is never reused on a bus,
    /// and its entry goes when the caller leaves (``watchSessions(on:)``). Without the cache each
    /// call would cost a `GetConnectionCredentials` round trip and an identification.
    let callers = Mutex<[String: KnownCaller]>([:])
    /// The items each caller (by unique bus name) was allowed by the person although their
    /// access lists do not name it: "Allow" in an `Unlock` prompt lasts while the caller stays
    /// on the bus (``watchSessions(on:)`` forgets it when it leaves).
    let applicationGrants = Mutex<[String: Set<UUID>]>([:])

    /// A caller identified once: its groups, its name for the access log, and who it is to an
    /// item's access list.
    struct KnownCaller: Sendable {
        var groups: AccessGroups
        var name: String
        var application: CallingApplication
    }
    /// Whether ``watchSessions(on:)`` runs (callers are cached only then).
    let watching = Atomic<Bool>(false)
    /// When each caller's unique name appeared: a pid reused after the caller exited is refused.
    let births = BusNameBirths()
    /// Open prompts by path (a completed one is removed).
    let prompts = Mutex<[String: OpenPrompt]>([:])
    /// The collections as last read (``collections()``).
    let collectionList = Mutex<SecretCollectionList?>(nil)
    /// The `session` collection's keychain, in memory, made on first use.
    let sessionKeychain = Mutex<KeychainDatabase?>(nil)
    /// How many items the `session` collection holds, against its quota.
    let sessionItems = ItemQuota(capacity: SecretServiceProvider.sessionCollectionItems)
    /// The keychains (by path) whose D-Bus items have their search terms
    /// (``upgradeSearchTerms(of:)``).
    let upgradedKeychains = Mutex<Set<String>>([])

    /// Who is asked for a locked keychain's password when a client's unlock prompt runs, or
    /// `nil`: the prompt then waits for an unlock by another path.
    let pinentry: Pinentry?
    /// The agent's environment (a pinentry dialog's display and language come from it).
    let environment: [String: String]

    /// A provider that serves `agent`'s keychains to callers identified by `directory`; with
    /// `pinentry`, an unlock prompt asks for the password on the caller's terminal or the
    /// display of `environment`.
    public init(
        agent: AgentService, directory: CallerDirectory, pinentry: Pinentry? = nil,
        environment: [String: String] = [:]
    ) throws {
        self.agent = agent
        self.directory = directory
        self.pinentry = pinentry
        self.environment = environment
        try objects.register(serviceObject, at: Self.servicePath)
        for alias in ["default", "session"] {
            try objects.register(
                collectionObject { [self] in try collection(alias: alias) }, at: Self.aliasPrefix + alias)
        }
        _ = collections()
    }

    /// The number of open sessions (for tests and diagnostics).
    public var sessionCount: Int { sessions.withLock { $0.count } }

    /// Subscribes to `NameOwnerChanged` and then, in the returned task, frees the sessions of
    /// callers that leave the bus until the connection closes or the task is cancelled.
    public func watchSessions(on connection: DBusConnection) async throws -> Task<Void, Never> {
        connection.observeSignals { [births] in births.record($0) }
        _ = try await connection.callBus(
            "AddMatch", [.string("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'")])
        births.startWatching()
        watching.store(true, ordering: .relaxed)
        return Task { [self] in
            for await signal in connection.signals
            where signal.member == "NameOwnerChanged" && signal.sender == DBusMessage.busDriverName {
                guard signal.body.count == 3, signal.body[2].stringValue == "",
                    let name = signal.body[0].stringValue
                else { continue }
                closeSessions(of: name)
                callers.withLock { $0[name] = nil }
                applicationGrants.withLock { $0[name] = nil }
                await dismissPrompts(of: name, on: connection)
            }
        }
    }

    func closeSessions(of owner: String) {
        let closed = sessions.withLock { sessions in
            let paths = sessions.filter { $0.value.owner == owner }.map(\.key)
            for path in paths { sessions[path] = nil }
            return paths
        }
        for path in closed { objects.unregister(path: path) }
    }

    // MARK: Callers

    /// The access groups of the caller of the message being served.
    func groups(_ message: DBusMessage?, _ connection: DBusConnection) async throws -> AccessGroups {
        try await caller(message, connection).groups
    }

    /// The caller of `message`, identified by its kernel credentials (cached by unique name
    /// while the session watcher runs).
    func caller(_ message: DBusMessage?, _ connection: DBusConnection) async throws -> KnownCaller {
        guard let sender = message?.sender else { throw SecretServiceError.refused }
        if let known = callers.withLock({ $0[sender] }) { return known }
        let credentials = try await credentials(of: sender, connection)
        let groups: AccessGroups
        let application: CallingApplication
        do {
            // The pid is the process that connected only if it is no younger than the name
            // (checked again after identifying it, which reads /proc meanwhile).
            try births.requireOriginal(pid: credentials.pid, of: sender)
            groups = try directory.accessGroups(for: credentials)
            application = directory.callingApplication(for: credentials)
            try births.requireOriginal(pid: credentials.pid, of: sender)
        } catch {
            throw SecretServiceError.refused
        }
        let name = directory.logName(for: credentials) ?? "pid \(credentials.pid) (not identified)"
        let known = KnownCaller(groups: groups, name: name, application: application)
        // Only while the session watcher runs: it is what removes the entry when the caller leaves.
        if watching.load(ordering: .relaxed) { callers.withLock { $0[sender] = known } }
        return known
    }

    /// Records in the access log that `items`' secrets went to the caller `sender`.
    func logReads(_ items: [Item], to sender: String?, groups: AccessGroups) {
        let name = sender.flatMap { sender in callers.withLock { $0[sender]?.name } }
        agent.accessLog.record(
            "read", items, caller: name ?? "the bus client \(sender ?? "?")", groups: groups, verified: false)
    }

    // MARK: Collections

    /// The collections now (read again after ``collectionListLifetime``); each has its object.
    func collections() -> SecretCollectionList {
        if let list = collectionList.withLock({ $0 }), ContinuousClock.now - list.read < Self.collectionListLifetime {
            return list
        }
        let list = SecretCollectionList(paths: agent.paths, session: true)
        collectionList.withLock { $0 = list }
        for collection in list.collections where objects.interfaces(at: collection.path) == nil {
            let name = collection.name
            try? objects.register(
                collectionObject { [self] in
                    guard let current = collections().collection(named: name) else {
                        throw SecretServiceError.noSuchCollection
                    }
                    return current
                }, at: collection.path)
        }
        return list
    }

    /// Reads the collections again at the next ``collections()``.
    func collectionsChanged() { collectionList.withLock { $0 = nil } }

    /// The collection an alias names.
    func collection(alias: String) throws -> SecretCollection {
        guard let collection = collections().collection(alias: alias) else { throw SecretServiceError.noSuchCollection }
        return collection
    }

    /// The collection of a collection's, alias's or item's object path, and the item's id.
    func resolve(_ path: String) -> (collection: SecretCollection, item: UUID?)? {
        resolve(path, in: collections())
    }

    /// The collection of `path` in `list`, and the item's id.
    func resolve(_ path: String, in list: SecretCollectionList) -> (collection: SecretCollection, item: UUID?)? {
        let rest: Substring
        let found: SecretCollection?
        if path.hasPrefix(Self.collectionPrefix) {
            rest = path.dropFirst(Self.collectionPrefix.count)
            found = list.collection(named: String(rest.prefix { $0 != "/" }))
        } else if path.hasPrefix(Self.aliasPrefix) {
            rest = path.dropFirst(Self.aliasPrefix.count)
            found = list.collection(alias: String(rest.prefix { $0 != "/" }))
        } else {
            return nil
        }
        guard let found else { return nil }
        let tail = rest.drop { $0 != "/" }.dropFirst()
        if tail.isEmpty { return (found, nil) }
        guard let id = Self.itemID(String(tail)) else { return nil }
        return (found, id)
    }

    /// Who `sender` is, as the bus daemon saw it connect (`GetConnectionCredentials`).
    func credentials(of sender: String, _ connection: DBusConnection) async throws -> DBusPeerCredentials {
        let reply = try await connection.callBus("GetConnectionCredentials", [.string(sender)])
        guard let entries = reply.body.first?.stringKeyedEntries,
            let pid = (entries["ProcessID"]?.variantValue ?? entries["ProcessID"])?.uint32Value,
            let uid = (entries["UnixUserID"]?.variantValue ?? entries["UnixUserID"])?.uint32Value
        else { throw SecretServiceError.refused }
        return DBusPeerCredentials(uid: uid, gid: getgid(), pid: Int32(bitPattern: pid))
    }

    /// Runs `body` on `collection`'s keychain for the caller of `message`; engine errors become
    /// D-Bus errors without secrets.
    func withKeychain<T: Sendable>(
        _ collection: SecretCollection, _ message: DBusMessage?, _ connection: DBusConnection,
        _ body: @escaping @Sendable (any KeychainHandle) throws -> T
    ) async throws -> T {
        let caller = try await caller(message, connection)
        return try await withKeychain(
            collection, for: caller.groups, as: caller.application, allowing: grants(of: message?.sender), body)
    }

    /// The items the person allowed `sender` although their access lists do not name it.
    func grants(of sender: String?) -> Set<UUID> {
        guard let sender else { return [] }
        return applicationGrants.withLock { $0[sender] ?? [] }
    }

    /// Runs `body` on `collection`'s keychain acting for `groups`, for `application` as items'
    /// access lists see it (by default nobody a list names); engine errors become D-Bus errors
    /// without secrets (a keychain deleted meanwhile: `NoSuchObject`).
    func withKeychain<T: Sendable>(
        _ collection: SecretCollection, for groups: AccessGroups,
        as application: CallingApplication = AgentService.busClient, allowing allowed: Set<UUID> = [],
        _ body: @escaping @Sendable (any KeychainHandle) throws -> T
    ) async throws -> T {
        // The session's keychain is in memory: no hand-off.
        guard collection.keychainName != nil else {
            return try withKeychainHere(collection, for: groups, as: application, allowing: allowed, body)
        }
        return try await agent.onWorkQueue { [self] in
            try withKeychainHere(collection, for: groups, as: application, allowing: allowed, body)
        }
    }

    /// Runs `body` here on `collection`'s keychain acting for `groups`, opening it when it must
    /// (on the agent's work queue, or in memory for the session's); engine errors become D-Bus
    /// errors without secrets (a keychain deleted meanwhile: `NoSuchObject`).
    func withKeychainHere<T>(
        _ collection: SecretCollection, for groups: AccessGroups,
        as application: CallingApplication = AgentService.busClient, allowing allowed: Set<UUID> = [],
        _ body: (any KeychainHandle) throws -> T
    ) throws -> T {
        do {
            guard let name = collection.keychainName else {
                guard !groups.groups.isEmpty else { throw KeychainError(.missingEntitlement, "no access group") }
                let handle = try session().acting(for: groups)
                return try Self.acting(as: application, allowing: allowed) { try body(handle) }
            }
            return try KeychainDatabase.$allowedItems.withValue(allowed) {
                try agent.withKeychainOnWorkQueue(named: name, for: groups, as: application, body)
            }
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
    }

    /// Runs `body` with the engine seeing `application` as the caller, allowed the items
    /// `allowed` (the agent's own keychain calls set the caller themselves).
    static func acting<T>(as application: CallingApplication, allowing allowed: Set<UUID>, _ body: () throws -> T)
        rethrows -> T
    {
        try KeychainDatabase.$callingApplication.withValue(application) {
            try KeychainDatabase.$allowedItems.withValue(allowed, operation: body)
        }
    }

    /// The `session` collection's in-memory keychain (a random device key: nothing of it is
    /// ever written anywhere).
    func session() throws -> KeychainDatabase {
        try sessionKeychain.withLock { keychain in
            if let keychain { return keychain }
            let made = try KeychainDatabase.inMemory(password: nil, configuration: agent.configuration)
            keychain = made
            return made
        }
    }

    /// The session at `path`, when the caller opened it.
    @discardableResult
    func checkSession(_ path: String?, caller: String?) throws -> SecretSession {
        guard let path, let caller, let session = sessions.withLock({ $0[path] }), session.owner == caller else {
            throw DBusError.method(SecretServiceError.noSession, "the session does not exist or is not the caller's")
        }
        return session
    }

    // MARK: Items

    static func itemPath(_ item: Item, in collection: SecretCollection) -> String? {
        item.persistentID.map { itemPath($0, in: collection) }
    }

    static func itemPath(_ id: UUID, in collection: SecretCollection) -> String {
        collection.path + "/" + hexDigits(id)
    }

    /// The 32 lowercase hex digits of `id` (its `uuidString` without the dashes), made without
    /// Foundation's string functions: every search result is named so.
    static func hexDigits(_ id: UUID) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        return withUnsafeBytes(of: id.uuid) { bytes in
            String(unsafeUninitializedCapacity: 32) { buffer in
                for (index, byte) in bytes.enumerated() {
                    buffer[2 * index] = digits[Int(byte >> 4)]
                    buffer[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
                return 32
            }
        }
    }

    /// The id of an item path's last element (32 hex digits, in either case).
    static func itemID(_ element: String) -> UUID? {
        var element = element
        return element.withUTF8 { hex -> UUID? in
            guard hex.count == 32 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let parsed = withUnsafeMutableBytes(of: &bytes) { id in
                for index in 0..<16 {
                    guard let high = hexValue(hex[2 * index]), let low = hexValue(hex[2 * index + 1]) else {
                        return false
                    }
                    id[index] = high << 4 | low
                }
                return true
            }
            return parsed ? UUID(uuid: bytes) : nil
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The caller's items in `collections` that match `query`, registered as objects: those
    /// that can be read, and those a locked keychain's index finds
    /// (``SecretAttributes/lockedQuery(for:class:)``).
    /// When nothing is found and a locked keychain could not answer, `IsLocked`.
    func search(
        _ query: [String: String], in collections: [SecretCollection], _ message: DBusMessage?,
        _ connection: DBusConnection
    ) async throws -> (unlocked: [String], locked: [String]) {
        try await onWorkQueue(message, connection) { [self] in try search(query, in: collections, $0) }
    }

    /// ``search(_:in:_:_:)`` where `call` runs. On the event loop it declines a keychain not yet
    /// upgraded (``upgradeSearchTerms(of:)`` reads every item) and more than ``quickLimit``
    /// items in a collection.
    func search(_ query: [String: String], in collections: [SecretCollection], _ call: SecretCall) throws -> (
        unlocked: [String], locked: [String]
    ) {
        var unlocked: [String] = []
        var locked: [String] = []
        var unanswered: DBusError?
        let limit = call.onEventLoop ? Self.quickLimit + 1 : nil
        for collection in searched(collections) {
            let found: (items: [Item], locked: [UUID])
            do {
                found = try withKeychain(collection, call) { [self] keychain in
                    try call.require(quick: hasSearchTerms(keychain))
                    upgradeSearchTerms(of: keychain)
                    return try Self.find(query, in: keychain, limit: limit)
                }
            } catch let error as DBusError where error.errorName == SecretServiceError.isLocked {
                unanswered = error
                continue
            } catch let error as DBusError where error.errorName == SecretServiceError.noSuchObjectName {
                continue  // a keychain deleted since the list was read
            }
            try call.require(quick: found.items.count + found.locked.count <= Self.quickLimit)
            // An item whose access list keeps it from the caller is locked to it (naming the
            // caller for a pinned entry reads its executable: not on the event loop).
            try call.require(quick: !found.items.contains { $0.attributes[.access] != nil })
            var open: [Item] = []
            var held: [Item] = []
            for item in found.items {
                if call.application.mayOpen(item.attributes, id: item.persistentID, allowing: call.allowedItems) {
                    open.append(item)
                } else {
                    held.append(item)
                }
            }
            unlocked += Self.matchingPaths(open, query, in: collection)
            locked += Self.matchingPaths(held, query, in: collection)
            locked += found.locked.map { Self.itemPath($0, in: collection) }
        }
        // A locked keychain that could not say what matches: "nothing found" would be untrue.
        if let unanswered, unlocked.isEmpty && locked.isEmpty { throw unanswered }
        for path in unlocked + locked { try registerItem(at: path) }
        return (unlocked, locked)
    }

    /// `collections` without the session's while nothing was ever stored there (its keychain is
    /// made on first use).
    func searched(_ collections: [SecretCollection]) -> [SecretCollection] {
        let hasSession = sessionKeychain.withLock { $0 != nil }
        return collections.filter { $0.store != .session || hasSession }
    }

    /// The object paths of those of `collection`'s `items` that match `query`.
    static func matchingPaths(_ items: [Item], _ query: [String: String], in collection: SecretCollection) -> [String] {
        items.filter { SecretAttributes.matches($0, query) }.compactMap { itemPath($0, in: collection) }
    }

    /// The items of `keychain` that may match `query` (to be checked with
    /// ``SecretAttributes/matches(_:_:)-(Item,_)``), and the ids a locked keychain's index finds.
    /// Each engine query reads `limit` items at most (none: all).
    /// - Throws: `.interactionNotAllowed` when the keychain is locked and cannot say what matches.
    static func find(_ query: [String: String], in keychain: any KeychainHandle, limit: Int? = nil) throws -> (
        items: [Item], locked: [UUID]
    ) {
        var items: [Item] = []
        var locked: [UUID] = []
        for var engineQuery in SecretAttributes.engineQueries(for: query) {
            if let limit { engineQuery.limit = limit }
            do {
                items += try keychain.find(engineQuery, includeData: false)
            } catch let error as KeychainError where error.code == .interactionNotAllowed {
                let itemClass = engineQuery.itemClass ?? .genericPassword
                if let lockedQuery = SecretAttributes.lockedQuery(for: query, class: itemClass) {
                    locked += try keychain.lockedMatches(lockedQuery)
                } else if itemClass == .genericPassword, let digestQuery = Self.digestQuery(for: query) {
                    let ids = try keychain.lockedMatches(digestQuery)
                    // No item with exactly this map says nothing of items with more attributes.
                    if ids.isEmpty { throw error }
                    locked += ids
                } else {
                    throw error
                }
            }
        }
        return (items, locked)
    }

    /// The name under which a keychain records that its D-Bus items have their search terms
    /// (``KeychainCore/KeychainDatabase/upgradeItems(named:classes:_:)``).
    static let searchTermsUpgrade = "secret-service.search-terms"

    /// Gives the D-Bus items that `keychain` holds from before the provider kept search terms
    /// their terms, once per keychain (then recorded in its header) and once per run of the
    /// provider (then remembered here). A locked keychain is upgraded at a later search, after
    /// its unlock; until then its index cannot find those older items by their terms.
    func upgradeSearchTerms(of keychain: any KeychainHandle) {
        guard let path = keychain.path, !upgradedKeychains.withLock({ $0.contains(path) }) else { return }
        do {
            try keychain.upgradeItems(
                named: Self.searchTermsUpgrade, classes: Self.passwordClasses, SecretAttributes.missingSearchTerms)
        } catch let error as KeychainError where error.code == .interactionNotAllowed {
            return  // locked: the first search after the unlock upgrades it
        } catch {
            // Read-only or damaged: the searches go on without the older items' terms, and this
            // run does not read every item again on each search to try once more.
        }
        upgradedKeychains.withLock { _ = $0.insert(path) }
    }

    /// Whether this run has upgraded `keychain` (or given up on it: see ``upgradeSearchTerms(of:)``).
    func hasSearchTerms(_ keychain: any KeychainHandle) -> Bool {
        keychain.path.map { path in upgradedKeychains.withLock { $0.contains(path) } } ?? true
    }

    /// The password classes a D-Bus item can be.
    static let passwordClasses: [ItemClass] = [.genericPassword, .internetPassword]

    /// The item with persistent id `id` when it is a password (never a key or a certificate).
    static func findPassword(_ id: UUID, in keychain: any KeychainHandle, includeData: Bool) throws -> Item? {
        for itemClass in passwordClasses {
            if let item = try keychain.findFirst(
                ItemQuery(class: itemClass, persistentID: id), includeData: includeData)
            {
                return item
            }
        }
        return nil
    }

    /// `body` on the query of each password class for persistent id `id` until one changes an
    /// item (an update or a delete by id touches one item, or none: `0` or `.itemNotFound`);
    /// `0` when none did.
    static func firstPassword(_ id: UUID, _ body: (ItemQuery) throws -> Int) throws -> Int {
        for itemClass in passwordClasses {
            do {
                let count = try body(ItemQuery(class: itemClass, persistentID: id))
                if count > 0 { return count }
            } catch let error as KeychainError where error.code == .itemNotFound {
                continue  // not of this class
            }
        }
        return 0
    }

    /// For a query a locked keychain's index cannot answer whole
    /// (``SecretAttributes/lockedQuery(for:class:)`` is `nil`: it names `username` or `user`),
    /// the generic passwords whose whole attribute map is the query, by `svce`, `acct` and the
    /// map's digest `pkdx`: what most clients look up, the attributes they stored. An item with
    /// more attributes than the query is not found until the unlock, so finding none leaves the
    /// keychain locked. `nil` for a plain service and account, which has no digest.
    static func digestQuery(for query: [String: String]) -> ItemQuery? {
        guard !SecretAttributes.isPlain(query) else { return nil }
        let stored = SecretAttributes.keychainAttributes(for: query, label: "")
        var attributes: Attributes = [:]
        for name in [AttributeName.service, .account, .primaryKeyDiscriminator] { attributes[name] = stored[name] }
        return ItemQuery(class: .genericPassword, attributes: attributes)
    }

    /// The caller's item at `path`, with its secret when `includeData`.
    func item(at path: String, includeData: Bool, _ message: DBusMessage?, _ connection: DBusConnection)
        async throws -> Item
    {
        guard let (collection, id) = resolve(path), let id else { throw SecretServiceError.noSuchObject }
        let found = try await withKeychain(collection, message, connection) { keychain in
            try Self.findPassword(id, in: keychain, includeData: includeData)
        }
        guard let found else { throw SecretServiceError.noSuchObject }
        return found
    }

    /// The `(oayays)` secret of `item` for the owner of `session`, encrypted for a DH session.
    func secretValue(_ item: Item, session path: String, _ session: SecretSession) throws -> DBusValue {
        let sealed: (parameters: [UInt8], value: [UInt8])
        do {
            sealed = try session.seal(item.data ?? Data())
        } catch {
            throw DBusError.method(DBusErrorName.failed, "the secret could not be encrypted for the session")
        }
        return .structure([.objectPath(path), .bytes(sealed.parameters), .bytes(sealed.value), .string("text/plain")])
    }

    /// The secret carried by an `(oayays)` argument, after checking its session is the caller's.
    func receivedSecret(_ value: DBusValue?, caller: String?) throws -> Data {
        guard case .structure(let secret)? = value, secret.count == 4, case .bytes(let parameters) = secret[1],
            case .bytes(let bytes) = secret[2]
        else { throw DBusError.method(DBusErrorName.invalidArgs, "expected a secret (oayays)") }
        let session = try checkSession(secret[0].objectPathValue, caller: caller)
        guard let data = session.open(parameters: parameters, value: bytes) else {
            throw DBusError.method(DBusErrorName.invalidArgs, "the secret does not decrypt with the session's key")
        }
        return data
    }

    func emit(_ member: String, interface: String, path: String, _ body: [DBusValue], on connection: DBusConnection)
        async
    {
        try? await connection.send(.signal(path: path, interface: interface, member: member, body: body))
    }

    /// `PropertiesChanged` for a collection's `Items`, invalidated rather than sent: each
    /// caller sees only its groups' items, so each reads the list again for itself.
    func emitItemsChanged(_ collection: SecretCollection, on connection: DBusConnection) async {
        try? await connection.send(
            .propertiesChanged(
                path: collection.path, interface: Self.collectionInterface, changed: [:], invalidated: ["Items"]))
    }
}

/// The errors the Secret Service answers with (their texts never hold a secret).
enum SecretServiceError {
    static let isLocked = "org.freedesktop.Secret.Error.IsLocked"
    static let noSuchObjectName = "org.freedesktop.Secret.Error.NoSuchObject"
    static let noSession = "org.freedesktop.Secret.Error.NoSession"
    static let alreadyExists = "org.freedesktop.Secret.Error.AlreadyExists"
    static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"

    static var noSuchObject: DBusError { .method(noSuchObjectName, "no such item") }
    static var noSuchCollection: DBusError { .method(noSuchObjectName, "no such collection") }

    static var refused: DBusError {
        .method(accessDenied, "the caller could not be identified")
    }
    static func notSupported(_ what: String) -> DBusError { .method(DBusErrorName.notSupported, what) }

    static func dbusError(_ error: KeychainError) -> DBusError {
        if error.reason == .userAuthenticationNeeded {
            return .method(
                accessDenied, "the item asks for its owner's authentication: read it through Keychain Services")
        }
        if error.reason == .applicationNotTrusted {
            // Locked to this caller: Unlock asks the person (ApplicationPrompt.swift).
            return .method(
                isLocked, "the item's access list does not name this application: Unlock it to be asked")
        }
        return switch error.code {
        case .interactionNotAllowed, .authFailed: .method(isLocked, "the keychain is locked")
        case .itemNotFound: noSuchObject
        case .noSuchKeychain: noSuchCollection
        case .duplicateItem: .method(alreadyExists, "an item with the same attributes exists")
        case .missingEntitlement: refused
        default: .method(DBusErrorName.failed, "the keychain refused: \(error.code)")
        }
    }
}

/// A count of items against a capacity, taken before an add and given back by a failed add or a
/// delete.
final class ItemQuota: Sendable {
    private let count = Atomic<Int>(0)
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// Takes one, or answers `false` when the quota is full.
    func reserve() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < capacity {
            let (exchanged, original) = count.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives one back.
    func release() { count.subtract(1, ordering: .relaxed) }
}
