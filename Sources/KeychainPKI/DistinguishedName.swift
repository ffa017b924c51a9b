import Foundation
import SwiftASN1

/// An X.501 name (an issuer or a subject): the exact DER and its attributes, RDN by RDN.
public struct DistinguishedName: Hashable, Sendable {
    /// One attribute of a relative distinguished name: `type = value`.
    public struct Attribute: Hashable, Sendable {
        /// The attribute type, dotted (for example `"2.5.4.3"` for commonName).
        public var type: String
        /// The ASN.1 universal tag number of the value (19 PrintableString, 12 UTF8String, …).
        public var valueTag: UInt
        /// The value's content bytes, as encoded.
        public var valueBytes: [UInt8]
        /// The value's complete DER (tag, length, content).
        public var valueDER: [UInt8]
        /// The type's complete DER, as encoded.
        var typeDER: [UInt8] = []

        /// The value as text, decoded the way Apple's `copyDERThingContentDescription` decodes
        /// string types: PrintableString and IA5String as ASCII; UTF8String, GeneralString and
        /// UniversalString as UTF-8; TeletexString, VideotexString and VisibleString as Latin-1;
        /// BMPString as UTF-16BE. Nil for other types or bytes that do not decode.
        public var stringValue: String? { Self.decodeString(tag: valueTag, bytes: valueBytes) }

        static func decodeString(tag: UInt, bytes: [UInt8]) -> String? {
            switch tag {
            case 19, 22:
                guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
                return String(decoding: bytes, as: UTF8.self)
            case 12, 27, 28:
                return String(validating: bytes, as: UTF8.self)
            case 20, 21, 26:
                return String(bytes.map { Character(Unicode.Scalar($0)) })
            case 30:
                guard bytes.count % 2 == 0 else { return nil }
                let units = stride(from: 0, to: bytes.count, by: 2).map {
                    UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1])
                }
                return String(validating: units, as: UTF16.self)
            default:
                return nil
            }
        }
    }

    /// The name's complete DER (the SEQUENCE with its header).
    public var derBytes: [UInt8]
    /// The relative distinguished names in encoded order; each is a set of one or more attributes.
    public var relativeNames: [[Attribute]]

    /// Whether Apple's `parseX501NameContent` reads this name: fewer than 1024 RDNs
    /// (`MAX_ATTRIBUTE_TYPE_AND_VALUES`). Summaries, common names and e-mail addresses come
    /// from names within that limit only.
    public var isWithinAppleLimit: Bool { relativeNames.count < 1024 }

    /// Every attribute, RDN by RDN, in encoded order.
    public var attributes: [Attribute] { relativeNames.flatMap { $0 } }

    /// The string values of every attribute of `type` (dotted OID), in encoded order.
    public func strings(ofType type: String) -> [String] {
        attributes.filter { $0.type == type }.compactMap(\.stringValue)
    }

    /// Parses a Name from its DER.
    /// - Throws: ``PKIError`` `.malformed` when the bytes are not a Name.
    public init(derEncoded bytes: [UInt8]) throws {
        try self.init(node: parseDER(bytes[...], "Name"))
    }

    init(node: ASN1Node) throws {
        var rdns = try NodeList(node, .sequence, "Name")
        var parsed: [[Attribute]] = []
        while !rdns.isAtEnd {
            var set = try NodeList(rdns.next(), .set, "RelativeDistinguishedName")
            guard !set.isAtEnd else { throw PKIError.malformed("Name: empty RelativeDistinguishedName") }
            var rdn: [Attribute] = []
            while !set.isAtEnd {
                rdn.append(try Self.attribute(set.next()))
            }
            parsed.append(rdn)
        }
        self.derBytes = Array(node.encodedBytes)
        self.relativeNames = parsed
    }

    private static func attribute(_ node: ASN1Node) throws -> Attribute {
        var fields = try NodeList(node, .sequence, "AttributeTypeAndValue")
        let typeNode = try fields.next()
        let type = try objectIdentifier(typeNode, "AttributeTypeAndValue")
        let value = try fields.next()
        try fields.finish()
        let content: [UInt8]
        switch value.content {
        case .primitive(let bytes): content = Array(bytes)
        case .constructed: content = Array(value.encodedBytes.dropFirst(headerLength(value.encodedBytes)))
        }
        let tag = value.identifier.tagClass == .universal ? value.identifier.tagNumber : UInt.max
        return Attribute(
            type: type.description, valueTag: tag, valueBytes: content, valueDER: Array(value.encodedBytes),
            typeDER: Array(typeNode.encodedBytes))
    }

    /// The name normalised as Apple's `createNormalizedX501Name` does (`SecCertificate.c`), with
    /// the outer SEQUENCE: only PrintableString values change (ASCII a–z upper-cased, runs of
    /// spaces and tabs collapsed to one space, leading and trailing ones dropped); every
    /// enclosing length is re-encoded. This is `SecCertificateCopyNormalizedIssuerSequence` /
    /// `SubjectSequence`.
    public var normalizedSequence: [UInt8] { derTLV(0x30, normalizedContent) }

    /// ``normalizedSequence`` without its SEQUENCE header: Apple's `issr`/`subj` attribute.
    public var normalizedContent: [UInt8] {
        var out: [UInt8] = []
        for rdn in relativeNames {
            var set: [UInt8] = []
            for attribute in rdn {
                set += derTLV(0x30, attribute.typeDER + Self.normalizedValue(attribute))
            }
            out += derTLV(0x31, set)
        }
        return out
    }

    private static func normalizedValue(_ attribute: Attribute) -> [UInt8] {
        guard attribute.valueTag == 19 else { return attribute.valueDER }
        var out: [UInt8] = []
        var lastWasBlank = false
        for byte in attribute.valueBytes {
            if byte == 0x20 || byte == 0x09 {
                if !lastWasBlank && !out.isEmpty { out.append(0x20) }
                lastWasBlank = true
            } else {
                lastWasBlank = false
                out.append((0x61...0x7a).contains(byte) ? byte - 0x20 : byte)
            }
        }
        if lastWasBlank, out.last == 0x20 { out.removeLast() }
        return derTLV(0x13, out)
    }
}

/// The number of header (tag + length) bytes at the start of a DER TLV.
func headerLength(_ tlv: ArraySlice<UInt8>) -> Int {
    guard tlv.count >= 2 else { return tlv.count }
    var index = tlv.startIndex
    if tlv[index] & 0x1f == 0x1f {
        index += 1
        while index < tlv.endIndex, tlv[index] & 0x80 != 0 { index += 1 }
    }
    index += 1
    guard index < tlv.endIndex else { return tlv.count }
    let first = tlv[index]
    let lengthBytes = first & 0x80 == 0 ? 1 : 1 + Int(first & 0x7f)
    return min(tlv.count, index - tlv.startIndex + lengthBytes)
}
