import Crypto
import Foundation
import GRDB
import KeychainCore

/// The floor: plain SQLite through GRDB, with the engine's configuration and durability,
/// storing the same rows unencrypted.
///
/// Connections are configured as `KeychainCore`'s `Storage.configuration(busyTimeout:)`
/// configures them: a `DatabasePool` (WAL), `synchronous = FULL` (checked on the writer),
/// `secure_delete = ON`, a busy timeout, statement arguments kept out of errors, the writer's
/// page cache (`configureKeychainWriter`, checked); every write is one immediate transaction,
/// as the engine's are. The table has the columns a keychain needs and a unique index on
/// (service, account), so a lookup is one index probe and one row read. Statements are
/// prepared once per connection (`cachedStatement`), as any SQLite program on a hot path
/// does, and reads are single statements on a read-only connection of their own, outside
/// the pool and without `BEGIN`/`COMMIT` (as the engine's one-class searches run): the floor
/// is the least an indexed store can cost.
///
/// With ``Indexes/keychain``, the table has instead the indexes the keychain keeps for the
/// same lookups: the unique (service, account) index, as the engine's primary-key index
/// begins with the service and the account, and one on the label, as the engine's
/// keyed-tag rows find items by it alone. Its insert measures what maintaining those
/// indexes costs without encryption; it is reported beside the floor, not used as one.
final class SQLiteBaseline {
    /// The indexes of the table.
    enum Indexes {
        /// A unique (service, account) index: the floor.
        case plain
        /// The lookups the keychain indexes: (service, account) unique, label.
        case keychain

        var sql: String {
            switch self {
            case .plain:
                "CREATE UNIQUE INDEX items_service_account ON items(service, account);"
            case .keychain:
                """
                CREATE UNIQUE INDEX items_service_account ON items(service, account);
                CREATE INDEX items_label ON items(label);
                """
            }
        }
    }

    let pool: DatabasePool
    /// The connection reads run on.
    let reader: DatabaseQueue

    /// Mirrors `Storage.configuration(busyTimeout:)` in KeychainCore (internal there).
    static func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.label = "keychain-bench-floor"
        configuration.publicStatementArguments = false
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "PRAGMA journal_size_limit = \(keychainLogSizeLimit)")
        }
        return configuration
    }

    /// Creates the database at `path` and seeds it with the workload's rows in one
    /// transaction (the floor's seeding is not measured).
    init(path: String, workload: Workload, indexes: Indexes = .plain) throws {
        pool = try DatabasePool(path: path, configuration: Self.configuration())
        var readOnly = Self.configuration()
        readOnly.readonly = true
        reader = try DatabaseQueue(path: path, configuration: readOnly)
        // GRDB's DatabasePool sets `synchronous = NORMAL` on its writer after
        // `prepareDatabase` runs (Database.setUpWALMode), so the FULL asked for above does not
        // hold on the connection that writes. The floor is defined with FULL: its writer (a
        // pool keeps one writer connection for its lifetime) is configured as a keychain's,
        // and checked.
        let (synchronous, cache) = try pool.writeWithoutTransaction { db in
            try configureKeychainWriter(db)
            return (try Int.fetchOne(db, sql: "PRAGMA synchronous"), try Int.fetchOne(db, sql: "PRAGMA cache_size"))
        }
        guard synchronous == 2, cache == -keychainWriterCacheKiB else {
            throw BenchmarkFailure(
                "the floor's writer runs with synchronous = \(synchronous ?? -1) and cache_size = \(cache ?? 0), "
                    + "not FULL (2) and -\(keychainWriterCacheKiB)")
        }
        try pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE items(
                        id INTEGER PRIMARY KEY,
                        service TEXT NOT NULL,
                        account TEXT NOT NULL,
                        label TEXT NOT NULL,
                        data BLOB NOT NULL
                    );
                    """ + indexes.sql)
            let statement = try db.makeStatement(
                sql: "INSERT INTO items(service, account, label, data) VALUES (?, ?, ?, ?)")
            for k in 0..<workload.count {
                let (service, account) = workload.name(of: k)
                try statement.execute(arguments: [
                    service, account, Workload.label(service: service, account: account), Workload.secret(k),
                ])
            }
        }
    }

    private func write(_ body: (Database) throws -> Void) throws {
        try pool.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                try body(db)
                return .commit
            }
        }
    }

    func insert(service: String, account: String, data: Data) throws {
        try write { db in
            try db.cachedStatement(sql: "INSERT INTO items(service, account, label, data) VALUES (?, ?, ?, ?)")
                .execute(arguments: [service, account, Workload.label(service: service, account: account), data])
        }
    }

    func update(service: String, account: String, data: Data) throws -> Int {
        var changes = 0
        try write { db in
            try db.cachedStatement(sql: "UPDATE items SET data = ? WHERE service = ? AND account = ?")
                .execute(arguments: [data, service, account])
            changes = db.changesCount
        }
        return changes
    }

    func delete(service: String, account: String) throws -> Int {
        var changes = 0
        try write { db in
            try db.cachedStatement(sql: "DELETE FROM items WHERE service = ? AND account = ?")
                .execute(arguments: [service, account])
            changes = db.changesCount
        }
        return changes
    }

    /// A point select by the unique index: the row's label and data, or `nil`.
    func select(service: String, account: String) throws -> (label: String, data: Data)? {
        try reader.unsafeRead { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT label, data FROM items WHERE service = ? AND account = ?"),
                    arguments: [service, account]),
                let label = row["label"] as String?, let data = row["data"] as Data?
            else { return nil }
            return (label, data)
        }
    }

    /// The accounts and labels of one service (an index range scan).
    func accounts(service: String) throws -> [(account: String, label: String)] {
        try reader.unsafeRead { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT account, label FROM items WHERE service = ? ORDER BY id"),
                arguments: [service]
            ).map { row in (row["account"] as String? ?? "", row["label"] as String? ?? "") }
        }
    }
}

/// The cryptographic floor: one AES-256-GCM seal and one open of a 100-byte secret.
struct CryptoBaseline {
    let key = SymmetricKey(size: .bits256)

    func seal(_ data: Data) throws -> Data {
        guard let combined = try AES.GCM.seal(data, using: key).combined else {
            throw BenchmarkFailure("AES-GCM produced no combined output")
        }
        return combined
    }

    func open(_ sealed: Data) throws -> Data {
        try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key)
    }
}
