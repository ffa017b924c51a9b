import Crypto
import SwiftASN1
import Foundation
import Testing

@testable import KeychainPKI

/// `.p12` files made by the real `openssl pkcs12 -export` (default PBES2, explicit ciphers and
/// MACs, `-legacy`), read by `PKCS12.parse`; our export read back by `openssl pkcs12`.
@Suite struct PKCS12Tests {
    /// Key bytes are compared through their SHA-256 so a failure prints no key.
    static func digest(_ bytes: [UInt8]) -> String { Array(SHA256.hash(data: bytes)).hex }
    func digest(_ bytes: [UInt8]) -> String { Self.digest(bytes) }

    /// A leaf (and its CA) and a `.p12` of them made with `options`.
    struct Fixture {
        let openssl: OpenSSL
        let leaf: X509Certificate
        let ca: X509Certificate
        let pkcs8: [UInt8]

        init(key: OpenSSL.KeyKind = .p256) throws {
            openssl = try OpenSSL()
            ca = try X509Certificate(
                derEncoded: openssl.selfSigned(
                    "ca", key: .p256, subject: "/CN=P12 CA", extensions: ["basicConstraints=critical,CA:TRUE"]))
            leaf = try X509Certificate(
                derEncoded: openssl.issued("leaf", by: "ca", key: key, subject: "/CN=p12 leaf/O=Keychain"))
            try openssl.run(["pkcs8", "-topk8", "-nocrypt", "-in", "leaf.key", "-outform", "DER", "-out", "leaf.pkcs8"])
            pkcs8 = try openssl.read("leaf.pkcs8")
        }

        func p12(_ options: [String], passphrase: String = "pw", name: String = "out.p12", chain: Bool = false) throws
            -> [UInt8]
        {
            var arguments = ["pkcs12", "-export", "-in", "leaf.pem", "-inkey", "leaf.key", "-out", name]
            arguments += ["-passout", "pass:\(passphrase)"] + options
            if chain { arguments += ["-certfile", "ca.pem"] }
            try openssl.run(arguments)
            return try openssl.read(name)
        }
    }

    struct ImportCase: Sendable, CustomTestStringConvertible {
        var key: OpenSSL.KeyKind
        var options: [String]
        var testDescription: String { "\(key.rawValue) \(options.joined(separator: " "))" }
    }

    static let importCases: [ImportCase] = [
        ImportCase(key: .p256, options: ["-iter", "1000"]),
        ImportCase(key: .rsa2048, options: ["-iter", "1000"]),
        ImportCase(
            key: .p384,
            options: ["-iter", "10", "-keypbe", "AES-128-CBC", "-certpbe", "AES-192-CBC", "-macalg", "sha1"]),
        ImportCase(key: .p521, options: ["-iter", "10", "-macalg", "sha384"]),
        ImportCase(key: .p256, options: ["-iter", "10", "-macalg", "sha512", "-nomaciter"]),
        ImportCase(key: .p256, options: ["-iter", "10", "-macalg", "sha256", "-certpbe", "NONE"]),
    ]

    /// Default and explicit PBES2 settings: one identity whose key is openssl's PKCS#8 and whose
    /// certificate is the leaf; the pair shares the public key.
    @Test(arguments: importCases)
    func importsOpenSSLExports(_ testCase: ImportCase) throws {
        let fixture = try Fixture(key: testCase.key)
        defer { fixture.openssl.cleanUp() }
        let contents = try PKCS12.parse(fixture.p12(testCase.options), passphrase: "pw")
        #expect(contents.certificates.map(\.certificate) == [fixture.leaf])
        #expect(contents.privateKeys.count == 1)
        let identity = try #require(contents.identities.first)
        #expect(contents.identities.count == 1)
        #expect(identity.certificate == fixture.leaf)
        #expect(digest(identity.privateKey.pkcs8DER) == digest(fixture.pkcs8))
        #expect(identity.privateKey.wasEncrypted)
        #expect(try identity.privateKey.publicKeyBytes() == fixture.leaf.publicKeyInfo.keyBytes)
        // The identity join: the key's klbl (SHA-1 of its public bytes) is the certificate's pkhh.
        #expect(Array(Insecure.SHA1.hash(data: try identity.privateKey.publicKeyBytes())) == fixture.leaf.publicKeyHash)
        switch testCase.key {
        case .rsa2048, .rsa1024: #expect(identity.privateKey.keyType == .rsa)
        default: #expect(identity.privateKey.keyType != .rsa)
        }
        #expect(contents.unpairedCertificates.isEmpty)
    }

    @Test func chainFriendlyNameAndLocalKeyID() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let contents = try PKCS12.parse(
            fixture.p12(["-iter", "10", "-name", "My Identity ✓"], chain: true), passphrase: "pw")
        #expect(Set(contents.certificates.map(\.certificate)) == [fixture.leaf, fixture.ca])
        #expect(contents.unpairedCertificates == [fixture.ca])
        let identity = try #require(contents.identities.first)
        #expect(identity.certificate == fixture.leaf)
        #expect(identity.privateKey.friendlyName == "My Identity ✓")
        // openssl's localKeyID is the SHA-1 of the certificate.
        #expect(identity.privateKey.localKeyID == Array(Insecure.SHA1.hash(data: fixture.leaf.derBytes)))
        let leafBag = try #require(contents.certificates.first { $0.certificate == fixture.leaf })
        #expect(leafBag.friendlyName == "My Identity ✓" && leafBag.localKeyID == identity.privateKey.localKeyID)
        #expect(!identity.privateKey.description.contains(fixture.pkcs8.hex))
        #expect(!"\(identity.privateKey)".contains("pw"))
    }

    @Test func keyOnlyCertificateOnlyEmptyAndUnicodePassphrases() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let keyOnly = try PKCS12.parse(fixture.p12(["-iter", "10", "-nocerts"], name: "k.p12"), passphrase: "pw")
        #expect(keyOnly.privateKeys.count == 1 && keyOnly.certificates.isEmpty && keyOnly.identities.isEmpty)
        let certsOnly = try PKCS12.parse(fixture.p12(["-iter", "10", "-nokeys"], name: "c.p12"), passphrase: "pw")
        #expect(certsOnly.privateKeys.isEmpty && certsOnly.certificates.count == 1 && certsOnly.identities.isEmpty)
        // OpenSSL MACs an empty passphrase as the BMPString 00 00.
        let empty = try PKCS12.parse(fixture.p12(["-iter", "10"], passphrase: "", name: "e.p12"), passphrase: "")
        #expect(empty.identities.count == 1)
        let unicode = try PKCS12.parse(
            fixture.p12(["-iter", "10"], passphrase: "pässwörd ☃", name: "u.p12"), passphrase: "pässwörd ☃")
        #expect(unicode.identities.count == 1)
    }

    @Test func wrongPassphraseIsAuthFailed() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let file = try fixture.p12(["-iter", "10"])
        for wrong in ["", "PW", "pw ", "wrong"] {
            do {
                _ = try PKCS12.parse(file, passphrase: wrong)
                Issue.record("accepted passphrase \(wrong)")
            } catch let error as PKIError {
                #expect(error.code == .wrongPassphrase)
                #expect(error.osStatus == -25293)
                #expect(!error.description.contains("pw"))
            }
        }
    }

    /// The legacy shapes of older OpenSSL (`-legacy`: RC2-40 certificates, 3DES key), Keychain Access
    /// and Windows (SHA-1 MAC without iterations), RC4, PBES1 and PBES2 over 3DES, DES and RC2:
    /// decrypted by OpenSSL's PKCS#12 reader into the same identity as openssl's own PKCS#8.
    static let legacyShapes: [[String]] = [
        ["-legacy"],
        ["-legacy", "-certpbe", "PBE-SHA1-RC2-40", "-keypbe", "PBE-SHA1-3DES", "-macalg", "sha1", "-nomaciter"],
        ["-legacy", "-certpbe", "NONE", "-keypbe", "PBE-SHA1-RC4-128"],
        ["-legacy", "-certpbe", "PBE-SHA1-2DES", "-keypbe", "PBE-SHA1-RC2-128"],
        ["-legacy", "-certpbe", "PBE-MD5-DES", "-keypbe", "PBE-SHA1-RC2-64"],
        ["-iter", "10", "-keypbe", "DES-EDE3-CBC"],
        ["-legacy", "-iter", "10", "-certpbe", "DES-CBC", "-keypbe", "RC2-CBC"],
    ]

    @Test(arguments: legacyShapes)
    func legacyFilesAreDecryptedByOpenSSLsReader(shape: [String]) throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let file = try fixture.p12(shape + ["-certfile", "ca.pem"], name: "old.p12")
        let contents = try PKCS12.parse(file, passphrase: "pw")
        #expect(contents.identities.count == 1)
        #expect(contents.identities.first.map { digest($0.privateKey.pkcs8DER) } == digest(fixture.pkcs8))
        #expect(contents.identities.first?.certificate == fixture.leaf)
        #expect(contents.certificates.contains { $0.certificate == fixture.ca })
        // A wrong passphrase is still reported as such.
        #expect(
            throws: PKIError(
                .wrongPassphrase, "PKCS#12: the MAC does not verify: wrong passphrase, or a damaged file")
        ) {
            try PKCS12.parse(file, passphrase: "nope")
        }
    }

    /// A legacy scheme libcrypto has no cipher for is refused with the conversion command; bytes
    /// whose padding does not check are malformed, never returned.
    @Test func legacySchemesNoLibraryDecodesAreRefused() throws {
        func algorithm(lastArc: UInt8, iterations: UInt8) throws -> AlgorithmIdentifier {
            let oid: [UInt8] = [0x06, 0x0a, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01, lastArc]
            let parameters = derTLV(0x30, derTLV(0x04, Array(repeating: 7, count: 8)) + [0x02, 0x01, iterations])
            return try AlgorithmIdentifier(node: DER.parse(derTLV(0x30, oid + parameters)), "test")
        }
        let unknown = try #require(try LegacyEncryption(algorithm(lastArc: 9, iterations: 1), maximumIterations: 10))
        do {
            _ = try unknown.decrypt(Array(repeating: 1, count: 16), passphrase: Array("pw".utf8))
            Issue.record("an unknown PKCS#12 PBE scheme decrypted")
        } catch let error as PKIError {
            #expect(error.code == .unsupportedLegacyEncryption)
            #expect(error.message.contains(PKIError.legacyConversionCommand))
        }
        let rc2 = try #require(try LegacyEncryption(algorithm(lastArc: 6, iterations: 1), maximumIterations: 10))
        do {
            let plaintext = try rc2.decrypt(Array(repeating: 0x55, count: 16), passphrase: Array("pw".utf8))
            Issue.record("garbage decrypted to \(plaintext.count) bytes")
        } catch let error as PKIError {
            #expect(error.code == .malformed, "\(error)")
            #expect(error.message.contains("decryption failed"))
        }
        #expect(throws: PKIError.self) {
            try LegacyEncryption(algorithm(lastArc: 6, iterations: 0), maximumIterations: 10)
        }
        #expect(throws: PKIError.self) {
            try LegacyEncryption(algorithm(lastArc: 6, iterations: 11), maximumIterations: 10)
        }
    }

    /// `PKIError.legacyConversionCommand` (named when a legacy file cannot be decrypted) converts a
    /// legacy file into a modern one we read.
    @Test func theLegacyConversionCommandWorks() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        _ = try fixture.p12(["-legacy"], name: "old0.p12")
        // The command in the message converts a legacy file into one we read (passphrases
        // given on the command line here; interactively openssl asks for them).
        try fixture.openssl.write("old.p12", fixture.openssl.read("old0.p12"))
        let steps = PKIError.legacyConversionCommand.components(separatedBy: " && ")
        for step in steps {
            var words = step.split(separator: " ").map(String.init)
            if words.first == "openssl" {
                words.removeFirst()
                // The intermediate PEM's key is encrypted under "pem pw".
                words += ["-passin", words.contains("-export") ? "pass:pem pw" : "pass:pw"]
                words += ["-passout", words.contains("-export") ? "pass:pw" : "pass:pem pw"]
                try fixture.openssl.run(words)
                if !words.contains("-export") {
                    let pem = String(decoding: try fixture.openssl.read("old.pem"), as: UTF8.self)
                    #expect(pem.contains("ENCRYPTED PRIVATE KEY") && !pem.contains("BEGIN PRIVATE KEY"))
                }
            }
        }
        let converted = try PKCS12.parse(fixture.openssl.read("new.p12"), passphrase: "pw")
        #expect(converted.identities.first.map { digest($0.privateKey.pkcs8DER) } == digest(fixture.pkcs8))
    }

    @Test func truncationsPEMGarbageAndHugeLengthsAreMalformed() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let file = try fixture.p12(["-iter", "1"])
        for length in 0..<file.count {
            do {
                _ = try PKCS12.parse(file.prefix(length), passphrase: "pw")
                Issue.record("truncation to \(length) bytes accepted")
            } catch let error as PKIError {
                #expect(error.osStatus == -26275, "\(length): \(error)")
            }
        }
        let pem = Array(try fixture.openssl.read("leaf.pem"))
        for bad in [pem, [0x30, 0x84, 0xff, 0xff, 0xff, 0xff], [0x30, 0x80], file + [0]] {
            #expect(throws: PKIError.self) { try PKCS12.parse(bad, passphrase: "pw") }
        }
    }

    /// An iteration count over the cap is refused before any work is done.
    @Test func iterationCapIsEnforced() throws {
        let authSafe = derTLV(0x30, [])
        func pfx(iterations: Int) -> [UInt8] { pfx(iterationsDER: DERWriter.integer(iterations)) }
        func pfx(iterationsDER: [UInt8]) -> [UInt8] {
            let digestInfo = derTLV(
                0x30, derTLV(0x30, DERWriter.oid(OID.sha256) + [5, 0]) + derTLV(0x04, [UInt8](repeating: 0, count: 32)))
            let mac = derTLV(0x30, digestInfo + derTLV(0x04, [1, 2, 3, 4]) + iterationsDER)
            let info = derTLV(0x30, DERWriter.oid(OID.data) + DERWriter.explicit(0, derTLV(0x04, authSafe)))
            return derTLV(0x30, DERWriter.integer(3) + info + mac)
        }
        // Refused when the count is read, before any derivation (no wall-clock check: the
        // error itself says the limit was applied).
        #expect(
            throws: PKIError(
                .limitExceeded, "MacData.iterations: 2147483647 is over the limit of 10000000", osStatus: -25293)
        ) {
            try PKCS12.parse(pfx(iterations: Int(Int32.max)), passphrase: "pw")
        }
        #expect(
            throws: PKIError(
                .limitExceeded, "MacData.iterations: 24-byte integer is over the limit of 10000000",
                osStatus: -25293)
        ) {
            try PKCS12.parse(
                pfx(iterationsDER: derTLV(0x02, [0x01] + [UInt8](repeating: 0xff, count: 23))), passphrase: "pw")
        }
        #expect(throws: PKIError(.malformed, "MacData: iteration count 0", osStatus: -25293)) {
            _ = try PKCS12.parse(pfx(iterations: 0), passphrase: "pw")
        }
    }

    /// As Apple's `p12VerifyMac`: a MAC digest we do not support (SHA-224: swift-crypto has no
    /// SHA-224 hash function) fails the MAC stage, with -25293.
    @Test func unsupportedMACDigestFailsTheMACStage() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let file = try fixture.p12(["-iter", "10", "-macalg", "sha224"])
        #expect(
            throws: PKIError(
                .unsupportedAlgorithm, "MAC digest 2.16.840.1.101.3.4.2.4 is not supported (SHA-1/256/384/512 are)",
                osStatus: -25293)
        ) {
            try PKCS12.parse(file, passphrase: "pw")
        }
    }

    /// The same file re-encoded in BER (indefinite lengths everywhere, OCTET STRINGs split into
    /// constructed segments, the MAC recomputed): openssl reads it, and so do we.
    @Test func berIndefiniteLengthsAndConstructedStrings() throws {
        let fixture = try Fixture()
        defer { fixture.openssl.cleanUp() }
        let der = try fixture.p12(["-iter", "10", "-macalg", "sha1"], chain: true)
        let ber = try BERRewriter.rewritePFX(der, passphrase: "pw")
        #expect(ber != der)
        #expect(ber.contains(0x80) && ber.count > der.count)
        try fixture.openssl.write("ber.p12", ber)
        let info = try fixture.openssl.run(
            ["pkcs12", "-info", "-in", "ber.p12", "-passin", "pass:pw", "-noout"], allowFailure: true)
        #expect(info.status == 0, "openssl on our BER file: \(info.output)")
        let contents = try PKCS12.parse(ber, passphrase: "pw")
        #expect(contents.identities.first.map { digest($0.privateKey.pkcs8DER) } == digest(fixture.pkcs8))
        #expect(contents.certificates.count == 2)
    }
}
