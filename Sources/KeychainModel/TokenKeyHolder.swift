import Foundation

// Token keys (`kSecAttrTokenIDSecureEnclave`; docs/keys-and-certificates.md, "Secure Enclave
// keys"): what a caller may ask of a token key, and who holds them. The keys themselves, and
// what is done with them, are the engine's (KeychainCore's TokenKeys.swift).

/// Token keys: the Secure Enclave's token identifier and what a caller may ask of a token key.
package enum TokenKeys {
    /// `kSecAttrTokenIDSecureEnclave`.
    package static let secureEnclave = "com.apple.setoken"

    /// The first byte of a handle that names a stored key by its persistent identity.
    package static let storedHandle: UInt8 = 1

    /// The application tag (`kSecAttrApplicationTag`) of the token keys that are SSH keys:
    /// keychaind's SSH agent lists and signs with them (`security create-ssh-key` makes one).
    package static let sshApplicationTag = Data("com.keychainlinux.ssh".utf8)

    /// `kSecAttrAccessControl`'s `privateKeyUsage` flag: the key may be used, which asks for no
    /// authentication.
    package static let privateKeyUsageFlag: UInt64 = 1 << 30
}

/// An operation a token key performs for its caller.
package struct TokenKeyRequest: Sendable, Equatable {
    /// What to do.
    package enum Operation: UInt8, Sendable {
        /// An ECDSA signature over ``TokenKeyRequest/input`` (a digest of any length): `r‖s`,
        /// 64 bytes.
        case sign = 1
        /// ECDH with the peer's X9.63 public key in ``TokenKeyRequest/input``: the shared
        /// x-coordinate, or, with a ``TokenKeyRequest/kdfHash``, the X9.63 KDF's output.
        case keyExchange = 2
    }

    /// What to do.
    package var operation: Operation
    /// The digest to sign, or the peer's public key.
    package var input: Data
    /// For a key exchange, the X9.63 KDF's hash in bits (1 for SHA-1, 256, 384, 512), or 0 for
    /// the shared secret itself.
    package var kdfHash: Int
    /// The KDF's shared info.
    package var sharedInfo: Data
    /// The KDF's output size in bytes.
    package var outputSize: Int
    /// The proof of an evaluated `LAContext` the key was found with (``ItemQuery/ownerProof``):
    /// it spares the use the question the key's access control asks, while it lasts.
    package var ownerProof: Data?

    /// A request.
    package init(_ operation: Operation, input: Data, kdfHash: Int = 0, sharedInfo: Data = Data(), outputSize: Int = 0)
    {
        self.operation = operation
        self.input = input
        self.kdfHash = kdfHash
        self.sharedInfo = sharedInfo
        self.outputSize = outputSize
    }
}

/// What holds token keys: the engine (in this process) or the agent's client. Each operation
/// runs where the keychain's keys are.
package protocol TokenKeyHolder: AnyObject, Sendable {
    /// Generates a P-256 token key; with `template`, stores it as that key item (its class and
    /// attributes; `tkid`, `klbl` when absent, and a "this device only" protection are set here).
    /// - Returns: The public key `04‖X‖Y` and the key's handle.
    func createTokenKey(storing template: Item?) throws -> (publicKey: Data, handle: Data)
    /// Runs `request` with the token key `handle` names.
    /// - Throws: ``KeychainError``: `.itemNotFound` when the handle names no token key here.
    func useTokenKey(_ handle: Data, _ request: TokenKeyRequest) throws -> Data
    /// Stores the token key `handle` names (one not permanent, made by this holder) as the key
    /// item `template`, as ``createTokenKey(storing:)`` stores a new one.
    /// - Returns: The stored key's handle.
    /// - Throws: ``KeychainError``: `.itemNotFound` when the handle names no token key here,
    ///   `.duplicateItem`.
    func storeTokenKey(_ handle: Data, as template: Item) throws -> Data
}

/// The handle of a stored token key: its persistent identity.
package func storedTokenKeyHandle(_ identity: UUID) -> Data {
    Data([TokenKeys.storedHandle]) + withUnsafeBytes(of: identity.uuid) { Data($0) }
}

/// Hardware that makes and uses token keys, so that their private keys never exist outside it:
/// a TPM 2.0 (`KeychainTPM`'s `TPMSecureEnclave`). The keychain keeps only the key's wrapped
/// form, which this hardware alone can use.
///
/// A conforming type throws ``KeychainError`` only: `.notAvailable` when no hardware answers,
/// or (with ``KeychainError/isSetupProblem``) when the key was made by other hardware (another
/// machine, or this TPM cleared); `.decode` for a malformed wrapped key; `.parameter` for a
/// request the key cannot do.
package protocol TokenKeyHardware: Sendable {
    /// What it is and where, for the user: `the TPM 2.0 at device:/dev/tpmrm0`.
    var name: String { get }
    /// Makes a P-256 key inside the hardware.
    /// - Returns: Its public key `04‖X‖Y` and its wrapped form.
    func createKey() throws -> (publicKey: Data, wrappedKey: Data)
    /// Runs `request` (a peer key already checked to be a P-256 point) with the key `wrappedKey`
    /// holds, as ``TokenKeyHolder/useTokenKey(_:_:)`` describes its result.
    func useKey(_ wrappedKey: Data, _ request: TokenKeyRequest) throws -> Data
}
