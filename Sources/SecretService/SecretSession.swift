import BigInt
import Crypto
import CryptoExtras
import Foundation

/// An open Secret Service session: who opened it and how its secrets cross the bus.
///
/// A `plain` session sends secrets as they are; a `dh-ietf1024-sha256-aes128-cbc-pkcs7` session
/// encrypts each one with the AES-128 key both ends derived from a Diffie-Hellman exchange, with a
/// fresh IV in the secret's `parameters`
/// ([Secret Service API, Transfer of Secrets](https://specifications.freedesktop.org/secret-service/latest/transfer-secrets.html)).
struct SecretSession: Sendable {
    /// The unique bus name of the caller that opened the session.
    let owner: String
    /// The session key, or nil for `plain`.
    let key: SymmetricKey?

    /// The `(parameters, value)` of a secret sent to the session's owner; an encrypted session
    /// uses `iv`, or a fresh random one (a plain session draws none).
    func seal(_ secret: Data, iv: AES._CBC.IV? = nil) throws -> (parameters: [UInt8], value: [UInt8]) {
        guard let key else { return ([], Array(secret)) }
        let iv = iv ?? AES._CBC.IV()
        return (Array(iv), Array(try AES._CBC.encrypt(secret, using: key, iv: iv)))
    }

    /// The secret in a `(parameters, value)` pair the owner sent, or nil when it does not decrypt.
    func open(parameters: [UInt8], value: [UInt8]) -> Data? {
        guard let key else { return parameters.isEmpty ? Data(value) : nil }
        guard parameters.count == 16, !value.isEmpty, value.count % 16 == 0,
            let iv = try? AES._CBC.IV(ivBytes: parameters)
        else { return nil }
        // swift-crypto checks the PKCS#7 padding (1–16 bytes, all equal) and throws otherwise.
        return try? AES._CBC.decrypt(value, using: key, iv: iv)
    }
}

/// The `dh-ietf1024-sha256-aes128-cbc-pkcs7` key agreement: Diffie-Hellman in RFC 2409's
/// Oakley group 2 (g = 2), the shared secret left-padded to 128 bytes, then HKDF-SHA256 with no
/// salt and no info to a 16-byte AES key, as libsecret, secretstorage and GNOME Keyring do.
///
/// swift-crypto has no finite-field Diffie-Hellman; the modular exponentiation is BigInt's
/// `power(_:modulus:)`, which is not constant-time (docs/security-model.md says so; each
/// session uses a fresh exponent once).
struct OakleyGroup2Agreement {
    /// The name clients pass to `OpenSession`.
    static let algorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// RFC 2409 §6.2: 2^1024 − 2^960 − 1 + 2^64 · (⌊2^894 π⌋ + 129093).
    static let prime = BigUInt(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
            + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
            + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", radix: 16)!
    static let byteCount = 128

    private let exponent: BigUInt

    /// An agreement with a fresh random private exponent of 256 bits (the top bit set).
    ///
    /// The group's prime is a safe prime, so an exponent of twice the group's ~80-bit strength
    /// is enough (NIST SP 800-56A rev. 3, §5.6.1.1.1); 256 bits keeps a margin and costs a quarter
    /// of a full-size exponent per session.
    init() {
        var bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        bytes[0] |= 0x80
        self.init(privateExponent: bytes)
        bytes.resetBytes(in: 0..<bytes.count)
    }

    /// An agreement with a given private exponent (big-endian), for known-answer tests.
    init(privateExponent: Data) {
        exponent = BigUInt(privateExponent)
    }

    /// Our public value g^x mod p, big-endian, 128 bytes.
    var publicKey: [UInt8] { Self.padded(BigUInt(2).power(exponent, modulus: Self.prime)) }

    /// The AES-128 session key agreed with a peer's public value, or nil when the value is
    /// outside 2…p−2 (which would make the secret predictable).
    func sessionKey(peerPublicKey: [UInt8]) -> SymmetricKey? {
        guard peerPublicKey.count <= 1024 else { return nil }
        let peer = BigUInt(Data(peerPublicKey))
        guard peer > 1, peer < Self.prime - 1 else { return nil }
        let secret = Self.padded(peer.power(exponent, modulus: Self.prime))
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secret), info: Data(), outputByteCount: 16)
    }

    /// `value` as exactly 128 big-endian bytes (a shared secret with leading zero bytes keeps them).
    static func padded(_ value: BigUInt) -> [UInt8] {
        let bytes = Array(value.serialize())
        return [UInt8](repeating: 0, count: max(0, byteCount - bytes.count)) + bytes
    }
}
