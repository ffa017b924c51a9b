import Foundation
import GRDB

/// The sync layer's tables in a keychain file: part of the file's format, so kept by the engine
/// beside the items' tables (KeychainSync reads and writes their rows; their layout and its
/// upgrades are decided here, once).
///
/// - `sync_state`: named values (settings, cursor, sealed secrets, the store version).
/// - `sync_mirror`: the server's records as this device last saw them; `sync_mirror_log`, every
///   change to it (by triggers); `sync_waiting`: records that arrived while the keychain was
///   locked; `sync_conflicts`: the losers of concurrent edits, sealed.
package enum SyncTables {
    /// The layout of the sync tables this build writes, kept in `sync_state` as `store-version`
    /// (absent: 1, the first layout). 2 added `sync_waiting`; 3 the index of live records the
    /// state digest reads; 4 the mirror's change log (KeychainSync's `LiveSet`).
    package static let storeVersion = 4

    /// The name under which `sync_state` keeps the token of the mirror's change log.
    package static let mirrorLogToken = "mirror-log"

    /// Creates the sync tables, or brings older ones to ``storeVersion`` (idempotent; in a
    /// write transaction).
    package static func create(_ db: Database) throws {
        try createFirstTables(db)
        try migrate(db)
    }

    /// Brings the sync tables of an older build to ``storeVersion``, each step once: a keychain
    /// enrolled before a step gets it on its next write (a pull runs this first).
    package static func migrate(_ db: Database) throws {
        var version = try value("store-version", db).flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 1
        guard version < storeVersion else { return }
        if version < 2 {
            // Records that arrived while the keychain was locked and cannot be applied before
            // it unlocks, still sealed, in server order (the commit's sequence number); with
            // the device that signed their commit, checked again once they are opened.
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS sync_waiting(
                        seq INTEGER NOT NULL,
                        record_id BLOB NOT NULL,
                        key_id BLOB NOT NULL,
                        tombstone INTEGER NOT NULL,
                        blob BLOB NOT NULL,
                        author BLOB NOT NULL,
                        PRIMARY KEY (seq, record_id)
                    ) WITHOUT ROWID;
                    """)
            version = 2
        }
        if version < 3 {
            // The state digest reads every live record's id and blob hash in id order: from
            // this index alone (48 bytes an entry) rather than the table's wide rows.
            try db.execute(
                sql: """
                    CREATE INDEX IF NOT EXISTS sync_mirror_live ON sync_mirror(record_id, blob_hash, tombstone)
                    WHERE tombstone = 0;
                    """)
            version = 3
        }
        if version < 4 {
            // Every change to the mirror, by any process, logs the record's id (numbers never
            // reused, even after a prune that emptied the log): a live set kept
            // in memory (LiveSet) catches up from here instead of reading the whole mirror. The
            // token names this log; a log made anew (sync set up again) has another.
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS sync_mirror_log(
                        version INTEGER PRIMARY KEY AUTOINCREMENT,
                        record_id BLOB NOT NULL
                    );
                    CREATE TRIGGER IF NOT EXISTS sync_mirror_logged_insert AFTER INSERT ON sync_mirror BEGIN
                        INSERT INTO sync_mirror_log(record_id) VALUES (NEW.record_id);
                    END;
                    CREATE TRIGGER IF NOT EXISTS sync_mirror_logged_update AFTER UPDATE ON sync_mirror BEGIN
                        INSERT INTO sync_mirror_log(record_id) VALUES (NEW.record_id);
                        INSERT INTO sync_mirror_log(record_id) SELECT OLD.record_id WHERE OLD.record_id != NEW.record_id;
                    END;
                    CREATE TRIGGER IF NOT EXISTS sync_mirror_logged_delete AFTER DELETE ON sync_mirror BEGIN
                        INSERT INTO sync_mirror_log(record_id) VALUES (OLD.record_id);
                    END;
                    """)
            try setValue(mirrorLogToken, Data((0..<16).map { _ in UInt8.random(in: 0...255) }), db)
            version = 4
        }
        try setValue("store-version", Data(String(version).utf8), db)
    }

    /// The tables of the first layout (store version 1).
    private static func createFirstTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS sync_state(
                    name TEXT PRIMARY KEY NOT NULL,
                    value BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS sync_mirror(
                    record_id BLOB PRIMARY KEY NOT NULL,
                    seq INTEGER NOT NULL,
                    hlc INTEGER NOT NULL,
                    author BLOB NOT NULL,
                    tombstone INTEGER NOT NULL,
                    blob_hash BLOB NOT NULL,
                    item INTEGER,
                    primary_key BLOB
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS sync_mirror_item ON sync_mirror(item);
                CREATE TABLE IF NOT EXISTS sync_conflicts(
                    id INTEGER PRIMARY KEY,
                    at REAL NOT NULL,
                    record_id BLOB NOT NULL,
                    winner_hlc INTEGER NOT NULL,
                    winner_author BLOB NOT NULL,
                    loser BLOB NOT NULL
                );
                """)
    }

    /// Drops the sync tables (leaving sync).
    package static func drop(_ db: Database) throws {
        try db.execute(
            sql:
                "DROP TABLE IF EXISTS sync_state; DROP TABLE IF EXISTS sync_mirror; DROP TABLE IF EXISTS sync_conflicts; "
                + "DROP TABLE IF EXISTS sync_waiting; DROP TABLE IF EXISTS sync_mirror_log;"
        )
    }

    /// Whether the sync tables exist (sync was ever set up in this keychain).
    package static func exist(_ db: Database) throws -> Bool {
        try db.tableExists("sync_state")
    }

    // MARK: Named values

    /// The value `sync_state` keeps under `name`.
    package static func value(_ name: String, _ db: Database) throws -> Data? {
        // Cached statements: a sync round runs these dozens of times, and parsing them each
        // time was an eighth of a round's CPU.
        try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM sync_state WHERE name = ?"), arguments: [name])
    }

    /// Keeps `value` in `sync_state` under `name`.
    package static func setValue(_ name: String, _ value: Data, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO sync_state(name, value) VALUES (?, ?)").execute(
            arguments: [name, value])
    }
}
