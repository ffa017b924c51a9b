import Foundation
import KeychainLibc
import Testing

/// `add-trusted-cert`, `remove-trusted-cert`, `dump-trust-settings`, and how `verify-cert` and
/// `find-identity -v` honour the trust settings, with certificates the real `openssl` made.
@Suite struct TrustSettingsCommandTests {
    private let unlocked = ["KEYCHAIN_PASSWORD": "pw"]

    /// The user's trust settings file of a sandbox.
    private func settingsFile(_ sandbox: Sandbox) -> String { sandbox.configHome + "/keychain/trust-settings.json" }

    /// Whether `openssl verify` accepts `leaf` with only the certificates of `caFile` as roots.
    private func opensslAccepts(_ files: PKIFiles, leaf: String, caFile: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["verify", "-no-CApath", "-CAfile", caFile, leaf]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else {
            Issue.record("openssl is missing")
            return false
        }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test("the code-signing CI flow: import a self-signed .p12, add-trusted-cert it, find-identity -v shows it")
    func selfSignedIdentityBecomesValid() throws {
        let sandbox = try Sandbox()
        let create = try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"])
        try #require(create.status == 0, "\(create)")
        let files = try PKIFiles(sandbox)
        try files.selfSigned("signing", subject: "/CN=Build Signing")
        try files.pkcs12("signing", passphrase: "p12pass")
        let sha1 = try files.sha1("signing.pem")
        let imported = try sandbox.run(
            ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p12pass"], environment: unlocked)
        #expect(imported.status == 0, "\(imported)")

        let before = try sandbox.run(["find-identity", "-v", "build.keychain"], environment: unlocked)
        #expect(before.out == "     0 valid identities found\n", "\(before)")
        let emptyDump = try sandbox.run(["dump-trust-settings"])
        #expect(emptyDump.status == 1)
        #expect(emptyDump.out.isEmpty)
        #expect(emptyDump.err == "SecTrustSettingsCopyCertificates: No Trust Settings were found.\n", "\(emptyDump)")

        let added = try sandbox.run(
            ["add-trusted-cert", "-k", "build.keychain", files.path("signing.pem")], environment: unlocked)
        #expect(added.status == 0, "\(added)")
        #expect(added.out.isEmpty && added.err.isEmpty, "\(added)")
        var info = stat()
        #expect(stat(settingsFile(sandbox), &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)

        let after = try sandbox.run(["find-identity", "-v", "build.keychain"], environment: unlocked)
        #expect(after.out == "  1) \(sha1) \"Build Signing\"\n     1 valid identities found\n", "\(after)")
        let codesigning = try sandbox.run(
            ["find-identity", "-v", "-p", "codesigning", "build.keychain"], environment: unlocked)
        #expect(codesigning.out == "  1) \(sha1) \"Build Signing\"\n     1 valid identities found\n")

        let dump = try sandbox.run(["dump-trust-settings"])
        #expect(dump.status == 0, "\(dump)")
        #expect(dump.out == "Number of trusted certs = 1\nCert 0: Build Signing\n   Number of trust settings : 0\n")

        let removed = try sandbox.run(["remove-trusted-cert", files.path("signing.pem")])
        #expect(removed.status == 0 && removed.out.isEmpty && removed.err.isEmpty, "\(removed)")
        let undone = try sandbox.run(["find-identity", "-v", "build.keychain"], environment: unlocked)
        #expect(undone.out == "     0 valid identities found\n", "\(undone)")
        let again = try sandbox.run(["remove-trusted-cert", files.path("signing.pem")])
        #expect(again.status == 1)
        #expect(
            again.err
                == "SecTrustSettingsRemoveTrustSettings: The specified item could not be found in the keychain.\n",
            "\(again)")
    }

    @Test("a trusted CA makes verify-cert pass, as openssl verify -CAfile does; remove-trusted-cert undoes it")
    func trustedRootAnchorsTheChain() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let leaf = files.path("leaf.pem")
        let root = files.path("root.pem")
        #expect(FileManager.default.createFile(atPath: files.path("none.pem"), contents: Data()))

        let before = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(before.status == 1 && before.err == "Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n", "\(before)")
        #expect(!opensslAccepts(files, leaf: leaf, caFile: files.path("none.pem")))

        // trustRoot (the default) is refused for a certificate that is not self-signed.
        let notRoot = try sandbox.run(["add-trusted-cert", leaf])
        #expect(notRoot.status == 1)
        #expect(
            notRoot.err
                == "SecTrustSettingsSetTrustSettings: One or more parameters passed to a function were not valid.\n",
            "\(notRoot)")

        let added = try sandbox.run(["add-trusted-cert", "-r", "trustRoot", root])
        #expect(added.status == 0, "\(added)")
        let after = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(after.status == 0 && after.out == "...certificate verification successful.\n", "\(after)")
        #expect(opensslAccepts(files, leaf: leaf, caFile: root))
        let ssl = try sandbox.run(["verify-cert", "-c", leaf, "-p", "ssl", "-s", "leaf.example.com"])
        #expect(ssl.status == 0, "\(ssl)")
        let dump = try sandbox.run(["dump-trust-settings"])
        #expect(
            dump.out
                == "Number of trusted certs = 1\nCert 0: Test Root CA\n   Number of trust settings : 1\n   Trust Setting 0:\n",
            "\(dump)")

        let removed = try sandbox.run(["remove-trusted-cert", root])
        #expect(removed.status == 0, "\(removed)")
        let undone = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(undone.status == 1 && undone.err == "Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n", "\(undone)")
    }

    @Test("deny makes a chain with a trusted root fail; anchors-only (verify-cert -r) ignores trust settings")
    func denyAndAnchorsOnly() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        try files.selfSigned("other", subject: "/CN=Other Root")
        let leaf = files.path("leaf.pem")
        let root = files.path("root.pem")
        #expect(try sandbox.run(["add-trusted-cert", root]).status == 0)
        #expect(try sandbox.run(["verify-cert", "-c", leaf]).status == 0)

        // Anchors only: the root trusted in the settings does not count when -r names another.
        let otherAnchor = try sandbox.run(["verify-cert", "-c", leaf, "-r", files.path("other.pem")])
        #expect(otherAnchor.status == 1 && otherAnchor.err == "Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n")
        #expect(!opensslAccepts(files, leaf: leaf, caFile: files.path("other.pem")))

        let denied = try sandbox.run(["add-trusted-cert", "-r", "deny", leaf])
        #expect(denied.status == 0, "\(denied)")
        let verify = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(verify.status == 1)
        #expect(verify.err == "Cert Verify Result: CSSMERR_APPLETP_TRUST_SETTING_DENY\n", "\(verify)")
        // ... but not when only the caller's anchors are used, as on macOS.
        let anchorsOnly = try sandbox.run(["verify-cert", "-c", leaf, "-r", root])
        #expect(anchorsOnly.status == 0, "\(anchorsOnly)")

        // Denying the root fails the chain even though it is also trusted elsewhere.
        #expect(try sandbox.run(["remove-trusted-cert", leaf]).status == 0)
        #expect(try sandbox.run(["add-trusted-cert", "-r", "deny", root]).status == 0)
        let rootDenied = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(rootDenied.err == "Cert Verify Result: CSSMERR_APPLETP_TRUST_SETTING_DENY\n", "\(rootDenied)")
        let dump = try sandbox.run(["dump-trust-settings"])
        #expect(
            dump.out == """
                Number of trusted certs = 1
                Cert 0: Test Root CA
                   Number of trust settings : 1
                   Trust Setting 0:
                      Result Type           : kSecTrustSettingsResultDeny

                """, "\(dump)")
    }

    @Test("-p restricts a setting to a policy; dump-trust-settings prints it; bad options are refused")
    func policyConstraint() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let leaf = files.path("leaf.pem")
        let root = files.path("root.pem")
        #expect(try sandbox.run(["add-trusted-cert", "-p", "ssl", root]).status == 0)
        let ssl = try sandbox.run(["verify-cert", "-c", leaf, "-p", "ssl", "-s", "leaf.example.com"])
        #expect(ssl.status == 0, "\(ssl)")
        let basic = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(basic.status == 1 && basic.err == "Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n", "\(basic)")
        let dump = try sandbox.run(["dump-trust-settings"])
        #expect(dump.out.hasSuffix("   Trust Setting 0:\n      Policy OID            : SSL\n"), "\(dump)")

        let badResult = try sandbox.run(["add-trusted-cert", "-r", "sometimes", root])
        #expect(badResult.status == 2, "\(badResult)")
        let badPolicy = try sandbox.run(["add-trusted-cert", "-p", "nonsense", root])
        #expect(badPolicy.status == 2, "\(badPolicy)")
        let noFile = try sandbox.run(["add-trusted-cert", "-r", "deny"])
        #expect(noFile.status == 2 && noFile.err.hasPrefix("No cert file specified.\n"), "\(noFile)")
        let missing = try sandbox.run(["add-trusted-cert", files.path("missing.pem")])
        #expect(missing.status == 1)
        #expect(missing.err == "Error reading file \(files.path("missing.pem"))\n", "\(missing)")
        let unsupported = try sandbox.run(["add-trusted-cert", "-a", "/usr/bin/true", root])
        #expect(unsupported.status == 2 && unsupported.err.contains("-a is not supported on Linux"))
    }

    @Test("a corrupt or tampered trust settings file is a clear error, never trust, and is not overwritten")
    func corruptFile() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let leaf = files.path("leaf.pem")
        let root = files.path("root.pem")
        #expect(try sandbox.run(["add-trusted-cert", root]).status == 0)
        let path = settingsFile(sandbox)
        let valid = try String(contentsOfFile: path, encoding: .utf8)

        // A truncated file.
        try String(valid.prefix(valid.count / 2)).write(toFile: path, atomically: false, encoding: .utf8)
        let verify = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(verify.status == 1)
        #expect(
            verify.err == """
                Cert Verify Result: CSSMERR_TP_INVALID_TRUST_SETTINGS
                security: the trust settings file \(path) is not valid; fix or remove it

                """, "\(verify)")
        let dump = try sandbox.run(["dump-trust-settings"])
        #expect(dump.status == 1)
        #expect(dump.err.hasPrefix("SecTrustSettingsCopyCertificates: The Trust Settings Record was corrupted.\n"))
        let add = try sandbox.run(["add-trusted-cert", files.path("root.pem")])
        #expect(add.status == 1)
        #expect(add.err.hasPrefix("SecTrustSettingsSetTrustSettings: The Trust Settings Record was corrupted.\n"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == String(valid.prefix(valid.count / 2)))

        // A well-formed file whose certificate was swapped for another (the key no longer matches).
        let other = try String(contentsOfFile: leaf, encoding: .utf8)
            .components(separatedBy: "-----")[2].replacingOccurrences(of: "\n", with: "")
        let rootBase64 = try String(contentsOfFile: root, encoding: .utf8)
            .components(separatedBy: "-----")[2].replacingOccurrences(of: "\n", with: "")
        #expect(valid.contains(rootBase64))
        try valid.replacingOccurrences(of: rootBase64, with: other).write(
            toFile: path, atomically: false, encoding: .utf8)
        let tampered = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(
            tampered.status == 1 && tampered.err.hasPrefix("Cert Verify Result: CSSMERR_TP_INVALID_TRUST_SETTINGS\n"))

        // Removing the file restores the untrusted verdict.
        try FileManager.default.removeItem(atPath: path)
        let fresh = try sandbox.run(["verify-cert", "-c", leaf])
        #expect(fresh.err == "Cert Verify Result: CSSMERR_TP_NOT_TRUSTED\n", "\(fresh)")
    }

    @Test("-d changes the admin trust settings (a file of its own, 0644), which every user's SecTrust honours")
    func adminDomain() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.chain()
        let admin = ["KEYCHAIN_ADMIN_TRUST_SETTINGS": sandbox.root + "/etc/keychain/trust-settings.json"]
        let added = try sandbox.run(["add-trusted-cert", "-d", files.path("root.pem")], environment: admin)
        #expect(added.status == 0, "\(added)")
        var info = stat()
        #expect(stat(admin.values.first!, &info) == 0 && info.st_mode & 0o777 == 0o644)
        #expect(!FileManager.default.fileExists(atPath: settingsFile(sandbox)))
        let user = try sandbox.run(["dump-trust-settings"], environment: admin)
        #expect(user.status == 1)
        let dump = try sandbox.run(["dump-trust-settings", "-d"], environment: admin)
        #expect(dump.out == "Number of trusted certs = 1\nCert 0: Test Root CA\n   Number of trust settings : 0\n")
        let verify = try sandbox.run(["verify-cert", "-c", files.path("leaf.pem")], environment: admin)
        #expect(verify.status == 0, "\(verify)")
        let removed = try sandbox.run(["remove-trusted-cert", "-d", files.path("root.pem")], environment: admin)
        #expect(removed.status == 0, "\(removed)")
        let system = try sandbox.run(["dump-trust-settings", "-s"])
        #expect(system.status == 0 && system.out.hasPrefix("Number of trusted certs = "), "\(system)")
    }
}
