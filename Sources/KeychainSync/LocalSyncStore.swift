import Foundation
import GRDB
import KeychainCore

/// What a device keeps about its zone, in its keychain file beside the items: the settings
/// (in the clear: identifiers the server knows anyway), the secrets (sealed by the keychain
/// under its this-device-only class key), the mirror of the server's records and the
/// conflict log (each loser sealed as a record).
///
/// Everything a pull applies (items, mirror rows, the cursor) is written in one SQLite
/// transaction with the items (``KeychainDatabase/withSyncTransaction(_:)``).
struct LocalSyncStore {
    /// The layout of the sync tables this build writes (``KeychainCore/SyncTables``, which owns
    /// them with the rest of the keychain file's format).
    static let storeVersion = SyncTables.storeVersion

    /// Creates the sync tables, or brings older ones to ``storeVersion`` (idempotent; in a
    /// write transaction).
    static func createTables(_ db: Database) throws { try SyncTables.create(db) }

    /// Brings the sync tables of an older build to ``storeVersion``.
    static func migrate(_ db: Database) throws { try SyncTables.migrate(db) }

    /// Drops the sync tables (leaving sync).
    static func dropTables(_ db: Database) throws { try SyncTables.drop(db) }

    /// Whether the sync tables exist (sync was ever set up in this keychain).
    static func tableExists(_ db: Database) throws -> Bool { try SyncTables.exist(db) }

    // MARK: Named values

    static func value(_ name: String, _ db: Database) throws -> Data? { try SyncTables.value(name, db) }

    static func setValue(_ name: String, _ value: Data, _ db: Database) throws {
        try SyncTables.setValue(name, value, db)
    }

    /// The settings; decoded again only when they changed since `decoded` last saw them.
    static func configuration(_ db: Database, reusing decoded: DecodedValues? = nil) throws -> SyncSettings? {
        guard let bytes = try value("settings", db) else { return nil }
        return try DecodedValues.decode(SyncSettings.self, from: bytes, reusing: decoded)
    }

    static func setConfiguration(_ settings: SyncSettings, _ db: Database) throws {
        try setValue("settings", try JSONEncoder().encode(settings), db)
    }

    static func cursor(_ db: Database) throws -> SyncCursor {
        guard let bytes = try value("cursor", db) else { return SyncCursor(seq: 0, headHash: nil) }
        return try JSONDecoder().decode(SyncCursor.self, from: bytes)
    }

    static func setCursor(_ cursor: SyncCursor, _ db: Database) throws {
        try setValue("cursor", try JSONEncoder().encode(cursor), db)
    }

    /// The roster; decoded again only when it changed since `decoded` last saw it.
    static func roster(_ db: Database, reusing decoded: DecodedValues? = nil) throws -> [LocalRosterEntry] {
        guard let bytes = try value("roster", db) else { return [] }
        return try DecodedValues.decode([LocalRosterEntry].self, from: bytes, reusing: decoded)
    }

    static func setRoster(_ roster: [LocalRosterEntry], _ db: Database) throws {
        try setValue("roster", try JSONEncoder().encode(roster), db)
    }

    // MARK: Mirror

    static func mirror(recordID: RecordID, _ db: Database) throws -> MirrorRow? {
        try MirrorRow.fetch(db, "WHERE record_id = ?", [recordID.bytes]).first
    }

    static func mirror(item: Int64, _ db: Database) throws -> [MirrorRow] {
        try MirrorRow.fetch(db, "WHERE item = ?", [item])
    }

    /// Every mirror row, by record.
    static func allMirror(_ db: Database) throws -> [RecordID: MirrorRow] {
        Dictionary(try MirrorRow.fetch(db, "", []).map { ($0.recordID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func liveMirror(_ db: Database) throws -> [RecordID: Data] {
        var live: [RecordID: Data] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT record_id, blob_hash FROM sync_mirror WHERE tombstone = 0") {
            if let id = RecordID(row[0]) { live[id] = row[1] }
        }
        return live
    }

    /// Every live record's id and blob hash, as ``LiveSet/Snapshot/entries``, in the table's
    /// record-id order.
    static func liveEntries(_ db: Database) throws -> [UInt8] {
        var entries: [UInt8] = []
        // Read in place through SQLite's C API: a Data per column of a thousand rows cost
        // more than the hash.
        try db.forEachRow("SELECT record_id, blob_hash FROM sync_mirror WHERE tombstone = 0 ORDER BY record_id", []) {
            row in
            _ = row.withBlob(0) { id in
                row.withBlob(1) { hash in
                    guard id.count == RecordID.length, hash.count == LiveSet.entryLength - RecordID.length else {
                        return
                    }
                    entries.append(contentsOf: id)
                    entries.append(contentsOf: hash)
                }
            }
        }
        return entries
    }

    /// The name of the mirror log's token in `sync_state`.
    static let mirrorLogToken = SyncTables.mirrorLogToken

    /// The mirror's change log: its token, the first change it holds and the last change
    /// made (`first` is `last + 1` while it holds none); `nil` before store version 4.
    static func mirrorLog(_ db: Database) throws -> (token: Data, first: Int64, last: Int64)? {
        guard let token = try value(mirrorLogToken, db) else { return nil }
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT (SELECT min(version) FROM sync_mirror_log),
                           (SELECT seq FROM sqlite_sequence WHERE name = 'sync_mirror_log')
                    """))
        let last: Int64 = row?[1] ?? 0
        return (token, row?[0] ?? last + 1, last)
    }

    /// The records changed after log entry `version`, each with its blob hash now (`nil`: a
    /// tombstone, or no row).
    static func mirrorChanges(after version: Int64, _ db: Database) throws -> [(RecordID, Data?)] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT changed.record_id, CASE WHEN m.tombstone = 0 THEN m.blob_hash END
                    FROM (SELECT DISTINCT record_id FROM sync_mirror_log WHERE version > ?) AS changed
                    LEFT JOIN sync_mirror AS m ON m.record_id = changed.record_id
                    """), arguments: [version]
        ).compactMap { row in
            // A hash of another length is left out, as liveEntries leaves it out.
            let hash = (row[1] as Data?).flatMap { $0.count == LiveSet.entryLength - RecordID.length ? $0 : nil }
            return RecordID(row[0]).map { ($0, hash) }
        }
    }

    /// How many of the latest changes the mirror log keeps.
    static let mirrorLogLength: Int64 = 4096

    /// Forgets all but the latest ``mirrorLogLength`` changes of the mirror log (a live set
    /// older than those reads the mirror whole).
    static func pruneMirrorLog(_ db: Database) throws {
        guard try value(mirrorLogToken, db) != nil else { return }
        try db.cachedStatement(
            sql: "DELETE FROM sync_mirror_log WHERE version <= (SELECT max(version) FROM sync_mirror_log) - ?"
        ).execute(arguments: [mirrorLogLength])
    }

    static func setMirror(_ row: MirrorRow, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO sync_mirror(record_id, seq, hlc, author, tombstone, blob_hash, item, primary_key)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                row.recordID.bytes, row.seq, Int64(bitPattern: row.hlc.rawValue), row.author.bytes, row.tombstone,
                row.blobHash, row.item, row.sealedPrimaryKey,
            ])
    }

    // MARK: Waiting for unlock

    /// Keeps a record that cannot be applied while the keychain is locked, sealed as it came.
    static func addWaiting(_ record: WaitingRecord, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO sync_waiting(seq, record_id, key_id, tombstone, blob, author)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                record.record.seq, record.record.recordID.bytes, record.record.keyID.syncBytes,
                record.record.tombstone, record.record.blob, record.author.bytes,
            ])
    }

    /// The records waiting for an unlock, in server order.
    static func waiting(_ db: Database) throws -> [WaitingRecord] {
        guard try waitingTableExists(db) else { return [] }
        return try Row.fetchAll(
            db, sql: "SELECT seq, record_id, key_id, tombstone, blob, author FROM sync_waiting ORDER BY seq, record_id"
        ).map { row in
            let keyBytes: Data = row[2]
            var keyReader = SyncReader(keyBytes, what: "key id")
            guard let id = RecordID(row[1]), let author = DeviceID(bytes: row[5]), let keyID = try? keyReader.uuid()
            else { throw SyncError(.tampered, "a record waiting for an unlock is malformed") }
            return WaitingRecord(
                record: ServerRecord(recordID: id, seq: row[0], keyID: keyID, tombstone: row[3], blob: row[4]),
                author: author)
        }
    }

    /// The identities of the records waiting for an unlock.
    static func waitingRecordIDs(_ db: Database) throws -> Set<RecordID> {
        guard try waitingTableExists(db) else { return [] }
        return Set(
            try Data.fetchAll(db.cachedStatement(sql: "SELECT record_id FROM sync_waiting")).compactMap { RecordID($0) }
        )
    }

    /// How many records wait for an unlock (nothing is opened).
    static func waitingCount(_ db: Database) throws -> Int {
        guard try waitingTableExists(db) else { return 0 }
        return try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM sync_waiting")) ?? 0
    }

    /// Forgets a waiting record once it is applied (or found superseded).
    static func removeWaiting(_ record: WaitingRecord, _ db: Database) throws {
        try db.execute(
            sql: "DELETE FROM sync_waiting WHERE seq = ? AND record_id = ?",
            arguments: [record.record.seq, record.record.recordID.bytes])
    }

    private static func waitingTableExists(_ db: Database) throws -> Bool {
        try db.tableExists("sync_waiting")
    }

    // MARK: Conflicts

    static func logConflict(
        recordID: RecordID, winner: (HybridLogicalClock, DeviceID), loser: Data, _ db: Database
    ) throws {
        try db.execute(
            sql: """
                INSERT INTO sync_conflicts(at, record_id, winner_hlc, winner_author, loser) VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [
                Date().timeIntervalSince1970, recordID.bytes, Int64(bitPattern: winner.0.rawValue), winner.1.bytes,
                loser,
            ])
        // The log keeps 30 days.
        try db.execute(
            sql: "DELETE FROM sync_conflicts WHERE at < ?", arguments: [Date().timeIntervalSince1970 - 30 * 86_400])
    }

    static func conflicts(_ db: Database) throws -> [(
        at: Date, recordID: RecordID, winner: HybridLogicalClock, loser: Data
    )] {
        try Row.fetchAll(db, sql: "SELECT at, record_id, winner_hlc, loser FROM sync_conflicts ORDER BY id").compactMap
        {
            row in
            guard let id = RecordID(row[1]) else { return nil }
            let hlc: Int64 = row[2]
            return (
                Date(timeIntervalSince1970: row[0]), id, HybridLogicalClock(rawValue: UInt64(bitPattern: hlc)), row[3]
            )
        }
    }
}

/// A device's settings for its zone: identifiers and the server's address (never a password).
struct SyncSettings: Codable, Sendable, Equatable {
    /// The server, as a `postgresql://` URL without a password.
    var server: String
    /// The login role of this device.
    var role: String
    var zone: UUID
    var device: UUID
    var deviceName: String
    /// The roster epoch and key epoch this device holds keys for.
    var rosterEpoch: Int64
    var keyEpoch: Int64
    /// The last successful push and pull.
    var lastPush: Date? = nil
    var lastPull: Date? = nil
    /// For a device that joined: the inviting device and its signing key (the key whose
    /// fingerprint the code carried), the only key it trusts until it holds the roster.
    var sponsor: UUID? = nil
    var sponsorKey: Data? = nil
    /// How many times the server's log was found rewound (a restored backup) and repaired.
    var rollbacksRepaired: Int? = nil

    var zoneID: ZoneID { ZoneID(zone) }
    var deviceID: DeviceID { DeviceID(device) }
}

/// A device of the zone's verified roster, as this device keeps it.
struct LocalRosterEntry: Codable, Sendable, Equatable {
    var device: UUID
    var name: String
    var signingKey: Data
    var agreementKey: Data
    var addedAt: Date

    var deviceID: DeviceID { DeviceID(device) }
}

/// How far a device has verified and applied its zone's log.
struct SyncCursor: Codable, Sendable, Equatable {
    var seq: Int64
    var headHash: Data?
}

/// A record pulled while the keychain was locked that cannot be applied before it unlocks: a
/// when-unlocked (class A) record, kept unopened, or one whose local item is when-unlocked.
/// Its commit's head, signature and state digest were verified when it arrived; opening it
/// (authentication, identity) waits for the unlock.
struct WaitingRecord: Sendable, Equatable {
    /// The row as the server returned it.
    var record: ServerRecord
    /// The device that signed the commit that wrote it (the record's author must be it).
    var author: DeviceID
}

/// The device's view of one server record.
struct MirrorRow: Sendable, Equatable {
    var recordID: RecordID
    var seq: Int64
    var hlc: HybridLogicalClock
    var author: DeviceID
    var tombstone: Bool
    var blobHash: Data
    /// The local item row the record is applied to.
    var item: Int64?
    /// The record's primary key (class and primary-key attributes, as an item's sync payload),
    /// sealed by the keychain: what a later deletion of the record sends.
    var sealedPrimaryKey: Data?

    static func fetch(_ db: Database, _ clause: String, _ arguments: StatementArguments) throws -> [MirrorRow] {
        try Row.fetchAll(
            db.cachedStatement(
                sql:
                    "SELECT record_id, seq, hlc, author, tombstone, blob_hash, item, primary_key FROM sync_mirror \(clause)"
            ),
            arguments: arguments
        ).compactMap { row in
            guard let id = RecordID(row[0]), let author = DeviceID(bytes: row[3]) else { return nil }
            let hlc: Int64 = row[2]
            return MirrorRow(
                recordID: id, seq: row[1], hlc: HybridLogicalClock(rawValue: UInt64(bitPattern: hlc)), author: author,
                tombstone: row[4], blobHash: row[5], item: row[6], sealedPrimaryKey: row[7])
        }
    }
}

extension DeviceID {
    /// The identifier's 16 bytes.
    var bytes: Data { uuid.syncBytes }

    /// Reads 16 bytes.
    init?(bytes: Data) {
        var reader = SyncReader(bytes, what: "device")
        guard bytes.count == 16, let uuid = try? reader.uuid() else { return nil }
        self.init(uuid)
    }
}
