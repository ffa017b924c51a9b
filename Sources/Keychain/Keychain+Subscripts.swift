import Foundation
import KeychainModel

extension Keychain {
    /// The text stored under `key`; assigning `nil` removes the item.
    ///
    /// ```swift
    /// keychain["token"] = "s3cr3t"
    /// let token = keychain["token"]
    /// keychain["token"] = nil
    /// ```
    ///
    /// - Important: A subscript cannot throw, and a keychain error is never turned into
    ///   `nil` or ignored: any failure other than "not found" stops the program with the
    ///   error's `OSStatus` (never a secret). Use subscripts where a keychain failure is a
    ///   programming error (tests, tools); where the keychain may be locked, use the
    ///   throwing ``string(forKey:)``, ``set(_:forKey:)-(String,_)`` and ``remove(_:)``.
    public subscript(key: String) -> String? {
        get { Self.orStop("read", key) { try string(forKey: key) } }
        nonmutating set {
            Self.orStop("write", key) {
                if let newValue { try set(newValue, forKey: key) } else { try remove(key) }
            }
        }
    }

    /// The bytes stored under `key`; assigning `nil` removes the item.
    ///
    /// - Important: As with ``subscript(_:)``, a failure other than "not found" stops the
    ///   program; use ``data(forKey:)`` and ``set(_:forKey:)-(Data,_)`` to handle errors.
    public subscript(data key: String) -> Data? {
        get { Self.orStop("read", key) { try data(forKey: key) } }
        nonmutating set {
            Self.orStop("write", key) {
                if let newValue { try set(newValue, forKey: key) } else { try remove(key) }
            }
        }
    }

    /// Runs `body`; a thrown error stops the program with a message that names the
    /// operation and the error (whose description never holds a secret).
    static func orStop<T>(_ operation: String, _ key: String, _ body: () throws -> T) -> T {
        do {
            return try body()
        } catch {
            fatalError(
                "Keychain could not \(operation) the item \"\(key)\": \(error). "
                    + "Use the throwing methods to handle keychain errors.")
        }
    }
}

/// A property stored in the keychain under one key.
///
/// ```swift
/// struct Session {
///     @KeychainStored("token", keychain: Keychain(service: "com.example.api"))
///     var token: String?
/// }
///
/// let session = Session()
/// session.token = "s3cr3t"      // stored
/// session.token = nil           // removed
/// try session.$token.save("x")  // the throwing form
/// ```
///
/// `String` values are stored as UTF-8, `Data` as it is, other `Codable` values as JSON
/// (as ``Keychain/set(_:forKey:)-(Encodable&Sendable,_)`` does).
///
/// - Important: Like ``Keychain/subscript(_:)``, the property itself cannot throw: a
///   failure other than "not found" stops the program. Where the keychain may be locked,
///   use the projected value's throwing ``load()``, ``save(_:)`` and ``remove()``.
@propertyWrapper
public struct KeychainStored<Value: Codable & Sendable>: Sendable {
    /// The key the value is stored under.
    public let key: String
    /// The keychain that holds it.
    public let keychain: Keychain

    /// Stores a property under `key` in `keychain`.
    /// - Parameters:
    ///   - key: The item's key.
    ///   - keychain: The keychain.
    public init(_ key: String, keychain: Keychain) {
        self.key = key
        self.keychain = keychain
    }

    /// The stored value, `nil` when absent; assigning `nil` removes it.
    public var wrappedValue: Value? {
        get { Keychain.orStop("read", key) { try load() } }
        nonmutating set { Keychain.orStop("write", key) { try save(newValue) } }
    }

    /// The wrapper itself, for the throwing operations (`$token.load()`).
    public var projectedValue: KeychainStored<Value> { self }

    /// Reads the value.
    /// - Returns: The value, or `nil` when absent.
    /// - Throws: ``KeychainModel/KeychainError``.
    public func load() throws -> Value? {
        try keychain.value(Value.self, forKey: key)
    }

    /// Stores the value, or removes it when `value` is `nil`.
    /// - Parameter value: The new value.
    /// - Throws: ``KeychainModel/KeychainError``; the old value is kept on failure.
    public func save(_ value: Value?) throws {
        if let value { try keychain.set(value, forKey: key) } else { try keychain.remove(key) }
    }

    /// Removes the value.
    /// - Returns: `true` if a value was removed.
    /// - Throws: ``KeychainModel/KeychainError`` for any failure other than "not found".
    @discardableResult
    public func remove() throws -> Bool {
        try keychain.remove(key)
    }
}
