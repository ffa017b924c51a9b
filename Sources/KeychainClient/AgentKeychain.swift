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

    private typealias I = AgentInterface

    /// The arguments naming this keychain alone.
    private var named: I.KeychainArguments { I.KeychainArguments(keychain: keychain) }

    /// The agent's `Status` answer, variants unwrapped.
    func status() throws -> [String: DBusValue] { try connection.call(I.status, named).status }

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

    public func unlock(password: Data?) throws {
        _ = try connection.call(I.unlock, .init(keychain: keychain, password: password))
    }
    public func lock() { _ = try? connection.call(I.lock, named) }
    public func changePassword(old: Data?, new: Data) throws {
        _ = try connection.call(I.changePassword, .init(keychain: keychain, old: old, new: new))
    }
    public func rotateKeys(password: Data?, newPassword: Data?) throws {
        _ = try connection.call(I.rotateKeys, .init(keychain: keychain, password: password, newPassword: newPassword))
    }
    /// Nothing to release: the agent keeps the keychain open for every process.
    public func close() throws {}

    /// The keychain's lock settings, as the agent reads them from its file.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.decode` for damaged settings).
    public var settings: KeychainSettings {
        get throws { try connection.call(I.settings, named).settings }
    }

    /// Stores the keychain's lock settings through the agent, which locks the keychain after
    /// ``KeychainModel/KeychainSettings/lockInterval`` seconds without a request from then on.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.interactionNotAllowed` while
    ///   the keychain is locked, `.missingEntitlement` for a caller that may not manage
    ///   keychains).
    public func setSettings(_ settings: KeychainSettings) throws {
        _ = try connection.call(I.setSettings, .init(keychain: keychain, settings: settings))
    }

    public func add(_ item: Item) throws -> Item {
        try connection.call(I.add, .init(keychain: keychain, item: item)).stored
    }
    public func add(contentsOf items: [Item]) throws -> [Item] {
        try connection.call(I.addMany, .init(keychain: keychain, items: items)).items
    }
    public func add(contentsOf items: [Item], keepingDates: Bool) throws -> [Item] {
        guard keepingDates else { return try add(contentsOf: items) }
        return try connection.call(I.moveIn, .init(keychain: keychain, items: items)).items
    }
    public func upsert(_ item: Item) throws -> (item: Item, added: Bool) {
        let reply = try connection.call(I.upsert, .init(keychain: keychain, item: item))
        return (reply.stored, reply.added)
    }
    public func find(_ query: ItemQuery, includeData: Bool) throws -> [Item] {
        try askingUser(query) {
            try connection.call(I.find, .init(keychain: keychain, query: $0, includeData: includeData)).items
        }
    }
    public func findFirst(_ query: ItemQuery, includeData: Bool) throws -> Item? {
        var limited = query
        limited.limit = 1
        return try find(limited, includeData: includeData).first
    }
    public func findReadable(_ query: ItemQuery, includeData: Bool) throws -> ReadableItems {
        let reply = try askingUser(query) {
            try connection.call(I.findReadable, .init(keychain: keychain, query: $0, includeData: includeData))
        }
        var found = ReadableItems()
        found.items = reply.items
        // The agent describes each row as the engine does (row, class, persistent reference).
        found.unreadable = reply.unreadable.map(UnreadableItem.init(parsing:))
        return found
    }
    public func update(_ query: ItemQuery, attributes changes: Attributes, data: Data?) throws -> Int {
        try askingUser(query) {
            let arguments = I.UpdateArguments(keychain: keychain, query: $0, attributes: changes, data: data)
            return Int(try connection.call(I.update, arguments).count)
        }
    }
    public func delete(_ query: ItemQuery) throws -> Int {
        Int(try connection.call(I.delete, .init(keychain: keychain, query: query)).count)
    }
}

extension AgentConnection {
    /// Has the agent create a keychain file at the absolute `path`, protected by `password`'s
    /// bytes (by the device key alone when `nil`), and returns it unlocked, as macOS leaves a
    /// keychain it has just created.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.duplicateKeychain` when a file
    ///   exists there, `.missingEntitlement` for a caller that may not manage keychains).
    public func createKeychain(at path: String, password: Data?) throws -> AgentKeychain {
        _ = try call(AgentInterface.create, .init(keychain: path, password: password))
        return keychain(at: path)
    }

    /// Has the agent close and delete the keychain file at the absolute `path`.
    /// - Throws: The agent's ``KeychainModel/KeychainError`` (`.noSuchKeychain`, `.invalidKeychain`).
    public func deleteKeychain(at path: String) throws {
        _ = try call(AgentInterface.deleteKeychain, .init(keychain: path))
    }
}

extension AgentKeychain: TokenKeyHolder {
    /// Generates a token key in the agent (stored there as `template` when given); only its public
    /// key and an opaque handle come back.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.unimplemented` from an agent that
    ///   predates token keys.
    package func createTokenKey(storing template: Item?) throws -> (publicKey: Data, handle: Data) {
        let reply = try tokenCall(I.createTokenKey, .init(keychain: keychain, template: template))
        return (reply.publicKey, reply.handle)
    }

    /// Runs a token key operation in the agent, which holds the private key. A key whose access
    /// control asks for its owner is asked for by the agent, through polkit; when polkit has
    /// nobody to ask with (``KeychainModel/KeychainError/Reason/noAuthenticationAgent``), its
    /// text agent is started on this process's terminal (when it has one) and the use made again.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.unimplemented` from an agent that
    ///   predates token keys.
    package func useTokenKey(_ handle: Data, _ request: TokenKeyRequest) throws -> Data {
        // A proof goes with UseTokenKeyOffering; without one, the released UseTokenKey.
        func use() throws -> Data {
            guard request.ownerProof != nil else {
                return try tokenCall(I.useTokenKey, .init(keychain: keychain, handle: handle, request: request)).output
            }
            return try tokenCall(I.useTokenKeyOffering, .init(keychain: keychain, handle: handle, request: request))
                .output
        }
        do {
            return try use()
        } catch let error as KeychainError where error.reason == .noAuthenticationAgent {
            return try withTerminalAgent(use)
        }
    }

    /// Stores a token key the agent made without `permanent` as the key item `template`.
    /// - Throws: The agent's ``KeychainModel/KeychainError``; `.unimplemented` from an agent that
    ///   predates token keys.
    package func storeTokenKey(_ handle: Data, as template: Item) throws -> Data {
        try tokenCall(I.storeTokenKey, .init(keychain: keychain, handle: handle, item: template)).handle
    }

    /// A token key call; an agent without the method (older than token keys) is `.unimplemented`.
    private func tokenCall<A, R>(_ method: DBusMethodDeclaration<A, R>, _ arguments: A) throws -> R {
        do {
            return try connection.call(method, arguments)
        } catch let error as KeychainError where error.message.contains("UnknownMethod") {
            throw KeychainError(.unimplemented, "the keychain agent predates token keys: restart keychaind")
        }
    }
}
