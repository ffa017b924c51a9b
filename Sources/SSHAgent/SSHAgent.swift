import Crypto
import Foundation
import KeychainModel
import Synchronization

/// OpenSSH's agent protocol (draft-miller-ssh-agent, OpenSSH's `PROTOCOL.agent`) answered from
/// a keychain: `ssh-add -L` lists the keychain's SSH keys, `ssh` signs with them, `ssh-add KEY`
/// stores a key in the keychain, and `ssh-add -d`/`-D` take keys out of the agent's view without
/// deleting them.
///
/// Each key is a generic password item: service ``itemService``, account the key's SHA-256
/// fingerprint, comment (`icmt`) the key's comment, its public key blob as `gena`, and as its
/// secret the private key in the agent protocol's form. So it is encrypted, locked, backed up and
/// synced like every other item, and seen only by callers of its access group. Listing reads the
/// attributes alone (each `ssh` connection lists); only signing decrypts the one key it uses. The
/// agent never hands a private key out: it signs.
///
/// ```swift
/// let agent = SSHAgent()
/// let reply = agent.answer(request) { body in try keychain(body) }
/// ```
public final class SSHAgent: Sendable {
    /// The service of the items that hold SSH keys.
    public static let itemService = "SSH key"
    /// The application tag (`kSecAttrApplicationTag`) of the Secure Enclave keys that are SSH
    /// keys: P-256 keys made in the TPM where the machine has one (``SSHTokenKey``).
    public static let tokenKeyTag = TokenKeys.sshApplicationTag
    /// The largest request accepted, as OpenSSH's agent (`AGENT_MAX_LEN`, 256 KiB).
    public static let maximumMessageLength = 256 * 1024

    /// Fingerprints that `ssh-add -d` or `-D` took out of this agent's view, until they are added
    /// again or the agent ends.
    private let removed = Mutex<Set<String>>([])

    /// While `ssh-add -x` has locked this agent: its passphrase's HMAC under a key drawn for it
    /// (the passphrase itself is never kept).
    private let lock = Mutex<(key: SymmetricKey, tag: Data)?>(nil)

    /// An agent with every key of the keychain in view.
    public init() {}

    /// Whether `ssh-add -x` has locked this agent (until `ssh-add -X` with the same passphrase).
    public var isLocked: Bool { lock.withLock { $0 != nil } }

    /// The answer to `request` (its type byte and contents, without the length), run on the
    /// keychain `withKeychain` gives; any refusal is `SSH_AGENT_FAILURE`, and its reason goes to
    /// `log`. `used` is told the key item of each signature made, inside `withKeychain`.
    public func answer(
        _ request: [UInt8], log: (String) -> Void, used: @escaping (Item) -> Void = { _ in },
        withKeychain: ((any KeychainHandle) throws -> [UInt8]) throws -> [UInt8]
    ) -> [UInt8] {
        do {
            return try respond(to: request, used: used, withKeychain: withKeychain)
        } catch let error as SSHAgentError {
            log("ssh agent: refused a request: \(error)")
        } catch let error as KeychainError where error.code == .interactionNotAllowed {
            log("ssh agent: refused a request: \(SSHAgentError.locked)")
        } catch let error as KeychainError {
            log("ssh agent: refused a request: \(SSHAgentError.keychain(error.message))")
        } catch {
            log("ssh agent: refused a request")
        }
        return [Message.failure.rawValue]
    }

    /// Whether answering `request` reads the keychain (so it fails while the keychain is locked):
    /// listing, signing, adding and removing keys, unless `ssh-add -x` locked this agent.
    public func needsKeychain(_ request: [UInt8]) -> Bool {
        guard !isLocked, let type = request.first.flatMap(Message.init(rawValue:)) else { return false }
        return [
            .requestIdentities, .signRequest, .addIdentity, .addConstrainedIdentity, .removeIdentity,
            .removeAllIdentities,
        ].contains(type)
    }

    /// The message numbers this agent knows.
    enum Message: UInt8 {
        case failure = 5
        case success = 6
        case requestIdentities = 11
        case identitiesAnswer = 12
        case signRequest = 13
        case signResponse = 14
        case addIdentity = 17
        case removeIdentity = 18
        case removeAllIdentities = 19
        case addConstrainedIdentity = 25
        case lock = 22
        case unlock = 23
    }

    private func respond(
        to request: [UInt8], used: @escaping (Item) -> Void,
        withKeychain: ((any KeychainHandle) throws -> [UInt8]) throws -> [UInt8]
    ) throws -> [UInt8] {
        var reader = SSHReader(request)
        let type = try reader.byte()
        let message = Message(rawValue: type)
        if message == .lock || message == .unlock {
            var passphrase = try reader.string()
            defer { passphrase.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            try finish(reader)
            return try locking(message == .lock, passphrase)
        }
        // A locked agent lists no key and does nothing else, as OpenSSH's.
        if isLocked {
            guard message == .requestIdentities else { throw SSHAgentError.agentLocked }
            return [Message.identitiesAnswer.rawValue, 0, 0, 0, 0]
        }
        switch message {
        case .requestIdentities?:
            try finish(reader)
            let hidden = removed.withLock { $0 }
            return try withKeychain { keychain in
                let keys = try Self.publicKeys(in: keychain).filter { !hidden.contains($0.fingerprint) }
                var writer = SSHWriter()
                writer.byte(Message.identitiesAnswer.rawValue)
                writer.uint32(UInt32(keys.count))
                for key in keys {
                    writer.string(key.blob)
                    writer.string(key.comment)
                }
                return writer.bytes
            }
        case .signRequest?:
            let blob = try reader.string()
            let data = try reader.string()
            let flags = try reader.uint32()
            try finish(reader)
            let fingerprint = SSHIdentity.fingerprint(ofBlob: blob)
            guard !removed.withLock({ $0.contains(fingerprint) }) else { throw SSHAgentError.noSuchIdentity }
            return try withKeychain { keychain in
                var writer = SSHWriter()
                writer.byte(Message.signResponse.rawValue)
                if let item = try Self.identityItem(fingerprint, in: keychain),
                    let identity = Self.identity(from: item),
                    identity.publicKeyBlob == blob
                {
                    writer.string(try identity.signature(for: data, flags: flags))
                    used(item)
                } else if let token = try SSHTokenKey.all(in: keychain).first(where: { $0.blob == blob }) {
                    writer.string(try token.signature(for: data, in: keychain))
                    used(token.item)
                } else {
                    throw SSHAgentError.noSuchIdentity
                }
                return writer.bytes
            }
        case .addIdentity?, .addConstrainedIdentity?:
            let identity = try SSHIdentity(reading: &reader, withComment: true)
            // Lifetimes and confirmation (`ssh-add -t`, `-c`) are not kept: refused, so that a
            // key is never held with less protection than was asked for.
            guard reader.isAtEnd else { throw SSHAgentError.unsupported("key constraints are not supported") }
            _ = try withKeychain { keychain in
                try Self.store(identity, in: keychain)
                return []
            }
            removed.withLock { _ = $0.remove(identity.fingerprint) }
            return [Message.success.rawValue]
        case .removeIdentity?:
            let blob = try reader.string()
            try finish(reader)
            let fingerprint = SSHIdentity.fingerprint(ofBlob: blob)
            _ = try withKeychain { keychain in
                guard try Self.publicKeys(in: keychain, fingerprint: fingerprint).first?.blob == blob else {
                    throw SSHAgentError.noSuchIdentity
                }
                return []
            }
            removed.withLock { _ = $0.insert(fingerprint) }
            return [Message.success.rawValue]
        case .removeAllIdentities?:
            try finish(reader)
            return try withKeychain { keychain in
                let all = try Self.publicKeys(in: keychain).map(\.fingerprint)
                removed.withLock { $0.formUnion(all) }
                return [Message.success.rawValue]
            }
        default:
            // Locking the agent, smartcards, extensions (`session-bind@openssh.com`, which `ssh`
            // sends and does without): the protocol's answer for what an agent does not do.
            throw SSHAgentError.unsupported("message \(type) is not supported")
        }
    }

    /// `ssh-add -x` (`lock`) and `-X`: locks with `passphrase`, or unlocks with the same one.
    private func locking(_ locks: Bool, _ passphrase: [UInt8]) throws -> [UInt8] {
        try lock.withLock { state in
            if locks {
                guard state == nil else { throw SSHAgentError.agentLocked }
                let key = SymmetricKey(size: .bits256)
                state = (key, Data(HMAC<SHA256>.authenticationCode(for: passphrase, using: key)))
            } else {
                // isValidAuthenticationCode compares in constant time.
                guard let locked = state,
                    HMAC<SHA256>.isValidAuthenticationCode(locked.tag, authenticating: passphrase, using: locked.key)
                else { throw SSHAgentError.wrongLockPassphrase }
                state = nil
            }
        }
        return [Message.success.rawValue]
    }

    private func finish(_ reader: SSHReader) throws(SSHAgentError) {
        guard reader.isAtEnd else { throw .malformed("bytes after the request") }
    }

    /// The query for SSH key items (`fingerprint`: one of them).
    static func query(fingerprint: String? = nil) -> ItemQuery {
        var attributes: Attributes = [.service: .string(itemService)]
        if let fingerprint { attributes[.account] = .string(fingerprint) }
        var query = ItemQuery(class: .genericPassword, attributes: attributes, synchronizable: .any)
        query.authenticationUI = .fail
        return query
    }

    /// The public keys of the SSH keys `keychain` holds for the caller (one, with `fingerprint`):
    /// the stored keys in the order they were added, from the items' attributes (no secret is
    /// decrypted; an item without a public key blob whose fingerprint is its account is passed
    /// over), then the Secure Enclave SSH keys (``SSHTokenKey``).
    static func publicKeys(in keychain: any KeychainHandle, fingerprint: String? = nil) throws
        -> [(blob: [UInt8], comment: String, fingerprint: String)]
    {
        guard !keychain.isLocked else { throw SSHAgentError.locked }
        let items = try keychain.find(query(fingerprint: fingerprint), includeData: false).sorted {
            ($0.attributes[.creationDate]?.dateValue ?? .distantPast)
                < ($1.attributes[.creationDate]?.dateValue ?? .distantPast)
        }
        let stored = items.compactMap { item -> (blob: [UInt8], comment: String, fingerprint: String)? in
            guard let blob = item.attributes[.generic]?.dataValue.map({ [UInt8]($0) }),
                let account = item.attributes[.account]?.stringValue,
                SSHIdentity.fingerprint(ofBlob: blob) == account
            else { return nil }
            return (blob, item.attributes[.comment]?.stringValue ?? "", account)
        }
        let tokens = try SSHTokenKey.all(in: keychain).map { ($0.blob, $0.comment, $0.fingerprint) }
        return stored + tokens.filter { fingerprint == nil || $0.2 == fingerprint }
    }

    /// The item of the SSH key with `fingerprint`, its private key as data, if the caller has it.
    static func identityItem(_ fingerprint: String, in keychain: any KeychainHandle) throws -> Item? {
        guard !keychain.isLocked else { throw SSHAgentError.locked }
        var query = query(fingerprint: fingerprint)
        query.limit = 1
        return try keychain.find(query, includeData: true).first
    }

    private static func identity(from item: Item) -> SSHIdentity? {
        guard let data = item.data else { return nil }
        return try? SSHIdentity(
            storedFields: [UInt8](data), comment: item.attributes[.comment]?.stringValue ?? "")
    }

    /// Stores `identity` (or gives a stored one its new comment).
    static func store(_ identity: SSHIdentity, in keychain: any KeychainHandle) throws {
        guard !keychain.isLocked else { throw SSHAgentError.locked }
        let label = identity.comment.isEmpty ? "SSH key" : "SSH key: \(identity.comment)"
        let attributes: Attributes = [
            .label: .string(label), .comment: .string(identity.comment),
            .description: .string(identity.typeName), .generic: .data(Data(identity.publicKeyBlob)),
        ]
        do {
            if try keychain.update(query(fingerprint: identity.fingerprint), attributes: attributes, data: nil) > 0 {
                return
            }
        } catch let error as KeychainError where error.code == .itemNotFound {}
        var item = Item(class: .genericPassword, data: Data(identity.privateFields))
        item.attributes = attributes
        item.attributes[.service] = .string(itemService)
        item.attributes[.account] = .string(identity.fingerprint)
        _ = try keychain.add(item)
    }
}
