import Foundation
import KeychainModel

extension Keychain {
    // MARK: Reading

    /// Reads the secret stored under `key` as bytes.
    /// - Parameter key: The item's key (its account, `kSecAttrAccount`).
    /// - Returns: The secret, or `nil` when no item has that key.
    /// - Throws: ``KeychainModel/KeychainError`` for any other failure, such as
    ///   `.interactionNotAllowed` (-25308) while the keychain is locked.
    public func data(forKey key: String) throws -> Data? {
        let store = try store.resolve()
        var query = readQuery(key: key)
        query.limit = 1
        guard let item = try store.find(query, includeData: true).first else { return nil }
        return item.data ?? Data()
    }

    /// Reads the secret stored under `key` as UTF-8 text.
    /// - Parameter key: The item's key.
    /// - Returns: The text, or `nil` when no item has that key.
    /// - Throws: ``KeychainModel/KeychainError``; `.decode` (-26275) when the secret is not
    ///   UTF-8 text.
    public func string(forKey key: String) throws -> String? {
        guard let data = try data(forKey: key) else { return nil }
        return try Self.decode(String.self, from: data)
    }

    /// Reads a value stored under `key`.
    ///
    /// `String` values are stored as UTF-8 text and `Data` as it is; every other type is
    /// stored as JSON. Reading decodes the same way, so a value written with
    /// ``set(_:forKey:)-(Encodable&Sendable,_)`` reads back with this method.
    ///
    /// ```swift
    /// struct Credentials: Codable, Sendable { var user: String; var expires: Date }
    /// let credentials = try keychain.value(Credentials.self, forKey: "credentials")
    /// ```
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - key: The item's key.
    /// - Returns: The value, or `nil` when no item has that key.
    /// - Throws: ``KeychainModel/KeychainError``; `.decode` (-26275) when the stored bytes
    ///   are not a `type` (the error does not quote them).
    public func value<T: Decodable>(_ type: T.Type = T.self, forKey key: String) throws -> T? {
        guard let data = try data(forKey: key) else { return nil }
        return try Self.decode(type, from: data)
    }

    /// Whether an item is stored under `key`. Its secret is not decrypted.
    /// - Parameter key: The item's key.
    /// - Returns: `true` when the item exists.
    /// - Throws: ``KeychainModel/KeychainError``, such as `.interactionNotAllowed` while the
    ///   keychain is locked (the item's attributes are sealed too).
    public func contains(_ key: String) throws -> Bool {
        let store = try store.resolve()
        var query = readQuery(key: key)
        query.limit = 1
        return try !store.find(query, includeData: false).isEmpty
    }

    /// The keys of every item of this keychain, in the order the items were added.
    ///
    /// Listing reads attributes only: no secret is decrypted.
    /// - Returns: The keys; empty when there are none.
    /// - Throws: ``KeychainModel/KeychainError``.
    public func allKeys() throws -> [String] {
        try allItems().map(\.key)
    }

    /// The attributes of every item of this keychain, in the order the items were added.
    ///
    /// No secret is decrypted or returned; read one with ``data(forKey:)``.
    /// - Returns: The items' attributes; empty when there are none.
    /// - Throws: ``KeychainModel/KeychainError``.
    public func allItems() throws -> [ItemAttributes] {
        let store = try store.resolve()
        return try store.find(readQuery(key: nil), includeData: false).map(ItemAttributes.init)
    }

    /// The attributes of the item stored under `key`; its secret is not decrypted.
    /// - Parameter key: The item's key.
    /// - Returns: The attributes, or `nil` when no item has that key.
    /// - Throws: ``KeychainModel/KeychainError``.
    public func attributes(forKey key: String) throws -> ItemAttributes? {
        let store = try store.resolve()
        var query = readQuery(key: key)
        query.limit = 1
        return try store.find(query, includeData: false).first.map(ItemAttributes.init)
    }

    // MARK: Writing

    /// Stores bytes under `key`, adding the item or replacing its secret.
    ///
    /// The write is one atomic upsert: the old value stays in place unless the new one is
    /// stored.
    /// The item gets this keychain's accessibility, and its label and comment when set.
    /// - Parameters:
    ///   - data: The secret.
    ///   - key: The item's key.
    /// - Throws: ``KeychainModel/KeychainError``, such as `.interactionNotAllowed` while the
    ///   keychain is locked or `.parameter` when the secret is too large.
    public func set(_ data: Data, forKey key: String) throws {
        try upsert(data, key: key)
    }

    /// Stores text under `key` as UTF-8, adding the item or replacing its secret.
    /// - Parameters:
    ///   - string: The secret.
    ///   - key: The item's key.
    /// - Throws: ``KeychainModel/KeychainError``.
    public func set(_ string: String, forKey key: String) throws {
        try upsert(Data(string.utf8), key: key)
    }

    /// Stores a value under `key`: `String` as UTF-8, `Data` as it is, anything else as JSON.
    ///
    /// ```swift
    /// try keychain.set(Credentials(user: "alice", expires: .now), forKey: "credentials")
    /// ```
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The item's key.
    /// - Throws: ``KeychainModel/KeychainError``; `.parameter` (-50) when the value cannot
    ///   be encoded (the error does not quote it).
    public func set<T: Encodable & Sendable>(_ value: T, forKey key: String) throws {
        try upsert(Self.encode(value), key: key)
    }

    /// Removes the item stored under `key`.
    /// - Parameter key: The item's key.
    /// - Returns: `true` if an item was removed, `false` if there was none.
    /// - Throws: ``KeychainModel/KeychainError`` for any failure other than "not found".
    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        try delete(readQuery(key: key))
    }

    /// Removes every item of this keychain (of its service or server, access group and
    /// synchronizable state); other items are left alone.
    /// - Returns: `true` if any item was removed.
    /// - Throws: ``KeychainModel/KeychainError`` for any failure other than "not found".
    @discardableResult
    public func removeAll() throws -> Bool {
        try delete(readQuery(key: nil))
    }

    // MARK: - Queries

    var itemClass: ItemClass {
        switch itemKind {
        case .genericPassword: .genericPassword
        case .internetPassword: .internetPassword
        }
    }

    /// The attributes shared by every item of this keychain.
    var baseAttributes: Attributes {
        switch itemKind {
        case .genericPassword(let service):
            return [.service: .string(service)]
        case .internetPassword(let server, let protocolType, let authenticationType, let port, let path):
            return [
                .server: .string(server), .protocol: .string(protocolType.rawValue),
                .authenticationType: .string(authenticationType.rawValue), .port: .number(Int64(port)),
                .path: .string(path),
            ]
        }
    }

    /// The query for one key, or for every item when `key` is `nil`.
    func readQuery(key: String?) -> ItemQuery {
        var attributes = baseAttributes
        if let key { attributes[.account] = .string(key) }
        if let accessGroup { attributes[.accessGroup] = .string(accessGroup) }
        return ItemQuery(class: itemClass, attributes: attributes, synchronizable: synchronizable ? .yes : .no)
    }

    private func delete(_ query: ItemQuery) throws -> Bool {
        let store = try store.resolve()
        do {
            return try store.delete(query) > 0
        } catch let error as KeychainError where error.code == .itemNotFound {
            return false
        }
    }

    /// The attributes a write sets on an existing item.
    private var writtenAttributes: Attributes {
        var attributes: Attributes = [.accessible: .string(accessibility.rawValue)]
        if let label { attributes[.label] = .string(label) }
        if let comment { attributes[.comment] = .string(comment) }
        return attributes
    }

    /// Adds the item or, when one with the same primary key exists, replaces its secret
    /// and written attributes, in one engine transaction (`KeychainDatabase.upsert`): the
    /// old value is replaced in place or kept, never deleted first.
    func upsert(_ data: Data, key: String) throws {
        let store = try store.resolve()
        var attributes = baseAttributes.merging(writtenAttributes) { _, new in new }
        attributes[.account] = .string(key)
        attributes[.synchronizable] = .number(synchronizable ? 1 : 0)
        if let accessGroup { attributes[.accessGroup] = .string(accessGroup) }
        _ = try store.upsert(Item(class: itemClass, attributes: attributes, data: data))
    }

    // MARK: - Encoding

    static func encode<T: Encodable>(_ value: T) throws -> Data {
        if T.self == String.self, let string = value as? String { return Data(string.utf8) }
        if T.self == Data.self, let data = value as? Data { return data }
        do {
            return try JSONEncoder().encode(value)
        } catch {
            // The underlying EncodingError holds the value itself: it is not attached.
            throw KeychainError(.parameter, "a value of type \(T.self) could not be encoded as JSON")
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if T.self == String.self {
            guard let string = String(validating: data, as: UTF8.self) else {
                throw KeychainError(.decode, "the stored secret is not UTF-8 text")
            }
            return string as! T
        }
        if T.self == Data.self { return data as! T }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            // A DecodingError can quote the bytes it choked on: it is not attached.
            throw KeychainError(.decode, "the stored secret is not a JSON-encoded \(T.self)")
        }
    }
}
