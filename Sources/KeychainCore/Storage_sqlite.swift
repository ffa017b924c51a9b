import Foundation
import GRDB
import GRDBSQLite

/// The SQLite side of a keychain: file format, schema, connections and error mapping.
///
/// The file is an SQLite database whose `application_id` is `KCHN` and whose `user_version`
/// is the format version; `meta` holds the header (keychain id, key derivation, wrapped
/// keys), `items` one row per item with sealed attributes and data, `tags` the keyed hashes
/// of attribute values that lookups use.
///
/// Format versions:
/// - 1: every attribute but the access group, the synchronizable flag, access control and
///   housekeeping values had tag rows.
/// - 2: dates and the accessibility have no tag rows (their filters are checked after
///   decryption), and updates leave the tag rows of other attributes alone. A build that
///   reads only version 1 would miss items in queries on those attributes, so it must
///   refuse these files.
/// - 3: each item row lists its own tags (`items.tags`, 16 bytes each), and the engine deletes
///   an item's tag rows through that list; persistent identities carry their row id (see
///   ``PersistentIdentity``). New files therefore need neither the per-item index on `tags`
///   nor an index on `uuid`. A version-2 build would leave tag rows behind in such a file.
/// - 4: new files use the ``IndexLayout/lookupKeys`` index layout (a password's service and
///   account have no tag rows; their lookups read the primary-key index), which a version-3
///   build cannot read. The SQL schema is that of version 3.
///
/// Older files are upgraded on first open, in one transaction: version 1 becomes 2 without
/// change (its extra tag rows stay; nothing reads them, and they go with their item),
/// version 2 becomes 3 by filling in each row's tag list from the `tags` table, and version 3
/// becomes 4 without change. Upgraded files keep the indexes and the index layout they were
/// created with; the same statements read and write every layout.
///
/// Every index is one more B-tree page written to the write-ahead log on each add, so new
/// files have only the primary-key tag (unique among live items), tombstones, and the tags
/// themselves: an add writes the row, its primary-key entry and one entry per attribute with
/// tag rows (a password's label and the other indexed attributes it has). A query without
/// indexed attributes reads the table in row order; one by persistent identity reads one row
/// by its id. Files created by format 1 have a unique
/// index on `uuid` and one on (class, access group); format 2, one on (class, uuid); both
/// have the foreign key from `tags` to `items` with its index.
enum Storage {
    static let applicationID: Int32 = 0x4B43_484E  // "KCHN"
    static let formatVersion = 5

    /// Migrations from each older format to the next; index i upgrades version i+1 to i+2.
    static let migrations: [@Sendable (Database) throws -> Void] = [
        // 1 → 2: nothing to convert; the version number keeps version-1 builds out.
        { _ in },
        // 2 → 3: each row gets the list of its tag rows.
        fillTagLists,
        // 3 → 4: nothing to convert (the file keeps its index layout); the version number
        // keeps version-3 builds out of files of the lookup-key layout.
        { _ in },
        // 4 → 5: the sync journal (empty, and off until sync is set up); the version number
        // keeps version-4 builds, which would not journal their writes, out.
        { db in try db.execute(sql: syncJournalSchema) },
    ]

    /// The sync journal: the rows of synchronizable items changed since they were last pushed
    /// (`hlc`: when, on the hybrid logical clock), and the clock, whose row exists only while
    /// sync is on. Written in the transaction of the change itself (see `journalSyncChange`).
    static let syncJournalSchema = """
        CREATE TABLE sync_journal(
            item INTEGER PRIMARY KEY,
            hlc INTEGER NOT NULL
        );
        CREATE TABLE sync_clock(
            id INTEGER PRIMARY KEY CHECK (id = 0),
            hlc INTEGER NOT NULL
        );
        """

    /// Adds the `tags` column to `items` and fills it from the `tags` table (every tag row of
    /// each item, including format 1's rows for dates and accessibility, so that they go
    /// with their item too).
    private static func fillTagLists(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE items ADD COLUMN tags BLOB NOT NULL DEFAULT x''")
        var lists: [Int64: Data] = [:]
        try db.forEachRow("SELECT item, tag FROM tags", []) { row in
            guard let item = row.integer(0), let tag = row.blob(1), tag.count == IndexTagger.tagLength else { return }
            lists[item, default: Data()].append(tag)
        }
        for (item, list) in lists {
            try db.run("UPDATE items SET tags = ? WHERE id = ?", [list.databaseValue, item.databaseValue])
        }
    }

    static func createSchema(_ db: Database) throws {
        try db.execute(
            sql: """
                PRAGMA application_id = \(applicationID);
                CREATE TABLE meta(
                    name TEXT PRIMARY KEY NOT NULL,
                    value BLOB NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE items(
                    id INTEGER PRIMARY KEY,
                    uuid BLOB NOT NULL,
                    class TEXT NOT NULL,
                    protection INTEGER NOT NULL,
                    agrp BLOB NOT NULL,
                    sync BLOB NOT NULL,
                    pk BLOB NOT NULL,
                    tomb INTEGER NOT NULL DEFAULT 0,
                    attributes BLOB NOT NULL,
                    data BLOB,
                    tags BLOB NOT NULL DEFAULT x''
                );
                CREATE UNIQUE INDEX items_primary_key ON items(pk) WHERE tomb = 0;
                CREATE INDEX items_tombstones ON items(pk) WHERE tomb = 1;
                CREATE TABLE tags(
                    tag BLOB NOT NULL,
                    item INTEGER NOT NULL,
                    PRIMARY KEY(tag, item)
                ) WITHOUT ROWID;
                \(syncJournalSchema)
                PRAGMA user_version = \(formatVersion);
                """)
    }

    static func configuration(busyTimeout: TimeInterval, readonly: Bool = false) -> Configuration {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.readonly = readonly
        configuration.label = "keychain"
        configuration.publicStatementArguments = false
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "PRAGMA journal_size_limit = \(keychainLogSizeLimit)")
        }
        return configuration
    }

    /// Checks the first 100 bytes of a file without letting SQLite touch it.
    static func validateHeader(of path: String) throws {
        let header = try SecureFileSystem.readFile(path, limit: 100).prefix(100)
        guard header.count == 100, header.starts(with: Data("SQLite format 3\0".utf8)) else {
            throw KeychainError.invalidKeychain("the file is not a keychain")
        }
        func int32(at offset: Int) -> Int32 {
            let bytes = header.dropFirst(offset).prefix(4)
            return Int32(bitPattern: bytes.reduce(0) { $0 << 8 | UInt32($1) })
        }
        guard int32(at: 68) == applicationID else {
            throw KeychainError.invalidKeychain("the file is an SQLite database, not a keychain")
        }
        try checkVersion(Int(int32(at: 60)))
        // SQLite reads missing pages as zeros: compare the size the header records with the file's.
        let pageSize = sqlitePageSize(header: header)
        let pageCount = Int(UInt32(bitPattern: int32(at: 28)))
        let sizeIsValid = int32(at: 92) == int32(at: 24) && pageCount > 0
        let fileSize = try SecureFileSystem.size(of: path)
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0, fileSize % pageSize == 0 else {
            throw KeychainError.invalidKeychain("the keychain file is truncated or malformed")
        }
        // A checkpoint writes the header's new size on page 1 before the file has grown to it;
        // until the checkpoint ends (or, when a process was killed during it, until SQLite
        // replays the log on open) the pages are still in the write-ahead log. The file's own
        // size proves nothing then. When the log has gone meanwhile (the last connection of
        // another process closed it after its checkpoint), the file has its final size: read it
        // again.
        if sizeIsValid, fileSize < pageCount * pageSize,
            !hasWriteAheadLog(path, pageSize: pageSize, pageCount: pageCount),
            try SecureFileSystem.size(of: path) < pageCount * pageSize
        {
            throw KeychainError.invalidKeychain("the keychain file is truncated or malformed")
        }
    }

    /// Whether the write-ahead log next to the file holds a committed database of at least
    /// `pageCount` pages: SQLite's header for this page size, and a commit frame with the
    /// header's salts that records such a size. (SQLite checks the frames' checksums when it
    /// replays them; a log that fails them leaves pages missing, which reads then report.)
    private static func hasWriteAheadLog(_ path: String, pageSize: Int, pageCount: Int) -> Bool {
        let found = try? SecureFileSystem.withContentsIfPresent(of: path + "-wal", limit: 1 << 30) { bytes in
            guard bytes.count >= 32 else { return false }
            func word(_ offset: Int) -> UInt32 {
                (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(bytes[offset + $1]) }
            }
            // Magic number (either checksum byte order), format version 3007000, page size.
            guard word(0) == 0x377F_0682 || word(0) == 0x377F_0683, word(4) == 3_007_000, Int(word(8)) == pageSize
            else { return false }
            let frameSize = 24 + pageSize
            var offset = 32
            while offset + frameSize <= bytes.count {
                if word(offset + 8) == word(16), word(offset + 12) == word(20), Int(word(offset + 4)) >= pageCount {
                    return true
                }
                offset += frameSize
            }
            return false
        }
        return found == true
    }

    /// Checks, through a read-only connection that cannot change the file, that the tables and
    /// the header a keychain needs are there.
    ///
    /// Opening a WAL-mode file, even read-only, makes SQLite create its `-wal` and `-shm` files;
    /// when the file is refused, the ones this check created are removed again, so a refused
    /// file leaves nothing behind.
    static func validateSchema(of path: String) throws {
        try inspect(path) { configuration in
            try checkSchema(of: path, configuration: configuration)
        }
    }

    /// Runs `body` with a read-only configuration for `path`; the SQLite files that reading
    /// created beside it are removed when `body` fails.
    private static func inspect<T>(_ path: String, _ body: (Configuration) throws -> T) throws -> T {
        var configuration = configuration(busyTimeout: 5, readonly: true)
        configuration.prepareDatabase { _ in }
        let sidecars = ["-wal", "-shm"].map { path + $0 }.filter { !FileManager.default.fileExists(atPath: $0) }
        func removeSidecars() {
            // The -shm file only indexes the -wal file; a -wal file the check created is empty.
            for sidecar in sidecars where sidecar.hasSuffix("-shm") || (try? SecureFileSystem.size(of: sidecar)) == 0 {
                SecureFileSystem.remove(sidecar)
            }
        }
        do {
            return try body(configuration)
        } catch {
            removeSidecars()
            throw error
        }
    }

    /// The keychains in `directory` that have no password (so need their device key to open),
    /// by path. Files that are not keychains, or cannot be read now, are left out.
    static func passwordlessKeychains(in directory: String) -> [String] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return entries.sorted().compactMap { entry -> String? in
            let path = directory + "/" + entry
            guard !entry.hasPrefix("."), !["-wal", "-shm", "-journal"].contains(where: entry.hasSuffix),
                (try? SecureFileSystem.existingFile(path)) == true, (try? validateHeader(of: path)) != nil
            else { return nil }
            let hasPassword = try? inspect(path) { configuration in
                let queue = try DatabaseQueue(path: path, configuration: configuration)
                defer { try? queue.close() }
                return try queue.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM meta WHERE name = 'kdf'") } != 0
            }
            return hasPassword == false ? path : nil
        }
    }

    /// Where SQLite reads a keychain that cannot be written: the file itself, or, on a read-only
    /// file system without a log beside it (where SQLite cannot create its `-shm` index), the
    /// file opened as immutable.
    static func readOnlyLocation(of path: String) -> String {
        guard SecureFileSystem.isReadOnly(path), !FileManager.default.fileExists(atPath: path + "-wal") else {
            return path
        }
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#")
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    private static func checkSchema(of path: String, configuration: Configuration) throws {
        let queue = try schemaChecked {
            try DatabaseQueue(path: readOnlyLocation(of: path), configuration: configuration)
        }
        try? queue.close()
    }

    /// Opens a keychain on one read-write connection, checked as ``validateSchema(of:)`` checks
    /// it but without a connection of its own: what a short-lived process that makes a few
    /// calls opens (see ``KeychainModel/KeychainConfiguration/concurrentReads``). Nothing but the SQLite
    /// settings of the connection is written before the check, and a refused file is left as
    /// it was found.
    static func openSingleConnection(at path: String, busyTimeout: TimeInterval) throws -> DatabaseQueue {
        try inspect(path) { _ in
            try schemaChecked {
                try DatabaseQueue(path: path, configuration: configuration(busyTimeout: busyTimeout))
            }
        }
    }

    /// The connection `open` makes, once it shows the tables and the header a keychain needs.
    private static func schemaChecked(_ open: () throws -> DatabaseQueue) throws -> DatabaseQueue {
        do {
            let queue = try open()
            do {
                let valid = try queue.read { db -> Bool in
                    let tables = Set(
                        try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
                    guard tables.isSuperset(of: ["meta", "items", "tags"]) else { return false }
                    return try Int.fetchOne(db, sql: "SELECT count(*) FROM meta WHERE name = 'id'") == 1
                }
                guard valid else { throw KeychainError.invalidKeychain("the file is not a keychain") }
            } catch {
                try? queue.close()
                throw error
            }
            return queue
        } catch let error as KeychainError {
            throw error
        } catch let error as DatabaseError
            where [
                .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_IOERR,
                .SQLITE_NOMEM, .SQLITE_FULL,
            ]
            .contains(error.resultCode)
        {
            // The file could not be read now; that says nothing about what it holds.
            throw map(error)
        } catch {
            throw KeychainError.invalidKeychain("the file is not a keychain")
        }
    }

    static func checkVersion(_ version: Int) throws {
        guard version >= 1 else {
            throw KeychainError.invalidKeychain("the keychain file has no format version")
        }
        guard version <= formatVersion else {
            throw KeychainError(
                .wrongVersion, "the keychain uses format \(version); this build reads up to \(formatVersion)")
        }
    }

    /// Upgrades an older file in one transaction.
    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        try checkVersion(version)
        guard version < formatVersion else { return }
        for step in migrations[(version - 1)...] { try step(db) }
        try db.execute(sql: "PRAGMA user_version = \(formatVersion)")
    }

    // MARK: Meta

    static func meta(_ db: Database) throws -> [String: Data] {
        var values: [String: Data] = [:]
        try db.forEachRow("SELECT name, value FROM meta", []) { row in
            guard let name = row.text(0), let value = row.blob(1) else {
                throw KeychainError.decode("malformed keychain header")
            }
            values[name] = value
        }
        return values
    }

    static func setMeta(_ db: Database, _ name: String, _ value: Data) throws {
        try db.execute(
            sql: "INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", arguments: [name, value])
    }

    // MARK: Errors

    /// The single place where SQLite failures become keychain errors: the status codes Apple's
    /// callers see for them (`osstatus_for_s3e` and `SecErrorGetOSStatus`, `OSX/sec/Security/SecItem.m`).
    static func map(_ error: any Error) -> KeychainError {
        if let error = error as? KeychainError { return error }
        guard let error = error as? DatabaseError else {
            return KeychainError(.internalComponent, "unexpected failure")
        }
        let message = "SQLite error \(error.extendedResultCode.rawValue)"
        switch error.resultCode {
        case .SQLITE_CONSTRAINT: return KeychainError(.duplicateItem, message)
        case .SQLITE_READONLY:
            return KeychainError(
                .readOnly, "the keychain cannot be written (a read-only file or file system; \(message))",
                isSetupProblem: true)
        case .SQLITE_NOMEM: return KeychainError(.allocate, message)
        case .SQLITE_IOERR: return KeychainError(.io, message)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return KeychainError(.decode, message)
        case .SQLITE_FULL:
            return KeychainError(.diskFull, "the disk is full; nothing was written (\(message))", isSetupProblem: true)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return KeychainError(
                .databaseLocked,
                "another process holds the keychain for writing and did not let go in time (\(message))",
                isSetupProblem: true)
        case .SQLITE_CANTOPEN, .SQLITE_PERM:
            return KeychainError(
                .io, "the keychain or the files SQLite keeps beside it cannot be opened (\(message))",
                isSetupProblem: true)
        case .SQLITE_INTERNAL: return KeychainError(.internalComponent, message)
        default: return KeychainError(.notAvailable, message)
        }
    }
}

/// The current row of a statement being stepped, read by column index through SQLite's C
/// API: no row object, no column-name table. Values are read by their storage class and
/// never converted, so a value of the wrong type reads as `nil`.
package struct RawRow {
    fileprivate let statement: SQLiteStatement

    func integer(_ index: Int32) -> Int64? {
        sqlite3_column_type(statement, index) == SQLITE_INTEGER ? sqlite3_column_int64(statement, index) : nil
    }

    /// Calls `body` with a blob column's bytes in place (valid only during the call), or
    /// returns `nil` when the column is not a blob.
    package func withBlob<T>(_ index: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T? {
        guard sqlite3_column_type(statement, index) == SQLITE_BLOB else { return nil }
        let bytes = sqlite3_column_blob(statement, index)
        let count = Int(sqlite3_column_bytes(statement, index))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? bytes : nil, count: count))
    }

    func blob(_ index: Int32) -> Data? { withBlob(index) { Data($0) } }

    func text(_ index: Int32) -> String? {
        guard sqlite3_column_type(statement, index) == SQLITE_TEXT,
            let bytes = sqlite3_column_text(statement, index)
        else { return nil }
        return String(cString: bytes)
    }

    func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, index) == SQLITE_NULL }
}

/// Hot statements run through SQLite's C API on GRDB's cached statements: binding a few
/// values and stepping directly costs a fraction of GRDB's generic argument and
/// observation machinery, which the engine does not use. Everything else goes through GRDB.
extension Database {
    /// Runs a statement that returns no rows (an insert, update or delete).
    /// - Throws: `DatabaseError` with SQLite's (extended) result code.
    func run(_ sql: String, _ values: [DatabaseValue]) throws {
        try forEachRow(sql, values) { _ in }
    }

    /// Calls `body` with each result row of a statement; the statement is reset afterwards,
    /// even when `body` throws.
    package func forEachRow(_ sql: String, _ values: [DatabaseValue], _ body: (RawRow) throws -> Void) throws {
        let cached = try cachedStatement(sql: sql)
        try withExtendedLifetime(cached) { try Self.step(cached.sqliteStatement, values, connection: self, body) }
    }

    private static func step(
        _ statement: SQLiteStatement, _ values: [DatabaseValue], connection db: Database,
        _ body: (RawRow) throws -> Void
    ) throws {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        sqlite3_reset(statement)
        for (index, value) in values.enumerated() {
            try db.check(bind(value, to: statement, at: Int32(index + 1)))
        }
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { return try db.check(code) }
            try body(RawRow(statement: statement))
        }
    }

    private static func bind(_ value: DatabaseValue, to statement: SQLiteStatement, at position: Int32) -> Int32 {
        switch value.storage {
        case .null:
            return sqlite3_bind_null(statement, position)
        case .int64(let number):
            return sqlite3_bind_int64(statement, position, number)
        case .double(let number):
            return sqlite3_bind_double(statement, position, number)
        case .string(let text):
            return sqlite3_bind_text(statement, position, text, -1, transient)
        case .blob(let bytes):
            // A NULL pointer would bind NULL, not an empty blob.
            guard !bytes.isEmpty else { return sqlite3_bind_zeroblob(statement, position, 0) }
            return bytes.withUnsafeBytes {
                sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient)
            }
        }
    }

    /// SQLite copies bound values before the call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func check(_ code: Int32) throws {
        guard code != SQLITE_OK else { return }
        throw DatabaseError(
            resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(sqliteConnection)))
    }
}

/// Configures the connection that writes a keychain (a pool keeps one for its lifetime).
///
/// - `synchronous = FULL`: GRDB sets NORMAL on a pool's writer, and every acknowledged write
///   must survive power loss.
/// - A page cache of ``keychainWriterCacheKiB`` KiB (SQLite's default is 2,000 KiB): an add
///   changes a random leaf of the primary-key index and of the tag index for each of its tag
///   rows (keyed hashes scatter), so once those indexes outgrow the cache nearly every add
///   read pages back from the file (2.25 `pread` calls per add at 100,000 items, none with
///   this cache). Pages are cached as they are used, so a keychain that writes little holds
///   little; readers keep SQLite's default.
package func configureKeychainWriter(_ db: Database) throws {
    try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA cache_size = -\(keychainWriterCacheKiB)")
}

/// The size, in bytes, a keychain's write-ahead log is cut back to whenever SQLite starts it
/// again: just above the 1,000 pages after which it is folded into the file (SQLite's default
/// automatic checkpoint), so the log keeps its steady size and gives back anything beyond it.
package let keychainLogSizeLimit = 4 << 20

/// The size, in bytes, past which ``KeychainDatabase/close()`` folds a keychain's write-ahead
/// log into the file and empties it: a few dozen commits of short-lived processes.
package let keychainLogCloseLimit = 256 << 10

/// The page cache of a keychain's writer connection, in KiB: the index pages of about
/// 150,000 items.
package let keychainWriterCacheKiB = 16_384

/// The page size an SQLite database header records: the big-endian 16-bit value at byte 16,
/// where 1 stands for 65,536. `header` holds at least the file's first 18 bytes.
package func sqlitePageSize(header: Data) -> Int {
    let raw = Int(header[header.startIndex + 16]) << 8 | Int(header[header.startIndex + 17])
    return raw == 1 ? 65_536 : raw
}
