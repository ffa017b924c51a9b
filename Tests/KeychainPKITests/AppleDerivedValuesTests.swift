import Crypto
import Foundation
import Testing

@testable import KeychainPKI

/// The values Apple's `SecCertificate` derives (subject summary, common name, e-mail addresses,
/// normalised names, keychain attributes), on certificates made by `openssl req`.
@Suite struct AppleDerivedValuesTests {
    struct SummaryCase: Sendable, CustomTestStringConvertible {
        var subject: String
        var extensions: [String] = []
        var summary: String?
        var commonName: String?
        var testDescription: String { "\(subject) \(extensions) → \(summary ?? "nil")" }
    }

    /// SecCertificate.c `SecCertificateCopySubjectSummary` / `CopyCommonName` rules.
    static let summaryCases: [SummaryCase] = [
        SummaryCase(subject: "/CN=Leaf/O=Org", summary: "Leaf", commonName: "Leaf"),
        SummaryCase(subject: "/O=Org/OU=Unit", summary: "Unit"),
        SummaryCase(subject: "/O=Org/OU=U1/OU=U2", summary: "U2, U1"),
        SummaryCase(subject: "/CN=A/CN=B", summary: "B, A", commonName: "B"),
        SummaryCase(subject: "/CN=Leaf/description=desc", summary: "Leaf (desc)", commonName: "Leaf"),
        SummaryCase(subject: "/O=Org/description=desc", summary: "Org"),
        SummaryCase(subject: "/C=US/ST=California", summary: "California, US"),
        SummaryCase(subject: "/O=Org", extensions: ["subjectAltName=email:me@x.test"], summary: "me@x.test"),
        SummaryCase(
            subject: "/O=Org/emailAddress=subj@x.test", extensions: ["subjectAltName=email:san@x.test"],
            summary: "san@x.test"),
        SummaryCase(subject: "/O=Org", extensions: ["subjectAltName=DNS:host.x.test"], summary: "host.x.test"),
        SummaryCase(subject: "/O=Org", extensions: ["subjectAltName=IP:10.0.0.1"], summary: "Org"),
        SummaryCase(subject: "/O=Org", extensions: ["subjectAltName=DNS:-bad-.test"], summary: "Org"),
        SummaryCase(
            subject: "/CN=Leaf", extensions: ["subjectAltName=email:me@x.test"], summary: "Leaf", commonName: "Leaf"),
    ]

    @Test(arguments: summaryCases)
    func subjectSummaryAndCommonName(_ testCase: SummaryCase) throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let certificate = try X509Certificate(
            derEncoded: openssl.selfSigned("c", subject: testCase.subject, extensions: testCase.extensions))
        #expect(certificate.subjectSummary == testCase.summary)
        #expect(certificate.inferredLabel == testCase.summary)
        #expect(certificate.commonName == testCase.commonName)
    }

    @Test func emailAddressesSANFirstThenSubjectElseEmpty() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let both = try X509Certificate(
            derEncoded: openssl.selfSigned(
                "a", subject: "/CN=x/emailAddress=subject@x.test",
                extensions: ["subjectAltName=email:one@x.test,DNS:x.test,email:two@x.test"]))
        #expect(both.emailAddresses == ["one@x.test", "two@x.test", "subject@x.test"])
        let none = try X509Certificate(derEncoded: openssl.selfSigned("b", subject: "/CN=y"))
        #expect(none.emailAddresses == [])
    }

    /// `createNormalizedX501Name`: only PrintableString changes; lengths are re-encoded.
    @Test func normalizedNameBytes() throws {
        let name: [UInt8] = derTLV(
            0x30,
            derTLV(0x31, derTLV(0x30, [0x06, 0x03, 0x55, 0x04, 0x0a] + derTLV(0x13, Array("  hello \t  World ".utf8))))
                + derTLV(
                    0x31, derTLV(0x30, [0x06, 0x03, 0x55, 0x04, 0x03] + derTLV(0x0c, Array("  mixed  Case ".utf8)))))
        let expected: [UInt8] = [
            0x30, 0x2f,
            0x31, 0x14, 0x30, 0x12, 0x06, 0x03, 0x55, 0x04, 0x0a,
            0x13, 0x0b, 0x48, 0x45, 0x4c, 0x4c, 0x4f, 0x20, 0x57, 0x4f, 0x52, 0x4c, 0x44,
            0x31, 0x17, 0x30, 0x15, 0x06, 0x03, 0x55, 0x04, 0x03,
            0x0c, 0x0e, 0x20, 0x20, 0x6d, 0x69, 0x78, 0x65, 0x64, 0x20, 0x20, 0x43, 0x61, 0x73, 0x65, 0x20,
        ]
        let parsed = try DistinguishedName(derEncoded: name)
        #expect(parsed.normalizedSequence == expected)
        #expect(parsed.normalizedContent == Array(expected.dropFirst(2)))

        // A long value that shrinks below 128 bytes: every length goes from long to short form.
        let long = Array("a".utf8) + [UInt8](repeating: 0x20, count: 129) + Array("b".utf8)
        let longName = derTLV(0x30, derTLV(0x31, derTLV(0x30, [0x06, 0x03, 0x55, 0x04, 0x0b] + derTLV(0x13, long))))
        #expect(longName[1] == 0x81)
        let shortExpected: [UInt8] = [
            0x30, 0x0e, 0x31, 0x0c, 0x30, 0x0a, 0x06, 0x03, 0x55, 0x04, 0x0b, 0x13, 0x03, 0x41, 0x20, 0x42,
        ]
        #expect(try DistinguishedName(derEncoded: longName).normalizedSequence.hex == shortExpected.hex)
        // Blanks only: an empty value.
        let blanks = derTLV(
            0x30, derTLV(0x31, derTLV(0x30, [0x06, 0x03, 0x55, 0x04, 0x0b] + derTLV(0x13, [0x20, 0x09]))))
        #expect(
            try DistinguishedName(derEncoded: blanks).normalizedSequence == [
                0x30, 0x0b, 0x31, 0x09, 0x30, 0x07, 0x06, 0x03, 0x55, 0x04, 0x0b, 0x13, 0x00,
            ])
    }

    /// The same rule on a certificate whose subject openssl wrote as PrintableString
    /// (`string_mask = default`).
    @Test func normalizedSequencesOfAnOpenSSLCertificate() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        try openssl.write("req.cnf", "[req]\ndistinguished_name=dn\nstring_mask=default\n[dn]\n")
        try openssl.run([
            "req", "-x509", "-config", "req.cnf", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", "c.key", "-out", "c.pem", "-subj", "/O=  hello    World /OU=Mixed Case x/CN=plain",
        ])
        try openssl.run(["x509", "-in", "c.pem", "-outform", "DER", "-out", "c.der"])
        let certificate = try X509Certificate(derEncoded: openssl.read("c.der"))
        let tags = certificate.subject.attributes.map(\.valueTag)
        #expect(tags == [19, 19, 19])
        #expect(certificate.commonName == "plain")
        let normalized = try DistinguishedName(derEncoded: certificate.normalizedSubjectSequence)
        #expect(normalized.attributes.map(\.stringValue) == ["HELLO WORLD", "MIXED CASE X", "PLAIN"])
        #expect(certificate.normalizedIssuerSequence == certificate.normalizedSubjectSequence)
        #expect(certificate.subjectSummary == "plain")
    }

    @Test func keychainAttributes() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let certificate = try X509Certificate(
            derEncoded: openssl.selfSigned(
                "c", key: .p384, subject: "/CN=attrs", extensions: ["subjectKeyIdentifier=hash"],
                extra: ["-set_serial", "4660"]))
        let attributes = certificate.keychainAttributes
        #expect(attributes.certificateType == 3)
        #expect(attributes.certificateEncoding == 3)
        #expect(attributes.serialNumber == [0x12, 0x34])
        #expect(attributes.subject == Array(certificate.normalizedSubjectSequence.dropFirst(2)))
        #expect(attributes.issuer == attributes.subject)
        #expect(attributes.subjectKeyID == certificate.subjectKeyIdentifier)
        #expect(attributes.label == "attrs")
        // pkhh: SHA-1 of the uncompressed point, which is what openssl's EC key exports.
        try openssl.run(["ec", "-in", "c.key", "-pubout", "-outform", "DER", "-out", "pub.der"])
        let point = try openssl.read("pub.der").suffix(97)
        #expect(point.first == 0x04)
        #expect(attributes.publicKeyHash == Array(Insecure.SHA1.hash(data: point)))
    }
}
