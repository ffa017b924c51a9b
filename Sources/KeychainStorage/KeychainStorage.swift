import Foundation
import KeychainClient
import KeychainModel
import Logging
import Synchronization

/// A named store of `Data` values in the keychain, encrypted with a pluggable cipher.
///
/// Stores are created, opened and removed with the class functions; an open store reads
/// and writes values by key:
///
/// ```swift
/// let cipher = try Cipher(password: password, salt: salt)
/// let storage = try KeychainStorage.createStore(name: "offline-cache", cipher: cipher, accessGroup: nil)
/// try storage.put(data: Data("value".utf8), for: "key")
/// let value = try storage.data(for: "key")
/// ```
///
/// With a ``Ciphering`` (such as ``Cipher``) every value is encrypted before it reaches the
/// keychain; with `nil` values are stored as given (the keychain still encrypts them at rest).
///
/// ### Sharing
/// A store lives in an access group: `nil` means the process's first group (see
/// ``KeychainModel/AccessGroups``); a group shared by several programs shares the store.
///
/// ### Which keychain
/// The functions without a `database` argument use the user's default keychain (opened on
/// first use), or the database given to ``withDefaultDatabase(_:operation:)``. Tests pass a
/// `TemporaryKeychain`'s or an in-memory `KeychainDatabase` (both `KeychainCore`'s).
///
/// ### Thread safety
/// Every instance method is safe to call from any thread; calls on one instance run one at
/// a time. Each call checks that the store still exists and still has this instance's
/// cipher: after another instance removes the store or changes its cipher, calls throw
/// ``KeychainStorageError/Code/storeNotFound`` or ``KeychainStorageError/Code/cipherChanged``
/// instead of reading or writing stale values.
///
/// ### Logging
/// Store lifecycle events are logged through swift-log under the label `KeychainStorage`,
/// with the store name as metadata. No log line contains a value, a key or a password.
///
/// ### Storage layout
/// Each store is a marker item plus one generic-password item per key; see
/// docs/libraries.md, section "KeychainStorage", for the exact mapping.
public final class KeychainStorage: DataStoring, CustomStringConvertible {
    /// The store's name.
    public let name: String
    /// The access group the store lives in.
    public var accessGroup: String { location.accessGroup }
    /// The accessibility of the store's items, fixed when the store was created.
    public let accessibility: Accessibility

    let location: StoreLocation
    private let state: Mutex<State>
    private let logger: Logger

    struct State: Sendable {
        var cipher: (any Ciphering)?
        var generation: String
    }

    /// The label of the store's logger.
    public static let loggerLabel = "KeychainStorage"

    private init(location: StoreLocation, accessibility: Accessibility, cipher: (any Ciphering)?, generation: String) {
        name = location.name
        self.location = location
        self.accessibility = accessibility
        state = Mutex(State(cipher: cipher, generation: generation))
        logger = Self.makeLogger(store: location.name, accessGroup: location.accessGroup)
    }

    /// The store's name and group; never a value or a key.
    public var description: String { "KeychainStorage(name: \(name), accessGroup: \(accessGroup))" }

    // MARK: - Store management

    /// Creates a store in the default keychain and returns it, open.
    ///
    /// - Parameters:
    ///   - name: The store's name: text, not a path (no `/`, `..` or NUL).
    ///   - cipher: The cipher that encrypts the values, or `nil` to store them as given.
    ///   - accessGroup: The access group to share the store through, or `nil` when it is not shared.
    /// - Returns: The open store.
    /// - Throws: ``KeychainStorageError``: ``KeychainStorageError/Code/invalidStoreName``,
    ///   ``KeychainStorageError/Code/storeAlreadyExists``, or a cipher or keychain failure.
    public static func createStore(
        name: String, cipher: (any Ciphering)? = nil, accessGroup: String? = nil
    ) throws -> KeychainStorage {
        try createStore(
            name: name, cipher: cipher, accessGroup: accessGroup, database: DefaultDatabase.open())
    }

    /// Creates a store in `database` and returns it, open.
    ///
    /// - Parameters:
    ///   - name: The store's name: text, not a path (no `/`, `..` or NUL).
    ///   - cipher: The cipher that encrypts the values, or `nil` to store them as given.
    ///   - accessGroup: The access group, or `nil` for the handle's first group.
    ///   - database: The keychain to create the store in.
    ///   - accessibility: When the store's values are readable; the default is
    ///     ``KeychainModel/Accessibility/whenUnlocked``.
    /// - Returns: The open store.
    /// - Throws: ``KeychainStorageError``.
    public static func createStore(
        name: String, cipher: (any Ciphering)? = nil, accessGroup: String? = nil, database: any KeychainHandle,
        accessibility: Accessibility = .whenUnlocked
    ) throws -> KeychainStorage {
        let location = try StoreLocation(database: database, name: name, accessGroup: accessGroup)
        let verifier = try encrypt(StoreLayout.verifierPlaintext, with: cipher)
        let generation = UUID().uuidString
        let marker = Item(
            class: .genericPassword,
            attributes: [
                .service: .string(StoreLayout.markerService), .account: .string(name),
                .accessGroup: .string(location.accessGroup), .accessible: .string(accessibility.rawValue),
                .generic: .string(generation), .comment: .string(""),
            ],
            data: verifier)
        try KeychainStorageError.keychain("create the store") {
            do {
                _ = try database.add(marker)
            } catch let error as KeychainError where error.code == .duplicateItem {
                throw KeychainStorageError(.storeAlreadyExists, "a store with that name exists", underlying: error)
            }
        }
        let storage = KeychainStorage(
            location: location, accessibility: accessibility, cipher: cipher, generation: generation)
        storage.logger.info("Created store", metadata: ["encrypted": "\(cipher != nil)"])
        return storage
    }

    /// Opens an existing store of the default keychain.
    ///
    /// - Parameters:
    ///   - name: The store's name.
    ///   - cipher: The store's cipher, or `nil` for a store created without one.
    ///   - accessGroup: The store's access group, or `nil` when it is not shared.
    /// - Returns: The open store.
    /// - Throws: ``KeychainStorageError``: ``KeychainStorageError/Code/storeNotFound``,
    ///   ``KeychainStorageError/Code/wrongCipher`` when `cipher` is not the store's,
    ///   ``KeychainStorageError/Code/invalidStoreName``, or a keychain failure.
    public static func openStore(
        name: String, cipher: (any Ciphering)? = nil, accessGroup: String? = nil
    ) throws -> KeychainStorage {
        try openStore(name: name, cipher: cipher, accessGroup: accessGroup, database: DefaultDatabase.open())
    }

    /// Opens an existing store of `database`.
    ///
    /// - Parameters:
    ///   - name: The store's name.
    ///   - cipher: The store's cipher, or `nil` for a store created without one.
    ///   - accessGroup: The store's access group, or `nil` for the handle's first group.
    ///   - database: The keychain that holds the store.
    /// - Returns: The open store.
    /// - Throws: ``KeychainStorageError``.
    public static func openStore(
        name: String, cipher: (any Ciphering)? = nil, accessGroup: String? = nil, database: any KeychainHandle
    ) throws -> KeychainStorage {
        let location = try StoreLocation(database: database, name: name, accessGroup: accessGroup)
        guard let marker = try location.readMarker(includeData: true) else {
            throw KeychainStorageError(.storeNotFound, "no store has that name")
        }
        try verify(cipher, marker.verifier)
        let storage = KeychainStorage(
            location: location, accessibility: marker.accessibility, cipher: cipher, generation: marker.generation)
        storage.logger.debug("Opened store")
        return storage
    }

    /// Removes a store of the default keychain and all its values.
    ///
    /// Removing a store that does not exist does nothing. Open instances of the store
    /// throw ``KeychainStorageError/Code/storeNotFound`` afterwards.
    /// - Parameters:
    ///   - name: The store's name.
    ///   - accessGroup: The store's access group, or `nil` when it is not shared.
    /// - Throws: ``KeychainStorageError``: ``KeychainStorageError/Code/invalidStoreName``,
    ///   or a keychain failure (the store then still exists; removing it again finishes).
    public static func removeStore(name: String, accessGroup: String? = nil) throws {
        try removeStore(name: name, accessGroup: accessGroup, database: DefaultDatabase.open())
    }

    /// Removes a store of `database` and all its values. See ``removeStore(name:accessGroup:)``.
    /// - Parameters:
    ///   - name: The store's name.
    ///   - accessGroup: The store's access group, or `nil` for the handle's first group.
    ///   - database: The keychain that holds the store.
    /// - Throws: ``KeychainStorageError``.
    public static func removeStore(name: String, accessGroup: String? = nil, database: any KeychainHandle) throws {
        let location = try StoreLocation(database: database, name: name, accessGroup: accessGroup)
        let logger = makeLogger(store: name, accessGroup: location.accessGroup)
        guard let marker = try location.readMarker(includeData: false) else {
            logger.debug("No store to remove")
            return
        }
        // Values first, marker last: an interrupted removal leaves a store that a second
        // removal finishes, never values without a marker.
        try location.removeGeneration(marker.generation)
        try location.removeGeneration(marker.cleanup)
        try KeychainStorageError.keychain("remove the store") {
            do {
                _ = try database.delete(location.markerQuery)
            } catch let error as KeychainError where error.code == .itemNotFound {}
        }
        logger.info("Removed store")
    }

    /// Runs `operation` with `database` standing in for the default keychain of the
    /// functions that take no `database` argument.
    ///
    /// ```swift
    /// let temporary = try TemporaryKeychain()   // KeychainCore
    /// try KeychainStorage.withDefaultDatabase(temporary.keychain) {
    ///     let store = try KeychainStorage.createStore(name: "s", cipher: nil, accessGroup: nil)
    /// }
    /// ```
    /// The override is task-local: it is seen by this task and the tasks it creates. A store
    /// opened inside keeps using `database` after `operation` returns.
    public static func withDefaultDatabase<R>(
        _ database: any KeychainHandle, operation: () throws -> R
    ) rethrows -> R {
        try Keychains.withDefault(database, operation: operation)
    }

    /// The asynchronous form of ``withDefaultDatabase(_:operation:)``.
    public static func withDefaultDatabase<R>(
        _ database: any KeychainHandle, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await Keychains.withDefault(database, operation: operation)
    }

    // MARK: - Values

    /// Reads the value stored under `key`, decrypted with the store's cipher.
    /// - Parameter key: The value's key.
    /// - Returns: The value, or `nil` when the key does not exist.
    /// - Throws: ``KeychainStorageError``: ``KeychainStorageError/Code/decryptionFailed``,
    ///   or a keychain failure such as a locked keychain.
    public func data(for key: String) throws -> Data? {
        try withCurrentState { state in
            guard
                let item = try KeychainStorageError.keychain(
                    "read a value",
                    {
                        try location.database.findFirst(
                            location.valueQuery(generation: state.generation, key: key), includeData: true)
                    })
            else { return nil }
            return try Self.decrypt(item.data ?? Data(), with: state.cipher)
        }
    }

    /// Stores `data` under `key`, encrypted with the store's cipher.
    ///
    /// The write is atomic: the value is added, or the existing one is replaced in one
    /// transaction; a failed write keeps the old value.
    /// - Parameters:
    ///   - data: The value.
    ///   - key: The value's key.
    /// - Throws: ``KeychainStorageError``: ``KeychainStorageError/Code/encryptionFailed``,
    ///   or a keychain failure.
    public func put(data: Data, for key: String) throws {
        try withCurrentState { state in
            let stored = try Self.encrypt(data, with: state.cipher)
            try upsert(stored, key: key, generation: state.generation)
        }
    }

    /// Removes the value stored under `key`; a key that does not exist is fine.
    /// - Parameter key: The value's key.
    /// - Throws: ``KeychainStorageError`` for a keychain failure.
    public func removeData(for key: String) throws {
        try withCurrentState { state in
            try KeychainStorageError.keychain("remove a value") {
                do {
                    _ = try location.database.delete(location.valueQuery(generation: state.generation, key: key))
                } catch let error as KeychainError where error.code == .itemNotFound {}
            }
        }
    }

    /// Removes every value of the store; the store itself stays.
    /// - Throws: ``KeychainStorageError`` for a keychain failure.
    public func removeAllData() throws {
        try withCurrentState { state in
            try location.removeGeneration(state.generation)
        }
        logger.debug("Removed all values")
    }

    /// The keys of the stored values. No value is decrypted.
    /// - Returns: Every key; empty when the store is empty.
    /// - Throws: ``KeychainStorageError`` for a keychain failure.
    public func keys() throws -> Set<String> {
        try withCurrentState { state in
            let items = try KeychainStorageError.keychain("list the keys") {
                try location.database.find(location.valueQuery(generation: state.generation), includeData: false)
            }
            return Set(items.compactMap { StoreLocation.text($0.attributes[.account]) })
        }
    }

    /// Re-encrypts every value with `cipher` and makes it the store's cipher.
    ///
    /// All or nothing: every value is decrypted and re-encrypted in memory first, then
    /// written as a new generation of items in one transaction, and the store switches to
    /// that generation in one atomic update of its marker. If anything fails before the
    /// switch — the new cipher, the old one, or the keychain — the store keeps its old cipher
    /// and every old value, and nothing of the new generation remains. After the switch the old generation is
    /// removed; if that fails, its items are removed by the next change or by `removeStore`.
    ///
    /// Other open instances of the store then throw
    /// ``KeychainStorageError/Code/cipherChanged``. Do not change the cipher of a store that
    /// another process is writing to at the same moment.
    /// - Parameter cipher: The new cipher, or `nil` to store values as given.
    /// - Throws: ``KeychainStorageError``; the store is then unchanged.
    public func changeCipher(to cipher: (any Ciphering)?) throws {
        do {
            let count = try reencrypt(with: cipher)
            logger.info("Changed the cipher", metadata: ["values": "\(count)", "encrypted": "\(cipher != nil)"])
        } catch {
            logger.warning(
                "Changing the cipher failed; the old cipher and values are kept",
                metadata: ["status": "\(Self.status(of: error))"])
            throw error
        }
    }

    /// The work of ``changeCipher(to:)``; returns the number of values re-encrypted.
    private func reencrypt(with cipher: (any Ciphering)?) throws -> Int {
        try withCurrentState { state -> Int in
            let database = location.database
            let marker = try location.readMarker(includeData: false)
            if let cleanup = marker?.cleanup, !cleanup.isEmpty, cleanup != state.generation {
                try location.removeGeneration(cleanup)
            }
            // 1. Everything in memory: any cipher failure leaves the store untouched.
            let items = try KeychainStorageError.keychain("read the values") {
                try database.find(location.valueQuery(generation: state.generation), includeData: true)
            }
            var rewritten: [(key: String, data: Data)] = []
            rewritten.reserveCapacity(items.count)
            for item in items {
                guard let key = StoreLocation.text(item.attributes[.account]) else { continue }
                let plaintext = try Self.decrypt(item.data ?? Data(), with: state.cipher)
                rewritten.append((key, try Self.encrypt(plaintext, with: cipher)))
            }
            let verifier = try Self.encrypt(StoreLayout.verifierPlaintext, with: cipher)

            // 2. Record the new generation so that an interruption can be cleaned up.
            let next = UUID().uuidString
            try KeychainStorageError.keychain("update the store") {
                _ = try database.update(location.markerQuery, attributes: [.comment: .string(next)])
            }
            // 3. Write the whole new generation in one transaction, then switch the marker to
            //    it in another: before the switch the old generation is untouched.
            do {
                let newItems = rewritten.map { key, data in
                    Item(class: .genericPassword, attributes: valueAttributes(key: key, generation: next), data: data)
                }
                try KeychainStorageError.keychain("write the re-encrypted values") {
                    _ = try database.add(contentsOf: newItems)
                }
                try KeychainStorageError.keychain("switch the store to the new cipher") {
                    _ = try database.update(
                        location.markerQuery,
                        attributes: [.generic: .string(next), .comment: .string(state.generation)],
                        data: verifier)
                }
            } catch {
                do {
                    try location.removeGeneration(next)
                    _ = try database.update(location.markerQuery, attributes: [.comment: .string("")])
                } catch let cleanupError {
                    logger.warning(
                        "Could not remove the partial new generation; the next change removes it",
                        metadata: ["status": "\(Self.status(of: cleanupError))"])
                }
                throw error
            }
            let old = state.generation
            state.cipher = cipher
            state.generation = next
            // 4. The change is done; remove the old generation.
            do {
                try location.removeGeneration(old)
                _ = try database.update(location.markerQuery, attributes: [.comment: .string("")])
            } catch {
                logger.warning(
                    "Could not remove the values of the old cipher; the next change or removeStore removes them",
                    metadata: ["status": "\(Self.status(of: error))"])
            }
            return rewritten.count
        }
    }

    // MARK: - Internals

    /// Runs `body` under the instance's lock, after checking that the store still exists
    /// with this instance's generation.
    private func withCurrentState<T: Sendable>(_ body: (inout State) throws -> T) throws -> T {
        try state.withLock { state in
            guard let marker = try location.readMarker(includeData: false) else {
                throw KeychainStorageError(.storeNotFound, "the store was removed")
            }
            guard marker.generation == state.generation else {
                throw KeychainStorageError(
                    .cipherChanged, "another instance changed the store's cipher; open the store again")
            }
            return try body(&state)
        }
    }

    private func valueAttributes(key: String, generation: String) -> Attributes {
        [
            .service: .string(StoreLayout.valueService(store: name, generation: generation)),
            .account: .string(key), .accessGroup: .string(location.accessGroup),
            .accessible: .string(accessibility.rawValue),
        ]
    }

    /// Adds the value or replaces the existing one in place, in one engine transaction
    /// (`KeychainDatabase.upsert`): the old value is never removed before the new one is stored.
    private func upsert(_ data: Data, key: String, generation: String) throws {
        let item = Item(
            class: .genericPassword, attributes: valueAttributes(key: key, generation: generation), data: data)
        try KeychainStorageError.keychain("store a value") {
            _ = try location.database.upsert(item)
        }
    }

    static func encrypt(_ data: Data, with cipher: (any Ciphering)?) throws -> Data {
        guard let cipher else { return data }
        do {
            return try cipher.encrypt(data)
        } catch {
            throw KeychainStorageError(.encryptionFailed, "the cipher could not encrypt a value", underlying: error)
        }
    }

    static func decrypt(_ data: Data, with cipher: (any Ciphering)?) throws -> Data {
        guard let cipher else { return data }
        do {
            return try cipher.decrypt(data)
        } catch {
            throw KeychainStorageError(
                .decryptionFailed, "a stored value could not be decrypted with the store's cipher", underlying: error)
        }
    }

    /// Checks the marker's check value against `cipher`.
    static func verify(_ cipher: (any Ciphering)?, _ stored: Data?) throws {
        let wrong = "the cipher is not the store's"
        guard let stored else { throw KeychainStorageError(.wrongCipher, wrong) }
        guard let cipher else {
            if stored != StoreLayout.verifierPlaintext { throw KeychainStorageError(.wrongCipher, wrong) }
            return
        }
        let plaintext: Data
        do {
            plaintext = try cipher.decrypt(stored)
        } catch {
            throw KeychainStorageError(.wrongCipher, wrong, underlying: error)
        }
        if plaintext != StoreLayout.verifierPlaintext { throw KeychainStorageError(.wrongCipher, wrong) }
    }

    static func status(of error: any Error) -> Int32 { KeychainError.osStatus(of: error) }

    static func makeLogger(store: String, accessGroup: String) -> Logger {
        var logger = Logger(label: loggerLabel)
        logger[metadataKey: "store"] = "\(store)"
        logger[metadataKey: "accessGroup"] = "\(accessGroup)"
        return logger
    }
}
