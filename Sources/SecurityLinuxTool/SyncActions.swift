import Foundation
import KeychainCore
import KeychainSync
import SecurityTool

extension SyncCommand {
    /// What `security sync` does.
    func run(in session: Session) throws -> Int32 {
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
        if keychain == nil, path == session.engineDefaultKeychain, !session.fileExists(path) {
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
            sslmode: \(status.sslMode.map { "\($0.rawValue) (\($0.summary))" } ?? "unknown")
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
        } catch let error as SyncError where error.code == .notEnrolled {
            throw CommandFailure.failure(
                "sync \(action): \(error.message)",
                then: "set it up with `security sync init --server URL` on the first machine, "
                    + "or `security sync join CODE` with an invitation from a machine set up already")
        } catch let error as SyncError {
            throw CommandFailure.failure("sync \(action): \(error.message.isEmpty ? "\(error.code)" : error.message)")
        } catch let error as SyncServerError {
            throw CommandFailure.failure("sync \(action): the server: \(error.message)")
        }
    }
}
