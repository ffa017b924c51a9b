// Name constraints in SecTrust (issue 50, item 16), compared with `openssl verify` on chains openssl
// makes at test time. The defect: a CA constrained to example.com without `critical` issued bank.test
// and SecTrust accepted it; with `critical` it refused every certificate the CA issued.

import Foundation
import Security
import Testing

/// A CA whose certificate carries name constraints: an intermediate under a plain root, or an anchor.
private struct ConstrainedAuthority: Sendable {
    var name: String
    /// The extension lines of its certificate besides basicConstraints and keyUsage.
    var lines: String
    var isAnchor = false
}

/// An end-entity certificate: its subject and, if any, its subjectAltName line.
private struct Leaf: Sendable {
    var name: String
    var subject: String
    var subjectAltName: String?
}

private let authorities: [ConstrainedAuthority] = [
    .init(name: "dns", lines: "nameConstraints = permitted;DNS:example.com"),
    .init(name: "dnsCritical", lines: "nameConstraints = critical, permitted;DNS:example.com"),
    .init(
        name: "excluded", lines: "nameConstraints = critical, permitted;DNS:example.com, excluded;DNS:bad.example.com"),
    .init(name: "subdomains", lines: "nameConstraints = permitted;DNS:.example.com"),
    .init(name: "ip", lines: "nameConstraints = critical, permitted;IP:10.0.0.0/255.0.0.0"),
    .init(name: "email", lines: "nameConstraints = critical, permitted;email:example.com"),
    .init(name: "dirName", lines: "nameConstraints = critical, permitted;dirName:good_name"),
    .init(name: "uri", lines: "nameConstraints = critical, permitted;URI:.example.com"),
    .init(name: "otherName", lines: "nameConstraints = critical, permitted;otherName:1.2.3.4;UTF8:hello"),
    // permitted DNS:example.com with a maximum of 5, which RFC 5280 forbids.
    .init(name: "maximum", lines: "2.5.29.30 = DER:30:14:a0:12:30:10:82:0b:65:78:61:6d:70:6c:65:2e:63:6f:6d:81:01:05"),
    // A SEQUENCE holding an INTEGER: not a NameConstraints.
    .init(name: "malformed", lines: "2.5.29.30 = DER:30:03:02:01:00"),
    .init(name: "anchor", lines: "nameConstraints = critical, permitted;DNS:example.com", isAnchor: true),
]

private let leaves: [Leaf] = [
    .init(name: "www", subject: "/CN=www.example.com", subjectAltName: "DNS:www.example.com"),
    .init(name: "apex", subject: "/CN=example.com", subjectAltName: "DNS:example.com"),
    .init(name: "upper", subject: "/CN=Upper", subjectAltName: "DNS:WWW.Example.COM"),
    .init(name: "bank", subject: "/CN=bank.test", subjectAltName: "DNS:bank.test"),
    .init(name: "badexample", subject: "/CN=badexample.com", subjectAltName: "DNS:badexample.com"),
    .init(name: "bad", subject: "/CN=bad.example.com", subjectAltName: "DNS:bad.example.com"),
    .init(name: "mixed", subject: "/CN=www.example.com", subjectAltName: "DNS:www.example.com, DNS:bank.test"),
    .init(name: "commonNameOutside", subject: "/CN=bank.test"),
    .init(name: "commonNameInside", subject: "/CN=www.example.com"),
    .init(name: "ipInside", subject: "/CN=Inside", subjectAltName: "IP:10.1.2.3"),
    .init(name: "ipOutside", subject: "/CN=Outside", subjectAltName: "IP:192.168.1.1"),
    .init(name: "ipv6", subject: "/CN=IPv6", subjectAltName: "IP:2001:db8::1"),
    .init(name: "emailInside", subject: "/CN=Alice", subjectAltName: "email:alice@example.com"),
    .init(name: "emailOutside", subject: "/CN=Mallory", subjectAltName: "email:mallory@evil.test"),
    .init(name: "emailSubdomain", subject: "/CN=Bob", subjectAltName: "email:bob@mail.example.com"),
    .init(name: "subjectEmailOutside", subject: "/CN=Mallory/emailAddress=mallory@evil.test"),
    .init(name: "good", subject: "/O=Good/CN=Good Leaf"),
    .init(name: "evil", subject: "/O=Evil/CN=Evil Leaf"),
    .init(name: "uriInside", subject: "/CN=URI", subjectAltName: "URI:https://www.example.com/path"),
    .init(name: "uriOutside", subject: "/CN=URI", subjectAltName: "URI:https://evil.test/"),
    .init(name: "otherName", subject: "/CN=Other", subjectAltName: "DNS:www.example.com, otherName:1.2.3.4;UTF8:hello"),
]

/// The constrained CAs and every leaf under each, as PEM files in a directory kept for the run (openssl
/// verify reads them) and as DER.
private struct NameConstraintFixtures: Sendable {
    let directory: URL
    let certificates: [String: Data]

    static let shared: Result<NameConstraintFixtures, SecKeyTestFailure> = {
        do { return .success(try make()) } catch let failure as SecKeyTestFailure {
            return .failure(failure)
        } catch { return .failure(SecKeyTestFailure(description: "name constraint fixtures: \(error)")) }
    }()

    static func leafFile(_ leaf: String, under authority: String) -> String { "\(leaf)-under-\(authority)" }

    private static var configuration: String {
        var text = "[good_name]\nO = Good\n[plain_root]\nbasicConstraints = critical, CA:TRUE\n"
        text += "keyUsage = critical, keyCertSign, cRLSign\n"
        for authority in authorities {
            text += "[ca_\(authority.name)]\nbasicConstraints = critical, CA:TRUE\n"
            text += "keyUsage = critical, keyCertSign, cRLSign\n\(authority.lines)\n"
        }
        for leaf in leaves {
            text += "[leaf_\(leaf.name)]\nbasicConstraints = CA:FALSE\n"
            if let subjectAltName = leaf.subjectAltName { text += "subjectAltName = \(subjectAltName)\n" }
        }
        return text
    }

    private static func make() throws -> NameConstraintFixtures {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sectrust-nc-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try directory.write(Data(configuration.utf8), "ext.cnf")
        func run(_ arguments: [String]) throws { try OpenSSL.run(arguments, in: directory) }
        func key(_ name: String) throws {
            try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(name).key"])
        }
        func selfSigned(_ name: String, _ section: String) throws {
            try key(name)
            try run(["req", "-new", "-key", "\(name).key", "-subj", "/CN=\(name) CA", "-out", "\(name).csr"])
            try run([
                "x509", "-req", "-in", "\(name).csr", "-signkey", "\(name).key", "-days", "30", "-extfile", "ext.cnf",
                "-extensions", section, "-out", "\(name).pem",
            ])
        }
        func issue(_ name: String, _ subject: String, key: String, by issuer: String, _ section: String) throws {
            try run(["req", "-new", "-key", "\(key).key", "-subj", subject, "-out", "\(name).csr"])
            try run([
                "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key",
                "-set_serial", String(Int.random(in: 2...1_000_000)), "-days", "30", "-extfile", "ext.cnf",
                "-extensions", section, "-out", "\(name).pem",
            ])
        }
        try selfSigned("root", "plain_root")
        try key("leaf")
        var names = ["root"]
        for authority in authorities {
            if authority.isAnchor {
                try selfSigned(authority.name, "ca_\(authority.name)")
            } else {
                try key(authority.name)
                try issue(
                    authority.name, "/CN=\(authority.name) CA", key: authority.name, by: "root", "ca_\(authority.name)")
            }
            names.append(authority.name)
        }
        for row in nameConstraintCases where !names.contains(leafFile(row.leaf, under: row.authority)) {
            guard let leaf = leaves.first(where: { $0.name == row.leaf }) else {
                throw SecKeyTestFailure(description: "no leaf named \(row.leaf)")
            }
            let file = leafFile(row.leaf, under: row.authority)
            try issue(file, leaf.subject, key: "leaf", by: row.authority, "leaf_\(leaf.name)")
            names.append(file)
        }
        var certificates: [String: Data] = [:]
        for name in names {
            certificates[name] = try OpenSSL.run(["x509", "-in", "\(name).pem", "-outform", "DER"], in: directory)
        }
        return NameConstraintFixtures(directory: directory, certificates: certificates)
    }

    func certificate(_ name: String) throws -> SecCertificate {
        let der = try #require(certificates[name])
        return try #require(SecCertificateCreateWithData(nil, der as CFData), "\(name) does not parse")
    }
}

/// One chain: a leaf under a constrained CA, the host the SSL policy names, and Apple's status.
struct NameConstraintCase: Sendable, CustomTestStringConvertible {
    var name: String
    var authority: String
    var leaf: String
    var host: String?
    var status: OSStatus
    var testDescription: String { name }

    init(_ name: String, _ authority: String, _ leaf: String, host: String? = nil, _ status: OSStatus) {
        self.name = name
        self.authority = authority
        self.leaf = leaf
        self.host = host
        self.status = status
    }
}

/// errSecInvalidName: Apple's status for kSecPolicyCheckNameConstraints.
private let refused: OSStatus = -67689

private let nameConstraintCases: [NameConstraintCase] = [
    // The issue's cases.
    .init("a CA constrained to example.com, not critical, cannot issue bank.test", "dns", "bank", refused),
    .init(
        "a CA constrained to example.com, critical, issues www.example.com", "dnsCritical", "www",
        host: "www.example.com", 0),
    .init("a CA constrained to example.com, critical, cannot issue bank.test", "dnsCritical", "bank", refused),
    // dNSName
    .init("a DNS constraint holds its subdomains", "dns", "www", host: "www.example.com", 0),
    .init("a DNS constraint holds the domain itself", "dns", "apex", host: "example.com", 0),
    .init("a DNS constraint ignores case", "dns", "upper", 0),
    .init("example.com does not hold badexample.com", "dns", "badexample", refused),
    .init("every DNS name must be permitted, not one", "dns", "mixed", refused),
    .init("a leaf without DNS names has its host-like common name checked", "dns", "commonNameOutside", refused),
    .init("a host-like common name within the constraint passes", "dns", "commonNameInside", 0),
    .init("a DNS constraint does not restrict IP addresses", "dns", "ipInside", 0),
    .init("an excluded subtree leaves its siblings", "excluded", "www", 0),
    .init("an excluded subtree refuses its names", "excluded", "bad", refused),
    .init("a leading dot holds subdomains", "subdomains", "www", 0),
    .init("a leading dot does not hold the domain itself", "subdomains", "apex", refused),
    // iPAddress
    .init("an IP constraint holds its subnet", "ip", "ipInside", host: "10.1.2.3", 0),
    .init("an IP constraint refuses another subnet", "ip", "ipOutside", refused),
    .init("an IPv4 constraint refuses an IPv6 address", "ip", "ipv6", refused),
    .init("an IP constraint does not restrict DNS names", "ip", "www", 0),
    // rfc822Name
    .init("an email constraint holds mailboxes at its host", "email", "emailInside", 0),
    .init("an email constraint refuses other hosts", "email", "emailOutside", refused),
    .init("an email host constraint refuses its subdomains", "email", "emailSubdomain", refused),
    .init("an email constraint applies to the subject's emailAddress", "email", "subjectEmailOutside", refused),
    // directoryName
    .init("a directory name constraint holds subjects it prefixes", "dirName", "good", 0),
    .init("a directory name constraint refuses other subjects", "dirName", "evil", refused),
    // uniformResourceIdentifier
    .init("a URI constraint holds hosts in its domain", "uri", "uriInside", 0),
    .init("a URI constraint refuses other hosts", "uri", "uriOutside", refused),
    // Forms not matched, and bad extensions.
    .init("an otherName constraint ignores certificates without one", "otherName", "www", 0),
    .init("an otherName constraint refuses a certificate with one", "otherName", "otherName", refused),
    .init("a subtree with a maximum is refused", "maximum", "www", refused),
    .init("a nameConstraints extension that does not parse is refused", "malformed", "www", refused),
    // The anchor's own constraints apply.
    .init("an anchor's constraints hold its leaves", "anchor", "www", host: "www.example.com", 0),
    .init("an anchor's constraints refuse names outside", "anchor", "bank", refused),
]

@Suite("SecTrust name constraints against openssl verify")
struct SecTrustNameConstraintsTests {
    @Test("Apple's verdict and status, and openssl verify's verdict", arguments: nameConstraintCases)
    func verdicts(_ row: NameConstraintCase) throws {
        let fixtures = try NameConstraintFixtures.shared.get()
        let authority = try #require(authorities.first { $0.name == row.authority })
        let leafFile = NameConstraintFixtures.leafFile(row.leaf, under: row.authority)
        let chain = authority.isAnchor ? [leafFile] : [leafFile, row.authority]
        let anchor = authority.isAnchor ? row.authority : "root"
        var trust: SecTrust?
        let policy = SecPolicyCreateSSL(true, row.host.map { $0 as CFString })
        #expect(SecTrustCreateWithCertificates(try chain.map(fixtures.certificate) as CFArray, policy, &trust) == 0)
        let evaluated = try #require(trust)
        SecTrustSetAnchorCertificates(evaluated, [try fixtures.certificate(anchor)] as CFArray)
        var error: CFError?
        let trusted = SecTrustEvaluateWithError(evaluated, &error)
        #expect(trusted == (row.status == errSecSuccess))
        #expect((error.map { OSStatus($0.code) } ?? errSecSuccess) == row.status)

        var arguments = ["verify", "-CAfile", "\(anchor).pem"]
        if !authority.isAnchor { arguments += ["-untrusted", "\(row.authority).pem"] }
        if let host = row.host {
            arguments += host.first!.isNumber ? ["-verify_ip", host] : ["-verify_hostname", host]
        }
        arguments.append("\(leafFile).pem")
        #expect(try OpenSSL.succeeds(arguments, in: fixtures.directory) == trusted, "openssl disagrees")
    }
}
