import Crypto
import CryptoExtras
import SwiftASN1

/// PBES2 (RFC 8018 §6.2) with PBKDF2 and AES-CBC: the only encryption this module reads.
struct PBES2Parameters {
    var salt: [UInt8]
    var iterations: Int
    var prf: KDF.Insecure.PBKDF2.HashFunction
    var keyLength: Int
    var iv: [UInt8]

    /// The legacy cipher of a PBES2 scheme (DES-EDE3-CBC, DES-CBC, RC2-CBC), which OpenSSL
    /// decrypts (``LegacyEncryption``); nil for AES-CBC.
    var legacyCipher: String?

    /// Reads a PBES2 AlgorithmIdentifier (legacy PKCS#12 PBE and PBES1 are ``LegacyEncryption``'s).
    init(_ algorithm: AlgorithmIdentifier, maximumIterations: Int) throws {
        guard algorithm.oid == OID.pbes2.description else {
            throw PKIError(.unsupportedAlgorithm, "encryption \(algorithm.oid) is not supported (PBES2 is)")
        }
        guard let parameters = algorithm.parameters else { throw PKIError.malformed("PBES2: parameters missing") }
        var fields = try NodeList(parseBER(parameters[...], "PBES2-params"), .sequence, "PBES2-params")
        let kdf = try AlgorithmIdentifier(node: fields.next(), "PBES2.keyDerivationFunc")
        let scheme = try AlgorithmIdentifier(node: fields.next(), "PBES2.encryptionScheme")
        try fields.finish()
        legacyCipher = LegacyEncryption.pbes2Ciphers[scheme.oid]
        (keyLength, iv) = legacyCipher == nil ? try Self.cipher(scheme) : (0, [])
        guard kdf.oid == OID.pbkdf2.description, let kdfParameters = kdf.parameters else {
            throw PKIError(.unsupportedAlgorithm, "PBES2 key derivation \(kdf.oid) is not supported (PBKDF2 is)")
        }
        var pbkdf2 = try NodeList(parseBER(kdfParameters[...], "PBKDF2-params"), .sequence, "PBKDF2-params")
        salt = try octetStringBytes(pbkdf2.next(), ber: true, "PBKDF2.salt")
        iterations = try smallInteger(pbkdf2.next(), limit: maximumIterations, "PBKDF2.iterationCount")
        guard iterations >= 1 else { throw PKIError.malformed("PBKDF2: iteration count 0") }
        if let length = pbkdf2.optional(.integer) {
            guard try smallInteger(length, limit: 64, "PBKDF2.keyLength") == keyLength || legacyCipher != nil else {
                throw PKIError.malformed("PBKDF2: key length does not match the cipher")
            }
        }
        prf = .insecureSHA1
        if !pbkdf2.isAtEnd { prf = try Self.prf(AlgorithmIdentifier(node: pbkdf2.next(), "PBKDF2.prf").oid) }
        try pbkdf2.finish()
    }

    private static func cipher(_ scheme: AlgorithmIdentifier) throws -> (Int, [UInt8]) {
        let length: Int
        switch scheme.oid {
        case OID.aes128CBC.description: length = 16
        case OID.aes192CBC.description: length = 24
        case OID.aes256CBC.description: length = 32
        default: throw PKIError(.unsupportedAlgorithm, "PBES2 cipher \(scheme.oid) is not supported (AES-CBC is)")
        }
        guard let parameters = scheme.parameters else { throw PKIError.malformed("AES-CBC: IV missing") }
        let iv = try octetStringBytes(parseBER(parameters[...], "AES-CBC IV"), ber: true, "AES-CBC IV")
        guard iv.count == 16 else { throw PKIError.malformed("AES-CBC: IV of \(iv.count) bytes") }
        return (length, iv)
    }

    private static func prf(_ oid: String) throws -> KDF.Insecure.PBKDF2.HashFunction {
        switch oid {
        case OID.hmacWithSHA1.description: return .insecureSHA1
        case OID.hmacWithSHA224.description: return .insecureSHA224
        case OID.hmacWithSHA256.description: return .sha256
        case OID.hmacWithSHA384.description: return .sha384
        case OID.hmacWithSHA512.description: return .sha512
        default: throw PKIError(.unsupportedAlgorithm, "PBKDF2 PRF \(oid) is not supported")
        }
    }

    /// Decrypts with the passphrase's UTF-8 bytes (as OpenSSL and RFC 8018 use them).
    func decrypt(_ ciphertext: [UInt8], passphrase: [UInt8]) throws -> [UInt8] {
        let key = try PKCS12KeyDerivation.pbkdf2(
            password: passphrase, salt: salt, prf: prf, iterations: iterations, count: keyLength)
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw PKIError.malformed("AES-CBC: ciphertext is not a whole number of blocks")
        }
        do {
            return Array(try AES._CBC.decrypt(ciphertext, using: key, iv: AES._CBC.IV(ivBytes: iv)))
        } catch {
            throw PKIError.malformed(
                "AES-CBC: decryption failed (bad padding: a different passphrase or a damaged file)")
        }
    }

    /// Encrypts for the writer: PBKDF2-HMAC-SHA256, AES-256-CBC.
    static func encrypt(_ plaintext: [UInt8], passphrase: [UInt8], iterations: Int) throws -> (
        algorithm: [UInt8], ciphertext: [UInt8]
    ) {
        var salt = [UInt8](repeating: 0, count: 16)
        var iv = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in 0..<16 {
            salt[index] = generator.next()
            iv[index] = generator.next()
        }
        let key = try PKCS12KeyDerivation.pbkdf2(
            password: passphrase, salt: salt, prf: .sha256, iterations: iterations, count: 32)
        let ciphertext = Array(try AES._CBC.encrypt(plaintext, using: key, iv: AES._CBC.IV(ivBytes: iv)))
        let prf = derTLV(0x30, DERWriter.oid(OID.hmacWithSHA256) + [0x05, 0x00])
        let pbkdf2Parameters = derTLV(0x30, derTLV(0x04, salt) + DERWriter.integer(iterations) + prf)
        let kdf = derTLV(0x30, DERWriter.oid(OID.pbkdf2) + pbkdf2Parameters)
        let scheme = derTLV(0x30, DERWriter.oid(OID.aes256CBC) + derTLV(0x04, iv))
        let algorithm = derTLV(0x30, DERWriter.oid(OID.pbes2) + derTLV(0x30, kdf + scheme))
        return (algorithm, ciphertext)
    }
}

/// Small DER encoders for the writer.
enum DERWriter {
    static func oid(_ oid: ASN1ObjectIdentifier) -> [UInt8] {
        var serializer = DER.Serializer()
        try? serializer.serialize(oid)
        return serializer.serializedBytes
    }

    static func integer(_ value: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var remaining = value
        repeat {
            bytes.insert(UInt8(remaining & 0xff), at: 0)
            remaining >>= 8
        } while remaining > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return derTLV(0x02, bytes)
    }

    static func bmpString(_ text: String) -> [UInt8] {
        derTLV(0x1e, Array(PKCS12KeyDerivation.bmpPassword(text).dropLast(2)))
    }

    /// `[n]` EXPLICIT (constructed context tag).
    static func explicit(_ number: UInt8, _ content: [UInt8]) -> [UInt8] { derTLV(0xa0 | number, content) }
}
