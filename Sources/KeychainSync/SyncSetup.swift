import Crypto
import Foundation
import GRDB
import KeychainCore

/// Setting a keychain up for sync, and the questions a user asks about it: the commands
/// behind `security sync init|invite|join|approve|devices|remove|status|conflicts`.
public enum SyncSetup {
    /// What `init` made.
    public struct Initialized: Sendable {
        /// The new zone.
        public var zone: ZoneID
        /// This device.
        public var device: DeviceID
        /// This device's fingerprint, for comparing out of band.
        public var fingerprint: String
        /// The recovery key: shown once, kept by the user; it opens the zone's escrow.
        public var recoveryKey: String
    }

    /// Sets up sync for a keychain as the first device of a new zone.
    ///
    /// Connects with `adminURL` (a role that may create roles: the server's owner), installs
    /// or upgrades the server schema, creates this device's own login role (its password is
    /// random, kept sealed in the keychain; the server stores only a SCRAM verifier), then
    /// creates the zone with its first commit: the zone's keys wrapped under a fresh zone key,
    /// the roster holding this device, this device's share of the zone key and the recovery
    /// escrow. Every synchronizable item already in the keychain is queued for the first push.
    /// - Parameters:
    ///   - keychain: The keychain (unlocked).
    ///   - adminURL: `postgresql://user:password@host:port/database`.
    ///   - deviceName: A name for this device, sealed on the server.
    public static func initialize(
        keychain: KeychainDatabase, adminURL: String, deviceName: String
    ) async throws -> Initialized {
        try ensureNotSetUp(keychain)
        let admin = try SyncServerAddress(url: adminURL)
        let zone = ZoneID.random()
        let enrolling = NewDevice(name: deviceName)
        let (device, signing, role, password, card) = (
            enrolling.id, enrolling.signing, enrolling.role, enrolling.password, enrolling.card
        )
        try await PostgresSyncServer.bootstrap(
            adminURL: adminURL, account: UUID(), device: device, role: role, password: password)
        let keys = ZoneKeys.generate()
        let recovery = RecoveryKey.generate()
        // The recovery peer is a member whose keys only the recovery key derives: every zone key
        // is shared with it, so `recover` opens the zone whatever keys rolled since.
        let peer = try recovery.peerCard(zone: zone)
        let roster = Roster(zone: zone, epoch: 1, devices: [card, peer], signer: device)
        var secrets = enrolling.secrets
        secrets.install(keys)
        let head = Head(
            zone: zone, seq: 1, previousHash: Data(count: 32), stateDigest: StateDigest.compute([:]), rosterEpoch: 1,
            keyEpoch: keys.epoch, commitID: UUID(), author: device, time: .wallClock())
        let signed = try SignedHead.sign(head, with: signing)
        let commit = Commit(
            zone: zone, expectedSeq: 0, head: signed.serverHead, keys: try keys.wrappedRows(zone: zone),
            roster: (1, try roster.seal(zoneKey: keys.zoneKey, signingKey: signing)),
            shares: try [card, peer].map {
                try ZoneKeyShare.seal(
                    zoneKey: keys.zoneKey, epoch: keys.epoch, zone: zone, to: $0, from: device, signingKey: signing)
            },
            escrow: (
                keys.epoch,
                try recovery.sealEscrow(escrowPayload(keys, signing: signing), zone: zone, epoch: keys.epoch)
            ))
        try await withServer(at: admin.with(username: role, password: password)) { connection in
            try await connection.createZone(commit, notifyChannel: PostgresSyncServer.makeNotifyChannel())
        }
        let settings = SyncSettings(
            server: admin.serverURL, role: role, zone: zone.uuid,
            device: device.uuid, deviceName: deviceName,
            rosterEpoch: 1, keyEpoch: keys.epoch)
        try storeEnrolment(
            keychain, settings: settings, secrets: secrets, roster: [card, peer],
            cursor: SyncCursor(seq: 1, headHash: signed.hash))
        return Initialized(
            zone: zone, device: device, fingerprint: card.fingerprint, recoveryKey: recovery.displayString)
    }

    /// Refuses a keychain that is already set up for sync.
    static func ensureNotSetUp(_ keychain: KeychainDatabase) throws {
        let settings = try keychain.readSyncTables {
            try LocalSyncStore.tableExists($0) ? LocalSyncStore.configuration($0) : nil
        }
        guard settings == nil else { throw SyncError(.conflict, "this keychain is already set up for sync") }
    }

    /// Records a device's enrolment in the keychain: the journal on, the sync tables with its
    /// settings, sealed secrets, first roster and cursor, in one transaction.
    static func storeEnrolment(
        _ keychain: KeychainDatabase, settings: SyncSettings, secrets: SyncSecrets, roster: [DeviceCard],
        cursor: SyncCursor?
    ) throws {
        try keychain.startSyncJournal()
        try keychain.withSyncTransaction { transaction in
            let db = transaction.database
            try LocalSyncStore.createTables(db)
            try LocalSyncStore.setConfiguration(settings, db)
            try LocalSyncStore.setValue(SyncSecrets.name, try secrets.sealed(in: transaction), db)
            try LocalSyncStore.setRoster(roster.map(LocalRosterEntry.init), db)
            if let cursor { try LocalSyncStore.setCursor(cursor, db) }
        }
    }

    /// What the escrow keeps: the zone key and this device's signing key, so a recovered device
    /// can open the zone and sign itself into the roster.
    static func escrowPayload(_ keys: ZoneKeys, signing: Curve25519.Signing.PrivateKey) -> Data {
        var payload = Data()
        payload.append(contentsOf: withUnsafeBytes(of: keys.epoch.bigEndian) { Array($0) })
        keys.zoneKey.withUnsafeBytes { payload.append(contentsOf: $0) }
        payload.append(signing.rawRepresentation)
        return payload
    }

    /// One pull and push for the keychain, connecting as this device: `security sync now`.
    /// Gives up with `.connectionFailed` after ``roundLimit`` (see ``withSyncDeadline(_:_:)``).
    /// - Returns: How many records were pushed and pulled.
    public static func syncNow(keychain: KeychainDatabase) async throws -> (pushed: Int, pulled: Int) {
        let context = try SyncEngine(keychain: keychain, server: NoServer()).context()
        return try await withSyncDeadline(roundLimit) {
            try await withServer(context) { server in
                try await SyncEngine(keychain: keychain, server: server).syncNow()
            }
        }
    }

    /// Runs `body` with an engine for `keychain` whose server connections stay open until it
    /// returns, as keychaind's runner keeps them: many rounds without a login each.
    /// - Throws: ``SyncError`` `.notEnrolled` for a keychain not set up for sync, or what `body`
    ///   throws.
    public static func withEngine<T: Sendable>(
        keychain: KeychainDatabase, _ body: (SyncEngine) async throws -> T
    ) async throws -> T {
        let context = try SyncEngine(keychain: keychain, server: NoServer()).context()
        return try await withServer(context) { server in try await body(SyncEngine(keychain: keychain, server: server))
        }
    }

    /// How long one ``syncNow(keychain:)`` may take before it gives up.
    public static let roundLimit: Duration = .seconds(30)

    // MARK: Questions

    /// What `security sync status` prints.
    public struct Status: Sendable {
        /// The zone and this device.
        public var zone: ZoneID
        public var device: DeviceID
        public var deviceName: String
        /// The server, without a password.
        public var server: String
        /// How the server is reached (the URL's `sslmode`, libpq's `prefer` when it has none).
        public var sslMode: SyncServerAddress.SSLMode?
        /// The last verified head: sequence number and hash (compare it out of band to detect a fork).
        public var headSeq: Int64
        public var headHash: Data?
        /// The last push and pull.
        public var lastPush: Date?
        public var lastPull: Date?
        /// Changes not pushed yet.
        public var pendingChanges: Int
        /// Entries in the conflict log.
        public var conflicts: Int
        /// Records pulled while the keychain was locked that wait, still sealed, for it to unlock.
        public var waitingForUnlock: Int
        /// How many times the server's log was found rewound (a restored backup, a failover to
        /// a lagging replica) and this device wrote back what it had lost.
        public var rollbacksRepaired: Int
    }

    /// The keychain's sync status, read locally (no server round trip).
    public static func status(of keychain: KeychainDatabase) throws -> Status {
        let (settings, cursor, conflicts, waiting) = try keychain.readSyncTables { db in
            guard try LocalSyncStore.tableExists(db), let settings = try LocalSyncStore.configuration(db) else {
                throw SyncError(.notEnrolled, "this keychain is not set up for sync")
            }
            return (
                settings, try LocalSyncStore.cursor(db), try LocalSyncStore.conflicts(db).count,
                try LocalSyncStore.waitingCount(db)
            )
        }
        return Status(
            zone: settings.zoneID, device: settings.deviceID, deviceName: settings.deviceName, server: settings.server,
            sslMode: (try? SyncServerAddress(url: settings.server, requiresUser: false))?.sslMode,
            headSeq: cursor.seq, headHash: cursor.headHash, lastPush: settings.lastPush, lastPull: settings.lastPull,
            pendingChanges: try keychain.pendingSyncChanges(), conflicts: conflicts, waitingForUnlock: waiting,
            rollbacksRepaired: settings.rollbacksRepaired ?? 0)
    }

    /// One entry of the conflict log, opened.
    public struct Conflict: Sendable {
        /// When the conflict was decided.
        public var decidedAt: Date
        /// The record both versions were of.
        public var recordID: RecordID
        /// The version that lost (its class and attributes; its secret, when it had one).
        public var loser: Item
        /// The clock of the losing and of the winning version.
        public var loserClock: HybridLogicalClock
        public var winnerClock: HybridLogicalClock
    }

    /// The conflict log (30 days), oldest first.
    public static func conflicts(of keychain: KeychainDatabase) throws -> [Conflict] {
        let context = try SyncEngine(keychain: keychain, server: NoServer()).context()
        let entries = try keychain.readSyncTables { try LocalSyncStore.conflicts($0) }
        return try entries.map { entry in
            let record = ServerRecord(
                recordID: entry.recordID, seq: 0, keyID: try RecordCodec.header(of: entry.loser).keyID,
                tombstone: try RecordCodec.header(of: entry.loser).tombstone, blob: entry.loser)
            let (header, payload) = try RecordCodec.open(
                record, zone: context.settings.zoneID, classKeys: context.secrets.classKeysByID)
            return Conflict(
                decidedAt: entry.at, recordID: entry.recordID, loser: try Item(syncPayload: payload),
                loserClock: header.hlc, winnerClock: entry.winner)
        }
    }
}

/// A server that refuses everything: what reading local state needs no connection for.
struct NoServer: SyncServer {
    private func refuse() -> SyncError { SyncError(.server, "not connected") }
    func createZone(_ commit: Commit, notifyChannel: String) async throws { throw refuse() }
    func push(_ commit: Commit) async throws -> PushOutcome { throw refuse() }
    func pull(_ zone: ZoneID, after seq: Int64) async throws -> PullBatch { throw refuse() }
    func zoneState(_ zone: ZoneID) async throws -> ZoneState { throw refuse() }
    func shares(_ zone: ZoneID, for device: DeviceID) async throws -> [ServerShare] { throw refuse() }
    func recordIndex(_ zone: ZoneID) async throws -> [RecordID: Int64] { throw refuse() }
}

extension LocalRosterEntry {
    init(_ card: DeviceCard) {
        self.init(
            device: card.id.uuid, name: card.name, signingKey: card.signingKey.rawRepresentation,
            agreementKey: card.agreementKey.rawRepresentation, addedAt: card.addedAt)
    }
}
