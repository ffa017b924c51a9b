import Foundation
import Testing

/// `security help` tells newcomers what exists, and shells can complete the commands.
@Suite struct HelpAndCompletionTests {
    /// The macOS commands that the Linux version does not have yet.
    static let unavailable = [
        "list-smartcards",
        "create-db", "export-smartcard", "install-mds", "user-trust-settings-enable",
        "authorize", "authorizationdb", "execute-with-privileges", "leaks",
        "create-filevaultmaster-keychain", "smartcards", "translocate-policy-check", "translocate-status-check",
        "translocate-original-path", "requirement-evaluate", "filevault", "platformsso",
    ]

    /// The defect: `security help` listed only the implemented commands, so a newcomer could
    /// not tell a macOS command that is missing here from a typo.
    @Test func helpListsTheMacOSCommandsThatAreNotAvailableYet() throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(["help"])
        #expect(run.status == 0, "\(run)")
        let text = flattened(run.out)
        let paragraph = try #require(
            text.range(of: "Not available in the Linux version yet (they fail with exit status 1): "))
        let listed = text[paragraph.upperBound...].prefix { $0 != "." }.components(separatedBy: ", ")
        #expect(listed == Self.unavailable)
        for command in ErrorAndHelpTests.commands {
            #expect(!listed.contains(command), "\(command) works and is not listed as missing")
        }
        let added = try #require(run.out.range(of: "Not available in the Linux version yet"))
        for line in run.out[added.lowerBound...].split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
    }

    /// Every command the help calls unavailable says so when run, and exits 1.
    @Test(arguments: unavailable)
    func unavailableCommandsSaySoAndExit1(_ command: String) throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run([command])
        #expect(run.status == 1, "\(run)")
        #expect(run.err.contains("security: \(command): this command is not available in the Linux version"))
        let help = try sandbox.run(["help", command])
        #expect(help.status == 1 && help.err.contains("is not available in the Linux version"), "\(help)")
    }

    /// The defect: there was no way to get shell completion; ArgumentParser's
    /// `--generate-completion-script` was refused by macOS's option parsing (illegal option).
    @Test(
        arguments: [
            ("bash", "complete -o filenames -F _security security"),
            ("zsh", "#compdef security"),
            ("fish", "complete -c 'security'"),
        ])
    func completionScriptIsGeneratedForEachShell(shell: String, marker: String) throws {
        let sandbox = try Sandbox()
        let run = try sandbox.run(["--generate-completion-script", shell])
        #expect(run.status == 0 && run.err.isEmpty, "\(run.err)")
        #expect(run.out.contains(marker), "\(run.out.prefix(400))")
        for command in ErrorAndHelpTests.commands { #expect(run.out.contains(command), "\(shell): \(command)") }
        #expect(run.out.contains("-generic-password"))
        // The shell is taken from $SHELL when none is given.
        let fromShell = try sandbox.run(["--generate-completion-script"], environment: ["SHELL": "/usr/bin/" + shell])
        #expect(fromShell.status == 0 && fromShell.out == run.out)
    }

    @Test func completionScriptNeedsAKnownShellAndLeavesMacOSOptionsAlone() throws {
        let sandbox = try Sandbox()
        let unknown = try sandbox.run(["--generate-completion-script", "tcsh"])
        #expect(unknown.status == 2 && unknown.out.isEmpty, "\(unknown)")
        #expect(unknown.err.contains("unknown shell \"tcsh\""), "\(unknown)")
        // Only as the first argument: macOS's global options and commands are read as before.
        let late = try sandbox.run(["-q", "--generate-completion-script", "bash"])
        #expect(late.status == 2 && late.err.contains("security: illegal option -- -"), "\(late)")
        let help = try sandbox.run(["help"])
        #expect(flattened(help.out).contains("security --generate-completion-script bash|zsh|fish"))
    }
}
