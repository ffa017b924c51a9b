import Crypto
import Foundation
import GRDB

/// A row of the `items` table as read from disk.
///
/// Columns are read by their storage class, never converted: a value of the wrong type (a file
/// edited by hand) is `.decode`, not a trap.
struct StoredRow {
    var id: Int64
    var uuid: Data
    var itemClass: ItemClass
    var protection: ProtectionClass
    var groupTag: Data
    var syncTag: Data
    var primaryKeyTag: Data
    var tombstone: Bool
    var attributes: Data
    /// Whether the row has a secret (even when it was not fetched).
    var hasData: Bool
    var data: Data?

    init(_ row: Row) throws {
        guard let id = Self.integer(row, "id"), let uuid = Self.blob(row, "uuid"), uuid.count == 16,
            let itemClass = Self.text(row, "class").flatMap(ItemClass.init(rawValue:)),
            let protection = Self.integer(row, "protection").flatMap({ UInt8(exactly: $0) })
                .flatMap(ProtectionClass.init(rawValue:)),
            let groupTag = Self.blob(row, "agrp"), let syncTag = Self.blob(row, "sync"),
            let primaryKeyTag = Self.blob(row, "pk"), let tomb = Self.integer(row, "tomb"),
            let attributes = Self.blob(row, "attributes"), let hasData = Self.integer(row, "hasdata")
        else { throw KeychainError.decode("a stored item is malformed") }
        let data = Self.blob(row, "data")
        guard (row["data"] as DatabaseValue).isNull || data != nil else {
            throw KeychainError.decode("a stored item is malformed")
        }
        self.id = id
        self.uuid = uuid
        self.itemClass = itemClass
        self.protection = protection
        self.groupTag = groupTag
        self.syncTag = syncTag
        self.primaryKeyTag = primaryKeyTag
        self.tombstone = tomb != 0
        self.attributes = attributes
        self.hasData = hasData != 0
        self.data = data
    }

    static func integer(_ row: Row, _ column: String) -> Int64? {
        if case .int64(let value) = (row[column] as DatabaseValue).storage { return value }
        return nil
    }

    static func blob(_ row: Row, _ column: String) -> Data? {
        if case .blob(let value) = (row[column] as DatabaseValue).storage { return value }
        return nil
    }

    static func text(_ row: Row, _ column: String) -> String? {
        if case .string(let value) = (row[column] as DatabaseValue).storage { return value }
        return nil
    }
}

/// A row ready to be written: sealed blobs and keyed tags.
struct SealedRow {
    var uuid: Data
    var itemClass: ItemClass
    var protection: ProtectionClass
    var groupTag: Data
    var syncTag: Data
    var primaryKeyTag: Data
    var attributes: Data
    var data: Data?
}

/// A prepared search: which rows to fetch, and what to verify once they are decrypted.
struct QueryPlan {
    var classes: [ItemClass]
    var filters: Attributes
    var groups: [String]?
    var synchronizable: Int64?
    var persistentID: UUID?
    var limit: Int?
    var includesTombstones: Bool

    /// Attributes that get a keyed tag in the `tags` table. The access group and the
    /// synchronizable flag have columns of their own; access control and housekeeping
    /// values are never matched.
    static func isIndexed(_ name: AttributeName) -> Bool {
        ![.accessGroup, .synchronizable, .accessControl, .multiUser, .tombstone].contains(name)
    }

    /// Attributes usually unique to few items come first, so the first tag drives the join.
    private static let selective: [AttributeName] = [
        "acct", "srvr", "klbl", "atag", "slnr", "issr", "skid", "subj", "pkhh", "labl", "gena", "path",
        "sdmn", "svce",
    ]

    private func orderedFilters(_ itemClass: ItemClass) -> [(AttributeSpec, AttributeValue)] {
        let schema = ItemSchema.of(itemClass)
        return filters.compactMap { name, value in
            guard Self.isIndexed(name), let spec = schema.spec(for: name) else { return nil }
            return (spec, value)
        }.sorted { a, b in
            let ra = Self.selective.firstIndex(of: a.0.name) ?? Self.selective.count
            let rb = Self.selective.firstIndex(of: b.0.name) ?? Self.selective.count
            return ra != rb ? ra < rb : a.0.name < b.0.name
        }
    }

    func fetch(_ db: Database, tagger: IndexTagger, includeData: Bool) throws -> [StoredRow] {
        var rows: [StoredRow] = []
        for itemClass in classes {
            rows += try fetch(db, itemClass: itemClass, tagger: tagger, includeData: includeData)
            if let limit, rows.count >= limit { break }
        }
        if let limit, rows.count > limit { rows.removeLast(rows.count - limit) }
        return rows
    }

    private func fetch(
        _ db: Database, itemClass: ItemClass, tagger: IndexTagger, includeData: Bool
    ) throws -> [StoredRow] {
        var sql = """
            SELECT i.id, i.uuid, i.class, i.protection, i.agrp, i.sync, i.pk, i.tomb, i.attributes, \
            i.data IS NOT NULL AS hasdata, \(includeData ? "i.data" : "NULL") AS data FROM
            """
        var arguments: [(any DatabaseValueConvertible)?] = []
        let tags = orderedFilters(itemClass).map { tagger.tag(itemClass, $0.0, $0.1) }
        if tags.isEmpty {
            sql += " items i WHERE i.class = ?"
        } else {
            sql += " " + tags.indices.map { "tags t\($0)" }.joined(separator: " CROSS JOIN ")
            sql += " CROSS JOIN items i WHERE t0.tag = ?"
            arguments.append(tags[0])
            for index in tags.indices.dropFirst() {
                sql += " AND t\(index).tag = ? AND t\(index).item = t0.item"
                arguments.append(tags[index])
            }
            sql += " AND i.id = t0.item AND i.class = ?"
        }
        arguments.append(itemClass.rawValue)
        if let persistentID {
            sql += " AND i.uuid = ?"
            arguments.append(RowCodec.bytes(of: persistentID))
        }
        if !includesTombstones { sql += " AND i.tomb = 0" }
        if let groups {
            sql += " AND i.agrp IN (\(groups.map { _ in "?" }.joined(separator: ",")))"
            arguments += groups.map { tagger.columnTag(.accessGroup, .string($0)) }
        }
        if let synchronizable {
            sql += " AND i.sync = ?"
            arguments.append(tagger.columnTag(.synchronizable, .number(synchronizable)))
        }
        sql += " ORDER BY i.id"
        if let limit {
            sql += " LIMIT ?"
            arguments.append(max(0, limit))
        }
        // One statement per query shape, compiled once per connection: compiling it (with
        // GRDB's authorizer) costs more than running the join.
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments))
            .map(StoredRow.init)
    }

    /// Whether decrypted attributes satisfy every filter (they must, unless the index was
    /// tampered with).
    func matches(_ attributes: Attributes, itemClass: ItemClass) -> Bool {
        let schema = ItemSchema.of(itemClass)
        for (name, value) in filters {
            guard let spec = schema.spec(for: name), let stored = attributes[name],
                spec.canonicalBytes(stored) == spec.canonicalBytes(value)
            else { return false }
        }
        return true
    }
}

/// Seals rows for writing and opens rows read back, checking that every column agrees with
/// the sealed contents.
struct RowCodec {
    let database: KeychainDatabase
    let state: KeyRing.State
    let tagger: IndexTagger

    static func bytes(of uuid: UUID) -> Data { withUnsafeBytes(of: uuid.uuid) { Data($0) } }

    static func uuid(_ bytes: Data) -> UUID {
        var value = UUID().uuid
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes.prefix(16)) }
        return UUID(uuid: value)
    }

    func key(for protection: ProtectionClass) throws -> SymmetricKey {
        guard let key = state.classKeys[protection] else {
            throw KeychainError(.interactionNotAllowed, "the item's protection class is locked")
        }
        return key
    }

    /// The associated data that binds a sealed blob to its keychain, row, class, access
    /// group, synchronizable state, primary key and tombstone state.
    private func context(_ field: String, _ row: SealedRow, tombstone: Bool, hasData: Bool) -> [UInt8] {
        var context = Array("keychain-linux item v1".utf8)
        context.reserveCapacity(192)
        context.appendLengthPrefixed(database.keychainID)
        context.appendLengthPrefixed(row.uuid)
        context.appendLengthPrefixed(row.itemClass.rawValue.utf8)
        context.append(row.protection.rawValue)
        context.appendLengthPrefixed(row.groupTag)
        context.appendLengthPrefixed(row.syncTag)
        context.appendLengthPrefixed(row.primaryKeyTag)
        context.append(tombstone ? 1 : 0)
        context.append(hasData ? 1 : 0)
        context.appendLengthPrefixed(field.utf8)
        return context
    }

    func seal(itemClass: ItemClass, uuid: Data, attributes: Attributes, data: Data?, tombstone: Bool) throws
        -> SealedRow
    {
        let schema = ItemSchema.of(itemClass)
        guard let accessibility = attributes[.accessible]?.stringValue.flatMap(Accessibility.init(rawValue:)),
            let group = attributes[.accessGroup]
        else { throw KeychainError.parameter("an item needs an accessibility and an access group") }
        var row = SealedRow(
            uuid: uuid, itemClass: itemClass, protection: accessibility.protectionClass,
            groupTag: tagger.columnTag(.accessGroup, group),
            syncTag: tagger.columnTag(.synchronizable, attributes[.synchronizable] ?? .number(0)),
            primaryKeyTag: tagger.primaryKeyTag(schema, attributes), attributes: Data(), data: nil)
        let key = try key(for: row.protection)
        let hasData = data != nil
        row.attributes = try Sealing.seal(
            AttributeCoding.encode(attributes), key: key,
            context: context("attributes", row, tombstone: tombstone, hasData: hasData))
        if let data {
            row.data = try Sealing.seal(
                data, key: key, context: context("data", row, tombstone: tombstone, hasData: hasData))
        }
        return row
    }

    func open(_ stored: StoredRow, plan: QueryPlan, includeData: Bool) throws -> Item {
        let key = try key(for: stored.protection)
        let row = SealedRow(
            uuid: stored.uuid, itemClass: stored.itemClass, protection: stored.protection,
            groupTag: stored.groupTag, syncTag: stored.syncTag, primaryKeyTag: stored.primaryKeyTag,
            attributes: stored.attributes, data: stored.data)
        let attributes = try AttributeCoding.decode(
            Sealing.open(
                stored.attributes, key: key,
                context: context("attributes", row, tombstone: stored.tombstone, hasData: stored.hasData)))
        let schema = ItemSchema.of(stored.itemClass)
        guard let group = attributes[.accessGroup],
            tagger.columnTag(.accessGroup, group) == stored.groupTag,
            tagger.columnTag(.synchronizable, attributes[.synchronizable] ?? .number(0)) == stored.syncTag,
            tagger.primaryKeyTag(schema, attributes) == stored.primaryKeyTag,
            attributes[.accessible]?.stringValue.flatMap(Accessibility.init(rawValue:))?.protectionClass
                == stored.protection,
            plan.matches(attributes, itemClass: stored.itemClass)
        else { throw KeychainError.decode("a stored item does not match its index") }
        var item = Item(class: stored.itemClass, attributes: attributes)
        item.persistentID = Self.uuid(stored.uuid)
        if includeData, let sealed = stored.data {
            item.data = try Sealing.open(
                sealed, key: key, context: context("data", row, tombstone: stored.tombstone, hasData: true))
        }
        if stored.tombstone { item.attributes[.tombstone] = .number(1) }
        return item
    }
}
