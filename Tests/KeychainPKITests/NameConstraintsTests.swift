import Foundation
import Testing

@testable import KeychainPKI

/// One name checked against constraints of one subtree.
struct NameConstraintRow: Sendable, CustomTestStringConvertible {
    var constraints: NameConstraints
    var name: GeneralName
    var permitted: Bool
    var why: String
    var testDescription: String { why }

    init(permitting base: GeneralName, _ name: GeneralName, _ permitted: Bool, _ why: String) {
        self.constraints = NameConstraints(permittedSubtrees: [base])
        self.name = name
        self.permitted = permitted
        self.why = why
    }

    init(excluding base: GeneralName, _ name: GeneralName, _ permitted: Bool, _ why: String) {
        self.constraints = NameConstraints(excludedSubtrees: [base])
        self.name = name
        self.permitted = permitted
        self.why = why
    }
}

/// A Name of `(type OID content bytes, UTF8String value)` RDNs, one attribute each.
private func name(_ rdns: [([UInt8], String)], tag: UInt8 = 0x0c) -> GeneralName {
    let sets = rdns.map { type, value in
        derTLV(0x31, derTLV(0x30, derTLV(0x06, type) + derTLV(tag, Array(value.utf8))))
    }
    // A name that does not parse (none does) would show as a dNSName and fail its row.
    let parsed = try? DistinguishedName(derEncoded: derTLV(0x30, sets.flatMap { $0 }))
    return parsed.map(GeneralName.directoryName) ?? .dnsName("a Name that does not parse")
}

private let organization: [UInt8] = [0x55, 0x04, 0x0a]
private let commonName: [UInt8] = [0x55, 0x04, 0x03]

private let dnsRows: [NameConstraintRow] = [
    .init(permitting: .dnsName("example.com"), .dnsName("example.com"), true, "DNS: the domain itself"),
    .init(permitting: .dnsName("example.com"), .dnsName("www.example.com"), true, "DNS: a subdomain"),
    .init(permitting: .dnsName("example.com"), .dnsName("a.b.example.com"), true, "DNS: a deeper subdomain"),
    .init(permitting: .dnsName("example.com"), .dnsName("badexample.com"), false, "DNS: badexample.com"),
    .init(permitting: .dnsName("example.com"), .dnsName("example.com.evil.test"), false, "DNS: a longer name"),
    .init(permitting: .dnsName("example.com"), .dnsName("com"), false, "DNS: the parent"),
    .init(permitting: .dnsName(".example.com"), .dnsName("example.com"), false, "DNS: leading dot, the domain"),
    .init(permitting: .dnsName(".example.com"), .dnsName("www.example.com"), true, "DNS: leading dot, a subdomain"),
    .init(permitting: .dnsName("EXAMPLE.com"), .dnsName("www.Example.COM"), true, "DNS: case is ignored"),
    .init(permitting: .dnsName("example.com."), .dnsName("www.example.com"), true, "DNS: a trailing dot, subtree"),
    .init(permitting: .dnsName("example.com"), .dnsName("www.example.com."), true, "DNS: a trailing dot, name"),
    .init(permitting: .dnsName(""), .dnsName("anything.test"), true, "DNS: an empty subtree holds every name"),
    .init(permitting: .dnsName("example.com"), .dnsName("*.example.com"), true, "DNS: a wildcard within"),
    .init(permitting: .dnsName("www.example.com"), .dnsName("*.example.com"), false, "DNS: a wildcard wider"),
    .init(permitting: .dnsName("example.com"), .dnsName("bücher.example.com"), false, "DNS: a name not ASCII"),
    .init(permitting: .dnsName("example.com"), .ipAddress([10, 0, 0, 1]), true, "DNS: another form is free"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("bad.example.com"), false, "DNS excluded: the name"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("x.bad.example.com"), false, "DNS excluded: below"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("BAD.EXAMPLE.COM."), false, "DNS excluded: case, dot"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("good.example.com"), true, "DNS excluded: a sibling"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("notbad.example.com"), true, "DNS excluded: notbad"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("*.example.com"), false, "DNS excluded: a wildcard over"),
    .init(excluding: .dnsName("bad.example.com"), .dnsName("*.bad.example.com"), false, "DNS excluded: wildcard in"),
    .init(excluding: .dnsName("x.bad.example.com"), .dnsName("*.example.com"), true, "DNS excluded: two labels"),
]

private let ipRows: [NameConstraintRow] = [
    .init(permitting: .ipAddress([10, 0, 0, 0, 255, 0, 0, 0]), .ipAddress([10, 1, 2, 3]), true, "IP: in the subnet"),
    .init(permitting: .ipAddress([10, 0, 0, 0, 255, 0, 0, 0]), .ipAddress([11, 0, 0, 1]), false, "IP: outside"),
    .init(
        permitting: .ipAddress([192, 168, 1, 0, 255, 255, 255, 0]), .ipAddress([192, 168, 2, 1]), false,
        "IP: a /24 refuses the next /24"),
    .init(
        permitting: .ipAddress([10, 0, 0, 0, 255, 0, 0, 0]), .ipAddress([UInt8](repeating: 0, count: 15) + [1]), false,
        "IP: an IPv4 subtree refuses IPv6"),
    .init(
        permitting: .ipAddress(
            [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12) + [0xff, 0xff, 0xff, 0xff]
                + [UInt8](repeating: 0, count: 12)),
        .ipAddress([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [UInt8](repeating: 0, count: 9) + [1]), true,
        "IP: an IPv6 /32 holds its addresses"),
    .init(
        permitting: .ipAddress(
            [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12) + [0xff, 0xff, 0xff, 0xff]
                + [UInt8](repeating: 0, count: 12)),
        .ipAddress([0x20, 0x01, 0x0d, 0xb9] + [UInt8](repeating: 0, count: 11) + [1]), false,
        "IP: an IPv6 /32 refuses the next /32"),
    .init(
        permitting: .ipAddress(
            [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12) + [0xff, 0xff, 0xff, 0xff]
                + [UInt8](repeating: 0, count: 12)),
        .ipAddress([10, 0, 0, 1]), false, "IP: an IPv6 subtree refuses IPv4"),
    .init(excluding: .ipAddress([10, 0, 0, 0, 255, 0, 0, 0]), .ipAddress([10, 9, 9, 9]), false, "IP excluded: in"),
    .init(excluding: .ipAddress([10, 0, 0, 0, 255, 0, 0, 0]), .ipAddress([172, 16, 0, 1]), true, "IP excluded: out"),
]

private let emailRows: [NameConstraintRow] = [
    .init(permitting: .rfc822Name("example.com"), .rfc822Name("alice@example.com"), true, "email: a host's mailbox"),
    .init(permitting: .rfc822Name("example.com"), .rfc822Name("alice@EXAMPLE.com"), true, "email: host case"),
    .init(permitting: .rfc822Name("example.com"), .rfc822Name("bob@mail.example.com"), false, "email: host exact"),
    .init(permitting: .rfc822Name("example.com"), .rfc822Name("eve@badexample.com"), false, "email: badexample"),
    .init(permitting: .rfc822Name(".example.com"), .rfc822Name("bob@mail.example.com"), true, "email: a domain"),
    .init(permitting: .rfc822Name(".example.com"), .rfc822Name("bob@example.com"), false, "email: domain, apex"),
    .init(permitting: .rfc822Name("alice@example.com"), .rfc822Name("alice@example.com"), true, "email: a mailbox"),
    .init(permitting: .rfc822Name("alice@example.com"), .rfc822Name("bob@example.com"), false, "email: another one"),
    .init(permitting: .rfc822Name("alice@example.com"), .rfc822Name("Alice@example.com"), false, "email: local case"),
    .init(permitting: .rfc822Name("example.com"), .rfc822Name("alice"), false, "email: a name without @"),
    .init(excluding: .rfc822Name("evil.test"), .rfc822Name("m@evil.test"), false, "email excluded: the host"),
    .init(excluding: .rfc822Name("evil.test"), .rfc822Name("m@good.test"), true, "email excluded: another host"),
]

private let uriRows: [NameConstraintRow] = [
    .init(
        permitting: .uniformResourceIdentifier(".example.com"), .uniformResourceIdentifier("https://www.example.com/x"),
        true, "URI: a host in the domain"),
    .init(
        permitting: .uniformResourceIdentifier(".example.com"), .uniformResourceIdentifier("https://example.com/"),
        false, "URI: leading dot, the domain"),
    .init(
        permitting: .uniformResourceIdentifier(".example.com"),
        .uniformResourceIdentifier("https://user@www.example.com:8443/p?q#f"), true, "URI: user, port, path"),
    .init(
        permitting: .uniformResourceIdentifier("www.example.com"),
        .uniformResourceIdentifier("https://WWW.example.com"),
        true, "URI: a host, case ignored"),
    .init(
        permitting: .uniformResourceIdentifier("www.example.com"),
        .uniformResourceIdentifier("https://a.www.example.com/"), false, "URI: a host, not its subdomains"),
    .init(
        permitting: .uniformResourceIdentifier(".example.com"), .uniformResourceIdentifier("urn:example"), false,
        "URI: no host"),
    .init(
        permitting: .uniformResourceIdentifier(".example.com"), .uniformResourceIdentifier("https://[2001:db8::1]/"),
        false, "URI: an IP literal"),
]

private let directoryRows: [NameConstraintRow] = [
    .init(
        permitting: name([(organization, "Good")]), name([(organization, "Good"), (commonName, "leaf")]), true,
        "dirName: a prefix"),
    .init(
        permitting: name([(organization, "Good")]), name([(organization, "  good  ")], tag: 0x13), true,
        "dirName: case and spaces ignored, string types mixed"),
    .init(
        permitting: name([(organization, "Good Corp")]), name([(organization, "Good   Corp")]), true,
        "dirName: inner spaces collapsed"),
    .init(
        permitting: name([(organization, "Good")]), name([(organization, "Evil"), (commonName, "leaf")]), false,
        "dirName: another value"),
    .init(
        permitting: name([(organization, "Good")]), name([(commonName, "leaf"), (organization, "Good")]), false,
        "dirName: not at the start"),
    .init(
        permitting: name([(organization, "Good"), (commonName, "leaf")]), name([(organization, "Good")]), false,
        "dirName: a subtree longer than the name"),
    .init(permitting: name([]), name([(commonName, "anyone")]), true, "dirName: an empty subtree holds every name"),
    .init(
        excluding: name([(organization, "Evil")]), name([(organization, "EVIL"), (commonName, "x")]), false,
        "dirName excluded: within"),
]

private let otherFormRows: [NameConstraintRow] = [
    .init(
        permitting: .other(tag: 0, derBytes: [0xa0, 0x00]), .other(tag: 0, derBytes: [0xa0, 0x00]), false,
        "otherName subtree: refuses an otherName"),
    .init(
        permitting: .other(tag: 0, derBytes: [0xa0, 0x00]), .dnsName("bank.test"), true,
        "otherName subtree: other forms are free"),
    .init(
        excluding: .other(tag: 8, derBytes: [0x88, 0x01, 0x2a]), .other(tag: 8, derBytes: [0x88, 0x01, 0x2b]), false,
        "registeredID excluded subtree: refuses a registeredID"),
    .init(
        permitting: .dnsName("example.com"), .other(tag: 2, derBytes: [0xa2, 0x00]), false,
        "DNS subtree: refuses a dNSName that does not parse"),
]

@Suite("Name constraints (RFC 5280 4.2.1.10)")
struct NameConstraintsTests {
    @Test(
        "a name is permitted or refused as RFC 5280 and OpenSSL say",
        arguments: dnsRows + ipRows + emailRows + uriRows + directoryRows + otherFormRows)
    func matching(_ row: NameConstraintRow) {
        #expect(row.constraints.permits(row.name) == row.permitted)
    }

    @Test("subtrees of one form: one permitted match suffices, one excluded match refuses")
    func severalSubtrees() {
        let constraints = NameConstraints(
            permittedSubtrees: [
                .dnsName("example.com"), .dnsName("example.org"), .ipAddress([10, 0, 0, 0, 255, 0, 0, 0]),
            ],
            excludedSubtrees: [.dnsName("bad.example.org")])
        #expect(constraints.permits(.dnsName("www.example.org")))
        #expect(!constraints.permits(.dnsName("bad.example.org")))
        #expect(!constraints.permits(.dnsName("example.net")))
        #expect(constraints.permits(.rfc822Name("anyone@anywhere.test")))
    }

    /// NameConstraints ::= SEQUENCE { permittedSubtrees [0] GeneralSubtrees OPTIONAL, excludedSubtrees [1] … }.
    static func constraints(permitted: [[UInt8]] = [], excluded: [[UInt8]] = []) -> [UInt8] {
        var content: [UInt8] = []
        if !permitted.isEmpty { content += derTLV(0xa0, permitted.flatMap { $0 }) }
        if !excluded.isEmpty { content += derTLV(0xa1, excluded.flatMap { $0 }) }
        return derTLV(0x30, content)
    }

    static let exampleDNS = derTLV(0x82, Array("example.com".utf8))

    @Test("the extension parses: bases, a minimum of 0, both lists")
    func parsing() throws {
        let parsed = try NameConstraints(
            derEncoded: Self.constraints(
                permitted: [
                    derTLV(0x30, Self.exampleDNS + [0x80, 0x01, 0x00]),
                    derTLV(0x30, derTLV(0x87, [10, 0, 0, 0, 255, 0, 0, 0])),
                ],
                excluded: [derTLV(0x30, derTLV(0x81, Array(".evil.test".utf8)))]))
        #expect(parsed.permittedSubtrees == [.dnsName("example.com"), .ipAddress([10, 0, 0, 0, 255, 0, 0, 0])])
        #expect(parsed.excludedSubtrees == [.rfc822Name(".evil.test")])
    }

    static let malformed: [(String, [UInt8])] = [
        ("not a NameConstraints", [0x30, 0x03, 0x02, 0x01, 0x00]),
        ("an empty list of subtrees", [0x30, 0x02, 0xa0, 0x00]),
        ("a minimum of 1", constraints(permitted: [derTLV(0x30, exampleDNS + [0x80, 0x01, 0x01])])),
        ("a maximum", constraints(permitted: [derTLV(0x30, exampleDNS + [0x81, 0x01, 0x05])])),
        ("an IP subtree without a mask", constraints(permitted: [derTLV(0x30, derTLV(0x87, [10, 0, 0, 0]))])),
        ("a constructed dNSName", constraints(permitted: [derTLV(0x30, derTLV(0xa2, Self.exampleDNS))])),
        ("a universal tag as a base", constraints(permitted: [derTLV(0x30, derTLV(0x16, [0x61]))])),
        ("a directoryName that is not a Name", constraints(excluded: [derTLV(0x30, derTLV(0xa4, [0x05, 0x00]))])),
        ("a field after the lists", derTLV(0x30, derTLV(0xa0, derTLV(0x30, exampleDNS)) + [0x05, 0x00])),
    ]

    @Test("a nameConstraints extension that does not parse is refused, never read as no constraints")
    func malformedExtensions() {
        for (why, bytes) in Self.malformed {
            #expect(throws: PKIError.self, "\(why)") { try NameConstraints(derEncoded: bytes) }
        }
    }

    @Test("a certificate's nameConstraints: understood when critical, refused when it does not parse")
    func certificateExtension() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let critical = try X509Certificate(
            derEncoded: openssl.selfSigned(
                "critical", subject: "/CN=critical",
                extensions: ["basicConstraints=critical,CA:TRUE", "nameConstraints=critical,permitted;DNS:example.com"])
        )
        #expect(!critical.hasUnknownCriticalExtension)
        #expect(critical.nameConstraints == NameConstraints(permittedSubtrees: [.dnsName("example.com")]))

        let badCritical = try openssl.selfSigned(
            "b", subject: "/CN=b", extensions: ["2.5.29.30=critical,DER:3003020100"])
        #expect(throws: PKIError.malformed("critical extension 2.5.29.30 does not parse")) {
            try X509Certificate(derEncoded: badCritical)
        }
        let badNonCritical = try X509Certificate(
            derEncoded: openssl.selfSigned("c", subject: "/CN=c", extensions: ["2.5.29.30=DER:3003020100"]))
        #expect(badNonCritical.nameConstraints == nil)
        #expect(badNonCritical.unparseableExtensions == [NameConstraints.extensionOID])
    }

    @Test("a certificate's constrained names: subject, subject emails, alternative names, a leaf's host-like CN")
    func constrainedNames() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let withNames = try X509Certificate(
            derEncoded: openssl.selfSigned(
                "names", subject: "/O=Good/CN=www.example.com/emailAddress=a@example.com",
                extensions: ["subjectAltName=DNS:api.example.com,IP:10.0.0.1,URI:https://example.com/"]))
        let names = withNames.constrainedNames(isLeaf: true)
        #expect(names.count == 5)
        #expect(names.first == .directoryName(withNames.subject))
        #expect(
            Array(names.dropFirst())
                == [
                    .rfc822Name("a@example.com"), .dnsName("api.example.com"), .ipAddress([10, 0, 0, 1]),
                    .uniformResourceIdentifier("https://example.com/"),
                ])

        let commonNameOnly = try X509Certificate(
            derEncoded: openssl.selfSigned("cn", subject: "/CN=bank.test"))
        #expect(commonNameOnly.constrainedNames(isLeaf: true).contains(.dnsName("bank.test")))
        #expect(!commonNameOnly.constrainedNames(isLeaf: false).contains(.dnsName("bank.test")))
        let words = try X509Certificate(derEncoded: openssl.selfSigned("words", subject: "/CN=Intermediate CA"))
        #expect(words.constrainedNames(isLeaf: true) == [.directoryName(words.subject)])
        for (text, hostLike) in [
            ("bank.test", true), ("a-b.c_d.test", true), ("localhost", false), ("-a.test", false), ("a..test", false),
            ("a.test.", false), ("bad name.test", false),
        ] {
            #expect(X509Certificate.looksLikeHostName(Substring(text)) == hostLike, "\(text)")
        }
    }
}
