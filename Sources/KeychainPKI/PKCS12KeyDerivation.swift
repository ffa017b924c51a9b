import Crypto
import CryptoExtras
import Foundation

/// The key derivations PKCS#12 uses, built on swift-crypto's hash functions and PBKDF2.
enum PKCS12KeyDerivation {
    /// RFC 7292 appendix B.2 purpose IDs.
    enum Purpose: UInt8 {
        case encryptionKey = 1
        case iv = 2
        case macKey = 3
    }

    /// The passphrase as RFC 7292 appendix B.1 wants it for the KDF: a BMPString (UTF-16BE)
    /// followed by two zero bytes.
    static func bmpPassword(_ passphrase: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for unit in passphrase.utf16 { bytes += [UInt8(unit >> 8), UInt8(unit & 0xff)] }
        return bytes + [0, 0]
    }

    /// RFC 7292 appendix B.2, over hash function `H` (a construction over swift-crypto's hash,
    /// not a primitive of its own).
    static func derive<H: HashFunction>(
        _: H.Type, purpose: Purpose, password: [UInt8], salt: [UInt8], iterations: Int, count: Int
    ) -> [UInt8] {
        let u = H.Digest.byteCount
        let v = H.blockByteCount
        let diversifier = [UInt8](repeating: purpose.rawValue, count: v)
        var input = extend(salt, to: v) + extend(password, to: v)
        var output: [UInt8] = []
        output.reserveCapacity(count + u)
        while true {
            var hasher = H()
            hasher.update(data: diversifier)
            hasher.update(data: input)
            var digest = hasher.finalize()
            for _ in 1..<max(iterations, 1) { digest = digest.withUnsafeBytes { H.hash(data: $0) } }
            let block = Array(digest)
            output += block
            if output.count >= count { return Array(output.prefix(count)) }
            let b = (0..<v).map { block[$0 % u] }
            for start in stride(from: 0, to: input.count, by: v) { addOne(b, to: &input, at: start, length: v) }
        }
    }

    /// `S` or `P` of B.2 step 2–3: copies of `bytes` filling a multiple of `v` bytes.
    private static func extend(_ bytes: [UInt8], to v: Int) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        let length = v * ((bytes.count + v - 1) / v)
        return (0..<length).map { bytes[$0 % bytes.count] }
    }

    /// `I_j = (I_j + B + 1) mod 2^(8v)`, big-endian.
    private static func addOne(_ b: [UInt8], to input: inout [UInt8], at start: Int, length: Int) {
        var carry = 1
        for offset in stride(from: length - 1, through: 0, by: -1) {
            let sum = Int(input[start + offset]) + Int(b[offset]) + carry
            input[start + offset] = UInt8(sum & 0xff)
            carry = sum >> 8
        }
    }

    /// PBKDF2 through swift-crypto.
    static func pbkdf2(
        password: [UInt8], salt: [UInt8], prf: KDF.Insecure.PBKDF2.HashFunction, iterations: Int, count: Int
    ) throws -> SymmetricKey {
        do {
            return try KDF.Insecure.PBKDF2.deriveKey(
                from: password, salt: salt, using: prf, outputByteCount: count, unsafeUncheckedRounds: iterations)
        } catch {
            throw PKIError(.unsupportedAlgorithm, "PBKDF2 refused its parameters")
        }
    }
}

/// A MAC or PRF digest of PKCS#12.
enum PKCS12Digest: Sendable {
    case sha1, sha256, sha384, sha512

    init(digestOID oid: String) throws {
        switch oid {
        case OID.sha1.description: self = .sha1
        case OID.sha256.description: self = .sha256
        case OID.sha384.description: self = .sha384
        case OID.sha512.description: self = .sha512
        default: throw PKIError(.unsupportedAlgorithm, "MAC digest \(oid) is not supported (SHA-1/256/384/512 are)")
        }
    }

    var oid: String {
        switch self {
        case .sha1: return OID.sha1.description
        case .sha256: return OID.sha256.description
        case .sha384: return OID.sha384.description
        case .sha512: return OID.sha512.description
        }
    }

    /// The HMAC key of the PKCS#12 MAC (KDF purpose 3, key as long as the digest).
    func macKey(password: [UInt8], salt: [UInt8], iterations: Int) -> SymmetricKey {
        let bytes: [UInt8]
        switch self {
        case .sha1:
            bytes = PKCS12KeyDerivation.derive(
                Insecure.SHA1.self, purpose: .macKey, password: password, salt: salt, iterations: iterations, count: 20)
        case .sha256:
            bytes = PKCS12KeyDerivation.derive(
                SHA256.self, purpose: .macKey, password: password, salt: salt, iterations: iterations, count: 32)
        case .sha384:
            bytes = PKCS12KeyDerivation.derive(
                SHA384.self, purpose: .macKey, password: password, salt: salt, iterations: iterations, count: 48)
        case .sha512:
            bytes = PKCS12KeyDerivation.derive(
                SHA512.self, purpose: .macKey, password: password, salt: salt, iterations: iterations, count: 64)
        }
        return SymmetricKey(data: bytes)
    }

    func hmac(_ data: [UInt8], key: SymmetricKey) -> [UInt8] {
        switch self {
        case .sha1: return Array(HMAC<Insecure.SHA1>.authenticationCode(for: data, using: key))
        case .sha256: return Array(HMAC<SHA256>.authenticationCode(for: data, using: key))
        case .sha384: return Array(HMAC<SHA384>.authenticationCode(for: data, using: key))
        case .sha512: return Array(HMAC<SHA512>.authenticationCode(for: data, using: key))
        }
    }

    func isValid(_ mac: [UInt8], for data: [UInt8], key: SymmetricKey) -> Bool {
        switch self {
        case .sha1: return HMAC<Insecure.SHA1>.isValidAuthenticationCode(mac, authenticating: data, using: key)
        case .sha256: return HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: data, using: key)
        case .sha384: return HMAC<SHA384>.isValidAuthenticationCode(mac, authenticating: data, using: key)
        case .sha512: return HMAC<SHA512>.isValidAuthenticationCode(mac, authenticating: data, using: key)
        }
    }
}
