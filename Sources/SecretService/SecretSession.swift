import CLibCrypto
import Crypto
import CryptoExtras
import DBusWire
import Dispatch
import Foundation
import Synchronization

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

/// Diffie-Hellman in a finite-field group with generator 2, the shared secret left-padded to the
/// prime's length, then HKDF-SHA256 with no salt and no info to a 16-byte AES key: the Secret
/// Service's `dh-ietf1024-sha256-aes128-cbc-pkcs7` sessions in RFC 2409's Oakley group 2, as
/// libsecret, secretstorage and GNOME Keyring do, and gcr's secret exchange (`sx-aes-1`, the
/// desktop's password prompter) in RFC 3526's 1536-bit group.
///
/// swift-crypto has no finite-field Diffie-Hellman; the exponentiations are OpenSSL's
/// constant-time `BN_mod_exp_mont_consttime`, the private exponent flagged `BN_FLG_CONSTTIME`.
package struct FiniteFieldAgreement: Sendable {
    /// The name clients pass to `OpenSession`.
    package static let secretServiceAlgorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// A group: its prime, big-endian, as OpenSSL has it.
    package struct Group: Sendable {
        let prime: [UInt8]
        /// p − 1 (the primes end in 0xFF): a peer's public value must be below it.
        let primeMinusOne: [UInt8]
        var byteCount: Int { prime.count }

        init(_ make: (OpaquePointer?) -> OpaquePointer?, bits: Int) {
            let value = make(nil)
            defer { BN_free(value) }
            var bytes = [UInt8](repeating: 0, count: bits / 8)
            precondition(value != nil && BN_bn2binpad(value, &bytes, Int32(bytes.count)) == Int32(bytes.count))
            prime = bytes
            primeMinusOne = bytes.dropLast() + [bytes[bytes.count - 1] - 1]
        }

        /// RFC 2409 §6.2's group (Oakley group 2), 2^1024 − 2^960 − 1 + 2^64 · (⌊2^894 π⌋ + 129093).
        package static let oakley2 = Group(BN_get_rfc2409_prime_1024, bits: 1024)
        /// RFC 3526 §2's 1536-bit MODP group (IKE group 5).
        package static let modp1536 = Group(BN_get_rfc3526_prime_1536, bits: 1536)
    }

    /// The group agreed in.
    package let group: Group
    private let exponent: [UInt8]
    /// Our public value g^x mod p, big-endian, the prime's length.
    package let publicKey: [UInt8]

    /// An agreement with a fresh random private exponent of 256 bits (the top bit set).
    ///
    /// The group's prime is a safe prime, so an exponent of twice the group's ~80-bit strength
    /// is enough (NIST SP 800-56A rev. 3, §5.6.1.1.1); 256 bits keeps a margin and costs a quarter
    /// of a full-size exponent per session.
    package init(group: Group) {
        var bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        bytes[0] |= 0x80
        self.init(group: group, privateExponent: bytes)
        for index in bytes.indices { bytes[index] = 0 }
    }

    /// An agreement with a given private exponent (big-endian), for known-answer tests.
    init(group: Group, privateExponent: some Collection<UInt8>) {
        self.group = group
        exponent = Array(privateExponent)
        publicKey = Self.power(base: [2], exponent: exponent, in: group) ?? []
    }

    /// The AES-128 session key agreed with a peer's public value, or nil when the value is
    /// outside 2…p−2 (which would make the secret predictable).
    package func sessionKey(peerPublicKey: [UInt8]) -> SymmetricKey? {
        guard peerPublicKey.count <= 1024, !publicKey.isEmpty else { return nil }
        let significant = Array(peerPublicKey.drop { $0 == 0 })
        guard significant.count <= group.byteCount else { return nil }
        let peer = [UInt8](repeating: 0, count: group.byteCount - significant.count) + significant
        // Big-endian arrays of equal length compare as the numbers they hold.
        guard significant.count > 1 || (significant.first ?? 0) > 1, peer.lexicographicallyPrecedes(group.primeMinusOne)
        else { return nil }
        guard let secret = Self.power(base: peer, exponent: exponent, in: group) else { return nil }
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secret), info: Data(), outputByteCount: 16)
    }

    /// `base`^`exponent` mod the group's prime, as big-endian bytes of the prime's length
    /// (leading zero bytes kept), by OpenSSL's constant-time Montgomery exponentiation; nil if
    /// OpenSSL fails (out of memory).
    static func power(base: [UInt8], exponent: [UInt8], in group: Group) -> [UInt8]? {
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        let modulus = BN_bin2bn(group.prime, Int32(group.byteCount), nil)
        let base = BN_bin2bn(base, Int32(base.count), nil)
        let secret = BN_secure_new()
        let result = BN_new()
        let montgomery = BN_MONT_CTX_new()
        defer {
            BN_free(modulus)
            BN_free(base)
            BN_clear_free(secret)
            BN_clear_free(result)
            BN_MONT_CTX_free(montgomery)
        }
        guard let modulus, let base, let secret, let result, let montgomery,
            BN_bin2bn(exponent, Int32(exponent.count), secret) != nil,
            BN_MONT_CTX_set(montgomery, modulus, context) == 1
        else { return nil }
        BN_set_flags(secret, BN_FLG_CONSTTIME)
        guard BN_mod_exp_mont_consttime(result, base, secret, modulus, context, montgomery) == 1 else { return nil }
        var bytes = [UInt8](repeating: 0, count: group.byteCount)
        guard BN_bn2binpad(result, &bytes, Int32(group.byteCount)) == Int32(group.byteCount) else { return nil }
        return bytes
    }
}

/// Where `OpenSession`'s Diffie-Hellman runs: on a queue of its own, one agreement at a time,
/// never on the bus connection's event loop, which every client's calls share; and at most
/// ``perCaller`` agreements of one client at once, so a flood from one client never queues
/// the others' sessions behind thousands of its own.
final class DiffieHellmanAgreements: Sendable {
    /// The most agreements one client may have waiting or running.
    static let perCaller = 4

    private let queue = DispatchQueue(label: "secret-service.diffie-hellman", qos: .userInitiated)
    private let pending = Mutex<[String: Int]>([:])

    /// Our public value and the session key agreed with `peerPublicKey` (nil when that value is
    /// out of range), for the client `caller`.
    /// - Throws: `LimitsExceeded` when `caller` already has ``perCaller`` agreements under way.
    func agree(peerPublicKey: [UInt8], for caller: String) async throws -> (publicKey: [UInt8], key: SymmetricKey?) {
        let admitted = pending.withLock { pending in
            guard pending[caller, default: 0] < Self.perCaller else { return false }
            pending[caller, default: 0] += 1
            return true
        }
        guard admitted else {
            throw DBusError.method(DBusErrorName.limitsExceeded, "too many sessions being opened at once")
        }
        defer {
            pending.withLock { pending in
                pending[caller, default: 1] -= 1
                if pending[caller] == 0 { pending[caller] = nil }
            }
        }
        return await withCheckedContinuation { continuation in
            queue.async {
                let agreement = FiniteFieldAgreement(group: .oakley2)
                continuation.resume(
                    returning: (agreement.publicKey, agreement.sessionKey(peerPublicKey: peerPublicKey)))
            }
        }
    }
}
