import ArgumentParser
import Foundation
import KeychainClient
import KeychainModel
import KeychainLibc

// MARK: - Preference domains

/// macOS's preference domains (`-d user|system|common|dynamic`), matched by prefix as macOS
/// does. Only the user domain exists on Linux; the others are empty.
enum PreferenceDomain: String, CaseIterable {
    case user, system, common, dynamic

    /// Parses a domain name or a prefix of one.
    /// - Throws: A usage failure (`Invalid domain: …`, result 2).
    static func parse(_ text: String?) throws -> PreferenceDomain {
        guard let text else { return .user }
        guard let domain = allCases.first(where: { $0.rawValue.hasPrefix(text) }) else {
            throw CommandFailure.usage("Invalid domain: \(text)")
        }
        return domain
    }
}

/// Prints a list of keychain paths the way macOS's `display_list` does.
private func displayPaths(_ paths: [String]) {
    for path in paths { Console.out("    \"\(path)\"\n") }
}

private let domainHelp = ArgumentHelp(
    "The preference domain: user (the default), system, common or dynamic. Only user exists on Linux; the others are empty.",
    valueName: "domain")

// MARK: - create-keychain

/// `security create-keychain`.
struct CreateKeychain: ToolCommand {
    static let name = "create-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Create keychains and add them to the search list.",
        usage: "security create-keychain [-P] [-p <password>] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Creates each keychain, protected by the password, and adds it to the search list. A name \
            ending in `.keychain` gets macOS's `-db` suffix: `create-keychain build.keychain` makes \
            ~/.local/share/keychains/build.keychain-db. \(HelpText.keychainArgument)

            Without -p the password is asked for on the terminal (typed twice), or read as one line \
            from standard input when standard input is not a terminal. An empty password makes a \
            keychain without a password, protected by this machine's device key alone (like the default \
            keychain). \(HelpText.secretOnCommandLine)

            The new keychain is locked again when this `security` process exits; see `security help \
            unlock-keychain` for how later commands reach its items.

            Examples:
              security create-keychain build.keychain          (asks for the password)
              printf '%s\\n' "$PW" | security create-keychain build.keychain
            """))

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The password for the new keychains (insecure: prefer the prompt).", valueName: "password"))
    var password: String?

    @Flag(
        name: .customShort("P"),
        help: "Ask for the password (on macOS in a dialog; here on the terminal, as without -p).")
    var prompt = false

    @Argument(help: ArgumentHelp("The keychains to create (asked for when none is given).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        var names = keychains
        if names.isEmpty {
            if Console.inputIsTerminal { Console.err("keychain to create: ") }
            guard let line = try session.input.readLine(), !line.isEmpty else {
                throw CommandFailure.usage("Give the keychain to create.")
            }
            names = [String(decoding: line, as: UTF8.self)]
        }
        let secret: Data
        if let password {
            secret = Data(ArgumentBytes.bytes(of: password))
        } else {
            guard
                let typed = try session.secrets.readSecret(
                    prompt: "password for new keychain: ", confirmation: "retype password for new keychain: ")
            else { throw CommandFailure.failure("no password was entered") }
            secret = Data(typed)
        }
        let agent = try session.useAgent()
        for name in names {
            guard !name.isEmpty else { throw CommandFailure.usage("a keychain name cannot be empty") }
            let path = session.creationPath(name)
            do {
                let database = try Keychains.create(
                    at: path, password: secret.isEmpty ? nil : secret, configuration: session.configuration)
                if session.interactive && !agent && database.hasPassword {
                    // As on macOS, a keychain just created is unlocked for the rest of the session.
                    try database.unlock(password: secret)
                }
                session.adopt(database, at: path)
            } catch {
                throw CommandFailure.status(of: error, "SecKeychainCreate \(name)")
            }
            session.linkMacOSName(name, to: path)
            try session.updatePreferences { preferences in
                var list = preferences.searchList ?? [session.defaultKeychainPath(in: preferences)]
                if !list.contains(path) { list.append(path) }
                preferences.searchList = list
            }
        }
        return 0
    }
}

// MARK: - delete-keychain

/// `security delete-keychain`.
struct DeleteKeychain: ToolCommand {
    static let name = "delete-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Delete keychains and remove them from the search list.",
        usage: "security delete-keychain keychain...",
        discussion: HelpText.wrapped(
            """
            Deletes each keychain file (with its SQLite journal files) and every item in it, and removes \
            it from the search list; if it was the default keychain, the default goes back to the login \
            keychain. Only real keychain files are deleted: any other file is refused. Name the keychain \
            explicitly; there is no default. \(HelpText.keychainArgument)
            """))

    @Argument(help: ArgumentHelp("The keychains to delete.", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if keychains.isEmpty { throw ValidationError("Name the keychain to delete.") }
    }

    func execute(in session: Session) throws -> Int32 {
        try session.useAgent()
        for name in keychains {
            guard !name.isEmpty else { throw CommandFailure.usage("a keychain name cannot be empty") }
            let path = session.resolve(name)
            session.close(path)
            do {
                // Checks that the file is a keychain of this user before anything is removed.
                try Keychains.delete(at: path)
            } catch {
                throw CommandFailure.status(of: error, "SecKeychainDelete")
            }
            session.unlinkMacOSNames(of: path)
            try session.updatePreferences { preferences in
                preferences.searchList?.removeAll { $0 == path }
                if preferences.defaultKeychain == path { preferences.defaultKeychain = nil }
            }
        }
        return 0
    }
}

// MARK: - list-keychains

/// `security list-keychains`.
struct ListKeychains: ToolCommand {
    static let name = "list-keychains"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Display or manipulate the keychain search list.",
        usage: "security list-keychains [-d user|system|common|dynamic] [-s [keychain...]]",
        discussion: HelpText.wrapped(
            """
            The search list is the keychains that find-, delete- and dump- commands search when they \
            are given none. Without options, prints it, one quoted path per line. With -s, replaces it \
            with the keychains given (none empties it).

            Until it is set, the search list holds the default keychain alone. It is kept in \
            ~/.config/keychain/preferences.json (mode 0600; under $XDG_CONFIG_HOME when that is set).

            Example:
              security list-keychains -d user -s build.keychain login.keychain
            """))

    @Option(name: .customShort("d", allowingJoined: true), parsing: .unconditional, help: domainHelp)
    var domain: String?

    @Flag(name: .customShort("s"), help: "Set the search list to the keychains given.")
    var set = false

    @Argument(help: ArgumentHelp("The new search list (with -s).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        let domain = try PreferenceDomain.parse(domain)
        guard set else {
            guard keychains.isEmpty else { throw CommandFailure.usage("Keychains are only given with -s.") }
            if domain == .user { displayPaths(try session.searchList()) }
            return 0
        }
        guard domain == .user else {
            throw CommandFailure.status(
                KeychainError.Code.unimplemented.rawValue, "SecKeychainSetDomainSearchList \(domain.rawValue)"
            )
            .withResult(1)
        }
        let list = keychains.map(session.resolve)
        try session.updatePreferences { $0.searchList = list }
        return 0
    }
}

// MARK: - default-keychain

/// `security default-keychain`.
struct DefaultKeychain: ToolCommand {
    static let name = "default-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Display or set the default keychain.",
        usage: "security default-keychain [-d user|system|common|dynamic] [-s [keychain]]",
        discussion: HelpText.wrapped(
            """
            The default keychain is where add- commands put items when they are given no keychain. \
            Without options, prints its path. With -s, makes the keychain given the default (it must \
            exist); -s alone goes back to the standard default.

            The standard default is ~/.local/share/keychains/login.keychain-db (under $XDG_DATA_HOME \
            when that is set), created without a password on first use, or the file named by the \
            KEYCHAIN_DEFAULT_PATH environment variable, which overrides -s. The choice is kept in \
            ~/.config/keychain/preferences.json.
            """))

    @Option(name: .customShort("d", allowingJoined: true), parsing: .unconditional, help: domainHelp)
    var domain: String?

    @Flag(name: .customShort("s"), help: "Set the default keychain (unset it when no keychain is given).")
    var set = false

    @Argument(help: ArgumentHelp("The new default keychain (with -s).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        let domain = try PreferenceDomain.parse(domain)
        guard keychains.count <= (set ? 1 : 0) else { throw CommandFailure.usage("Too many keychains.") }
        guard set else {
            guard domain == .user else {
                throw CommandFailure.status(-25307, "SecKeychainCopyDomainDefault \(domain.rawValue)").withResult(1)
            }
            displayPaths([try session.defaultKeychainPath()])
            return 0
        }
        guard domain == .user else {
            throw CommandFailure.status(
                KeychainError.Code.unimplemented.rawValue, "SecKeychainSetDomainDefault \(domain.rawValue)"
            )
            .withResult(1)
        }
        var path: String?
        if let name = keychains.first {
            let resolved = session.resolve(name)
            do {
                _ = try session.database(at: resolved)
            } catch {
                throw CommandFailure.status(of: error, "SecKeychainSetDefault").withResult(1)
            }
            path = resolved
        }
        try session.updatePreferences { $0.defaultKeychain = path }
        return 0
    }
}

// MARK: - login-keychain

/// `security login-keychain`.
struct LoginKeychain: ToolCommand {
    static let name = "login-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Display the login keychain.",
        usage: "security login-keychain [--recovery-key]",
        discussion: HelpText.wrapped(
            """
            Prints the path of the login keychain, ~/.local/share/keychains/login.keychain-db (under \
            $XDG_DATA_HOME when that is set). As on macOS, -s and -d are accepted but not supported: \
            they fail with exit status 1.

            With --recovery-key (Linux only), makes a new recovery key for the login keychain and \
            prints it, this once: it opens the keychain wherever its password is asked for \
            (unlock-keychain -p, set-keychain-password -o), with no TPM, after a lost password or a \
            cleared TPM. A new one replaces the last; rotating the keys voids it. The keychain must \
            have a password; when it is locked, its password is asked for first.
            """))

    @Flag(name: .customLong("recovery-key"), help: "Make and print a new recovery key for the login keychain.")
    var recoveryKey = false

    @Option(name: .customShort("d", allowingJoined: true), parsing: .unconditional, help: domainHelp)
    var domain: String?

    @Flag(name: .customShort("s"), help: "Not supported (as on macOS).")
    var set = false

    @Argument(help: .hidden)
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        _ = try PreferenceDomain.parse(domain)
        guard keychains.count <= (set ? 1 : 0) else { throw CommandFailure.usage("Too many keychains.") }
        if set { throw CommandFailure.failure("login-keychain -s: setting the login keychain is not supported") }
        if domain != nil { throw CommandFailure.failure("login-keychain -d: preference domains are not supported") }
        if recoveryKey { return try makeRecoveryKey(in: session) }
        displayPaths([session.loginKeychainPath])
        return 0
    }

    /// `--recovery-key`: unlocks the login keychain if needed (asking its password) and prints a
    /// new recovery key.
    private func makeRecoveryKey(in session: Session) throws -> Int32 {
        let context = "login-keychain --recovery-key"
        do {
            let keychain = try session.database(at: session.loginKeychainPath)
            guard keychain.hasPassword else {
                throw CommandFailure.failure(
                    "the login keychain has no password, so it needs no recovery key (docs/login.md)")
            }
            guard let recovery = keychain as? any KeychainRecovery else {
                throw CommandFailure.failure("this keychain cannot make a recovery key")
            }
            if keychain.isLocked { try keychain.unlock(password: try loginKeychainPassword(nil, in: session)) }
            let key = try recovery.makeRecoveryKey()
            Console.out("Recovery key of \(session.loginKeychainPath):\n\n    \(key)\n\n")
            Console.out(
                "Keep it apart from this computer: it opens the login keychain as its password does. "
                    + "It is shown only this once.\n")
            return 0
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.status(of: error, context)
        }
    }
}

/// The login keychain's password: `given` (`-p`), else asked for on the terminal (or read as
/// one line from standard input).
private func loginKeychainPassword(_ given: String?, in session: Session) throws -> Data {
    if let given { return Data(ArgumentBytes.bytes(of: given)) }
    guard let typed = try session.secrets.readSecret(prompt: "password of the login keychain: ") else {
        throw CommandFailure.failure("no password was entered")
    }
    return Data(typed)
}

// MARK: - set-login-unlock

/// `security set-login-unlock tpm|password` (Linux only): whether the login keychain unlocks at a
/// login without a password (autologin, fingerprint, FIDO2) on this machine's boot state.
struct SetLoginUnlock: ToolCommand {
    static let name = "set-login-unlock"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Choose how the login keychain unlocks at a login without a password (Linux only).",
        usage: "security set-login-unlock [-p <password>] tpm | password",
        discussion: HelpText.wrapped(
            """
            tpm: the login keychain's key is also sealed by this machine's TPM to its boot state \
            (PCR 7: Secure Boot's state and keys), so a login that gives pam_keychain.so no password \
            (autologin, a fingerprint, a FIDO2 key) unlocks it while the machine boots as it does now. \
            The login keychain's password is asked for (or -p). Anyone who can log in as you on this \
            machine then opens it; a stolen disk, or another system booted, does not. When the boot \
            state changes, the password is needed again, and this command turns it back on.

            password (the default): only the password unlocks it.
            """))

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The login keychain's password (insecure: prefer the prompt).", valueName: "password"))
    var password: String?

    @Argument(help: ArgumentHelp("tpm or password.", valueName: "mode"))
    var mode: String

    func execute(in session: Session) throws -> Int32 {
        guard mode == "tpm" || mode == "password" else { throw CommandFailure.usage("The mode is tpm or password.") }
        let enabled = mode == "tpm"
        do {
            let keychain = try session.database(at: session.loginKeychainPath)
            guard let boot = keychain as? any KeychainBootStateUnlock else {
                throw CommandFailure.failure("this keychain cannot unlock without a password")
            }
            let secret = enabled ? try loginKeychainPassword(password, in: session) : nil
            try boot.setUnlocksWithBootState(enabled, password: secret)
            // pam_keychain.so asks keychaind to unlock at a login without a password only then.
            try session.updatePreferences { $0.loginUnlock = enabled ? "tpm" : nil }
            return 0
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.status(of: error, "set-login-unlock \(mode)")
        }
    }
}

// MARK: - lock-keychain

/// `security lock-keychain`.
struct LockKeychain: ToolCommand {
    static let name = "lock-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Lock the specified keychain.",
        usage: "security lock-keychain [-a | keychain]",
        discussion: HelpText.wrapped(
            """
            Locks the keychain (the default keychain when none is given), or with -a every keychain \
            this process has open. A keychain without a password cannot be locked: its items stay \
            readable by any process running as you.

            On Linux lock state belongs to one `security` process, which starts with every password \
            keychain locked; locking matters in an interactive session (`security -i`), where it \
            undoes an earlier unlock-keychain.
            """))

    @Flag(name: .customShort("a"), help: "Lock every keychain this process has open.")
    var all = false

    @Argument(help: ArgumentHelp("The keychain to lock (default: the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard keychains.count <= (all ? 0 : 1) else { throw CommandFailure.usage("Give -a or one keychain.") }
        if all {
            for database in session.openDatabases { database.lock() }
            if try session.useAgent() {
                do {
                    try Keychains.lockAll()
                } catch {
                    throw CommandFailure.status(of: error, "SecKeychainLockAll")
                }
            }
            return 0
        }
        let name = keychains.first
        guard name?.isEmpty != true else { throw CommandFailure.usage("a keychain name cannot be empty") }
        do {
            try session.open(name).database.lock()
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainLock \(name ?? "<NULL>")")
        }
        return 0
    }
}

// MARK: - unlock-keychain

/// `security unlock-keychain`.
struct UnlockKeychain: ToolCommand {
    static let name = "unlock-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Unlock the specified keychain.",
        usage: "security unlock-keychain [-u] [-p <password>] [keychain]",
        discussion: HelpText.wrapped(
            """
            Checks the password and unlocks the keychain (the default keychain when none is given). A \
            wrong password fails with "The user name or passphrase you entered is not correct." (exit \
            51). Without -p the password is asked for on the terminal, or read as one line from \
            standard input when standard input is not a terminal. \(HelpText.secretOnCommandLine) A \
            keychain without a password is always unlocked, and any password is accepted for it. As \
            on macOS, a keychain that is already unlocked stays unlocked and its password is not \
            checked.

            How long the unlock lasts: the session agent (keychaind, started by the first command \
            that needs it) keeps the keychain unlocked for every later command and program, until \
            lock-keychain, the timeout of set-keychain-settings, or the agent's end. With \
            KEYCHAIN_AGENT=off each process opens its keychains itself and an unlock lasts for the \
            rest of that process (security -i runs several commands in one); KEYCHAIN_PASSWORD then \
            supplies the password to commands that need it. Without any of these, a command that \
            needs a locked keychain's items fails with "User interaction is not allowed." (exit 36).
            """))

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain's password (insecure: prefer the prompt).", valueName: "password"))
    var password: String?

    @Flag(
        name: .customShort("u"),
        help: "Do not use -p; ask for the password (on macOS in a dialog; here as without -p).")
    var askForPassword = false

    @Argument(help: ArgumentHelp("The keychain to unlock (default: the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard keychains.count <= 1 else { throw CommandFailure.usage("Give at most one keychain.") }
        let name = keychains.first
        guard name?.isEmpty != true else { throw CommandFailure.usage("a keychain name cannot be empty") }
        let context = "SecKeychainUnlock \(name ?? "<NULL>")"
        let keychain: OpenKeychain
        do {
            // The login keychain is created on first use, whichever way it is named (macOS
            // scripts name it ~/Library/Keychains/login.keychain-db).
            keychain = try session.open(name, createDefault: true)
        } catch {
            throw CommandFailure.status(of: error, context)
        }
        guard keychain.database.hasPassword else {
            try keychain.database.unlock(password: nil)
            return 0
        }
        // As securityd's KeychainDatabase::makeUnlocked (securityd/src/kcdatabase.cpp), the
        // password is checked only while the keychain is locked: an unlocked keychain stays
        // unlocked whatever -p says, and nothing is asked.
        guard keychain.database.isLocked else { return 0 }
        let secret: Data
        if let password {
            secret = Data(ArgumentBytes.bytes(of: password))
        } else {
            guard let typed = try session.secrets.readSecret(prompt: "password to unlock \(name ?? "default"): ") else {
                throw CommandFailure.failure("no password was entered")
            }
            secret = Data(typed)
        }
        do {
            try keychain.database.unlock(password: secret)
        } catch {
            throw CommandFailure.status(of: error, context)
        }
        return 0
    }
}

// MARK: - set-keychain-password

/// `security set-keychain-password`.
struct SetKeychainPassword: ToolCommand {
    static let name = "set-keychain-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Set password for a keychain.",
        usage: "security set-keychain-password [-o <oldPassword>] [-p <newPassword>] [keychain]",
        discussion: HelpText.wrapped(
            """
            Changes the keychain's password (the default keychain's when none is given); on a keychain \
            without a password, sets one. The keys that protect the items are replaced and every item \
            is re-sealed under the new ones, in one transaction: every item stays readable, a crash \
            leaves exactly one of the two passwords valid, and an old copy of the keychain's header \
            with the old password opens nothing written afterwards. A wrong old password fails with \
            exit 51.

            Passwords not given are asked for on the terminal ("Old Password:", then "New Password:" \
            twice), or read as lines from standard input when standard input is not a terminal: the \
            old password first (skipped for a keychain without a password), then the new one. \
            \(HelpText.secretOnCommandLine)

            Example:
              printf '%s\\n%s\\n' "$OLD" "$NEW" | security set-keychain-password build.keychain
            """))

    @Option(
        name: .customShort("o", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The current password (asked for when omitted).", valueName: "oldPassword"))
    var oldPassword: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The new password (asked for when omitted).", valueName: "newPassword"))
    var newPassword: String?

    @Argument(help: ArgumentHelp("The keychain (default: the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard keychains.count <= 1 else { throw CommandFailure.usage("Give at most one keychain.") }
        let name = keychains.first
        guard name?.isEmpty != true else { throw CommandFailure.usage("a keychain name cannot be empty") }
        let context = "error changing password for \"\(name ?? "<NULL>")\""
        let keychain: OpenKeychain
        do {
            keychain = try session.open(name, createDefault: name == nil)
        } catch {
            throw CommandFailure.status(of: error, context)
        }
        var old: Data?
        if keychain.database.hasPassword {
            if let oldPassword {
                old = Data(ArgumentBytes.bytes(of: oldPassword))
            } else if let typed = try session.secrets.readSecret(prompt: "Old Password: ") {
                old = Data(typed)
            } else {
                throw CommandFailure.failure("try again")
            }
        }
        let new: Data
        if let newPassword {
            new = Data(ArgumentBytes.bytes(of: newPassword))
        } else if let typed = try session.secrets.readSecret(
            prompt: "New Password: ", confirmation: "Retype New Password: ")
        {
            new = Data(typed)
        } else {
            throw CommandFailure.failure("try again")
        }
        do {
            try keychain.database.rotateKeys(password: old, newPassword: new)
        } catch {
            throw CommandFailure.status(of: error, context)
        }
        return 0
    }
}

// MARK: - show-keychain-info

/// `security show-keychain-info`.
struct ShowKeychainInfo: ToolCommand {
    static let name = "show-keychain-info"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Show the settings for keychain.",
        usage: "security show-keychain-info [keychain]",
        discussion: HelpText.wrapped(
            """
            Prints the lock settings stored with the keychain (the default keychain's when none is \
            given) on standard error, in macOS's words: `Keychain "build.keychain" no-timeout` for a \
            keychain that never locks by itself, `Keychain "build.keychain" lock-on-sleep \
            timeout=300s` for one set with `set-keychain-settings -l -t 300`. The session agent \
            (keychaind) locks a password keychain it keeps unlocked after that many seconds without \
            use; lock-on-sleep is stored and shown, and not yet acted on.

            As on macOS, reading the settings needs the keychain unlocked, so scripts use this command \
            to learn whether a keychain is usable: for a locked password keychain it fails with "User \
            interaction is not allowed." (exit 36) unless KEYCHAIN_PASSWORD holds its password or the \
            password is typed on the terminal (a wrong one exits 51). A keychain without a password \
            is always unlocked.

            Example:
              security show-keychain-info build.keychain 2>/dev/null || echo locked
            """))

    @Argument(help: ArgumentHelp("The keychain (default: the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard keychains.count <= 1 else { throw CommandFailure.usage("Give at most one keychain.") }
        let name = keychains.first
        guard name?.isEmpty != true else { throw CommandFailure.usage("a keychain name cannot be empty") }
        let function = "SecKeychainCopySettings \(name ?? "<NULL>")"
        let keychain: OpenKeychain
        do {
            // macOS's default keychain always exists; here it is made on first use.
            keychain = try session.open(name, createDefault: name == nil)
        } catch {
            throw CommandFailure.status(of: error, function)
        }
        let settings: KeychainSettings
        do {
            // macOS's SecKeychainCopySettings needs the keychain unlocked (or unlocks it).
            settings = try session.withAccess(to: keychain) {
                if keychain.database.isLocked {
                    throw KeychainError(.interactionNotAllowed, "the keychain is locked")
                }
                return try keychain.database.settings
            }
        } catch {
            throw searchFailure(error, function: function)
        }
        Console.err(Self.line(name: name, settings))
        return 0
    }

    /// macOS's line (`keychain_show_info.c`): the name as given, ` lock-on-sleep` when set, then
    /// ` no-timeout` or ` timeout=<seconds>s`.
    static func line(name: String?, _ settings: KeychainSettings) -> String {
        "Keychain \"\(name ?? "<NULL>")\"" + (settings.locksOnSleep ? " lock-on-sleep" : "")
            + (settings.lockInterval.map { " timeout=\($0)s" } ?? " no-timeout") + "\n"
    }
}

// MARK: - set-keychain-settings

/// `security set-keychain-settings`: stores the keychain's lock settings.
struct SetKeychainSettings: ToolCommand {
    static let name = "set-keychain-settings"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Set settings for a keychain.",
        usage: "security set-keychain-settings [-l] [-u] [-t <timeout>] [keychain]",
        discussion: HelpText.wrapped(
            """
            Stores the lock settings with the keychain (the default keychain when none is given), \
            replacing the ones it had, as macOS does: -l locks the keychain when the system sleeps, \
            -t locks it after that many seconds without use. Without -t the keychain has no timeout, \
            even with -u: as in macOS's `security`, -u is accepted and -t alone decides. The session \
            agent (keychaind) acts on the timeout for a password keychain it keeps unlocked; \
            lock-on-sleep is stored and shown by show-keychain-info, and not yet acted on.

            As on macOS, the keychain must be unlocked: a locked password keychain is unlocked with \
            KEYCHAIN_PASSWORD or a password typed on the terminal, and otherwise the command fails with \
            "User interaction is not allowed." (exit 36).

            Example (after `export KEYCHAIN_PASSWORD`):
              security set-keychain-settings -lut 21600 build.keychain
            """))

    @Flag(name: .customShort("l"), help: "Lock the keychain when the system sleeps.")
    var lockOnSleep = false

    @Flag(name: .customShort("u"), help: "Accepted as on macOS, where -t alone sets the timeout.")
    var useTimeout = false

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "Lock after this many seconds without use (omitting it specifies no timeout).", valueName: "timeout"))
    var timeout: String?

    @Argument(help: ArgumentHelp("The keychain (default: the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard keychains.count <= 1 else { throw CommandFailure.usage("Give at most one keychain.") }
        let name = keychains.first
        guard name?.isEmpty != true else { throw CommandFailure.usage("a keychain name cannot be empty") }
        // -t implies -u; without -t, -u has no effect and the keychain has no timeout
        // (keychain_set_settings.c). INT_MAX is macOS's own "no timeout".
        var settings = KeychainSettings(locksOnSleep: lockOnSleep)
        if let timeout {
            guard let seconds = Int(timeout), (1...Int(Int32.max)).contains(seconds) else {
                throw CommandFailure.usage("The timeout must be a number of seconds from 1 to \(Int32.max).")
            }
            settings.lockInterval = seconds == Int(Int32.max) ? nil : seconds
        }
        let function = "SecKeychainSetSettings \(name ?? "<NULL>")"
        let keychain: OpenKeychain
        do {
            // The login keychain is created on first use, whichever way it is named.
            keychain = try session.open(name, createDefault: true)
        } catch {
            throw CommandFailure.status(of: error, function)
        }
        do {
            try session.withAccess(to: keychain) { try keychain.database.setSettings(settings) }
        } catch {
            throw searchFailure(error, function: function)
        }
        return 0
    }
}

// MARK: - dump-keychain

/// `security dump-keychain`.
struct DumpKeychain: ToolCommand {
    static let name = "dump-keychain"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Dump the contents of one or more keychains.",
        usage: "security dump-keychain [-a] [-d] [-i] [-r] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Prints every generic and internet password item of the keychains given (default: the \
            search list) in macOS's attribute format. Secrets are printed only with -d, after a \
            `data:` line. \(HelpText.lockedKeychains)

            An item that cannot be read (its stored row is damaged or was tampered with) is reported \
            on standard error by its row and persistent reference, never its contents, and skipped: \
            the other items are still printed, then the command fails with errSecDecode.

            -a and -i print "no access control for this item" after each item, because Linux \
            keychains have no access-control lists. -r is accepted and prints nothing more: the \
            encrypted records are not exposed.
            """))

    @Flag(name: .customShort("a"), help: "Show each item's access-control list (there is none on Linux).")
    var accessControl = false

    @Flag(name: .customShort("d"), help: "Also print each item's secret (decrypted).")
    var data = false

    @Flag(name: .customShort("i"), help: "Edit access-control lists interactively (there are none on Linux).")
    var interactiveAccessControl = false

    @Flag(name: .customShort("r"), help: "Print the raw encrypted data (not available; accepted and ignored).")
    var raw = false

    @Argument(help: ArgumentHelp("Keychains to dump (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        let targets = try searchTargets(keychains, in: session)
        var unreadable = 0
        for target in targets {
            // Row by row: an item that fails authentication is reported and skipped, so one
            // damaged row never hides the intact ones.
            let found: [ReadableItems]
            do {
                found = try session.withAccess(to: target) {
                    try [ItemClass.genericPassword, .internetPassword].map { itemClass in
                        try target.database.findReadable(
                            ItemQuery(class: itemClass, synchronizable: .any), includeData: data)
                    }
                }
            } catch {
                throw (searchFailure(error) as? CommandFailure)?.withResult(1) ?? error
            }
            // An item whose secret asks for its owner's authentication is shown without it.
            var guarded: [Item] = []
            for bad in found.flatMap(\.unreadable) {
                if let item = try guardedItem(bad, in: target, session: session) {
                    guarded.append(item)
                    continue
                }
                unreadable += 1
                Console.err("security: dump-keychain: skipping an unreadable item of \"\(target.path)\": \(bad)\n")
            }
            let shown = found.flatMap(\.items).map { ($0, withheld: false) } + guarded.map { ($0, withheld: true) }
            for (item, withheld) in shown {
                var out = ItemFormat.attributeBlock(item, keychainPath: target.path)
                if data { out += withheld ? ItemFormat.withheldDataSection : ItemFormat.dataSection(item.data) }
                if accessControl || interactiveAccessControl { out += ItemFormat.accessControlLine(item) }
                Console.out(out)
            }
        }
        guard unreadable == 0 else {
            throw CommandFailure.status(
                KeychainError.Code.decode.rawValue,
                "dump-keychain: \(unreadable) unreadable item\(unreadable == 1 ? "" : "s") skipped")
        }
        return 0
    }

    /// The attributes of `row` when it was left out only because its secret asks for its
    /// owner's authentication; `nil` for a damaged row.
    private func guardedItem(_ row: UnreadableItem, in target: OpenKeychain, session: Session) throws -> Item? {
        guard row.error.reason == .userAuthenticationNeeded, let id = row.persistentID else { return nil }
        return try session.withAccess(to: target) {
            try target.database.find(ItemQuery(class: row.itemClass, persistentID: id), includeData: false).first
        }
    }
}

extension CommandFailure {
    /// The same failure with another result (macOS returns 1 from some commands whatever the status).
    func withResult(_ result: Int32) -> CommandFailure {
        var copy = self
        copy.result = result
        return copy
    }
}
