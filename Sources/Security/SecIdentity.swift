// `SecIdentity`: a certificate with its private key (`OSX/sec/Security/SecIdentity.c`), and the
// conversions between `SecKey` and the PKCS#8 keys that PKCS#12 files carry.

internal import Crypto
internal import CryptoExtras
internal import _SecurityFoundation
internal import KeychainPKI

/// A digital identity: a certificate together with the private key that matches its public key.
///
/// ```swift
/// var certificate: SecCertificate?
/// var key: SecKey?
/// SecIdentityCopyCertificate(identity, &certificate)
/// SecIdentityCopyPrivateKey(identity, &key)
/// ```
///
/// Identities are equal when both their certificates and their keys are equal.
public final class SecIdentity: Hashable, CustomStringConvertible, Sendable {
    /// The certificate.
    let certificate: SecCertificate
    /// The private key; its public key is the certificate's.
    let privateKey: SecKey

    init(certificate: SecCertificate, privateKey: SecKey) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// `<SecIdentityRef: 0x…>`, as Apple prints it; never any key material.
    public var description: String {
        "<SecIdentityRef: 0x\(String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16))>"
    }

    /// Identities are equal when their certificates and their private keys are equal.
    public static func == (lhs: SecIdentity, rhs: SecIdentity) -> Bool {
        lhs === rhs || (lhs.certificate == rhs.certificate && lhs.privateKey == rhs.privateKey)
    }

    /// Hashes the certificate and the key.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(certificate)
        hasher.combine(privateKey)
    }
}

/// The type identifier of ``SecIdentity`` objects.
public func SecIdentityGetTypeID() -> CFTypeID { 0x5EC0_0004 }

/// Creates an identity from a certificate and its private key.
///
/// ```swift
/// let identity = SecIdentityCreate(nil, certificate, privateKey)
/// ```
/// - Parameters:
///   - allocator: Ignored on Linux; pass `nil`.
///   - certificate: The certificate.
///   - privateKey: The private key whose public key is the certificate's.
/// - Returns: The identity, or `nil` when the key is not private or does not match the certificate.
public func SecIdentityCreate(
    _ allocator: CFAllocator?, _ certificate: SecCertificate, _ privateKey: SecKey
) -> SecIdentity? {
    guard privateKey.isPrivate, let certificateKey = SecCertificateCopyKey(certificate),
        let publicKey = SecKeyCopyPublicKey(privateKey),
        publicKey.externalRepresentation == certificateKey.externalRepresentation
    else { return nil }
    return SecIdentity(certificate: certificate, privateKey: privateKey)
}

/// Returns the certificate of an identity.
///
/// - Parameters:
///   - identityRef: The identity.
///   - certificateRef: Receives the certificate.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecIdentityCopyCertificate(
    _ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>
) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// Returns the private key of an identity.
///
/// - Parameters:
///   - identityRef: The identity.
///   - privateKeyRef: Receives the private key.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecIdentityCopyPrivateKey(
    _ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>
) -> OSStatus {
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}

// MARK: - PKCS#8

/// The private `SecKey` of a PKCS#8 key found in a PKCS#12 file.
/// - Throws: `SecError(errSecDecode)` when swift-crypto cannot load it or the curve is not supported.
func secKey(fromPKCS8 key: PKCS12PrivateKey) throws -> SecKey {
    let der = Data(key.pkcs8DER)
    do {
        switch key.keyType {
        case .rsa:
            let rsa = try _RSA.Signing.PrivateKey(unsafeDERRepresentation: der)
            return SecKey(.rsaPrivate(RSAPrivateKeyBacking(key: rsa, der: rsa.derRepresentation)))
        case .ec:
            if let key = try? P256.Signing.PrivateKey(derRepresentation: der) { return SecKey(.ecPrivate(key)) }
            if let key = try? P384.Signing.PrivateKey(derRepresentation: der) { return SecKey(.ecPrivate(key)) }
            return SecKey(.ecPrivate(try P521.Signing.PrivateKey(derRepresentation: der)))
        }
    } catch {
        throw SecError(errSecDecode)
    }
}

/// The PKCS#8 PrivateKeyInfo DER of a private key. **Secret.**
/// - Throws: `SecError(errSecParam)` for a public key, `SecError(errSecUnimplemented)` for a token key.
func pkcs8DER(of key: SecKey) throws -> Data {
    switch key.backing {
    case .rsaPrivate(let rsa):
        return rsa.key.pkcs8DERRepresentation
    case .ecPrivate(let ec):
        switch ec.curve {
        case .p256: return try P256.Signing.PrivateKey(x963Representation: ec.x963).derRepresentation
        case .p384: return try P384.Signing.PrivateKey(x963Representation: ec.x963).derRepresentation
        case .p521: return try P521.Signing.PrivateKey(x963Representation: ec.x963).derRepresentation
        }
    case .ecPublic, .rsaPublic:
        throw SecError(errSecParam)
    case .token:
        // A token key never leaves its token (as on Apple platforms, where export is -4).
        throw SecError(errSecUnimplemented)
    }
}
