import Crypto
import Foundation
import Testing

@testable import KeychainPKI

/// `PKCS12.export` writes files that `openssl pkcs12` reads with the passphrase, with the
/// modern algorithms, and that give back the same key and certificates.
@Suite struct PKCS12ExportTests {
    @Test(arguments: [OpenSSL.KeyKind.p256, .rsa2048])
    func opensslReadsOurExport(_ key: OpenSSL.KeyKind) throws {
        let fixture = try PKCS12Tests.Fixture(key: key)
        let openssl = fixture.openssl
        defer { openssl.cleanUp() }
        let file = try PKCS12.export(
            privateKey: fixture.pkcs8, certificates: [fixture.leaf, fixture.ca], passphrase: "export pw",
            friendlyName: "Exported", iterations: 2048)
        try openssl.write("ours.p12", file)

        let info = try openssl.run(
            ["pkcs12", "-info", "-in", "ours.p12", "-passin", "pass:export pw", "-noout"], includeStandardError: true
        ).output
        #expect(info.contains("MAC: sha256, Iteration 2048"))
        #expect(info.contains("PKCS7 Encrypted data: PBES2, PBKDF2, AES-256-CBC, Iteration 2048, PRF hmacWithSHA256"))
        #expect(info.contains("Shrouded Keybag: PBES2, PBKDF2, AES-256-CBC, Iteration 2048, PRF hmacWithSHA256"))

        // openssl gives back our key and both certificates.
        try openssl.run([
            "pkcs12", "-in", "ours.p12", "-passin", "pass:export pw", "-nocerts", "-nodes", "-out", "key.pem",
        ])
        try openssl.run(["pkcs8", "-topk8", "-nocrypt", "-in", "key.pem", "-outform", "DER", "-out", "key.der"])
        #expect(PKCS12Tests.digest(try openssl.read("key.der")) == PKCS12Tests.digest(fixture.pkcs8))
        let certs = try openssl.run(["pkcs12", "-in", "ours.p12", "-passin", "pass:export pw", "-nokeys"]).output
        #expect(certs.components(separatedBy: "BEGIN CERTIFICATE").count == 3)
        #expect(certs.contains("friendlyName: Exported"))

        let wrong = try openssl.run(
            ["pkcs12", "-info", "-in", "ours.p12", "-passin", "pass:nope", "-noout"], allowFailure: true)
        #expect(wrong.status != 0)

        // And we read it back.
        let contents = try PKCS12.parse(file, passphrase: "export pw")
        #expect(contents.identities.count == 1)
        #expect(contents.identities.first?.certificate == fixture.leaf)
        #expect(contents.identities.first?.privateKey.friendlyName == "Exported")
        #expect(contents.unpairedCertificates == [fixture.ca])
    }

    @Test func exportRefusesAMismatchedKeyNoCertificateAndBadIterations() throws {
        let fixture = try PKCS12Tests.Fixture()
        defer { fixture.openssl.cleanUp() }
        #expect(throws: PKIError(.invalidKey, "PKCS#12 export: the private key does not match the first certificate")) {
            try PKCS12.export(privateKey: fixture.pkcs8, certificates: [fixture.ca], passphrase: "x", iterations: 1)
        }
        #expect(throws: PKIError.malformed("PKCS#12 export: no certificate")) {
            try PKCS12.export(privateKey: fixture.pkcs8, certificates: [], passphrase: "x", iterations: 1)
        }
        #expect(throws: PKIError.self) {
            try PKCS12.export(privateKey: fixture.pkcs8, certificates: [fixture.leaf], passphrase: "x", iterations: 0)
        }
        #expect(throws: PKIError.self) {
            try PKCS12.export(privateKey: [0x30, 0x00], certificates: [fixture.leaf], passphrase: "x", iterations: 1)
        }
    }

    /// PBES2 variants `openssl pkcs12` cannot write (PRF hmacWithSHA1/SHA512, AES-192) read
    /// through the same decryptor from `openssl pkcs8 -topk8 -v2 … -v2prf …`.
    @Test(arguments: [
        ("aes-128-cbc", "hmacWithSHA1"), ("aes-192-cbc", "hmacWithSHA512"), ("aes-256-cbc", "hmacWithSHA384"),
    ])
    func pbes2VariantsFromOpenSSLPKCS8(_ cipher: String, _ prf: String) throws {
        let fixture = try PKCS12Tests.Fixture()
        defer { fixture.openssl.cleanUp() }
        try fixture.openssl.run([
            "pkcs8", "-topk8", "-in", "leaf.key", "-v2", cipher, "-v2prf", prf, "-iter", "100", "-passout", "pass:pw",
            "-outform", "DER", "-out", "enc.der",
        ])
        var reader = PKCS12Reader(passphrase: "pw")
        let node = try parseDER(fixture.openssl.read("enc.der")[...], "test")
        var fields = try NodeList(node, .sequence, "test")
        let algorithm = try AlgorithmIdentifier(node: fields.next(), "test")
        let ciphertext = try octetStringBytes(fields.next(), ber: false, "test")
        let plaintext = try reader.decrypt(algorithm, ciphertext)
        #expect(PKCS12Tests.digest(plaintext) == PKCS12Tests.digest(fixture.pkcs8))
        // A wrong passphrase never gives the key back. CBC's padding check refuses it about 255
        // times in 256; otherwise it decrypts to noise (in a .p12 file the MAC, checked before any
        // decryption, refuses the passphrase first). OpenSSL draws a new salt each run, so which
        // of the two happens was random: this test failed once in CI when the padding passed.
        var wrong = PKCS12Reader(passphrase: "nope")
        let wrongPlaintext = try? wrong.decrypt(algorithm, ciphertext)
        #expect(wrongPlaintext.map { PKCS12Tests.digest($0) != PKCS12Tests.digest(fixture.pkcs8) } ?? true)
    }

    /// macOS MACs an empty passphrase over zero bytes, OpenSSL over 00 00: both are accepted.
    @Test func emptyPassphraseAsZeroBytesIsAccepted() throws {
        let fixture = try PKCS12Tests.Fixture()
        defer { fixture.openssl.cleanUp() }
        let file = try fixture.p12(["-iter", "10"], passphrase: "")
        let zeroBytes = try BERRewriter.rewritePFX(file, passphrase: "", rawPassword: [])
        #expect(try PKCS12.parse(zeroBytes, passphrase: "").identities.count == 1)
        #expect(throws: PKIError.self) { try PKCS12.parse(zeroBytes, passphrase: "x") }
    }
}
