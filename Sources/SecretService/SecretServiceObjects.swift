import DBusNIO
import DBusWire
import Foundation
import KeychainCore

extension SecretServiceProvider {
    typealias I = SecretServiceInterface

    // MARK: Service

    var serviceObject: DBusInterface {
        DBusInterface(
            Self.serviceInterface,
            methods: [
                DBusMethod(I.openSession) { [self] in try await openSession($0, $1) },
                DBusMethod(I.createCollection) { [self] in try await createCollection($0, $1) },
                serve(I.searchItems) { [self] call, arguments in
                    let found = try search(arguments.attributes, in: call.list.collections, call)
                    return I.FoundItems(unlocked: found.unlocked, locked: found.locked)
                },
                DBusMethod(I.unlock) { [self] in try await unlock($0, $1.objects) },
                DBusMethod(I.lock) { [self] in try await lock($0, $1.objects) },
                serve(I.getSecrets) { [self] in try getSecrets($0, $1) },
                DBusMethod(I.readAlias) { [self] _, arguments in
                    I.CollectionPath(collection: collections().collection(alias: arguments.name)?.path ?? "/")
                },
                DBusMethod(I.setAlias) { [self] in
                    try await setAlias($0, $1)
                    return DBusNoArguments()
                },
            ],
            properties: [
                DBusProperty("Collections", type: .array(.objectPath)) { [self] _ in
                    Self.paths(collections().collections.map(\.path))
                }
            ],
            signals: ["CollectionCreated", "CollectionDeleted", "CollectionChanged"].map {
                DBusSignalDescription($0, arguments: [.init("collection", .objectPath)])
            })
    }

    /// The most items the in-memory `session` collection holds (all callers together), and the
    /// largest secret it keeps: it is memory, so it has a quota (GNOME Keyring's has none).
    static let sessionCollectionItems = 4_096
    static let sessionCollectionSecretSize = 64 << 10

    /// Refuses a secret larger than the session collection keeps, for an item there.
    static func checkSessionSecret(_ data: Data, in collection: SecretCollection) throws {
        guard collection.store != .session || data.count <= sessionCollectionSecretSize else {
            throw DBusError.method(
                DBusErrorName.limitsExceeded,
                "the session collection keeps secrets of \(sessionCollectionSecretSize) bytes at most")
        }
    }

    /// The most sessions one client of the bus may have open at once (libsecret and
    /// secretstorage open one per connection); more are refused with `LimitsExceeded`.
    static let sessionsPerCaller = 64

    func openSession(_ call: DBusMethodCall, _ arguments: I.OpenSessionArguments) async throws -> I.OpenedSession {
        guard let owner = call.message.sender else { throw SecretServiceError.refused }
        let input: DBusValue? = arguments.input
        let open = sessions.withLock { $0.values.count { $0.owner == owner } }
        guard open < Self.sessionsPerCaller else {
            throw DBusError.method(
                DBusErrorName.limitsExceeded, "too many open sessions (\(Self.sessionsPerCaller)): close one first")
        }
        let session: SecretSession
        let output: DBusValue
        switch arguments.algorithm {
        case "plain":
            session = SecretSession(owner: owner, key: nil)
            output = .string("")
        case FiniteFieldAgreement.secretServiceAlgorithm:
            guard case .bytes(let peer)? = input else {
                throw DBusError.method(DBusErrorName.invalidArgs, "expected the client's public value (ay)")
            }
            let (publicKey, key) = try await agreements.agree(peerPublicKey: peer, for: owner)
            guard let key else {
                throw DBusError.method(DBusErrorName.invalidArgs, "the client's public value is out of range")
            }
            session = SecretSession(owner: owner, key: key)
            output = .bytes(publicKey)
        default:
            throw SecretServiceError.notSupported(
                "the algorithms are plain and " + FiniteFieldAgreement.secretServiceAlgorithm)
        }
        let path = Self.sessionPrefix + String(nextSession.add(1, ordering: .relaxed).oldValue)
        sessions.withLock { $0[path] = session }
        try objects.register(
            DBusInterface(
                Self.sessionInterface,
                methods: [
                    DBusMethod(I.close) { [self] call, _ in
                        try checkSession(path, caller: call.message.sender)
                        sessions.withLock { $0[path] = nil }
                        objects.unregister(path: path)
                        return DBusNoArguments()
                    }
                ]),
            at: path)
        return I.OpenedSession(output: output, result: path)
    }

    /// `GetSecrets`: the caller's secrets of `arguments.items`, encrypted for its session; items
    /// that are missing, not the caller's or locked are left out. On the event loop, more than
    /// ``quickLimit`` items, or a keychain not open or locked, decline.
    func getSecrets(_ call: SecretCall, _ arguments: I.GetSecretsArguments) throws -> I.Secrets {
        try call.require(quick: arguments.items.count <= Self.quickLimit)
        let session = try checkSession(arguments.session, caller: call.sender)
        var entries: [DBusDictEntry] = []
        var given: [Item] = []
        for path in arguments.items {
            guard let (collection, id) = resolve(path, in: call.list), let id else { continue }
            let found: Item?
            do {
                found = try withKeychain(collection, call) { try Self.findPassword(id, in: $0, includeData: true) }
            } catch let declined as SecretCall.Declined {
                throw declined
            } catch {
                continue
            }
            guard let found else { continue }
            entries.append(
                DBusDictEntry(.objectPath(path), try secretValue(found, session: arguments.session, session)))
            given.append(found)
        }
        if let groups = try? call.groups.get() { logReads(given, to: call.sender, groups: groups) }
        return I.Secrets(secrets: .dictionary(key: .objectPath, value: Self.secretType, entries))
    }

    // MARK: Collection

    /// A collection's object; `collection` says which collection it is at each call (an alias
    /// follows the default keychain).
    func collectionObject(_ collection: @escaping @Sendable () throws -> SecretCollection) -> DBusInterface {
        DBusInterface(
            Self.collectionInterface,
            methods: [
                DBusMethod(I.searchCollection) { [self] call, arguments in
                    let found = try await search(
                        arguments.attributes, in: [try collection()], call.message, call.connection)
                    return I.SearchResults(results: found.unlocked + found.locked)
                },
                DBusMethod(I.createItem) { [self] in try await createItem(in: try collection(), $0, $1) },
                DBusMethod(I.deleteCollection) { [self] call, _ in try await deleteCollection(try collection(), call) },
            ],
            properties: [
                DBusProperty(
                    "Label", type: .string,
                    get: { [self] connection in
                        .string(try await collectionLabel(try collection(), DBusCurrentCall.message, connection))
                    },
                    set: { [self] value, connection in
                        guard let label = Self.unwrap(value)?.stringValue else {
                            throw DBusError.method(DBusErrorName.invalidArgs, "expected a string")
                        }
                        try await setCollectionLabel(try collection(), label, DBusCurrentCall.message, connection)
                    }),
                DBusProperty("Items", type: .array(.objectPath)) { [self] connection in
                    let found = try await search([:], in: [try collection()], DBusCurrentCall.message, connection)
                    return Self.paths(found.unlocked + found.locked)
                },
                DBusProperty("Locked", type: .boolean) { [self] connection in
                    .boolean(try await isLocked(try collection(), DBusCurrentCall.message, connection))
                },
                DBusProperty("Created", type: .uint64) { [self] _ in .uint64(fileTimes(try collection()).created) },
                DBusProperty("Modified", type: .uint64) { [self] _ in .uint64(fileTimes(try collection()).modified) },
            ],
            signals: ["ItemCreated", "ItemDeleted", "ItemChanged"].map {
                DBusSignalDescription($0, arguments: [.init("item", .objectPath)])
            })
    }

    /// Whether `collection`'s keychain is locked for the caller (one that is gone is not).
    func isLocked(_ collection: SecretCollection, _ message: DBusMessage?, _ connection: DBusConnection)
        async throws -> Bool
    {
        do {
            return try await withKeychain(collection, message, connection) { $0.isLocked }
        } catch let error as DBusError where error.errorName == SecretServiceError.noSuchObjectName {
            return false
        }
    }

    /// Adds `item`; when an item with the same attribute map (so the same primary key) exists,
    /// adds it beside that one under a primary key of its own, as the Secret Service
    /// specification and GNOME Keyring do for `CreateItem` without `replace`. Only items made
    /// through D-Bus share a map this way; SecItem's primary-key rules hold for SecItem's items.
    static func addDistinct(_ item: Item, to keychain: any KeychainHandle) throws -> Item {
        do {
            return try keychain.add(item)
        } catch let error as KeychainError where error.code == .duplicateItem {
            var distinct = item
            distinct.attributes[.primaryKeyDiscriminator] = .data(Data((0..<32).map { _ in UInt8.random(in: 0...255) }))
            return try keychain.add(distinct)
        }
    }

    func createItem(in collection: SecretCollection, _ call: DBusMethodCall, _ arguments: I.CreateItemArguments)
        async throws -> I.CreatedItem
    {
        let properties = arguments.properties
        let label = Self.unwrap(properties[Self.itemInterface + ".Label"])?.stringValue ?? ""
        let attributes = Self.stringMap(Self.unwrap(properties[Self.itemInterface + ".Attributes"]))
        let data = try receivedSecret(arguments.secret, caller: call.message.sender)
        try Self.checkSessionSecret(data, in: collection)
        let replace = arguments.replace
        let stored = SecretAttributes.keychainAttributes(for: attributes, label: label)
        let itemClass = SecretAttributes.itemClass(for: attributes)
        let (item, added) = try await withKeychain(collection, call.message, call.connection) {
            [sessionItems] keychain in
            // Replace the item with these attributes, or the SecItem-made item with the same
            // primary key as Apple defines it whose attributes these are (the same item through
            // the other door; another schema's map is another item).
            let candidates =
                replace
                ? try SecretAttributes.engineQueries(for: attributes, usingTerms: false).filter {
                    $0.itemClass == itemClass
                }.flatMap {
                    try keychain.find($0, includeData: false)
                } : []
            let keychainMade = candidates.first { item in
                SecretAttributes.isKeychainMade(item)
                    && SecretAttributes.sameApplePrimaryKey(item.attributes, stored, class: itemClass)
                    && SecretAttributes.matches(item, attributes)
            }
            let sameMap = candidates.first { SecretAttributes.matches(SecretAttributes.attributes(of: $0), attributes) }
            if let existing = sameMap ?? keychainMade, let id = existing.persistentID {
                var changes = stored
                // The keychain's own item keeps Apple's primary key (no discriminator), so that
                // `security add-generic-password -s S -a A` still finds it a duplicate.
                if sameMap == nil { changes[.primaryKeyDiscriminator] = .data(Data()) }
                _ = try keychain.update(ItemQuery(class: itemClass, persistentID: id), attributes: changes, data: data)
                return (existing, false)
            }
            guard collection.store != .session || sessionItems.reserve() else {
                throw DBusError.method(
                    DBusErrorName.limitsExceeded,
                    "the session collection is full (\(Self.sessionCollectionItems) items): delete some first")
            }
            do {
                return (
                    try Self.addDistinct(Item(class: itemClass, attributes: stored, data: data), to: keychain), true
                )
            } catch {
                if collection.store == .session { sessionItems.release() }
                throw error
            }
        }
        guard let path = Self.itemPath(item, in: collection) else { throw SecretServiceError.noSuchObject }
        try registerItem(at: path)
        await emit(
            added ? "ItemCreated" : "ItemChanged", interface: Self.collectionInterface, path: collection.path,
            [.objectPath(path)], on: call.connection)
        if added { await emitItemsChanged(collection, on: call.connection) }
        return I.CreatedItem(item: path, prompt: "/")
    }

    // MARK: Items

    func registerItem(at path: String) throws {
        guard objects.interfaces(at: path) == nil else { return }
        try objects.register(itemObject(path), at: path)
    }

    func itemObject(_ path: String) -> DBusInterface {
        DBusInterface(
            Self.itemInterface,
            methods: [
                DBusMethod(I.getSecret) { [self] call, arguments in
                    let session = try checkSession(arguments.session, caller: call.message.sender)
                    let found = try await item(at: path, includeData: true, call.message, call.connection)
                    let reply = I.SecretReply(secret: try secretValue(found, session: arguments.session, session))
                    let groups = try await groups(call.message, call.connection)
                    logReads([found], to: call.message.sender, groups: groups)
                    return reply
                },
                DBusMethod(I.setSecret) { [self] call, arguments in
                    try await setSecret(path, call, arguments.secret)
                    return DBusNoArguments()
                },
                DBusMethod(I.deleteItem) { [self] call, _ in I.ItemDeleted(prompt: try await delete(path, call)) },
            ],
            properties: [
                DBusProperty(
                    "Label", type: .string,
                    get: { [self] connection in
                        .string(try await shownItem(path, connection).attributes[.label]?.stringValue ?? "")
                    },
                    set: { [self] value, connection in
                        guard let label = Self.unwrap(value)?.stringValue else {
                            throw DBusError.method(DBusErrorName.invalidArgs, "expected a string")
                        }
                        try await change(path, connection) { _ in [.label: .string(label)] }
                    }),
                DBusProperty(
                    "Attributes", type: .dictionary(key: .string, value: .string),
                    get: { [self] connection in
                        Self.stringDictionary(SecretAttributes.attributes(of: try await shownItem(path, connection)))
                    },
                    set: { [self] value, connection in
                        guard case .dictionary(.string, .string, _)? = Self.unwrap(value) else {
                            throw DBusError.method(DBusErrorName.invalidArgs, "expected a{ss}")
                        }
                        let attributes = Self.stringMap(Self.unwrap(value))
                        try await change(path, connection) { item in
                            guard SecretAttributes.itemClass(for: attributes) == item.itemClass else {
                                throw SecretServiceError.notSupported(
                                    "these attributes would make it another kind of item: store a new one instead")
                            }
                            var stored = SecretAttributes.keychainAttributes(
                                for: attributes, label: item.attributes[.label]?.stringValue ?? "", clearing: true)
                            stored[.label] = nil
                            return stored
                        }
                    }),
                DBusProperty("Locked", type: .boolean) { [self] connection in
                    .boolean(try await isItemLocked(path, DBusCurrentCall.message, connection))
                },
                DBusProperty("Created", type: .uint64) { [self] connection in
                    Self.seconds(try await shownItem(path, connection).attributes[.creationDate])
                },
                DBusProperty("Modified", type: .uint64) { [self] connection in
                    Self.seconds(try await shownItem(path, connection).attributes[.modificationDate])
                },
            ])
    }

    /// Changes the attributes of the caller's item at `path` to what `body` makes of it, and
    /// says so with `ItemChanged`.
    func change(
        _ path: String, _ connection: DBusConnection, _ body: @escaping @Sendable (Item) throws -> Attributes
    ) async throws {
        guard let (collection, id) = resolve(path), let id else { throw SecretServiceError.noSuchObject }
        let changed = try await withKeychain(collection, DBusCurrentCall.message, connection) { keychain in
            guard let item = try Self.findPassword(id, in: keychain, includeData: false) else { return 0 }
            return try keychain.update(
                ItemQuery(class: item.itemClass, persistentID: id), attributes: body(item), data: nil)
        }
        guard changed > 0 else { throw SecretServiceError.noSuchObject }
        await emit(
            "ItemChanged", interface: Self.collectionInterface, path: collection.path, [.objectPath(path)],
            on: connection)
    }

    func currentItem(_ path: String, _ connection: DBusConnection) async throws -> Item {
        try await item(at: path, includeData: false, DBusCurrentCall.message, connection)
    }

    /// The item whose properties are shown: the current item, or, while its keychain is locked,
    /// an item of no label, attributes or dates (its `Locked` is `true`). libsecret reads every
    /// property of the locked items a search lists before it asks to unlock them, and takes a
    /// failure as "no such item"; GNOME Keyring too shows a locked item without its attributes.
    func shownItem(_ path: String, _ connection: DBusConnection) async throws -> Item {
        do {
            return try await currentItem(path, connection)
        } catch let error as DBusError where error.errorName == SecretServiceError.isLocked {
            return Item(class: .genericPassword, attributes: [:])
        }
    }

    func setSecret(_ path: String, _ call: DBusMethodCall, _ secret: DBusValue) async throws {
        let value = try receivedSecret(secret, caller: call.message.sender)
        guard let (collection, id) = resolve(path), let id else { throw SecretServiceError.noSuchObject }
        try Self.checkSessionSecret(value, in: collection)
        let changed = try await withKeychain(collection, call.message, call.connection) { keychain in
            try Self.firstPassword(id) { try keychain.update($0, attributes: [:], data: value) }
        }
        guard changed > 0 else { throw SecretServiceError.noSuchObject }
        await emit(
            "ItemChanged", interface: Self.collectionInterface, path: collection.path, [.objectPath(path)],
            on: call.connection)
    }

    /// Deletes the caller's item at `path`; the answer is the prompt (none: `/`).
    func delete(_ path: String, _ call: DBusMethodCall) async throws -> String {
        guard let (collection, id) = resolve(path), let id else { throw SecretServiceError.noSuchObject }
        let deleted = try await withKeychain(collection, call.message, call.connection) { keychain in
            try Self.firstPassword(id) { try keychain.delete($0) }
        }
        guard deleted > 0 else { throw SecretServiceError.noSuchObject }
        if collection.store == .session { sessionItems.release() }
        objects.unregister(path: path)
        await emit(
            "ItemDeleted", interface: Self.collectionInterface, path: collection.path, [.objectPath(path)],
            on: call.connection)
        await emitItemsChanged(collection, on: call.connection)
        return "/"
    }

    // MARK: Values

    static func paths(_ paths: [String]) -> DBusValue { .array(.objectPath, paths.map { .objectPath($0) }) }

    static func unwrap(_ value: DBusValue?) -> DBusValue? { value?.variantValue ?? value }

    static func stringMap(_ value: DBusValue?) -> [String: String] {
        guard case .dictionary(_, _, let entries)? = value else { return [:] }
        var map: [String: String] = [:]
        for entry in entries {
            if let key = entry.key.stringValue, let value = entry.value.stringValue { map[key] = value }
        }
        return map
    }

    static func stringDictionary(_ map: [String: String]) -> DBusValue {
        .dictionary(
            key: .string, value: .string,
            map.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .string($0.value)) })
    }

    static func seconds(_ value: AttributeValue?) -> DBusValue {
        .uint64(UInt64(max(0, value?.dateValue?.timeIntervalSince1970 ?? 0)))
    }
}

extension DBusValue {
    /// The path of an `o` value.
    var objectPathValue: String? {
        guard case .objectPath(let path) = self else { return nil }
        return path
    }
}
