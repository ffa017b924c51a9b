import SwiftASN1

/// The nameConstraints extension of a CA certificate (RFC 5280 §4.2.1.10): the names the
/// certificates below it may carry.
///
/// A name is checked against the subtrees of its own form only. When some permitted subtree has
/// the name's form, the name must lie within one of them; it must lie within no excluded subtree
/// of its form. A name of a form this module does not match (otherName, x400Address,
/// ediPartyName, registeredID), or one whose text is not ASCII, is refused when a subtree of its
/// form is present and ignored otherwise, as OpenSSL's `NAME_CONSTRAINTS_check` does.
///
/// ```swift
/// let constraints = NameConstraints(permittedSubtrees: [.dnsName("example.com")])
/// constraints.permits(.dnsName("www.example.com"))  // true
/// constraints.permits(.dnsName("badexample.com"))   // false
/// constraints.permits(.ipAddress([10, 0, 0, 1]))    // true: no iPAddress subtree
/// ```
public struct NameConstraints: Hashable, Sendable {
    /// The extension's OID, dotted.
    public static let extensionOID = "2.5.29.30"

    /// The subtrees every name of their form must lie within one of.
    public var permittedSubtrees: [GeneralName]
    /// The subtrees no name may lie within.
    public var excludedSubtrees: [GeneralName]

    /// Creates constraints from their subtrees' bases.
    public init(permittedSubtrees: [GeneralName] = [], excludedSubtrees: [GeneralName] = []) {
        self.permittedSubtrees = permittedSubtrees
        self.excludedSubtrees = excludedSubtrees
    }

    /// Parses the DER of a nameConstraints extension value.
    ///
    /// As Apple's `SecCEPNameConstraints` (`OSX/sec/Security/SecCertificate.c`), a subtree whose
    /// minimum is not 0 or that has a maximum is refused (RFC 5280 says the minimum MUST be 0 and
    /// the maximum MUST be absent), and so is an iPAddress base that is not an address and mask
    /// of 8 or 32 bytes, an empty list of subtrees, and a base of a known form that does not parse.
    /// - Throws: ``PKIError`` `.malformed`, or `.limitExceeded` beyond 8,192 subtrees in a list.
    public init(derEncoded bytes: [UInt8]) throws {
        try self.init(node: parseDER(bytes[...], "nameConstraints"))
    }

    init(node: ASN1Node) throws {
        var fields = try NodeList(node, .sequence, "nameConstraints")
        permittedSubtrees = try fields.optional(.context(0)).map { try Self.subtrees($0, 0) } ?? []
        excludedSubtrees = try fields.optional(.context(1)).map { try Self.subtrees($0, 1) } ?? []
        try fields.finish()
    }

    /// Apple's `MAX_SUBTREE_NAMES` (8192).
    static let maximumSubtrees = 8192

    private static func subtrees(_ node: ASN1Node, _ tag: UInt) throws -> [GeneralName] {
        var list = try NodeList(node, .context(tag), "GeneralSubtrees")
        guard !list.isAtEnd else { throw PKIError.malformed("GeneralSubtrees: empty") }
        guard list.remaining <= maximumSubtrees else { throw PKIError(.limitExceeded, "GeneralSubtrees: too many") }
        var bases: [GeneralName] = []
        while !list.isAtEnd { bases.append(try subtree(list.next())) }
        return bases
    }

    private static func subtree(_ node: ASN1Node) throws -> GeneralName {
        var fields = try NodeList(node, .sequence, "GeneralSubtree")
        let base = try GeneralName(node: fields.next())
        if let minimum = fields.optional(.context(0)) {
            let bytes = try primitiveBytes(minimum, .context(0), "GeneralSubtree.minimum")
            guard !bytes.isEmpty, bytes.allSatisfy({ $0 == 0 }) else {
                throw PKIError.malformed("GeneralSubtree: minimum is not 0")
            }
        }
        guard fields.optional(.context(1)) == nil else {
            throw PKIError.malformed("GeneralSubtree: maximum is present")
        }
        try fields.finish()
        if case .ipAddress(let bytes) = base, bytes.count != 8, bytes.count != 32 {
            throw PKIError.malformed("GeneralSubtree: iPAddress of \(bytes.count) bytes")
        }
        return base
    }

    /// Whether `name` satisfies the constraints: within one of the permitted subtrees of its form
    /// (when there are any) and within none of the excluded subtrees of its form.
    ///
    /// - dNSName: `example.com` holds `example.com` and every name made by adding labels on the
    ///   left (`www.example.com`), never `badexample.com`; `.example.com` holds the subdomains
    ///   only. Case is ignored, and so is one trailing dot on either side. A wildcard name
    ///   (`*.example.com`) is excluded when a host it stands for is (`bad.example.com`).
    /// - rfc822Name: `user@example.com` holds that mailbox (the local part compared exactly),
    ///   `example.com` every mailbox at that host, `.example.com` every mailbox at its subdomains.
    /// - uniformResourceIdentifier: the host of a `scheme://` URI, compared as an rfc822Name's host:
    ///   `host.example.com` holds that host, `.example.com` its subdomains.
    /// - iPAddress: an address of the same family whose masked bits equal the subtree's.
    /// - directoryName: a name whose first relative distinguished names are the subtree's (see
    ///   ``DistinguishedName/isWithin(_:)``).
    public func permits(_ name: GeneralName) -> Bool {
        var permitted = true
        for base in permittedSubtrees where base.tag == name.tag {
            switch Self.match(name, base, excluding: false) {
            case .unsupported: return false
            case .match: return !excludes(name)
            case .noMatch: permitted = false
            }
        }
        return permitted && !excludes(name)
    }

    /// Whether an excluded subtree holds `name` (or the name cannot be matched against one).
    private func excludes(_ name: GeneralName) -> Bool {
        excludedSubtrees.contains { $0.tag == name.tag && Self.match(name, $0, excluding: true) != .noMatch }
    }

    /// Apple's `POLICY_SUBTREES_MAX` (`trust/trustd/SecPolicyServer.c`): a CA with this many
    /// permitted or excluded subtrees, or more, lets no certificate below it pass.
    public static let maximumSubtreesChecked = 1024

    /// OpenSSL's `NAME_CHECK_MAX`: at most 2^20 comparisons of a certificate's names with
    /// subtrees.
    static let maximumComparisons = 1 << 20

    /// Whether every name of `certificate` satisfies the constraints (see
    /// ``X509Certificate/constrainedNames(isLeaf:)`` for which names). A certificate whose
    /// subjectAltName extension does not parse, or one that would need more than 2^20
    /// comparisons, does not; neither does any when a list has ``maximumSubtreesChecked``
    /// subtrees or more.
    /// - Parameters:
    ///   - certificate: A certificate issued below the CA that carries the constraints.
    ///   - isLeaf: Whether it is the end-entity certificate, whose host-like common names are
    ///     checked too when it has no dNSName.
    public func permits(_ certificate: X509Certificate, isLeaf: Bool) -> Bool {
        if permittedSubtrees.isEmpty && excludedSubtrees.isEmpty { return true }
        guard permittedSubtrees.count < Self.maximumSubtreesChecked,
            excludedSubtrees.count < Self.maximumSubtreesChecked,
            !certificate.unparseableExtensions.contains(OID.subjectAltName.description)
        else { return false }
        let names = certificate.constrainedNames(isLeaf: isLeaf)
        guard names.count * (permittedSubtrees.count + excludedSubtrees.count) <= Self.maximumComparisons else {
            return false
        }
        return names.allSatisfy(permits)
    }
}

// MARK: - Matching one name with one subtree

extension NameConstraints {
    /// The outcome of comparing a name with a subtree of its form.
    private enum Match {
        case match, noMatch
        /// The name or the subtree is of a form, or has a syntax, this module does not match.
        case unsupported
    }

    private static func match(_ name: GeneralName, _ base: GeneralName, excluding: Bool) -> Match {
        switch (name, base) {
        case (.dnsName(let name), .dnsName(let base)): dns(name, base, excluding: excluding)
        case (.rfc822Name(let name), .rfc822Name(let base)): email(name, base)
        case (.uniformResourceIdentifier(let name), .uniformResourceIdentifier(let base)): uri(name, base)
        case (.ipAddress(let name), .ipAddress(let base)): ip(name, base)
        case (.directoryName(let name), .directoryName(let base)): name.isWithin(base) ? .match : .noMatch
        default: .unsupported
        }
    }

    /// ASCII text lower-cased, without one trailing dot; nil when not ASCII.
    private static func host(_ text: String) -> String? {
        guard text.isAllASCII else { return nil }
        var host = text.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }

    private static func dns(_ name: String, _ base: String, excluding: Bool) -> Match {
        guard let name = host(name), let base = host(base) else { return .unsupported }
        if base.isEmpty || isWithinDomain(name, base) { return .match }
        // A wildcard stands for one label: `*.example.com` stands for `bad.example.com`.
        if excluding, name.hasPrefix("*."), let dot = base.firstIndex(of: "."), dot != base.startIndex,
            base[base.index(after: dot)...] == name.dropFirst(2)
        {
            return .match
        }
        return .noMatch
    }

    /// `base` itself and its subdomains, or (with a leading dot) its subdomains only.
    private static func isWithinDomain(_ name: String, _ base: String) -> Bool {
        if base.hasPrefix(".") { return name.count > base.count && name.hasSuffix(base) }
        return name == base || name.hasSuffix("." + base)
    }

    private static func email(_ name: String, _ base: String) -> Match {
        guard name.isAllASCII, base.isAllASCII, let at = name.lastIndex(of: "@") else { return .unsupported }
        let mailbox = name[..<at]
        let mailHost = name[name.index(after: at)...].lowercased()
        if let baseAt = base.lastIndex(of: "@") {
            let baseMailbox = base[..<baseAt]
            guard baseMailbox.isEmpty || baseMailbox == mailbox else { return .noMatch }
            return mailHost == base[base.index(after: baseAt)...].lowercased() ? .match : .noMatch
        }
        let base = base.lowercased()
        if base.hasPrefix(".") { return mailHost.count > base.count && mailHost.hasSuffix(base) ? .match : .noMatch }
        return mailHost == base ? .match : .noMatch
    }

    private static func uri(_ name: String, _ base: String) -> Match {
        guard let uriHost = uriHost(name).flatMap(host), let base = host(base) else { return .unsupported }
        if base.hasPrefix(".") { return uriHost.count > base.count && uriHost.hasSuffix(base) ? .match : .noMatch }
        return uriHost == base ? .match : .noMatch
    }

    /// The host of a `scheme://[userinfo@]host[:port]/…` URI; nil without one, or for an IP literal
    /// in brackets (RFC 5280 wants a fully qualified domain name).
    private static func uriHost(_ uri: String) -> String? {
        guard let separator = uri.range(of: "://"), separator.lowerBound != uri.startIndex else { return nil }
        var authority = uri[separator.upperBound...].prefix { !"/?#".contains($0) }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        guard !authority.hasPrefix("[") else { return nil }
        if let colon = authority.firstIndex(of: ":") { authority = authority[..<colon] }
        return authority.isEmpty ? nil : String(authority)
    }

    private static func ip(_ name: [UInt8], _ base: [UInt8]) -> Match {
        guard name.count == 4 || name.count == 16 else { return .unsupported }
        guard base.count == 2 * name.count else { return .noMatch }
        for index in name.indices where name[index] & base[name.count + index] != base[index] & base[name.count + index]
        {
            return .noMatch
        }
        return .match
    }
}

// MARK: - The names a certificate is checked for

extension X509Certificate {
    /// The names of the certificate that name constraints apply to (RFC 5280 §6.1.3 (b), (c)), in
    /// order: the subject as a directoryName when it is not empty, each emailAddress attribute of
    /// the subject as an rfc822Name, every subjectAltName entry and, for a leaf without a dNSName,
    /// each common name that looks like a host name (two labels or more of letters, digits, `-`
    /// and `_`) as a dNSName, as OpenSSL's `NAME_CONSTRAINTS_check_CN` does.
    /// - Parameter isLeaf: Whether the certificate is the end-entity certificate of its chain.
    public func constrainedNames(isLeaf: Bool) -> [GeneralName] {
        var names: [GeneralName] = []
        if !subject.relativeNames.isEmpty { names.append(.directoryName(subject)) }
        for attribute in subject.attributes where attribute.type == OID.emailAddress.description {
            names.append(
                attribute.stringValue.map(GeneralName.rfc822Name) ?? .other(tag: 1, derBytes: attribute.valueDER))
        }
        let alternatives = subjectAlternativeNames?.generalNames ?? []
        names += alternatives
        guard isLeaf, !alternatives.contains(where: { $0.tag == 2 }) else { return names }
        for commonName in subject.strings(ofType: OID.commonName.description) {
            var text = Substring(commonName)
            while text.last == "\0" { text.removeLast() }
            if Self.looksLikeHostName(text) { names.append(.dnsName(String(text))) }
        }
        return names
    }

    /// Two labels or more, each of ASCII letters, digits, `-` and `_`, not empty, neither
    /// starting nor ending with `-`.
    static func looksLikeHostName(_ text: Substring) -> Bool {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy(isHostLabel)
    }

    private static func isHostLabel(_ label: Substring) -> Bool {
        guard let first = label.first, let last = label.last, first != "-", last != "-" else { return false }
        return label.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "-", "_": true
            default: false
            }
        }
    }
}

// MARK: - directoryName subtrees

extension DistinguishedName {
    /// Whether this name lies within the directoryName subtree `base`: its first relative
    /// distinguished names are `base`'s, compared attribute by attribute with string values
    /// ignoring case and leading, trailing and repeated white space (RFC 5280 §7.1), and other
    /// values byte for byte. An empty `base` holds every name.
    public func isWithin(_ base: DistinguishedName) -> Bool {
        guard base.relativeNames.count <= relativeNames.count else { return false }
        return zip(relativeNames, base.relativeNames).allSatisfy { Self.sameRDN($0, $1) }
    }

    /// One attribute as compared for name constraints.
    private enum ComparedAttribute: Hashable {
        case text(type: String, value: String)
        case bytes(type: String, der: [UInt8])

        init(_ attribute: Attribute) {
            guard let text = attribute.stringValue else {
                self = .bytes(type: attribute.type, der: attribute.valueDER)
                return
            }
            let words = text.lowercased().split(whereSeparator: \.isWhitespace)
            self = .text(type: attribute.type, value: words.joined(separator: " "))
        }
    }

    /// Whether two RDNs hold the same attributes, in any order.
    private static func sameRDN(_ lhs: [Attribute], _ rhs: [Attribute]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var remaining = rhs.map(ComparedAttribute.init)
        for attribute in lhs.map(ComparedAttribute.init) {
            guard let index = remaining.firstIndex(of: attribute) else { return false }
            remaining.remove(at: index)
        }
        return true
    }
}
