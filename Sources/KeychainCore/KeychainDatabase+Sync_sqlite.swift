import Crypto
import Foundation
import GRDB

// The engine's side of sync (the KeychainSync module does the rest): every write to a
// synchronizable item records its row in `sync_journal`, in the same SQLite transaction as the
// write, so a process killed at any point cannot lose a change that was acknowledged; and
// changes that arrive from other machines are applied without being journaled again.

/// A synchronizable item's row changed since it was last pushed.
package struct SyncJournalEntry: Sendable {
    /// The item's row.
    package var row: Int64
    /// When it changed, on the keychain's hybrid logical clock.
    package var clock: UInt64
    /// The row now, with its secret: `nil` when it is gone; a tombstone carries
    /// ``KeychainModel/AttributeName/tombstone``. Also `nil` when the row's protection class is locked (see
    /// ``isLocked``).
    package var item: Item?
    /// Whether the row could not be read because its protection class is locked.
    package var isLocked: Bool
}

/// A local row that holds a primary key, found while applying a change from another machine.
package struct SyncLocalRow: Sendable {
    /// The row.
    package var row: Int64
    /// The item (with its secret; a tombstone carries ``KeychainModel/AttributeName/tombstone``).
    package var item: Item
    /// The clock of its journal entry, when a change to it is waiting to be pushed.
    package var pendingClock: UInt64?
}

extension KeychainDatabase {
    /// Whether writes to synchronizable items are journaled (sync is set up for this keychain).
    package func isSyncJournalOn() throws -> Bool {
        try Self.run { try writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sync_clock") == 1 } }
    }

    /// Turns the journal on and records every synchronizable row (live or deleted) in it, so the
    /// first push sends them all. Already on: nothing changes.
    package func startSyncJournal() throws {
        try withWriteTransaction { db, state in
            guard try Int.fetchOne(db, sql: "SELECT count(*) FROM sync_clock") == 0 else { return }
            try db.run(
                "INSERT INTO sync_clock(id, hlc) VALUES (0, ?)", [Int64(bitPattern: Self.wallClock()).databaseValue])
            // Only decryption tells which rows are synchronizable (the `sync` column is a keyed
            // tag); the tags of the value 1 in this keychain's index key pick them out.
            let tagger = try Self.tagger(state)
            let synced = tagger.columnTag(.synchronizable, .number(1))
            try db.run(
                "INSERT INTO sync_journal(item, hlc) SELECT id, (SELECT hlc FROM sync_clock) FROM items WHERE sync = ?",
                [synced.databaseValue])
        }
    }

    /// Turns the journal off and empties it.
    package func stopSyncJournal() throws {
        try withWriteTransaction { db, _ in
            try db.run("DELETE FROM sync_clock", [])
            try db.run("DELETE FROM sync_journal", [])
        }
    }

    /// How many changes wait to be pushed (a cheap count: nothing is decrypted).
    package func pendingSyncChanges() throws -> Int {
        try Self.run { try writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM sync_journal") ?? 0 } }
    }

    /// The oldest journal entries, up to `limit`, with their rows read (secrets included).
    package func syncJournal(limit: Int = 1000) throws -> [SyncJournalEntry] {
        try keys.read { state in
            let codec = RowCodec(database: self, state: state, tagger: try Self.tagger(state))
            return try Self.run {
                try writer.read { db in
                    var pending: [(Int64, UInt64)] = []
                    try db.forEachRow(
                        "SELECT item, hlc FROM sync_journal ORDER BY hlc LIMIT ?", [Int64(limit).databaseValue]
                    ) { row in
                        if let item = row.integer(0), let clock = row.integer(1) {
                            pending.append((item, UInt64(bitPattern: clock)))
                        }
                    }
                    return try pending.map { row, clock in
                        var entry = SyncJournalEntry(row: row, clock: clock, item: nil, isLocked: false)
                        guard let stored = try storedRow(row, db: db) else { return entry }
                        do {
                            entry.item = try Self.item(stored, codec: codec)
                        } catch let error as KeychainError where error.code == .interactionNotAllowed {
                            entry.isLocked = true
                        }
                        return entry
                    }
                }
            }
        }
    }

    /// Runs `body` in one write transaction with what applying remote changes needs; the sync
    /// layer's own tables are written through ``SyncTransaction/database`` in the same
    /// transaction, so a change and the record of having applied it land together.
    ///
    /// An error `body` throws of its own (the sync layer's `SyncError`) reaches the caller as
    /// it was, after the transaction is rolled back; only the engine's errors are mapped.
    package func withSyncTransaction<T>(_ body: (SyncTransaction) throws -> T) throws -> T {
        var ownError: (any Error)?
        do {
            return try withWriteTransaction { db, state in
                let codec = RowCodec(database: self, state: state, tagger: try Self.tagger(state))
                return try Self.noting(&ownError) {
                    try body(SyncTransaction(keychain: self, database: db, codec: codec))
                }
            }
        } catch {
            throw ownError ?? error
        }
    }

    /// Reads the sync layer's own tables (in a read transaction: one consistent snapshot). An
    /// error `body` throws of its own reaches the caller as it was.
    package func readSyncTables<T>(_ body: (Database) throws -> T) throws -> T {
        var ownError: (any Error)?
        do {
            return try Self.run { try writer.read { db in try Self.noting(&ownError) { try body(db) } } }
        } catch {
            throw ownError ?? error
        }
    }

    /// Runs `body`, keeping in `ownError` an error it throws other than SQLite's, so that the
    /// caller rethrows it as it was instead of as the engine's mapping of it
    /// (`errSecInternalComponent` for an error the engine does not know).
    private static func noting<T>(_ ownError: inout (any Error)?, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            throw error
        } catch {
            ownError = error
            throw error
        }
    }

    /// Records a change to a synchronizable row, when the journal is on: the clock moves past
    /// both the wall clock and every reading it has seen (its own and other machines').
    func journalSyncChange(row: Int64, db: Database) throws {
        try db.run(
            "UPDATE sync_clock SET hlc = max(hlc + 1, ?)", [Int64(bitPattern: Self.wallClock()).databaseValue])
        guard db.changesCount == 1 else { return }
        try db.run(
            "INSERT OR REPLACE INTO sync_journal(item, hlc) SELECT ?, hlc FROM sync_clock", [row.databaseValue])
    }

    /// The wall clock as a hybrid logical clock reading: milliseconds in the high 48 bits.
    static func wallClock() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000)) << 16
    }

    fileprivate func storedRow(_ row: Int64, db: Database) throws -> StoredRow? {
        try StoredRow.fetchAll(
            db, "SELECT \(StoredRow.columns(includeData: true)) FROM items i WHERE i.id = ?", [row.databaseValue]
        ).first
    }

    fileprivate static func item(_ stored: StoredRow, codec: RowCodec) throws -> Item {
        let (attributes, data) = try codec.unseal(stored)
        var item = Item(class: stored.itemClass, attributes: attributes, data: data)
        item.persistentID = UUID(bytes: stored.uuid)
        if stored.tombstone { item.attributes[.tombstone] = .number(1) }
        return item
    }
}

/// A write transaction that applies changes from other machines (see
/// ``KeychainDatabase/withSyncTransaction(_:)``). Nothing written through it is journaled.
package struct SyncTransaction {
    let keychain: KeychainDatabase
    /// The transaction's connection, for the sync layer's own tables.
    package let database: Database
    let codec: RowCodec

    /// The journal clock's reading.
    package func clock() throws -> UInt64 {
        UInt64(bitPattern: try Int64.fetchOne(database, sql: "SELECT hlc FROM sync_clock") ?? 0)
    }

    /// Moves the journal clock past a reading seen on another machine.
    package func observe(clock: UInt64) throws {
        try database.run(
            "UPDATE sync_clock SET hlc = max(hlc, ?)", [Int64(bitPattern: min(clock, UInt64(Int64.max))).databaseValue])
    }

    /// Removes a journal entry once its change is pushed, unless the row changed again since.
    package func removeJournalEntry(row: Int64, clock: UInt64) throws {
        try database.run(
            "DELETE FROM sync_journal WHERE item = ? AND hlc = ?",
            [row.databaseValue, Int64(bitPattern: clock).databaseValue])
    }

    /// Journals a row again at `clock`, unless a change to it already waits to be pushed (which
    /// is newer): the server lost the row's last pushed version, and this machine writes it back.
    package func rejournal(row: Int64, clock: UInt64) throws {
        try database.run(
            "INSERT OR IGNORE INTO sync_journal(item, hlc) VALUES (?, ?)",
            [row.databaseValue, Int64(bitPattern: clock).databaseValue])
    }

    /// Removes a row's journal entry, whatever its clock (its change lost to another machine's).
    package func dropJournalEntry(row: Int64) throws {
        try database.run("DELETE FROM sync_journal WHERE item = ?", [row.databaseValue])
    }

    /// The row with the primary key of `item` (live or a tombstone), with its pending clock.
    package func row(withPrimaryKeyOf item: Item) throws -> SyncLocalRow? {
        let schema = try KeychainDatabase.schema(forWriting: item.itemClass)
        let primaryKey = codec.tagger.primaryKeyTag(schema, item.attributes)
        // The live row, else a tombstone.
        guard
            let stored = try StoredRow.withPrimaryKey(primaryKey, tombstone: false, database)
                ?? StoredRow.withPrimaryKey(primaryKey, tombstone: true, database)
        else { return nil }
        let pending = try Int64.fetchOne(
            database, sql: "SELECT hlc FROM sync_journal WHERE item = ?", arguments: [stored.id])
        return SyncLocalRow(
            row: stored.id, item: try KeychainDatabase.item(stored, codec: codec),
            pendingClock: pending.map { UInt64(bitPattern: $0) })
    }

    /// The clock of a row's journal entry, when a change to it waits to be pushed.
    package func pendingClock(row: Int64) throws -> UInt64? {
        try Int64.fetchOne(database, sql: "SELECT hlc FROM sync_journal WHERE item = ?", arguments: [row])
            .map { UInt64(bitPattern: $0) }
    }

    /// Seals a secret of the sync layer, as ``KeychainDatabase/sealSyncSecret(_:name:)`` does,
    /// inside the transaction.
    package func sealSyncSecret(_ secret: Data, name: String) throws -> Data {
        try Sealing.seal(
            secret, key: try KeychainDatabase.syncSecretKey(codec.state), context: keychain.syncSecretContext(name))
    }

    /// The row `row` now, or `nil` when it is gone.
    package func item(row: Int64) throws -> Item? {
        try keychain.storedRow(row, db: database).map { try KeychainDatabase.item($0, codec: codec) }
    }

    /// Stores another machine's version of an item: replaces the local row with its primary
    /// key (live or tombstone), or adds it. The item comes whole (dates, group, accessibility),
    /// as its author's engine stored it; its attributes are checked as an add checks them.
    /// - Returns: The row.
    package func applyRemote(_ item: Item) throws -> Int64 {
        let schema = try KeychainDatabase.schema(forWriting: item.itemClass)
        var attributes = try keychain.normalize(item.attributes, schema: schema, ignoring: [.tombstone])
        try keychain.checkSize(data: item.data)
        guard attributes[.accessGroup]?.stringValue != nil,
            attributes[.accessible]?.stringValue.flatMap(Accessibility.init(rawValue:)) != nil
        else { throw KeychainError.parameter("a synced item needs an access group and an accessibility") }
        for spec in schema.primaryKeySpecs where spec.storesDefault && attributes[spec.name] == nil {
            attributes[spec.name] = spec.defaultValue
        }
        let incoming = Item(class: item.itemClass, attributes: attributes, data: item.data)
        if let local = try row(withPrimaryKeyOf: incoming), let stored = try keychain.storedRow(local.row, db: database)
        {
            var old = local.item.attributes
            old[.tombstone] = nil
            try keychain.replace(stored, old: old, with: incoming, db: database, codec: codec, journal: false)
            return local.row
        }
        let identity = try keychain.insert(incoming, db: database, codec: codec, journal: false)
        guard let row = PersistentIdentity.rowID(of: identity) else {
            throw KeychainError(.internalComponent, "an added row has no identity")
        }
        return row
    }

    /// Deletes a row because another machine deleted its item: it becomes a tombstone (its row
    /// and primary key kept, as a local delete keeps them).
    package func applyRemoteDeletion(row: Int64) throws {
        guard let stored = try keychain.storedRow(row, db: database), !stored.tombstone else { return }
        let item = try KeychainDatabase.item(stored, codec: codec)
        let tomb = try codec.seal(
            itemClass: item.itemClass, uuid: stored.uuid, attributes: item.attributes, data: nil, tombstone: true,
            primaryKeyTag: stored.primaryKeyTag)
        try database.run(
            "UPDATE items SET tomb = 1, attributes = ?, data = NULL WHERE id = ?",
            [tomb.attributes.databaseValue, row.databaseValue])
    }
}

extension KeychainDatabase {
    /// Seals a secret of the sync layer (device keys, zone keys, the server login) under this
    /// keychain's class key for after-first-unlock, this-device-only items: it never leaves the
    /// machine and opens only in this keychain, under the same `name`.
    package func sealSyncSecret(_ secret: Data, name: String) throws -> Data {
        try keys.read { state in
            try Sealing.seal(secret, key: try Self.syncSecretKey(state), context: syncSecretContext(name))
        }
    }

    /// Opens what ``sealSyncSecret(_:name:)`` sealed under `name`.
    /// - Throws: `.decode` when it fails authentication, `.interactionNotAllowed` when locked.
    package func openSyncSecret(_ sealed: Data, name: String) throws -> Data {
        try keys.read { state in
            try Sealing.open(sealed, key: try Self.syncSecretKey(state), context: syncSecretContext(name))
        }
    }

    fileprivate static func syncSecretKey(_ state: KeyRing.State) throws -> SymmetricKey {
        guard let key = state.classKeys[Accessibility.afterFirstUnlockThisDeviceOnly.protectionClass] else {
            throw KeychainError(.interactionNotAllowed, "the keychain is locked")
        }
        return key
    }

    fileprivate func syncSecretContext(_ name: String) -> [UInt8] {
        var context = Array("keychain-linux sync secret v1".utf8)
        context.appendLengthPrefixed(keychainID)
        context.appendLengthPrefixed(name.utf8)
        return context
    }
}

extension Item {
    /// The item as a sync record carries it: its class, every attribute (the tombstone flag
    /// aside) and its secret.
    package var syncPayload: Data {
        var out: [UInt8] = [1]
        out.appendLengthPrefixed(itemClass.rawValue.utf8)
        var attributes = attributes
        attributes[.tombstone] = nil
        out.appendLengthPrefixed(AttributeCoding.encode(attributes))
        if let data {
            out.append(1)
            out.appendLengthPrefixed(data)
        } else {
            out.append(0)
        }
        return Data(out)
    }

    /// Reads ``syncPayload``.
    /// - Throws: `.decode` when the bytes are not a payload.
    package init(syncPayload payload: Data) throws {
        let decoded: (ItemClass, Data, Data?) = try payload.withUnsafeBytes { raw in
            var reader = BufferReader(raw)
            guard reader.readUInt8() == 1, let classBytes = reader.readLengthPrefixed(),
                let itemClass = UTF8Bytes.string(validating: classBytes).flatMap(ItemClass.init(rawValue:)),
                let attributes = reader.readLengthPrefixed(), let hasData = reader.readUInt8()
            else { throw KeychainError.decode("a sync payload is malformed") }
            var data: Data?
            if hasData == 1 {
                guard let bytes = reader.readLengthPrefixed() else {
                    throw KeychainError.decode("a sync payload is malformed")
                }
                data = Data(bytes)
            }
            guard reader.isAtEnd else { throw KeychainError.decode("a sync payload has trailing bytes") }
            return (itemClass, Data(attributes), data)
        }
        self.init(class: decoded.0, attributes: try AttributeCoding.decode(decoded.1), data: decoded.2)
    }

    /// The item's primary key as sync identifies a record by it: the primary-key attributes
    /// the item has, each value in the engine's canonical encoding, the synchronizable flag aside
    /// (every synced item has the same).
    package var syncPrimaryKey: [(name: String, value: Data)] {
        ItemSchema.of(itemClass).primaryKey.compactMap { name in
            guard name != .synchronizable, let value = attributes[name] else { return nil }
            return (name.rawValue, Data(AttributeCoding.encode([name: value])))
        }
    }

    /// Whether the item belongs in the sync set: synchronizable, not deleted, and not bound to
    /// this device.
    package var belongsInSyncSet: Bool {
        guard isSynchronizable, attributes[.tombstone] == nil else { return false }
        return accessibility.map { !$0.isThisDeviceOnly } ?? true
    }
}
