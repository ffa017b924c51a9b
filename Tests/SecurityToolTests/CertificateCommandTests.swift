import DBusNIO
import DBusWire
import Foundation
import KeychainTestSupport
import KeychainClient
import KeychainLibc
import Testing

/// Certificates and PKCS#12 files made by the real `openssl` for one test, in the sandbox.
/// A missing `openssl` fails the test (the run's status is not 0), it is never skipped.
struct PKIFiles {
    let directory: String

    init(_ sandbox: Sandbox) throws {
        directory = sandbox.root + "/pki"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory + "/" + name }

    /// Runs `openssl` with the arguments, in the directory; fails the test when it fails.
    /// - Returns: What it printed, as text.
    @discardableResult
    func openssl(_ arguments: [String], stdin: Data? = nil) throws -> String {
        String(decoding: try opensslBytes(arguments, stdin: stdin), as: UTF8.self)
    }

    /// Runs `openssl` as ``openssl(_:stdin:)`` does and returns its output's bytes.
    func opensslBytes(_ arguments: [String], stdin: Data? = nil) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            try input.fileHandleForWriting.write(contentsOf: stdin)
            try input.fileHandleForWriting.close()
        }
        let collected = output.fileHandleForReading.readDataToEndOfFile()
        let problems = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0,
            "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: problems, as: UTF8.self))")
        return collected
    }

    /// A self-signed P-256 certificate and key: `<name>.pem`, `<name>.key`.
    func selfSigned(_ name: String, subject: String) throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "\(name).key",
            "-out", "\(name).pem", "-days", "30", "-nodes", "-subj", subject,
        ])
    }

    /// A CA (`root.pem`, `root.key`) and a server certificate it issued for `leaf.example.com`
    /// (`leaf.pem`, `leaf.key`), valid for 30 days.
    func chain() throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "root.key", "-out",
            "root.pem", "-days", "30", "-nodes", "-subj", "/CN=Test Root CA", "-addext",
            "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        try openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "leaf.key", "-out",
            "leaf.csr", "-nodes", "-subj", "/CN=leaf.example.com",
        ])
        try "subjectAltName=DNS:leaf.example.com\nextendedKeyUsage=serverAuth\n".write(
            toFile: path("leaf.ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", "leaf.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial", "-out",
            "leaf.pem", "-days", "30", "-extfile", "leaf.ext",
        ])
    }

    /// `<name>.p12` of `<name>.key` and `<name>.pem` (and extra certificates), under `passphrase`.
    func pkcs12(_ name: String, passphrase: String, extra: [String] = [], legacy: Bool = false) throws {
        var arguments = [
            "pkcs12", "-export", "-inkey", "\(name).key", "-in", "\(name).pem", "-out", "\(name).p12", "-passout",
            "pass:\(passphrase)",
        ]
        for file in extra { arguments += ["-certfile", file] }
        if legacy { arguments.append("-legacy") }
        try openssl(arguments)
    }

    /// The SHA-1 fingerprint of a PEM certificate, uppercase hex without colons.
    func sha1(_ certificate: String) throws -> String {
        try fingerprint(certificate, digest: "-sha1")
    }

    func sha256(_ certificate: String) throws -> String {
        try fingerprint(certificate, digest: "-sha256")
    }

    private func fingerprint(_ certificate: String, digest: String) throws -> String {
        let line = try openssl(["x509", "-in", certificate, "-noout", "-fingerprint", digest])
        let value = line.split(separator: "=", maxSplits: 1).last.map(String.init) ?? ""
        return value.replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// `import`, `find-identity`, `find-certificate`, `export`, `add-certificates`,
/// `delete-certificate` and `delete-identity`, run as scripts run them, with files `openssl` made.
@Suite struct CertificateCommandTests {
    /// A sandbox with `build.keychain` (password `pw`); the processes get the password from
    /// `KEYCHAIN_PASSWORD`, as one-shot commands without the agent do.
    private func buildKeychain() throws -> (Sandbox, PKIFiles) {
        let sandbox = try Sandbox()
        let create = try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"])
        try #require(create.status == 0, "\(create)")
        return (sandbox, try PKIFiles(sandbox))
    }

    private let unlocked = ["KEYCHAIN_PASSWORD": "pw"]

    @Test("import of a .p12 with -P, then find-identity lists it in macOS's format, untrusted")
    func importThenFindIdentity() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("signing", subject: "/CN=Build Signing")
        try files.pkcs12("signing", passphrase: "p12pass")
        let sha1 = try files.sha1("signing.pem")

        let imported = try sandbox.run(
            [
                "import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p12pass", "-A", "-T",
                "/usr/bin/codesign",
            ],
            environment: unlocked)
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.out == "1 identity imported.\n")
        #expect(imported.err.isEmpty, "\(imported)")

        let all = try sandbox.run(["find-identity", "-p", "basic", "build.keychain"], environment: unlocked)
        #expect(all.status == 0, "\(all)")
        #expect(
            all.out == """

                Policy: X.509 Basic
                  Matching identities
                  1) \(sha1) "Build Signing" (CSSMERR_TP_NOT_TRUSTED)
                     1 identities found

                  Valid identities only
                     0 valid identities found

                """)

        let valid = try sandbox.run(["find-identity", "-v", "build.keychain"], environment: unlocked)
        #expect(valid.status == 0, "\(valid)")
        #expect(valid.out == "     0 valid identities found\n")

        let codesigning = try sandbox.run(
            ["find-identity", "-v", "-p", "codesigning", "-s", "Build", "build.keychain"], environment: unlocked)
        #expect(codesigning.out == "Looking for identities matching \"Build\"\n     0 valid identities found\n")

        // Importing the same identity again fails as on macOS.
        let again = try sandbox.run(
            ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p12pass"], environment: unlocked)
        #expect(again.status == 1, "\(again)")
        #expect(again.err == "security: SecKeychainItemImport: The specified item already exists in the keychain.\n")
    }

    @Test("the CI flow through the session agent: create, unlock, import and find-identity in four processes")
    func ciFlowThroughTheAgent() throws {
        let sandbox = try Sandbox()
        sandbox.agentMode = "auto"
        let socket = sandbox.root + "/agent/agent.sock"
        defer { stopAgent(at: socket) }
        let environment = ["KEYCHAIN_AGENT_SOCK": socket]
        let files = try PKIFiles(sandbox)
        try files.selfSigned("signing", subject: "/CN=Agent Signing")
        try files.pkcs12("signing", passphrase: "p12pass")
        #expect(
            try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"], environment: environment).status == 0)
        #expect(
            try sandbox.run(["unlock-keychain", "-p", "pw", "build.keychain"], environment: environment).status == 0)
        let imported = try sandbox.run(
            ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p12pass"], environment: environment)
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.out == "1 identity imported.\n")
        let found = try sandbox.run(["find-identity", "-p", "basic", "build.keychain"], environment: environment)
        #expect(found.status == 0, "\(found)")
        #expect(
            found.out.contains("  1) \(try files.sha1("signing.pem")) \"Agent Signing\" (CSSMERR_TP_NOT_TRUSTED)\n"))
        let sha1 = try files.sha1("signing.pem")
        let certificate = try sandbox.run(
            ["find-certificate", "-Z", "-c", "Agent", "build.keychain"], environment: environment)
        #expect(certificate.out.contains("SHA-1 hash: \(sha1)\n"), "\(certificate)")
        let exported = try sandbox.run(
            [
                "export", "-k", "build.keychain", "-t", "identities", "-f", "pkcs12", "-P", "x", "-o",
                files.path("out.p12"),
            ],
            environment: environment)
        #expect(exported.status == 0, "\(exported)")
        let keyBack = try files.openssl(["pkcs12", "-in", "out.p12", "-passin", "pass:x", "-nocerts", "-nodes"])
        #expect(
            try files.openssl(["pkey", "-pubout"], stdin: Data(keyBack.utf8))
                == files.openssl(["pkey", "-in", "signing.key", "-pubout"]))
        let deleted = try sandbox.run(["delete-identity", "-Z", sha1, "build.keychain"], environment: environment)
        #expect(deleted.status == 0, "\(deleted)")
        let after = try sandbox.run(["find-identity", "-v", "build.keychain"], environment: environment)
        #expect(after.out == "     0 valid identities found\n")
        let none = try sandbox.run(["find-identity", "build.keychain"], environment: environment)
        #expect(none.out.contains("     0 identities found\n"), "\(none)")
    }

    @Test("without -P the passphrase is asked for on the terminal, as macOS asks, and never echoed")
    func passphraseFromTheTerminal() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("signing", subject: "/CN=Prompted")
        try files.pkcs12("signing", passphrase: "typed-pass")
        let (run, echoed) = try sandbox.runOnTerminal(
            ["import", files.path("signing.p12"), "-k", "build.keychain"], answers: ["typed-pass"],
            environment: unlocked)
        #expect(run.status == 0, "\(run)")
        #expect(run.out == "1 identity imported.\n")
        #expect(run.err == "password to unlock signing.p12: \n", "\(run)")
        #expect(!echoed.contains("typed-pass") && !run.err.contains("typed-pass"))
    }

    @Test("a locked keychain with no password to unlock it: exit 1 with the locked message")
    func lockedKeychain() throws {
        let (sandbox, files) = try buildKeychain()
        try sandbox.lock("build.keychain")
        try files.selfSigned("signing", subject: "/CN=Locked Out")
        try files.pkcs12("signing", passphrase: "p")
        let imported = try sandbox.run(["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p"])
        #expect(imported.status == 1, "\(imported)")
        #expect(imported.err.hasPrefix("security: SecKeychainItemImport: User interaction is not allowed.\n"))
        let wrong = try sandbox.run(
            ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p"],
            environment: ["KEYCHAIN_PASSWORD": "nope"])
        #expect(wrong.status != 0, "\(wrong)")
        #expect(wrong.out.isEmpty)
    }

    @Test("a wrong passphrase gives macOS's message and exit 1; nothing is imported")
    func wrongPassphrase() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("signing", subject: "/CN=Build Signing")
        try files.pkcs12("signing", passphrase: "right")
        let imported = try sandbox.run(
            ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "wrong"], environment: unlocked)
        #expect(imported.status == 1, "\(imported)")
        #expect(imported.out.isEmpty)
        #expect(
            imported.err
                == "security: SecKeychainItemImport: MAC verification failed during PKCS12 import (wrong password?)\n")
        #expect(!imported.err.contains("wrong\""))
        let found = try sandbox.run(["find-identity", "build.keychain"], environment: unlocked)
        #expect(found.out.contains("     0 identities found\n"), "\(found)")
    }

    @Test("a legacy (-legacy, RC2-40 and 3DES) PKCS#12 file imports its identity, as on macOS")
    func legacyPKCS12Imports() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("old", subject: "/CN=Old Export")
        try files.pkcs12("old", passphrase: "pw", legacy: true)
        let imported = try sandbox.run(
            ["import", files.path("old.p12"), "-k", "build.keychain", "-P", "pw"], environment: unlocked)
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.out == "1 identity imported.\n", "\(imported)")
        let found = try sandbox.run(["find-identity", "build.keychain"], environment: unlocked)
        #expect(found.out.contains("\"Old Export\""), "\(found)")
        #expect(found.out.contains("     1 identities found\n"), "\(found)")
    }

    @Test("malformed and unknown files are refused with a message and exit 1, never a crash")
    func malformedFiles() throws {
        let (sandbox, files) = try buildKeychain()
        let cases: [(String, Data, String)] = [
            ("garbage.p12", Data([0x30, 0x82, 0x01, 0x00, 0x02, 0x01]), "Unable to decode the provided data."),
            ("truncated.pem", Data("-----BEGIN CERTIFICATE-----\nMIIB\n".utf8), "Unknown format in import."),
            (
                "bad.pem", Data("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8),
                "Unable to decode the provided data."
            ),
            ("random.bin", Data((0..<64).map { UInt8(($0 * 37 + 11) & 0xFF) | 0x01 }), "Unknown format in import."),
            ("empty.cer", Data(), "Unknown format in import."),
        ]
        for (name, bytes, message) in cases {
            let path = files.path(name)
            #expect(FileManager.default.createFile(atPath: path, contents: bytes))
            let imported = try sandbox.run(["import", path, "-k", "build.keychain", "-P", "x"], environment: unlocked)
            #expect(imported.status == 1, "\(name): \(imported)")
            #expect(imported.err.hasPrefix("security: SecKeychainItemImport: \(message)\n"), "\(name): \(imported)")
        }
        // A real file cut short, and one with a byte changed at each of a spread of places.
        try files.selfSigned("real", subject: "/CN=Real")
        try files.pkcs12("real", passphrase: "x")
        let real = try Data(contentsOf: URL(fileURLWithPath: files.path("real.p12")))
        var damaged: [(String, Data)] = [("cut.p12", real.prefix(real.count / 2))]
        for position in stride(from: 3, to: real.count, by: max(1, real.count / 12)) {
            var copy = real
            copy[position] ^= 0x5A
            damaged.append(("flip\(position).p12", copy))
        }
        for (name, bytes) in damaged {
            #expect(FileManager.default.createFile(atPath: files.path(name), contents: bytes))
            let imported = try sandbox.run(
                ["import", files.path(name), "-k", "build.keychain", "-P", "x"], environment: unlocked)
            #expect(imported.status == 1, "\(name): \(imported)")
            #expect(imported.err.hasPrefix("security: SecKeychainItemImport: "), "\(name): \(imported)")
            #expect(!imported.err.contains("Fatal error"))
        }
        let certificate = try sandbox.run(
            ["add-certificates", "-k", "build.keychain", files.path("cut.p12")], environment: unlocked)
        #expect(certificate.status == 1)
        #expect(certificate.err == "SecCertificateCreateFromData: Unable to decode the provided data.\n")

        let missing = try sandbox.run(
            ["import", files.path("nothing.p12"), "-k", "build.keychain"], environment: unlocked)
        #expect(missing.status == 1, "\(missing)")
        #expect(
            missing.err == "security: Error reading infile \(files.path("nothing.p12")): No such file or directory\n")
    }

    @Test("PEM and DER certificates, bundles and keys import with macOS's counts")
    func certificatesAndKeys() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("one", subject: "/CN=One")
        try files.selfSigned("two", subject: "/CN=Two")
        try files.selfSigned("three", subject: "/CN=Three")
        try files.openssl(["x509", "-in", "three.pem", "-outform", "DER", "-out", "three.cer"])
        let bundle =
            try String(contentsOfFile: files.path("one.pem"), encoding: .utf8)
            + String(contentsOfFile: files.path("two.pem"), encoding: .utf8)
        try bundle.write(toFile: files.path("bundle.pem"), atomically: true, encoding: .utf8)

        let pemSequence = try sandbox.run(
            ["import", files.path("bundle.pem"), "-k", "build.keychain"], environment: unlocked)
        #expect(pemSequence.out == "2 certificates imported.\n", "\(pemSequence)")
        let der = try sandbox.run(["import", files.path("three.cer"), "-k", "build.keychain"], environment: unlocked)
        #expect(der.out == "1 certificate imported.\n", "\(der)")
        let key = try sandbox.run(["import", files.path("one.key"), "-k", "build.keychain"], environment: unlocked)
        #expect(key.out == "1 key imported.\n", "\(key)")
        // The key and its certificate now make an identity.
        let identities = try sandbox.run(["find-identity", "build.keychain"], environment: unlocked)
        #expect(
            identities.out.contains("  1) \(try files.sha1("one.pem")) \"One\" (CSSMERR_TP_NOT_TRUSTED)\n"),
            "\(identities)")
        #expect(identities.out.contains("     1 identities found\n"))

        // A DER EC key, a PEM RSA key (PKCS#8) and an EC public key.
        try files.openssl(["pkey", "-in", "two.key", "-outform", "DER", "-out", "two.der"])
        try files.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.key"])
        try files.openssl(["pkey", "-in", "three.key", "-pubout", "-out", "three.pub"])
        for name in ["two.der", "rsa.key", "three.pub"] {
            let imported = try sandbox.run(["import", files.path(name), "-k", "build.keychain"], environment: unlocked)
            #expect(imported.status == 0 && imported.out == "1 key imported.\n", "\(name): \(imported)")
        }
        let onlyPublic = try sandbox.run(
            ["import", files.path("one.key"), "-t", "pub", "-k", "build.keychain"], environment: unlocked)
        #expect(onlyPublic.status == 1 && onlyPublic.err == "security: No keychain items found\n", "\(onlyPublic)")
        let rsa = try sandbox.run(["find-key", "-t", "private", "build.keychain"], environment: unlocked)
        #expect(rsa.out.contains("    0x00000009 <uint32>=0x0000002A  \"\\000\\000\\000*\"\n"), "\(rsa)")
        let publicKeys = try sandbox.run(["find-key", "-t", "public", "build.keychain"], environment: unlocked)
        #expect(publicKeys.out.contains("    0x00000001 <blob>=\"Imported Public Key\"\n"), "\(publicKeys)")

        let all = try sandbox.run(["find-certificate", "-a", "-Z", "build.keychain"], environment: unlocked)
        #expect(all.status == 0)
        for name in ["one.pem", "two.pem", "three.pem"] {
            #expect(all.out.contains("SHA-256 hash: \(try files.sha256(name))\nSHA-1 hash: \(try files.sha1(name))\n"))
        }
    }

    @Test("find-certificate -c -p is read back by openssl x509; -Z and -m print macOS's lines; -e matches")
    func findCertificate() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("mail", subject: "/CN=Mail Signer/emailAddress=ci@example.com")
        try files.selfSigned("other", subject: "/CN=Other")
        #expect(
            try sandbox.run(
                ["add-certificates", "-k", "build.keychain", files.path("mail.pem"), files.path("other.pem")],
                environment: unlocked
            ).status == 0)

        let pem = try sandbox.run(
            ["find-certificate", "-c", "mail sign", "-p", "build.keychain"], environment: unlocked)
        #expect(pem.status == 0, "\(pem)")
        let original = try files.opensslBytes(["x509", "-in", "mail.pem", "-outform", "DER"])
        let readBack = try files.opensslBytes(["x509", "-outform", "DER"], stdin: pem.stdout)
        #expect(readBack == original)
        #expect(pem.out.hasPrefix("-----BEGIN CERTIFICATE-----\n") && pem.out.hasSuffix("-----END CERTIFICATE-----\n"))

        let hashes = try sandbox.run(
            ["find-certificate", "-c", "Mail", "-Z", "-m", "build.keychain"], environment: unlocked)
        let sha256 = try files.sha256("mail.pem")
        let sha1 = try files.sha1("mail.pem")
        #expect(hashes.out.hasPrefix("SHA-256 hash: \(sha256)\nSHA-1 hash: \(sha1)\nemail addresses: ci@example.com\n"))
        #expect(hashes.out.contains("class: 0x80001000 \nattributes:\n    \"alis\"<blob>=\"ci@example.com\"\n"))
        #expect(hashes.out.contains("    \"labl\"<blob>=\"Mail Signer\"\n"), "\(hashes)")
        #expect(hashes.out.contains("    \"cenc\"<uint32>=0x00000003 \n"), "\(hashes)")

        let byEmail = try sandbox.run(
            ["find-certificate", "-e", "CI@example.com", "-Z", "build.keychain"], environment: unlocked)
        #expect(byEmail.out.hasPrefix("SHA-256 hash: \(sha256)\n"), "\(byEmail)")

        let missing = try sandbox.run(["find-certificate", "-c", "nobody", "build.keychain"], environment: unlocked)
        #expect(missing.status == 44)
        #expect(missing.err == itemNotFoundMessage)
        let missingAll = try sandbox.run(
            ["find-certificate", "-a", "-c", "nobody", "build.keychain"], environment: unlocked)
        #expect(missingAll.status == 0 && missingAll.out.isEmpty)

        let duplicate = try sandbox.run(
            ["add-certificates", "-k", "build.keychain", files.path("other.pem")], environment: unlocked)
        #expect(duplicate.status == 1)
        #expect(duplicate.err == "security: \(files.path("other.pem")): already in build.keychain\n")
    }

    @Test("export -f pkcs12 is read back by openssl pkcs12 with the same key; certs as pemseq and x509")
    func exportRoundTrips() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("signing", subject: "/CN=Build Signing")
        try files.pkcs12("signing", passphrase: "p12pass")
        #expect(
            try sandbox.run(
                ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p12pass"],
                environment: unlocked
            ).status == 0)

        let exported = try sandbox.run(
            [
                "export", "-k", "build.keychain", "-t", "identities", "-f", "pkcs12", "-P", "out-pass", "-o",
                files.path("out.p12"),
            ],
            environment: unlocked)
        #expect(exported.status == 0, "\(exported)")
        #expect(exported.err.hasPrefix("...") && exported.err.hasSuffix(" bytes written to \(files.path("out.p12"))\n"))
        let keyBack = try files.openssl(["pkcs12", "-in", "out.p12", "-passin", "pass:out-pass", "-nocerts", "-nodes"])
        let publicBack = try files.openssl(["pkey", "-pubout"], stdin: Data(keyBack.utf8))
        let publicOriginal = try files.openssl(["pkey", "-in", "signing.key", "-pubout"])
        #expect(publicBack == publicOriginal)
        let certificateBack = try files.openssl(["pkcs12", "-in", "out.p12", "-passin", "pass:out-pass", "-nokeys"])
        let fingerprintBack = try files.openssl(
            ["x509", "-noout", "-fingerprint", "-sha1"], stdin: Data(certificateBack.utf8))
        #expect(fingerprintBack.contains(try files.sha1("signing.pem").chunked()))

        // The exported file imports again (into another keychain).
        #expect(try sandbox.run(["create-keychain", "-p", "pw", "copy.keychain"]).status == 0)
        let again = try sandbox.run(
            ["import", files.path("out.p12"), "-k", "copy.keychain", "-P", "out-pass"], environment: unlocked)
        #expect(again.out == "1 identity imported.\n", "\(again)")

        let certs = try sandbox.run(
            ["export", "-k", "build.keychain", "-t", "certs", "-f", "pemseq", "-p"], environment: unlocked)
        #expect(certs.status == 0, "\(certs)")
        let certificateText = try files.openssl(["x509", "-noout", "-fingerprint", "-sha1"], stdin: certs.stdout)
        #expect(certificateText.contains(try files.sha1("signing.pem").chunked()))
        let der = try sandbox.run(["export", "-k", "build.keychain", "-t", "certs"], environment: unlocked)
        #expect(der.stdout == (try files.opensslBytes(["x509", "-in", "signing.pem", "-outform", "DER"])))

        let everything = try sandbox.run(["export", "-k", "build.keychain"], environment: unlocked)
        #expect(everything.status == 1)
        #expect(everything.err.contains("private keys are exported only as PKCS#12 on Linux"), "\(everything)")

        let wrongFormat = try sandbox.run(
            ["export", "-k", "build.keychain", "-t", "privKeys", "-f", "openssl"], environment: unlocked)
        #expect(wrongFormat.status == 1)
        #expect(wrongFormat.err == "security: SecKeychainItemExport: Import/Export format unsupported.\n")
    }

    @Test("delete-certificate removes just the certificate; delete-identity the certificate and its key")
    func deleteCertificateAndIdentity() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("keep", subject: "/CN=Keep Me")
        try files.selfSigned("drop", subject: "/CN=Drop Me")
        try files.selfSigned("ident", subject: "/CN=Identity Me")
        try files.pkcs12("ident", passphrase: "p")
        #expect(
            try sandbox.run(
                ["add-certificates", "-k", "build.keychain", files.path("keep.pem"), files.path("drop.pem")],
                environment: unlocked
            ).status == 0)
        #expect(
            try sandbox.run(
                ["import", files.path("ident.p12"), "-k", "build.keychain", "-P", "p"], environment: unlocked
            )
            .status == 0)

        let ambiguous = try sandbox.run(["delete-certificate", "-c", "me", "build.keychain"], environment: unlocked)
        #expect(ambiguous.status == 1)
        #expect(ambiguous.err == "security: \"me\" is ambiguous, matches more than one certificate\n")

        let deleted = try sandbox.run(
            ["delete-certificate", "-Z", try files.sha1("drop.pem").lowercased(), "build.keychain"],
            environment: unlocked)
        #expect(deleted.status == 0, "\(deleted)")
        let remaining = try sandbox.run(["find-certificate", "-a", "-Z", "build.keychain"], environment: unlocked).out
        #expect(!remaining.contains(try files.sha1("drop.pem")))
        #expect(remaining.contains(try files.sha1("keep.pem")))
        #expect(remaining.contains(try files.sha1("ident.pem")))

        let gone = try sandbox.run(["delete-certificate", "-c", "Drop Me", "build.keychain"], environment: unlocked)
        #expect(gone.status == 1)
        #expect(gone.err == "Unable to delete certificate matching \"Drop Me\"\n")

        let identity = try sandbox.run(
            ["delete-identity", "-c", "Identity Me", "build.keychain"], environment: unlocked)
        #expect(identity.status == 0, "\(identity)")
        let after = try sandbox.run(["find-identity", "build.keychain"], environment: unlocked)
        #expect(after.out.contains("     0 identities found\n"), "\(after)")
        let certificates = try sandbox.run(["find-certificate", "-a", "-Z", "build.keychain"], environment: unlocked)
            .out
        #expect(!certificates.contains(try files.sha1("ident.pem")))
        #expect(certificates.contains(try files.sha1("keep.pem")))
        // The key went too: importing the identity again counts it as new.
        let reimported = try sandbox.run(
            ["import", files.path("ident.p12"), "-k", "build.keychain", "-P", "p"], environment: unlocked)
        #expect(reimported.out == "1 identity imported.\n", "\(reimported)")
    }

    @Test("a .p12 with its CA imports the identity and the CA; find-identity shows the chain's verdict")
    func importWithChain() throws {
        let (sandbox, files) = try buildKeychain()
        try files.chain()
        try files.pkcs12("leaf", passphrase: "p", extra: ["root.pem"])
        let imported = try sandbox.run(
            ["import", files.path("leaf.p12"), "-k", "build.keychain", "-P", "p"], environment: unlocked)
        #expect(imported.status == 0, "\(imported)")
        #expect(imported.out == "1 identity imported.\n1 certificate imported.\n")
        let found = try sandbox.run(
            ["find-identity", "-p", "ssl-server", "-s", "leaf.example.com", "build.keychain"],
            environment: unlocked)
        #expect(found.out.hasPrefix("Looking for identities matching \"leaf.example.com\"\n\nPolicy: SSL (server)\n"))
        #expect(
            found.out.contains("  1) \(try files.sha1("leaf.pem")) \"leaf.example.com\" (CSSMERR_TP_NOT_TRUSTED)\n"))
        let certificates = try sandbox.run(
            ["find-certificate", "-a", "-c", "Test Root", "-Z", "build.keychain"],
            environment: unlocked)
        #expect(certificates.out.contains("SHA-1 hash: \(try files.sha1("root.pem"))\n"), "\(certificates)")
    }

    @Test("verify-cert: success, an untrusted chain, a host name mismatch, a date, and usage errors")
    func verifyCert() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let leaf = files.path("leaf.pem")
        let root = files.path("root.pem")
        let good = try sandbox.run(["verify-cert", "-c", leaf, "-r", root])
        #expect(good.status == 0, "\(good)")
        #expect(good.out == "...certificate verification successful.\n" && good.err.isEmpty)
        let ssl = try sandbox.run(["verify-cert", "-c", leaf, "-r", root, "-p", "ssl", "-s", "leaf.example.com"])
        #expect(ssl.status == 0, "\(ssl)")
        let mismatch = try sandbox.run(["verify-cert", "-c", leaf, "-r", root, "-p", "ssl", "-s", "other.example.com"])
        #expect(mismatch.status == 1)
        #expect(mismatch.out.isEmpty && mismatch.err == "Cert Verify Result: CSSMERR_APPLETP_HOSTNAME_MISMATCH\n")
        let untrusted = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(untrusted.status == 1)
        #expect(untrusted.err == "Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n")
        let early = try sandbox.run(["verify-cert", "-c", leaf, "-r", root, "-d", "2001-02-03"])
        #expect(early.err == "Cert Verify Result: CSSMERR_TP_CERT_NOT_VALID_YET\n", "\(early)")
        let quiet = try sandbox.run(["verify-cert", "-q", "-c", leaf])
        #expect(quiet.status == 1 && quiet.out.isEmpty && quiet.err.isEmpty)
        let rootOnly = try sandbox.run(["verify-cert", "-r", root])
        #expect(rootOnly.status == 0, "\(rootOnly)")
        let nothing = try sandbox.run(["verify-cert", "-p", "basic"])
        #expect(nothing.status == 2 && nothing.err == "***No certs specified.\n")
        let policy = try sandbox.run(["verify-cert", "-c", leaf, "-p", "nonsense"])
        #expect(policy.status == 2 && policy.err == "***unknown policy spec (nonsense)\n")
        #expect(FileManager.default.createFile(atPath: files.path("junk.pem"), contents: Data("junk".utf8)))
        let junk = try sandbox.run(["verify-cert", "-c", files.path("junk.pem")])
        #expect(junk.status == 1)
        #expect(junk.err == "SecCertificateCreateFromData: Unable to decode the provided data.\n", "\(junk)")
        let missing = try sandbox.run(["verify-cert", "-c", files.path("missing.pem")])
        #expect(missing.status == 1 && missing.out == "***Error reading file \(files.path("missing.pem"))\n")
    }

    @Test("verify-cert refuses a leaf outside its CA's name constraints, critical or not (issue 50, item 16)")
    func verifyCertNameConstraints() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        for critical in ["", "critical,"] {
            try files.openssl(
                ["req", "-x509"] + ecKey + [
                    "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=Constrained CA", "-addext",
                    "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                    "-addext", "nameConstraints=\(critical)permitted;DNS:example.com",
                ])
            for host in ["www.example.com", "bank.test"] {
                try files.openssl(
                    ["req", "-new"] + ecKey + ["-keyout", "\(host).key", "-out", "\(host).csr", "-subj", "/CN=\(host)"])
                try "subjectAltName=DNS:\(host)\n".write(
                    toFile: files.path("\(host).ext"), atomically: true, encoding: .utf8)
                try files.openssl([
                    "x509", "-req", "-in", "\(host).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", "\(host).pem", "-days", "30", "-extfile", "\(host).ext",
                ])
            }
            let ca = files.path("ca.pem")
            let inside = try sandbox.run([
                "verify-cert", "-c", files.path("www.example.com.pem"), "-r", ca, "-p", "ssl", "-s", "www.example.com",
            ])
            #expect(inside.status == 0, "\(critical) \(inside)")
            let outside = try sandbox.run(["verify-cert", "-c", files.path("bank.test.pem"), "-r", ca])
            #expect(outside.status == 1, "\(critical) \(outside)")
            #expect(outside.err == "Cert Verify Result: CSSMERR_TP_INVALID_CERTIFICATE\n", "\(critical) \(outside)")
        }
    }

    @Test("find-key prints macOS's key records; a key imported before its .p12 does not block the import")
    func findKey() throws {
        let (sandbox, files) = try buildKeychain()
        try files.selfSigned("signing", subject: "/CN=Key First")
        try files.pkcs12("signing", passphrase: "p")
        let key = try sandbox.run(["import", files.path("signing.key"), "-k", "build.keychain"], environment: unlocked)
        #expect(key.out == "1 key imported.\n", "\(key)")
        let identity = try sandbox.run(
            ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p"], environment: unlocked)
        #expect(identity.status == 0, "\(identity)")
        #expect(identity.out == "1 identity imported.\n")

        let found = try sandbox.run(["find-key", "-t", "private", "-s", "build.keychain"], environment: unlocked)
        #expect(found.status == 0, "\(found)")
        #expect(found.out.hasPrefix("keychain: \"\(sandbox.keychainsDirectory)/build.keychain-db\"\nversion: 512\n"))
        #expect(found.out.contains("class: 0x00000010 \nattributes:\n    0x00000000 <uint32>=0x00000010 \n"))
        #expect(found.out.contains("    0x00000001 <blob>=\"Imported Private Key\"\n"))
        #expect(found.out.contains("    0x00000009 <uint32>=0x00000049  \"\\000\\000\\000I\"\n"), "\(found)")
        #expect(found.out.contains("    0x0000000A <uint32>=0x00000100 \n"))
        #expect(found.out.components(separatedBy: "class: ").count == 2, "one private key: \(found)")

        let labelled = try sandbox.run(
            ["find-key", "-l", "Imported Private Key", "build.keychain"], environment: unlocked)
        #expect(labelled.status == 0, "\(labelled)")
        let none = try sandbox.run(["find-key", "-t", "symmetric", "build.keychain"], environment: unlocked)
        #expect(none.status == 1)
        #expect(none.err == "security: SecItemCopyMatching: The specified item could not be found in the keychain.\n")
    }

    @Test("create-keypair adds a labelled key pair that find-key lists; -H prints the key hash; bad input fails")
    func createKeypair() throws {
        let (sandbox, _) = try buildKeychain()
        let created = try sandbox.run(
            ["create-keypair", "-a", "ec", "-s", "384", "-H", "-k", "build.keychain", "release signing"],
            environment: unlocked)
        #expect(created.status == 0, "\(created)")
        #expect(created.out.hasPrefix("-----BEGIN PUBLIC KEY HASH-----\n"), "\(created)")
        #expect(created.out.hasSuffix("-----END PUBLIC KEY HASH-----\n"))
        let keys = try sandbox.run(["find-key", "-l", "release signing", "build.keychain"], environment: unlocked)
        #expect(keys.status == 0, "\(keys)")
        #expect(keys.out.contains("class: 0x00000010 \n") && keys.out.contains("class: 0x0000000F \n"), "\(keys)")
        #expect(keys.out.contains("    0x0000000A <uint32>=0x00000180 \n"))
        let rsa = try sandbox.run(["create-keypair", "-k", "build.keychain"], environment: unlocked)
        #expect(rsa.status == 0, "\(rsa)")
        let rsaKeys = try sandbox.run(
            ["find-key", "-t", "private", "-l", "<key>", "build.keychain"], environment: unlocked)
        #expect(rsaKeys.out.contains("    0x0000000A <uint32>=0x00000800 \n"), "\(rsaKeys)")
        let small = try sandbox.run(["create-keypair", "-s", "512", "-k", "build.keychain"], environment: unlocked)
        #expect(small.status == 1)
        #expect(small.err.hasPrefix("security: SecKeyCreatePair build.keychain: "), "\(small)")
        let dsa = try sandbox.run(["create-keypair", "-a", "dsa", "-k", "build.keychain"], environment: unlocked)
        #expect(dsa.status == 1, "\(dsa)")
        let unknown = try sandbox.run(["create-keypair", "-a", "xyz"], environment: unlocked)
        #expect(unknown.status == 2 && unknown.err.hasPrefix("security: Invalid algorithm: xyz\n"), "\(unknown)")
    }

    @Test("-P is hidden in -v's echo of the command line, and the commands are listed in help")
    func passphraseIsRedactedAndCommandsAreListed() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(["-v", "import", "/nonexistent.p12", "-P", "SecretPass"])
        #expect(!run.err.contains("SecretPass"), "\(run)")
        let help = try sandbox.run(["help"])
        for name in [
            "import", "export", "find-identity", "find-certificate", "add-certificates", "delete-certificate",
            "delete-identity", "verify-cert", "find-key", "create-keypair",
        ] {
            #expect(help.out.contains("\n    \(name) "), "\(name)")
        }
    }
}

extension String {
    /// The hex with a colon between bytes, as `openssl -fingerprint` prints it.
    fileprivate func chunked() -> String {
        var parts: [String] = []
        var index = startIndex
        while index < endIndex {
            let next = self.index(index, offsetBy: 2, limitedBy: endIndex) ?? endIndex
            parts.append(String(self[index..<next]))
            index = next
        }
        return parts.joined(separator: ":")
    }
}
