import Foundation

extension KeychainDatabase: KeychainMaintenance {
    /// The access groups of the configuration this handle was opened with.
    public var accessGroups: AccessGroups { configuration.accessGroups }
}

extension KeychainDatabase {
    /// The access groups of the caller an operation runs for (see ``acting(for:)``).
    @TaskLocal static var callerGroups: AccessGroups?

    /// The access groups an item operation uses: the caller's when it runs through
    /// ``acting(for:)``, else the configuration's.
    var effectiveGroups: AccessGroups { Self.callerGroups ?? configuration.accessGroups }

    /// This keychain as a caller with `groups` sees it: the same file, keys and lock state (an
    /// unlock through one caller's handle unlocks it for every caller), with every item
    /// operation limited to `groups`, the first of which is where that caller's adds go.
    ///
    /// This is how the session agent serves each client the groups its identity grants, not the
    /// ones the client claims: the agent opens its keychains with no group of its own, so an
    /// operation that does not run for a caller finds nothing to use (`.missingEntitlement`).
    ///
    /// ```swift
    /// let keychain = try KeychainDatabase.open(at: path)
    /// let app = keychain.acting(for: AccessGroups(["com.example.app"]))
    /// try app.add(item)   // stored in com.example.app
    /// ```
    public func acting(for groups: AccessGroups) -> any KeychainHandle {
        CallerKeychain(database: self, groups: groups)
    }
}

/// A keychain as one caller sees it (``KeychainDatabase/acting(for:)``).
final class CallerKeychain: KeychainMaintenance {
    let database: KeychainDatabase
    let accessGroups: AccessGroups

    init(database: KeychainDatabase, groups: AccessGroups) {
        self.database = database
        accessGroups = groups
    }

    private func run<T>(_ body: () throws -> T) rethrows -> T {
        try KeychainDatabase.$callerGroups.withValue(accessGroups, operation: body)
    }

    var path: String? { database.path }
    var hasPassword: Bool { database.hasPassword }
    var isLocked: Bool { database.isLocked }
    func unlock(password: Data?) throws { try database.unlock(password: password) }
    func lock() { database.lock() }
    func changePassword(old: Data?, new: Data) throws { try database.changePassword(old: old, new: new) }
    var settings: KeychainSettings { get throws { try database.settings } }
    var displayName: String? { get throws { try database.displayName } }
    func setDisplayName(_ name: String?) throws { try database.setDisplayName(name) }
    func setSettings(_ settings: KeychainSettings) throws { try database.setSettings(settings) }
    func rotateKeys(password: Data?, newPassword: Data?) throws {
        try database.rotateKeys(password: password, newPassword: newPassword)
    }
    func close() throws { try database.close() }

    func add(_ item: Item) throws -> Item { try run { try database.add(item) } }
    func add(contentsOf items: [Item]) throws -> [Item] { try run { try database.add(contentsOf: items) } }
    func add(contentsOf items: [Item], keepingDates: Bool) throws -> [Item] {
        try run { try database.add(contentsOf: items, keepingDates: keepingDates) }
    }
    func upsert(_ item: Item) throws -> (item: Item, added: Bool) { try run { try database.upsert(item) } }
    func find(_ query: ItemQuery, includeData: Bool) throws -> [Item] {
        try run { try database.find(query, includeData: includeData) }
    }
    func findFirst(_ query: ItemQuery, includeData: Bool) throws -> Item? {
        try run { try database.findFirst(query, includeData: includeData) }
    }
    func lockedMatches(_ query: ItemQuery) throws -> [UUID] { try run { try database.lockedMatches(query) } }
    /// The whole keychain's items, whatever the caller's groups: an upgrade is the keychain's
    /// own housekeeping, and `change` is the server's code, not the caller's.
    func upgradeItems(named name: String, classes: [ItemClass], _ change: (Item) throws -> Attributes?) throws -> Int {
        try database.upgradeItems(named: name, classes: classes, change)
    }
    func findReadable(_ query: ItemQuery, includeData: Bool) throws -> ReadableItems {
        try run { try database.findReadable(query, includeData: includeData) }
    }
    func update(_ query: ItemQuery, attributes changes: Attributes, data: Data?) throws -> Int {
        try run { try database.update(query, attributes: changes, data: data) }
    }
    func delete(_ query: ItemQuery) throws -> Int { try run { try database.delete(query) } }
}
