import SwiftASN1

/// Reading helpers over swift-asn1 nodes: each check throws a ``PKIError`` with code `.malformed`.
struct NodeList {
    private var nodes: [ASN1Node]
    private var index = 0
    let context: String

    /// The children of a constructed node whose identifier must be `tag`.
    init(_ node: ASN1Node, _ tag: ASN1Identifier, _ context: String) throws {
        guard node.identifier == tag, case .constructed(let children) = node.content else {
            throw PKIError.malformed("\(context): expected a constructed \(tag)")
        }
        self.nodes = Array(children)
        self.context = context
    }

    var isAtEnd: Bool { index >= nodes.count }
    var remaining: Int { nodes.count - index }

    /// The next node, whatever its tag.
    mutating func next() throws -> ASN1Node {
        guard index < nodes.count else { throw PKIError.malformed("\(context): missing field") }
        defer { index += 1 }
        return nodes[index]
    }

    /// The next node, which must have identifier `tag`.
    mutating func next(_ tag: ASN1Identifier) throws -> ASN1Node {
        let node = try next()
        guard node.identifier == tag else {
            throw PKIError.malformed("\(context): expected \(tag), found \(node.identifier)")
        }
        return node
    }

    /// The next node if it has identifier `tag`, else nil (nothing consumed).
    mutating func optional(_ tag: ASN1Identifier) -> ASN1Node? {
        guard index < nodes.count, nodes[index].identifier == tag else { return nil }
        defer { index += 1 }
        return nodes[index]
    }

    /// Throws unless every child was read.
    func finish() throws {
        guard isAtEnd else { throw PKIError.malformed("\(context): unexpected extra fields") }
    }
}

extension ASN1Identifier {
    static func context(_ number: UInt, constructed: Bool = true) -> ASN1Identifier {
        ASN1Identifier(tagWithNumber: number, tagClass: .contextSpecific)
    }
}

/// The content bytes of a primitive node with identifier `tag`.
func primitiveBytes(_ node: ASN1Node, _ tag: ASN1Identifier, _ context: String) throws -> ArraySlice<UInt8> {
    guard node.identifier == tag, case .primitive(let bytes) = node.content else {
        throw PKIError.malformed("\(context): expected a primitive \(tag)")
    }
    return bytes
}

/// The content bytes of an OCTET STRING (or an implicitly tagged one), primitive or, in BER,
/// constructed from nested segments.
func octetStringBytes(_ node: ASN1Node, _ tag: ASN1Identifier = .octetString, ber: Bool, _ context: String)
    throws -> [UInt8]
{
    guard node.identifier == tag else { throw PKIError.malformed("\(context): expected \(tag)") }
    switch node.content {
    case .primitive(let bytes):
        return Array(bytes)
    case .constructed(let children):
        guard ber else { throw PKIError.malformed("\(context): constructed OCTET STRING in DER") }
        var out: [UInt8] = []
        for child in children {
            out += try octetStringBytes(child, .octetString, ber: true, context)
        }
        return out
    }
}

/// A ContentInfo (RFC 5652, section 3; PKCS #7): its content type and the node inside its
/// `[0] EXPLICIT` content, nothing else after either.
func contentInfo(_ node: ASN1Node, _ context: String) throws -> (type: ASN1ObjectIdentifier, content: ASN1Node) {
    var fields = try NodeList(node, .sequence, context)
    let type = try objectIdentifier(fields.next(), "ContentInfo.contentType")
    var explicit = try NodeList(fields.next(), .context(0), "ContentInfo.content")
    let content = try explicit.next()
    try explicit.finish()
    try fields.finish()
    return (type, content)
}

/// An OBJECT IDENTIFIER node.
func objectIdentifier(_ node: ASN1Node, _ context: String) throws -> ASN1ObjectIdentifier {
    guard node.identifier == .objectIdentifier else {
        throw PKIError.malformed("\(context): expected an OBJECT IDENTIFIER")
    }
    do { return try ASN1ObjectIdentifier(derEncoded: node) } catch {
        throw PKIError.malformed("\(context): bad OBJECT IDENTIFIER")
    }
}

/// A non-negative INTEGER that fits in an `Int`, refusing values above `limit`.
func smallInteger(_ node: ASN1Node, limit: Int, _ context: String) throws -> Int {
    let bytes = try primitiveBytes(node, .integer, context)
    guard let first = bytes.first, first & 0x80 == 0 else {
        throw PKIError.malformed("\(context): expected a non-negative INTEGER")
    }
    let significant = bytes.drop { $0 == 0 }
    guard significant.count <= 7 else {
        throw PKIError(.limitExceeded, "\(context): \(bytes.count)-byte integer is over the limit of \(limit)")
    }
    let value = significant.reduce(0) { $0 << 8 | Int($1) }
    guard value <= limit else {
        throw PKIError(.limitExceeded, "\(context): \(value) is over the limit of \(limit)")
    }
    return value
}

/// Wraps swift-asn1 errors in ``PKIError``.
func parseDER(_ bytes: ArraySlice<UInt8>, _ context: String) throws -> ASN1Node {
    do { return try DER.parse(bytes) } catch let error as PKIError { throw error } catch {
        throw PKIError.malformed("\(context): not DER")
    }
}

/// Wraps swift-asn1 errors in ``PKIError``.
func parseBER(_ bytes: ArraySlice<UInt8>, _ context: String) throws -> ASN1Node {
    do { return try BER.parse(bytes) } catch let error as PKIError { throw error } catch {
        throw PKIError.malformed("\(context): not BER")
    }
}

/// DER length octets for `length`.
func derLength(_ length: Int) -> [UInt8] {
    if length < 0x80 { return [UInt8(length)] }
    var bytes: [UInt8] = []
    var value = length
    while value > 0 {
        bytes.insert(UInt8(value & 0xff), at: 0)
        value >>= 8
    }
    return [0x80 | UInt8(bytes.count)] + bytes
}

/// A DER TLV with a one-byte tag.
func derTLV(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
    [tag] + derLength(content.count) + content
}
