import ArgumentParser
import Foundation

/// `security export-keyring`: writes a keychain's passwords into a KeePass database, for leaving
/// (or for KeePassXC beside it), or in the FIDO Credential Exchange Format into another program.
package struct ExportKeyring: ToolCommand {
    package static let name = "export-keyring"
    package static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Write a keychain's passwords into a KeePass database, or as CXF (Linux only).",
        usage: """
            security export-keyring [-k keychain] [-p password] -o file.kdbx
              security export-keyring --format cxf [-k keychain] -o - | importing-program
            """,
        discussion: HelpText.wrapped(
            """
            Writes the generic and internet passwords of the keychain (default: the default \
            keychain) into a new KeePass database (KDBX 4, Argon2id and AES-256), which KeePassXC \
            and KeePass open with the password given with -p or asked for twice. Each item becomes \
            an entry: its label as title, its account as user name, an internet password's server \
            as URL, its comment as notes, its secret as password, and the attributes Secret Service \
            programs find it by as fields, so KeePassXC's own Secret Service serves it to them \
            again. Items moved in from KeePass get their title, fields and UUID back. An item whose \
            secret is not text is left out and counted.

            The file is written with mode 600, and never over an existing file. Keys, certificates \
            and identities are not exported (security export does that).

            --format cxf writes the same entries in the FIDO Alliance's Credential Exchange Format \
            (CXF 1.0, JSON), which other password managers import. It holds every secret in the \
            clear, so it is written only to standard output (-o -), and only when that is a pipe or \
            a socket to the importing program: never into a file, never onto a terminal.
            """))

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("kdbx (the default) or cxf.", valueName: "format"))
    package var format: String = "kdbx"

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to export (default: the default keychain).", valueName: "keychain"))
    package var keychain: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The new database's password (insecure: prefer the prompt).", valueName: "password"))
    package var password: String?

    @Option(
        name: .customShort("o", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The database file to write; - for standard output (cxf).", valueName: "file"))
    package var output: String

    package init() {}

    /// Runs in `security-linux` (``LinuxCompanion``).
    package func execute(in session: Session) throws -> Int32 { try session.runLinuxCommand(self) }

    /// The new database's password: `-p`, else asked for twice on the terminal (or read as one
    /// line from standard input); `nil` when none is entered.
    package func databasePassword(in session: Session) throws -> Data? {
        if let password { return Data(ArgumentBytes.bytes(of: password)) }
        return try session.secrets.readSecret(
            prompt: "password for the new KeePass database: ", confirmation: "retype the password: "
        ).map { Data($0) }
    }
}
