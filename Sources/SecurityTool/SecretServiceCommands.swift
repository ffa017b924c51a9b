import ArgumentParser
import Foundation
import KeychainModel

/// `security import-secret-service`: copies every item of another running Secret Service
/// provider (GNOME Keyring, KeePassXC) into a keychain, so that moving off it is one command.
package struct ImportSecretService: ToolCommand {
    package static let name = "import-secret-service"
    package static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Copy every item of another running Secret Service provider into a keychain (Linux only).",
        usage: "security import-secret-service [-k keychain]",
        discussion: HelpText.wrapped(
            """
            Reads every item of the program that owns org.freedesktop.secrets on the session bus \
            (GNOME Keyring, KeePassXC) as an ordinary client, through an encrypted session, and \
            stores it in the keychain (default: the default keychain) as keychaind's Secret Service \
            stores items: the label, and the attributes with service and account mapped to the \
            item's service and account. Run it while the other provider still runs, then let \
            keychaind take its place (keychaind --secret-service --replace, or its D-Bus service \
            file).

            Locked collections and the in-memory session collection are skipped (unlock them, for \
            example in Seahorse, and run the command again). Running it again adds only what is \
            new: an item with the same attributes is updated to the provider's secret and label. \
            An item whose service and account are those of another item with other attributes is \
            left out and reported.
            """))

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to import into (default: the default keychain).", valueName: "keychain"))
    package var keychain: String?

    package init() {}

    /// Runs in `security-linux` (``LinuxCompanion``).
    package func execute(in session: Session) throws -> Int32 { try session.runLinuxCommand(self) }
}
