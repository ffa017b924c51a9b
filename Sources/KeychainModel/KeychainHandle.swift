import Foundation

/// An open keychain, as every module above the engine sees it: its items and its lock state.
///
/// `Keychain`, `KeychainStorage` and `SwiftKeychain` take and hold `any KeychainHandle`, and
/// `Keychains` (in `KeychainClient`) is where they get one. The conforming types are the
/// in-process engine, `KeychainDatabase` (in `KeychainCore`), and the session agent's client, `AgentKeychain` (a
/// keychain kept and unlocked in `keychaind`), chosen in `Keychains` alone, so that no module
/// above knows which it holds (as application code holds GRDB's `any DatabaseWriter`).
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
    /// Adds items in one transaction, each keeping the creation and modification dates it
    /// carries when `keepingDates` is `true` (items moved in from another keyring).
    func add(contentsOf items: [Item], keepingDates: Bool) throws -> [Item]
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

/// The maintenance of a keychain that only the engine, in the process that holds the
/// keychain's file, can do: searching a locked keychain by its index, upgrading its items once,
/// and naming it.
///
/// ``KeychainHandle`` is the seam every module above the engine uses; this protocol is apart,
/// as GRDB keeps a database's maintenance out of `DatabaseReader`, so that a handle served by
/// another process (the session agent's client) need not pretend to offer it. The engine's
/// handles (`KeychainDatabase` and the handles it gives a caller with `acting(for:)`) conform;
/// on `any KeychainHandle`, the members of the same names forward here and fail on a handle
/// that does not conform. A type that adopts this protocol implements each member itself (the
/// forwarding members would otherwise stand in for them, and call themselves).
public protocol KeychainMaintenance: KeychainHandle {
    /// The persistent ids of the generic passwords that match `query` by the keychain's index
    /// and cannot be read now because their protection class is locked.
    /// - Throws: ``KeychainError`` (`.parameter` for a query the index cannot answer).
    func lockedMatches(_ query: ItemQuery) throws -> [UUID]
    /// Changes, once in the keychain's life, the items of `classes` that `change` gives new
    /// attributes, in every access group (the keychain records `name` when done).
    /// - Returns: How many items changed.
    /// - Throws: ``KeychainError`` (`.interactionNotAllowed` while locked), or what `change` throws.
    func upgradeItems(named name: String, classes: [ItemClass], _ change: (Item) throws -> Attributes?) throws -> Int
    /// The name people see for the keychain, or `nil` when none was set.
    var displayName: String? { get throws }
    /// Sets the name people see for the keychain, or removes it (`nil`).
    /// - Throws: ``KeychainError`` (`.parameter` for a name too long).
    func setDisplayName(_ name: String?) throws
}

extension KeychainHandle {
    /// ``KeychainMaintenance/lockedMatches(_:)`` when this handle is the engine's; a handle that
    /// cannot search a locked keychain by its index says so rather than find none.
    public func lockedMatches(_ query: ItemQuery) throws -> [UUID] {
        guard let maintenance = self as? any KeychainMaintenance else {
            throw KeychainError(.interactionNotAllowed, "this handle cannot search a locked keychain")
        }
        return try maintenance.lockedMatches(query)
    }

    /// ``KeychainMaintenance/upgradeItems(named:classes:_:)`` when this handle is the engine's;
    /// a handle that cannot upgrade a keychain's items (one served by another process) says so.
    public func upgradeItems(
        named name: String, classes: [ItemClass], _ change: (Item) throws -> Attributes?
    ) throws -> Int {
        guard let maintenance = self as? any KeychainMaintenance else {
            throw KeychainError(.unimplemented, "this handle cannot upgrade a keychain's items")
        }
        return try maintenance.upgradeItems(named: name, classes: classes, change)
    }

    /// ``KeychainMaintenance/displayName`` when this handle is the engine's; a handle without
    /// display names (one served by another process) has none.
    public var displayName: String? {
        get throws { try (self as? any KeychainMaintenance)?.displayName }
    }

    /// ``KeychainMaintenance/setDisplayName(_:)`` when this handle is the engine's; a handle
    /// without display names (one served by another process) says so.
    public func setDisplayName(_ name: String?) throws {
        guard let maintenance = self as? any KeychainMaintenance else {
            throw KeychainError(.unimplemented, "this handle cannot name a keychain")
        }
        try maintenance.setDisplayName(name)
    }

    /// The items that match `query`, without their secrets.
    public func find(_ query: ItemQuery) throws -> [Item] { try find(query, includeData: false) }

    /// The first item that matches `query`, without its secret, or `nil`.
    public func findFirst(_ query: ItemQuery) throws -> Item? { try findFirst(query, includeData: false) }

    /// Changes the attributes of every matching item, keeping their secrets.
    public func update(_ query: ItemQuery, attributes changes: Attributes) throws -> Int {
        try update(query, attributes: changes, data: nil)
    }
}

/// The default keychain set for the current task (and the tasks it creates) by
/// `Keychains.withDefault` or `KeychainDatabase.withDefault(_:operation:)`: tests
/// that run in parallel each give their code a keychain of their own.
package enum TaskDefaultKeychain {
    @TaskLocal package static var handle: (any KeychainHandle)?
}
