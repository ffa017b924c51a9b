import Crypto
import Foundation

/// The values Apple's `SecCertificate` derives from a certificate (`SecCertificate.c`).
extension X509Certificate {
    /// `SecCertificateCopySubjectSummary`.
    ///
    /// Among the subject's attributes, the most desired type present wins: commonName, then
    /// organizationalUnitName, then organizationName, then any other string attribute; every
    /// value of that type is joined newest first with ", ". A description attribute next to a
    /// commonName gives "CN (description)". Without a commonName, the first e-mail address
    /// (subjectAltName, then subject emailAddress) replaces the summary, or failing that the
    /// first DNS-name-shaped subjectAltName dNSName.
    public var subjectSummary: String? {
        var summary = Self.nameSummary(subject)
        if summary.rank != .commonName, let replacement = emailAddresses.first ?? summaryDNSNames.first {
            summary.text = replacement
        }
        return summary.text
    }

    /// The same ranking over the issuer name (`SecCertificateCopyIssuerSummary`), without the
    /// e-mail and DNS fallbacks.
    public var issuerSummary: String? { Self.nameSummary(issuer).text }

    /// Every commonName of the subject, in encoded order. Nil when there is none, or when a
    /// commonName's value is not a string (Apple then fails the whole list).
    public var commonNames: [String]? {
        guard subject.isWithinAppleLimit else { return nil }
        let values = subject.attributes.filter { $0.type == OID.commonName.description }
        let strings = values.compactMap(\.stringValue)
        guard !values.isEmpty, strings.count == values.count else { return nil }
        return strings
    }

    /// `SecCertificateCopyCommonName`: the **last** commonName, or nil (Apple: -26276).
    public var commonName: String? { commonNames?.last }

    /// `SecCertificateCopyEmailAddresses`: subjectAltName rfc822Names, then subject
    /// emailAddress attributes; empty when there are none.
    public var emailAddresses: [String] {
        let fromSAN = subjectAlternativeNames?.emailAddresses ?? []
        let fromSubject = subject.isWithinAppleLimit ? subject.strings(ofType: OID.emailAddress.description) : []
        return fromSAN + fromSubject
    }

    /// `SecCertificateCopySerialNumberData` (Apple's `slnr`): ``serialNumber``.
    public var serialNumberData: [UInt8] { serialNumber }

    /// `SecCertificateCopyNormalizedIssuerSequence`.
    public var normalizedIssuerSequence: [UInt8] { issuer.normalizedSequence }

    /// `SecCertificateCopyNormalizedSubjectSequence`.
    public var normalizedSubjectSequence: [UInt8] { subject.normalizedSequence }

    /// Apple's `pkhh` (`kSecAttrPublicKeyHash`): SHA-1 of the subjectPublicKey BIT STRING's
    /// contents. It equals `klbl` of the matching private key.
    public var publicKeyHash: [UInt8] { Array(Insecure.SHA1.hash(data: publicKeyInfo.keyBytes)) }

    /// The label Apple infers when a certificate is added without one (`infer_cert_label`):
    /// the subject summary.
    public var inferredLabel: String? { subjectSummary }

    /// The attributes Apple stores for a certificate item (`SecCertificateCopyAttributeDictionary`).
    public var keychainAttributes: CertificateKeychainAttributes {
        CertificateKeychainAttributes(
            certificateType: version, certificateEncoding: 3,
            subject: subject.normalizedContent, issuer: issuer.normalizedContent,
            serialNumber: serialNumber, subjectKeyID: subjectKeyIdentifier,
            publicKeyHash: publicKeyHash, label: inferredLabel)
    }

    /// SAN dNSNames that pass Apple's `SecFrameworkIsDNSName` (so never IP addresses).
    var summaryDNSNames: [String] {
        (subjectAlternativeNames?.dnsNames ?? []).filter(Self.isDNSName)
    }

    enum SummaryRank: Int, Comparable {
        case none, printable, organization, organizationalUnit, commonName
        static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    struct NameSummary {
        var rank = SummaryRank.none
        var text: String?
        var description: String?
    }

    static func nameSummary(_ name: DistinguishedName) -> NameSummary {
        var summary = NameSummary()
        guard name.isWithinAppleLimit else { return summary }
        for attribute in name.attributes {
            let string = attribute.stringValue
            var rank = SummaryRank.printable
            switch attribute.type {
            case OID.commonName.description: rank = .commonName
            case OID.organizationalUnitName.description: rank = .organizationalUnit
            case OID.organizationName.description: rank = .organization
            case OID.description.description:
                guard let string else { rank = .none; break }
                summary.description = summary.description.map { "\(string), \($0)" } ?? string
            default: break
            }
            guard summary.rank <= rank, let string else { continue }
            if summary.rank == rank, let current = summary.text {
                summary.text = "\(string), \(current)"
            } else {
                summary.rank = rank
                summary.text = string
            }
        }
        if let description = summary.description, summary.rank == .commonName, let text = summary.text {
            summary.text = "\(text) (\(description))"
        }
        return summary
    }

    /// Apple's `SecFrameworkIsDNSName`.
    static func isDNSName(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard scalars.count <= 255 else { return false }
        enum State { case initial, afterDot, afterAlpha, afterDigit, afterDash }
        var state = State.initial
        var labelLength = 0
        var labelHasAlpha = false
        for scalar in scalars {
            labelLength += 1
            switch scalar {
            case ".":
                guard labelLength <= 64, state == .afterAlpha || state == .afterDigit else { return false }
                state = .afterDot
                labelHasAlpha = false
                labelLength = 0
            case "A"..."Z", "a"..."z", "*":
                state = .afterAlpha
                labelHasAlpha = true
            case "0"..."9":
                state = .afterDigit
            case "-":
                guard state == .afterAlpha || state == .afterDigit || state == .afterDash else { return false }
                state = .afterDash
            case "_":
                state = .afterAlpha
            default:
                return false
            }
        }
        return labelLength <= 63 && (state == .afterAlpha || state == .afterDigit) && labelHasAlpha
    }
}

/// The attributes Apple stores for a certificate item (`SecCertificateCopyAttributeDictionary`,
/// plus the label `infer_cert_label` adds).
public struct CertificateKeychainAttributes: Hashable, Sendable {
    /// `ctyp` (`kSecAttrCertificateType`): the X.509 version, 1–3.
    public var certificateType: Int
    /// `cenc` (`kSecAttrCertificateEncoding`): 3, DER.
    public var certificateEncoding: Int
    /// `subj` (`kSecAttrSubject`): the normalised subject without its SEQUENCE header.
    public var subject: [UInt8]
    /// `issr` (`kSecAttrIssuer`): the normalised issuer without its SEQUENCE header.
    public var issuer: [UInt8]
    /// `slnr` (`kSecAttrSerialNumber`): the serial number's content bytes.
    public var serialNumber: [UInt8]
    /// `skid` (`kSecAttrSubjectKeyID`), when the certificate has one.
    public var subjectKeyID: [UInt8]?
    /// `pkhh` (`kSecAttrPublicKeyHash`): SHA-1 of the public key bytes.
    public var publicKeyHash: [UInt8]
    /// `labl` inferred when none is given: the subject summary.
    public var label: String?
}
