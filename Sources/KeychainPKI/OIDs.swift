import SwiftASN1

/// Object identifiers this module reads or writes.
enum OID {
    // Names
    static let commonName: ASN1ObjectIdentifier = "2.5.4.3"
    static let organizationalUnitName: ASN1ObjectIdentifier = "2.5.4.11"
    static let organizationName: ASN1ObjectIdentifier = "2.5.4.10"
    static let description: ASN1ObjectIdentifier = "2.5.4.13"
    static let emailAddress: ASN1ObjectIdentifier = "1.2.840.113549.1.9.1"

    // Extensions
    static let subjectKeyIdentifier: ASN1ObjectIdentifier = "2.5.29.14"
    static let keyUsage: ASN1ObjectIdentifier = "2.5.29.15"
    static let subjectAltName: ASN1ObjectIdentifier = "2.5.29.17"
    static let basicConstraints: ASN1ObjectIdentifier = "2.5.29.19"
    static let nameConstraints: ASN1ObjectIdentifier = "2.5.29.30"
    static let authorityKeyIdentifier: ASN1ObjectIdentifier = "2.5.29.35"
    static let extendedKeyUsage: ASN1ObjectIdentifier = "2.5.29.37"

    // Keys
    static let rsaEncryption: ASN1ObjectIdentifier = "1.2.840.113549.1.1.1"
    static let rsaPSS: ASN1ObjectIdentifier = "1.2.840.113549.1.1.10"
    static let ecPublicKey: ASN1ObjectIdentifier = "1.2.840.10045.2.1"
    static let p256: ASN1ObjectIdentifier = "1.2.840.10045.3.1.7"
    static let p384: ASN1ObjectIdentifier = "1.3.132.0.34"
    static let p521: ASN1ObjectIdentifier = "1.3.132.0.35"
    static let ed25519: ASN1ObjectIdentifier = "1.3.101.112"

    // Signatures
    static let sha1WithRSA: ASN1ObjectIdentifier = "1.2.840.113549.1.1.5"
    static let sha256WithRSA: ASN1ObjectIdentifier = "1.2.840.113549.1.1.11"
    static let sha384WithRSA: ASN1ObjectIdentifier = "1.2.840.113549.1.1.12"
    static let sha512WithRSA: ASN1ObjectIdentifier = "1.2.840.113549.1.1.13"
    static let ecdsaWithSHA1: ASN1ObjectIdentifier = "1.2.840.10045.4.1"
    static let ecdsaWithSHA256: ASN1ObjectIdentifier = "1.2.840.10045.4.3.2"
    static let ecdsaWithSHA384: ASN1ObjectIdentifier = "1.2.840.10045.4.3.3"
    static let ecdsaWithSHA512: ASN1ObjectIdentifier = "1.2.840.10045.4.3.4"
    static let mgf1: ASN1ObjectIdentifier = "1.2.840.113549.1.1.8"

    // Digests
    static let sha1: ASN1ObjectIdentifier = "1.3.14.3.2.26"
    static let sha224: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.2.4"
    static let sha256: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.2.1"
    static let sha384: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.2.2"
    static let sha512: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.2.3"

    // PKCS#7 / PKCS#12
    static let data: ASN1ObjectIdentifier = "1.2.840.113549.1.7.1"
    static let encryptedData: ASN1ObjectIdentifier = "1.2.840.113549.1.7.6"
    static let envelopedData: ASN1ObjectIdentifier = "1.2.840.113549.1.7.3"
    static let keyBag: ASN1ObjectIdentifier = "1.2.840.113549.1.12.10.1.1"
    static let shroudedKeyBag: ASN1ObjectIdentifier = "1.2.840.113549.1.12.10.1.2"
    static let certBag: ASN1ObjectIdentifier = "1.2.840.113549.1.12.10.1.3"
    static let crlBag: ASN1ObjectIdentifier = "1.2.840.113549.1.12.10.1.4"
    static let secretBag: ASN1ObjectIdentifier = "1.2.840.113549.1.12.10.1.5"
    static let safeContentsBag: ASN1ObjectIdentifier = "1.2.840.113549.1.12.10.1.6"
    static let x509Certificate: ASN1ObjectIdentifier = "1.2.840.113549.1.9.22.1"
    static let sdsiCertificate: ASN1ObjectIdentifier = "1.2.840.113549.1.9.22.2"
    static let friendlyName: ASN1ObjectIdentifier = "1.2.840.113549.1.9.20"
    static let localKeyID: ASN1ObjectIdentifier = "1.2.840.113549.1.9.21"

    // Password-based encryption
    static let pbes2: ASN1ObjectIdentifier = "1.2.840.113549.1.5.13"
    static let pbkdf2: ASN1ObjectIdentifier = "1.2.840.113549.1.5.12"
    static let hmacWithSHA1: ASN1ObjectIdentifier = "1.2.840.113549.2.7"
    static let hmacWithSHA224: ASN1ObjectIdentifier = "1.2.840.113549.2.8"
    static let hmacWithSHA256: ASN1ObjectIdentifier = "1.2.840.113549.2.9"
    static let hmacWithSHA384: ASN1ObjectIdentifier = "1.2.840.113549.2.10"
    static let hmacWithSHA512: ASN1ObjectIdentifier = "1.2.840.113549.2.11"
    static let aes128CBC: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.1.2"
    static let aes192CBC: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.1.22"
    static let aes256CBC: ASN1ObjectIdentifier = "2.16.840.1.101.3.4.1.42"

    /// PKCS#12 PBE (RFC 7292 appendix C) legacy ciphers, by last arc.
    static let pkcs12PBEPrefix: [UInt] = [1, 2, 840, 113_549, 1, 12, 1]
    /// PKCS#5 v1.5 (PBES1) ciphers.
    static let pbes1: Set<ASN1ObjectIdentifier> = [
        "1.2.840.113549.1.5.1", "1.2.840.113549.1.5.3", "1.2.840.113549.1.5.4",
        "1.2.840.113549.1.5.6", "1.2.840.113549.1.5.10", "1.2.840.113549.1.5.11",
    ]
}

extension OID {
    /// The dotted text of the OIDs a trust evaluation compares for every signature and key,
    /// spelled out once (spelling an OID out allocates and joins strings).
    enum Dotted {
        static let p256 = OID.p256.description
        static let p384 = OID.p384.description
        static let p521 = OID.p521.description
        static let rsaEncryption = OID.rsaEncryption.description
        static let rsaPSS = OID.rsaPSS.description
        static let ecPublicKey = OID.ecPublicKey.description
    }
}
