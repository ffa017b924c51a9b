// `SecCertificate`: X.509 certificates with Apple's semantics (`OSX/sec/Security/SecCertificate.c`),
// parsed by KeychainPKI on swift-asn1 (never swift-certificates: see docs/keys-and-certificates.md,
// "Certificates, identities and `.p12` files").
//
// `SecCertificateCreateWithData(_:_:)` and `SecCertificateCopyData(_:)` keep Apple's exact Swift
// signatures: packages that say `#if canImport(Security)` (swift-certificates' `X509` among them)
// compile their Apple code path against this module on Linux.
//
// Linux decisions (see docs/keys-and-certificates.md):
// - The subject summary describes string attribute values only (KeychainPKI's limit).
// - `SecCertificateCopyKey` builds RSA and P-256/384/521 keys; other keys give `nil`, as Apple does
//   for algorithms it does not know.

public import _SecurityFoundation
internal import KeychainPKI

/// An X.509 certificate.
///
/// Two certificates are equal, and hash alike, when their DER bytes are equal, so pinning code can keep
/// them in a set:
///
/// ```swift
/// guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else { return }
/// let pinned: Set<SecCertificate> = [certificate]
/// ```
public final class SecCertificate: Hashable, CustomStringConvertible, Sendable {
    /// The parsed certificate.
    let certificate: X509Certificate

    init(_ certificate: X509Certificate) {
        self.certificate = certificate
    }

    /// The certificate's DER.
    var der: Data { Data(certificate.derBytes) }

    /// A description such as `<cert(0x…) s: www.example.com i: Example CA>`, as Apple prints it.
    public var description: String {
        let address = String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16)
        return "<cert(0x\(address)) s: \(certificate.subjectSummary ?? "") i: \(certificate.issuerSummary ?? "")>"
    }

    /// Certificates are equal when their DER bytes are equal.
    public static func == (lhs: SecCertificate, rhs: SecCertificate) -> Bool {
        lhs === rhs || lhs.certificate.derBytes == rhs.certificate.derBytes
    }

    /// Hashes the DER bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(certificate.derBytes)
    }
}

/// Apple's private `errSecInternal` (-26276, `SecBasePriv.h`): not in the public SecBase.h, so not a public
/// constant here either (`SecCopyErrorMessageString` gives "OSStatus -26276", as on Apple platforms).
let errSecInternalPrivate: OSStatus = -26276

/// The type identifier of ``SecCertificate`` objects.
public func SecCertificateGetTypeID() -> CFTypeID { 0x5EC0_0003 }

/// Creates a certificate from its DER encoding.
///
/// ```swift
/// guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else {
///     // not a DER certificate (PEM text is refused too)
/// }
/// ```
///
/// As on Apple platforms, bytes after the certificate are ignored: ``SecCertificateCopyData(_:)``
/// returns the certificate's bytes only.
/// - Parameters:
///   - allocator: Ignored on Linux; pass `nil` or `kCFAllocatorDefault`.
///   - data: The DER of an X.509 certificate.
/// - Returns: The certificate, or `nil` when the bytes are not a DER certificate.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    guard let certificate = try? X509Certificate(leadingCertificateIn: bytes(of: data)) else { return nil }
    return SecCertificate(certificate)
}

/// Returns the DER encoding of a certificate: exactly the bytes it was parsed from.
///
/// ```swift
/// let der = SecCertificateCopyData(certificate) as Data
/// ```
/// - Parameter certificate: The certificate.
/// - Returns: The certificate's DER.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    NSData(data: certificate.der)
}

/// Returns a human-readable summary of a certificate's subject, as Keychain Access shows it.
///
/// The common name when there is one (several joined newest first with ", "); otherwise the first
/// e-mail address or DNS name of the certificate, the organizational unit or the organization.
/// - Parameter certificate: The certificate.
/// - Returns: The summary, or `nil` when the subject has nothing to show.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.certificate.subjectSummary.map { NSString(string: $0) }
}

/// Returns the last common name of a certificate's subject.
///
/// ```swift
/// var name: CFString?
/// if SecCertificateCopyCommonName(certificate, &name) == errSecSuccess { … }
/// ```
/// - Parameters:
///   - certificate: The certificate.
///   - commonName: Receives the common name, or `nil` when there is none.
/// - Returns: `errSecSuccess`, or -26276 (Apple's private errSecInternal) when the subject has no common name (or one
///   whose value is not a string).
@discardableResult
public func SecCertificateCopyCommonName(
    _ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>
) -> OSStatus {
    guard let name = certificate.certificate.commonName else {
        commonName.pointee = nil
        return errSecInternalPrivate
    }
    commonName.pointee = NSString(string: name)
    return errSecSuccess
}

/// Returns a certificate's e-mail addresses: the subject alternative name's RFC 822 names, then the
/// subject's emailAddress attributes.
///
/// - Parameters:
///   - certificate: The certificate.
///   - emailAddresses: Receives an array of strings; empty when the certificate has none.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecCertificateCopyEmailAddresses(
    _ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    emailAddresses.pointee = NSArray(array: certificate.certificate.emailAddresses.map { NSString(string: $0) })
    return errSecSuccess
}

/// Returns a certificate's serial number: the INTEGER's content bytes as encoded, a leading `00`
/// included.
///
/// - Parameters:
///   - certificate: The certificate.
///   - error: Not written: a parsed certificate always has a serial number.
/// - Returns: The serial number bytes.
public func SecCertificateCopySerialNumberData(
    _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    NSData(data: Data(certificate.certificate.serialNumberData))
}

/// Returns a certificate's issuer name, normalized as Apple stores it for searches: a SEQUENCE of the
/// relative distinguished names with PrintableString values upper-cased and their blanks collapsed.
///
/// - Parameter certificate: The certificate.
/// - Returns: The DER of the normalized name.
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    NSData(data: Data(certificate.certificate.normalizedIssuerSequence))
}

/// Returns a certificate's subject name, normalized as ``SecCertificateCopyNormalizedIssuerSequence(_:)``
/// normalizes the issuer.
///
/// - Parameter certificate: The certificate.
/// - Returns: The DER of the normalized name.
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    NSData(data: Data(certificate.certificate.normalizedSubjectSequence))
}

/// Returns the public key of a certificate.
///
/// ```swift
/// let key = SecCertificateCopyKey(certificate)
/// SecKeyVerifySignature(key!, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData, nil)
/// ```
/// - Parameter certificate: The certificate.
/// - Returns: An RSA or EC (P-256, P-384, P-521) public key, or `nil` for any other key.
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    let info = certificate.certificate.publicKeyInfo
    switch info.keyType {
    case .rsa: return try? importRSAPublic(Data(info.keyBytes))
    case .ec: return try? importECPublic(Data(info.keyBytes))
    case .other: return nil
    }
}
