import Foundation
import GRDB

/// The SQLite side of a keychain: file format, schema, connections and error mapping.
///
/// Format version 1. The file is an SQLite database whose `application_id` is `KCHN` and
/// whose `user_version` is the format version; `meta` holds the header (keychain id, key
/// derivation, wrapped keys), `items` one row per item with sealed attributes and data,
/// `tags` the keyed hashes of attribute values that lookups use.
enum Storage {
    static let applicationID: Int32 = 0x4B43_484E  // "KCHN"
    static let formatVersion = 1

    /// Migrations from each older format to the next; index i upgrades version i+1 to i+2.
    static let migrations: [@Sendable (Database) throws -> Void] = []

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
                    uuid BLOB NOT NULL UNIQUE,
                    class TEXT NOT NULL,
                    protection INTEGER NOT NULL,
                    agrp BLOB NOT NULL,
                    sync BLOB NOT NULL,
                    pk BLOB NOT NULL,
                    tomb INTEGER NOT NULL DEFAULT 0,
                    attributes BLOB NOT NULL,
                    data BLOB
                );
                CREATE UNIQUE INDEX items_primary_key ON items(pk) WHERE tomb = 0;
                CREATE INDEX items_class ON items(class, agrp);
                CREATE TABLE tags(
                    tag BLOB NOT NULL,
                    item INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                    PRIMARY KEY(tag, item)
                ) WITHOUT ROWID;
                CREATE INDEX tags_item ON tags(item);
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
        for row in try Row.fetchAll(db, sql: "SELECT name, value FROM meta") {
            guard let name = row["name"] as String?, let value = row["value"] as Data? else {
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

    /// The single place where SQLite failures become keychain errors (spec §2.3).
    static func map(_ error: any Error) -> KeychainError {
        if let error = error as? KeychainError { return error }
        guard let error = error as? DatabaseError else {
            return KeychainError(.internalComponent, "unexpected failure")
        }
        let message = "SQLite error \(error.extendedResultCode.rawValue)"
        switch error.resultCode {
        case .SQLITE_CONSTRAINT: return KeychainError(.duplicateItem, message)
        case .SQLITE_READONLY: return KeychainError(.readOnly, message)
        case .SQLITE_NOMEM: return KeychainError(.allocate, message)
        case .SQLITE_IOERR: return KeychainError(.io, message)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return KeychainError(.decode, message)
        case .SQLITE_FULL: return KeychainError(KeychainError.Code(rawValue: -34), message)
        case .SQLITE_INTERNAL: return KeychainError(.internalComponent, message)
        default: return KeychainError(.notAvailable, message)
        }
    }
}
