import SwiftASN1

/// One certificate extension as encoded.
public struct X509Extension: Hashable, Sendable {
    /// The extension's OID, dotted.
    public var oid: String
    /// Whether the extension is marked critical.
    public var isCritical: Bool
    /// The content of the extension's `extnValue` OCTET STRING (the DER of the extension value).
    public var value: [UInt8]
}

/// The basicConstraints extension (RFC 5280 §4.2.1.9).
public struct BasicConstraints: Hashable, Sendable {
    /// Whether the subject is a certification authority.
    public var isCertificateAuthority: Bool
    /// The maximum number of non-self-issued intermediates that may follow, if limited.
    public var pathLengthConstraint: Int?
}

/// The keyUsage extension's bits (RFC 5280 §4.2.1.3).
public struct KeyUsage: OptionSet, Hashable, Sendable {
    /// Bit `n` of the named bit list is `1 << n`.
    public var rawValue: UInt16
    /// Creates a key-usage set from its bits.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// digitalSignature (0).
    public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
    /// nonRepudiation / contentCommitment (1).
    public static let nonRepudiation = KeyUsage(rawValue: 1 << 1)
    /// keyEncipherment (2).
    public static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
    /// dataEncipherment (3).
    public static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
    /// keyAgreement (4).
    public static let keyAgreement = KeyUsage(rawValue: 1 << 4)
    /// keyCertSign (5).
    public static let keyCertSign = KeyUsage(rawValue: 1 << 5)
    /// cRLSign (6).
    public static let cRLSign = KeyUsage(rawValue: 1 << 6)
    /// encipherOnly (7).
    public static let encipherOnly = KeyUsage(rawValue: 1 << 7)
    /// decipherOnly (8).
    public static let decipherOnly = KeyUsage(rawValue: 1 << 8)
}

/// The subjectAltName entries this module understands (RFC 5280 §4.2.1.6).
public struct SubjectAlternativeNames: Hashable, Sendable {
    /// rfc822Name entries, in order (ASCII; others are skipped).
    public var emailAddresses: [String] = []
    /// dNSName entries, in order (ASCII; others are skipped).
    public var dnsNames: [String] = []
    /// iPAddress entries: 4 bytes (IPv4) or 16 bytes (IPv6), in order.
    public var ipAddresses: [[UInt8]] = []
    /// uniformResourceIdentifier entries, in order.
    public var uris: [String] = []
    /// Every entry, in order, whatever its form (the lists above hold the ASCII ones of theirs).
    public var generalNames: [GeneralName] = []
}

/// Well-known extended-key-usage purposes (dotted OIDs).
public enum ExtendedKeyUsage {
    /// anyExtendedKeyUsage.
    public static let any = "2.5.29.37.0"
    /// id-kp-serverAuth.
    public static let serverAuth = "1.3.6.1.5.5.7.3.1"
    /// id-kp-clientAuth.
    public static let clientAuth = "1.3.6.1.5.5.7.3.2"
    /// id-kp-codeSigning.
    public static let codeSigning = "1.3.6.1.5.5.7.3.3"
    /// id-kp-emailProtection.
    public static let emailProtection = "1.3.6.1.5.5.7.3.4"
    /// id-kp-timeStamping.
    public static let timeStamping = "1.3.6.1.5.5.7.3.8"
    /// id-kp-OCSPSigning.
    public static let ocspSigning = "1.3.6.1.5.5.7.3.9"
}

/// The parsed forms of the extensions this module knows.
struct KnownExtensions: Hashable, Sendable {
    var basicConstraints: BasicConstraints?
    var keyUsage: KeyUsage?
    var extendedKeyUsage: [String]?
    var subjectAlternativeNames: SubjectAlternativeNames?
    var subjectKeyIdentifier: [UInt8]?
    var authorityKeyIdentifier: [UInt8]?
    var nameConstraints: NameConstraints?
    var hasUnknownCriticalExtension = false
    var unparseableExtensions: [String] = []

    static let knownOIDs: Set<String> = [
        OID.basicConstraints.description, OID.keyUsage.description, OID.extendedKeyUsage.description,
        OID.subjectAltName.description, OID.subjectKeyIdentifier.description,
        OID.authorityKeyIdentifier.description, OID.nameConstraints.description,
    ]

    /// Parses each known extension. A known extension that does not parse fails the certificate
    /// when critical (as Apple's `SecCertificateParse` does) and is recorded otherwise.
    init(_ extensions: [X509Extension]) throws {
        for ext in extensions {
            guard Self.knownOIDs.contains(ext.oid) else {
                if ext.isCritical { hasUnknownCriticalExtension = true }
                continue
            }
            do {
                try parse(ext)
            } catch {
                if ext.isCritical { throw PKIError.malformed("critical extension \(ext.oid) does not parse") }
                unparseableExtensions.append(ext.oid)
            }
        }
    }

    private mutating func parse(_ ext: X509Extension) throws {
        let node = try parseDER(ext.value[...], "extension \(ext.oid)")
        switch ext.oid {
        case OID.basicConstraints.description: basicConstraints = try Self.basicConstraints(node)
        case OID.keyUsage.description: keyUsage = try Self.keyUsage(node)
        case OID.extendedKeyUsage.description: extendedKeyUsage = try Self.extendedKeyUsage(node)
        case OID.subjectAltName.description: subjectAlternativeNames = try Self.generalNames(node)
        case OID.subjectKeyIdentifier.description:
            subjectKeyIdentifier = Array(try primitiveBytes(node, .octetString, "subjectKeyIdentifier"))
        case OID.authorityKeyIdentifier.description: authorityKeyIdentifier = try Self.authorityKeyID(node)
        case OID.nameConstraints.description: nameConstraints = try NameConstraints(node: node)
        default: break
        }
    }

    /// Apple's `MAX_EKUS` and `MAX_GENERAL_NAMES` (8192).
    static let maximumEntries = 8192

    static func basicConstraints(_ node: ASN1Node) throws -> BasicConstraints {
        var fields = try NodeList(node, .sequence, "basicConstraints")
        var isCA = false
        if let flag = fields.optional(.boolean) {
            let bytes = try primitiveBytes(flag, .boolean, "basicConstraints.cA")
            guard bytes.count == 1 else { throw PKIError.malformed("basicConstraints.cA: bad BOOLEAN") }
            isCA = bytes.first != 0
        }
        var pathLength: Int?
        if let length = fields.optional(.integer) {
            pathLength = try smallInteger(length, limit: Int(Int32.max), "basicConstraints.pathLen")
        }
        try fields.finish()
        return BasicConstraints(isCertificateAuthority: isCA, pathLengthConstraint: pathLength)
    }

    static func keyUsage(_ node: ASN1Node) throws -> KeyUsage {
        let bytes = try primitiveBytes(node, .bitString, "keyUsage")
        guard let unused = bytes.first, unused < 8, bytes.count <= 3 else {
            throw PKIError.malformed("keyUsage: bad BIT STRING")
        }
        var bits: UInt16 = 0
        for (byteIndex, byte) in bytes.dropFirst().enumerated() {
            for bit in 0..<8 where byte & (0x80 >> bit) != 0 {
                let position = byteIndex * 8 + bit
                if position < 16 { bits |= 1 << position }
            }
        }
        return KeyUsage(rawValue: bits)
    }

    static func extendedKeyUsage(_ node: ASN1Node) throws -> [String] {
        var list = try NodeList(node, .sequence, "extKeyUsage")
        var purposes: [String] = []
        guard list.remaining <= maximumEntries else { throw PKIError(.limitExceeded, "extKeyUsage: too many") }
        while !list.isAtEnd { purposes.append(try objectIdentifier(list.next(), "extKeyUsage").description) }
        guard !purposes.isEmpty else { throw PKIError.malformed("extKeyUsage: empty") }
        return purposes
    }

    static func generalNames(_ node: ASN1Node) throws -> SubjectAlternativeNames {
        var list = try NodeList(node, .sequence, "subjectAltName")
        var names = SubjectAlternativeNames()
        guard list.remaining <= maximumEntries else { throw PKIError(.limitExceeded, "subjectAltName: too many") }
        while !list.isAtEnd {
            let name = try GeneralName.lenient(list.next())
            names.generalNames.append(name)
            switch name {
            case .rfc822Name(let text) where text.isAllASCII: names.emailAddresses.append(text)
            case .dnsName(let text) where text.isAllASCII: names.dnsNames.append(text)
            case .uniformResourceIdentifier(let text) where text.isAllASCII: names.uris.append(text)
            case .ipAddress(let bytes):
                guard bytes.count == 4 || bytes.count == 16 else {
                    throw PKIError.malformed("subjectAltName: iPAddress of \(bytes.count) bytes")
                }
                names.ipAddresses.append(bytes)
            default: break
            }
        }
        return names
    }

    static func authorityKeyID(_ node: ASN1Node) throws -> [UInt8]? {
        var fields = try NodeList(node, .sequence, "authorityKeyIdentifier")
        while !fields.isAtEnd {
            let field = try fields.next()
            if field.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific),
                case .primitive(let bytes) = field.content
            {
                return Array(bytes)
            }
        }
        return nil
    }
}

extension String {
    /// Whether every scalar is ASCII.
    var isAllASCII: Bool { unicodeScalars.allSatisfy(\.isASCII) }
}
