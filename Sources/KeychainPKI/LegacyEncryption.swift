internal import KeychainPKILegacy
import SwiftASN1

/// A PKCS#12 bag encrypted with a legacy cipher: PKCS#12 PBE (RFC 7292 appendix C: RC2, RC4,
/// 3DES), PBES1 (RFC 8018 §6.1: DES, RC2) or PBES2 over DES, 3DES or RC2, as the files of older
/// OpenSSL, Keychain Access and Windows are. This module parses the parameters (for the iteration
/// budget) and OpenSSL's PKCS#12 reader decrypts (KeychainPKILegacy); an algorithm it cannot run
/// is refused with ``PKIError/Code/unsupportedLegacyEncryption``, naming the conversion.
struct LegacyEncryption {
    /// The PBES2 encryption schemes that are legacy ciphers, by dotted OID.
    static let pbes2Ciphers = [
        "1.2.840.113549.3.7": "DES-EDE3-CBC", "1.3.14.3.2.7": "DES-CBC", "1.2.840.113549.3.2": "RC2-CBC",
    ]

    /// The PKCS#12 PBE schemes, by the last arc of their OID.
    private static let pkcs12PBENames: [UInt: String] = [
        1: "pbeWithSHAAnd128BitRC4", 2: "pbeWithSHAAnd40BitRC4", 3: "pbeWithSHAAnd3-KeyTripleDES-CBC",
        4: "pbeWithSHAAnd2-KeyTripleDES-CBC", 5: "pbeWithSHAAnd128BitRC2-CBC", 6: "pbewithSHAAnd40BitRC2-CBC",
    ]

    /// What the cipher is called in errors.
    let name: String
    /// The key derivation's iteration count.
    let iterations: Int
    private let algorithm: AlgorithmIdentifier

    /// Reads a PKCS#12 PBE or PBES1 AlgorithmIdentifier, whose parameters are
    /// `SEQUENCE { salt OCTET STRING, iterations INTEGER }`; nil for any other algorithm.
    init?(_ algorithm: AlgorithmIdentifier, maximumIterations: Int) throws {
        guard let identifier = try? ASN1ObjectIdentifier(dotRepresentation: algorithm.oid) else { return nil }
        let components = identifier.oidComponents
        if components.count == 8, Array(components.prefix(7)) == OID.pkcs12PBEPrefix {
            name = Self.pkcs12PBENames[components[7]] ?? "PKCS#12 PBE \(algorithm.oid)"
        } else if OID.pbes1.contains(identifier) {
            name = "PBES1 (\(algorithm.oid), DES or RC2)"
        } else {
            return nil
        }
        guard let parameters = algorithm.parameters else { throw PKIError.malformed("\(name): parameters missing") }
        var fields = try NodeList(parseBER(parameters[...], "PBEParameter"), .sequence, "PBEParameter")
        _ = try octetStringBytes(fields.next(), ber: true, "PBEParameter.salt")
        iterations = try smallInteger(fields.next(), limit: maximumIterations, "PBEParameter.iterations")
        guard iterations >= 1 else { throw PKIError.malformed("\(name): iteration count 0") }
        try fields.finish()
        self.algorithm = algorithm
    }

    /// A PBES2 scheme over a legacy cipher, its parameters already read.
    init(pbes2 algorithm: AlgorithmIdentifier, _ parameters: PBES2Parameters) {
        name = "PBES2 with \(parameters.legacyCipher ?? "a legacy cipher")"
        iterations = parameters.iterations
        self.algorithm = algorithm
    }

    /// Decrypts with OpenSSL's PKCS#12 reader; the passphrase's UTF-8 bytes (OpenSSL makes the
    /// BMPString PKCS#12 PBE needs from them).
    func decrypt(_ ciphertext: [UInt8], passphrase: [UInt8]) throws -> [UInt8] {
        let der = derTLV(
            0x30,
            DERWriter.oid(try ASN1ObjectIdentifier(dotRepresentation: algorithm.oid))
                + (algorithm.parameters ?? [0x05, 0x00]))
        do {
            return try LegacyPBE.decrypt(algorithm: der, ciphertext: ciphertext, passphrase: passphrase)
        } catch .unsupported {
            throw PKIError.legacy(name)
        } catch .decryptionFailed {
            throw PKIError.malformed(
                "\(name): decryption failed (bad padding: a different passphrase or a damaged file)")
        }
    }
}
