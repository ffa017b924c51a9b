import DBusNIO
import DBusWire
import Foundation
import KeychainCore

/// An item read from another Secret Service provider (GNOME Keyring, KeePassXC).
public struct ForeignSecretItem: Sendable {
    /// The item's `Label`.
    public var label: String
    /// The item's `Attributes`.
    public var attributes: [String: String]
    /// The secret.
    public var secret: Data
    /// The object path of the collection it came from.
    public var collection: String
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
                        collection: collection))
            }
        }
        _ = try? await call(connection, session.path, "org.freedesktop.Secret.Session", "Close")
        return contents
    }

    /// Stores `item` in `keychain` as the provider stores a D-Bus item.
    public static func store(_ item: ForeignSecretItem, in keychain: any KeychainHandle) throws -> Outcome {
        let stored = SecretAttributes.keychainAttributes(for: item.attributes, label: item.label)
        let itemClass = SecretAttributes.itemClass(for: item.attributes)
        let candidates = try SecretAttributes.engineQueries(for: item.attributes, usingTerms: false).filter {
            $0.itemClass == itemClass
        }
        .flatMap { try keychain.find($0, includeData: true) }
        if let same = candidates.first(where: { SecretAttributes.attributes(of: $0) == item.attributes }),
            let id = same.persistentID
        {
            if same.data == item.secret && same.attributes[.label] == stored[.label] { return .unchanged }
            _ = try keychain.update(
                ItemQuery(class: itemClass, persistentID: id), attributes: [.label: stored[.label]!], data: item.secret)
            return .updated
        }
        do {
            _ = try keychain.add(Item(class: itemClass, attributes: stored, data: item.secret))
            return .added
        } catch let error as KeychainError where error.code == .duplicateItem {
            return .collides
        }
    }

    // MARK: Calls

    static func openSession(_ connection: DBusConnection) async throws -> (path: String, session: SecretSession) {
        let agreement = OakleyGroup2Agreement()
        do {
            let reply = try await call(
                connection, service, SecretServiceProvider.serviceInterface, "OpenSession",
                [.string(OakleyGroup2Agreement.algorithm), .variant(.bytes(agreement.publicKey))])
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
