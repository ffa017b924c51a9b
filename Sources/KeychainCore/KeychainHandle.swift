import Foundation

/// An open keychain, as every module above the engine sees it: its items and its lock state.
///
/// `Keychain`, `KeychainStorage` and `SwiftKeychain` take and hold `any KeychainHandle`, and
/// ``Keychains`` is where they get the default keychain. Today the one conforming type is the
/// in-process engine, ``KeychainDatabase``; the session agent's client (a keychain kept and
/// unlocked in `keychaind`) is the other one to come, chosen in ``Keychains`` alone, so that no
/// module above knows which it holds (as application code holds GRDB's `any DatabaseWriter`).
///
/// The operations are synchronous, as `SecItem*` is; an implementation that talks to another
/// process blocks its caller, never an event loop.
public protocol KeychainHandle: AnyObject, Sendable {
    /// The keychain's file, or `nil` for an in-memory keychain.
    var path: String? { get }
    /// The access groups this handle's caller may use; the first writable one is where items
    /// added without a group go.
    var accessGroups: AccessGroups { get }
    /// Whether the keychain is protected by a password (otherwise by the device key alone).
    var hasPassword: Bool { get }
    /// Whether the keys of the when-unlocked classes are unavailable.
    var isLocked: Bool { get }

    /// Unlocks the keychain with its password's bytes (`nil` for a password-less keychain).
    /// - Throws: ``KeychainError`` (`.authFailed` for a wrong password).
    func unlock(password: Data?) throws
    /// Locks the keychain: the when-unlocked classes become unreadable.
    func lock()
    /// Replaces the keychain's password (`old` is `nil` for a password-less keychain).
    /// - Throws: ``KeychainError`` (`.authFailed` when `old` is wrong).
    func changePassword(old: Data?, new: Data) throws
    /// The keychain's lock settings (``KeychainSettings``): when it locks by itself. Reading
    /// them needs no password.
    /// - Throws: ``KeychainError`` (`.decode` when the stored settings are damaged).
    var settings: KeychainSettings { get throws }
    /// Stores the keychain's lock settings with the keychain; as on macOS, the keychain must be
    /// unlocked.
    /// - Throws: ``KeychainError`` (`.interactionNotAllowed` while locked, `.parameter` for a
    ///   lock interval out of range, `.readOnly`).
    func setSettings(_ settings: KeychainSettings) throws

    /// Adds an item and returns it as stored (defaults filled in).
    /// - Throws: ``KeychainError`` (`.duplicateItem` when its primary key is taken).
    func add(_ item: Item) throws -> Item
    /// Adds items in one transaction: all of them or none.
    func add(contentsOf items: [Item]) throws -> [Item]
    /// Adds the item or, when one has its primary key, replaces that item's secret and
    /// attributes, in one transaction.
    func upsert(_ item: Item) throws -> (item: Item, added: Bool)
    /// The items that match `query`, with their secrets when `includeData` is `true`.
    func find(_ query: ItemQuery, includeData: Bool) throws -> [Item]
    /// The first item that matches `query`, or `nil`.
    func findFirst(_ query: ItemQuery, includeData: Bool) throws -> Item?
    /// Changes the attributes (and the secret, when `data` is given) of every matching item.
    /// - Returns: How many items changed.
    func update(_ query: ItemQuery, attributes changes: Attributes, data: Data?) throws -> Int
    /// Deletes every matching item.
    /// - Returns: How many items were deleted.
    func delete(_ query: ItemQuery) throws -> Int
    /// The matching items that can be read, and the rows that cannot (damaged or tampered),
    /// each reported by its row, so a listing shows every intact item.
    func findReadable(_ query: ItemQuery, includeData: Bool) throws -> ReadableItems
    /// Replaces every key of the keychain and re-seals every item under the new ones, in one
    /// transaction, protected by `newPassword` (by `password` when `nil`).
    /// - Throws: ``KeychainError`` (`.authFailed` when `password` is wrong).
    func rotateKeys(password: Data?, newPassword: Data?) throws
    /// Ends this handle's use of the keychain: later operations fail with `.notAvailable`.
    func close() throws
}

extension KeychainHandle {
    /// The items that match `query`, without their secrets.
    public func find(_ query: ItemQuery) throws -> [Item] { try find(query, includeData: false) }

    /// The first item that matches `query`, without its secret, or `nil`.
    public func findFirst(_ query: ItemQuery) throws -> Item? { try findFirst(query, includeData: false) }

    /// Changes the attributes of every matching item, keeping their secrets.
    public func update(_ query: ItemQuery, attributes changes: Attributes) throws -> Int {
        try update(query, attributes: changes, data: nil)
    }
}

extension KeychainDatabase: KeychainHandle {
    /// The access groups of the configuration this handle was opened with.
    public var accessGroups: AccessGroups { configuration.accessGroups }
}

/// Where every module of this package gets its keychains (the default one, or one by its
/// path) and creates and deletes them: the one place that will choose between the in-process
/// engine and the session agent.
///
/// ```swift
/// let keychain = try Keychains.current()
/// let memory = try KeychainDatabase.inMemory()
/// try Keychains.withDefault(memory) {
///     try codeThatUsesTheDefaultKeychain()
/// }
/// ```
public enum Keychains {
    @TaskLocal static var taskDefault: (any KeychainHandle)?

    /// The default keychain for the current task, when one was set with
    /// ``withDefault(_:operation:)-(_,()->R)``; `nil` otherwise.
    package static var defaultOverride: (any KeychainHandle)? { taskDefault }

    /// The keychain that "the default keychain" means here: the one set for the current task
    /// by ``withDefault(_:operation:)-(_,()->R)``, else the process's default keychain, opened
    /// (and created, password-less) on first use and then reused, so that every module shares
    /// one handle, and so one lock state, per process.
    /// - Throws: ``KeychainError`` when the default keychain cannot be opened or created.
    public static func current() throws -> any KeychainHandle {
        if let handle = taskDefault { return handle }
        return try KeychainDatabase.processDefaultDatabase()
    }

    /// Opens the keychain file at `path`; a password keychain opens locked.
    /// - Throws: ``KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`, `.wrongVersion`, …).
    public static func open(
        at path: String, configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        try KeychainDatabase.open(at: path, configuration: configuration)
    }

    /// Opens the default keychain of `paths`, creating it password-less on first use.
    public static func openDefault(
        paths: KeychainPaths = KeychainPaths(), configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        try KeychainDatabase.openDefault(paths: paths, configuration: configuration)
    }

    /// Creates a keychain file protected by `password`'s bytes (by the device key alone when
    /// `nil`); with a password it starts locked.
    /// - Throws: ``KeychainError`` (`.duplicateKeychain` when a file exists there).
    public static func create(
        at path: String, password: Data?, configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> any KeychainHandle {
        try KeychainDatabase.create(at: path, password: password, configuration: configuration)
    }

    /// Deletes the keychain file at `path` and the files SQLite keeps beside it.
    /// - Throws: ``KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`).
    public static func delete(at path: String) throws {
        try KeychainDatabase.deleteKeychain(at: path)
    }

    /// Runs `operation` with `keychain` as the default keychain of the current task (and of
    /// the tasks it creates), for tests that run in parallel.
    public static func withDefault<R>(_ keychain: any KeychainHandle, operation: () throws -> R) rethrows -> R {
        try $taskDefault.withValue(keychain, operation: operation)
    }

    /// The asynchronous form of ``withDefault(_:operation:)-(_,()->R)``.
    public static func withDefault<R>(
        _ keychain: any KeychainHandle, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await $taskDefault.withValue(keychain, operation: operation)
    }
}
