import SwiftASN1
import Crypto
import CryptoExtras

extension PKCS12 {
    /// The default iteration count of ``export(privateKey:certificates:passphrase:friendlyName:iterations:)``
    /// for PBKDF2 and for the MAC (100,000).
    public static let defaultExportIterations = 100_000

    /// Writes a modern PKCS#12 file: the certificates in one PBES2-encrypted bag set, the key in
    /// a pkcs8ShroudedKeyBag (PBES2: PBKDF2-HMAC-SHA256, AES-256-CBC, random 16-byte salts and
    /// IVs), and an HMAC-SHA-256 MAC. `openssl pkcs12` (3.x, default provider) reads it.
    ///
    /// - Parameters:
    ///   - privateKey: the key's PKCS#8 PrivateKeyInfo DER (RSA or EC).
    ///   - certificates: the key's certificate first, then any chain certificates.
    ///   - passphrase: protects the key, the certificates and the MAC.
    ///   - friendlyName: an optional name for the key and its certificate.
    ///   - iterations: PBKDF2 and MAC iterations, 1 through ``maximumIterations``.
    /// - Returns: the DER of the PFX.
    /// - Throws: ``PKIError`` `.invalidKey` when the key does not match the first certificate,
    ///   `.unsupportedAlgorithm` for a key other than RSA or EC, `.limitExceeded` for an
    ///   iteration count out of range, `.malformed` when there is no certificate.
    public static func export(
        privateKey: [UInt8], certificates: [X509Certificate], passphrase: String, friendlyName: String? = nil,
        iterations: Int = defaultExportIterations
    ) throws -> [UInt8] {
        guard (1...maximumIterations).contains(iterations) else {
            throw PKIError(.limitExceeded, "PKCS#12 export: iterations must be 1 through \(maximumIterations)")
        }
        guard let leaf = certificates.first else { throw PKIError.malformed("PKCS#12 export: no certificate") }
        let key = try PKCS12PrivateKey(pkcs8DER: privateKey, friendlyName: nil, localKeyID: nil, wasEncrypted: false)
        guard try key.publicKeyBytes() == leaf.publicKeyInfo.keyBytes else {
            throw PKIError(.invalidKey, "PKCS#12 export: the private key does not match the first certificate")
        }
        let password = Array(passphrase.utf8)
        let localKeyID = Array(Insecure.SHA1.hash(data: leaf.derBytes))
        let attributes = bagAttributes(localKeyID: localKeyID, friendlyName: friendlyName)

        let certBags = certificates.enumerated().map { index, certificate in
            safeBag(
                OID.certBag,
                derTLV(
                    0x30, DERWriter.oid(OID.x509Certificate) + DERWriter.explicit(0, derTLV(0x04, certificate.derBytes))
                ),
                index == 0 ? attributes : [])
        }
        let encryptedCerts = try PBES2Parameters.encrypt(
            derTLV(0x30, certBags.flatMap { $0 }), passphrase: password, iterations: iterations)
        let encryptedContentInfo = derTLV(
            0x30, DERWriter.oid(OID.data) + encryptedCerts.algorithm + derTLV(0x80, encryptedCerts.ciphertext))
        let certsInfo = contentInfo(OID.encryptedData, derTLV(0x30, DERWriter.integer(0) + encryptedContentInfo))

        let shrouded = try PBES2Parameters.encrypt(privateKey, passphrase: password, iterations: iterations)
        let keyBag = safeBag(
            OID.shroudedKeyBag, derTLV(0x30, shrouded.algorithm + derTLV(0x04, shrouded.ciphertext)), attributes)
        let keyInfo = contentInfo(OID.data, derTLV(0x04, derTLV(0x30, keyBag)))

        let authSafe = derTLV(0x30, certsInfo + keyInfo)
        let mac = macData(authSafe, passphrase: passphrase, iterations: iterations)
        return derTLV(0x30, DERWriter.integer(3) + contentInfo(OID.data, derTLV(0x04, authSafe)) + mac)
    }

    private static func contentInfo(_ type: ASN1ObjectIdentifier, _ content: [UInt8]) -> [UInt8] {
        derTLV(0x30, DERWriter.oid(type) + DERWriter.explicit(0, content))
    }

    private static func safeBag(_ type: ASN1ObjectIdentifier, _ value: [UInt8], _ attributes: [UInt8]) -> [UInt8] {
        derTLV(0x30, DERWriter.oid(type) + DERWriter.explicit(0, value) + attributes)
    }

    private static func bagAttributes(localKeyID: [UInt8], friendlyName: String?) -> [UInt8] {
        var attributes: [[UInt8]] = []
        if let friendlyName {
            attributes.append(
                derTLV(0x30, DERWriter.oid(OID.friendlyName) + derTLV(0x31, DERWriter.bmpString(friendlyName))))
        }
        attributes.append(derTLV(0x30, DERWriter.oid(OID.localKeyID) + derTLV(0x31, derTLV(0x04, localKeyID))))
        // DER SET OF: elements in ascending order of their encodings.
        return derTLV(0x31, attributes.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }

    private static func macData(_ authSafe: [UInt8], passphrase: String, iterations: Int) -> [UInt8] {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        let key = PKCS12Digest.sha256.macKey(
            password: PKCS12KeyDerivation.bmpPassword(passphrase), salt: salt, iterations: iterations)
        let mac = PKCS12Digest.sha256.hmac(authSafe, key: key)
        let digestInfo = derTLV(0x30, derTLV(0x30, DERWriter.oid(OID.sha256) + [0x05, 0x00]) + derTLV(0x04, mac))
        return derTLV(0x30, digestInfo + derTLV(0x04, salt) + DERWriter.integer(iterations))
    }
}
