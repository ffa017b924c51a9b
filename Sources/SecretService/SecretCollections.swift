import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore

/// One Secret Service collection: a keychain.
///
/// - The default keychain (`security default-keychain`) is the collection named after its file
///   (`login` for `login.keychain-db`), also at the alias `default`.
/// - Every other keychain in the keychains directory is a collection named after its file.
/// - `session` is an in-memory keychain of the running provider: what is stored there is gone
///   when `keychaind` ends, as the specification asks of that alias.
struct SecretCollection: Sendable, Hashable {
    /// Where the collection's items are kept.
    enum Store: Sendable, Hashable {
        /// The agent's default keychain, whichever file that is now.
        case defaultKeychain
        /// The keychain at this absolute path.
        case file(String)
        /// The provider's in-memory keychain.
        case session
    }

    /// The last element of its object path (`[A-Za-z0-9_]`).
    let name: String
    let store: Store
    /// What clients show (Seahorse lists collections by label).
    let label: String

    var path: String { SecretServiceProvider.collectionPrefix + name }

    /// The agent's name of the keychain (`""`: the default one), or `nil` for the session.
    var keychainName: String? {
        switch store {
        case .defaultKeychain: ""
        case .file(let path): path
        case .session: nil
        }
    }

    /// A path element for `text`: letters, digits and `_`, every other character an `_`.
    static func identifier(_ text: String) -> String {
        let mapped = String(
            text.unicodeScalars.map { scalar in
                scalar.isASCII && CharacterSet.alphanumerics.contains(scalar) ? Character(scalar) : "_"
            })
        return mapped.isEmpty ? "keychain" : mapped
    }

    /// The stem of a keychain file's name (`work` for `…/work.keychain-db`).
    static func stem(_ path: String) -> String {
        var name = (path as NSString).lastPathComponent
        for suffix in [".keychain-db", ".keychain"] where name.hasSuffix(suffix) {
            name.removeLast(suffix.count)
            break
        }
        return name
    }
}

/// The collections as they are now: the default keychain, the other keychains in the
/// keychains directory, the session.
struct SecretCollectionList: Sendable {
    var collections: [SecretCollection]
    /// When the list was read (it is read again after ``SecretServiceProvider/collectionListLifetime``,
    /// so a keychain made or made the default by `security` shows up).
    var read: ContinuousClock.Instant

    /// Reads the list: the keychains directory and the default keychain's preference.
    init(paths: KeychainPaths, session: Bool) {
        var taken: Set<String> = session ? ["session"] : []
        func unique(_ base: String) -> String {
            var name = SecretCollection.identifier(base)
            var counter = 2
            while taken.contains(name) {
                name = SecretCollection.identifier(base) + "_\(counter)"
                counter += 1
            }
            taken.insert(name)
            return name
        }
        let defaultPath = URL(fileURLWithPath: paths.defaultKeychain).standardizedFileURL.path
        let defaultStem = SecretCollection.stem(defaultPath)
        var list = [
            SecretCollection(
                name: unique(defaultStem), store: .defaultKeychain,
                label: defaultStem == "login" ? "Login" : defaultStem)
        ]
        let directory = paths.keychainsDirectory
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasSuffix(".keychain-db")
        }.sorted()
        for file in files {
            let path = URL(fileURLWithPath: directory + "/" + file).standardizedFileURL.path
            guard path != defaultPath else { continue }
            let stem = SecretCollection.stem(path)
            list.append(SecretCollection(name: unique(stem), store: .file(path), label: stem))
        }
        if session { list.append(SecretCollection(name: "session", store: .session, label: "Session")) }
        collections = list
        read = .now
    }

    /// The collection whose path ends in `name`.
    func collection(named name: String) -> SecretCollection? {
        collections.first { $0.name == name }
    }

    /// The default keychain's collection (always the first).
    var defaultCollection: SecretCollection { collections[0] }

    /// The collection an alias names: `default`, `session`, or a collection's own name.
    func collection(alias: String) -> SecretCollection? {
        alias == "default" ? defaultCollection : collection(named: alias)
    }
}

extension SecretServiceProvider {
    static let collectionLabelProperty = "org.freedesktop.Secret.Collection.Label"

    /// `CreateCollection`: a new password-less keychain in the keychains directory, named after
    /// the label (letters, digits and `_`); with an alias that names a collection already, that
    /// collection. Only the user's own programs (access group `*`) make keychains, as through
    /// `security create-keychain`. A password can be given later (`security set-keychain-password`).
    func createCollection(_ call: DBusMethodCall, _ arguments: SecretServiceInterface.CreateCollectionArguments)
        async throws -> SecretServiceInterface.CreatedCollection
    {
        let properties = arguments.properties
        let alias = arguments.alias
        if !alias.isEmpty, let existing = collections().collection(alias: alias) {
            return SecretServiceInterface.CreatedCollection(collection: existing.path, prompt: "/")
        }
        let label = Self.unwrap(properties[Self.collectionLabelProperty])?.stringValue ?? ""
        let stem = SecretCollection.identifier(label.isEmpty ? "Untitled" : label)
        let directory = agent.paths.keychainsDirectory
        var file = directory + "/" + stem + ".keychain-db"
        var counter = 2
        while FileManager.default.fileExists(atPath: file) {
            file = directory + "/" + stem + "_\(counter).keychain-db"
            counter += 1
        }
        let groups = try await groups(call.message, call.connection)
        do {
            try await agent.createKeychain(at: file, for: groups)
            // The file is named after the label in letters, digits and `_`; the label itself
            // is kept as the keychain's display name.
            if !label.isEmpty && label != SecretCollection.stem(file) {
                try await agent.withKeychain(named: file, for: groups) { try $0.setDisplayName(label) }
            }
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
        collectionsChanged()
        if alias == "default" { try makeDefault(file, groups: groups) }
        let standardized = URL(fileURLWithPath: file).standardizedFileURL.path
        let list = collections()
        guard
            let made = alias == "default"
                ? list.defaultCollection : list.collections.first(where: { $0.store == .file(standardized) })
        else { throw SecretServiceError.noSuchCollection }
        await emitCollections("CollectionCreated", made.path, on: call.connection)
        return SecretServiceInterface.CreatedCollection(collection: made.path, prompt: "/")
    }

    /// `Collection.Delete`: deletes the keychain (as `security delete-keychain`), for the user's
    /// own programs. The default keychain and the session are refused: make another keychain
    /// the default first.
    func deleteCollection(_ collection: SecretCollection, _ call: DBusMethodCall) async throws
        -> SecretServiceInterface.CollectionDeleted
    {
        guard case .file(let file) = collection.store else {
            throw SecretServiceError.notSupported(
                "the default keychain and the session collection cannot be deleted; make another keychain the default first"
            )
        }
        let groups = try await groups(call.message, call.connection)
        do {
            try await agent.deleteKeychain(at: file, for: groups)
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
        objects.unregister(path: collection.path)
        collectionsChanged()
        await emitCollections("CollectionDeleted", collection.path, on: call.connection)
        return SecretServiceInterface.CollectionDeleted(prompt: "/")
    }

    /// `SetAlias("default", collection)`: makes the collection's keychain the default one, as
    /// `security default-keychain -s` does (kept in the user's preferences; `KEYCHAIN_DEFAULT_PATH`
    /// still wins). Other aliases are not kept.
    func setAlias(_ call: DBusMethodCall, _ arguments: SecretServiceInterface.SetAliasArguments) async throws {
        guard arguments.name == "default" else {
            throw SecretServiceError.notSupported("only the default alias can be set, to a collection")
        }
        let target = arguments.collection
        guard let (collection, item) = resolve(target), item == nil else { throw SecretServiceError.noSuchCollection }
        let groups = try await groups(call.message, call.connection)
        switch collection.store {
        case .defaultKeychain: return
        case .session: throw SecretServiceError.notSupported("the session collection cannot be the default")
        case .file(let file):
            try makeDefault(file, groups: groups)
            collectionsChanged()
            await emitCollections("CollectionChanged", collection.path, on: call.connection)
        }
    }

    /// A collection's `Label`: its keychain's display name
    /// (``KeychainCore/KeychainDatabase/displayName``), else the name made from its file.
    func collectionLabel(_ collection: SecretCollection, _ message: DBusMessage?, _ connection: DBusConnection)
        async throws -> String
    {
        guard collection.store != .session else { return collection.label }
        return try await withKeychain(collection, message, connection) { try $0.displayName } ?? collection.label
    }

    /// Sets a collection's `Label`: its keychain's display name, kept in the keychain's file.
    /// Only the user's own programs (`AccessGroups.managesKeychains`) name keychains; the session collection keeps its name.
    func setCollectionLabel(
        _ collection: SecretCollection, _ label: String, _ message: DBusMessage?, _ connection: DBusConnection
    ) async throws {
        guard collection.store != .session else {
            throw SecretServiceError.notSupported("the session collection keeps its name")
        }
        let groups = try await groups(message, connection)
        do {
            try AgentService.requireUserProgram(groups)
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
        try await withKeychain(collection, for: groups) { try $0.setDisplayName(label) }
        try? await connection.send(
            .propertiesChanged(
                path: collection.path, interface: Self.collectionInterface, changed: ["Label": .string(label)]))
        await emit(
            "CollectionChanged", interface: Self.serviceInterface, path: Self.servicePath,
            [.objectPath(collection.path)], on: connection)
    }

    /// A collection's `Created` and `Modified`, in seconds since 1970: when its keychain's file
    /// was made (its last change when the file system does not record that) and last written
    /// (the file's or its write-ahead log's, whichever is later); 0 for the session.
    func fileTimes(_ collection: SecretCollection) -> (created: UInt64, modified: UInt64) {
        let file: String
        switch collection.store {
        case .session: return (0, 0)
        case .file(let path): file = path
        case .defaultKeychain: file = agent.paths.defaultKeychain
        }
        func times(_ path: String) -> (created: Date?, modified: Date?) {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            return (attributes?[.creationDate] as? Date, attributes?[.modificationDate] as? Date)
        }
        let main = times(file)
        let modified = [main.modified, times(file + "-wal").modified].compactMap { $0 }.max()
        func seconds(_ date: Date?) -> UInt64 { UInt64(max(0, date?.timeIntervalSince1970 ?? 0)) }
        return (seconds(main.created ?? main.modified), seconds(modified))
    }

    private func makeDefault(_ file: String, groups: AccessGroups) throws {
        do {
            try agent.setDefaultKeychain(file, for: groups)
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
    }

    /// A collection signal on the service, and the service's `Collections` invalidated.
    func emitCollections(_ member: String, _ path: String, on connection: DBusConnection) async {
        await emit(
            member, interface: Self.serviceInterface, path: Self.servicePath, [.objectPath(path)], on: connection)
        try? await connection.send(
            .propertiesChanged(
                path: Self.servicePath, interface: Self.serviceInterface, changed: [:], invalidated: ["Collections"]))
    }
}
