import SwiftASN1

/// One GeneralName (RFC 5280 §4.2.1.6): an entry of a subjectAltName extension, or the base of a
/// name constraint (RFC 5280 §4.2.1.10).
///
/// The text of the IA5String forms is kept as encoded, decoded as UTF-8 (a byte sequence that is
/// not UTF-8 gives U+FFFD): a name that is not ASCII is therefore never mistaken for an ASCII one,
/// and name-constraint matching refuses it.
public enum GeneralName: Hashable, Sendable {
    /// rfc822Name `[1]`: an e-mail address; as a constraint, a mailbox, a host or (with a leading
    /// `.`) a domain.
    case rfc822Name(String)
    /// dNSName `[2]`: a host name; as a constraint, a domain and its subdomains, or (with a
    /// leading `.`) its subdomains only.
    case dnsName(String)
    /// directoryName `[4]`: an X.501 name; as a constraint, the names it is a prefix of.
    case directoryName(DistinguishedName)
    /// uniformResourceIdentifier `[6]`; as a constraint, the host (or, with a leading `.`, the
    /// domain) of the URIs it allows.
    case uniformResourceIdentifier(String)
    /// iPAddress `[7]`: 4 (IPv4) or 16 (IPv6) bytes in a certificate's names; as a constraint,
    /// an address followed by its mask (8 or 32 bytes).
    case ipAddress([UInt8])
    /// Any other form (otherName `[0]`, x400Address `[3]`, ediPartyName `[5]`, registeredID
    /// `[8]`), or a subjectAltName entry of one of the forms above that does not parse: its
    /// context tag number and its complete DER.
    case other(tag: UInt, derBytes: [UInt8])

    /// The context tag number of the name's form (`1` rfc822Name, `2` dNSName, `4`
    /// directoryName, `6` uniformResourceIdentifier, `7` iPAddress; any for ``other(tag:derBytes:)``).
    /// Name constraints apply to the names of the same form.
    public var tag: UInt {
        switch self {
        case .rfc822Name: 1
        case .dnsName: 2
        case .directoryName: 4
        case .uniformResourceIdentifier: 6
        case .ipAddress: 7
        case .other(let tag, _): tag
        }
    }

    /// The largest context tag a GeneralName has (registeredID).
    static let lastTag: UInt = 8

    /// Parses one GeneralName, refusing a known form whose encoding is wrong.
    init(node: ASN1Node) throws {
        let identifier = node.identifier
        guard identifier.tagClass == .contextSpecific, identifier.tagNumber <= Self.lastTag else {
            throw PKIError.malformed("GeneralName: not a context tag from [0] to [8]")
        }
        switch (identifier.tagNumber, node.content) {
        case (1, .primitive(let bytes)): self = .rfc822Name(String(decoding: bytes, as: UTF8.self))
        case (2, .primitive(let bytes)): self = .dnsName(String(decoding: bytes, as: UTF8.self))
        case (6, .primitive(let bytes)): self = .uniformResourceIdentifier(String(decoding: bytes, as: UTF8.self))
        case (7, .primitive(let bytes)): self = .ipAddress(Array(bytes))
        case (4, .constructed):
            var wrapper = try NodeList(node, .context(4), "GeneralName.directoryName")
            let name = try DistinguishedName(node: wrapper.next())
            try wrapper.finish()
            self = .directoryName(name)
        case (1, _), (2, _), (4, _), (6, _), (7, _):
            throw PKIError.malformed("GeneralName [\(identifier.tagNumber)]: wrong encoding")
        default:
            self = .other(tag: identifier.tagNumber, derBytes: Array(node.encodedBytes))
        }
    }

    /// Parses one GeneralName of a subjectAltName: an entry of a known form that does not parse
    /// is kept as ``other(tag:derBytes:)`` (so that a name constraint of its form refuses it).
    static func lenient(_ node: ASN1Node) throws -> GeneralName {
        guard node.identifier.tagClass == .contextSpecific else {
            throw PKIError.malformed("subjectAltName: GeneralName is not context-tagged")
        }
        do { return try GeneralName(node: node) } catch {
            return .other(tag: node.identifier.tagNumber, derBytes: Array(node.encodedBytes))
        }
    }
}
