import Foundation
import KeychainCore

/// The three engine operations `Keychain` uses; `KeychainDatabase` provides them.
///
/// Tests substitute an implementation that records calls or injects failures.
protocol ItemStore: Sendable {
    func upsert(_ item: Item) throws -> (item: Item, added: Bool)
    func find(_ query: ItemQuery, includeData: Bool) throws -> [Item]
    func delete(_ query: ItemQuery) throws -> Int
}

extension KeychainDatabase: ItemStore {}

/// Where a `Keychain` value's items live: a given store, or the default keychain opened on
/// first use.
struct StoreReference: Sendable {
    private let fixed: (any ItemStore)?

    /// The store named by ``Keychain/withDefaultDatabase(_:operation:)`` if one is in
    /// effect, else the default keychain, opened on first use.
    static func standard() -> StoreReference {
        StoreReference(fixed: DefaultDatabase.override)
    }

    init(_ store: any ItemStore) { fixed = store }
    private init(fixed: (any ItemStore)?) { self.fixed = fixed }

    func resolve() throws -> any ItemStore {
        if let fixed { return fixed }
        return try DefaultDatabase.open()
    }
}

/// The default keychain shared by every module (``KeychainDatabase/current()``) and the
/// current task's override.
enum DefaultDatabase {
    static var override: KeychainDatabase? { KeychainDatabase.defaultOverride }

    static func open() throws -> KeychainDatabase { try KeychainDatabase.current() }
}
