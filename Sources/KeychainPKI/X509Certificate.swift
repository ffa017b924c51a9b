import Crypto
import Foundation
import SwiftASN1

/// An algorithm identifier: an OID and its parameters, as encoded.
public struct AlgorithmIdentifier: Hashable, Sendable {
    /// The algorithm's OID, dotted.
    public var oid: String
    /// The DER of the parameters field, or nil when it is absent.
    public var parameters: [UInt8]?

    init(node: ASN1Node, _ context: String) throws {
        var fields = try NodeList(node, .sequence, context)
        oid = try objectIdentifier(fields.next(), context).description
        parameters = fields.isAtEnd ? nil : Array(try fields.next().encodedBytes)
        try fields.finish()
    }
}

/// A certificate's subjectPublicKeyInfo.
public struct SubjectPublicKeyInfo: Hashable, Sendable {
    /// The kind of key, as far as this module knows it.
    public enum KeyType: Hashable, Sendable {
        /// An RSA key (rsaEncryption or RSASSA-PSS SPKI).
        case rsa
        /// An elliptic-curve key on P-256, P-384 or P-521 (or another named curve, by OID).
        case ec(curveOID: String)
        /// Any other key algorithm, by OID.
        case other(oid: String)
    }

    /// The SubjectPublicKeyInfo's complete DER.
    public var derBytes: [UInt8]
    /// The key algorithm.
    public var algorithm: AlgorithmIdentifier
    /// The contents of the subjectPublicKey BIT STRING, without its unused-bits octet: PKCS#1
    /// RSAPublicKey DER for RSA, the X9.63 point (04‖X‖Y) for EC.
    public var keyBytes: [UInt8]

    /// The key type derived from the algorithm OID and parameters.
    public var keyType: KeyType {
        switch algorithm.oid {
        case OID.Dotted.rsaEncryption, OID.Dotted.rsaPSS: return .rsa
        case OID.Dotted.ecPublicKey:
            if let parameters = algorithm.parameters,
                let node = try? DER.parse(parameters),
                let curve = try? objectIdentifier(node, "curve")
            {
                switch curve {
                case OID.p256: return .ec(curveOID: OID.Dotted.p256)
                case OID.p384: return .ec(curveOID: OID.Dotted.p384)
                case OID.p521: return .ec(curveOID: OID.Dotted.p521)
                default: return .ec(curveOID: curve.description)
                }
            }
            return .other(oid: algorithm.oid)
        default: return .other(oid: algorithm.oid)
        }
    }

    init(node: ASN1Node) throws {
        var fields = try NodeList(node, .sequence, "SubjectPublicKeyInfo")
        algorithm = try AlgorithmIdentifier(node: fields.next(), "SubjectPublicKeyInfo.algorithm")
        let bits = try primitiveBytes(fields.next(), .bitString, "subjectPublicKey")
        guard let unused = bits.first, unused < 8 else { throw PKIError.malformed("subjectPublicKey: bad BIT STRING") }
        keyBytes = Array(bits.dropFirst())
        try fields.finish()
        derBytes = Array(node.encodedBytes)
    }
}

/// An X.509 certificate parsed from DER, with the values Apple's `SecCertificate` derives.
///
/// ```swift
/// let certificate = try X509Certificate(derEncoded: der)
/// certificate.subjectSummary      // "www.example.com"
/// certificate.publicKeyHash       // SHA-1 of the key bytes: Apple's `pkhh`
/// ```
///
/// Two certificates are equal, and hash equally, when their DER bytes are equal.
public struct X509Certificate: Hashable, Sendable {
    /// Exactly the bytes the certificate was parsed from.
    public let derBytes: [UInt8]
    /// The complete DER of tbsCertificate: the bytes the issuer signed.
    public let tbsBytes: [UInt8]
    /// The X.509 version number: 1, 2 or 3 (Apple's `ctyp`).
    public let version: Int
    /// The serial number INTEGER's content bytes as encoded, a leading 00 included
    /// (`SecCertificateCopySerialNumberData`, Apple's `slnr`).
    public let serialNumber: [UInt8]
    /// The signature algorithm inside tbsCertificate.
    public let tbsSignatureAlgorithm: AlgorithmIdentifier
    /// The signature algorithm of the outer certificate (the one used to verify).
    public let signatureAlgorithm: AlgorithmIdentifier
    /// The issuer name.
    public let issuer: DistinguishedName
    /// The subject name.
    public let subject: DistinguishedName
    /// The start of the validity period.
    public let notValidBefore: Date
    /// The end of the validity period.
    public let notValidAfter: Date
    /// The subject public key.
    public let publicKeyInfo: SubjectPublicKeyInfo
    /// Every extension, in encoded order.
    public let extensions: [X509Extension]
    /// The signature bytes (the BIT STRING's content without its unused-bits octet).
    public let signature: [UInt8]
    let known: KnownExtensions

    /// Parses a DER certificate.
    ///
    /// The bytes must be exactly one certificate: PEM text, trailing bytes, BER encodings and
    /// structures that do not parse are refused.
    /// - Parameter bytes: the certificate's DER.
    /// - Throws: ``PKIError`` with code `.pemNotAccepted`, `.trailingBytes`, `.malformed`,
    ///   or `.limitExceeded` (more than 10,000 extensions).
    public init(derEncoded bytes: some Collection<UInt8>) throws {
        let bytes = Array(bytes)
        if bytes.first != 0x30 && Self.looksLikePEM(bytes) {
            throw PKIError(.pemNotAccepted, "certificate: PEM text given where DER is expected")
        }
        let length = try Self.firstElementLength(bytes)
        guard length == bytes.count else {
            throw PKIError(.trailingBytes, "certificate: \(bytes.count - length) bytes follow the certificate")
        }
        try self.init(node: parseDER(bytes[...], "Certificate"))
    }

    /// Parses the certificate at the start of `bytes` and ignores whatever follows it, as
    /// Apple's `SecCertificateCreateWithData` does; ``derBytes`` then holds only the certificate.
    /// - Throws: ``PKIError`` as ``init(derEncoded:)``, never `.trailingBytes`.
    public init(leadingCertificateIn bytes: some Collection<UInt8>) throws {
        let bytes = Array(bytes)
        let length = try Self.firstElementLength(bytes)
        try self.init(derEncoded: bytes.prefix(length))
    }

    private static func looksLikePEM(_ bytes: [UInt8]) -> Bool {
        let text = String(decoding: bytes.prefix(256), as: UTF8.self)
        return text.contains("-----BEGIN ")
    }

    /// The length of the first TLV in `bytes` (definite lengths only).
    static func firstElementLength(_ bytes: [UInt8]) throws -> Int {
        guard bytes.count >= 2, bytes[0] == 0x30 else {
            throw PKIError.malformed("certificate: does not start with a SEQUENCE")
        }
        let first = bytes[1]
        if first < 0x80 { return 2 + Int(first) }
        let count = Int(first & 0x7f)
        guard count >= 1, count <= 4, bytes.count >= 2 + count else {
            throw PKIError.malformed("certificate: bad length")
        }
        let length = bytes[2..<(2 + count)].reduce(0) { $0 << 8 | Int($1) }
        guard length <= bytes.count - 2 - count else { throw PKIError.malformed("certificate: truncated") }
        return 2 + count + length
    }

    init(node: ASN1Node) throws {
        var outer = try NodeList(node, .sequence, "Certificate")
        let tbsNode = try outer.next(.sequence)
        signatureAlgorithm = try AlgorithmIdentifier(node: outer.next(), "Certificate.signatureAlgorithm")
        let bits = try primitiveBytes(outer.next(), .bitString, "Certificate.signature")
        guard let unused = bits.first, unused == 0 else { throw PKIError.malformed("signature: bad BIT STRING") }
        signature = Array(bits.dropFirst())
        try outer.finish()

        var tbs = try NodeList(tbsNode, .sequence, "TBSCertificate")
        version = try Self.version(tbs.optional(.context(0)))
        serialNumber = try Self.serial(tbs.next())
        tbsSignatureAlgorithm = try AlgorithmIdentifier(node: tbs.next(), "TBSCertificate.signature")
        issuer = try DistinguishedName(node: tbs.next())
        (notValidBefore, notValidAfter) = try Self.validity(tbs.next())
        subject = try DistinguishedName(node: tbs.next())
        publicKeyInfo = try SubjectPublicKeyInfo(node: tbs.next())
        _ = tbs.optional(ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific))
        _ = tbs.optional(ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific))
        extensions = try Self.extensions(tbs.optional(.context(3)))
        try tbs.finish()
        known = try KnownExtensions(extensions)
        derBytes = Array(node.encodedBytes)
        tbsBytes = Array(tbsNode.encodedBytes)
    }

    private static func version(_ node: ASN1Node?) throws -> Int {
        guard let node else { return 1 }
        var wrapper = try NodeList(node, .context(0), "version")
        let bytes = try primitiveBytes(wrapper.next(), .integer, "version")
        try wrapper.finish()
        // As Apple: an explicit version is one byte, 1 (v2) or 2 (v3).
        guard bytes.count == 1, let raw = bytes.first, raw == 1 || raw == 2 else {
            throw PKIError.malformed("version: must be v2 or v3 when present")
        }
        return Int(raw) + 1
    }

    private static func serial(_ node: ASN1Node) throws -> [UInt8] {
        let bytes = try primitiveBytes(node, .integer, "serialNumber")
        guard (1...37).contains(bytes.count) else {
            throw PKIError.malformed("serialNumber: \(bytes.count) bytes (Apple accepts 1 to 37)")
        }
        return Array(bytes)
    }

    private static func validity(_ node: ASN1Node) throws -> (Date, Date) {
        var fields = try NodeList(node, .sequence, "Validity")
        let notBefore = try X509Time.date(fields.next())
        let notAfter = try X509Time.date(fields.next())
        try fields.finish()
        return (notBefore, notAfter)
    }

    private static let maximumExtensions = 10_000

    private static func extensions(_ node: ASN1Node?) throws -> [X509Extension] {
        guard let node else { return [] }
        var wrapper = try NodeList(node, .context(3), "extensions")
        var list = try NodeList(wrapper.next(), .sequence, "Extensions")
        try wrapper.finish()
        guard !list.isAtEnd else { throw PKIError.malformed("Extensions: empty") }
        guard list.remaining < maximumExtensions else {
            throw PKIError(.limitExceeded, "Extensions: more than \(maximumExtensions)")
        }
        var result: [X509Extension] = []
        while !list.isAtEnd {
            var fields = try NodeList(list.next(), .sequence, "Extension")
            let oid = try objectIdentifier(fields.next(), "Extension.extnID").description
            var critical = false
            if let flag = fields.optional(.boolean) {
                let bytes = try primitiveBytes(flag, .boolean, "Extension.critical")
                guard bytes.count == 1 else { throw PKIError.malformed("Extension.critical: bad BOOLEAN") }
                critical = bytes.first != 0
            }
            let value = try primitiveBytes(fields.next(), .octetString, "Extension.extnValue")
            try fields.finish()
            result.append(X509Extension(oid: oid, isCritical: critical, value: Array(value)))
        }
        return result
    }

    /// Equal when the DER bytes are equal.
    public static func == (lhs: X509Certificate, rhs: X509Certificate) -> Bool { lhs.derBytes == rhs.derBytes }

    /// Hashes the DER bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }
}

extension X509Certificate {
    /// The basicConstraints extension, if present and parsed.
    public var basicConstraints: BasicConstraints? { known.basicConstraints }
    /// The keyUsage extension, if present and parsed.
    public var keyUsage: KeyUsage? { known.keyUsage }
    /// The extendedKeyUsage purposes (dotted OIDs), if the extension is present and parsed.
    public var extendedKeyUsage: [String]? { known.extendedKeyUsage }
    /// The subjectAltName entries, if the extension is present and parsed.
    public var subjectAlternativeNames: SubjectAlternativeNames? { known.subjectAlternativeNames }
    /// The subjectKeyIdentifier (Apple's `skid`), if present.
    public var subjectKeyIdentifier: [UInt8]? { known.subjectKeyIdentifier }
    /// The keyIdentifier of the authorityKeyIdentifier extension, if present.
    public var authorityKeyIdentifier: [UInt8]? { known.authorityKeyIdentifier }
    /// The nameConstraints extension (RFC 5280 §4.2.1.10), if present and parsed. One that does
    /// not parse makes the certificate fail to parse when critical, and is listed in
    /// ``unparseableExtensions`` otherwise (a validator must then refuse the chain).
    public var nameConstraints: NameConstraints? { known.nameConstraints }
    /// Whether a critical extension this module does not know is present (a validator must
    /// then refuse the certificate).
    public var hasUnknownCriticalExtension: Bool { known.hasUnknownCriticalExtension }
    /// OIDs of known, non-critical extensions that did not parse (they are ignored).
    public var unparseableExtensions: [String] { known.unparseableExtensions }
    /// Whether two extensions share an OID.
    public var hasDuplicateExtensions: Bool { Set(extensions.map(\.oid)).count != extensions.count }
    /// Whether the issuer name equals the subject name byte for byte (after Apple's normalisation).
    public var isSelfIssued: Bool { issuer.normalizedContent == subject.normalizedContent }

    /// Whether `date` lies within the validity period, both ends included (as Apple's
    /// `SecCertificateIsValid`).
    public func isValid(at date: Date) -> Bool { notValidBefore <= date && date <= notValidAfter }
}

/// UTCTime and GeneralizedTime to `Date`.
enum X509Time {
    static func date(_ node: ASN1Node) throws -> Date {
        do {
            if node.identifier == .utcTime {
                let time = try UTCTime(derEncoded: node)
                return make(time.year, time.month, time.day, time.hours, time.minutes, time.seconds, 0)
            }
            if node.identifier == .generalizedTime {
                let time = try GeneralizedTime(derEncoded: node)
                return make(
                    time.year, time.month, time.day, time.hours, time.minutes, time.seconds,
                    time.fractionalSeconds)
            }
        } catch {
            throw PKIError.malformed("Validity: bad time")
        }
        throw PKIError.malformed("Validity: expected UTCTime or GeneralizedTime")
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func make(
        _ year: Int, _ month: Int, _ day: Int, _ hours: Int, _ minutes: Int, _ seconds: Int, _ fraction: Double
    ) -> Date {
        let days = daysFromCivil(year, month, day)
        let total = Double(days * 86_400 + hours * 3_600 + minutes * 60 + seconds) + fraction
        return Date(timeIntervalSince1970: total)
    }
}
