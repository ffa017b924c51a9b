import Foundation
import Testing

/// What macOS scripts probe and match exactly as macOS's `security` answers.
@Suite struct MacOSScriptProbeTests {
    /// The defect: delete-internet-password read `-t` as written, but macOS's passes the code
    /// in host byte order (find- and add- convert it to big-endian), so on a Mac `-t tlfd` is
    /// what deletes an item added with `-t dflt`, and `-t dflt` finds nothing.
    @Test func deleteInternetPasswordReadsTheAuthenticationTypeInHostByteOrderAsOnMacOS() throws {
        let sandbox = try Sandbox()
        for account in ["alice", "bob"] {
            let add = try sandbox.run([
                "add-internet-password", "-a", account, "-s", "git.example.com", "-r", "htps", "-t", "dflt", "-w", "pw",
            ])
            #expect(add.status == 0, "\(add)")
        }
        let ntlm = try sandbox.run(["add-internet-password", "-a", "carol", "-s", "git.example.com", "-t", "ntlm"])
        #expect(ntlm.status == 0, "\(ntlm)")

        // find-internet-password: the code as written.
        let found = try sandbox.run(["find-internet-password", "-s", "git.example.com", "-a", "alice", "-t", "dflt"])
        #expect(found.status == 0 && found.out.contains("\"atyp\"<blob>=\"dflt\""), "\(found)")
        #expect(try sandbox.run(["find-internet-password", "-a", "alice", "-t", "tlfd"]).status == 44)
        #expect(try sandbox.run(["find-internet-password", "-a", "carol", "-tntlm"]).status == 0)

        // delete-internet-password: the code's bytes reversed.
        let notFound = try sandbox.run([
            "delete-internet-password", "-s", "git.example.com", "-a", "alice", "-t", "dflt",
        ])
        #expect(notFound.status == 44 && notFound.err == itemNotFoundMessage, "\(notFound)")
        let deleted = try sandbox.run([
            "delete-internet-password", "-s", "git.example.com", "-a", "alice", "-t", "tlfd",
        ])
        #expect(deleted.status == 0 && deleted.err == "password has been deleted.\n", "\(deleted)")
        #expect(deleted.out.contains("\"acct\"<blob>=\"alice\""), "\(deleted)")
        #expect(try sandbox.run(["delete-internet-password", "-a", "bob", "-ttlfd"]).status == 0)
        #expect(try sandbox.run(["delete-internet-password", "-a", "carol", "-t", "ntlm"]).status == 44)
        #expect(try sandbox.run(["delete-internet-password", "-a", "carol", "-t", "mltn"]).status == 0)
        #expect(try sandbox.run(["find-internet-password", "-s", "git.example.com"]).status == 44)
        // The length is still checked as macOS does.
        let short = try sandbox.run(["delete-internet-password", "-s", "git.example.com", "-t", "abc"])
        #expect(short.status == 1 && short.err.contains("(Try \"abc \" instead of \"abc\")"), "\(short)")
    }

    /// The defect: show-keychain-info printed a locked keychain's settings and exited 0, so the
    /// scripts that probe it to learn whether a keychain is unlocked always saw "unlocked".
    @Test func showKeychainInfoOfALockedKeychainFailsWithInteractionNotAllowed() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"]).status == 0)
        try sandbox.lock("build.keychain")
        let locked = try sandbox.run(["show-keychain-info", "build.keychain"])
        #expect(locked.status == 36, "\(locked)")
        #expect(
            locked.err.hasPrefix(
                "security: SecKeychainCopySettings build.keychain: User interaction is not allowed.\n"),
            "\(locked)")
        #expect(locked.out.isEmpty)

        // With the password available the keychain is unlocked, as by macOS's dialog.
        let unlocked = try sandbox.run(
            ["show-keychain-info", "build.keychain"], environment: ["KEYCHAIN_PASSWORD": "pw"])
        #expect(unlocked.status == 0 && unlocked.err == "Keychain \"build.keychain\" no-timeout\n", "\(unlocked)")
        try sandbox.lock("build.keychain")
        let wrong = try sandbox.run(["show-keychain-info", "build.keychain"], environment: ["KEYCHAIN_PASSWORD": "no"])
        #expect(wrong.status == 51, "\(wrong)")
        #expect(!wrong.err.contains("no\n") && !unlocked.err.contains("pw"))

        // In one interactive session the probe follows unlock-keychain and lock-keychain.
        let session = try sandbox.run(
            ["-i"],
            input: """
                show-keychain-info build.keychain
                unlock-keychain -p pw build.keychain
                show-keychain-info build.keychain
                lock-keychain build.keychain
                show-keychain-info build.keychain

                """)
        #expect(session.status == 36, "\(session)")
        #expect(session.err.components(separatedBy: "show-keychain-info: returned -25308\n").count == 3, "\(session)")
        #expect(session.err.contains("Keychain \"build.keychain\" no-timeout\n"), "\(session)")

        // A keychain without a password is always unlocked.
        #expect(try sandbox.run(["create-keychain", "-p", "", "open.keychain"]).status == 0)
        #expect(try sandbox.run(["show-keychain-info", "open.keychain"]).status == 0)
    }

    /// The defect: with no keychain named, show-keychain-info on a fresh home failed with "The
    /// specified keychain could not be found." (exit 50); macOS reports the default keychain.
    @Test(arguments: [true, false])
    func showKeychainInfoWithoutArgumentReportsTheDefaultKeychainOnAFreshHome(setsXDG: Bool) throws {
        let sandbox = try Sandbox(setsXDG: setsXDG)
        let run = try sandbox.run(["show-keychain-info"])
        #expect(run.status == 0, "\(run)")
        #expect(run.err == "Keychain \"<NULL>\" no-timeout\n", "\(run)")
        #expect(FileManager.default.fileExists(atPath: sandbox.loginKeychain))
    }
}
