import Crypto
import CryptoExtras
import SwiftASN1

/// A private key found in a PKCS#12 file: its PKCS#8 PrivateKeyInfo DER and what kind of key it is.
///
/// The description shows the key type and the bag attributes, never the key bytes.
public struct PKCS12PrivateKey: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of private key.
    public enum KeyType: Hashable, Sendable {
        /// An RSA key (PKCS#8 rsaEncryption).
        case rsa
        /// An EC key (PKCS#8 id-ecPublicKey) on the named curve, by dotted OID.
        case ec(curveOID: String)
    }

    /// The PKCS#8 PrivateKeyInfo DER. **Secret.**
    public var pkcs8DER: [UInt8]
    /// RSA or EC.
    public var keyType: KeyType
    /// The bag's friendlyName attribute, if any.
    public var friendlyName: String?
    /// The bag's localKeyId attribute, if any.
    public var localKeyID: [UInt8]?
    /// Whether the key came from a pkcs8ShroudedKeyBag (encrypted) rather than a plain keyBag.
    public var wasEncrypted: Bool

    /// The key type and attributes; no key material.
    public var description: String {
        "PKCS12PrivateKey(\(keyType), friendlyName: \(friendlyName ?? "nil"), "
            + "localKeyID: \(localKeyID.map { "\($0.count) bytes" } ?? "nil"), \(pkcs8DER.count) bytes hidden)"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// The public key bytes as a certificate carries them (the SubjectPublicKeyInfo BIT STRING
    /// contents): PKCS#1 RSAPublicKey for RSA, the uncompressed X9.63 point for EC.
    /// - Throws: ``PKIError`` `.invalidKey` when swift-crypto cannot load the key.
    public func publicKeyBytes() throws -> [UInt8] {
        do {
            switch keyType {
            case .rsa:
                return Array(
                    try _RSA.Signing.PrivateKey(unsafeDERRepresentation: pkcs8DER).publicKey.pkcs1DERRepresentation)
            case .ec(let curve):
                switch curve {
                case OID.p256.description:
                    return Array(try P256.Signing.PrivateKey(derRepresentation: pkcs8DER).publicKey.x963Representation)
                case OID.p384.description:
                    return Array(try P384.Signing.PrivateKey(derRepresentation: pkcs8DER).publicKey.x963Representation)
                case OID.p521.description:
                    return Array(try P521.Signing.PrivateKey(derRepresentation: pkcs8DER).publicKey.x963Representation)
                default:
                    throw PKIError(.unsupportedAlgorithm, "elliptic curve \(curve) is not supported")
                }
            }
        } catch let error as PKIError {
            throw error
        } catch {
            throw PKIError(.invalidKey, "the private key cannot be loaded")
        }
    }

    /// Reads the key type from PKCS#8 DER (RSA and EC only, as Apple's importer).
    init(pkcs8DER: [UInt8], friendlyName: String?, localKeyID: [UInt8]?, wasEncrypted: Bool) throws {
        var fields = try NodeList(parseDER(pkcs8DER[...], "PrivateKeyInfo"), .sequence, "PrivateKeyInfo")
        _ = try smallInteger(fields.next(), limit: 1, "PrivateKeyInfo.version")
        let algorithm = try AlgorithmIdentifier(node: fields.next(), "PrivateKeyInfo.privateKeyAlgorithm")
        _ = try primitiveBytes(fields.next(), .octetString, "PrivateKeyInfo.privateKey")
        switch algorithm.oid {
        case OID.rsaEncryption.description:
            keyType = .rsa
        case OID.ecPublicKey.description:
            guard let parameters = algorithm.parameters else { throw PKIError.malformed("EC key: curve missing") }
            keyType = .ec(curveOID: try objectIdentifier(parseDER(parameters[...], "EC curve"), "EC curve").description)
        default:
            throw PKIError(
                .unsupportedAlgorithm, "private key algorithm \(algorithm.oid) is not supported (RSA and EC are)")
        }
        self.pkcs8DER = pkcs8DER
        self.friendlyName = friendlyName
        self.localKeyID = localKeyID
        self.wasEncrypted = wasEncrypted
    }
}

/// A certificate found in a PKCS#12 file, with its bag attributes.
public struct PKCS12Certificate: Hashable, Sendable {
    /// The certificate.
    public var certificate: X509Certificate
    /// The bag's friendlyName attribute, if any.
    public var friendlyName: String?
    /// The bag's localKeyId attribute, if any.
    public var localKeyID: [UInt8]?
}

/// A private key and the certificate it pairs with.
public struct PKCS12Identity: Hashable, Sendable {
    /// The private key.
    public var privateKey: PKCS12PrivateKey
    /// Its certificate (the leaf).
    public var certificate: X509Certificate
}

/// Everything a PKCS#12 file holds that this module reads.
public struct PKCS12Contents: Hashable, Sendable {
    /// Every certificate (x509 certBag), in file order.
    public var certificates: [PKCS12Certificate]
    /// Every RSA or EC private key (pkcs8ShroudedKeyBag and keyBag), in file order.
    public var privateKeys: [PKCS12PrivateKey]
    /// One per key that pairs with a certificate, in key order. Pairing as Apple's
    /// `p12import.c`: the certificate with the same localKeyId, else the same friendlyName;
    /// the pair must share the public key. Keys with no certificate are not identities.
    public var identities: [PKCS12Identity]
    /// The certificates not paired with any key, in file order (the chain candidates Apple
    /// hands to its trust evaluation).
    public var unpairedCertificates: [X509Certificate]
}

/// Reading and writing PKCS#12 (`.p12`/`.pfx`) files.
///
/// Reads PBES2 (PBKDF2 with HMAC-SHA-1/224/256/384/512, AES-128/192/256-CBC) encrypted bags and
/// HMAC-SHA-1/256/384/512 MACs, in DER or BER (indefinite lengths, constructed strings).
/// Bags encrypted with the legacy ciphers (PKCS#12 PBE with RC2, RC4 or 3DES, PBES1, PBES2 over
/// DES, 3DES or RC2: every file of older OpenSSL, Keychain Access and Windows) are decrypted by
/// OpenSSL's PKCS#12 reader; one it cannot decrypt is refused with
/// ``PKIError/Code/unsupportedLegacyEncryption``, whose message names the conversion
/// ``PKIError/legacyConversionCommand``.
///
/// ```swift
/// let contents = try PKCS12.parse(fileBytes, passphrase: "secret")
/// for identity in contents.identities { … identity.certificate, identity.privateKey.pkcs8DER … }
/// ```
public enum PKCS12 {
    /// The largest iteration count accepted for the MAC or for PBKDF2 (10,000,000).
    public static let maximumIterations = 10_000_000
    /// The most key-derivation iterations one file may cost in total (30,000,000), so a hostile
    /// file cannot make parsing run for minutes.
    public static let maximumTotalIterations = 30_000_000
    /// The largest file accepted (64 MiB).
    public static let maximumFileSize = 64 << 20
    /// The most bags one file may hold (10,000).
    public static let maximumBags = 10_000
    /// How deep safeContentsBag may nest (4).
    public static let maximumBagNesting = 4

    /// Reads a PKCS#12 file.
    ///
    /// - Parameters:
    ///   - bytes: the file, DER or BER.
    ///   - passphrase: the passphrase; the MAC key uses it as a BMPString (an empty passphrase
    ///     is tried as two zero bytes, then as no bytes), PBES2 uses its UTF-8 bytes.
    /// - Returns: the certificates, keys and identities.
    /// - Throws: ``PKIError``: `.wrongPassphrase` (-25293) when the MAC does not verify;
    ///   `.unsupportedLegacyEncryption` for a legacy cipher libcrypto cannot run; `.unsupportedAlgorithm`,
    ///   `.limitExceeded`, `.invalidKey` or `.malformed` (-26275) otherwise.
    public static func parse(_ bytes: some Collection<UInt8>, passphrase: String) throws -> PKCS12Contents {
        let bytes = Array(bytes)
        guard bytes.count <= maximumFileSize else {
            throw PKIError(.limitExceeded, "PKCS#12: \(bytes.count) bytes is over the \(maximumFileSize)-byte limit")
        }
        var reader = PKCS12Reader(passphrase: passphrase)
        return try reader.read(bytes)
    }
}

/// The state of one read: the passphrase and the work budget.
struct PKCS12Reader {
    let passphrase: String
    var iterationsLeft = PKCS12.maximumTotalIterations
    var bagCount = 0
    var certificates: [PKCS12Certificate] = []
    var keys: [PKCS12PrivateKey] = []

    init(passphrase: String) { self.passphrase = passphrase }

    mutating func read(_ bytes: [UInt8]) throws -> PKCS12Contents {
        let authSafe = try verifiedAuthSafe(bytes)
        var list = try NodeList(parseBER(authSafe[...], "AuthenticatedSafe"), .sequence, "AuthenticatedSafe")
        while !list.isAtEnd { try readContentInfo(list.next()) }
        return try PKCS12Pairing.contents(certificates: certificates, keys: keys)
    }

    /// PFX → the AuthenticatedSafe bytes, after the MAC has verified them.
    mutating func verifiedAuthSafe(_ bytes: [UInt8]) throws -> [UInt8] {
        var pfx = try NodeList(parseBER(bytes[...], "PFX"), .sequence, "PFX")
        guard try smallInteger(pfx.next(), limit: 255, "PFX.version") == 3 else {
            throw PKIError.malformed("PFX: version is not 3")
        }
        var contentInfo = try NodeList(pfx.next(), .sequence, "PFX.authSafe")
        guard try objectIdentifier(contentInfo.next(), "PFX.authSafe.contentType") == OID.data else {
            throw PKIError(.unsupportedAlgorithm, "PFX: only password integrity (data authSafe) is supported")
        }
        var explicit = try NodeList(contentInfo.next(), .context(0), "PFX.authSafe.content")
        let authSafe = try octetStringBytes(explicit.next(), ber: true, "PFX.authSafe.content")
        try explicit.finish()
        try contentInfo.finish()
        guard let macData = pfx.optional(.sequence) else {
            throw PKIError.malformed("PFX: no MacData (a file without a MAC is refused, as Apple does)")
        }
        try pfx.finish()
        try verifyMAC(macData, authSafe)
        return authSafe
    }

    /// Checks the MAC. As in Apple's `p12VerifyMac`, the failures of this stage that are not
    /// structural (an unsupported digest, an empty salt, an iteration count out of range, a MAC
    /// that does not verify) have ``PKIError/osStatus`` -25293.
    mutating func verifyMAC(_ node: ASN1Node, _ authSafe: [UInt8]) throws {
        var macData = try NodeList(node, .sequence, "MacData")
        var digestInfo = try NodeList(macData.next(), .sequence, "MacData.mac")
        let algorithm = try AlgorithmIdentifier(node: digestInfo.next(), "MacData.mac.digestAlgorithm")
        let mac = try octetStringBytes(digestInfo.next(), ber: true, "MacData.mac.digest")
        try digestInfo.finish()
        let salt = try octetStringBytes(macData.next(), ber: true, "MacData.macSalt")
        let count = macData.optional(.integer)
        try macData.finish()
        let (digest, iterations) = try Self.macStage {
            let iterations =
                try count.map { try smallInteger($0, limit: PKCS12.maximumIterations, "MacData.iterations") } ?? 1
            guard iterations >= 1 else { throw PKIError.malformed("MacData: iteration count 0") }
            guard !salt.isEmpty else { throw PKIError.malformed("MacData: empty salt") }
            return (try PKCS12Digest(digestOID: algorithm.oid), iterations)
        }
        var candidates = [PKCS12KeyDerivation.bmpPassword(passphrase)]
        if passphrase.isEmpty { candidates.append([]) }
        for password in candidates {
            try spend(iterations)
            let key = digest.macKey(password: password, salt: salt, iterations: iterations)
            if digest.isValid(mac, for: authSafe, key: key) { return }
        }
        throw PKIError(.wrongPassphrase, "PKCS#12: the MAC does not verify: wrong passphrase, or a damaged file")
    }

    /// Runs `body`, giving any ``PKIError`` it throws the status -25293.
    private static func macStage<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as PKIError {
            throw PKIError(error.code, error.message, osStatus: -25293)
        }
    }

    mutating func spend(_ iterations: Int) throws {
        iterationsLeft -= iterations
        guard iterationsLeft >= 0 else {
            throw PKIError(
                .limitExceeded, "PKCS#12: more than \(PKCS12.maximumTotalIterations) key-derivation iterations in all")
        }
    }

    mutating func readContentInfo(_ node: ASN1Node) throws {
        let (type, content) = try contentInfo(node, "ContentInfo")
        switch type {
        case OID.data:
            try readSafeContents(octetStringBytes(content, ber: true, "ContentInfo data"), depth: 0)
        case OID.encryptedData:
            try readSafeContents(decryptEncryptedData(content), depth: 0)
        case OID.envelopedData:
            throw PKIError(.unsupportedAlgorithm, "PKCS#12: public-key privacy (envelopedData) is not supported")
        default:
            throw PKIError.malformed("PKCS#12: unknown ContentInfo type \(type)")
        }
    }

    mutating func decryptEncryptedData(_ node: ASN1Node) throws -> [UInt8] {
        var encryptedData = try NodeList(node, .sequence, "EncryptedData")
        _ = try smallInteger(encryptedData.next(), limit: 255, "EncryptedData.version")
        var info = try NodeList(encryptedData.next(), .sequence, "EncryptedContentInfo")
        _ = try objectIdentifier(info.next(), "EncryptedContentInfo.contentType")
        let algorithm = try AlgorithmIdentifier(node: info.next(), "EncryptedContentInfo.contentEncryptionAlgorithm")
        guard let encrypted = info.optional(ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)) else {
            throw PKIError.malformed("EncryptedContentInfo: no encryptedContent")
        }
        try info.finish()
        let ciphertext = try octetStringBytes(
            encrypted, ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific), ber: true, "encryptedContent")
        return try decrypt(algorithm, ciphertext)
    }

    mutating func decrypt(_ algorithm: AlgorithmIdentifier, _ ciphertext: [UInt8]) throws -> [UInt8] {
        if let legacy = try LegacyEncryption(algorithm, maximumIterations: PKCS12.maximumIterations) {
            try spend(legacy.iterations)
            return try legacy.decrypt(ciphertext, passphrase: Array(passphrase.utf8))
        }
        let parameters = try PBES2Parameters(algorithm, maximumIterations: PKCS12.maximumIterations)
        try spend(parameters.iterations)
        if parameters.legacyCipher != nil {
            return try LegacyEncryption(pbes2: algorithm, parameters).decrypt(
                ciphertext, passphrase: Array(passphrase.utf8))
        }
        return try parameters.decrypt(ciphertext, passphrase: Array(passphrase.utf8))
    }

    mutating func readSafeContents(_ bytes: [UInt8], depth: Int) throws {
        guard depth <= PKCS12.maximumBagNesting else {
            throw PKIError(.limitExceeded, "PKCS#12: safeContentsBag nested deeper than \(PKCS12.maximumBagNesting)")
        }
        var bags = try NodeList(parseBER(bytes[...], "SafeContents"), .sequence, "SafeContents")
        while !bags.isAtEnd { try readBag(bags.next(), depth: depth) }
    }

    mutating func readBag(_ node: ASN1Node, depth: Int) throws {
        bagCount += 1
        guard bagCount <= PKCS12.maximumBags else {
            throw PKIError(.limitExceeded, "PKCS#12: more than \(PKCS12.maximumBags) bags")
        }
        var fields = try NodeList(node, .sequence, "SafeBag")
        let type = try objectIdentifier(fields.next(), "SafeBag.bagId")
        var explicit = try NodeList(fields.next(), .context(0), "SafeBag.bagValue")
        let value = try explicit.next()
        try explicit.finish()
        let attributes = try fields.isAtEnd ? BagAttributes() : BagAttributes(fields.next())
        try fields.finish()
        switch type {
        case OID.certBag: try readCertBag(value, attributes)
        case OID.shroudedKeyBag: try readShroudedKey(value, attributes)
        case OID.keyBag:
            keys.append(
                try PKCS12PrivateKey(
                    pkcs8DER: Array(value.encodedBytes), friendlyName: attributes.friendlyName,
                    localKeyID: attributes.localKeyID, wasEncrypted: false))
        case OID.safeContentsBag: try readSafeContents(Array(value.encodedBytes), depth: depth + 1)
        case OID.crlBag, OID.secretBag: break
        default: throw PKIError.malformed("PKCS#12: unknown bag type \(type)")
        }
    }

    mutating func readCertBag(_ node: ASN1Node, _ attributes: BagAttributes) throws {
        var fields = try NodeList(node, .sequence, "CertBag")
        let type = try objectIdentifier(fields.next(), "CertBag.certId")
        var explicit = try NodeList(fields.next(), .context(0), "CertBag.certValue")
        let value = try explicit.next()
        try explicit.finish()
        try fields.finish()
        switch type {
        case OID.x509Certificate:
            let der = try octetStringBytes(value, ber: true, "CertBag x509Certificate")
            certificates.append(
                PKCS12Certificate(
                    certificate: try X509Certificate(derEncoded: der), friendlyName: attributes.friendlyName,
                    localKeyID: attributes.localKeyID))
        case OID.sdsiCertificate: break
        default: throw PKIError.malformed("PKCS#12: certBag of unknown type \(type)")
        }
    }

    mutating func readShroudedKey(_ node: ASN1Node, _ attributes: BagAttributes) throws {
        var fields = try NodeList(node, .sequence, "EncryptedPrivateKeyInfo")
        let algorithm = try AlgorithmIdentifier(node: fields.next(), "EncryptedPrivateKeyInfo.encryptionAlgorithm")
        let ciphertext = try octetStringBytes(fields.next(), ber: true, "EncryptedPrivateKeyInfo.encryptedData")
        try fields.finish()
        let plaintext = try decrypt(algorithm, ciphertext)
        keys.append(
            try PKCS12PrivateKey(
                pkcs8DER: plaintext, friendlyName: attributes.friendlyName, localKeyID: attributes.localKeyID,
                wasEncrypted: true))
    }
}

/// friendlyName and localKeyId from a bag's attribute set.
struct BagAttributes {
    var friendlyName: String?
    var localKeyID: [UInt8]?

    init() {}

    init(_ node: ASN1Node) throws {
        var set = try NodeList(node, .set, "SafeBag.bagAttributes")
        while !set.isAtEnd {
            var attribute = try NodeList(set.next(), .sequence, "PKCS12Attribute")
            let type = try objectIdentifier(attribute.next(), "PKCS12Attribute.attrId")
            var values = try NodeList(attribute.next(), .set, "PKCS12Attribute.attrValues")
            try attribute.finish()
            guard !values.isAtEnd else { continue }
            let value = try values.next()
            switch type {
            // A value of another type is ignored rather than failing the file.
            case OID.friendlyName:
                if let bytes = try? octetStringBytes(value, .bmpString, ber: true, "friendlyName") {
                    friendlyName = DistinguishedName.Attribute.decodeString(tag: 30, bytes: bytes)
                }
            case OID.localKeyID:
                localKeyID = try? octetStringBytes(value, ber: true, "localKeyId")
            default: break
            }
        }
    }
}

/// Apple's pairing of keys and certificates (`p12import.c` `emit_item`).
enum PKCS12Pairing {
    static func contents(certificates: [PKCS12Certificate], keys: [PKCS12PrivateKey]) throws -> PKCS12Contents {
        var identities: [PKCS12Identity] = []
        var paired = Set<Int>()
        for key in keys {
            guard let index = match(key, in: certificates) else { continue }
            let certificate = certificates[index].certificate
            guard try key.publicKeyBytes() == certificate.publicKeyInfo.keyBytes else {
                throw PKIError.malformed("PKCS#12: a private key does not match the certificate it is paired with")
            }
            paired.insert(index)
            identities.append(PKCS12Identity(privateKey: key, certificate: certificate))
        }
        let unpaired = certificates.indices.filter { !paired.contains($0) }.map { certificates[$0].certificate }
        return PKCS12Contents(
            certificates: certificates, privateKeys: keys, identities: identities, unpairedCertificates: unpaired)
    }

    static func match(_ key: PKCS12PrivateKey, in certificates: [PKCS12Certificate]) -> Int? {
        if let id = key.localKeyID, let index = certificates.firstIndex(where: { $0.localKeyID == id }) {
            return index
        }
        if let name = key.friendlyName, let index = certificates.firstIndex(where: { $0.friendlyName == name }) {
            return index
        }
        return nil
    }
}
