import ArgumentParser
import Foundation
import KeychainCore
import KeychainSync

/// `security sync`: sync of synchronizable items with the keychain's other machines, through a
/// PostgreSQL server that holds only ciphertext (Linux only).
struct SyncCommand: ToolCommand {
    static let name = "sync"
    static let configuration = CommandConfiguration(
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
    var action: String

    @Argument(help: "The code (join) or the device (approve, remove).")
    var operand: String?

    @Option(
        name: .customLong("server"),
        help:
            "The server (init, recover, migrate): postgresql://USER:PASSWORD@HOST:PORT/DB[?sslmode=verify-full&sslrootcert=FILE]."
    )
    var server: String?

    @Option(
        name: .customLong("server-root"),
        help: ArgumentHelp(
            "The server's root certificate, a PEM file (join; required when the code carries its SHA-256).",
            valueName: "file"))
    var serverRoot: String?

    @Option(name: .customLong("zone"), help: "The zone to recover (recover); default: the one the key opens.")
    var zone: String?

    @Option(name: .customLong("name"), help: "This machine's name (init, join, recover); default: the host name.")
    var deviceName: String?

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain (default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    func execute(in session: Session) throws -> Int32 {
        // The one action that touches no keychain.
        if action == "migrate" { return try migrate(session: session) }
        let database = try openEngine(session)
        switch action {
        case "init": return try initialize(database, session: session)
        case "invite": return try invite(database)
        case "join": return try join(database, session: session)
        case "approve": return try approve(database)
        case "devices": return try devices(database)
        case "remove": return try remove(database)
        case "now": return try now(database)
        case "status": return try status(database)
        case "conflicts": return try conflicts(database)
        case "recover": return try recover(database, session: session)
        default:
            throw CommandFailure.usage("sync: unknown action \"\(action)\"")
        }
    }

    /// The keychain, opened on the engine in this process (sync reads and writes the keychain
    /// file itself, beside the agent if one runs).
    private func openEngine(_ session: Session) throws -> KeychainDatabase {
        let path = try keychain.map(session.resolve) ?? session.defaultKeychainPath()
        let database: KeychainDatabase
        if keychain == nil, path == session.absolute(session.engineDefaultKeychain), !session.fileExists(path) {
            database = try KeychainDatabase.create(
                at: path, password: nil as Data?, configuration: session.configuration)
        } else {
            database = try KeychainDatabase.open(at: path, configuration: session.configuration)
        }
        if database.isLocked, database.hasPassword {
            guard let password = session.environmentPassword else {
                throw CommandFailure.failure(
                    "sync: the keychain is locked; set \(Session.passwordVariable) for this command")
            }
            try database.unlock(password: password)
        }
        return database
    }

    private var machineName: String {
        deviceName ?? ProcessInfo.processInfo.hostName
    }

    /// The administrator's URL: `--server`, with the password from PGPASSWORD, as PostgreSQL's
    /// own tools read it, rather than in the URL, where other processes can read it in this
    /// one's arguments.
    private func adminURL(session: Session) throws -> String {
        guard var server else { throw CommandFailure.usage("sync \(action): --server is required") }
        if var components = URLComponents(string: server) {
            if components.password != nil {
                Console.err(
                    "security: sync \(action): the password in --server is visible to other processes; prefer PGPASSWORD\n"
                )
            } else if let password = session.environment["PGPASSWORD"], !password.isEmpty {
                components.password = password
                server = components.string ?? server
            }
        }
        return server
    }

    private func recover(_ database: KeychainDatabase, session: Session) throws -> Int32 {
        let adminURL = try adminURL(session: session)
        // The key on standard input: never in the process arguments.
        guard let line = try session.input.readLine(), !line.isEmpty else {
            throw CommandFailure.usage("sync recover: give the recovery key on standard input")
        }
        let key = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        var zoneID: ZoneID?
        if let zone {
            guard let uuid = UUID(uuidString: zone) else {
                throw CommandFailure.usage("sync recover: --zone is a UUID")
            }
            zoneID = ZoneID(uuid)
        }
        let name = machineName
        let requested = zoneID
        let recovered = try run {
            try await SyncSetup.recover(
                keychain: database, adminURL: adminURL, recoveryKey: key, zone: requested, deviceName: name)
        }
        Console.out(
            """
            recovered zone \(recovered.zone)
            device \(recovered.device) (\(name)), fingerprint \(recovered.fingerprint)
            pulled \(recovered.pulled)

            """)
        return 0
    }

    private func migrate(session: Session) throws -> Int32 {
        let adminURL = try adminURL(session: session)
        let (before, after) = try run { try await PostgresSyncServer.migrateSchema(adminURL: adminURL) }
        Console.out(
            before == after
                ? "server schema version \(after): nothing to do\n"
                : "server schema version \(after) (was \(before))\n")
        return 0
    }

    private func initialize(_ database: KeychainDatabase, session: Session) throws -> Int32 {
        let adminURL = try adminURL(session: session)
        let name = machineName
        let made = try run { try await SyncSetup.initialize(keychain: database, adminURL: adminURL, deviceName: name) }
        Console.out(
            """
            zone \(made.zone)
            device \(made.device) (\(name)), fingerprint \(made.fingerprint)
            Recovery key (shown once; keep it somewhere safe, it opens the zone if every machine is lost):
            \(made.recoveryKey)

            """)
        return 0
    }

    private func invite(_ database: KeychainDatabase) throws -> Int32 {
        let code = try run { try await SyncSetup.invite(keychain: database) }
        let root = (try? Invitation(code: code))?.serverRootFingerprint
        let join = root == nil ? "`security sync join CODE`" : "`security sync join CODE --server-root FILE`"
        Console.out(
            "On the new machine, within 15 minutes, run \(join), then run `security sync approve` here "
                + "and compare the fingerprint it shows.\n")
        if let root {
            let hex = root.map { String(format: "%02x", $0) }.joined()
            Console.out("FILE is a copy of the server's root certificate (SHA-256 \(hex)).\n")
        }
        Console.out("\(code)\n")
        return 0
    }

    private func join(_ database: KeychainDatabase, session: Session) throws -> Int32 {
        guard var code = operand else { throw CommandFailure.usage("sync join: the invitation code is required") }
        if code == "-" {
            // The code on standard input keeps its one-time secret out of the process arguments.
            guard let line = try session.input.readLine() else {
                throw CommandFailure.usage("sync join: no code on standard input")
            }
            code = String(decoding: line, as: UTF8.self)
        }
        let name = machineName
        let typed = code
        let root = serverRoot.map(session.absolute)
        let joined = try run {
            try await SyncSetup.join(keychain: database, code: typed, deviceName: name, serverRoot: root)
        }
        Console.out(
            """
            registered as \(joined.device) (\(name)) in zone \(joined.zone)
            fingerprint \(joined.fingerprint): run `security sync approve` on the inviting machine, \
            then `security sync now` here.

            """)
        return 0
    }

    private func approve(_ database: KeychainDatabase) throws -> Int32 {
        let only = operand
        let admitted = try run { try await SyncSetup.approve(keychain: database, only: only) }
        for device in admitted {
            Console.out("approved \(device.id) (\(device.name)), fingerprint \(device.fingerprint)\n")
        }
        if admitted.isEmpty { Console.out("no device is waiting for approval\n") }
        return admitted.isEmpty && only != nil ? 1 : 0
    }

    private func devices(_ database: KeychainDatabase) throws -> Int32 {
        for device in try wrap({ try SyncSetup.devices(of: database) }) {
            Console.out(
                "\(device.id) \(device.fingerprint) \(device.name)\(device.isThisDevice ? " (this machine)" : "")\n")
        }
        return 0
    }

    private func remove(_ database: KeychainDatabase) throws -> Int32 {
        guard let device = operand else { throw CommandFailure.usage("sync remove: the device is required") }
        let removed = try run { try await SyncSetup.remove(keychain: database, device: device) }
        Console.out(
            "removed \(removed.id) (\(removed.name)): its login is refused and it opens nothing written from now on\n")
        return 0
    }

    private func now(_ database: KeychainDatabase) throws -> Int32 {
        let (pushed, pulled) = try run { try await SyncSetup.syncNow(keychain: database) }
        Console.out("pushed \(pushed), pulled \(pulled)\n")
        return 0
    }

    private func status(_ database: KeychainDatabase) throws -> Int32 {
        let status = try wrap { try SyncSetup.status(of: database) }
        func time(_ date: Date?) -> String { date.map { ISO8601DateFormatter().string(from: $0) } ?? "never" }
        Console.out(
            """
            zone: \(status.zone)
            device: \(status.device) (\(status.deviceName))
            server: \(status.server)
            head: \(status.headSeq) \(status.headHash.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "-")
            last push: \(time(status.lastPush))
            last pull: \(time(status.lastPull))
            pending changes: \(status.pendingChanges)
            waiting for unlock: \(status.waitingForUnlock)
            conflicts: \(status.conflicts)
            server rollbacks repaired: \(status.rollbacksRepaired)

            """)
        return 0
    }

    private func conflicts(_ database: KeychainDatabase) throws -> Int32 {
        let conflicts = try wrap { try SyncSetup.conflicts(of: database) }
        for conflict in conflicts {
            let attributes = conflict.loser.attributes
            let service = attributes[.service]?.stringValue ?? attributes[.server]?.stringValue ?? ""
            let account = attributes[.account]?.stringValue ?? ""
            Console.out(
                "\(ISO8601DateFormatter().string(from: conflict.decidedAt)) \(conflict.loser.itemClass) "
                    + "service \"\(service)\" account \"\(account)\": lost to a change at "
                    + "\(ISO8601DateFormatter().string(from: conflict.winnerClock.date))\n")
        }
        if conflicts.isEmpty { Console.out("no conflicts\n") }
        return 0
    }

    /// Runs a sync operation, giving up after two minutes without an answer (see
    /// `withSyncDeadline`): a command never hangs on a dead connection.
    private func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        try wrap { try waitFor { try await withSyncDeadline(.seconds(120), body) } }
    }

    /// Reports a sync error as `security: sync ACTION: message` (never a secret: sync errors
    /// carry none).
    private func wrap<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SyncError {
            throw CommandFailure.failure("sync \(action): \(error.message.isEmpty ? "\(error.code)" : error.message)")
        } catch let error as SyncServerError {
            throw CommandFailure.failure("sync \(action): the server: \(error.message)")
        }
    }
}
