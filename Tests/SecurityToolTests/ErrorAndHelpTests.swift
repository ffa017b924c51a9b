import Foundation
import Testing

/// End-to-end tests of `security error`, bad input and help.
@Suite struct ErrorAndHelpTests {
    static let commands = [
        "list-keychains", "default-keychain", "login-keychain", "create-keychain", "delete-keychain",
        "lock-keychain", "unlock-keychain", "set-keychain-settings", "set-keychain-password", "show-keychain-info",
        "dump-keychain", "add-generic-password", "add-internet-password", "find-generic-password",
        "delete-generic-password", "set-generic-password-partition-list", "find-internet-password",
        "delete-internet-password", "set-internet-password-partition-list", "set-key-partition-list",
        "add-certificates", "find-certificate", "find-identity", "delete-certificate", "delete-identity", "export",
        "import", "add-trusted-cert", "remove-trusted-cert", "dump-trust-settings", "trust-settings-export",
        "trust-settings-import", "verify-cert", "find-key",
        "create-keypair", "error",
    ]

    @Test func errorPrintsTheMessageOfEachCodeAndExits1AsOnMacOS() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(["error", "-25300", "0xFFFF9D2D", "-25308", "0", "-25293"])
        #expect(run.status == 1, "\(run)")
        #expect(run.err.isEmpty)
        #expect(
            run.out == """
                Error: 0xFFFF9D2C -25300 The specified item could not be found in the keychain.
                Error: 0xFFFF9D2D -25299 The specified item already exists in the keychain.
                Error: 0xFFFF9D24 -25308 User interaction is not allowed.
                Error: 0x00000000 0 No error.
                Error: 0xFFFF9D33 -25293 The user name or passphrase you entered is not correct.

                """)
    }

    /// Bad input: a clear message on standard error, a non-zero status, never a crash.
    @Test(
        arguments: [
            (["find-generic-password", "-Z"], 2, "Unknown option '-Z'"),
            (["find-generic-password", "-s"], 2, "Missing value for '-s'"),
            (["add-generic-password", "-a", "ci", "-w", "x"], 2, "needs both -a <account> and -s <service>"),
            (["add-generic-password", "-a", "ci", "-s", "x", "-X", "zz"], 2, "Unable to convert password data"),
            (["add-generic-password", "-a", "ci", "-s", "x", "-c", "abc"], 1, "(Try \"abc \" instead of \"abc\")"),
            (
                ["find-generic-password", "-s", "x", "nosuch.keychain"], 50,
                "security: SecKeychainOpen nosuch.keychain: "
            ),
            (["find-generic-password", "-s", "x", "/etc/hostname"], 49, "is not a valid keychain file."),
            (
                ["lock-keychain", "missing"], 50,
                "security: SecKeychainLock missing: The specified keychain could not be found."
            ),
            (["no-such-command"], 1, "security: unknown command \"no-such-command\""),
            (["leaks"], 1, "not available in the Linux version"),
            (["find-certificate", "-c", "nobody"], 44, "The specified item could not be found in the keychain."),
            (["import", "missing.p12"], 1, "security: Error reading infile missing.p12: No such file or directory"),
            (["list-keychains", "-d", "nonsense"], 2, "security: Invalid domain: nonsense"),
            (["delete-keychain"], 2, "Name the keychain to delete."),
            (["-z"], 2, "security: illegal option -- z"),
        ] as [([String], Int32, String)])
    func badInputGetsAClearMessageAndAStatus(_ arguments: [String], _ status: Int32, _ message: String) throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(arguments)
        #expect(run.status == status, "\(run)")
        #expect(run.err.contains(message), "\(run)")
        #expect(!run.err.contains("Fatal error") && !run.err.contains("Stack dump"))
    }

    @Test func noArgumentsPrintsUsageAndExits2() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run([])
        #expect(run.status == 2)
        #expect(run.out.hasPrefix("Usage: security [-h] [-i] [-l] [-p prompt] [-q] [-v] [command] [opt ...]\n"))
        for command in Self.commands { #expect(run.out.contains("    \(command) "), "\(command)") }
    }

    @Test func helpListsEveryCommandAndTheRoundTrip() throws {
        let sandbox = try Sandbox()
        for arguments in [["help"], ["-h"], ["--help"]] {
            let run = try sandbox.run(arguments)
            #expect(run.status == 0, "\(run)")
            #expect(run.out.contains("security add-generic-password -a ci -s deploy -w"))
            #expect(run.out.contains("security find-generic-password -a ci -s deploy -w"))
            for command in Self.commands { #expect(run.out.contains("    \(command) "), "\(command)") }
        }
    }

    @Test(arguments: commands)
    func everyCommandHasHelp(_ command: String) throws {
        let sandbox = try Sandbox()
        for arguments in [["help", command], [command, "--help"], [command, "-h"]] {
            let run = try sandbox.run(arguments)
            #expect(run.status == 0, "\(run)")
            #expect(run.out.contains("OVERVIEW: "), "\(run)")
            #expect(run.out.contains("USAGE: security \(command)"), "\(run)")
            #expect(run.err.isEmpty)
        }
    }

    @Test func helpExplainsTheSecurityAndLinuxDifferences() throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run(["help", "add-generic-password"]).out
        let flatAdd = flattened(add)
        #expect(flatAdd.contains("can be seen by other users"))
        #expect(flatAdd.contains("-T \"\" trusts no program") && flatAdd.contains("Always Allow"))
        #expect(flatAdd.contains("read as one line from standard input when standard input is not a terminal"))
        let unlock = try sandbox.run(["help", "unlock-keychain"]).out
        #expect(flattened(unlock).contains("KEYCHAIN_PASSWORD then supplies the password to commands that need it"))
        #expect(flattened(unlock).contains("a keychain that is already unlocked stays unlocked"))
        #expect(flattened(unlock).contains("keeps the keychain unlocked for every later command and program"))
        #expect(unlock.contains("security -i"))
        let find = try sandbox.run(["help", "find-generic-password"]).out
        #expect(flattened(find).contains("is printed in hexadecimal instead"))
        for text in [add, unlock, find] {
            for line in text.split(separator: "\n") where !line.hasPrefix("USAGE:") && !line.hasPrefix("       ") {
                #expect(line.count <= 80, "help lines fit a terminal: \(line)")
            }
        }
    }
}

/// The text with every run of blanks and newlines made one space (help text is wrapped).
func flattened(_ text: String) -> String {
    text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
}
