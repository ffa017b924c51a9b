import ArgumentParser
import Foundation
import KeychainClient
import KeychainModel
import KeychainLibc

/// The `security` command: its subcommands and the help that lists them.
///
/// The process entry point is ``SecurityTool``, which handles macOS's global options
/// (`-i`, `-p`, `-q`, `-v`, `-h`), command-name prefixes and exit statuses, then lets
/// ArgumentParser parse the command.
struct SecurityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "security",
        abstract:
            "Manage keychains and the passwords, certificates and keys in them (compatible with macOS's security(1)).",
        discussion: SecurityTool.introduction,
        subcommands: SecurityTool.commands.map(\.type))
}

/// The `security` executable (and `security-linux`, which runs the Linux-only commands).
package enum SecurityTool {
    /// An implemented command, in the order of macOS's command table.
    struct Command {
        var type: any ToolCommand.Type
        var name: String { type.name }
        var abstract: String { type.configuration.abstract }
    }

    /// The implemented commands, in macOS's order.
    static let commands: [Command] = [
        ListKeychains.self, DefaultKeychain.self, LoginKeychain.self, CreateKeychain.self, DeleteKeychain.self,
        LockKeychain.self, UnlockKeychain.self, SetKeychainSettings.self, SetKeychainPassword.self,
        ShowKeychainInfo.self, DumpKeychain.self, CreateKeypair.self, AddGenericPassword.self, AddInternetPassword.self,
        AddCertificates.self, FindGenericPassword.self, DeleteGenericPassword.self,
        SetGenericPasswordPartitionList.self, FindInternetPassword.self, DeleteInternetPassword.self,
        SetInternetPasswordPartitionList.self, FindKey.self, SetKeyPartitionList.self, FindCertificate.self,
        FindIdentity.self,
        DeleteCertificate.self, DeleteIdentity.self, ExportCommand.self, ImportCommand.self, AddTrustedCert.self,
        RemoveTrustedCert.self, DumpTrustSettings.self, TrustSettingsExport.self, TrustSettingsImport.self,
        VerifyCert.self, CMSCommand.self, SetIdentityPreference.self, GetIdentityPreference.self,
        ErrorCommand.self, ImportSecretService.self, ImportKeyring.self, ExportKeyring.self, SecretServiceProvider.self,
        SetLoginUnlock.self, SecureEnclaveCommand.self, CreateSSHKey.self, AccessLogCommand.self, RevokeAccess.self,
        SyncCommand.self, SecurityKeyCommand.self,
    ].map { Command(type: $0) }

    /// Every public command of macOS's `security`, in its table's order: a prefix of a name
    /// selects the first command it begins, as on macOS (`security find-g` runs
    /// find-generic-password), and a macOS command that is not implemented here says so.
    static let macOSCommandNames = [
        "help", "list-keychains", "list-smartcards", "default-keychain", "login-keychain", "create-keychain",
        "delete-keychain", "lock-keychain", "unlock-keychain", "set-keychain-settings", "set-keychain-password",
        "show-keychain-info", "dump-keychain", "create-keypair", "add-generic-password", "add-internet-password",
        "add-certificates", "find-generic-password", "delete-generic-password",
        "set-generic-password-partition-list", "find-internet-password", "delete-internet-password",
        "set-internet-password-partition-list", "find-key", "set-key-partition-list", "find-certificate",
        "find-identity", "delete-certificate", "delete-identity", "set-identity-preference",
        "get-identity-preference", "create-db", "export", "import", "export-smartcard", "cms", "install-mds",
        "add-trusted-cert", "remove-trusted-cert", "dump-trust-settings", "user-trust-settings-enable",
        "trust-settings-export", "trust-settings-import", "verify-cert", "authorize", "authorizationdb",
        "execute-with-privileges", "leaks", "error", "create-filevaultmaster-keychain", "smartcards",
        "translocate-policy-check", "translocate-status-check", "translocate-original-path",
        "requirement-evaluate", "filevault", "platformsso",
    ]

    static let introduction = HelpText.wrapped(
        """
        Keychains are encrypted files that keep passwords and other secrets. The default keychain, \
        ~/.local/share/keychains/login.keychain-db, is created on first use, needs no password and \
        opens only with this machine's device key (~/.config/keychain/device-key).

        Store a secret and read it back:
          security add-generic-password -a ci -s deploy -w      (asks for the secret)
          security find-generic-password -a ci -s deploy -w    (prints it)

        The commands listed below follow macOS's security(1) in their options, output and exit \
        statuses, so macOS scripts that use them run unchanged; the macOS commands listed after them \
        are not available yet. Keychain paths such as ~/Library/Keychains/build.keychain-db name the \
        keychains here (build.keychain). A failing command prints `security: <function>: <message>` on standard error and \
        exits with the low byte of the status code: 44 when an item is not found, 45 when it already \
        exists, 36 when a keychain is locked, 51 for a wrong password (`security error <code>` explains \
        a code). Run `security help <command>` for a command's options and examples.
        """)

    /// The commands scripts run by the thousand, whose keychains are opened while the command
    /// line is read (``Session/prefetch(names:)``).
    static let prefetchingCommands: Set<String> = [
        "find-generic-password", "find-internet-password", "add-generic-password", "add-internet-password",
        "delete-generic-password", "delete-internet-password",
    ]

    static let usageText = """
        Usage: security [-h] [-i] [-l] [-p prompt] [-q] [-v] [command] [opt ...]
            -i    Run in interactive mode: read commands from standard input, one per line,
                  in one process (an unlocked keychain stays unlocked); end with quit or EOF.
            -l    Accepted for macOS scripts; does nothing here.
            -p    Set the prompt to "prompt" (implies -i).
            -q    Be less verbose.
            -v    Be more verbose about what's going on.
        """

    /// The process: runs its command line and exits.
    /// - Parameter runner: In `security-linux`, the Linux-only commands' implementations.
    package static func main(runningLinuxCommands runner: LinuxCommandRunner? = nil) -> Never {
        CrashReport.suppress()
        let session = Session()
        session.linuxCommandRunner = runner
        let result = run(ArgumentBytes.processArguments(), session: session)
        session.closeAll()
        session.input.returnUnreadInput()
        exit(exitStatus(forResult: result))
    }

    /// Runs one invocation: global options, then a command or the interactive loop.
    /// - Returns: The result macOS would return from `main` (the caller keeps its low byte).
    static func run(_ arguments: [String], session: Session) -> Int32 {
        var showHelp = false
        var interactive = false
        var quiet = false
        var prompt = "security> "
        var index = 0
        if arguments.first == "--help" { return help(Array(arguments.dropFirst())) }
        if arguments.first == completionOption { return completionScript(Array(arguments.dropFirst())) }
        options: while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("-"), argument != "-" else { break }
            index += 1
            if argument == "--" { break }
            let letters = Array(argument.dropFirst())
            var position = 0
            while position < letters.count {
                switch letters[position] {
                case "h": showHelp = true
                case "i": interactive = true
                case "l", "R": break
                case "q":
                    quiet = true
                    session.quiet = true
                case "v": session.verbose = true
                case "p":
                    interactive = true
                    let attached = String(letters[(position + 1)...])
                    if !attached.isEmpty {
                        prompt = attached
                    } else if index < arguments.count {
                        prompt = arguments[index]
                        index += 1
                    } else {
                        Console.err("security: option requires an argument -- p\n")
                        Console.out(usageText + "\nsecurity commands are:\n" + commandTable())
                        return 2
                    }
                    continue options
                default:
                    Console.err("security: illegal option -- \(letters[position])\n")
                    Console.out(usageText + "\nsecurity commands are:\n" + commandTable())
                    return 2
                }
                position += 1
            }
        }
        let rest = Array(arguments[index...])
        if showHelp { return help(rest) }
        if !rest.isEmpty { return execute(rest, session: session) }
        if interactive { return interactiveLoop(session: session, prompt: prompt, quiet: quiet) }
        Console.out(usageText + "\nsecurity commands are:\n" + commandTable())
        return 2
    }

    // MARK: Commands

    /// The name of the command a (possibly abbreviated) name selects, as macOS matches it.
    static func commandName(for typed: String) -> String? {
        if macOSCommandNames.contains(typed) || linuxCommandNames.contains(typed) { return typed }
        return macOSCommandNames.first { $0.hasPrefix(typed) } ?? linuxCommandNames.first { $0.hasPrefix(typed) }
    }

    /// The commands of this `security` that macOS's has not, matched after macOS's names.
    static let linuxCommandNames = [
        "access-log", "create-ssh-key", "export-keyring", "import-keyring", "import-secret-service", "revoke-access",
        "secret-service", "secure-enclave", "security-key", "set-login-unlock", "sync",
    ]

    /// The Linux commands `security-linux` runs (``LinuxCompanion``).
    static let companionCommandNames = ["export-keyring", "import-keyring", "import-secret-service", "sync"]

    /// Runs one command line.
    static func execute(_ arguments: [String], session: Session) -> Int32 {
        guard let typed = arguments.first else { return 0 }
        guard let name = commandName(for: typed) else {
            Console.err("security: unknown command \"\(typed)\"\nRun `security help` for the list of commands.\n")
            return 1
        }
        if name == "help" { return help(Array(arguments.dropFirst())) }
        guard let command = commands.first(where: { $0.name == name }) else {
            Console.err(
                "security: \(name): this command is not available in the Linux version of security "
                    + "(run `security help` for the commands that are)\n")
            return 1
        }
        var rest = Array(arguments.dropFirst())
        session.commandLine = [name] + rest
        let runsElsewhere = companionCommandNames.contains(name) && session.linuxCommandRunner == nil
        if session.verbose && !runsElsewhere {
            // The arguments' own bytes, as macOS prints them (not the escapes of ArgumentBytes).
            let line = ([name] + redacted(rest, command: name).map { "\"\($0)\"" }).joined(separator: " ") + "\n"
            Console.err(ArgumentBytes.bytes(of: line))
        }
        if let syntax = OptionSyntax.forCommand(name) {
            rest = syntax.split(rest)
            if prefetchingCommands.contains(name) { session.prefetch(names: syntax.operands(rest)) }
        }
        if name == "add-generic-password" || name == "add-internet-password" {
            rest = markTrailingPasswordPrompt(rest, command: name)
        }
        do {
            // The command's own type parses a well-formed line without building the tree of
            // every command (a short-lived process's largest cost); anything it refuses, and
            // `--help`, goes through the whole tree so that messages name `security`.
            if let tool = try? command.type.parse(rest) { return try tool.execute(in: session) }
            var parsed = try SecurityCommand.parseAsRoot([name] + rest)
            guard let tool = parsed as? any ToolCommand else {
                // ArgumentParser's own commands (the help it shows for --help) run as usual.
                try parsed.run()
                return 0
            }
            return try tool.execute(in: session)
        } catch let failure as CommandFailure {
            for message in failure.messages { Console.err("security: \(message)\n") }
            for line in failure.rawLines { Console.err(line + "\n") }
            if failure.showsUsage {
                Console.err(
                    "Usage: \(SecurityCommand.usageString(for: command.type))\n"
                        + "  See 'security help \(name)' for more information.\n")
            }
            return failure.result
        } catch let error as KeychainError {
            // A set-up problem says what to fix in place of the status's generic message.
            Console.err("security: \(name): \(error.isSetupProblem ? error.message : statusMessage(error.osStatus))\n")
            return error.osStatus
        } catch {
            var message = SecurityCommand.fullMessage(for: error)
            if SecurityCommand.exitCode(for: error) == .success {
                Console.out(message.hasSuffix("\n") ? message : message + "\n")
                return 0
            }
            if message.hasPrefix("Error: ") { message = "security: " + message.dropFirst("Error: ".count) }
            Console.err(message.hasSuffix("\n") ? message : message + "\n")
            return 2
        }
    }

    /// macOS's getopt reports a trailing `-w` (or `-p`) of the add commands as a missing
    /// argument and then asks for the password; ArgumentParser would call it an error. This
    /// finds that case the way getopt would (an option that takes a value takes the next
    /// argument, whatever it looks like) and turns it into the hidden prompt flag.
    static func markTrailingPasswordPrompt(_ arguments: [String], command: String) -> [String] {
        let withArgument = OptionSyntax.forCommand(command)?.valued ?? []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return arguments }
            if argument == "-" || !argument.hasPrefix("-") {
                // Unlike getopt, ArgumentParser accepts options after the keychain argument.
                index += 1
                continue
            }
            let letters = Array(argument.dropFirst())
            for (position, letter) in letters.enumerated() where withArgument.contains(letter) {
                if position + 1 < letters.count { break }
                if index + 1 < arguments.count {
                    index += 1
                    break
                }
                guard letter == "w" || letter == "p" else { return arguments }
                var rewritten = arguments
                let remaining = String(argument.dropLast())
                if remaining == "-" { rewritten.remove(at: index) } else { rewritten[index] = remaining }
                return ["--" + PromptMarker.flag] + rewritten
            }
            index += 1
        }
        return arguments
    }

    /// The arguments with the values of secret options hidden, for `-v` (as getopt reads
    /// them, so that `-Uw SECRET` and `-UwSECRET` hide the secret too).
    static func redacted(_ arguments: [String], command: String) -> [String] {
        OptionSyntax.forCommand(command)?.redacted(arguments) ?? arguments
    }

    // MARK: Help

    /// The list of commands, in macOS's format.
    static func commandTable() -> String {
        var lines = ["    \(pad("help", 36)) Show all commands, or show usage for a command."]
        for command in commands { lines.append("    \(pad(command.name, 36)) \(command.abstract)") }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// The macOS commands that this version does not have yet (running one fails with exit 1).
    static var unavailableCommandNames: [String] {
        macOSCommandNames.filter { name in name != "help" && !commands.contains { $0.name == name } }
    }

    /// The paragraph of `security help` that names the macOS commands not available here.
    static func unavailableCommandsText() -> String {
        HelpText.wrapped(
            "Not available in the Linux version yet (they fail with exit status 1): "
                + unavailableCommandNames.joined(separator: ", ") + ".")
    }

    /// `security help [command...]` and `security -h [command...]`.
    static func help(_ names: [String]) -> Int32 {
        guard !names.isEmpty else {
            Console.out(
                introduction + "\n\n" + usageText + "\n\nCommands:\n" + commandTable() + "\n"
                    + unavailableCommandsText() + "\n\n" + completionText + "\n")
            return 0
        }
        for typed in names {
            guard let name = commandName(for: typed), name != "help" || typed == "help" else {
                Console.err("security: help: no such command: \(typed)\n")
                return 1
            }
            if name == "help" {
                Console.out("Usage: security help [command ...]\n    Show all commands, or show usage for a command.\n")
                continue
            }
            guard let command = commands.first(where: { $0.name == name }) else {
                Console.err("security: help: \(name) is not available in the Linux version of security\n")
                return 1
            }
            let text = SecurityCommand.helpMessage(for: command.type)
            Console.out(text.hasSuffix("\n") ? text : text + "\n")
        }
        return 0
    }

    // MARK: Shell completion

    /// The option that prints a completion script (ArgumentParser's own name for it). It is
    /// read before macOS's global options, and only as the first argument.
    static let completionOption = "--generate-completion-script"

    static let completionText = HelpText.wrapped(
        """
        Shell completion (Linux only): print a script for bash, zsh or fish with
          security \(completionOption) bash|zsh|fish
        and save it where the shell looks for one:
          bash   ~/.local/share/bash-completion/completions/security
          zsh    _security in a directory of $fpath
          fish   ~/.config/fish/completions/security.fish
        """)

    /// `security --generate-completion-script [bash|zsh|fish]`: prints ArgumentParser's
    /// completion script for the shell (by default the one `$SHELL` names).
    static func completionScript(_ arguments: [String]) -> Int32 {
        let shellName =
            arguments.first
            ?? ProcessInfo.processInfo.environment["SHELL"].map { ($0 as NSString).lastPathComponent } ?? ""
        guard arguments.count <= 1, let shell = CompletionShell(rawValue: shellName) else {
            let names = CompletionShell.allCases.map(\.rawValue).joined(separator: ", ")
            Console.err(
                "security: \(completionOption): "
                    + (arguments.count > 1 ? "give one shell" : "unknown shell \"\(shellName)\"")
                    + " (the shells are \(names))\nUsage: security \(completionOption) bash|zsh|fish\n")
            return 2
        }
        let script = SecurityCommand.completionScript(for: shell)
        Console.out(script.hasSuffix("\n") ? script : script + "\n")
        return 0
    }

    // MARK: Interactive mode

    /// `security -i`: reads commands from standard input, one per line, in this one process,
    /// so a keychain unlocked by one command stays unlocked for the next.
    static func interactiveLoop(session: Session, prompt: String, quiet: Bool) -> Int32 {
        session.interactive = true
        let showsPrompt = Console.inputIsTerminal
        var result: Int32 = 0
        while true {
            if showsPrompt { Console.err(prompt) }
            let line: [UInt8]
            do {
                guard let read = try session.input.readLine() else { break }
                line = read
            } catch let failure as CommandFailure {
                for message in failure.messages { Console.err("security: \(message)\n") }
                return failure.result
            } catch {
                return 1
            }
            let arguments = splitLine(ArgumentBytes.string(from: line))
            if arguments.first == "quit" || arguments.first == "exit" { break }
            result = execute(arguments, session: session)
            if result != 0 && !quiet, let first = arguments.first {
                Console.err("\(first): returned \(result)\n")
            }
        }
        return result
    }

    /// Splits a line into arguments as macOS's interactive mode does: blanks separate
    /// arguments, single or double quotes group them, a backslash takes the next character.
    static func splitLine(_ line: String) -> [String] {
        var arguments: [String] = []
        var current = ""
        var inArgument = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
                inArgument = true
            } else if let open = quote {
                if character == open {
                    quote = nil
                } else {
                    current.append(character)
                }
            } else if character == "\"" || character == "'" {
                quote = character
                inArgument = true
            } else if character.isWhitespace {
                if inArgument { arguments.append(current) }
                current = ""
                inArgument = false
            } else {
                current.append(character)
                inArgument = true
            }
        }
        if inArgument { arguments.append(current) }
        return arguments
    }
}
