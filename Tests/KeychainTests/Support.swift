import Foundation
import KeychainCore
import KeychainTestSupport
import Synchronization
import Testing

@testable import Keychain

/// A fresh keychain of a backend (`KeychainBackend.make`), which every behaviour runs against.
extension TestKeychain {
    func keychain(_ service: String = "com.example.tests", accessGroup: String? = nil) -> Keychain {
        Keychain(service: service, accessGroup: accessGroup, database: handle)
    }
}

/// The `KeychainError` code thrown by `body`, or `nil` when it does not throw.
func keychainErrorCode<T>(_ body: () throws -> T) -> KeychainError.Code? {
    do {
        _ = try body()
        return nil
    } catch let error as KeychainError {
        return error.code
    } catch {
        Issue.record("expected a KeychainError, got \(type(of: error))")
        return nil
    }
}

/// An `ItemStore` that forwards to a real keychain, records what it is asked, and fails
/// on demand.
final class SpyStore: ItemStore {
    struct State {
        var calls: [String] = []
        var findIncludeData: [Bool] = []
        var upsertFailures: [KeychainError] = []
    }

    let base: KeychainDatabase
    let state = Mutex(State())

    init(_ base: KeychainDatabase) { self.base = base }

    /// Makes the next calls to `upsert` throw these errors, in order.
    func failUpserts(with errors: [KeychainError]) {
        state.withLock { $0.upsertFailures = errors }
    }

    var calls: [String] { state.withLock { $0.calls } }
    var findIncludeData: [Bool] { state.withLock { $0.findIncludeData } }

    func upsert(_ item: Item) throws -> (item: Item, added: Bool) {
        let failure: KeychainError? = state.withLock {
            $0.calls.append("upsert")
            return $0.upsertFailures.isEmpty ? nil : $0.upsertFailures.removeFirst()
        }
        if let failure { throw failure }
        return try base.upsert(item)
    }

    func find(_ query: ItemQuery, includeData: Bool) throws -> [Item] {
        state.withLock {
            $0.calls.append("find")
            $0.findIncludeData.append(includeData)
        }
        return try base.find(query, includeData: includeData)
    }

    func delete(_ query: ItemQuery) throws -> Int {
        state.withLock { $0.calls.append("delete") }
        return try base.delete(query)
    }
}

extension Keychain {
    /// A keychain of `service` whose engine calls go through `store`.
    static func spied(_ store: SpyStore, service: String = "com.example.tests") -> Keychain {
        Keychain(kind: .genericPassword(service: service), accessGroup: nil, store: StoreReference(store))
    }
}

struct Credentials: Codable, Equatable, Sendable {
    var user: String
    var scopes: [String]
    var expires: Date
}
