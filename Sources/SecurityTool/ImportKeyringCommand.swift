import ArgumentParser
import Foundation

/// `security import-keyring`: moves the items of another keyring's files (GNOME Keyring's, a
/// KWallet, a KeePass database, a `pass` store) into a keychain, read from disk, without the old keyring's daemon.
package struct ImportKeyring: ToolCommand {
    package static let name = "import-keyring"
    package static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract:
            "Move the items of GNOME Keyring's files, KWallets, KeePass databases or a pass store into a keychain (Linux only).",
        usage: "security import-keyring [-k keychain] [-p password] [file ...]",
        discussion: HelpText.wrapped(
            """
            Reads each GNOME Keyring file (default: every ~/.local/share/keyrings/*.keyring and \
            ~/.local/share/kwalletd/*.kwl) from \
            disk, without gnome-keyring-daemon, and stores its items in the keychain (default: the \
            default keychain) as keychaind's Secret Service stores items, so programs that used \
            GNOME Keyring find them by the same attributes. Labels, attributes, secrets and dates \
            are kept. A keyring with a password is opened with -p or the password asked for (the \
            login keyring's is usually the login password); one without a password needs none.

            A KWallet (.kwl, KDE Frameworks 5 or 6) is opened with its password and the .salt \
            file beside it; each entry becomes an item labelled with its key, with the attributes \
            kwallet:folder and kwallet:key (a map's secret is a JSON object).

            A KeePass database (.kdbx, KDBX 4, as KeePassXC saves it) is opened with its master \
            password; each entry outside the recycle bin becomes an item as KeePassXC's own Secret \
            Service gives it (attributes Title, UserName, URL, Notes, Path, Uuid; the password as \
            the secret).

            A directory is read as a pass store (~/.password-store): each entry, decrypted by gpg \
            (your gpg-agent asks for the key's passphrase), becomes a generic password whose \
            service and label are the entry's path, whose account is its login:, username: or \
            user: line, and whose secret is the whole entry.

            A file that cannot be opened (wrong password, truncated, altered) stores nothing. \
            Running it again adds only what is new. An item whose service and account are those \
            of another item with other attributes is left out and reported. The files are only \
            read; each one moved in is recorded in moved-in.json beside the keychains.
            """))

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to import into (default: the default keychain).", valueName: "keychain"))
    package var keychain: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keyrings' password (insecure: prefer the prompt).", valueName: "password"))
    package var password: String?

    @Argument(help: ArgumentHelp("GNOME Keyring files (.keyring) or pass stores (directories).", valueName: "file"))
    package var files: [String] = []

    package init() {}

    /// Runs in `security-linux` (``LinuxCompanion``).
    package func execute(in session: Session) throws -> Int32 { try session.runLinuxCommand(self) }
}

extension ImportKeyring {
    /// The directory of the session's keychains (the keyrings' data directory is its parent).
    package func keychainsDirectory(in session: Session) -> String { session.paths.keychainsDirectory }

    /// The keyrings' password: `-p`, else asked for on the terminal (or read as one line from
    /// standard input) naming `name` ('the GNOME keyring "login"') in the prompt; `nil` when none is entered.
    package func keyringPassword(of name: String, in session: Session) throws -> Data? {
        if let password { return Data(ArgumentBytes.bytes(of: password)) }
        return try session.secrets.readSecret(prompt: "password of \(name): ").map { Data($0) }
    }
}
