import Foundation
import KeychainLibc
import Testing

/// End-to-end tests of the keychain commands (create, lock, unlock, passwords, preferences).
@Suite struct KeychainCommandTests {
    /// What a read of a locked keychain prints: the hint names where it is locked (for every
    /// process through the agent, in this process without it).
    static func lockedMessage(_ sandbox: Sandbox) -> String {
        "security: SecKeychainSearchCopyNext: User interaction is not allowed.\n"
            + (sandbox.agentMode == "off"
                ? "security: the keychain is locked in this process: set KEYCHAIN_PASSWORD, run on a terminal, or "
                    + "unlock it in a `security -i` session (see `security help unlock-keychain`)\n"
                : "security: the keychain is locked: unlock it with `security unlock-keychain`, set KEYCHAIN_PASSWORD, "
                    + "or run on a terminal\n")
    }

    /// A keychain created with -p holding one item, added in an interactive session after
    /// unlocking it, and locked again (through the agent it would stay unlocked for later
    /// processes, as on macOS; in process each process starts locked).
    private func makePasswordKeychain(_ sandbox: Sandbox) throws {
        let create = try sandbox.run(["create-keychain", "-p", "correct horse", "build.keychain"])
        #expect(create.status == 0, "\(create)")
        #expect(create.out.isEmpty && create.err.isEmpty)
        let add = try sandbox.run(
            ["-i"],
            input: """
                unlock-keychain -p "correct horse" build.keychain
                add-generic-password -a ci -s deploy -w "deploy token" build.keychain
                lock-keychain build.keychain

                """)
        #expect(add.status == 0, "\(add)")
        #expect(add.err.isEmpty, "\(add)")
    }

    @Test func passwordKeychainRefusesReadsWhenLockedAndServesThemAfterUnlock() throws {
        let sandbox = try Sandbox()
        try makePasswordKeychain(sandbox)
        #expect(FileManager.default.fileExists(atPath: sandbox.keychainsDirectory + "/build.keychain-db"))

        // A new process starts locked: without a password source the read is refused.
        let locked = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain"])
        #expect(locked.status == 36, "\(locked)")
        #expect(locked.out.isEmpty)
        #expect(locked.err == Self.lockedMessage(sandbox))

        // A missing item in a locked keychain is still "not found" (no password needed).
        let missing = try sandbox.run(["find-generic-password", "-s", "other", "build.keychain"])
        #expect(missing.status == 44, "\(missing)")

        // unlock-keychain then find in one interactive session.
        let session = try sandbox.run(
            ["-i"],
            input: """
                find-generic-password -a ci -s deploy -w build.keychain
                unlock-keychain -p 'correct horse' build.keychain
                find-generic-password -a ci -s deploy -w build.keychain
                lock-keychain build.keychain
                find-generic-password -a ci -s deploy -w build.keychain

                """)
        #expect(session.out == "deploy token\n", "\(session)")
        #expect(
            session.err
                == Self.lockedMessage(sandbox) + "find-generic-password: returned -25308\n"
                + Self.lockedMessage(sandbox)
                + "find-generic-password: returned -25308\n")
        #expect(session.status == 36, "the last command's result")

        // unlock-keychain reading its password from standard input, then the find, in one session.
        let piped = try sandbox.run(
            ["-i"],
            input: "unlock-keychain build.keychain\ncorrect horse\nfind-generic-password -s deploy -w build.keychain\n")
        #expect(piped.out == "deploy token\n", "\(piped)")

        // One-shot commands read the password from KEYCHAIN_PASSWORD.
        let withVariable = try sandbox.run(
            ["find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain"],
            environment: ["KEYCHAIN_PASSWORD": "correct horse"])
        #expect(withVariable.status == 0, "\(withVariable)")
        #expect(withVariable.out == "deploy token\n")

        try sandbox.lock("build.keychain")
        let wrong = try sandbox.run(
            ["find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain"],
            environment: ["KEYCHAIN_PASSWORD": "wrong"])
        #expect(wrong.status == 51, "\(wrong)")
        #expect(
            wrong.err
                == "security: SecKeychainUnlock build.keychain: The user name or passphrase you entered is not correct.\n"
        )
        #expect(!wrong.err.contains("wrong") && !wrong.out.contains("deploy token"))
    }

    @Test func unlockKeychainChecksThePassword() throws {
        let sandbox = try Sandbox()
        try makePasswordKeychain(sandbox)
        let right = try sandbox.run(["unlock-keychain", "-p", "correct horse", "build.keychain"])
        #expect(right.status == 0, "\(right)")
        #expect(right.out.isEmpty && right.err.isEmpty)

        let fromStdin = try sandbox.run(["unlock-keychain", "build.keychain"], input: "correct horse\n")
        #expect(fromStdin.status == 0, "\(fromStdin)")

        try sandbox.lock("build.keychain")
        let wrong = try sandbox.run(["unlock-keychain", "-p", "nope", "build.keychain"])
        #expect(wrong.status == 51, "\(wrong)")
        #expect(
            wrong.err
                == "security: SecKeychainUnlock build.keychain: The user name or passphrase you entered is not correct.\n"
        )

        // The default keychain has no password: unlocking always works.
        #expect(try sandbox.run(["unlock-keychain", "-p", "anything"]).status == 0)
    }

    @Test func addToALockedKeychainNeedsItsPassword() throws {
        let sandbox = try Sandbox()
        try makePasswordKeychain(sandbox)
        let refused = try sandbox.run(["add-generic-password", "-a", "x", "-s", "y", "-w", "z", "build.keychain"])
        #expect(refused.status == 36, "\(refused)")
        #expect(
            refused.err.hasPrefix(
                "security: SecKeychainItemCreateFromContent (build.keychain): User interaction is not allowed.\n"))
        let accepted = try sandbox.run(
            ["add-generic-password", "-a", "x", "-s", "y", "-w", "z", "build.keychain"],
            environment: ["KEYCHAIN_PASSWORD": "correct horse"])
        #expect(accepted.status == 0, "\(accepted)")
    }

    @Test func setKeychainPasswordKeepsEveryItemReadable() throws {
        let sandbox = try Sandbox()
        try makePasswordKeychain(sandbox)
        let old = ["KEYCHAIN_PASSWORD": "correct horse"]
        for index in 1...3 {
            let add = try sandbox.run(
                ["add-generic-password", "-a", "user\(index)", "-s", "svc", "-w", "secret \(index)", "build.keychain"],
                environment: old)
            #expect(add.status == 0, "\(add)")
        }
        try sandbox.run(
            ["add-internet-password", "-a", "bob", "-s", "example.com", "-w", "inet secret", "build.keychain"],
            environment: old)

        let wrongOld = try sandbox.run(["set-keychain-password", "-o", "nope", "-p", "new", "build.keychain"])
        #expect(wrongOld.status == 51, "\(wrongOld)")
        #expect(
            wrongOld.err
                == "security: error changing password for \"build.keychain\": The user name or passphrase you entered is not correct.\n"
        )

        let change = try sandbox.run(
            ["set-keychain-password", "build.keychain"], input: "correct horse\nbattery staple\n")
        #expect(change.status == 0, "\(change)")
        #expect(change.out.isEmpty && change.err.isEmpty)

        let new = ["KEYCHAIN_PASSWORD": "battery staple"]
        for index in 1...3 {
            let find = try sandbox.run(
                ["find-generic-password", "-a", "user\(index)", "-w", "build.keychain"], environment: new)
            #expect(find.out == "secret \(index)\n", "\(find)")
        }
        #expect(
            try sandbox.run(["find-generic-password", "-s", "deploy", "-w", "build.keychain"], environment: new).out
                == "deploy token\n")
        #expect(
            try sandbox.run(["find-internet-password", "-s", "example.com", "-w", "build.keychain"], environment: new)
                .out == "inet secret\n")
        try sandbox.lock("build.keychain")
        #expect(
            try sandbox.run(["find-generic-password", "-s", "deploy", "-w", "build.keychain"], environment: old).status
                == 51)

        let dump = try sandbox.run(["dump-keychain", "-d", "build.keychain"], environment: new)
        #expect(dump.status == 0, "\(dump)")
        #expect(dump.out.components(separatedBy: "data:\n").count == 6)
    }

    @Test func dumpOfALockedKeychainFailsWithStatus1() throws {
        let sandbox = try Sandbox()
        try makePasswordKeychain(sandbox)
        let dump = try sandbox.run(["dump-keychain", "build.keychain"])
        #expect(dump.status == 1, "\(dump)")
        #expect(dump.out.isEmpty)
        #expect(dump.err == Self.lockedMessage(sandbox))
    }

    @Test func aKeychainMadeWithTheRealKeyDerivationRoundTrips() throws {
        let sandbox = try Sandbox(cheapKeyDerivation: false)
        let create = try sandbox.run(["create-keychain", "real.keychain"], input: "strong password\n")
        #expect(create.status == 0, "\(create)")
        let password = ["KEYCHAIN_PASSWORD": "strong password"]
        #expect(
            try sandbox.run(["add-generic-password", "-a", "a", "-s", "s", "-w", "v", "real"], environment: password)
                .status == 0)
        #expect(
            try sandbox.run(["find-generic-password", "-s", "s", "-w", "real"], environment: password).out == "v\n")
    }

    @Test func aTestOnlyKeychainDoesNotOpenWithoutTheTestSetting() throws {
        let sandbox = try Sandbox()
        try makePasswordKeychain(sandbox)
        let strict = try Sandbox(cheapKeyDerivation: false)
        let find = try strict.run([
            "find-generic-password", "-s", "deploy", sandbox.keychainsDirectory + "/build.keychain-db",
        ])
        #expect(find.status == 49, "\(find)")
        #expect(find.err.contains("The specified keychain is not a valid keychain file."))
    }

    @Test func createKeychainAddsToTheSearchListAndDeleteRemovesIt() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["list-keychains"]).out == "    \"\(sandbox.loginKeychain)\"\n")
        #expect(try sandbox.run(["default-keychain"]).out == "    \"\(sandbox.loginKeychain)\"\n")
        #expect(try sandbox.run(["login-keychain"]).out == "    \"\(sandbox.loginKeychain)\"\n")

        let create = try sandbox.run(["create-keychain", "-p", "", "extra.keychain", "second"])
        #expect(create.status == 0, "\(create)")
        let extra = sandbox.keychainsDirectory + "/extra.keychain-db"
        let second = sandbox.keychainsDirectory + "/second.keychain-db"
        #expect(
            try sandbox.run(["list-keychains"]).out
                == "    \"\(sandbox.loginKeychain)\"\n    \"\(extra)\"\n    \"\(second)\"\n")

        var info = stat()
        #expect(stat(sandbox.preferencesFile, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "the preferences file is private")

        let duplicate = try sandbox.run(["create-keychain", "-p", "", "extra.keychain"])
        #expect(duplicate.status == 48, "\(duplicate)")
        #expect(
            duplicate.err
                == "security: SecKeychainCreate extra.keychain: A keychain with the same name already exists.\n")

        // Items in any keychain of the search list are found.
        try sandbox.run(["add-generic-password", "-a", "a", "-s", "in-second", "-w", "2", "second"])
        #expect(try sandbox.run(["find-generic-password", "-s", "in-second", "-w"]).out == "2\n")

        let delete = try sandbox.run(["delete-keychain", "second"])
        #expect(delete.status == 0, "\(delete)")
        #expect(!FileManager.default.fileExists(atPath: second))
        #expect(try sandbox.run(["list-keychains"]).out == "    \"\(sandbox.loginKeychain)\"\n    \"\(extra)\"\n")
        #expect(try sandbox.run(["find-generic-password", "-s", "in-second"]).status == 44)

        let set = try sandbox.run(["list-keychains", "-d", "user", "-s", "extra.keychain"])
        #expect(set.status == 0, "\(set)")
        #expect(try sandbox.run(["list-keychains"]).out == "    \"\(extra)\"\n")
        #expect(try sandbox.run(["list-keychains", "-d", "system"]).out.isEmpty)
    }

    @Test func defaultKeychainCanBeSetAndUnset() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["add-generic-password", "-a", "a", "-s", "in-login", "-w", "l"])
        try sandbox.run(["create-keychain", "-p", "", "work.keychain"])
        let work = sandbox.keychainsDirectory + "/work.keychain-db"
        #expect(try sandbox.run(["default-keychain", "-s", "work.keychain"]).status == 0)
        #expect(try sandbox.run(["default-keychain"]).out == "    \"\(work)\"\n")

        try sandbox.run(["add-generic-password", "-a", "a", "-s", "goes-to-work", "-w", "w"])
        #expect(try sandbox.run(["find-generic-password", "-s", "goes-to-work", "-w", "work"]).out == "w\n")
        #expect(try sandbox.run(["find-generic-password", "-s", "goes-to-work", sandbox.loginKeychain]).status == 44)

        let missing = try sandbox.run(["default-keychain", "-s", "nope.keychain"])
        #expect(missing.status == 1, "\(missing)")
        #expect(missing.err == "security: SecKeychainSetDefault: The specified keychain could not be found.\n")

        #expect(try sandbox.run(["default-keychain", "-s"]).status == 0)
        #expect(try sandbox.run(["default-keychain"]).out == "    \"\(sandbox.loginKeychain)\"\n")
    }

    @Test func deleteKeychainRefusesAFileThatIsNotAKeychain() throws {
        let sandbox = try Sandbox()
        let path = sandbox.home + "/notes.txt"
        try Data("not a keychain".utf8).write(to: URL(fileURLWithPath: path))
        let delete = try sandbox.run(["delete-keychain", path])
        #expect(delete.status == 49, "\(delete)")
        #expect(delete.err == "security: SecKeychainDelete: The specified keychain is not a valid keychain file.\n")
        #expect(FileManager.default.fileExists(atPath: path), "the file is left alone")
    }

    @Test func showKeychainInfoPrintsOnStandardError() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["create-keychain", "-p", "", "info.keychain"])
        let info = try sandbox.run(["show-keychain-info", "info.keychain"])
        #expect(info.status == 0, "\(info)")
        #expect(info.out.isEmpty)
        #expect(info.err == "Keychain \"info.keychain\" no-timeout\n")

        let missing = try sandbox.run(["show-keychain-info", "missing.keychain"])
        #expect(missing.status == 50, "\(missing)")
        #expect(
            missing.err
                == "security: SecKeychainCopySettings missing.keychain: The specified keychain could not be found.\n")
    }

    /// Apple's flags (keychain_set_settings.c): -l locks on sleep, -t sets the timeout and
    /// implies -u, and without -t there is no timeout, -u or not. Each call replaces the
    /// settings; show-keychain-info prints them as keychain_show_info.c does.
    static let settingsCases: [([String], String)] = [
        (["-lut", "21600"], "lock-on-sleep timeout=21600s"),
        ([], "no-timeout"),
        (["-t", "300"], "timeout=300s"),
        (["-u"], "no-timeout"),
        (["-l"], "lock-on-sleep no-timeout"),
        (["-l", "-t3600"], "lock-on-sleep timeout=3600s"),
        (["-u", "-t", "1"], "timeout=1s"),
        (["-t", "2147483647"], "no-timeout"),
    ]

    @Test func setKeychainSettingsStoresWhatShowKeychainInfoPrintsInOtherProcesses() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "", "info.keychain"]).status == 0)
        for (flags, words) in Self.settingsCases {
            let set = try sandbox.run(["set-keychain-settings"] + flags + ["info.keychain"])
            #expect(set.status == 0 && set.out.isEmpty && set.err.isEmpty, "\(flags): \(set)")
            let info = try sandbox.run(["show-keychain-info", "info.keychain"])
            #expect(info.status == 0 && info.out.isEmpty, "\(flags): \(info)")
            #expect(info.err == "Keychain \"info.keychain\" \(words)\n", "\(flags): \(info)")
        }
        // The default keychain, named by nothing, as macOS prints it.
        #expect(try sandbox.run(["set-keychain-settings", "-l", "-t", "60"]).status == 0)
        #expect(try sandbox.run(["show-keychain-info"]).err == "Keychain \"<NULL>\" lock-on-sleep timeout=60s\n")
        #expect(
            try sandbox.run(["show-keychain-info", "info.keychain"]).err == "Keychain \"info.keychain\" no-timeout\n")
    }

    @Test(arguments: ["0", "-5", "abc", "2147483648", ""])
    func setKeychainSettingsRefusesATimeoutThatIsNotASecondCount(timeout: String) throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "", "info.keychain"]).status == 0)
        #expect(try sandbox.run(["set-keychain-settings", "-t", "60", "info.keychain"]).status == 0)
        let run = try sandbox.run(["set-keychain-settings", "-t", timeout, "info.keychain"])
        #expect(run.status == 2, "\(run)")
        let info = try sandbox.run(["show-keychain-info", "info.keychain"])
        #expect(info.err == "Keychain \"info.keychain\" timeout=60s\n", "unchanged: \(info)")
    }

    @Test func setKeychainSettingsOnALockedKeychainNeedsItsPasswordAsOnMacOS() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"]).status == 0)
        try sandbox.lock("build.keychain")
        let locked = try sandbox.run(["set-keychain-settings", "-t", "300", "build.keychain"])
        #expect(locked.status == 36, "\(locked)")
        #expect(
            locked.err.hasPrefix("security: SecKeychainSetSettings build.keychain: User interaction is not allowed.\n"),
            "\(locked)")
        let wrong = try sandbox.run(
            ["set-keychain-settings", "-t", "300", "build.keychain"], environment: ["KEYCHAIN_PASSWORD": "no"])
        #expect(wrong.status == 51, "\(wrong)")
        let unlocked = try sandbox.run(
            ["set-keychain-settings", "-l", "-t", "300", "build.keychain"], environment: ["KEYCHAIN_PASSWORD": "pw"])
        #expect(unlocked.status == 0 && unlocked.err.isEmpty, "\(unlocked)")
        let info = try sandbox.run(["show-keychain-info", "build.keychain"], environment: ["KEYCHAIN_PASSWORD": "pw"])
        #expect(info.err == "Keychain \"build.keychain\" lock-on-sleep timeout=300s\n", "\(info)")
        #expect(!info.err.contains("pw\"") && !unlocked.err.contains("pw"))

        // In one interactive session, after unlock-keychain, no password is needed.
        let session = try sandbox.run(
            ["-i"],
            input: """
                unlock-keychain -p pw build.keychain
                set-keychain-settings build.keychain
                show-keychain-info build.keychain

                """)
        #expect(session.status == 0, "\(session)")
        #expect(session.err.contains("Keychain \"build.keychain\" no-timeout\n"), "\(session)")
    }

    @Test func freshMachineRoundTripWithNoSetup() throws {
        // Only HOME: no XDG variables, no keychain, no device key, no preferences.
        let sandbox = try Sandbox(cheapKeyDerivation: false, setsXDG: false)
        let add = try sandbox.run(["add-generic-password", "-a", "me", "-s", "readme", "-w"], input: "hello\n")
        #expect(add.status == 0, "\(add)")
        let find = try sandbox.run(["find-generic-password", "-a", "me", "-s", "readme", "-w"])
        #expect(find.status == 0, "\(find)")
        #expect(find.out == "hello\n")
        #expect(FileManager.default.fileExists(atPath: sandbox.home + "/.local/share/keychains/login.keychain-db"))
        #expect(FileManager.default.fileExists(atPath: sandbox.home + "/.config/keychain/device-key"))
    }
}

/// The prompts on a terminal: no echo, typed twice for new secrets, asked again when wrong.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: Sandbox.setsidPath)))
struct TerminalPromptTests {
    @Test func trailingWPromptsTwiceWithoutEcho() throws {
        let sandbox = try Sandbox()
        let (add, echoed) = try sandbox.runOnTerminal(
            ["add-generic-password", "-a", "ci", "-s", "typed", "-w"], answers: ["typed secret", "typed secret"])
        #expect(add.status == 0, "\(add)")
        #expect(add.err == "password data for new item: \nretype password for new item: \n")
        #expect(!echoed.contains("typed secret"), "the secret is not echoed: \(echoed)")
        #expect(try sandbox.run(["find-generic-password", "-s", "typed", "-w"]).out == "typed secret\n")
    }

    @Test func mismatchedEntriesAreAskedAgain() throws {
        let sandbox = try Sandbox()
        let (add, _) = try sandbox.runOnTerminal(
            ["add-generic-password", "-a", "ci", "-s", "typed", "-w"], answers: ["one", "two", "three", "three"])
        #expect(add.status == 0, "\(add)")
        #expect(add.err.contains("passwords don't match\n"))
        #expect(try sandbox.run(["find-generic-password", "-s", "typed", "-w"]).out == "three\n")
    }

    @Test func aLockedKeychainAsksForItsPasswordOnTheTerminal() throws {
        let sandbox = try Sandbox()
        try sandbox.run(["create-keychain", "-p", "pw", "tty.keychain"])
        try sandbox.run(
            ["add-generic-password", "-a", "a", "-s", "s", "-w", "v", "tty"], environment: ["KEYCHAIN_PASSWORD": "pw"])
        try sandbox.lock("tty.keychain")
        let (find, echoed) = try sandbox.runOnTerminal(
            ["find-generic-password", "-s", "s", "-w", "tty.keychain"], answers: ["wrong", "pw"])
        #expect(find.status == 0, "\(find)")
        #expect(find.out == "v\n")
        #expect(find.err == "password to unlock tty.keychain: \npassword to unlock tty.keychain: \n")
        #expect(!echoed.contains("pw") && !echoed.contains("wrong"))
    }
}
