import Foundation
import Testing

@testable import KeychainPKI

/// Extensions and dates at the edges, made by `openssl req -addext` with raw DER values.
@Suite struct X509EdgeCaseTests {
    /// As Apple's `SecCertificateParse`: a critical known extension that does not parse refuses
    /// the certificate; a non-critical one is recorded and ignored; an unknown critical one is
    /// flagged for the validator.
    @Test func extensionParsingFollowsApple() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let unknownCritical = try X509Certificate(
            derEncoded: openssl.selfSigned("a", subject: "/CN=a", extensions: ["1.2.3.4=critical,DER:0500"]))
        #expect(unknownCritical.hasUnknownCriticalExtension)
        #expect(unknownCritical.extensions.contains { $0.oid == "1.2.3.4" && $0.isCritical && $0.value == [5, 0] })

        let badCritical = try openssl.selfSigned("b", subject: "/CN=b", extensions: ["2.5.29.19=critical,DER:0500"])
        #expect(throws: PKIError.malformed("critical extension 2.5.29.19 does not parse")) {
            try X509Certificate(derEncoded: badCritical)
        }

        let badNonCritical = try X509Certificate(
            derEncoded: openssl.selfSigned("c", subject: "/CN=c", extensions: ["2.5.29.17=DER:0500"]))
        #expect(badNonCritical.unparseableExtensions == ["2.5.29.17"])
        #expect(badNonCritical.subjectAlternativeNames == nil)
        #expect(badNonCritical.subjectSummary == "c")
    }

    /// Dates from 2050 on are GeneralizedTime; both forms match what openssl prints, and
    /// `isValid(at:)` includes both ends.
    @Test func validityAcrossUTCTimeAndGeneralizedTime() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        _ = try openssl.selfSigned("ca", subject: "/CN=CA", extensions: ["basicConstraints=critical,CA:TRUE"])
        let der = try openssl.issued("long", by: "ca", subject: "/CN=long", days: "20000")
        let certificate = try X509Certificate(derEncoded: der)
        let printed = try openssl.run(["x509", "-in", "long.der", "-inform", "DER", "-noout", "-dates"]).output
        #expect(
            X509CertificateTests.field(printed, "notAfter=").flatMap(X509CertificateTests.opensslDate)
                == certificate.notValidAfter)
        #expect(
            X509CertificateTests.field(printed, "notBefore=").flatMap(X509CertificateTests.opensslDate)
                == certificate.notValidBefore)
        #expect(Calendar(identifier: .gregorian).component(.year, from: certificate.notValidAfter) >= 2080)
        #expect(der.contains(0x18))  // a GeneralizedTime tag
        #expect(certificate.isValid(at: certificate.notValidBefore))
        #expect(certificate.isValid(at: certificate.notValidAfter))
        #expect(!certificate.isValid(at: certificate.notValidAfter.addingTimeInterval(1)))
        #expect(!certificate.isValid(at: certificate.notValidBefore.addingTimeInterval(-1)))
        #expect(X509Time.daysFromCivil(1970, 1, 1) == 0 && X509Time.daysFromCivil(2000, 3, 1) == 11_017)
    }

    /// swift-crypto verifies PSS only with a digest-length salt (what the CA/Browser Forum
    /// requires). OpenSSL's default PSS salt is the maximum: such a certificate is reported as
    /// unsupported, never as valid or invalid.
    @Test func pssWithAnotherSaltLengthIsUnsupported() throws {
        let openssl = try OpenSSL()
        defer { openssl.cleanUp() }
        let certificate = try X509Certificate(
            derEncoded: openssl.selfSigned(
                "pss", key: .rsa2048, subject: "/CN=pss", extra: ["-sigopt", "rsa_padding_mode:pss"]))
        #expect(certificate.signatureAlgorithm.oid == "1.2.840.113549.1.1.10")
        #expect(
            throws: PKIError(
                .unsupportedAlgorithm,
                "RSASSA-PSS: only MGF1 with the same digest and a digest-length salt is supported")
        ) {
            try certificate.isSignatureValid(issuedBy: certificate)
        }
    }

    /// A bag nested deeper than the limit, and too many bags, are refused beneath a valid MAC.
    @Test func pkcs12NestingAndBagLimits() throws {
        let attribute: [UInt8] = []
        var safeContents = derTLV(0x30, [])
        for _ in 0...PKCS12.maximumBagNesting {
            let bag = derTLV(0x30, DERWriter.oid(OID.safeContentsBag) + DERWriter.explicit(0, safeContents) + attribute)
            safeContents = derTLV(0x30, bag)
        }
        let nested = derTLV(
            0x30, derTLV(0x30, DERWriter.oid(OID.data) + DERWriter.explicit(0, derTLV(0x04, safeContents))))
        #expect(throws: PKIError(.limitExceeded, "PKCS#12: safeContentsBag nested deeper than 4")) {
            try PKCS12.parse(FuzzTests.pfx(authSafe: nested, passphrase: ""), passphrase: "")
        }

        let secret = derTLV(0x30, DERWriter.oid(OID.secretBag) + DERWriter.explicit(0, [0x05, 0x00]))
        let many = derTLV(0x30, [UInt8]((0...PKCS12.maximumBags).flatMap { _ in secret }))
        let wide = derTLV(0x30, derTLV(0x30, DERWriter.oid(OID.data) + DERWriter.explicit(0, derTLV(0x04, many))))
        #expect(throws: PKIError(.limitExceeded, "PKCS#12: more than 10000 bags")) {
            try PKCS12.parse(FuzzTests.pfx(authSafe: wide, passphrase: "pw"), passphrase: "pw")
        }

        let unknown = derTLV(0x30, DERWriter.oid("1.2.3.4") + DERWriter.explicit(0, [0x05, 0x00]))
        let odd = derTLV(
            0x30, derTLV(0x30, DERWriter.oid(OID.data) + DERWriter.explicit(0, derTLV(0x04, derTLV(0x30, unknown)))))
        #expect(throws: PKIError.malformed("PKCS#12: unknown bag type 1.2.3.4")) {
            try PKCS12.parse(FuzzTests.pfx(authSafe: odd, passphrase: "pw"), passphrase: "pw")
        }
        // An empty AuthenticatedSafe is a valid, empty file.
        let empty = try PKCS12.parse(FuzzTests.pfx(authSafe: derTLV(0x30, []), passphrase: "pw"), passphrase: "pw")
        #expect(empty.certificates.isEmpty && empty.privateKeys.isEmpty && empty.identities.isEmpty)
    }
}
