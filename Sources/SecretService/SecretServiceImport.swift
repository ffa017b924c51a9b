import DBusNIO
import DBusWire
import Foundation
import Dispatch
import KeychainCore
import Synchronization

/// An item read from another Secret Service provider (GNOME Keyring, KeePassXC), over D-Bus or
/// from its files.
public struct ForeignSecretItem: Sendable, Equatable {
    /// The item's `Label`.
    public var label: String
    /// The item's `Attributes`.
    public var attributes: [String: String]
    /// The secret.
    public var secret: Data
    /// The object path of the collection it came from (empty when it was read from a file).
    public var collection: String
    /// When it was created, when the source says.
    public var created: Date?
    /// When it was last changed, when the source says.
    public var modified: Date?

    /// An item with its label, attributes and secret, and the dates the source gives.
    public init(
        label: String, attributes: [String: String], secret: Data, collection: String = "", created: Date? = nil,
        modified: Date? = nil
    ) {
        self.label = label
        self.attributes = attributes
        self.secret = secret
        self.collection = collection
        self.created = created
        self.modified = modified
    }
}

/// Copies the items of another running Secret Service provider into a keychain: what
/// `security import-secret-service` does to move off GNOME Keyring in one command.
///
/// It reads as an ordinary client (a DH session when the provider offers one, so the secrets
/// cross the bus encrypted), from every unlocked collection except the in-memory `session`
/// collection, and stores each item as the provider itself would (``SecretAttributes``).
public enum SecretServiceImport {
    /// What storing one item did.
    public enum Outcome: Sendable, Equatable {
        /// A new item.
        case added
        /// An item with the same attributes had another secret or label: now it has these.
        case updated
        /// An item with the same attributes, label and secret was there already.
        case unchanged
        /// Another item has the same service and account (Apple's primary key) but other
        /// attributes: left alone.
        case collides
    }

    /// What storing items did, counted: what both import commands print.
    public struct Tally: Sendable, Equatable {
        /// How many items were added, updated, and found already there.
        public var added = 0, updated = 0, unchanged = 0
        /// The labels of the items left out (``Outcome/collides``).
        public var leftOut: [String] = []

        /// The count of `outcomes`, the outcomes of `items`.
        public init(_ outcomes: [Outcome], of items: [ForeignSecretItem]) {
            for (item, outcome) in zip(items, outcomes) {
                switch outcome {
                case .added: added += 1
                case .updated: updated += 1
                case .unchanged: unchanged += 1
                case .collides: leftOut.append(item.label)
                }
            }
        }

        /// `N imported, N updated, N already present, N left out`.
        public var summary: String {
            "\(added) imported, \(updated) updated, \(unchanged) already present, \(leftOut.count) left out"
        }
    }

    /// What the provider on the bus had: its items, and the collections skipped because they
    /// are locked.
    public struct Contents: Sendable {
        /// The items of the unlocked collections.
        public var items: [ForeignSecretItem] = []
        /// The labels of the locked collections (their items were not read).
        public var lockedCollections: [String] = []
    }

    static let service = "/org/freedesktop/secrets"
    static let properties = "org.freedesktop.DBus.Properties"

    /// Reads every item of the provider that owns `org.freedesktop.secrets` on `connection`'s bus.
    /// - Throws: ``DBusWire/DBusError`` when there is no provider or it refuses.
    public static func read(from connection: DBusConnection) async throws -> Contents {
        let session = try await openSession(connection)
        var contents = Contents()
        let collections = try await property(connection, service, SecretServiceProvider.serviceInterface, "Collections")
        for collection in (collections?.arrayElements ?? []).compactMap(\.objectPathValue)
        where !collection.hasSuffix("/collection/session") {
            let all = try await allProperties(connection, collection, SecretServiceProvider.collectionInterface)
            if all["Locked"] == .boolean(true) {
                contents.lockedCollections.append(all["Label"]?.stringValue ?? collection)
                continue
            }
            let paths = (all["Items"]?.arrayElements ?? []).compactMap(\.objectPathValue)
            guard !paths.isEmpty else { continue }
            let reply = try await call(
                connection, service, SecretServiceProvider.serviceInterface, "GetSecrets",
                [.array(.objectPath, paths.map { .objectPath($0) }), .objectPath(session.path)])
            guard case .dictionary(_, _, let entries)? = reply.body.first else { continue }
            for entry in entries {
                guard let path = entry.key.objectPathValue, case .structure(let fields) = entry.value,
                    fields.count == 4,
                    case .bytes(let parameters) = fields[1], case .bytes(let value) = fields[2],
                    let secret = session.session.open(parameters: parameters, value: value)
                else { continue }
                let item = try await allProperties(connection, path, SecretServiceProvider.itemInterface)
                contents.items.append(
                    ForeignSecretItem(
                        label: item["Label"]?.stringValue ?? "",
                        attributes: SecretServiceProvider.stringMap(item["Attributes"]), secret: secret,
                        collection: collection, created: date(item["Created"]), modified: date(item["Modified"])))
            }
        }
        _ = try? await call(connection, session.path, "org.freedesktop.Secret.Session", "Close")
        return contents
    }

    /// Stores `items` in `keychain` as the provider stores D-Bus items, for a move-in: what is
    /// new in one transaction, each keeping the dates it carries; an item with the attributes
    /// of a stored one updates it when its label or secret differ, and leaves it otherwise.
    /// - Returns: What became of each item, in order.
    /// - Throws: ``KeychainModel/KeychainError`` when the keychain refuses (then nothing new
    ///   was added).
    public static func store(_ items: [ForeignSecretItem], in keychain: any KeychainHandle) throws -> [Outcome] {
        var outcomes = [Outcome](repeating: .unchanged, count: items.count)
        let prepared = keychainAttributes(of: items)
        var stored = try storedItems(of: Set(prepared.map(\.itemClass)), keychain)
        var additions: [(position: Int, item: Item)] = []
        var added: [ItemClass: [[String: String]: Int]] = [:]
        for (position, foreign) in items.enumerated() {
            let itemClass = prepared[position].itemClass
            var attributes = prepared[position].1
            if let same = stored[itemClass]?[foreign.attributes], let id = same.persistentID {
                guard same.data != foreign.secret || same.attributes[.label] != attributes[.label] else { continue }
                _ = try keychain.update(
                    ItemQuery(class: itemClass, persistentID: id), attributes: [.label: attributes[.label]!],
                    data: foreign.secret)
                stored[itemClass]?[foreign.attributes]?.data = foreign.secret
                stored[itemClass]?[foreign.attributes]?.attributes[.label] = attributes[.label]
                outcomes[position] = .updated
            } else if let earlier = added[itemClass]?[foreign.attributes] {
                // The same attributes twice in one move-in: the later item wins, as a second
                // CreateItem with replace would.
                additions[earlier].item.data = foreign.secret
                additions[earlier].item.attributes[.label] = attributes[.label]
                outcomes[position] = .updated
            } else {
                if let created = foreign.created { attributes[.creationDate] = .date(created) }
                if let modified = foreign.modified { attributes[.modificationDate] = .date(modified) }
                added[itemClass, default: [:]][foreign.attributes] = additions.count
                additions.append((position, Item(class: itemClass, attributes: attributes, data: foreign.secret)))
            }
        }
        for (position, outcome) in try add(additions.map(\.item), to: keychain).enumerated() {
            outcomes[additions[position].position] = outcome
        }
        return outcomes
    }

    /// Each item's class and keychain attributes (``SecretAttributes/keychainAttributes(for:label:clearing:)``),
    /// made on every core: a move-in of thousands of items spends much of its time here.
    private static func keychainAttributes(of items: [ForeignSecretItem]) -> [(itemClass: ItemClass, Attributes)] {
        let chunk = 512
        let chunks = (items.count + chunk - 1) / chunk
        let results = Mutex([[(itemClass: ItemClass, Attributes)]](repeating: [], count: chunks))
        DispatchQueue.concurrentPerform(iterations: chunks) { index in
            let part = items[(index * chunk)..<min(items.count, (index + 1) * chunk)].map { item in
                (
                    itemClass: SecretAttributes.itemClass(for: item.attributes),
                    SecretAttributes.keychainAttributes(for: item.attributes, label: item.label)
                )
            }
            results.withLock { $0[index] = part }
        }
        return results.withLock { $0.flatMap { $0 } }
    }

    /// The stored items of `classes`, with their secrets, by their Secret Service attributes.
    private static func storedItems(of classes: Set<ItemClass>, _ keychain: any KeychainHandle) throws
        -> [ItemClass: [[String: String]: Item]]
    {
        var stored: [ItemClass: [[String: String]: Item]] = [:]
        for itemClass in classes {
            // Items that ask for their owner's authentication are not compared (their secrets are
            // not read): an imported twin of one is left out as a collision instead.
            var query = ItemQuery(class: itemClass, synchronizable: .any)
            query.authenticationUI = .skip
            let items = try keychain.find(query, includeData: true)
            stored[itemClass] = Dictionary(items.map { (SecretAttributes.attributes(of: $0), $0) }) { first, _ in first
            }
        }
        return stored
    }

    /// Adds `items` in one transaction; when one's service and account (Apple's primary key)
    /// are taken, one by one instead, so that only the colliding ones are left out.
    private static func add(_ items: [Item], to keychain: any KeychainHandle) throws -> [Outcome] {
        guard !items.isEmpty else { return [] }
        do {
            _ = try keychain.add(contentsOf: items, keepingDates: true)
            return Array(repeating: .added, count: items.count)
        } catch let error as KeychainError where error.code == .duplicateItem {
            return try items.map { item in
                do {
                    _ = try keychain.add(contentsOf: [item], keepingDates: true)
                    return .added
                } catch let error as KeychainError where error.code == .duplicateItem {
                    return .collides
                }
            }
        }
    }

    /// A `Created` or `Modified` property: seconds since 1970, `0` for none.
    static func date(_ value: DBusValue?) -> Date? {
        guard case .uint64(let seconds)? = value, seconds > 0, seconds < UInt64(Int64.max) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    // MARK: Calls

    static func openSession(_ connection: DBusConnection) async throws -> (path: String, session: SecretSession) {
        let agreement = FiniteFieldAgreement(group: .oakley2)
        do {
            let reply = try await call(
                connection, service, SecretServiceProvider.serviceInterface, "OpenSession",
                [.string(FiniteFieldAgreement.secretServiceAlgorithm), .variant(.bytes(agreement.publicKey))])
            guard reply.body.count == 2, case .bytes(let peer)? = SecretServiceProvider.unwrap(reply.body[0]),
                let path = reply.body[1].objectPathValue, let key = agreement.sessionKey(peerPublicKey: peer)
            else { throw DBusError.method(DBusErrorName.failed, "the provider's DH answer is malformed") }
            return (path, SecretSession(owner: "", key: key))
        } catch let error as DBusError where error.errorName == DBusErrorName.notSupported {
            let reply = try await call(
                connection, service, SecretServiceProvider.serviceInterface, "OpenSession",
                [.string("plain"), .variant(.string(""))])
            guard let path = reply.body.last?.objectPathValue else {
                throw DBusError.method(DBusErrorName.failed, "the provider opened no session")
            }
            return (path, SecretSession(owner: "", key: nil))
        }
    }

    static func call(
        _ connection: DBusConnection, _ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = []
    ) async throws -> DBusMessage {
        try await connection.call(
            .methodCall(
                path: path, interface: interface, member: member, destination: SecretServiceProvider.busName,
                body: body))
    }

    static func property(_ connection: DBusConnection, _ path: String, _ interface: String, _ name: String)
        async throws -> DBusValue?
    {
        let reply = try await call(connection, path, properties, "Get", [.string(interface), .string(name)])
        return SecretServiceProvider.unwrap(reply.body.first)
    }

    static func allProperties(_ connection: DBusConnection, _ path: String, _ interface: String) async throws
        -> [String: DBusValue]
    {
        let reply = try await call(connection, path, properties, "GetAll", [.string(interface)])
        return (reply.body.first?.stringKeyedEntries ?? [:]).mapValues { SecretServiceProvider.unwrap($0) ?? $0 }
    }
}
