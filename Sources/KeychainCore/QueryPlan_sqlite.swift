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

    /// The columns ``init(_:)`` reads, in order, for a `SELECT` from `items` aliased `i`; the
    /// secret is selected only when `includeData` is set.
    static func columns(includeData: Bool) -> String {
        """
        i.id, i.uuid, i.class, i.protection, i.agrp, i.sync, i.pk, i.tomb, i.attributes, \
        i.data IS NOT NULL, \(includeData ? "i.data" : "NULL")
        """
    }

    /// Reads a row selected with ``columns(includeData:)``.
    init(_ row: RawRow) throws {
        guard let id = row.integer(0), let uuid = row.blob(1), uuid.count == 16,
            let itemClass = row.text(2).flatMap(ItemClass.init(rawValue:)),
            let protection = row.integer(3).flatMap({ UInt8(exactly: $0) }).flatMap(ProtectionClass.init(rawValue:)),
            let groupTag = row.blob(4), let syncTag = row.blob(5), let primaryKeyTag = row.blob(6),
            let tomb = row.integer(7), let attributes = row.blob(8), let hasData = row.integer(9)
        else { throw KeychainError.decode("a stored item is malformed") }
        let data = row.blob(10)
        guard data != nil || row.isNull(10) else { throw KeychainError.decode("a stored item is malformed") }
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

    /// The rows a statement selecting ``columns(includeData:)`` returns.
    /// - Parameter malformed: When given, a malformed row is passed to it (with its row id
    ///   when that column can be read) and skipped; otherwise it fails the whole read.
    static func fetchAll(
        _ db: Database, _ sql: String, _ values: [DatabaseValue], malformed: ((Int64?) -> Void)? = nil
    ) throws -> [StoredRow] {
        var rows: [StoredRow] = []
        try db.forEachRow(sql, values) { raw in
            do {
                rows.append(try StoredRow(raw))
            } catch let error as KeychainError where error.code == .decode {
                guard let malformed else { throw error }
                malformed(raw.integer(0))
            }
        }
        return rows
    }

    /// The row with the primary-key tag `primaryKey`: the live one, or with `tombstone` a
    /// tombstone. Each query names `tomb`, so it reads its partial index
    /// (`items_primary_key` or `items_tombstones`); a query on `pk` alone can use neither and
    /// scans every item.
    static func withPrimaryKey(_ primaryKey: Data, tombstone: Bool, _ db: Database) throws -> StoredRow? {
        try fetchAll(
            db, "SELECT \(columns(includeData: true)) FROM items i WHERE i.pk = ? AND i.tomb = \(tombstone ? 1 : 0)",
            [primaryKey.databaseValue]
        ).first
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
    var authenticationUI: ItemQuery.AuthenticationUI = .ignore
    /// ``KeychainModel/ItemQuery/opensApplicationPassword``.
    var opensApplicationPassword = false
    /// Whether the search returns secrets (see ``admits(_:)``).
    var opensSecrets = false
    /// Whether the owner authenticated for this call already (``KeychainDatabase/userVerified``).
    var userVerified = false
    /// What a finger on the reader answered for this call (``KeychainDatabase/fingerAnswer``).
    var fingerAnswer: FingerAnswer?
    /// The public key of the security key touched for this call (``KeychainDatabase/companionAnswer``).
    var companionAnswer: Data?
    /// Whether a token key's private key is what the call opens (a use of the key); `false` for
    /// a caller's lookup, which gets the key's public key and handle, never the private key, and
    /// so asks nothing of the person: as with Apple's Secure Enclave keys, a key's access control
    /// asks when the key is used.
    var revealsTokenKeys = true
    /// Whether the call asks the person nothing whatever the items' access controls say: a
    /// delete (Apple's flag-based access controls allow it unconditionally).
    var asksNothing = false
    /// Who calls, when keychaind serves the call (``KeychainDatabase/callingApplication``):
    /// matched against each item's access list.
    var caller: CallingApplication?
    /// The items the person allowed this call to read or change (``KeychainDatabase/allowedItems``).
    var allowedItems: Set<UUID> = []
    /// The list an update sets when setting it is all the update does: taking applications
    /// off a list needs no trust (``KeychainModel/AccessList/isNarrowed(to:)``).
    var accessListChange: AccessList?
    var hostOrSubdomain: String?

    /// Whether an attribute gets a keyed tag in the `tags` table, so that a query on it is an
    /// index lookup.
    ///
    /// The access group and the synchronizable flag have columns of their own; access control
    /// and housekeeping values are never matched. Dates and the accessibility are not
    /// indexed: every item has them, a query on a date is rare and a query on an
    /// accessibility value selects a large share of the items anyway. A filter on them is
    /// checked after decryption (see ``residualFilters(_:)``); leaving them out saves three
    /// index rows, three keyed hashes and their B-tree pages on every add.
    static func isIndexed(_ spec: AttributeSpec) -> Bool { spec.isIndexed }

    /// The protection class an accessibility filter implies. The `protection` column is
    /// authenticated and not encrypted, so SQL narrows the rows to that class: rows of other
    /// classes are never decrypted (and a locked class the filter excludes is never touched).
    /// `aku` and `akpu` share a class, so the filter itself is still checked after decryption.
    var protection: ProtectionClass? {
        filters[.accessible]?.stringValue.flatMap(Accessibility.init(rawValue:))?.protectionClass
    }

    /// Whether some filter of the query is checked only after decryption in a class, so that
    /// SQL cannot apply the limit.
    func hasResidualFilters(_ itemClass: ItemClass) -> Bool {
        if hostOrSubdomain != nil || authenticationUI == .skip { return true }
        let schema = ItemSchema.of(itemClass)
        return filters.keys.contains { name in schema.spec(for: name).map { !Self.isIndexed($0) } ?? true }
    }

    /// Attributes usually unique to few items come first, so the first tag drives the join.
    private static let selective: [AttributeName] = [
        "acct", "srvr", "klbl", "atag", "slnr", "issr", "skid", "subj", "pkhh", "labl", "gena", "path",
        "sdmn", "svce",
    ]

    /// The filters a lookup finds through primary-key bytes rather than tag rows.
    struct KeyFilters {
        /// The filters found through a range of the primary-key index: the first prefix
        /// attribute's, and the second's when the first is there too.
        var range: [(AttributeSpec, AttributeValue)] = []
        /// The filter found by scanning the primary-key index for the second prefix
        /// attribute's 8 bytes: when that attribute has no tag rows and the query has no
        /// filter on the first (a password's account alone, in ``IndexLayout/lookupKeys``).
        var scanned: (AttributeSpec, AttributeValue)?

        var isEmpty: Bool { range.isEmpty && scanned == nil }

        /// Their attributes: a match on them may be another value with the same 8 bytes.
        var names: [AttributeName] { range.map(\.0.name) + (scanned.map { [$0.0.name] } ?? []) }
    }

    /// The filters a lookup of `itemClass` in `layout` finds through primary-key bytes.
    func keyFilters(_ itemClass: ItemClass, layout: IndexLayout) -> KeyFilters {
        var found = KeyFilters()
        guard !filters.isEmpty, layout != .tagged else { return found }
        let indexing = ItemSchema.of(itemClass).indexing(layout)
        for spec in indexing.prefixSpecs {
            guard let value = filters[spec.name] else { break }
            found.range.append((spec, value))
        }
        if found.range.isEmpty, let spec = indexing.scannedSecondSpec, let value = filters[spec.name] {
            found.scanned = (spec, value)
        }
        return found
    }

    /// The filters a lookup finds through tag rows, most selective first.
    private func orderedFilters(_ itemClass: ItemClass, excluding: [AttributeName]) -> [(AttributeSpec, AttributeValue)]
    {
        let schema = ItemSchema.of(itemClass)
        return filters.compactMap { name, value in
            guard let spec = schema.spec(for: name), Self.isIndexed(spec), !excluding.contains(name) else { return nil }
            return (spec, value)
        }.sorted { a, b in
            let ra = Self.selective.firstIndex(of: a.0.name) ?? Self.selective.count
            let rb = Self.selective.firstIndex(of: b.0.name) ?? Self.selective.count
            return ra != rb ? ra < rb : a.0.name < b.0.name
        }
    }

    /// The candidate rows, in the order items were added. When every filter is indexed, they
    /// are the matches (up to the limit); otherwise ``RowCodec/open(_:plan:includeData:)``
    /// leaves out the rows that fail the other filters, and the caller applies the limit.
    /// - Parameter malformed: When given, malformed rows are passed to it and skipped (see
    ///   ``StoredRow/fetchAll(_:_:_:malformed:)``).
    func fetch(
        _ db: Database, tagger: IndexTagger, includeData: Bool, statements: SearchStatements,
        malformed: ((Int64?) -> Void)? = nil
    ) throws -> [StoredRow] {
        var rows: [StoredRow] = []
        var limit = limit
        for itemClass in classes {
            // A primary-key prefix can match another value (8 bytes of a tag), so the SQL
            // limit could stop before a true match.
            let keyFilters = keyFilters(itemClass, layout: tagger.layout)
            if hasResidualFilters(itemClass) || !keyFilters.isEmpty {
                limit = nil
            }
            rows += try fetch(
                db, itemClass: itemClass, keyFilters: keyFilters, tagger: tagger, includeData: includeData,
                limit: limit, statements: statements, malformed: malformed)
            if let limit, rows.count >= limit { break }
        }
        if let limit, rows.count > limit { rows.removeLast(rows.count - limit) }
        return rows
    }

    private func fetch(
        _ db: Database, itemClass: ItemClass, keyFilters: KeyFilters, tagger: IndexTagger, includeData: Bool,
        limit: Int?, statements: SearchStatements, malformed: ((Int64?) -> Void)?
    ) throws -> [StoredRow] {
        var tags: [Data] = []
        for (spec, value) in orderedFilters(itemClass, excluding: keyFilters.names) {
            tagger.forEachTag(itemClass, spec, value) { tags.append($0) }
        }
        var arguments: [DatabaseValue] = tags.map(\.databaseValue)
        arguments.append(itemClass.rawValue.databaseValue)
        if let persistentID {
            if let rowID = PersistentIdentity.rowID(of: persistentID) { arguments.append(rowID.databaseValue) }
            arguments.append(RowCodec.bytes(of: persistentID).databaseValue)
        }
        if let groups { arguments += groups.map { tagger.columnTag(.accessGroup, .string($0)).databaseValue } }
        if let synchronizable {
            arguments.append(tagger.columnTag(.synchronizable, .number(synchronizable)).databaseValue)
        }
        if let protection { arguments.append(Int64(protection.rawValue).databaseValue) }
        // Without tags, tombstones are read from their own index: the key's arguments twice.
        let keyRepeats = includesTombstones && tags.isEmpty ? 2 : 1
        if !keyFilters.range.isEmpty {
            let bounds = tagger.primaryKeyRange(keyFilters.range.map { tagger.tag(itemClass, $0.0, $0.1) })
            for _ in 0..<keyRepeats { arguments += bounds.map(\.databaseValue) }
        }
        if let scanned = keyFilters.scanned {
            let bytes = tagger.primaryKeySecondSlot(tagger.tag(itemClass, scanned.0, scanned.1))
            for _ in 0..<keyRepeats { arguments.append(bytes.databaseValue) }
        }
        if let limit { arguments.append(max(0, limit).databaseValue) }
        let shape = SearchShape(
            tags: tags.count, persistentID: persistentID.map { PersistentIdentity.rowID(of: $0) != nil ? .row : .uuid },
            includesTombstones: includesTombstones,
            groups: groups?.count, synchronizable: synchronizable != nil, protection: protection != nil,
            primaryKeyRange: !keyFilters.range.isEmpty, scannedKeyBytes: keyFilters.scanned != nil, limit: limit != nil,
            includeData: includeData)
        let rows = try StoredRow.fetchAll(db, statements.sql(for: shape), arguments, malformed: malformed)
        return shape.readsPrimaryKeyIndex ? Self.inRowOrder(rows) : rows
    }

    /// Rows in the order items were added. The row ids are sorted rather than the rows, which
    /// are large values that a sort would copy at every step.
    private static func inRowOrder(_ rows: [StoredRow]) -> [StoredRow] {
        guard rows.count > 1 else { return rows }
        let order = rows.indices.sorted { rows[$0].id < rows[$1].id }
        return order.map { rows[$0] }
    }

    /// How a decrypted item compares with the query.
    enum Verdict {
        case matches
        /// It fails a filter checked after decryption only.
        case filteredOut
        /// It fails a filter its index rows said it meets: the index was tampered with.
        case contradictsIndex
    }

    /// Checks decrypted attributes against every filter.
    ///
    /// A filter found through a tag row that the item fails means the index was tampered
    /// with; one found through primary-key bytes may be another value with the same 8
    /// bytes, and the item is simply not a match.
    func verdict(_ attributes: Attributes, itemClass: ItemClass, layout: IndexLayout) -> Verdict {
        let schema = ItemSchema.of(itemClass)
        var verdict = Verdict.matches
        for (name, value) in filters {
            guard let spec = schema.spec(for: name) else { return .filteredOut }
            if spec.satisfies(attributes[name], value) { continue }
            if Self.isIndexed(spec) && !keyFilters(itemClass, layout: layout).names.contains(name) {
                return .contradictsIndex
            }
            verdict = .filteredOut
        }
        return verdict
    }
}

extension QueryPlan {
    /// Whether a decrypted item passes the checks the query asks of every match beyond its
    /// attribute values: the host-or-subdomain match and its owner's authentication.
    ///
    /// An item whose access control asks for its owner's authentication is returned only to a
    /// call the person has answered for (``userVerified``), or, without its secret, to a
    /// listing (``KeychainModel/ItemQuery/AuthenticationUI-swift.enum/ignore``); it is left out
    /// with `.skip`. Any other call fails, so that no secret reaches a caller the person has
    /// not answered for, whatever mode it asks in.
    /// - Throws: `.interactionNotAllowed`: ``KeychainModel/KeychainError/Reason/authenticateUser``
    ///   for a call that may ask (`.allow`), ``KeychainModel/KeychainError/Reason/userAuthenticationNeeded``
    ///   for one that may not.
    func admits(_ attributes: Attributes, uuid: UUID?) throws -> Bool {
        if let host = hostOrSubdomain {
            guard let server = attributes[.server]?.stringValue, server == host || server.hasSuffix("." + host)
            else { return false }
        }
        guard try trustsCaller(attributes, uuid: uuid) else { return false }
        guard !asksNothing,
            let control = attributes[.accessControl]?.dataValue.flatMap(StoredAccessControl.init(serialized:)),
            control.requiresAuthentication(openingApplicationPassword: opensApplicationPassword)
        else { return true }
        // A caller's lookup of a token key gets its public key and handle: its use asks.
        if !revealsTokenKeys, case .string(let token)? = attributes["tkid"], !token.isEmpty { return true }
        // A `.biometryCurrentSet` item whose fingers changed is gone, as on iOS.
        if let fingerAnswer, control.isInvalidated(byFingersIn: fingerAnswer.state) { return false }
        let sealed = control.needsApplicationPassword && !opensApplicationPassword
        if !sealed || userVerified,
            control.isAnswered(owner: userVerified, finger: fingerAnswer, companion: companionAnswer)
        {
            return true
        }
        switch authenticationUI {
        case .ignore where !opensSecrets: return true
        case .skip: return false
        case .allow:
            switch control.nextQuestion(owner: userVerified, finger: fingerAnswer, companion: companionAnswer) {
            case .owner?:
                throw KeychainError(.interactionNotAllowed, "an item asks for its owner's authentication")
                    .because(.authenticateUser)
            case .finger?:
                throw KeychainError(.interactionNotAllowed, "an item asks for a finger on the reader")
                    .because(.authenticateWithFinger)
            case .companion?:
                throw KeychainError(.interactionNotAllowed, "an item asks for a touch of a paired security key")
                    .because(.authenticateWithCompanion)
            case nil where companionAnswer != nil:
                throw KeychainError(.authFailed, "the security key touched is not one the item was made for")
            case nil:
                throw KeychainError(
                    .interactionNotAllowed,
                    "an item asks for a companion, and no security key was paired when it was made")
            }
        case .ignore, .fail: throw KeychainError.userAuthenticationNeeded
        }
    }
}

extension QueryPlan {
    /// Whether the caller may have this item's secret, or change it, as its access list says
    /// (``KeychainModel/AccessList``): a caller the list names, an item the person allowed for
    /// this call, an update that only takes applications off the list, or a call that reads no
    /// secret. In-process calls have no caller and pass.
    /// - Returns: `false` for an untrusted caller's `.skip`.
    /// - Throws: `.interactionNotAllowed`: ``KeychainModel/KeychainError/Reason/confirmApplication``
    ///   for a call that may ask (`.allow`), naming the item; ``KeychainModel/KeychainError/Reason/applicationNotTrusted``
    ///   for one that may not.
    func trustsCaller(_ attributes: Attributes, uuid: UUID?) throws -> Bool {
        guard opensSecrets, let caller, !caller.mayOpen(attributes, id: uuid, allowing: allowedItems) else {
            return true
        }
        if let accessListChange, let stored = attributes[.access]?.dataValue,
            AccessList(serialized: stored).isNarrowed(to: accessListChange)
        {
            return true
        }
        switch authenticationUI {
        case .skip: return false
        case .allow:
            // The person is asked about the item by its identity: a row without one cannot be.
            guard let uuid else { throw KeychainError.applicationNotTrusted }
            throw KeychainError(
                .interactionNotAllowed, "an item's access list does not name the caller",
                underlying: ApplicationConfirmation(item: uuid, attributes: attributes)
            )
            .because(.confirmApplication)
        case .ignore, .fail: throw KeychainError.applicationNotTrusted
        }
    }
}

/// What the text of a search statement depends on.
struct SearchShape: Hashable {
    /// How a persistent identity finds its row.
    enum IdentityLookup: Hashable {
        /// By the row id it carries, then the whole identity.
        case row
        /// By the `uuid` column (identities made before format 3).
        case uuid
    }

    var tags: Int
    var persistentID: IdentityLookup?
    var includesTombstones: Bool
    var groups: Int?
    var synchronizable: Bool
    var protection: Bool
    /// Whether the primary key must lie in a range (a prefix): through the primary-key index
    /// when there are no tags (and the tombstone index too when tombstones are included),
    /// as a check on each row otherwise.
    var primaryKeyRange: Bool = false
    /// Whether the primary key's second 8 bytes must be given ones: by a scan of the
    /// primary-key index when there are no tags (and of the tombstone index too when
    /// tombstones are included), as a check on each row otherwise.
    var scannedKeyBytes: Bool = false
    var limit: Bool
    var includeData: Bool

    /// Whether rows are found through the primary-key (and tombstone) index alone, in its
    /// order rather than the order items were added.
    var readsPrimaryKeyIndex: Bool { tags == 0 && (primaryKeyRange || scannedKeyBytes) }

    /// The statement. Its arguments, in order: the tags (most selective first), the class,
    /// the persistent identity (its row id, then its bytes), the group tags, the
    /// synchronizable tag, the protection class, the primary-key range's bounds (twice when a
    /// range without tags includes tombstones), the scanned key bytes (likewise), the limit.
    var sql: String {
        var sql = "SELECT \(StoredRow.columns(includeData: includeData)) FROM"
        if tags == 0 {
            sql += " items i WHERE i.class = ?"
        } else {
            sql += " " + (0..<tags).map { "tags t\($0)" }.joined(separator: " CROSS JOIN ")
            sql += " CROSS JOIN items i WHERE t0.tag = ?"
            for index in 1..<tags { sql += " AND t\(index).tag = ? AND t\(index).item = t0.item" }
            sql += " AND i.id = t0.item AND i.class = ?"
        }
        switch persistentID {
        case .row: sql += " AND i.id = ? AND i.uuid = ?"
        case .uuid: sql += " AND i.uuid = ?"
        case nil: break
        }
        if !includesTombstones { sql += " AND i.tomb = 0" }
        if let groups { sql += " AND i.agrp IN (\(repeatElement("?", count: groups).joined(separator: ",")))" }
        if synchronizable { sql += " AND i.sync = ?" }
        if protection { sql += " AND i.protection = ?" }
        if primaryKeyRange { sql += keyRestriction(seeksDirectly: true) { "\($0) BETWEEN ? AND ?" } }
        if scannedKeyBytes {
            sql += keyRestriction(seeksDirectly: false) {
                "substr(\($0), \(IndexTagger.prefixLength + 1), \(IndexTagger.prefixLength)) = ?"
            }
        }
        // Rows come back in the order items were added. With tags, t0's primary key
        // (tag, item) already yields that order; naming `i.id` would make SQLite sort. Rows
        // found through the primary-key index come in its order, and the caller sorts them
        // (a temporary B-tree for one or a few rows costs more than the rest of the lookup).
        if tags > 0 {
            sql += " ORDER BY t0.item"
        } else if !readsPrimaryKeyIndex {
            sql += " ORDER BY i.id"
        }
        if limit { sql += " LIMIT ?" }
        return sql
    }

    /// The clause that keeps the rows whose primary key meets `condition` (given the column's
    /// name): a check on each row found through tags; otherwise read from the primary-key
    /// index, and from the tombstone index too when tombstones are included. A condition
    /// that `seeksDirectly` (a range) is put on the row itself when only live items count;
    /// any other would make SQLite scan the table, so the ids come from the index first.
    private func keyRestriction(seeksDirectly: Bool, _ condition: (String) -> String) -> String {
        if tags > 0 || (seeksDirectly && !includesTombstones) { return " AND " + condition("i.pk") }
        let live = "SELECT id FROM items WHERE \(condition("pk")) AND tomb = 0"
        guard includesTombstones else { return " AND i.id IN (\(live))" }
        return " AND i.id IN (\(live) UNION ALL SELECT id FROM items WHERE \(condition("pk")) AND tomb = 1)"
    }
}

/// The texts of search statements, built once per shape and keychain handle (building one
/// costs about as much as running it; SQLite compiles each once per connection).
final class SearchStatements: Sendable {
    private let texts = Mutex<[SearchShape: String]>([:])

    func sql(for shape: SearchShape) -> String {
        if let sql = texts.withLock({ $0[shape] }) { return sql }
        let sql = shape.sql
        texts.withLock { texts in
            if texts.count < 256 { texts[shape] = sql }
        }
        return sql
    }
}

/// Seals rows for writing and opens rows read back, checking that every column agrees with
/// the sealed contents.
struct RowCodec {
    let database: KeychainDatabase
    let state: KeyRing.State
    let tagger: IndexTagger

    static func bytes(of uuid: UUID) -> Data { withUnsafeBytes(of: uuid.uuid) { Data($0) } }

    func key(for protection: ProtectionClass) throws -> SymmetricKey {
        guard let key = state.classKeys[protection] else {
            throw KeychainError(.interactionNotAllowed, "the item's protection class is locked")
        }
        return key
    }

    /// The associated data that binds a sealed blob to its keychain, row, class, access
    /// group, synchronizable state, primary key and tombstone state, and to its field.
    private struct Context {
        private let prefix: [UInt8]

        init(_ keychainID: Data, _ row: SealedRow, tombstone: Bool, hasData: Bool) {
            var context = [UInt8]()
            context.reserveCapacity(192)
            context.append(contentsOf: "keychain-linux item v1".utf8)
            context.appendLengthPrefixed(keychainID)
            context.appendLengthPrefixed(row.uuid)
            context.appendLengthPrefixed(row.itemClass.rawValue.utf8)
            context.append(row.protection.rawValue)
            context.appendLengthPrefixed(row.groupTag)
            context.appendLengthPrefixed(row.syncTag)
            context.appendLengthPrefixed(row.primaryKeyTag)
            context.append(tombstone ? 1 : 0)
            context.append(hasData ? 1 : 0)
            prefix = context
        }

        /// The associated data of one field (`attributes` or `data`).
        func field(_ name: String) -> [UInt8] {
            var context = prefix
            context.appendLengthPrefixed(name.utf8)
            return context
        }
    }

    /// Seals an item's attributes and secret for row `uuid`; `primaryKeyTag` may be its
    /// primary-key tag, already computed (the stored one, when an update keeps the primary key).
    func seal(
        itemClass: ItemClass, uuid: Data, attributes: Attributes, data: Data?, tombstone: Bool,
        primaryKeyTag: Data? = nil
    ) throws -> SealedRow {
        let schema = ItemSchema.of(itemClass)
        guard let accessibility = attributes[.accessible]?.stringValue.flatMap(Accessibility.init(rawValue:)),
            let group = attributes[.accessGroup]
        else { throw KeychainError.parameter("an item needs an accessibility and an access group") }
        var row = SealedRow(
            uuid: uuid, itemClass: itemClass, protection: accessibility.protectionClass,
            groupTag: tagger.columnTag(.accessGroup, group),
            syncTag: tagger.columnTag(.synchronizable, attributes[.synchronizable] ?? .number(0)),
            primaryKeyTag: primaryKeyTag ?? tagger.primaryKeyTag(schema, attributes),
            attributes: Data(), data: nil)
        let key = try key(for: row.protection)
        let context = Context(database.keychainID, row, tombstone: tombstone, hasData: data != nil)
        row.attributes = try Sealing.seal(
            AttributeCoding.encode(attributes), key: key, context: context.field("attributes"))
        if let data {
            row.data = try Sealing.seal(data, key: key, context: context.field("data"))
        }
        return row
    }

    /// Decrypts a row's attributes and secret, whatever they hold.
    /// - Throws: `.decode` when the row fails authentication.
    func unseal(_ stored: StoredRow) throws -> (attributes: Attributes, data: Data?) {
        let (attributes, key, context) = try openAttributes(stored)
        let data = try stored.data.map { try Sealing.open($0, key: key, context: context.field("data")) }
        return (attributes, data)
    }

    /// Opens a row's attributes, with the key and associated data that open its secret.
    private func openAttributes(_ stored: StoredRow) throws -> (Attributes, key: SymmetricKey, context: Context) {
        let key = try key(for: stored.protection)
        let row = SealedRow(
            uuid: stored.uuid, itemClass: stored.itemClass, protection: stored.protection,
            groupTag: stored.groupTag, syncTag: stored.syncTag, primaryKeyTag: stored.primaryKeyTag,
            attributes: stored.attributes, data: stored.data)
        let context = Context(database.keychainID, row, tombstone: stored.tombstone, hasData: stored.hasData)
        let attributes = try AttributeCoding.decode(
            Sealing.open(stored.attributes, key: key, context: context.field("attributes")))
        return (attributes, key, context)
    }

    /// Decrypts a row read for `plan`.
    /// - Returns: The item, or `nil` when it fails a filter that only decryption can check.
    /// - Throws: `.decode` when the row fails authentication or contradicts its index rows.
    func open(_ stored: StoredRow, plan: QueryPlan, includeData: Bool) throws -> Item? {
        let (attributes, key, context) = try openAttributes(stored)
        // The row's columns (class, protection, group, sync and primary-key tags, tombstone)
        // are authenticated as associated data: they are the ones computed from these
        // attributes when the row was sealed. The `tags` table is not authenticated, so the
        // query's filters are checked against the decrypted values: a tag row moved to another
        // item cannot make it match.
        switch plan.verdict(attributes, itemClass: stored.itemClass, layout: tagger.layout) {
        case .matches: break
        case .filteredOut: return nil
        case .contradictsIndex: throw KeychainError.decode("a stored item does not match its index")
        }
        guard try plan.admits(attributes, uuid: UUID(bytes: stored.uuid)) else { return nil }
        var item = Item(class: stored.itemClass, attributes: attributes)
        item.persistentID = UUID(bytes: stored.uuid)  // 16 bytes: StoredRow checks
        if includeData, let sealed = stored.data {
            item.data = try Sealing.open(sealed, key: key, context: context.field("data"))
        }
        if stored.tombstone { item.attributes[.tombstone] = .number(1) }
        return item
    }
}
