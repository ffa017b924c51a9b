// SecCertificate against the real openssl: every Copy function compared with what openssl prints
// for the same certificate.

import Crypto
import Foundation
import Security
import Testing

@Suite("SecCertificate against openssl")
struct SecCertificateTests {
    @Test("CreateWithData: DER in, the same DER out; PEM, garbage and truncated DER give nil; trailing bytes dropped")
    func createAndCopyData() throws {
        let fixtures = try CertificateFixtures.get()
        let leaf = try certificate(fixtures.leaf.der)
        #expect(SecCertificateCopyData(leaf) as Data == fixtures.leaf.der)
        let pem = "-----BEGIN CERTIFICATE-----\n\(fixtures.leaf.der.base64EncodedString())\n-----END CERTIFICATE-----\n"
        #expect(SecCertificateCreateWithData(nil, Data(pem.utf8) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, Data([0x30, 0x03, 0x02, 0x01, 0x01]) as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, Data() as CFData) == nil)
        #expect(SecCertificateCreateWithData(nil, fixtures.leaf.der.dropLast() as CFData) == nil)
        let padded = try certificate(fixtures.leaf.der + Data([1, 2, 3, 4, 5]))
        #expect(SecCertificateCopyData(padded) as Data == fixtures.leaf.der)
    }

    @Test("type identifier, equality and hash by DER")
    func identityAndHashing() throws {
        let fixtures = try CertificateFixtures.get()
        let first = try certificate(fixtures.leaf.der)
        let second = try certificate(fixtures.leaf.der)
        let other = try certificate(fixtures.leaf2.der)
        #expect(CFGetTypeID(first) == SecCertificateGetTypeID())
        #expect(SecCertificateGetTypeID() != SecKeyGetTypeID())
        #expect(first == second && first.hashValue == second.hashValue)
        #expect(first != other)
        #expect(Set([first, second, other]).count == 2)
        #expect(!"\(first)".isEmpty)
    }

    @Test("summary, common name, e-mail addresses and serial number agree with openssl")
    func copiedValues() throws {
        let fixtures = try CertificateFixtures.get()
        let leaf = try certificate(fixtures.leaf.der)
        // openssl's RFC 2253 form lists the RDNs last first: its first CN is the last one encoded.
        let lastCN = fixtures.leaf.subjectRFC2253.split(separator: ",").first { $0.hasPrefix("CN=") }
        #expect(lastCN == "CN=Leaf B")
        var commonName: CFString?
        #expect(SecCertificateCopyCommonName(leaf, &commonName) == errSecSuccess)
        #expect(commonName.map { "CN=\($0)" } == lastCN.map(String.init))
        #expect(SecCertificateCopySubjectSummary(leaf) as String? == "Leaf B, Leaf A")

        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(leaf, &emails) == errSecSuccess)
        let addresses = try #require(emails as? [String])
        #expect(addresses == ["san@example.com", "subject@example.com"])
        #expect(Set(addresses) == Set(fixtures.leaf.emails))

        let serial = try #require(SecCertificateCopySerialNumberData(leaf, nil) as Data?)
        #expect(serial == Data([0x00, 0x80]))
        #expect(hex(serial.drop { $0 == 0 }) == fixtures.leaf.serialHex.lowercased())
        let caSerial = try #require(SecCertificateCopySerialNumberData(try certificate(fixtures.ca.der), nil) as Data?)
        #expect(hex(caSerial.drop { $0 == 0 }) == fixtures.ca.serialHex.lowercased())
    }

    @Test("no common name: -26276 and a nil name; the summary falls back to the OU; no e-mail: empty array")
    func withoutCommonName() throws {
        let rsa = try certificate(try CertificateFixtures.get().rsa.der)
        var commonName: CFString? = "stale" as CFString
        #expect(SecCertificateCopyCommonName(rsa, &commonName) == -26276)
        #expect(commonName == nil)
        #expect(SecCertificateCopySubjectSummary(rsa) as String? == "Unit")
        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(rsa, &emails) == errSecSuccess)
        #expect((emails as? [String]) == [])
    }

    @Test("normalized issuer of the leaf is the normalized subject of its CA; both are SEQUENCEs")
    func normalizedNames() throws {
        let fixtures = try CertificateFixtures.get()
        let leaf = try certificate(fixtures.leaf.der)
        let ca = try certificate(fixtures.ca.der)
        let issuer = try #require(SecCertificateCopyNormalizedIssuerSequence(leaf) as Data?)
        let caSubject = try #require(SecCertificateCopyNormalizedSubjectSequence(ca) as Data?)
        #expect(issuer == caSubject)
        #expect(issuer.first == 0x30)
        #expect(SecCertificateCopyNormalizedSubjectSequence(leaf) as Data? != issuer)
    }

    @Test("CopyKey gives openssl's public key (EC X9.63, RSA PKCS#1)", arguments: ["leaf", "rsa"])
    func copyKey(_ name: String) throws {
        let fixtures = try CertificateFixtures.get()
        let fixture = name == "leaf" ? fixtures.leaf : fixtures.rsa
        let key = try #require(SecCertificateCopyKey(try certificate(fixture.der)))
        #expect(CFGetTypeID(key) == SecKeyGetTypeID())
        #expect(SecKeyCopyExternalRepresentation(key, nil) as Data? == fixture.publicKey)
        let attributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
        #expect(attributes["kcls"] as? String == "0")
    }

    @Test("compile check: Apple's exact call shapes of the two functions swift-certificates bridges")
    func appleCallShapes() throws {
        let data = try CertificateFixtures.get().leaf.der
        // `X509.Certificate` (swift-certificates) calls exactly these under `#if canImport(Security)`.
        let create: (CFAllocator?, CFData) -> SecCertificate? = SecCertificateCreateWithData
        let copy: (SecCertificate) -> CFData = SecCertificateCopyData
        let certificate: SecCertificate? = SecCertificateCreateWithData(nil, data as CFData)
        let bytes: Data = SecCertificateCopyData(try #require(certificate)) as Data
        #expect(bytes == data)
        let created = try #require(create(kCFAllocatorDefault, data as CFData))
        #expect(copy(created) as Data == data)
    }
}
