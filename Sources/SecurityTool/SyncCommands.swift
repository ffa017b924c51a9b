import ArgumentParser
import Foundation
import KeychainModel

/// `security sync`: sync of synchronizable items with the keychain's other machines, through a
/// PostgreSQL server that holds only ciphertext (Linux only).
package struct SyncCommand: ToolCommand {
    package static let name = "sync"
    package static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract:
            "Sync synchronizable items with other machines through PostgreSQL, end-to-end encrypted (Linux only).",
        usage: """
            security sync init --server postgresql://USER:PASSWORD@HOST:PORT/DB [--name NAME] [-k keychain]
                   security sync invite [-k keychain]
                   security sync join CODE|- [--server-root FILE] [--name NAME] [-k keychain]
                   security sync approve [DEVICE] [-k keychain]
                   security sync now | status | devices | conflicts [-k keychain]
                   security sync remove DEVICE [-k keychain]
                   security sync recover --server postgresql://USER@HOST:PORT/DB [--zone ZONE] [--name NAME] [-k keychain] < KEY
                   security sync migrate --server postgresql://USER@HOST:PORT/DB
            """,
        discussion: HelpText.wrapped(
            """
            Items added with kSecAttrSynchronizable (security add-generic-password -S … is not \
            needed: any SecItem code that sets the attribute) are sealed on this machine and \
            pushed to a zone on the server; the server stores ciphertext, opaque identifiers and \
            ordering only. Items bound to this device (…ThisDeviceOnly) and items that are not \
            synchronizable never leave the machine.

            init       make this keychain the first device of a new zone; prints the recovery \
            key once (keep it)
            invite     print a one-time code (valid 15 minutes) for a new machine, as the last line
            join       register this machine with a code from `invite`
            approve    on the inviting machine: admit the machines that joined (all pending when \
            none is named)
            now        one pull and push
            status     the zone, the last push and pull, pending changes, conflicts, the head hash
            devices    the zone's machines and their fingerprints
            remove     take a machine out: its login is refused and the keys roll
            conflicts  the changes that lost to a later one (30 days)
            recover    every machine lost: join this keychain to the zone with the recovery \
            key `init` printed, read from standard input, and pull every item
            migrate    as the server's administrator: bring its schema to this version's (init \
            does it too), in one transaction; machines keep syncing meanwhile

            Deleted items leave tombstones on the server; the server drops them once older \
            than the zone's retention (30 days unless the administrator changes \
            keychain_sync.zones.tombstone_retention) and seen by every machine heard from within \
            it. A machine away for longer catches up with a full comparison and keeps the \
            changes it made meanwhile.

            TLS to the server is as with psql: add sslmode=require, verify-ca or verify-full to \
            the URL, and sslrootcert=FILE for a root certificate other than the system's. An \
            invitation carries the sslmode and the root file's SHA-256; join then needs a copy \
            of that file (--server-root FILE), which this machine keeps using from where it is.

            The keychain is the default keychain unless -k names another. For init, give the \
            server's administrator password in PGPASSWORD rather than in the URL; for join, `-` \
            reads the code from standard input (both keep secrets out of the process arguments).
            """))

    @Argument(help: "init, invite, join, approve, now, status, devices, remove, conflicts, recover or migrate.")
    package var action: String

    @Argument(help: "The code (join) or the device (approve, remove).")
    package var operand: String?

    @Option(
        name: .customLong("server"),
        help:
            "The server (init, recover, migrate): postgresql://USER:PASSWORD@HOST:PORT/DB[?sslmode=verify-full&sslrootcert=FILE]."
    )
    package var server: String?

    @Option(
        name: .customLong("server-root"),
        help: ArgumentHelp(
            "The server's root certificate, a PEM file (join; required when the code carries its SHA-256).",
            valueName: "file"))
    package var serverRoot: String?

    @Option(name: .customLong("zone"), help: "The zone to recover (recover); default: the one the key opens.")
    package var zone: String?

    @Option(name: .customLong("name"), help: "This machine's name (init, join, recover); default: the host name.")
    package var deviceName: String?

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain (default: the default keychain).", valueName: "keychain"))
    package var keychain: String?

    package init() {}

    /// Runs in `security-linux` (``LinuxCompanion``).
    package func execute(in session: Session) throws -> Int32 { try session.runLinuxCommand(self) }
}
