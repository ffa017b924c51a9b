import Crypto
import Foundation
import Testing

@testable import KeychainPKI

/// Certificates made by the real `openssl` at test time, read back by `X509Certificate` and
/// compared with what `openssl x509` prints for the same file.
@Suite struct X509CertificateTests {
    static let shortNames: [String: String] = [
        "2.5.4.3": "CN", "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.6": "C", "2.5.4.8": "ST", "2.5.4.7": "L",
        "1.2.840.113549.1.9.1": "emailAddress", "2.5.4.13": "description",
    ]

    /// The name as `openssl x509 -nameopt RFC2253` prints it (values here need no escaping).
    static func rfc2253(_ name: DistinguishedName) -> String {
        name.relativeNames.reversed().map { rdn in
            rdn.map { "\(shortNames[$0.type] ?? $0.type)=\($0.stringValue ?? "?")" }.joined(separator: "+")
        }.joined(separator: ",")
    }

    static func field(_ output: String, _ prefix: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    static func opensslDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy zzz"
        return formatter.date(from: text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " "))
    }

    @Test func fieldsMatchOpenSSL() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        _ = try openssl.selfSigned(
            "ca", key: .rsa2048, subject: "/C=US/O=Test CA Org/CN=Test Root",
            extensions: ["basicConstraints=critical,CA:TRUE,pathlen:1", "keyUsage=critical,keyCertSign,cRLSign"])
        let der = try openssl.issued(
            "leaf", by: "ca", key: .p256, subject: "/CN=leaf.test/O=Leaf Org/emailAddress=subject@leaf.test",
            extensions: [
                "basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyAgreement",
                "extendedKeyUsage=serverAuth,clientAuth,codeSigning",
                "subjectAltName=DNS:leaf.test,DNS:*.leaf.test,IP:10.1.2.3,IP:::1,email:san@leaf.test,URI:https://leaf.test/",
                "subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid",
            ])
        let certificate = try X509Certificate(derEncoded: der)
        #expect(certificate.derBytes == der)
        #expect(certificate.version == 3)

        let printed = try openssl.run([
            "x509", "-in", "leaf.der", "-inform", "DER", "-noout", "-serial", "-subject", "-issuer", "-dates",
            "-nameopt", "RFC2253",
        ]).output
        #expect(Self.field(printed, "serial=") == certificate.serialNumber.hex.trimmingLeadingZeroBytes)
        #expect(Self.field(printed, "subject=") == Self.rfc2253(certificate.subject))
        #expect(Self.field(printed, "issuer=") == Self.rfc2253(certificate.issuer))
        #expect(Self.field(printed, "notBefore=").flatMap(Self.opensslDate) == certificate.notValidBefore)
        #expect(Self.field(printed, "notAfter=").flatMap(Self.opensslDate) == certificate.notValidAfter)

        let emails = try openssl.run(["x509", "-in", "leaf.der", "-inform", "DER", "-noout", "-email"]).output
        #expect(Set(emails.split(separator: "\n").map(String.init)) == Set(certificate.emailAddresses))
        #expect(certificate.emailAddresses == ["san@leaf.test", "subject@leaf.test"])

        let san = try #require(certificate.subjectAlternativeNames)
        #expect(san.dnsNames == ["leaf.test", "*.leaf.test"])
        #expect(san.ipAddresses == [[10, 1, 2, 3], [UInt8](repeating: 0, count: 15) + [1]])
        #expect(san.uris == ["https://leaf.test/"])
        #expect(
            certificate.basicConstraints == BasicConstraints(isCertificateAuthority: false, pathLengthConstraint: nil))
        #expect(certificate.keyUsage == [.digitalSignature, .keyAgreement])
        #expect(
            certificate.extendedKeyUsage == [
                ExtendedKeyUsage.serverAuth, ExtendedKeyUsage.clientAuth, ExtendedKeyUsage.codeSigning,
            ])

        let ext = try openssl.run([
            "x509", "-in", "leaf.der", "-inform", "DER", "-noout", "-ext",
            "subjectKeyIdentifier,authorityKeyIdentifier",
        ]).output
        let ids = ext.split(separator: "\n").filter { $0.hasPrefix("    ") }.map {
            $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ":", with: "")
        }
        #expect(ids.count == 2)
        #expect(ids.first == certificate.subjectKeyIdentifier?.hex)
        #expect(ids.last == certificate.authorityKeyIdentifier?.hex)

        let root = try X509Certificate(derEncoded: openssl.read("ca.der"))
        #expect(root.basicConstraints == BasicConstraints(isCertificateAuthority: true, pathLengthConstraint: 1))
        #expect(root.keyUsage == [.keyCertSign, .cRLSign])
        #expect(certificate.authorityKeyIdentifier == root.subjectKeyIdentifier)
        #expect(certificate.issuer == root.subject)
        #expect(root.isSelfIssued && !certificate.isSelfIssued)
        #expect(!certificate.hasUnknownCriticalExtension && !certificate.hasDuplicateExtensions)
    }

    @Test func publicKeyTBSAndSignatureBytesMatchOpenSSL() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let der = try openssl.selfSigned("c", key: .p256, subject: "/CN=bytes")
        let certificate = try X509Certificate(derEncoded: der)
        try openssl.run(["pkey", "-in", "c.key", "-pubout", "-outform", "DER", "-out", "spki.der"])
        let spki = try openssl.read("spki.der")
        #expect(certificate.publicKeyInfo.derBytes == spki)
        #expect(certificate.publicKeyInfo.keyType == .ec(curveOID: "1.2.840.10045.3.1.7"))
        #expect(certificate.publicKeyInfo.keyBytes == Array(spki.suffix(65)))
        #expect(certificate.publicKeyHash == Array(Insecure.SHA1.hash(data: spki.suffix(65))))

        // openssl asn1parse -strparse 4 -out: the DER of the element at offset 4, tbsCertificate.
        try openssl.run(["asn1parse", "-inform", "DER", "-in", "c.der", "-strparse", "4", "-noout", "-out", "tbs.der"])
        #expect(certificate.tbsBytes == (try openssl.read("tbs.der")))
        #expect(certificate.signatureAlgorithm.oid == "1.2.840.10045.4.3.2")
        #expect(certificate.signature.first == 0x30)
        #expect(try certificate.isSignatureValid(issuedBy: certificate))
    }

    struct SignatureCase: Sendable, CustomTestStringConvertible {
        var issuerKey: OpenSSL.KeyKind
        var digest: String
        var sigopts: [String] = []
        var expected: CertificateSignatureAlgorithm
        var testDescription: String { "\(issuerKey.rawValue) \(digest) \(sigopts.joined(separator: ","))" }
    }

    static let signatureCases: [SignatureCase] = [
        SignatureCase(issuerKey: .rsa2048, digest: "sha1", expected: .rsaPKCS1(.sha1)),
        SignatureCase(issuerKey: .rsa2048, digest: "sha256", expected: .rsaPKCS1(.sha256)),
        SignatureCase(issuerKey: .rsa2048, digest: "sha384", expected: .rsaPKCS1(.sha384)),
        SignatureCase(issuerKey: .rsa2048, digest: "sha512", expected: .rsaPKCS1(.sha512)),
        SignatureCase(issuerKey: .rsa1024, digest: "sha256", expected: .rsaPKCS1(.sha256)),
        SignatureCase(
            issuerKey: .rsa2048, digest: "sha256", sigopts: ["rsa_padding_mode:pss", "rsa_pss_saltlen:digest"],
            expected: .rsaPSS(.sha256)),
        SignatureCase(
            issuerKey: .rsa2048, digest: "sha512", sigopts: ["rsa_padding_mode:pss", "rsa_pss_saltlen:digest"],
            expected: .rsaPSS(.sha512)),
        SignatureCase(issuerKey: .p256, digest: "sha256", expected: .ecdsa(.sha256)),
        SignatureCase(issuerKey: .p256, digest: "sha1", expected: .ecdsa(.sha1)),
        SignatureCase(issuerKey: .p384, digest: "sha384", expected: .ecdsa(.sha384)),
        SignatureCase(issuerKey: .p521, digest: "sha512", expected: .ecdsa(.sha512)),
        SignatureCase(issuerKey: .p256, digest: "sha512", expected: .ecdsa(.sha512)),
    ]

    /// Each issuer key and digest: the leaf verifies with its issuer, not with another key, and
    /// not after one bit of the TBS or the signature changes; `openssl verify` agrees.
    @Test(arguments: signatureCases)
    func signatureVerification(_ testCase: SignatureCase) throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let caDER = try openssl.selfSigned(
            "ca", key: testCase.issuerKey, subject: "/CN=CA",
            extensions: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign"],
            digest: testCase.digest)
        let leafDER = try openssl.issued(
            "leaf", by: "ca", subject: "/CN=leaf", digest: testCase.digest, sigopts: testCase.sigopts)
        let other = try X509Certificate(
            derEncoded: openssl.selfSigned("other", key: testCase.issuerKey, subject: "/CN=O"))
        let ca = try X509Certificate(derEncoded: caDER)
        let leaf = try X509Certificate(derEncoded: leafDER)
        #expect(try leaf.verifiableSignatureAlgorithm == testCase.expected)
        #expect(try leaf.isSignatureValid(issuedBy: ca))
        #expect(try !leaf.isSignatureValid(issuedBy: other))
        let verdict = try openssl.run(
            ["verify", "-x509_strict", "-CAfile", "ca.pem", "-auth_level", "0", "leaf.pem"], allowFailure: true)
        #expect(verdict.status == 0, "openssl verify: \(verdict.output)")

        // One bit flipped in the signature, then in the TBS (inside the subject's CN value).
        var badSignature = leafDER
        badSignature[badSignature.count - 3] ^= 0x01
        #expect(try !X509Certificate(derEncoded: badSignature).isSignatureValid(issuedBy: ca))
        var badTBS = leafDER
        let cn = try #require(badTBS.firstRange(of: Array("leaf".utf8)))
        badTBS[cn.lowerBound] ^= 0x20
        #expect(try !X509Certificate(derEncoded: badTBS).isSignatureValid(issuedBy: ca))
    }

    @Test func rsaSignatureWithECKeyIsInvalidKey() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let rsa = try X509Certificate(derEncoded: openssl.selfSigned("r", key: .rsa2048, subject: "/CN=r"))
        let ec = try X509Certificate(derEncoded: openssl.selfSigned("e", key: .p256, subject: "/CN=e"))
        #expect(throws: PKIError(.invalidKey, "an RSA signature needs an RSA key")) {
            try rsa.isSignatureValid(issuedBy: ec)
        }
        #expect(throws: PKIError(.invalidKey, "an ECDSA signature needs an EC key")) {
            try ec.isSignatureValid(issuedBy: rsa)
        }
    }

    @Test func refusesPEMTrailingBytesGarbageAndHugeLengths() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let der = try openssl.selfSigned("c", subject: "/CN=refusals")
        let pem = try openssl.read("c.pem")
        #expect(throws: PKIError.self) { try X509Certificate(derEncoded: pem) }
        #expect((try? X509Certificate(derEncoded: pem)) == nil)
        do {
            _ = try X509Certificate(derEncoded: pem)
        } catch let error as PKIError {
            #expect(error.code == .pemNotAccepted)
        }
        do {
            _ = try X509Certificate(derEncoded: der + [0, 1, 2, 3, 4])
            Issue.record("trailing bytes accepted")
        } catch let error as PKIError {
            #expect(error.code == .trailingBytes)
        }
        // Apple's SecCertificateCreateWithData keeps the leading certificate only.
        #expect(try X509Certificate(leadingCertificateIn: der + [0, 1, 2, 3, 4]).derBytes == der)
        for garbage: [UInt8] in [
            [], [0x30], [0x30, 0x00], [0x30, 0x80, 0x00, 0x00], [0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            [0x30, 0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], Array("hello".utf8),
            [UInt8](repeating: 0x30, count: 200), Array(der.prefix(der.count - 1)),
        ] {
            #expect(throws: PKIError.self) { try X509Certificate(derEncoded: garbage) }
        }
        // A 300-level nesting of SEQUENCEs hits swift-asn1's depth limit, not the stack.
        var nested: [UInt8] = []
        for _ in 0..<300 { nested = derTLV(0x30, nested) }
        #expect(throws: PKIError.self) { try X509Certificate(derEncoded: nested) }
    }

    @Test func serialNumberKeepsItsLeadingZero() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let certificate = try X509Certificate(
            derEncoded: openssl.selfSigned("c", subject: "/CN=serial", extra: ["-set_serial", "128"]))
        #expect(certificate.serialNumberData == [0x00, 0x80])
        #expect(certificate.keychainAttributes.serialNumber == [0x00, 0x80])
    }

    @Test func hashableByDER() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let a = try openssl.selfSigned("a", subject: "/CN=same")
        let b = try openssl.selfSigned("b", subject: "/CN=same")
        let set: Set = [
            try X509Certificate(derEncoded: a), try X509Certificate(derEncoded: a), try X509Certificate(derEncoded: b),
        ]
        #expect(set.count == 2)
    }
}

extension String {
    /// openssl prints serials without leading 00 bytes.
    var trimmingLeadingZeroBytes: String {
        var text = Substring(self)
        while text.count > 2 && text.hasPrefix("00") { text = text.dropFirst(2) }
        return String(text)
    }
}
