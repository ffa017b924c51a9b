import Crypto
import CryptoExtras
import SwiftASN1

/// A certificate signature algorithm this module can verify.
public enum CertificateSignatureAlgorithm: Hashable, Sendable {
    /// The digest a signature algorithm uses.
    public enum DigestAlgorithm: Hashable, Sendable {
        /// SHA-1 (still found on old roots).
        case sha1
        /// SHA-256.
        case sha256
        /// SHA-384.
        case sha384
        /// SHA-512.
        case sha512
    }

    /// RSASSA-PKCS1-v1_5 (sha*WithRSAEncryption).
    case rsaPKCS1(DigestAlgorithm)
    /// RSASSA-PSS with MGF1 over the same digest and a salt as long as the digest.
    case rsaPSS(DigestAlgorithm)
    /// ECDSA (ecdsa-with-SHA*), on P-256, P-384 or P-521.
    case ecdsa(DigestAlgorithm)

    /// The digest the algorithm signs.
    public var digestAlgorithm: DigestAlgorithm {
        switch self {
        case .rsaPKCS1(let digest), .rsaPSS(let digest), .ecdsa(let digest): digest
        }
    }

    /// The algorithm an `AlgorithmIdentifier` names.
    /// - Throws: ``PKIError`` `.unsupportedAlgorithm` for anything else (including PSS with
    ///   other parameters), `.malformed` for unparsable PSS parameters.
    public init(_ identifier: AlgorithmIdentifier) throws {
        if let known = Self.byOID[identifier.oid] {
            self = known
        } else if identifier.oid == OID.Dotted.rsaPSS {
            self = .rsaPSS(try Self.pssDigest(identifier.parameters))
        } else {
            throw PKIError(.unsupportedAlgorithm, "signature algorithm \(identifier.oid) is not supported")
        }
    }

    /// The algorithms without parameters, by dotted OID: built once, because spelling an OID out
    /// costs more than the rest of reading the algorithm (it runs for every signature checked).
    private static let byOID: [String: CertificateSignatureAlgorithm] = [
        OID.sha1WithRSA.description: .rsaPKCS1(.sha1),
        OID.sha256WithRSA.description: .rsaPKCS1(.sha256),
        OID.sha384WithRSA.description: .rsaPKCS1(.sha384),
        OID.sha512WithRSA.description: .rsaPKCS1(.sha512),
        OID.ecdsaWithSHA1.description: .ecdsa(.sha1),
        OID.ecdsaWithSHA256.description: .ecdsa(.sha256),
        OID.ecdsaWithSHA384.description: .ecdsa(.sha384),
        OID.ecdsaWithSHA512.description: .ecdsa(.sha512),
    ]

    private static func digest(oid: String) throws -> DigestAlgorithm {
        switch oid {
        case OID.sha1.description: return .sha1
        case OID.sha256.description: return .sha256
        case OID.sha384.description: return .sha384
        case OID.sha512.description: return .sha512
        default: throw PKIError(.unsupportedAlgorithm, "digest \(oid) is not supported")
        }
    }

    private static func length(_ digest: DigestAlgorithm) -> Int {
        switch digest {
        case .sha1: return 20
        case .sha256: return 32
        case .sha384: return 48
        case .sha512: return 64
        }
    }

    /// Reads RSASSA-PSS-params (RFC 4055) and accepts only MGF1 over the same digest with a
    /// salt of the digest's length, trailer 1: what swift-crypto verifies.
    private static func pssDigest(_ parameters: [UInt8]?) throws -> DigestAlgorithm {
        guard let parameters else { throw PKIError.malformed("RSASSA-PSS: parameters missing") }
        var fields = try NodeList(parseDER(parameters[...], "RSASSA-PSS-params"), .sequence, "RSASSA-PSS-params")
        var digest = DigestAlgorithm.sha1
        var mgfDigest = DigestAlgorithm.sha1
        var salt = 20
        if let node = fields.optional(.context(0)) {
            var inner = try NodeList(node, .context(0), "PSS.hashAlgorithm")
            digest = try Self.digest(oid: AlgorithmIdentifier(node: inner.next(), "PSS.hashAlgorithm").oid)
        }
        if let node = fields.optional(.context(1)) {
            var inner = try NodeList(node, .context(1), "PSS.maskGenAlgorithm")
            let mgf = try AlgorithmIdentifier(node: inner.next(), "PSS.maskGenAlgorithm")
            guard mgf.oid == OID.mgf1.description, let mgfParameters = mgf.parameters else {
                throw PKIError(.unsupportedAlgorithm, "RSASSA-PSS: mask generation \(mgf.oid) is not supported")
            }
            let hash = try AlgorithmIdentifier(node: parseDER(mgfParameters[...], "MGF1"), "MGF1.hash")
            mgfDigest = try Self.digest(oid: hash.oid)
        }
        if let node = fields.optional(.context(2)) {
            var inner = try NodeList(node, .context(2), "PSS.saltLength")
            salt = try smallInteger(inner.next(), limit: 1 << 16, "PSS.saltLength")
        }
        if let node = fields.optional(.context(3)) {
            var inner = try NodeList(node, .context(3), "PSS.trailerField")
            guard try smallInteger(inner.next(), limit: 1 << 16, "PSS.trailerField") == 1 else {
                throw PKIError(.unsupportedAlgorithm, "RSASSA-PSS: trailer field other than 1")
            }
        }
        try fields.finish()
        guard mgfDigest == digest, salt == length(digest) else {
            throw PKIError(
                .unsupportedAlgorithm,
                "RSASSA-PSS: only MGF1 with the same digest and a digest-length salt is supported")
        }
        return digest
    }
}

extension X509Certificate {
    /// The outer signature algorithm, if this module supports it.
    /// - Throws: ``PKIError`` `.unsupportedAlgorithm` or `.malformed`.
    public var verifiableSignatureAlgorithm: CertificateSignatureAlgorithm {
        get throws { try CertificateSignatureAlgorithm(signatureAlgorithm) }
    }

    /// Whether `issuer`'s public key verifies this certificate's signature over ``tbsBytes``.
    ///
    /// - Returns: false when the signature does not verify, or when the outer and inner
    ///   signature algorithms differ.
    /// - Throws: ``PKIError`` `.unsupportedAlgorithm` for an algorithm outside RSA PKCS#1 v1.5 /
    ///   PSS and ECDSA P-256/384/521 with SHA-1/256/384/512; `.invalidKey` when the issuer's key
    ///   cannot be loaded or does not fit the algorithm (an RSA key under 1024 bits included).
    public func isSignatureValid(issuedBy issuer: X509Certificate) throws -> Bool {
        try isSignatureValid(publicKey: issuer.publicKeyInfo)
    }

    /// Whether `publicKey` verifies this certificate's signature over ``tbsBytes``.
    /// - Throws: as ``isSignatureValid(issuedBy:)``.
    public func isSignatureValid(publicKey: SubjectPublicKeyInfo) throws -> Bool {
        let algorithm = try verifiableSignatureAlgorithm
        guard tbsSignatureAlgorithm.oid == signatureAlgorithm.oid else { return false }
        switch algorithm {
        case .rsaPKCS1(let digest): return try verifyRSA(publicKey, digest, .insecurePKCS1v1_5)
        case .rsaPSS(let digest): return try verifyRSA(publicKey, digest, .PSS)
        case .ecdsa(let digest): return try verifyECDSA(publicKey, digest)
        }
    }

    private func verifyRSA(
        _ key: SubjectPublicKeyInfo, _ digest: CertificateSignatureAlgorithm.DigestAlgorithm,
        _ padding: _RSA.Signing.Padding
    ) throws -> Bool {
        guard case .rsa = key.keyType else { throw PKIError(.invalidKey, "an RSA signature needs an RSA key") }
        let rsaKey: _RSA.Signing.PublicKey
        do { rsaKey = try _RSA.Signing.PublicKey(unsafeDERRepresentation: key.derBytes) } catch {
            throw PKIError(.invalidKey, "the issuer's RSA key cannot be loaded (under 1024 bits or malformed)")
        }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: self.signature)
        switch digest {
        case .sha1: return rsaKey.isValidSignature(signature, for: Insecure.SHA1.hash(data: tbsBytes), padding: padding)
        case .sha256: return rsaKey.isValidSignature(signature, for: SHA256.hash(data: tbsBytes), padding: padding)
        case .sha384: return rsaKey.isValidSignature(signature, for: SHA384.hash(data: tbsBytes), padding: padding)
        case .sha512: return rsaKey.isValidSignature(signature, for: SHA512.hash(data: tbsBytes), padding: padding)
        }
    }

    private func verifyECDSA(_ key: SubjectPublicKeyInfo, _ digest: CertificateSignatureAlgorithm.DigestAlgorithm)
        throws -> Bool
    {
        guard case .ec(let curve) = key.keyType else {
            throw PKIError(.invalidKey, "an ECDSA signature needs an EC key")
        }
        switch digest {
        case .sha1: return try verifyECDSA(key, curve, Insecure.SHA1.hash(data: tbsBytes))
        case .sha256: return try verifyECDSA(key, curve, SHA256.hash(data: tbsBytes))
        case .sha384: return try verifyECDSA(key, curve, SHA384.hash(data: tbsBytes))
        case .sha512: return try verifyECDSA(key, curve, SHA512.hash(data: tbsBytes))
        }
    }

    private func verifyECDSA(_ key: SubjectPublicKeyInfo, _ curve: String, _ digest: some Digest) throws -> Bool {
        do {
            switch curve {
            case OID.Dotted.p256:
                let publicKey = try P256.Signing.PublicKey(derRepresentation: key.derBytes)
                guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signature) else {
                    return false
                }
                return publicKey.isValidSignature(signature, for: digest)
            case OID.Dotted.p384:
                let publicKey = try P384.Signing.PublicKey(derRepresentation: key.derBytes)
                guard let signature = try? P384.Signing.ECDSASignature(derRepresentation: signature) else {
                    return false
                }
                return publicKey.isValidSignature(signature, for: digest)
            case OID.Dotted.p521:
                let publicKey = try P521.Signing.PublicKey(derRepresentation: key.derBytes)
                guard let signature = try? P521.Signing.ECDSASignature(derRepresentation: signature) else {
                    return false
                }
                return publicKey.isValidSignature(signature, for: digest)
            default:
                throw PKIError(.unsupportedAlgorithm, "elliptic curve \(curve) is not supported")
            }
        } catch let error as PKIError {
            throw error
        } catch {
            throw PKIError(.invalidKey, "the issuer's EC key cannot be loaded")
        }
    }
}
