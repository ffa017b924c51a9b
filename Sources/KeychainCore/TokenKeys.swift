// Token keys (`kSecAttrTokenIDSecureEnclave`; docs/keys-and-certificates.md, "Secure Enclave
// keys"): P-256 private keys that live in the process that holds the keychain's keys (the agent,
// or this process in in-process mode) and are used there; a caller holds only a handle and the
// public key.
//
// - With token-key hardware (``KeychainConfiguration/tokenKeyHardware``, a TPM), the private key
//   is made and used in the hardware, and what is kept is `04‖X‖Y`, "hwk1" and the hardware's
//   wrapped key (``TokenKeySecret``). Without, the private key itself, X9.63 `04‖X‖Y‖K`.
// - A permanent token key is a key item whose secret is that, sealed like every item's secret
//   under its protection class's key. Its class is always a
//   "this device only" one, whose key is wrapped with the device key, so the item is bound to
//   this machine. Its handle is the item's persistent identity.
// - A token key that is not permanent is sealed (``Sealing``, AES-256-GCM) under a random key
//   that this process draws once and never writes anywhere; the sealed blob is its handle. It
//   can be used for as long as the process that made it runs (the agent, or this process).
// - No caller ever receives the private key: a token item's secret leaves ``find(_:includeData:)``
//   as its public key `04‖X‖Y` (``tokenClientView(_:)``); only the operations here open it.

import Crypto
import Foundation

extension TokenKeys {
    /// The first byte of a handle that is a sealed key of the holding process.
    static let sealedHandle: UInt8 = 2

    /// The associated data of a sealed, not permanent token key.
    static let sealingContext = Data("keychain-linux token key v1".utf8)

    /// The key that seals the token keys that are not permanent: random, drawn once per process,
    /// never stored.
    static let processKey = SymmetricKey(size: .bits256)

    /// The "this device only" twin of a protection value (`ak` → `aku`), the value itself when it
    /// is one already, `nil` for an unknown value.
    static func thisDeviceOnly(_ protection: String) -> String? {
        switch protection {
        case "ak", "aku": "aku"
        case "ck", "cku": "cku"
        case "dk", "dku": "dku"
        case "akpu": "akpu"
        default: nil
        }
    }

    /// Whether an item is a token key (a key with a token identifier).
    static func isTokenKey(_ item: Item) -> Bool {
        guard item.itemClass == .key, case .string(let token)? = item.attributes["tkid"] else { return false }
        return !token.isEmpty
    }

    /// What a caller sees of an item: for a token key, its public key instead of its secret
    /// (`nil` when the secret is not a token key's).
    static func tokenClientView(_ item: Item) -> Item {
        guard isTokenKey(item), let data = item.data else { return item }
        var item = item
        item.data = (try? TokenKeySecret(data))?.publicKey
        return item
    }
}

/// A token key as the keychain keeps it.
enum TokenKeySecret {
    /// A key held by this process: X9.63 `04‖X‖Y‖K`.
    case inMemory(P256.Signing.PrivateKey)
    /// A key in hardware: `04‖X‖Y`, ``hardwareMarker``, then the hardware's wrapped key.
    case inHardware(publicKey: Data, wrappedKey: Data)

    /// What follows the public key of a key in hardware.
    static let hardwareMarker = Data("hwk1".utf8)

    /// Reads a kept token key.
    /// - Throws: `.itemNotFound` ("damaged") for anything else.
    init(_ bytes: Data) throws {
        let damaged = KeychainError(.itemNotFound, "the token key is damaged")
        let bytes = Data(bytes)
        if bytes.count == 97 {
            guard let key = try? P256.Signing.PrivateKey(x963Representation: bytes) else { throw damaged }
            self = .inMemory(key)
            return
        }
        let publicKey = bytes.prefix(65)
        guard bytes.count > 69, bytes.dropFirst(65).prefix(4) == Self.hardwareMarker,
            (try? P256.Signing.PublicKey(x963Representation: publicKey)) != nil
        else { throw damaged }
        self = .inHardware(publicKey: Data(publicKey), wrappedKey: Data(bytes.dropFirst(69)))
    }

    /// The public key, `04‖X‖Y`.
    var publicKey: Data {
        switch self {
        case .inMemory(let key): key.publicKey.x963Representation
        case .inHardware(let publicKey, _): publicKey
        }
    }

    /// The bytes kept for a key made in hardware.
    static func kept(publicKey: Data, wrappedKey: Data) -> Data { publicKey + hardwareMarker + wrappedKey }
}

/// A caller's digest, as given: ECDSA signs these bytes.
private struct GivenDigest: Digest {
    let bytes: Data
    static var byteCount: Int { 0 }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
    func makeIterator() -> Data.Iterator { bytes.makeIterator() }
    var description: String { "GivenDigest(\(bytes.count) bytes)" }
}

extension KeychainDatabase: TokenKeyHolder {
    package func createTokenKey(storing template: Item?) throws -> (publicKey: Data, handle: Data) {
        var secret: Data
        let publicKey: Data
        if let hardware = configuration.tokenKeyHardware {
            let made = try hardware.createKey()
            publicKey = made.publicKey
            secret = TokenKeySecret.kept(publicKey: made.publicKey, wrappedKey: made.wrappedKey)
        } else {
            let key = P256.Signing.PrivateKey()
            publicKey = key.publicKey.x963Representation
            secret = key.x963Representation
        }
        defer { secret.resetBytes(in: 0..<secret.count) }
        guard let template else {
            let sealed = try Sealing.seal(secret, key: TokenKeys.processKey, context: sealedHandleContext)
            return (publicKey, Data([TokenKeys.sealedHandle]) + sealed)
        }
        return (publicKey, try storeTokenSecret(secret, publicKey: publicKey, as: template))
    }

    package func storeTokenKey(_ handle: Data, as template: Item) throws -> Data {
        // A copy of a stored key asks what a use asks: it could drop the key's access control.
        var secret = try tokenSecret(handle, offering: nil)
        defer { secret.resetBytes(in: 0..<secret.count) }
        return try storeTokenSecret(secret, publicKey: try TokenKeySecret(secret).publicKey, as: template)
    }

    /// Adds a token key item: `template` with the token ID, its label, a "this device only"
    /// protection and the private key as its secret.
    /// - Returns: The stored key's handle.
    private func storeTokenSecret(_ secret: Data, publicKey: Data, as template: Item) throws -> Data {
        var item = template
        guard item.itemClass == .key else { throw KeychainError.parameter("a token key is a key item") }
        if (item.attributes[.synchronizable]?.numberValue ?? 0) != 0 {
            throw KeychainError.parameter("a token key cannot be synchronizable")
        }
        item.attributes["tkid"] = .string(TokenKeys.secureEnclave)
        if item.attributes["klbl"] == nil {
            item.attributes["klbl"] = .data(Data(Insecure.SHA1.hash(data: publicKey)))
        }
        var control = item.attributes[.accessControl].flatMap { value -> StoredAccessControl? in
            guard case .data(let data) = value else { return nil }
            return StoredAccessControl(serialized: data)
        }
        let requested = control?.protection ?? item.attributes[.accessible]?.stringValue ?? "ak"
        guard let protection = TokenKeys.thisDeviceOnly(requested) else {
            throw KeychainError.parameter("unknown protection class for a token key")
        }
        item.attributes[.accessible] = .string(protection)
        if control != nil {
            control?.protection = protection
            item.attributes[.accessControl] = control.map { .data($0.serialized) }
        }
        item.data = secret
        let stored = try add(item)
        item.data = nil
        guard let identity = stored.persistentID else {
            throw KeychainError(.internalComponent, "a stored token key has no identity")
        }
        return storedTokenKeyHandle(identity)
    }

    package func useTokenKey(_ handle: Data, _ request: TokenKeyRequest) throws -> Data {
        var secret = try tokenSecret(handle, offering: request.ownerProof)
        defer { secret.resetBytes(in: 0..<secret.count) }
        let kept = try TokenKeySecret(secret)
        try Self.check(request)
        switch kept {
        case .inMemory(let key): return try Self.use(key, request)
        case .inHardware(_, let wrappedKey):
            guard let hardware = configuration.tokenKeyHardware else {
                throw KeychainError(
                    .notAvailable,
                    "the Secure Enclave key is in a TPM, and this process uses none (keychaind does)",
                    isSetupProblem: true)
            }
            return try hardware.useKey(wrappedKey, request)
        }
    }

    /// Refuses a request no key can do: a peer key that is no P-256 point, a KDF size out of
    /// range, an unknown KDF hash.
    private static func check(_ request: TokenKeyRequest) throws {
        guard request.operation == .keyExchange else { return }
        guard (try? P256.KeyAgreement.PublicKey(x963Representation: request.input)) != nil else {
            throw KeychainError.parameter("ECDH: bad public key")
        }
        let size = request.outputSize
        guard request.kdfHash == 0 || (1...(1 << 20)).contains(size) else {
            throw KeychainError.parameter("ECDHKeyExchange wrong requested size (\(size))")
        }
        guard [0, 1, 256, 384, 512].contains(request.kdfHash) else { throw KeychainError.parameter("unknown KDF hash") }
    }

    /// Runs `request` with a key held by this process.
    private static func use(_ key: P256.Signing.PrivateKey, _ request: TokenKeyRequest) throws -> Data {
        switch request.operation {
        case .sign:
            do {
                return try key.signature(for: GivenDigest(bytes: request.input)).rawRepresentation
            } catch {
                throw KeychainError.parameter("token key signing failed")
            }
        case .keyExchange:
            let shared: SharedSecret
            do {
                shared = try P256.KeyAgreement.PrivateKey(rawRepresentation: key.rawRepresentation)
                    .sharedSecretFromKeyAgreement(with: P256.KeyAgreement.PublicKey(x963Representation: request.input))
            } catch {
                throw KeychainError.parameter("ECDH: bad public key")
            }
            let size = request.outputSize
            let info = request.sharedInfo
            let derived: SymmetricKey
            switch request.kdfHash {
            case 1:
                derived = shared.x963DerivedSymmetricKey(
                    using: Insecure.SHA1.self, sharedInfo: info, outputByteCount: size)
            case 256:
                derived = shared.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: info, outputByteCount: size)
            case 384:
                derived = shared.x963DerivedSymmetricKey(using: SHA384.self, sharedInfo: info, outputByteCount: size)
            case 512:
                derived = shared.x963DerivedSymmetricKey(using: SHA512.self, sharedInfo: info, outputByteCount: size)
            default: return shared.withUnsafeBytes { Data($0) }
            }
            return derived.withUnsafeBytes { Data($0) }
        }
    }

    /// What a key that is not permanent is sealed to: this process's token-key context and the
    /// access groups of the caller that made it, so that its handle works for callers of those
    /// groups alone and is no bearer capability for any other client of the agent.
    private var sealedHandleContext: Data {
        TokenKeys.sealingContext + Data([0]) + Data(effectiveGroups.groups.sorted().joined(separator: "\n").utf8)
    }

    /// The private key a handle names: a stored token key this caller may read (its access
    /// control asking for the person, unless `proof` answers it), or a key sealed by this
    /// process for a caller of the same access groups.
    private func tokenSecret(_ handle: Data, offering proof: Data?) throws -> Data {
        let notFound = KeychainError(.itemNotFound, "the token key is not available here")
        switch handle.first {
        case TokenKeys.storedHandle?:
            guard let identity = storedTokenKeyIdentity(handle) else { throw notFound }
            // A key whose access control asks for the person asks now, as each use of an
            // Apple Secure Enclave key does (whoever hosts the engine asks, as for a read).
            var query = ItemQuery(class: .key, synchronizable: .any, persistentID: identity, limit: 1)
            query.authenticationUI = .allow
            query.ownerProof = proof
            guard let item = try find(query, includeData: true, revealingTokenKeys: true).first,
                TokenKeys.isTokenKey(item), let data = item.data
            else { throw notFound }
            return data
        case TokenKeys.sealedHandle?:
            do {
                return try Sealing.open(
                    Data(handle.dropFirst()), key: TokenKeys.processKey, context: sealedHandleContext)
            } catch {
                throw notFound
            }
        default:
            throw notFound
        }
    }
}

extension CallerKeychain: TokenKeyHolder {
    package func createTokenKey(storing template: Item?) throws -> (publicKey: Data, handle: Data) {
        try KeychainDatabase.$callerGroups.withValue(accessGroups) { try database.createTokenKey(storing: template) }
    }

    package func useTokenKey(_ handle: Data, _ request: TokenKeyRequest) throws -> Data {
        try KeychainDatabase.$callerGroups.withValue(accessGroups) { try database.useTokenKey(handle, request) }
    }

    package func storeTokenKey(_ handle: Data, as template: Item) throws -> Data {
        try KeychainDatabase.$callerGroups.withValue(accessGroups) { try database.storeTokenKey(handle, as: template) }
    }
}

/// The persistent identity a stored token key's handle names (`storedTokenKeyHandle(_:)`);
/// `nil` for any other handle.
package func storedTokenKeyIdentity(_ handle: Data) -> UUID? {
    handle.first == TokenKeys.storedHandle ? UUID(bytes: Data(handle.dropFirst())) : nil
}
