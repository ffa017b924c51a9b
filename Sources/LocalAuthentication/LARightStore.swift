import Foundation
import Security

/// Where rights are kept with what they guard, as Apple's
/// ([`LARightStore`](https://developer.apple.com/documentation/localauthentication/larightstore)):
///
/// ```swift
/// _ = try await LARightStore.shared.saveRight(LARight(), identifier: "access-token", secret: token)
/// let right = try await LARightStore.shared.right(forIdentifier: "access-token")
/// try await right.authorize(localizedReason: "Sign in to the server")
/// let token = try await right.secret.rawData
/// ```
///
/// On Linux a right is two items of the app's default keychain (docs/local-authentication.md):
/// a record anyone of the app's access group may read (the requirement and the public key), and
/// the guarded item (the private key and the secret), whose access control is the requirement's
/// (`.userPresence` for ``LAAuthenticationRequirement/default``, biometry for the others), read
/// with the right's authorized context. Apple keeps the key in the Secure Enclave; here it is
/// sealed in the keychain as every item is. Errors of the keychain keep its codes
/// (`NSOSStatusErrorDomain`): a right not found is `errSecItemNotFound`, an identifier in use
/// `errSecDuplicateItem` (Apple documents neither).
public final class LARightStore: NSObject, Sendable {
    /// The services of the two items (``LARightStore``).
    static let recordService = "org.keychainlinux.LARightStore"
    static let guardedService = "org.keychainlinux.LARightStore.guarded"

    override init() { super.init() }

    /// The store of this app's rights.
    public static let shared = LARightStore()

    /// The right saved as `identifier`, not authorized yet.
    /// - Throws: `errSecItemNotFound` (`NSOSStatusErrorDomain`) when there is none.
    public func right(forIdentifier identifier: String) async throws -> LAPersistedRight {
        let record = try PersistedRecord.read(identifier)
        return LAPersistedRight(identifier: identifier, record: record)
    }

    /// ``right(forIdentifier:)``, calling `handler` with the right or the error.
    public func right(
        forIdentifier identifier: String,
        completion handler: @escaping @Sendable (LAPersistedRight?, (any Error)?) -> Void
    ) {
        Task.detached { await Self.reply(handler) { try await self.right(forIdentifier: identifier) } }
    }

    /// Saves `right` as `identifier`, with a new key and no secret.
    public func saveRight(_ right: LARight, identifier: String) async throws -> LAPersistedRight {
        try await saveRight(right, identifier: identifier, secret: Data())
    }

    /// ``saveRight(_:identifier:)``, calling `handler` with the saved right or the error.
    public func saveRight(
        _ right: LARight, identifier: String,
        completion handler: @escaping @Sendable (LAPersistedRight?, (any Error)?) -> Void
    ) {
        Task.detached { await Self.reply(handler) { try await self.saveRight(right, identifier: identifier) } }
    }

    /// Saves `right` as `identifier`, with a new key and `secret`, which only the authorized
    /// right reads back. The saved right keeps `right`'s authorization.
    /// - Throws: `errSecDuplicateItem` when a right is saved as `identifier` already; the
    ///   keychain's error when it refuses (`errSecAuthFailed` for a `.biometryCurrentSet`
    ///   requirement with no finger enrolled).
    public func saveRight(_ right: LARight, identifier: String, secret: Data) async throws -> LAPersistedRight {
        let record = try PersistedRecord.create(identifier, requirement: right.requirement, secret: secret)
        let persisted = LAPersistedRight(identifier: identifier, record: record)
        persisted.adoptAuthorization(of: right)
        return persisted
    }

    /// ``saveRight(_:identifier:secret:)``, calling `handler` with the saved right or the error.
    public func saveRight(
        _ right: LARight, identifier: String, secret: Data,
        completion handler: @escaping @Sendable (LAPersistedRight?, (any Error)?) -> Void
    ) {
        Task.detached {
            await Self.reply(handler) { try await self.saveRight(right, identifier: identifier, secret: secret) }
        }
    }

    /// Removes `right`, its key and its secret.
    public func removeRight(_ right: LAPersistedRight) async throws {
        try await removeRight(forIdentifier: right.identifier)
        await right.deauthorize()
    }

    /// ``removeRight(_:)``, calling `handler` with its error.
    public func removeRight(_ right: LAPersistedRight, completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Task.detached { await Self.reply(handler) { try await self.removeRight(right) } }
    }

    /// Removes the right saved as `identifier`, its key and its secret.
    /// - Throws: `errSecItemNotFound` when there is none.
    public func removeRight(forIdentifier identifier: String) async throws {
        try PersistedRecord.remove(identifier)
    }

    /// ``removeRight(forIdentifier:)``, calling `handler` with its error.
    public func removeRight(
        forIdentifier identifier: String, completion handler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        Task.detached { await Self.reply(handler) { try await self.removeRight(forIdentifier: identifier) } }
    }

    /// Removes every right of this app, with their keys and secrets.
    public func removeAllRights() async throws {
        try PersistedRecord.remove(nil)
    }

    /// ``removeAllRights()``, calling `handler` with its error.
    public func removeAllRights(completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Task.detached { await Self.reply(handler) { try await self.removeAllRights() } }
    }

    /// Calls `handler` with what `body` returned or threw.
    static func reply<T>(
        _ handler: @Sendable (T?, (any Error)?) -> Void, _ body: () async throws -> T
    ) async {
        do {
            handler(try await body(), nil)
        } catch {
            handler(nil, error)
        }
    }

    /// Calls `handler` with what `body` threw, or `nil`.
    static func reply(_ handler: @Sendable ((any Error)?) -> Void, _ body: () async throws -> Void) async {
        do {
            try await body()
            handler(nil)
        } catch {
            handler(error)
        }
    }
}

/// A right kept in ``LARightStore``, with its key and secret, which are reached only while it is
/// authorized, as Apple's
/// ([`LAPersistedRight`](https://developer.apple.com/documentation/localauthentication/lapersistedright)).
public final class LAPersistedRight: LARight, @unchecked Sendable {
    /// The identifier it is saved as.
    let identifier: String

    /// The right's private key: signing, decrypting and key exchange need the right authorized;
    /// its public key does not.
    public let key: LAPrivateKey

    /// The secret saved with the right, read only while it is authorized.
    public let secret: LASecret

    init(identifier: String, record: PersistedRecord) {
        self.identifier = identifier
        let guarded = GuardedItem(identifier: identifier)
        key = LAPrivateKey(publicKey: LAPublicKey(record.publicKey), guarded: guarded)
        secret = LASecret(guarded: guarded)
        super.init(requirement: record.requirement)
        guarded.right = self
    }
}

/// Data guarded by an ``LAPersistedRight``, as Apple's
/// ([`LASecret`](https://developer.apple.com/documentation/localauthentication/lasecret)).
public final class LASecret: NSObject, Sendable {
    let guarded: GuardedItem

    init(guarded: GuardedItem) {
        self.guarded = guarded
        super.init()
    }

    /// The secret.
    /// - Throws: ``LAError`` `.notInteractive` while the right is not authorized; the keychain's
    ///   error when it cannot be read.
    public var rawData: Data {
        get async throws { try guarded.open().secret }
    }

    /// ``rawData``, calling `handler` with it or the error.
    public func loadData(completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        Task.detached { await LARightStore.reply(handler) { try await self.rawData } }
    }
}

/// The private key of an ``LAPersistedRight`` (P-256), as Apple's
/// ([`LAPrivateKey`](https://developer.apple.com/documentation/localauthentication/laprivatekey)):
/// each use reads it with the right's authorized context.
public final class LAPrivateKey: NSObject, Sendable {
    /// The key's public half.
    public let publicKey: LAPublicKey
    let guarded: GuardedItem

    init(publicKey: LAPublicKey, guarded: GuardedItem) {
        self.publicKey = publicKey
        self.guarded = guarded
        super.init()
    }

    /// Signs `data` with `algorithm` (an ECDSA one, as `SecKeyCreateSignature` takes).
    /// - Throws: ``LAError`` `.notInteractive` while the right is not authorized; the key's error.
    public func sign(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        try using { SecKeyCreateSignature($0, algorithm, data as CFData, &$1) }
    }

    /// What `operation` makes with the private key, read with the right's authorized context.
    private func using(_ operation: (SecKey, inout Unmanaged<CFError>?) -> CFData?) throws -> Data {
        let key = try guarded.open().privateKey
        var error: Unmanaged<CFError>?
        guard let made = operation(key, &error) else { throw Self.failure(error) }
        return made as Data
    }

    /// ``sign(_:algorithm:)``, calling `handler` with the signature or the error.
    public func sign(
        _ data: Data, algorithm: SecKeyAlgorithm, completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        Task.detached { await LARightStore.reply(handler) { try await self.sign(data, algorithm: algorithm) } }
    }

    /// Whether the key signs with `algorithm`.
    public func canSign(using algorithm: SecKeyAlgorithm) -> Bool {
        publicKey.supports(.sign, algorithm)
    }

    /// Decrypts `data`, encrypted for the public key with `algorithm` (ECIES).
    public func decrypt(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        try using { SecKeyCreateDecryptedData($0, algorithm, data as CFData, &$1) }
    }

    /// ``decrypt(_:algorithm:)``, calling `handler` with the plaintext or the error.
    public func decrypt(
        _ data: Data, algorithm: SecKeyAlgorithm, completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        Task.detached { await LARightStore.reply(handler) { try await self.decrypt(data, algorithm: algorithm) } }
    }

    /// Whether the key decrypts with `algorithm`.
    public func canDecrypt(using algorithm: SecKeyAlgorithm) -> Bool {
        publicKey.supports(.decrypt, algorithm)
    }

    /// Agrees a key with `publicKey` (the other party's, in X9.63 form) by `algorithm`.
    public func exchangeKeys(publicKey: Data, algorithm: SecKeyAlgorithm, parameters: [AnyHashable: Any]) async throws
        -> Data
    {
        var error: Unmanaged<CFError>?
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic,
        ]
        guard let other = SecKeyCreateWithData(publicKey as CFData, attributes as CFDictionary, &error) else {
            throw Self.failure(error)
        }
        let options = (parameters as? [CFString: Any]) ?? [:]
        return try using { SecKeyCopyKeyExchangeResult($0, algorithm, other, options as CFDictionary, &$1) }
    }

    /// ``exchangeKeys(publicKey:algorithm:parameters:)``, calling `handler` with the agreed
    /// key or the error.
    public func exchangeKeys(
        publicKey: Data, algorithm: SecKeyAlgorithm, parameters: [AnyHashable: Any],
        completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        nonisolated(unsafe) let parameters = parameters
        Task.detached {
            await LARightStore.reply(handler) {
                try await self.exchangeKeys(publicKey: publicKey, algorithm: algorithm, parameters: parameters)
            }
        }
    }

    /// Whether the key agrees keys with `algorithm`.
    public func canExchangeKeys(using algorithm: SecKeyAlgorithm) -> Bool {
        publicKey.supports(.keyExchange, algorithm)
    }

    /// The error a `SecKey` call reported.
    static func failure(_ error: Unmanaged<CFError>?) -> any Error {
        error.map { $0.takeRetainedValue() as any Error } ?? NSError(domain: NSOSStatusErrorDomain, code: -50)
    }
}

/// The public key of an ``LAPersistedRight``, as Apple's
/// ([`LAPublicKey`](https://developer.apple.com/documentation/localauthentication/lapublickey)):
/// it asks for nothing.
public final class LAPublicKey: NSObject, @unchecked Sendable {
    /// The key in X9.63 form (`04 ‖ X ‖ Y`).
    let external: Data
    let key: SecKey

    init(_ external: Data) {
        self.external = external
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic,
        ]
        // The record was checked when read: 65 bytes of a P-256 point.
        key = SecKeyCreateWithData(external as CFData, attributes as CFDictionary, nil)!
        super.init()
    }

    /// The key in X9.63 form, as `SecKeyCopyExternalRepresentation` gives it.
    public var bytes: Data {
        get async throws { external }
    }

    /// ``bytes``, calling `handler` with them.
    public func exportBytes(completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void) {
        Task.detached { await LARightStore.reply(handler) { try await self.bytes } }
    }

    /// Encrypts `data` for the private key with `algorithm` (ECIES).
    public func encrypt(_ data: Data, algorithm: SecKeyAlgorithm) async throws -> Data {
        var error: Unmanaged<CFError>?
        guard let sealed = SecKeyCreateEncryptedData(key, algorithm, data as CFData, &error) else {
            throw LAPrivateKey.failure(error)
        }
        return sealed as Data
    }

    /// ``encrypt(_:algorithm:)``, calling `handler` with the ciphertext or the error.
    public func encrypt(
        _ data: Data, algorithm: SecKeyAlgorithm, completion handler: @escaping @Sendable (Data?, (any Error)?) -> Void
    ) {
        Task.detached { await LARightStore.reply(handler) { try await self.encrypt(data, algorithm: algorithm) } }
    }

    /// Whether the key encrypts with `algorithm`.
    public func canEncrypt(using algorithm: SecKeyAlgorithm) -> Bool { supports(.encrypt, algorithm) }

    /// Checks `signature` over `signedData` by `algorithm`.
    /// - Throws: The key's error when the signature does not verify.
    public func verify(_ signedData: Data, signature: Data, algorithm: SecKeyAlgorithm) async throws {
        var error: Unmanaged<CFError>?
        guard SecKeyVerifySignature(key, algorithm, signedData as CFData, signature as CFData, &error) else {
            throw LAPrivateKey.failure(error)
        }
    }

    /// ``verify(_:signature:algorithm:)``, calling `handler` with its error (`nil` when the
    /// signature verifies).
    public func verify(
        _ signedData: Data, signature: Data, algorithm: SecKeyAlgorithm,
        completion handler: @escaping @Sendable ((any Error)?) -> Void
    ) {
        Task.detached {
            await LARightStore.reply(handler) {
                try await self.verify(signedData, signature: signature, algorithm: algorithm)
            }
        }
    }

    /// Whether the key verifies with `algorithm`.
    public func canVerify(using algorithm: SecKeyAlgorithm) -> Bool { supports(.verify, algorithm) }

    /// Whether the key pair does `operation` with `algorithm`. The private key is read only while
    /// the right is authorized, so its operations are asked of the public key in the other
    /// direction (signing as verifying, decrypting as encrypting); key exchange is ECDH's.
    func supports(_ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm) -> Bool {
        switch operation {
        case .sign: SecKeyIsAlgorithmSupported(key, .verify, algorithm)
        case .decrypt: SecKeyIsAlgorithmSupported(key, .encrypt, algorithm)
        case .keyExchange: algorithm.rawValue.hasPrefix("algid:keyexchange:ECDH")
        default: SecKeyIsAlgorithmSupported(key, operation, algorithm)
        }
    }
}
