import Foundation
import KeychainClient
import KeychainModel

/// The three keychain operations `Keychain` uses; every ``KeychainModel/KeychainHandle``
/// provides them.
///
/// Tests substitute an implementation that records calls or injects failures.
protocol ItemStore: Sendable {
    func upsert(_ item: Item) throws -> (item: Item, added: Bool)
    func find(_ query: ItemQuery, includeData: Bool) throws -> [Item]
    func delete(_ query: ItemQuery) throws -> Int
}

/// A keychain handle as an ``ItemStore``.
struct HandleStore: ItemStore {
    let handle: any KeychainHandle

    func upsert(_ item: Item) throws -> (item: Item, added: Bool) { try handle.upsert(item) }
    func find(_ query: ItemQuery, includeData: Bool) throws -> [Item] {
        try handle.find(query, includeData: includeData)
    }
    func delete(_ query: ItemQuery) throws -> Int { try handle.delete(query) }
}

/// Where a `Keychain` value's items live: a given store, or the default keychain opened on
/// first use.
struct StoreReference: Sendable {
    private let fixed: (any ItemStore)?

    /// The store named by ``Keychain/withDefaultDatabase(_:operation:)`` if one is in
    /// effect, else the default keychain, opened on first use.
    static func standard() -> StoreReference {
        StoreReference(fixed: Keychains.defaultOverride.map { HandleStore(handle: $0) })
    }

    init(_ store: any ItemStore) { fixed = store }
    init(_ handle: any KeychainHandle) { fixed = HandleStore(handle: handle) }
    private init(fixed: (any ItemStore)?) { self.fixed = fixed }

    func resolve() throws -> any ItemStore {
        if let fixed { return fixed }
        return HandleStore(handle: try Keychains.current())
    }
}
