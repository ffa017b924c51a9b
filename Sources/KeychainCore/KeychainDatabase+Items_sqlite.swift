import Crypto
import Foundation
import GRDB

extension KeychainDatabase {
    // MARK: Add

    /// Adds an item.
    ///
    /// Omitted primary-key attributes get their defaults (Apple's, per class, in
    /// `keychain/securityd/SecItemSchema.c` of apple-oss-distributions/Security), the accessibility
    /// defaults to when-unlocked (certificates: always), the access group to the caller's first
    /// group, and the creation and modification dates to now.
    /// - Returns: The stored item, with its persistent identity and every stored attribute
    ///   (its data is not returned).
    /// - Throws: `.duplicateItem` when an item with the same primary key exists,
    ///   `.interactionNotAllowed` when the item's protection class is locked,
    ///   `.noSuchAttribute`, `.parameter`, `.missingEntitlement`.
    @discardableResult
    public func add(_ item: Item) throws -> Item {
        try add(contentsOf: [item])[0]
    }

    /// Adds several items in one transaction: all of them, or none when one fails.
    ///
    /// ```swift
    /// try keychain.add(contentsOf: imported)   // an import either lands whole or not at all
    /// ```
    /// - Returns: The stored items, in order, as ``add(_:)`` returns them.
    /// - Throws: As ``add(_:)``; nothing is stored when any item fails.
    @discardableResult
    public func add(contentsOf items: [Item]) throws -> [Item] {
        try add(contentsOf: items, keepingDates: false)
    }

    /// Adds several items in one transaction, as ``add(contentsOf:)`` does, each keeping the
    /// creation and modification dates it carries when `keepingDates` is `true`: items moved in
    /// from another keyring keep their history (an item without a date gets now, as on add).
    ///
    /// Apple's `SecItemAdd` always sets both dates to now; this is for imports only.
    /// - Returns: The stored items, in order.
    /// - Throws: As ``add(_:)``; nothing is stored when any item fails.
    @discardableResult
    public func add(contentsOf items: [Item], keepingDates: Bool) throws -> [Item] {
        let prepared = try items.map { try prepareForAdd($0, keepingDates: keepingDates) }
        let identities = try withWriteTransaction { db, state in
            let tagger = try Self.tagger(state)
            let codec = RowCodec(database: self, state: state, tagger: tagger)
            return try prepared.map { try insert($0, db: db, codec: codec) }
        }
        return zip(prepared, identities).map { item, identity in
            var stored = item
            stored.persistentID = identity
            stored.data = nil
            return stored
        }
    }

    /// Adds an item, or replaces the data and the given attributes of the item with the same
    /// primary key, in one transaction: the old value is never lost, even when the write fails.
    ///
    /// ```swift
    /// try keychain.upsert(Item(class: .genericPassword,
    ///                          attributes: [.service: .string("api"), .account: .string("me")],
    ///                          data: Data("new token".utf8)))
    /// ```
    /// - Returns: The stored item (without its data) and whether it was newly added.
    /// - Throws: `.interactionNotAllowed` when the item's class (or the existing item's) is
    ///   locked, and the errors of ``add(_:)``.
    @discardableResult
    public func upsert(_ item: Item) throws -> (item: Item, added: Bool) {
        let prepared = try prepareForAdd(item)
        return try withWriteTransaction { db, state in
            let tagger = try Self.tagger(state)
            let codec = RowCodec(database: self, state: state, tagger: tagger)
            let schema = ItemSchema.of(prepared.itemClass)
            let primaryKey = tagger.primaryKeyTag(schema, prepared.attributes)
            let plan = QueryPlan(
                classes: [prepared.itemClass], filters: [:], groups: nil, synchronizable: nil, persistentID: nil,
                limit: nil, includesTombstones: false)
            guard let existing = try StoredRow.withPrimaryKey(primaryKey, tombstone: false, db) else {
                var stored = prepared
                stored.persistentID = try insert(prepared, db: db, codec: codec)
                stored.data = nil
                return (stored, true)
            }
            guard var merged = try codec.open(existing, plan: plan, includeData: true) else {
                throw KeychainError.decode("a stored item does not match its index")
            }
            let old = merged.attributes
            for (name, value) in item.attributes where name != .creationDate && name != .tombstone {
                merged.attributes[name] = prepared.attributes[name] ?? value
            }
            merged.data = item.data
            merged.attributes[.modificationDate] = .date(
                Self.nextModificationDate(after: merged.attributes[.modificationDate]?.dateValue))
            try replace(existing, old: old, with: merged, db: db, codec: codec)
            merged.data = nil
            return (merged, false)
        }
    }

    /// Attributes an add accepts but sets itself.
    private static let setOnAdd: Set<AttributeName> = [.multiUser, .tombstone, .modificationDate]
    /// Attributes an update accepts but sets itself.
    private static let setOnUpdate: Set<AttributeName> = [.multiUser, .tombstone]
    /// Attributes a query accepts but does not match on.
    private static let notFilters: Set<AttributeName> = [.multiUser, .accessControl]

    /// Validates an item and fills in what the engine assigns, as Apple's securityd does on add
    /// (`SecServerItemAddWithCustomDb`, `keychain/securityd/SecItemServer.c`): defaults, dates,
    /// access group, accessibility. (Its persistent identity is assigned when it is inserted.)
    private func prepareForAdd(_ item: Item, keepingDates: Bool = false) throws -> Item {
        let schema = try Self.schema(forWriting: item.itemClass)
        var attributes = try normalize(
            item.attributes, schema: schema, ignoring: Self.setOnAdd)
        try checkSize(data: item.data)
        let now = Date()
        let created = keepingDates ? item.attributes[.creationDate]?.dateValue : nil
        attributes[.creationDate] = .date(created ?? now)
        attributes[.modificationDate] = .date(
            keepingDates ? item.attributes[.modificationDate]?.dateValue ?? created ?? now : now)
        attributes[.multiUser] = .data(Data())
        if let group = attributes[.accessGroup]?.stringValue {
            guard effectiveGroups.canWrite(group) else {
                throw KeychainError(.missingEntitlement, "the caller may not write that access group")
            }
        } else {
            guard let group = effectiveGroups.defaultGroup else {
                throw KeychainError(.missingEntitlement, "the caller has no access group")
            }
            attributes[.accessGroup] = .string(group)
        }
        let accessibility: Accessibility
        if let value = attributes[.accessible]?.stringValue, let given = Accessibility(rawValue: value) {
            accessibility = given
        } else {
            accessibility = item.itemClass == .certificate ? .always : .whenUnlocked
            attributes[.accessible] = .string(accessibility.rawValue)
        }
        for spec in schema.primaryKeySpecs where spec.storesDefault && attributes[spec.name] == nil {
            attributes[spec.name] = spec.defaultValue
        }
        if accessibility == .whenPasscodeSetThisDeviceOnly && !hasPassword {
            throw KeychainError(.authFailed, "this keychain has no password for a passcode-bound item")
        }
        return Item(class: item.itemClass, attributes: attributes, data: item.data)
    }

    /// Seals and inserts a prepared item in the next row, replacing a tombstone with the same
    /// primary key.
    /// - Returns: The item's new persistent identity.
    func insert(_ item: Item, db: Database, codec: RowCodec, journal: Bool = true) throws -> UUID {
        let schema = ItemSchema.of(item.itemClass)
        let tagger = codec.tagger
        var tags: [AttributeTag] = []
        tags.reserveCapacity(8)
        for (name, value) in item.attributes {
            guard let spec = schema.indexedAttributes[name] else { continue }
            tagger.forEachTag(schema.itemClass, spec, value) { tags.append(AttributeTag(name: name, tag: $0)) }
        }
        let primaryKey = tagger.primaryKeyTag(schema, item.attributes, tags: tags)
        let next = try nextRow(replacing: primaryKey, db: db)
        for tombstone in next.tombstones { try deleteRow(tombstone, db: db) }
        let identity = try PersistentIdentity.make(rowID: next.id)
        let row = try codec.seal(
            itemClass: item.itemClass, uuid: RowCodec.bytes(of: identity), attributes: item.attributes,
            data: item.data, tombstone: false, primaryKeyTag: primaryKey)
        let rowAttributes = schema.tagRowAttributes(tagger.layout)
        try insert(row, id: next.id, tags: tags.compactMap { rowAttributes[$0.name] != nil ? $0.tag : nil }, db: db)
        if journal && item.isSynchronizable { try journalSyncChange(row: next.id, db: db) }
        return identity
    }

    /// The row id of the next item (after the last one, as SQLite would choose), and the
    /// tombstones with the primary key `primaryKey`, which the item replaces: one statement.
    private func nextRow(replacing primaryKey: Data, db: Database) throws -> (id: Int64, tombstones: [Int64]) {
        var last: Int64 = 0
        var tombstones: [Int64] = []
        try db.forEachRow(
            "SELECT max(id), 0 FROM items UNION ALL SELECT id, 1 FROM items WHERE pk = ? AND tomb = 1",
            [primaryKey.databaseValue]
        ) { row in
            if row.integer(1) == 1 {
                if let id = row.integer(0) { tombstones.append(id) }
            } else {
                last = row.integer(0) ?? 0
            }
        }
        return (try rowID(after: last, db: db), tombstones)
    }

    /// The row id after `last`. Only a file edited by hand has row ids beyond what an
    /// identity can carry; then an unused one is picked at random, so that adds keep working.
    private func rowID(after last: Int64, db: Database) throws -> Int64 {
        if last >= 0 && last < PersistentIdentity.maximumRowID { return last + 1 }
        for _ in 0..<64 {
            let candidate = Int64.random(in: 1...PersistentIdentity.maximumRowID)
            var taken = false
            try db.forEachRow("SELECT 1 FROM items WHERE id = ?", [candidate.databaseValue]) { _ in taken = true }
            if !taken { return candidate }
        }
        throw KeychainError(.internalComponent, "no free row id")
    }

    /// Deletes an item row and its tag rows. (Reading the list first rather than with
    /// `DELETE … RETURNING` keeps SQLite versions before 3.35 working.)
    func deleteRow(_ id: Int64, db: Database) throws {
        var list: Data?
        try db.forEachRow("SELECT tags FROM items WHERE id = ?", [id.databaseValue]) { list = $0.blob(0) }
        try db.run("DELETE FROM items WHERE id = ?", [id.databaseValue])
        if let list { try deleteTags(Self.tags(inList: list), of: id, db: db) }
    }

    /// Deletes the tombstone with a primary key, if there is one, other than row `except` (an
    /// update's own row). Adds find theirs with ``nextRow(replacing:db:)``.
    ///
    /// Most updates find none: a lookup costs a fraction of a `DELETE` that matches nothing.
    private func deleteTombstone(of primaryKey: Data, except: Int64, db: Database) throws {
        var tombstones: [Int64] = []
        try db.forEachRow("SELECT id FROM items WHERE pk = ? AND tomb = 1", [primaryKey.databaseValue]) { row in
            if let id = row.integer(0), id != except { tombstones.append(id) }
        }
        for id in tombstones { try deleteRow(id, db: db) }
    }

    /// Rewrites an existing row in place with new contents, keeping its row id and persistent
    /// identity.
    ///
    /// Only what changed is written: the sealed blobs, the index columns whose value changed,
    /// and the tag rows of indexed attributes whose value changed. A new secret alone
    /// rewrites one row and no index entry, so an update costs about what a plain SQLite
    /// update does.
    func replace(
        _ existing: StoredRow, old: Attributes, with item: Item, db: Database, codec: RowCodec, journal: Bool = true
    ) throws {
        // The row was opened (authenticated) first, so its primary-key tag is the one these
        // values had; it is reused when they did not change (three keyed hashes fewer).
        let keepsPrimaryKey = ItemSchema.of(item.itemClass).hasSamePrimaryKey(old, item.attributes)
        let sealed = try codec.seal(
            itemClass: item.itemClass, uuid: existing.uuid, attributes: item.attributes, data: item.data,
            tombstone: false, primaryKeyTag: keepsPrimaryKey ? existing.primaryKeyTag : nil)
        // A tombstone with the new primary key gives way, unless it is the row being updated.
        try deleteTombstone(of: sealed.primaryKeyTag, except: existing.id, db: db)
        let tags = tagChanges(from: old, to: item.attributes, itemClass: item.itemClass, tagger: codec.tagger)
        var assignments = ["attributes = ?", "data = ?"]
        var values = [sealed.attributes.databaseValue, sealed.data.databaseValue]
        func assign(_ column: String, _ value: DatabaseValue, if changed: Bool) {
            guard changed else { return }
            assignments.append("\(column) = ?")
            values.append(value)
        }
        assign(
            "protection", Int64(sealed.protection.rawValue).databaseValue,
            if: sealed.protection != existing.protection)
        assign("agrp", sealed.groupTag.databaseValue, if: sealed.groupTag != existing.groupTag)
        assign("sync", sealed.syncTag.databaseValue, if: sealed.syncTag != existing.syncTag)
        assign("pk", sealed.primaryKeyTag.databaseValue, if: sealed.primaryKeyTag != existing.primaryKeyTag)
        assign("tomb", 0.databaseValue, if: existing.tombstone)
        if !tags.removed.isEmpty || !tags.added.isEmpty {
            var list = Data()
            try db.forEachRow("SELECT tags FROM items WHERE id = ?", [existing.id.databaseValue]) { row in
                list = row.blob(0) ?? Data()
            }
            let removed = Set(tags.removed)
            var kept = Self.tags(inList: list).filter { !removed.contains($0) }
            kept += tags.added.filter { !kept.contains($0) }
            assign("tags", Self.tagList(kept).databaseValue, if: true)
        }
        values.append(existing.id.databaseValue)
        do {
            try db.run("UPDATE items SET \(assignments.joined(separator: ", ")) WHERE id = ?", values)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw KeychainError(.duplicateItem, "an item with the same primary key exists")
        }
        guard db.changesCount == 1 else {
            throw KeychainError(.internalComponent, "an item disappeared while it was updated")
        }
        try deleteTags(tags.removed, of: existing.id, db: db)
        try insertTags(tags.added, of: existing.id, db: db)
        // Leaving the sync set (sync 1 → 0) is a change to sync too: a deletion for the others.
        let synchronizable = { (attributes: Attributes) in (attributes[.synchronizable]?.numberValue ?? 0) != 0 }
        if journal && (synchronizable(old) || synchronizable(item.attributes)) {
            try journalSyncChange(row: existing.id, db: db)
        }
    }

    /// The tags of the indexed attributes whose value changed: the old values' and the new
    /// values'.
    private func tagChanges(
        from old: Attributes, to new: Attributes, itemClass: ItemClass, tagger: IndexTagger
    ) -> (removed: [Data], added: [Data]) {
        let indexed = ItemSchema.of(itemClass).tagRowAttributes(tagger.layout)
        var removed: [Data] = []
        var added: [Data] = []
        for name in Set(old.keys).union(new.keys) {
            guard let spec = indexed[name] else { continue }
            let before = old[name]
            let after = new[name]
            if let before, let after, spec.equal(before, after) { continue }
            let beforeTags = before.map { tagger.tags(itemClass, spec, $0) } ?? []
            let afterTags = after.map { tagger.tags(itemClass, spec, $0) } ?? []
            removed += beforeTags.filter { !afterTags.contains($0) }
            added += afterTags.filter { !beforeTags.contains($0) }
        }
        return (removed, added)
    }

    /// Now, or 1 ms after `previous` when the clock has not moved past it (Apple's
    /// `SecDbItemMakeAttrYounger`, `keychain/securityd/SecDbItem.c`).
    static func nextModificationDate(after previous: Date?) -> Date {
        let now = Date()
        guard let previous, now.timeIntervalSinceReferenceDate <= previous.timeIntervalSinceReferenceDate else {
            return now
        }
        return Date(timeIntervalSinceReferenceDate: previous.timeIntervalSinceReferenceDate + 0.001)
    }

    // MARK: Find

    /// Finds items.
    ///
    /// Only the matching rows are decrypted; their secrets only when `includeData` is set.
    /// Items come back in the order they were added.
    /// - Parameters:
    ///   - query: What to match.
    ///   - includeData: Whether to decrypt and return each item's secret.
    /// - Returns: The matching items; empty when none match.
    /// - Throws: `.interactionNotAllowed` when a matching item's class is locked (the whole
    ///   call fails) or the item asks for its owner's authentication
    ///   (``KeychainModel/ItemQuery/AuthenticationUI-swift.enum``), `.userCanceled` or
    ///   `.authFailed` when the person asked cancels or fails, `.decode` when a matching row fails authentication,
    ///   `.missingEntitlement`, `.noSuchAttribute`, `.parameter`.
    public func find(_ query: ItemQuery, includeData: Bool = false) throws -> [Item] {
        try find(query, includeData: includeData, revealingTokenKeys: false)
    }

    /// ``find(_:includeData:)``; a token key's secret is its private key only with
    /// `revealingTokenKeys` (for the token key operations of this process), its public key
    /// otherwise.
    func find(_ query: ItemQuery, includeData: Bool, revealingTokenKeys: Bool) throws -> [Item] {
        try askingUser(offering: query.ownerProof) {
            if query.itemClass == .identity { return try findIdentities(query, includeData: includeData) }
            var plan = try prepare(query, writing: false)
            plan.revealsTokenKeys = revealingTokenKeys
            let items = try readMatches(plan, includeData: includeData, unreadable: nil)
            return includeData && !revealingTokenKeys ? items.map(TokenKeys.tokenClientView) : items
        }
    }

    /// Whether the person has answered for the call running now: set by whoever asked them
    /// (keychaind for its caller, ``askingUser(_:)`` here), for that call alone.
    @TaskLocal package static var userVerified = false

    /// What a finger on the reader has answered for the call running now: set by whoever asked
    /// (keychaind for its caller, ``askingUser(offering:_:)`` here), for that call alone.
    @TaskLocal package static var fingerAnswer: FingerAnswer?

    /// The public key of the security key touched for the call running now: set by whoever
    /// asked (keychaind for its caller, ``askingUser(offering:_:)`` here), for that call alone.
    @TaskLocal package static var companionAnswer: Data?

    /// Who calls, when keychaind serves the call: each item's access list is matched against
    /// it (``KeychainModel/AccessList``). `nil` in a process that opens its keychain itself,
    /// which no access list can keep from the file it reads.
    @TaskLocal package static var callingApplication: CallingApplication?

    /// The items the person allowed the running call to read or change though their access
    /// lists do not name the caller: set by keychaind, which asked, for that call alone.
    @TaskLocal package static var allowedItems: Set<UUID> = []

    /// Runs `body`, a read; when it fails because a matched item asks for the person and the call
    /// may ask, and ``KeychainModel/KeychainConfiguration/userVerifier`` can ask here, does what
    /// ``KeychainModel/CallAuthentication`` says (take `proof`'s answer, read the reader's state,
    /// ask the owner or for a finger) and runs `body` again with the answers, for that call alone.
    /// The read is made again rather than the person asked while a reader is held.
    private func askingUser<T>(offering proof: Data?, _ body: () throws -> T) throws -> T {
        let verifier = configuration.userVerifier
        var answers = CallAuthentication(
            ownerVerified: Self.userVerified, finger: Self.fingerAnswer, companion: Self.companionAnswer,
            proof: proof.flatMap { verifier?.answer(to: $0) })
        while true {
            do {
                return try Self.$userVerified.withValue(answers.ownerVerified) {
                    try Self.$fingerAnswer.withValue(answers.finger) {
                        try Self.$companionAnswer.withValue(answers.companion) { try body() }
                    }
                }
            } catch let error as KeychainError {
                guard let verifier, let step = answers.step(after: error) else { throw error }
                switch step {
                case .askOwner:
                    try verifier.verifyUser()
                    answers.ownerAnswered()
                case .readFingerState: answers.read(fingerState: try verifier.fingerState())
                case .touchFinger:
                    try verifier.verifyFinger()
                    answers.fingerMatched()
                case .touchCompanion: answers.companionSigned(publicKey: try verifier.verifyCompanion())
                }
            }
        }
    }

    /// Decrypts the rows `plan` matches, in the order they were added, up to its limit. A row
    /// that is malformed or fails authentication, or whose secret its owner must authenticate
    /// for and the call may not ask (``QueryPlan/admits(_:)``), is passed to `unreadable` and
    /// skipped; without it, it fails the whole search.
    private func readMatches(
        _ plan: QueryPlan, includeData: Bool, unreadable: ((UnreadableItem) -> Void)?
    ) throws -> [Item] {
        var plan = plan
        plan.opensSecrets = includeData
        return try keys.read { state in
            let codec = RowCodec(database: self, state: state, tagger: try Self.tagger(state))
            let malformed = unreadable.map { report in
                { (rowID: Int64?) in
                    report(
                        UnreadableItem(
                            rowID: rowID, persistentID: nil, itemClass: nil,
                            error: KeychainError.decode("a stored item is malformed")))
                }
            }
            let rows = try fetchRows(plan) { db in
                try plan.fetch(
                    db, tagger: codec.tagger, includeData: includeData, statements: searchStatements,
                    malformed: malformed)
            }
            var items: [Item] = []
            for row in rows {
                if let limit = plan.limit, items.count >= limit { break }
                do {
                    guard let item = try codec.open(row, plan: plan, includeData: includeData) else { continue }
                    items.append(item)
                } catch let error as KeychainError
                    where unreadable != nil
                    && (error.code == .decode || error.reason == .userAuthenticationNeeded
                        || error.reason == .applicationNotTrusted)
                {
                    unreadable?(
                        UnreadableItem(
                            rowID: row.id, persistentID: UUID(bytes: row.uuid), itemClass: row.itemClass, error: error))
                }
            }
            return items
        }
    }

    /// The persistent ids of the passwords that match `query` and cannot be read now
    /// because their protection class is locked: what a locked keychain can say of a search
    /// without opening an item (the Secret Service lists them as locked results, to be
    /// unlocked, as GNOME Keyring lists the items of a locked collection).
    ///
    /// Only attributes the keyed-hash index holds are matched (its key is unwrapped by the device
    /// key, so it is there while the keychain is locked); the ids are stored in the clear.
    /// Nothing here is authenticated: an item is checked as every item is when it is read after
    /// the unlock.
    ///
    /// - Parameter query: A generic- or internet-password query on indexed attributes (`svce`,
    ///   `srvr`, `acct`, `ptcl`, `port`, `path`, `pkdx`, the search terms `trms`, …).
    /// - Throws: `.parameter` for any other query: one with a filter only decryption can check.
    public func lockedMatches(_ query: ItemQuery) throws -> [UUID] {
        guard let itemClass = query.itemClass, [.genericPassword, .internetPassword].contains(itemClass),
            query.persistentID == nil
        else {
            throw KeychainError.parameter("a locked keychain is searched for passwords only")
        }
        let plan = try prepare(query, writing: false)
        guard !plan.hasResidualFilters(itemClass) else {
            throw KeychainError.parameter("a locked keychain is searched by its index only")
        }
        return try keys.read { state in
            let tagger = try Self.tagger(state)
            let rows = try fetchRows(plan) { db in
                try plan.fetch(db, tagger: tagger, includeData: false, statements: searchStatements, malformed: nil)
            }
            return rows.filter { state.classKeys[$0.protection] == nil && !$0.tombstone }.compactMap {
                UUID(bytes: $0.uuid)
            }
        }
    }

    /// Runs `fetch` (``QueryPlan/fetch(_:tagger:includeData:statements:malformed:)``) on a reader.
    ///
    /// A plan of one class reads with one `SELECT`, which SQLite runs on one snapshot by itself,
    /// so it runs without `BEGIN` and `COMMIT` around it: they were a fifth of the engine's time
    /// in a lookup served by keychaind. A plan of several classes keeps one transaction, so that
    /// its statements see one state of the file, and takes its reader from the pool. A plan of
    /// one class runs on a ``QuickReaders`` connection when one is free.
    private func fetchRows(_ plan: QueryPlan, _ fetch: (Database) throws -> [StoredRow]) throws -> [StoredRow] {
        try Self.run {
            guard plan.classes.count == 1 else { return try writer.read(fetch) }
            return try quickReaders?.read(fetch) ?? writer.unsafeRead(fetch)
        }
    }

    /// Finds the items that can be read, and reports the matching rows that cannot.
    ///
    /// ``find(_:includeData:)`` fails as a whole when one matching row fails authentication:
    /// a tampered item is an error, never silently skipped. This variant is for recovery and
    /// inspection (`security dump-keychain`): each row that is malformed or fails
    /// authentication is reported in ``KeychainModel/ReadableItems/unreadable`` and the others are returned,
    /// so that whatever is intact can always be got out.
    ///
    /// ```swift
    /// let found = try keychain.findReadable(ItemQuery(class: .genericPassword), includeData: true)
    /// for row in found.unreadable { print("cannot read \(row)") }  // no secret in it
    /// ```
    ///
    /// - Parameters:
    ///   - query: What to match (identities are not supported: `.parameter`).
    ///   - includeData: Whether to decrypt and return each item's secret.
    /// - Returns: The readable matching items, in the order they were added, and the rows that
    ///   failed (`.decode`), or whose secret asks for its owner's authentication when the
    ///   query may not ask (`.interactionNotAllowed`), in row order.
    /// - Throws: The errors of ``find(_:includeData:)`` other than a row's `.decode`:
    ///   `.interactionNotAllowed` when a matching item's class is locked, and so on.
    public func findReadable(_ query: ItemQuery, includeData: Bool = false) throws -> ReadableItems {
        guard query.itemClass != .identity else {
            throw KeychainError.parameter("identities cannot be listed row by row")
        }
        return try askingUser(offering: query.ownerProof) {
            var unreadable: [UnreadableItem] = []
            var found = ReadableItems()
            var plan = try prepare(query, writing: false)
            plan.revealsTokenKeys = false
            found.items = try readMatches(plan, includeData: includeData) {
                unreadable.append($0)
            }
            if includeData { found.items = found.items.map(TokenKeys.tokenClientView) }
            found.unreadable = unreadable.sorted { ($0.rowID ?? .max) < ($1.rowID ?? .max) }
            return found
        }
    }

    /// Finds the first matching item, or `nil`.
    public func findFirst(_ query: ItemQuery, includeData: Bool = false) throws -> Item? {
        var query = query
        query.limit = 1
        return try find(query, includeData: includeData).first
    }

    /// Identities are private keys joined with the certificates whose public-key hash is the key's
    /// application label, as Apple's securityd joins them (`keychain/securityd/SecItemDb.c`). Query
    /// attributes that certificates have apply to the certificate, the others to the key.
    private func findIdentities(_ query: ItemQuery, includeData: Bool) throws -> [Item] {
        let certificateSchema = ItemSchema.of(.certificate)
        let keySchema = ItemSchema.of(.key)
        var certificateFilters: Attributes = [:]
        var keyFilters: Attributes = ["kcls": .number(1)]
        for (name, value) in query.attributes {
            if certificateSchema.spec(for: name) != nil {
                certificateFilters[name] = value
            } else if keySchema.spec(for: name) != nil {
                keyFilters[name] = value
            } else {
                throw KeychainError(.noSuchAttribute, "identities have no attribute \(name)")
            }
        }
        var keyQuery = query
        keyQuery.itemClass = .key
        keyQuery.attributes = keyFilters
        keyQuery.limit = nil
        var identities: [Item] = []
        for key in try find(keyQuery, includeData: includeData) {
            guard let label = key.attributes["klbl"] else { continue }
            var certificateQuery = query
            certificateQuery.itemClass = .certificate
            certificateQuery.attributes = certificateFilters.merging(["pkhh": label]) { a, _ in a }
            certificateQuery.persistentID = nil
            certificateQuery.limit = nil
            for certificate in try find(certificateQuery, includeData: true) {
                var identity = Item(
                    class: .identity,
                    attributes: key.attributes.merging(certificate.attributes) { _, new in new },
                    data: key.data)
                identity.attributes["certdata"] = certificate.data.map(AttributeValue.data)
                identity.persistentID = key.persistentID
                identities.append(identity)
                if let limit = query.limit, identities.count >= limit { return identities }
            }
        }
        return identities
    }

    // MARK: Update

    /// Changes every matching item, all or nothing.
    ///
    /// - Parameters:
    ///   - query: Which items to change (all matches; the query's limit is ignored).
    ///   - attributes: New attribute values; others keep theirs.
    ///   - data: A new secret, or `nil` to keep each item's secret.
    /// - Returns: The number of items changed (at least one).
    /// - Throws: `.itemNotFound` when nothing matches, `.duplicateItem` when a change would
    ///   make two items equal in primary key (nothing is changed), `.interactionNotAllowed`.
    @discardableResult
    public func update(_ query: ItemQuery, attributes changes: Attributes, data: Data? = nil) throws -> Int {
        if query.itemClass == .identity { return try updateIdentities(query, attributes: changes, data: data) }
        return try askingUser(offering: query.ownerProof) { try updateOnce(query, attributes: changes, data: data) }
    }

    /// ``update(_:attributes:data:)``, once.
    private func updateOnce(_ query: ItemQuery, attributes changes: Attributes, data: Data?) throws -> Int {
        var query = query
        query.limit = nil
        var plan = try prepare(query, writing: true)
        // Changing an item that asks for its owner needs the owner, as reading it does (Apple
        // asks for updates of such items too): an update could otherwise take its access
        // control away and leave its secret to the next read.
        plan.opensSecrets = true
        if data == nil, changes.count == 1, let list = changes[.access]?.dataValue {
            plan.accessListChange = AccessList(serialized: list)
        }
        try checkSize(data: data)
        var normalizedChanges: [ItemClass: Attributes] = [:]
        for itemClass in plan.classes {
            normalizedChanges[itemClass] = try normalize(
                changes, schema: ItemSchema.of(itemClass), ignoring: Self.setOnUpdate)
        }
        if let group = changes[.accessGroup]?.stringValue, !effectiveGroups.canWrite(group) {
            throw KeychainError(.missingEntitlement, "the caller may not write that access group")
        }
        return try withWriteTransaction { db, state in
            let tagger = try Self.tagger(state)
            let codec = RowCodec(database: self, state: state, tagger: tagger)
            var changed = 0
            for row in try plan.fetch(db, tagger: tagger, includeData: true, statements: searchStatements) {
                guard var item = try codec.open(row, plan: plan, includeData: true) else { continue }
                changed += 1
                let schema = ItemSchema.of(item.itemClass)
                let old = item.attributes
                let oldModified = item.attributes[.modificationDate]?.dateValue ?? .distantPast
                for (name, value) in normalizedChanges[item.itemClass] ?? [:] {
                    item.attributes[name] = value
                }
                if let data { item.data = data }
                // An updated tombstone is a live item again.
                item.attributes[.tombstone] = nil
                // mdat strictly increases when the primary key stays (Apple's
                // `SecDbItemMakeAttrYounger`, `keychain/securityd/SecDbItem.c`). Comparing the
                // values spares keyed hashes: sealing reuses the stored tag when the key stays.
                let samePrimaryKey = schema.hasSamePrimaryKey(old, item.attributes)
                item.attributes[.modificationDate] = .date(
                    samePrimaryKey ? Self.nextModificationDate(after: oldModified) : Date())
                try replace(row, old: old, with: item, db: db, codec: codec)
            }
            guard changed > 0 else { throw KeychainError(.itemNotFound, "no item matched") }
            return changed
        }
    }

    // MARK: Delete

    /// Deletes every matching item. Synchronizable items leave a tombstone (invisible to
    /// ordinary queries); others are removed outright.
    /// - Returns: The number of items deleted (at least one).
    /// - Throws: `.itemNotFound` when nothing matches, `.interactionNotAllowed` when a
    ///   matching item's class is locked.
    @discardableResult
    public func delete(_ query: ItemQuery) throws -> Int {
        if query.itemClass == .identity { return try deleteIdentities(query) }
        var query = query
        query.limit = nil
        var plan = try prepare(query, writing: true)
        // Deleting asks the owner for nothing: Apple's flag-based access controls allow the
        // delete operation (`kAKSKeyOpDelete`) unconditionally (`SecAccessControlCreateWithFlags`,
        // OSX/sec/Security/SecAccessControl.c in apple-oss-distributions/Security).
        plan.asksNothing = true
        return try withWriteTransaction { db, state in
            let tagger = try Self.tagger(state)
            let codec = RowCodec(database: self, state: state, tagger: tagger)
            var deleted = 0
            for row in try plan.fetch(db, tagger: tagger, includeData: false, statements: searchStatements) {
                guard let item = try codec.open(row, plan: plan, includeData: false) else { continue }
                deleted += 1
                if item.isSynchronizable && !row.tombstone {
                    let tomb = try codec.seal(
                        itemClass: item.itemClass, uuid: row.uuid, attributes: item.attributes, data: nil,
                        tombstone: true, primaryKeyTag: row.primaryKeyTag)
                    try db.run(
                        "UPDATE items SET tomb = 1, attributes = ?, data = NULL WHERE id = ?",
                        [tomb.attributes.databaseValue, row.id.databaseValue])
                    try journalSyncChange(row: row.id, db: db)
                } else {
                    try deleteRow(row.id, db: db)
                }
            }
            guard deleted > 0 else { throw KeychainError(.itemNotFound, "no item matched") }
            return deleted
        }
    }

    /// Updates the matching identities: the certificate side with the changes certificates accept,
    /// then the key side with the others and the new secret (Apple's `handleUpdateIdentity`,
    /// `OSX/sec/Security/SecItem.m`).
    private func updateIdentities(_ query: ItemQuery, attributes changes: Attributes, data: Data?) throws -> Int {
        let identities = try findIdentities(query, includeData: false)
        guard !identities.isEmpty else { throw KeychainError(.itemNotFound, "no identity matched") }
        let certificateSchema = ItemSchema.of(.certificate)
        var certificateChanges: Attributes = [:]
        var keyChanges: Attributes = [:]
        for (name, value) in changes {
            if certificateSchema.spec(for: name) != nil {
                certificateChanges[name] = value
            } else if ItemSchema.of(.key).spec(for: name) != nil {
                keyChanges[name] = value
            } else {
                throw KeychainError(.noSuchAttribute, "identities have no attribute \(name)")
            }
        }
        for identity in identities {
            guard let label = identity.attributes["klbl"] else { continue }
            if !certificateChanges.isEmpty {
                try update(
                    ItemQuery(class: .certificate, attributes: ["pkhh": label], synchronizable: .any),
                    attributes: certificateChanges)
            }
            if !keyChanges.isEmpty || data != nil {
                try update(
                    ItemQuery(class: .key, synchronizable: .any, persistentID: identity.persistentID),
                    attributes: keyChanges, data: data)
            }
        }
        return identities.count
    }

    /// Deletes the certificates of the matching identities, then their private keys (Apple splits
    /// an identity query the same way: `explode_identity`, `OSX/sec/Security/SecItem.m`).
    private func deleteIdentities(_ query: ItemQuery) throws -> Int {
        let identities = try findIdentities(query, includeData: false)
        guard !identities.isEmpty else { throw KeychainError(.itemNotFound, "no identity matched") }
        for identity in identities {
            guard let label = identity.attributes["klbl"] else { continue }
            var certificates = ItemQuery(class: .certificate, attributes: ["pkhh": label], synchronizable: .any)
            for name in ["issr", "slnr", "ctyp"] as [AttributeName] {
                certificates.attributes[name] = identity.attributes[name]
            }
            _ = try? delete(certificates)
            _ = try? delete(ItemQuery(class: .key, synchronizable: .any, persistentID: identity.persistentID))
        }
        return identities.count
    }

    // MARK: - Internals

    static func schema(forWriting itemClass: ItemClass) throws -> ItemSchema {
        guard itemClass != .identity else {
            throw KeychainError(
                .unimplemented, "identities are added as a certificate and a key")
        }
        return ItemSchema.of(itemClass)
    }

    static func tagger(_ state: KeyRing.State) throws -> IndexTagger {
        guard !state.isClosed else { throw KeychainError(.notAvailable, "the keychain was closed") }
        guard let tagger = state.indexTagger else {
            throw KeychainError(.interactionNotAllowed, "the keychain must be unlocked first")
        }
        return tagger
    }

    func checkSize(data: Data?) throws {
        if let data, data.count > configuration.maximumDataSize {
            throw KeychainError.parameter("the secret is larger than \(configuration.maximumDataSize) bytes")
        }
    }

    /// Validates and converts attribute values for a class (as Apple's
    /// `keychain/securityd/SecDbItem.c` converts them by their kind): unknown attributes are
    /// `.noSuchAttribute`, oversized or ill-typed values `.parameter`; `ignoring` names are
    /// checked, then left out (values the engine sets itself, or never matches on).
    func normalize(_ attributes: Attributes, schema: ItemSchema, ignoring: Set<AttributeName>) throws -> Attributes {
        var result: Attributes = [:]
        // Room for what an add sets next (dates, group, accessibility, defaults), without rehashing.
        result.reserveCapacity(attributes.count + 8)
        for (name, value) in attributes {
            guard let spec = schema.spec(for: name) else {
                throw KeychainError(.noSuchAttribute, "\(schema.itemClass) items have no attribute \(name)")
            }
            switch value {
            case .string(let s) where s.utf8.count > configuration.maximumAttributeSize:
                throw KeychainError.parameter("attribute \(name) is too large")
            case .data(let d) where d.count > configuration.maximumAttributeSize:
                throw KeychainError.parameter("attribute \(name) is too large")
            default: break
            }
            let normalized = try spec.normalize(value)
            if spec.kind == .access, Accessibility(rawValue: normalized.stringValue ?? "") == nil {
                throw KeychainError.parameter("unknown accessibility value")
            }
            if !ignoring.contains(name) { result[name] = normalized }
        }
        return result
    }

    func withWriteTransaction<T>(_ body: (Database, KeyRing.State) throws -> T) throws -> T {
        try keys.read { state in
            try Self.run {
                try writer.writeWithoutTransaction { db in
                    var result: T?
                    try db.inTransaction(.immediate) {
                        result = try body(db, state)
                        return .commit
                    }
                    return result!
                }
            }
        }
    }

    /// Inserts a sealed row as row `id`, with tag rows for `tags`.
    private func insert(_ row: SealedRow, id: Int64, tags: [Data], db: Database) throws {
        do {
            try db.run(
                """
                INSERT INTO items(id, uuid, class, protection, agrp, sync, pk, tomb, attributes, data, tags)
                VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)
                """,
                [
                    id.databaseValue, row.uuid.databaseValue, row.itemClass.rawValue.databaseValue,
                    Int64(row.protection.rawValue).databaseValue, row.groupTag.databaseValue,
                    row.syncTag.databaseValue, row.primaryKeyTag.databaseValue, row.attributes.databaseValue,
                    row.data.databaseValue, Self.tagList(tags).databaseValue,
                ])
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw KeychainError(.duplicateItem, "an item with the same primary key exists")
        }
        try insertTags(tags, of: id, db: db)
    }

    /// Inserts an item's tag rows with one statement (one per number of tags, compiled once).
    func insertTags(_ tags: [Data], of itemID: Int64, db: Database) throws {
        guard !tags.isEmpty else { return }
        var arguments: [DatabaseValue] = []
        arguments.reserveCapacity(tags.count * 2)
        for tag in tags { arguments += [tag.databaseValue, itemID.databaseValue] }
        try db.run(Self.tagStatement(Self.tagInserts, tags.count, Self.tagInsert), arguments)
    }

    /// Deletes tag rows of an item with one statement.
    private func deleteTags(_ tags: [Data], of itemID: Int64, db: Database) throws {
        guard !tags.isEmpty else { return }
        try db.run(
            Self.tagStatement(Self.tagDeletes, tags.count, Self.tagDelete),
            [itemID.databaseValue] + tags.map(\.databaseValue))
    }

    /// An item's tag list (`items.tags`): its tags, one after the other.
    static func tagList(_ tags: [Data]) -> Data {
        var list = Data(capacity: tags.count * IndexTagger.tagLength)
        for tag in tags { list.append(tag) }
        return list
    }

    /// The tags of an item's tag list (`items.tags`): 16 bytes each.
    static func tags(inList list: Data) -> [Data] {
        stride(from: 0, to: list.count - list.count % IndexTagger.tagLength, by: IndexTagger.tagLength).map {
            Data(list[list.startIndex + $0..<list.startIndex + $0 + IndexTagger.tagLength])
        }
    }

    /// The statement for `count` tags: compiled texts for the usual counts, built otherwise.
    private static func tagStatement(_ texts: [String], _ count: Int, _ build: (Int) -> String) -> String {
        count < texts.count ? texts[count] : build(count)
    }

    /// The statement that inserts `count` tag rows.
    private static func tagInsert(_ count: Int) -> String {
        "INSERT OR IGNORE INTO tags(tag, item) VALUES " + repeatElement("(?, ?)", count: count).joined(separator: ", ")
    }

    /// The statement that deletes `count` tag rows of one item (the item's id comes first).
    private static func tagDelete(_ count: Int) -> String {
        "DELETE FROM tags WHERE item = ? AND tag IN (" + repeatElement("?", count: count).joined(separator: ", ") + ")"
    }

    /// ``tagInsert(_:)`` and ``tagDelete(_:)`` for the usual numbers of tags.
    private static let tagInserts = (0..<24).map(tagInsert)
    private static let tagDeletes = (0..<24).map(tagDelete)

    /// Turns a query into a plan: classes, keyed tags, filters to verify after decryption.
    func prepare(_ query: ItemQuery, writing: Bool) throws -> QueryPlan {
        let groups = effectiveGroups
        if (writing ? groups.writable : groups.groups).isEmpty {
            throw KeychainError(.missingEntitlement, "the caller has no access group")
        }
        let classes: [ItemClass]
        if query.itemClass == .identity {
            throw KeychainError(.unimplemented, "identities are changed through their certificate and key")
        } else if let itemClass = query.itemClass {
            classes = [itemClass]
        } else if query.persistentID != nil {
            classes = ItemClass.allCases.filter { $0 != .identity }
        } else {
            throw KeychainError.parameter("a query needs a class")
        }
        let schema = ItemSchema.of(query.itemClass ?? .genericPassword)
        var filters = try normalize(query.attributes, schema: schema, ignoring: Self.notFilters)
        var groupFilter: [String]?
        if let group = filters[.accessGroup]?.stringValue {
            guard writing ? groups.canWrite(group) : groups.canRead(group) else {
                throw KeychainError(.missingEntitlement, "the caller may not use that access group")
            }
            groupFilter = [group]
        } else if !groups.allowsAll {
            groupFilter = writing ? groups.writable : groups.groups
        }
        filters[.accessGroup] = nil
        var sync: Int64?
        if let value = filters[.synchronizable]?.numberValue {
            sync = value
        } else if query.persistentID == nil {
            switch query.synchronizable {
            case .no: sync = 0
            case .yes: sync = 1
            case .any: sync = nil
            }
        }
        filters[.synchronizable] = nil
        var plan = QueryPlan(
            classes: classes, filters: filters, groups: groupFilter, synchronizable: sync,
            persistentID: query.persistentID, limit: query.limit, includesTombstones: query.includesTombstones,
            authenticationUI: query.authenticationUI, hostOrSubdomain: query.hostOrSubdomain)
        plan.opensApplicationPassword = query.opensApplicationPassword
        plan.userVerified = Self.userVerified
        plan.fingerAnswer = Self.fingerAnswer
        plan.companionAnswer = Self.companionAnswer
        plan.caller = Self.callingApplication
        plan.allowedItems = Self.allowedItems
        return plan
    }
}
