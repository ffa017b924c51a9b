import Foundation
import KeychainTestSupport
import Testing

/// The exact command lines of macOS CI scripts, each command a process of its own through the
/// session agent, as a runner runs them: each test is a defect those scripts met here.
@Suite struct MacOSCIScriptTests {
    /// A sandbox whose processes share an agent on a socket of its own (stopped by the test).
    private func agentSandbox() throws -> (Sandbox, [String: String]) {
        let sandbox = try Sandbox()
        sandbox.agentMode = "auto"
        return (sandbox, ["KEYCHAIN_AGENT_SOCK": sandbox.root + "/agent/agent.sock"])
    }

    /// The defect: `import X.p12 -t cert -f pkcs12` imported only the certificate (exit 0), so
    /// the signing step found "0 valid identities". The steps are GitHub's guide "Installing an
    /// Apple certificate on macOS runners for Xcode development" (Azure's InstallAppleCertificate
    /// task imports the same way); macOS imports a PKCS#12 whole whatever `-t` says.
    @Test func githubGuideImportsTheWholePKCS12WithTypeCert() throws {
        let (sandbox, agent) = try agentSandbox()
        defer { stopAgent(at: agent["KEYCHAIN_AGENT_SOCK"]!) }
        let files = try PKIFiles(sandbox)
        try files.chain()
        try files.pkcs12("leaf", passphrase: "p12-pass", extra: ["root.pem"])
        let keychainPath = sandbox.root + "/runner-temp/app-signing.keychain-db"
        try FileManager.default.createDirectory(
            atPath: sandbox.root + "/runner-temp", withIntermediateDirectories: true)
        let steps: [[String]] = [
            ["create-keychain", "-p", "kc-pass", keychainPath],
            ["set-keychain-settings", "-lut", "21600", keychainPath],
            ["unlock-keychain", "-p", "kc-pass", keychainPath],
            [
                "import", files.path("leaf.p12"), "-P", "p12-pass", "-A", "-t", "cert", "-f", "pkcs12", "-k",
                keychainPath,
            ],
            ["set-key-partition-list", "-S", "apple-tool:,apple:", "-k", "kc-pass", keychainPath],
            ["list-keychain", "-d", "user", "-s", keychainPath],
        ]
        for step in steps {
            let run = try sandbox.run(step, environment: agent)
            try #require(run.status == 0, "\(step.first!): \(run)")
            if step.first == "import" {
                #expect(run.out == "1 identity imported.\n1 certificate imported.\n", "\(run)")
            }
        }
        let identities = try sandbox.run(["find-identity", "-p", "basic", keychainPath], environment: agent)
        #expect(identities.out.contains("\"leaf.example.com\""), "\(identities)")
        #expect(identities.out.contains("1 identities found"), "\(identities)")
        let key = try sandbox.run(["find-key", "-t", "private", keychainPath], environment: agent)
        #expect(key.status == 0, "the private key was imported: \(key)")
        let root = try sandbox.run(["find-certificate", "-c", "Test Root CA", keychainPath], environment: agent)
        #expect(root.status == 0, "the chain's CA was imported: \(root)")
    }

    /// `-t cert` still selects the certificates of a PEM file that also holds a key (the
    /// item type applies to every format but PKCS#12).
    @Test func typeCertStillFiltersAPEMFile() throws {
        let sandbox = try Sandbox()
        let files = try PKIFiles(sandbox)
        try files.selfSigned("both", subject: "/CN=Both")
        let both =
            try String(contentsOfFile: files.path("both.pem"), encoding: .utf8)
            + (try String(contentsOfFile: files.path("both.key"), encoding: .utf8))
        try both.write(toFile: files.path("both-bundle.pem"), atomically: true, encoding: .utf8)
        let run = try sandbox.run(["import", files.path("both-bundle.pem"), "-t", "cert"])
        #expect(run.status == 0 && run.out == "1 certificate imported.\n", "\(run)")
    }

    /// The defect: the login keychain did not exist until something wrote to it, so scripts
    /// that name it first failed with "could not be found" (exit 50): fastlane's
    /// `delete_keychain` restores the default with the very path `default-keychain` printed,
    /// and `import dev.p12 -k login.keychain` is a common first step.
    @Test(arguments: [false, true])
    func loginKeychainExistsBeforeAnythingWritesToIt(throughAgent: Bool) throws {
        let (sandbox, agent) = try agentSandbox()
        if !throughAgent { sandbox.agentMode = "off" }
        defer { if throughAgent { stopAgent(at: agent["KEYCHAIN_AGENT_SOCK"]!) } }
        let printed = try sandbox.run(["default-keychain"], environment: agent)
        #expect(printed.out == "    \"\(sandbox.loginKeychain)\"\n", "\(printed)")
        // fastlane: `security default-keychain -s "#{original}"`, the path with its quotes removed.
        let restore = try sandbox.run(["default-keychain", "-s", sandbox.loginKeychain], environment: agent)
        #expect(restore.status == 0 && restore.err.isEmpty, "\(restore)")

        let fresh = try Sandbox()
        if throughAgent { fresh.agentMode = "auto" }
        let freshAgent = ["KEYCHAIN_AGENT_SOCK": fresh.root + "/agent/agent.sock"]
        defer { if throughAgent { stopAgent(at: freshAgent["KEYCHAIN_AGENT_SOCK"]!) } }
        let files = try PKIFiles(fresh)
        try files.selfSigned("dev", subject: "/CN=Developer")
        try files.pkcs12("dev", passphrase: "p")
        let imported = try fresh.run(
            ["import", files.path("dev.p12"), "-k", "login.keychain", "-P", "p"], environment: freshAgent)
        #expect(imported.status == 0 && imported.out == "1 identity imported.\n", "\(imported)")
        #expect(FileManager.default.fileExists(atPath: fresh.loginKeychain))
        // Another name is still not created implicitly.
        let other = try fresh.run(["default-keychain", "-s", "other.keychain"], environment: freshAgent)
        #expect(other.status == 1, "\(other)")
    }

    /// The defect: a wrong password to an already-unlocked keychain failed (exit 51, or 1 for
    /// set-key-partition-list); securityd checks the password only while the keychain is
    /// locked, and electron-builder passes the .p12's password as `-k`.
    @Test func passwordIsCheckedOnlyWhileLockedAsSecuritydDoes() throws {
        let (sandbox, agent) = try agentSandbox()
        defer { stopAgent(at: agent["KEYCHAIN_AGENT_SOCK"]!) }
        let keychain = "electron-builder.keychain"
        #expect(try sandbox.run(["create-keychain", "-p", "kc-pass", keychain], environment: agent).status == 0)
        #expect(try sandbox.run(["unlock-keychain", "-p", "kc-pass", keychain], environment: agent).status == 0)
        let partition = try sandbox.run(
            ["set-key-partition-list", "-S", "apple-tool:,apple:", "-s", "-k", "p12-pass", keychain],
            environment: agent)
        #expect(partition.status == 0 && partition.err.isEmpty, "\(partition)")
        let unlockAgain = try sandbox.run(["unlock-keychain", "-p", "WRONG", keychain], environment: agent)
        #expect(unlockAgain.status == 0 && unlockAgain.err.isEmpty, "\(unlockAgain)")
        let still = try sandbox.run(["show-keychain-info", keychain], environment: agent)
        #expect(still.status == 0, "still unlocked: \(still)")

        // Locked, the password is checked, and a wrong one unlocks nothing.
        #expect(try sandbox.run(["lock-keychain", keychain], environment: agent).status == 0)
        let wrong = try sandbox.run(["unlock-keychain", "-p", "WRONG", keychain], environment: agent)
        #expect(wrong.status == 51, "\(wrong)")
        let wrongPartition = try sandbox.run(
            ["set-key-partition-list", "-S", "apple:", "-k", "WRONG", keychain], environment: agent)
        #expect(wrongPartition.status == 1, "\(wrongPartition)")
        let locked = try sandbox.run(["show-keychain-info", keychain], environment: agent)
        #expect(locked.status == 36, "\(locked)")
    }

    /// The defects: `sync status` on a machine without sync printed `errSecInternalComponent`
    /// (exit 234); `import-secret-service` without a session bus printed a raw connection
    /// error; `import x.p12` and `export -f pkcs12` without `-P` and without a terminal did not
    /// say that a passphrase was missing. Each now says what is wrong and what to do.
    @Test func linuxOnlyCommandsAndMissingPassphrasesSayWhatToDo() throws {
        let sandbox = try Sandbox()
        let status = try sandbox.run(["sync", "status"])
        #expect(status.status == 1, "\(status)")
        #expect(
            status.err.hasPrefix("security: sync status: this keychain is not set up for sync\n")
                && status.err.contains("security sync init --server URL"), "\(status)")

        let noBus = try sandbox.run(["import-secret-service"], environment: ["DBUS_SESSION_BUS_ADDRESS": ""])
        #expect(noBus.status == 1, "\(noBus)")
        #expect(
            noBus.err.hasPrefix("security: import-secret-service: no session bus: neither DBUS_SESSION_BUS_ADDRESS")
                && !noBus.err.contains("DBusError"), "\(noBus)")
        let deadBus = try sandbox.run(
            ["import-secret-service"], environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(sandbox.root)/no-bus"])
        #expect(deadBus.err.contains("nothing answers at DBUS_SESSION_BUS_ADDRESS"), "\(deadBus)")

        let files = try PKIFiles(sandbox)
        try files.selfSigned("id", subject: "/CN=Identity")
        try files.pkcs12("id", passphrase: "secret-pass")
        let noPassphrase = try sandbox.run(["import", files.path("id.p12")])
        #expect(noPassphrase.status == 1, "\(noPassphrase)")
        #expect(noPassphrase.err.contains("give the file's passphrase with -P"), "\(noPassphrase)")
        #expect(try sandbox.run(["import", files.path("id.p12"), "-P", "secret-pass"]).status == 0)
        let export = try sandbox.run(["export", "-t", "identities", "-f", "pkcs12", "-o", sandbox.root + "/out.p12"])
        #expect(export.status == 1, "\(export)")
        #expect(export.err.contains("give it with -P, or run on a terminal"), "\(export)")
    }

    /// The defect: trust restricted to a policy other than ssl was stored but never honoured:
    /// after `add-trusted-cert -r trustRoot -p codeSign`, `verify-cert -p codeSign` and
    /// `find-identity -v -p codesigning` still said not trusted. It is honoured for that policy
    /// alone, as on macOS.
    @Test func trustRestrictedToCodeSigningIsHonouredForCodeSigningOnly() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"]).status == 0)
        let unlocked = ["KEYCHAIN_PASSWORD": "pw"]
        let files = try PKIFiles(sandbox)
        try files.selfSigned("signing", subject: "/CN=Code Signer")
        try files.pkcs12("signing", passphrase: "p")
        let sha1 = try files.sha1("signing.pem")
        #expect(
            try sandbox.run(
                ["import", files.path("signing.p12"), "-k", "build.keychain", "-P", "p"], environment: unlocked
            )
            .status == 0)
        let added = try sandbox.run([
            "add-trusted-cert", "-r", "trustRoot", "-p", "codeSign", files.path("signing.pem"),
        ])
        #expect(added.status == 0, "\(added)")

        let codeSign = try sandbox.run(["verify-cert", "-c", files.path("signing.pem"), "-p", "codeSign"])
        #expect(codeSign.status == 0 && codeSign.out == "...certificate verification successful.\n", "\(codeSign)")
        let codesigning = try sandbox.run(
            ["find-identity", "-v", "-p", "codesigning", "build.keychain"], environment: unlocked)
        #expect(codesigning.out == "  1) \(sha1) \"Code Signer\"\n     1 valid identities found\n", "\(codesigning)")

        // Other policies are not trusted by it.
        let basic = try sandbox.run(["verify-cert", "-c", files.path("signing.pem")])
        #expect(basic.status == 1, "\(basic)")
        let smime = try sandbox.run(["find-identity", "-v", "-p", "smime", "build.keychain"], environment: unlocked)
        #expect(smime.out == "     0 valid identities found\n", "\(smime)")
    }

    /// The defect: fastlane could not find a keychain made as `~/Library/Keychains/NAME`: it
    /// looks for the file itself (`FastlaneCore::Helper.keychain_path`: `NAME-db`,
    /// `NAME.keychain-db`, `NAME`, `NAME.keychain` under `~/Library/Keychains`) and stopped with
    /// "Could not locate the provided keychain". The steps are fastlane's `setup_ci` and
    /// `create_keychain`, then `import_certificate`'s lookup, then `delete_keychain`.
    @Test func fastlaneFindsAKeychainMadeByItsMacOSPath() throws {
        let (sandbox, agent) = try agentSandbox()
        defer { stopAgent(at: agent["KEYCHAIN_AGENT_SOCK"]!) }
        let library = sandbox.home + "/Library/Keychains"
        let keychain = library + "/fastlane_tmp_keychain-db"
        for step in [
            ["create-keychain", "-p", "", keychain], ["set-keychain-settings", keychain],
            ["unlock-keychain", "-p", "", keychain], ["list-keychains", "-d", "user", "-s", keychain],
            ["default-keychain", "-s", keychain],
        ] {
            let run = try sandbox.run(step, environment: agent)
            #expect(run.status == 0 && run.err.isEmpty, "\(step.first!): \(run)")
        }
        // FastlaneCore::Helper.keychain_path("fastlane_tmp_keychain"): the first candidate that exists.
        let candidates = [
            "fastlane_tmp_keychain-db", "fastlane_tmp_keychain.keychain-db", "fastlane_tmp_keychain",
            "fastlane_tmp_keychain.keychain",
        ].map { library + "/" + $0 }
        let found = try #require(candidates.first { FileManager.default.fileExists(atPath: $0) })
        #expect(found == keychain)
        let target = try FileManager.default.destinationOfSymbolicLink(atPath: found)
        #expect(target.hasPrefix(sandbox.keychainsDirectory + "/"), "\(target)")

        let files = try PKIFiles(sandbox)
        try files.selfSigned("dev", subject: "/CN=Fastlane Dev")
        try files.pkcs12("dev", passphrase: "p")
        let imported = try sandbox.run(
            ["import", files.path("dev.p12"), "-k", found, "-P", "p", "-T", "/usr/bin/codesign"], environment: agent)
        #expect(imported.status == 0 && imported.out == "1 identity imported.\n", "\(imported)")

        let deleted = try sandbox.run(["delete-keychain", keychain], environment: agent)
        #expect(deleted.status == 0, "\(deleted)")
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: keychain)) == nil, "the link went with it")
    }
}
