import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore

/// A keychain kept by the session agent: its keys, lock state and checks stay in the agent,
/// which answers with the items this process may see.
public final class AgentKeychain: KeychainHandle {
    /// The agent connection.
    public let connection: AgentConnection
    /// The keychain's path as the agent knows it (`""`: the default keychain).
    public let keychain: String

    init(connection: AgentConnection, keychain: String) {
        self.connection = connection
        self.keychain = keychain
    }

    private func call(_ method: AgentInterface.Method, _ arguments: [DBusValue] = []) throws -> [DBusValue] {
        try connection.call(method, [.string(keychain)] + arguments)
    }

    /// The agent's `Status` answer, variants unwrapped.
    func status() throws -> [String: DBusValue] {
        (try call(.status).first?.stringKeyedEntries ?? [:]).mapValues { $0.variantValue ?? $0 }
    }

    private static func password(_ data: Data?) -> [DBusValue] {
        [.boolean(data != nil), .bytes(Array(data ?? Data()))]
    }

    /// The keychain's file, as the agent reports it.
    public var path: String? {
        guard case .string(let path)? = (try? status())?["path"] else { return keychain.isEmpty ? nil : keychain }
        return path
    }

    /// The groups the agent gives this process.
    public var accessGroups: AccessGroups {
        guard case .array(_, let values)? = (try? status())?["accessGroups"] else { return AccessGroups([]) }
        return AccessGroups(values.compactMap(\.stringValue))
    }

    /// Whether the keychain has a password.
    public var hasPassword: Bool { (try? status())?["hasPassword"] == .boolean(true) }

    /// Whether the keychain is locked in the agent (for every process).
    public var isLocked: Bool { (try? status())?["isLocked"] != .boolean(false) }

    public func unlock(password: Data?) throws { _ = try call(.unlock, Self.password(password)) }
    public func lock() { _ = try? call(.lock) }
    public func changePassword(old: Data?, new: Data) throws {
        _ = try call(.changePassword, Self.password(old) + [.bytes(Array(new))])
    }
    public func rotateKeys(password: Data?, newPassword: Data?) throws {
        _ = try call(.rotateKeys, Self.password(password) + Self.password(newPassword))
    }
    /// Nothing to release: the agent keeps the keychain open for every process.
    public func close() throws {}

    /// The keychain's lock settings, as the agent reads them from its file.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.decode` for damaged settings).
    public var settings: KeychainSettings {
        get throws { try AgentCodec.decodeSettings(try first(call(.settings))) }
    }

    /// Stores the keychain's lock settings through the agent, which locks the keychain after
    /// ``KeychainModel/KeychainSettings/lockInterval`` seconds without a request from then on.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.interactionNotAllowed` while
    ///   the keychain is locked, `.missingEntitlement` for a caller that may not manage
    ///   keychains).
    public func setSettings(_ settings: KeychainSettings) throws {
        _ = try call(.setSettings, [AgentCodec.encode(settings)])
    }

    public func add(_ item: Item) throws -> Item {
        try AgentCodec.decodeItem(try first(call(.add, [AgentCodec.encode(item)])))
    }
    public func add(contentsOf items: [Item]) throws -> [Item] {
        try AgentCodec.decodeItems(try first(call(.addMany, [AgentCodec.encode(items)])))
    }
    public func upsert(_ item: Item) throws -> (item: Item, added: Bool) {
        let answer = try call(.upsert, [AgentCodec.encode(item)])
        guard answer.count == 2, case .boolean(let added) = answer[1] else { throw Self.malformed }
        return (try AgentCodec.decodeItem(answer[0]), added)
    }
    public func find(_ query: ItemQuery, includeData: Bool) throws -> [Item] {
        try connection.call(.find, [.string(keychain), AgentCodec.encode(query), .boolean(includeData)]) {
            try AgentCodec.decodeItems(from: &$0)
        }
    }
    public func findFirst(_ query: ItemQuery, includeData: Bool) throws -> Item? {
        var limited = query
        limited.limit = 1
        return try find(limited, includeData: includeData).first
    }
    public func findReadable(_ query: ItemQuery, includeData: Bool) throws -> ReadableItems {
        let answer = try call(.findReadable, [AgentCodec.encode(query), .boolean(includeData)])
        guard answer.count == 2, case .array(_, let rows) = answer[1] else { throw Self.malformed }
        var found = ReadableItems()
        found.items = try AgentCodec.decodeItems(answer[0])
        found.unreadable = rows.map { row in
            guard case .string(let text) = row else {
                return UnreadableItem(
                    rowID: nil, persistentID: nil, itemClass: nil, error: KeychainError(.decode, "unreadable item"))
            }
            return UnreadableItem(parsing: text)
        }
        return found
    }
    public func update(_ query: ItemQuery, attributes changes: Attributes, data: Data?) throws -> Int {
        let answer = try call(
            .update,
            [
                AgentCodec.encode(query), AgentCodec.encode(changes), .boolean(data != nil),
                .bytes(Array(data ?? Data())),
            ])
        guard case .uint32(let count)? = answer.first else { throw Self.malformed }
        return Int(count)
    }
    public func delete(_ query: ItemQuery) throws -> Int {
        guard case .uint32(let count)? = try call(.delete, [AgentCodec.encode(query)]).first else {
            throw Self.malformed
        }
        return Int(count)
    }

    private func first(_ answer: [DBusValue]) throws -> DBusValue {
        guard let value = answer.first else { throw Self.malformed }
        return value
    }

    private static let malformed = KeychainError(.decode, "the keychain agent's answer is malformed")
}

extension AgentConnection {
    /// Has the agent create a keychain file at the absolute `path`, protected by `password`'s
    /// bytes (by the device key alone when `nil`), and returns it unlocked, as macOS leaves a
    /// keychain it has just created.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.duplicateKeychain` when a file
    ///   exists there, `.missingEntitlement` for a caller that may not manage keychains).
    public func createKeychain(at path: String, password: Data?) throws -> AgentKeychain {
        _ = try call(.create, [.string(path), .boolean(password != nil), .bytes(Array(password ?? Data()))])
        return keychain(at: path)
    }

    /// Has the agent close and delete the keychain file at the absolute `path`.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`).
    public func deleteKeychain(at path: String) throws {
        _ = try call(.deleteKeychain, [.string(path)])
    }
}

extension AgentKeychain: TokenKeyHolder {
    /// Generates a token key in the agent (stored there as `template` when given); only its public
    /// key and an opaque handle come back.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.unimplemented` from an agent that
    ///   predates token keys.
    package func createTokenKey(storing template: Item?) throws -> (publicKey: Data, handle: Data) {
        let reply = try tokenCall(
            .createTokenKey, [.boolean(template != nil), AgentCodec.encode(template ?? Item(class: .key))])
        guard reply.count == 2, case .bytes(let publicKey) = reply[0], case .bytes(let handle) = reply[1] else {
            throw KeychainError(.internalComponent, "the keychain agent's token key answer is malformed")
        }
        return (Data(publicKey), Data(handle))
    }

    /// Runs a token key operation in the agent, which holds the private key.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.unimplemented` from an agent that
    ///   predates token keys.
    package func useTokenKey(_ handle: Data, _ request: TokenKeyRequest) throws -> Data {
        let reply = try tokenCall(
            .useTokenKey,
            [
                .bytes(Array(handle)), .byte(request.operation.rawValue), .bytes(Array(request.input)),
                .uint32(UInt32(clamping: request.kdfHash)), .bytes(Array(request.sharedInfo)),
                .uint32(UInt32(clamping: request.outputSize)),
            ])
        guard reply.count == 1, case .bytes(let output) = reply[0] else {
            throw KeychainError(.internalComponent, "the keychain agent's token key answer is malformed")
        }
        return Data(output)
    }

    /// Stores a token key the agent made without `permanent` as the key item `template`.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.unimplemented` from an agent that
    ///   predates token keys.
    package func storeTokenKey(_ handle: Data, as template: Item) throws -> Data {
        let reply = try tokenCall(.storeTokenKey, [.bytes(Array(handle)), AgentCodec.encode(template)])
        guard reply.count == 1, case .bytes(let stored) = reply[0] else {
            throw KeychainError(.internalComponent, "the keychain agent's token key answer is malformed")
        }
        return Data(stored)
    }

    /// A token key call; an agent without the method (older than token keys) is `.unimplemented`.
    private func tokenCall(_ method: AgentInterface.Method, _ arguments: [DBusValue]) throws -> [DBusValue] {
        do {
            return try call(method, arguments)
        } catch let error as KeychainError where error.message.contains("UnknownMethod") {
            throw KeychainError(.unimplemented, "the keychain agent predates token keys: restart keychaind")
        }
    }
}
