// Certificates, keys and PKCS#12 files made by the real `openssl` once per test run (a missing openssl
// fails every test that uses them), kept in memory as bytes.

import Foundation
import Security
import Testing

/// One certificate made by openssl, with its key and what openssl says about it.
struct OpenSSLCertificate: Sendable {
    /// The certificate's DER.
    var der: Data
    /// The private key as PKCS#8 PEM.
    var keyPEM: Data
    /// The public key: X9.63 for EC, PKCS#1 for RSA (what `SecKeyCopyExternalRepresentation` returns).
    var publicKey: Data
    /// `openssl x509 -serial`: the serial number in hex, without leading zero bytes.
    var serialHex: String
    /// `openssl x509 -email`: every e-mail address, one per entry.
    var emails: [String]
    /// `openssl x509 -subject -nameopt RFC2253`.
    var subjectRFC2253: String
}

/// The fixtures of the certificate tests.
struct CertificateFixtures: Sendable {
    /// EC P-256 self-signed CA, `/CN=Test CA/O=Keychain`.
    var ca: OpenSSLCertificate
    /// EC leaf issued by the CA, serial 0x80, two CNs, a subject e-mail and SAN e-mail and DNS names.
    var leaf: OpenSSLCertificate
    /// Another EC leaf from the same CA, serial 2.
    var leaf2: OpenSSLCertificate
    /// RSA-2048 self-signed, `/O=Org/OU=Unit`, no common name.
    var rsa: OpenSSLCertificate
    /// Self-signed `/CN=Same Key` with the leaf's key.
    var sameKey: OpenSSLCertificate
    /// `openssl pkcs12 -export` defaults (PBES2 AES-256-CBC, HMAC-SHA-256): leaf + key + CA, pass "secret".
    var leafP12: Data
    /// The RSA certificate and key, defaults, pass "secret".
    var rsaP12: Data
    /// The leaf with `-legacy` (RC2-40 certificates, 3DES key, SHA-1 MAC), pass "secret".
    var legacyP12: Data
    /// The leaf with an empty passphrase (`-passout pass:`).
    var emptyPassphraseP12: Data

    /// Made once per run.
    static let shared: Result<CertificateFixtures, SecKeyTestFailure> = {
        do {
            return .success(try withScratchDirectory(make))
        } catch let failure as SecKeyTestFailure {
            return .failure(failure)
        } catch {
            return .failure(SecKeyTestFailure(description: "fixtures: \(error)"))
        }
    }()

    /// The shared fixtures, or the reason they could not be made (which fails the calling test).
    static func get() throws -> CertificateFixtures { try shared.get() }

    private static func make(_ directory: URL) throws -> CertificateFixtures {
        try directory.write(
            Data(
                """
                [leaf]
                subjectAltName = email:san@example.com, DNS:leaf.example.com, IP:10.0.0.1
                subjectKeyIdentifier = hash
                basicConstraints = CA:FALSE
                """.utf8), "ext.cnf")
        try makeCA(directory)
        for (name, subject, serial) in [
            ("leaf", "/CN=Leaf A/CN=Leaf B/O=Org/emailAddress=subject@example.com", "0x80"),
            ("leaf2", "/CN=Leaf Two", "2"),
        ] {
            try OpenSSL.run(
                [
                    "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key",
                    "-subj", subject, "-out", "\(name).csr",
                ], in: directory)
            try OpenSSL.run(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", serial,
                    "-days", "30", "-extfile", "ext.cnf", "-extensions", "leaf", "-out", "\(name).pem",
                ], in: directory)
        }
        try directory.write(try directory.read("leaf.key"), "samekey.key")
        try OpenSSL.run(
            ["req", "-x509", "-key", "samekey.key", "-subj", "/CN=Same Key", "-days", "30", "-out", "samekey.pem"],
            in: directory)
        try OpenSSL.run(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-subj", "/O=Org/OU=Unit",
                "-days", "30", "-out", "rsa.pem",
            ], in: directory)
        try OpenSSL.run(
            [
                "pkcs12", "-export", "-inkey", "leaf.key", "-in", "leaf.pem", "-certfile", "ca.pem", "-passout",
                "pass:secret", "-out", "leaf.p12",
            ], in: directory)
        try OpenSSL.run(
            ["pkcs12", "-export", "-inkey", "rsa.key", "-in", "rsa.pem", "-passout", "pass:secret", "-out", "rsa.p12"],
            in: directory)
        try OpenSSL.run(
            [
                "pkcs12", "-export", "-legacy", "-inkey", "leaf.key", "-in", "leaf.pem", "-passout", "pass:secret",
                "-out", "legacy.p12",
            ], in: directory)
        try OpenSSL.run(
            ["pkcs12", "-export", "-inkey", "leaf.key", "-in", "leaf.pem", "-passout", "pass:", "-out", "empty.p12"],
            in: directory)
        return CertificateFixtures(
            ca: try describe("ca", ec: true, directory), leaf: try describe("leaf", ec: true, directory),
            leaf2: try describe("leaf2", ec: true, directory), rsa: try describe("rsa", ec: false, directory),
            sameKey: try describe("samekey", ec: true, directory),
            leafP12: try directory.read("leaf.p12"), rsaP12: try directory.read("rsa.p12"),
            legacyP12: try directory.read("legacy.p12"), emptyPassphraseP12: try directory.read("empty.p12"))
    }

    private static func makeCA(_ directory: URL) throws {
        try OpenSSL.run(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
                "-subj", "/CN=Test CA/O=Keychain", "-days", "30", "-addext", "basicConstraints=critical,CA:TRUE",
                "-out", "ca.pem",
            ], in: directory)
    }

    private static func describe(_ name: String, ec: Bool, _ directory: URL) throws -> OpenSSLCertificate {
        let der = try OpenSSL.run(["x509", "-in", "\(name).pem", "-outform", "DER"], in: directory)
        let publicKey =
            ec
            ? try OpenSSL.run(["pkey", "-in", "\(name).key", "-pubout", "-outform", "DER"], in: directory).suffix(65)
            : try OpenSSL.run(
                ["rsa", "-in", "\(name).key", "-RSAPublicKey_out", "-outform", "DER"], in: directory)
        func text(_ arguments: [String]) throws -> String {
            String(
                decoding: try OpenSSL.run(["x509", "-in", "\(name).pem", "-noout"] + arguments, in: directory),
                as: UTF8.self
            )
            .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return OpenSSLCertificate(
            der: der, keyPEM: try directory.read("\(name).key"), publicKey: Data(publicKey),
            serialHex: String(try text(["-serial"]).dropFirst("serial=".count)),
            emails: try text(["-email"]).split(separator: "\n").map(String.init),
            subjectRFC2253: String(try text(["-subject", "-nameopt", "RFC2253"]).dropFirst("subject=".count)))
    }
}

/// A certificate from DER, failing the test when it does not parse.
func certificate(_ der: Data) throws -> SecCertificate {
    try #require(SecCertificateCreateWithData(nil, der as CFData))
}

/// Lower-case hex of bytes.
func hex(_ data: Data) -> String {
    data.map { String(format: "%02x", $0) }.joined()
}

/// Imports a PKCS#12 file, returning the status and the result dictionaries.
func importPKCS12(_ data: Data, _ options: [CFString: Any]) -> (OSStatus, [[String: Any]]) {
    var items: CFArray?
    let status = SecPKCS12Import(data as CFData, options as CFDictionary, &items)
    return (status, (items as? [[String: Any]]) ?? [])
}
