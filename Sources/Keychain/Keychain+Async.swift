import Dispatch
import Foundation
import KeychainModel

// The asynchronous variants run the blocking keychain work on a global dispatch queue, so
// that a caller on the cooperative thread pool (or the main actor) never blocks. In an
// asynchronous context Swift picks these overloads; each behaves as its synchronous twin.
extension Keychain {
    /// Reads the secret stored under `key` without blocking the caller.
    /// See ``data(forKey:)``.
    public func data(forKey key: String) async throws -> Data? {
        try await offload { try data(forKey: key) }
    }

    /// Reads the text stored under `key` without blocking the caller.
    /// See ``string(forKey:)``.
    public func string(forKey key: String) async throws -> String? {
        try await offload { try string(forKey: key) }
    }

    /// Reads a value stored under `key` without blocking the caller.
    /// See ``value(_:forKey:)``.
    public func value<T: Decodable & Sendable>(_ type: T.Type = T.self, forKey key: String) async throws -> T? {
        try await offload { try value(type, forKey: key) }
    }

    /// Whether an item is stored under `key`, without blocking the caller.
    /// See ``contains(_:)``.
    public func contains(_ key: String) async throws -> Bool {
        try await offload { try contains(key) }
    }

    /// The keys of every item, without blocking the caller. See ``allKeys()``.
    public func allKeys() async throws -> [String] {
        try await offload { try allKeys() }
    }

    /// The attributes of every item, without blocking the caller. See ``allItems()``.
    public func allItems() async throws -> [ItemAttributes] {
        try await offload { try allItems() }
    }

    /// Stores bytes under `key` without blocking the caller. See ``set(_:forKey:)-(Data,_)``.
    public func set(_ data: Data, forKey key: String) async throws {
        try await offload { try set(data, forKey: key) }
    }

    /// Stores text under `key` without blocking the caller. See ``set(_:forKey:)-(String,_)``.
    public func set(_ string: String, forKey key: String) async throws {
        try await offload { try set(string, forKey: key) }
    }

    /// Stores a value under `key` without blocking the caller.
    /// See ``set(_:forKey:)-(Encodable&Sendable,_)``.
    public func set<T: Encodable & Sendable>(_ value: T, forKey key: String) async throws {
        try await offload { try set(value, forKey: key) }
    }

    /// Removes the item stored under `key` without blocking the caller. See ``remove(_:)``.
    @discardableResult
    public func remove(_ key: String) async throws -> Bool {
        try await offload { try remove(key) }
    }

    /// Removes every item without blocking the caller. See ``removeAll()``.
    @discardableResult
    public func removeAll() async throws -> Bool {
        try await offload { try removeAll() }
    }

    /// Runs `body` on a global queue and resumes with its result. A task cancelled before
    /// the work starts throws `CancellationError`; once started, the work completes.
    private func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try body() })
            }
        }
    }
}
