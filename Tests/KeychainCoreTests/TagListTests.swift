import Foundation
import GRDB
import SeededRandom
import Testing

@testable import KeychainCore

/// Format 3: each row lists its tag rows, and persistent identities carry their row id, so
/// that an add writes no per-item tag index and no identity index.
@Suite("Tag lists and row identities")
struct TagListTests {
    /// Every item's tag list names exactly its tag rows, and no tag row names a missing item.
    private func checkTagLists(_ path: String, _ comment: Comment? = nil) throws {
        try GRDBTestAccess.queue(path).read { db in
            var lists: [Int64: Set<Data>] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, tags FROM items") {
                let list: Data = row["tags"]
                #expect(list.count % IndexTagger.tagLength == 0, comment)
                lists[row["id"]] = Set(KeychainDatabase.tags(inList: list))
            }
            var rows: [Int64: Set<Data>] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT item, tag FROM tags") {
                rows[row["item"], default: []].insert(row["tag"])
            }
            #expect(Set(rows.keys).isSubset(of: Set(lists.keys)), "tag rows of deleted items: \(comment ?? "")")
            for (id, list) in lists {
                #expect(list == rows[id] ?? [], "item \(id): \(comment ?? "")")
            }
        }
    }

    @Test("a new file has no per-item tag index, no identity index and no foreign key")
    func newFileSchema() throws {
        let temporary = try TemporaryKeychain()
        let names = try GRDBTestAccess.queue(temporary.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        }
        #expect(Set(names) == ["items_primary_key", "items_tombstones"])
        let foreignKeys = try GRDBTestAccess.queue(temporary.path).read { db in
            try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(tags)")
        }
        #expect(foreignKeys.isEmpty)
    }

    @Test("adds, updates, upserts and deletes keep every tag list equal to its tag rows", arguments: 0..<4)
    func randomWritesKeepTagListsExact(seed: UInt64) throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        var random = SplitMix64(seed: seed)
        let accounts = ["a", "b", "c", "d"]
        var succeeded = [Int](repeating: 0, count: 7)
        func count(_ kind: Int, _ body: () throws -> Void) {
            if (try? body()) != nil { succeeded[kind] += 1 }
        }
        for step in 0..<120 {
            let account = accounts.randomElement(using: &random)!
            var item = genericPassword(account, service: ["s1", "s2"].randomElement(using: &random)!)
            if Bool.random(using: &random) { item.attributes[.synchronizable] = .number(1) }
            let target = ItemQuery(
                class: .genericPassword, attributes: [.account: .string(account)], synchronizable: .any)
            var withTombstones = target
            withTombstones.includesTombstones = true
            let kind = Int.random(in: 0..<7, using: &random)
            switch kind {
            case 0: count(kind) { try keychain.add(item) }
            case 1: count(kind) { try keychain.upsert(item) }
            case 2:
                count(kind) {
                    try keychain.update(
                        target,
                        attributes: [
                            .label: .string("L\(step % 3)"),
                            .account: .string(accounts.randomElement(using: &random)!),
                        ])
                }
            case 3: count(kind) { try keychain.update(target, attributes: [.service: .string("s\(step % 4)")]) }
            case 4: count(kind) { try keychain.update(withTombstones, attributes: [.label: .string("revived")]) }
            case 5:
                var second = item
                second.attributes[.service] = .string("batch")
                count(kind) { try keychain.add(contentsOf: [second, genericPassword("e\(step)", service: "batch")]) }
            default: count(kind) { try keychain.delete(target) }
            }
            try checkTagLists(temporary.path, "seed \(seed), step \(step)")
        }
        // Every kind of write took effect at least once: the lists were checked against real changes.
        #expect(succeeded.allSatisfy { $0 > 0 }, "successes per kind: \(succeeded)")
        // Whatever survived is still found through its tags.
        for item in try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)) {
            var byAttributes = ItemQuery(class: .genericPassword, synchronizable: .any)
            byAttributes.attributes = [.account: item.attributes[.account]!, .service: item.attributes[.service]!]
            #expect(try keychain.find(byAttributes).map(\.persistentID).contains(item.persistentID))
        }
    }

    @Test("a re-added item replaces its tombstone and the tombstone's tag rows")
    func tombstoneReplacementRemovesItsTags() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        var item = genericPassword("synced")
        item.attributes[.synchronizable] = .number(1)
        item.attributes[.label] = .string("first label")
        try keychain.add(item)
        try keychain.delete(ItemQuery(class: .genericPassword, synchronizable: .yes))
        item.attributes[.label] = .string("second label")
        try keychain.add(item)
        try checkTagLists(temporary.path)
        let tombstones = ItemQuery(
            class: .genericPassword, attributes: [.label: .string("first label")], synchronizable: .any,
            includesTombstones: true)
        #expect(try keychain.find(tombstones).isEmpty)
    }

    @Test("upgrading format-2 and format-1 files fills each row's tag list from its tag rows", arguments: [1, 2])
    func upgradeFillsTagLists(version: Int) throws {
        let fixture = try FixtureCopy(version: version)
        let copy = fixture.path
        let keychain = try fixture.open()
        try checkTagLists(copy)
        let lists = try GRDBTestAccess.queue(copy).read { db in
            try Data.fetchAll(db, sql: "SELECT tags FROM items")
        }
        #expect(lists.allSatisfy { !$0.isEmpty })
        // Writes on the upgraded file keep them exact; a delete leaves no tag row behind.
        try keychain.unlock(password: "fixture")
        try keychain.update(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("alice")]),
            attributes: [.account: .string("carol")])
        try keychain.add(genericPassword("dave"))
        try checkTagLists(copy)
        try keychain.delete(ItemQuery(class: .internetPassword))
        try keychain.delete(ItemQuery(class: .genericPassword, synchronizable: .any))
        try checkTagLists(copy)
        let orphans = try GRDBTestAccess.queue(copy).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM tags WHERE item NOT IN (SELECT id FROM items)")
        }
        #expect(orphans == 0)
    }

    @Test("an identity carries its row id, and random bits that the row must match")
    func identityLayout() throws {
        for rowID: Int64 in [1, 2, 255, 256, 70_000, PersistentIdentity.maximumRowID] {
            let first = try PersistentIdentity.make(rowID: rowID)
            let second = try PersistentIdentity.make(rowID: rowID)
            #expect(PersistentIdentity.rowID(of: first) == rowID)
            #expect(first != second)
            #expect(first.uuidString.dropFirst(14).first == "8", "version 8: \(first)")
        }
        // Every fully random byte (7 and 9–15) varies: 64 identities with one value in some
        // of these bytes would happen by chance with probability about 2^-500.
        let identities = try (0..<64).map { _ in try PersistentIdentity.make(rowID: 1) }
        let bytes = identities.map { withUnsafeBytes(of: $0.uuid, Array.init) }
        for index in [7, 9, 10, 11, 12, 13, 14, 15] {
            #expect(Set(bytes.map { $0[index] }).count > 1, "byte \(index) is not random")
        }
        #expect(PersistentIdentity.rowID(of: UUID(uuidString: "0B54A4D4-41A6-4F05-8C2D-3E9D1C0E7A10")!) == nil)
        #expect(throws: KeychainError.self) { try PersistentIdentity.make(rowID: 0) }
        #expect(throws: KeychainError.self) { try PersistentIdentity.make(rowID: PersistentIdentity.maximumRowID + 1) }
    }

    @Test("an identity read from its 16 stored bytes is the identity written, and other lengths are refused")
    func identityFromStoredBytes() throws {
        for identity in [
            try PersistentIdentity.make(rowID: 70_000), UUID(uuidString: "0B54A4D4-41A6-4F05-8C2D-3E9D1C0E7A10")!,
        ] {
            let stored = withUnsafeBytes(of: identity.uuid) { Data($0) }
            #expect(UUID(bytes: stored) == identity)
            #expect(UUID(bytes: Data([0, 1, 2, 3]) + stored) == nil)
            #expect(UUID(bytes: (Data([0, 1, 2, 3]) + stored).suffix(16)) == identity)
        }
        #expect(UUID(bytes: Data(count: 15)) == nil)
        #expect(UUID(bytes: Data()) == nil)
    }

    @Test("the identity of a deleted item does not name the item that reuses its row id")
    func deletedIdentityStaysDead() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.add(genericPassword("first"))
        let deleted = try #require(try keychain.add(genericPassword("last")).persistentID)
        try keychain.delete(query(.genericPassword, [.account: .string("last")]))
        let reused = try #require(try keychain.add(genericPassword("next")).persistentID)
        #expect(PersistentIdentity.rowID(of: reused) == PersistentIdentity.rowID(of: deleted))
        #expect(try keychain.find(ItemQuery(class: nil, persistentID: deleted)).isEmpty)
        let found = try keychain.find(ItemQuery(class: nil, persistentID: reused))
        #expect(found.map { $0.attributes[.account] } == [.string("next")])
    }

    @Test("a lookup by identity reads one row by its id")
    func identityLookupUsesRowID() throws {
        let temporary = try TemporaryKeychain()
        let shape = SearchShape(
            tags: 0, persistentID: .row, includesTombstones: false, groups: nil, synchronizable: false,
            protection: false, limit: false, includeData: false)
        let plan = try GRDBTestAccess.queue(temporary.path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + shape.sql, arguments: ["genp", 1, Data(count: 16)])
                .map { $0["detail"] as String? ?? "" }
        }
        #expect(plan.contains { $0.contains("USING INTEGER PRIMARY KEY") }, "\(plan)")
    }
}

/// New files find passwords by service (or server), by service and account, and by account
/// alone through the primary-key index, whose keys start with those values' tags: neither
/// has tag rows. Files of format 3 did the same with the account first and tag rows for the
/// service (``IndexLayout/primaryKeyPrefix``).
@Suite("Primary-key prefix lookups")
struct PrimaryKeyPrefixTests {
    private func keychainWithAccounts() throws -> TemporaryKeychain {
        let temporary = try TemporaryKeychain()
        for (account, service) in [("alice", "mail"), ("alice", "chat"), ("bob", "mail"), ("", "mail")] {
            var item = genericPassword(account, service: service, data: "\(account)@\(service)")
            item.attributes[.label] = .string("\(account) on \(service)")
            try temporary.keychain.add(item)
        }
        return temporary
    }

    /// A keychain with a synchronizable item of alice's for each service (secret: its index),
    /// bob's item for the first service, and a tombstone in place of alice's item for `deleted`.
    private func synchronizedAlice(services: [String], deleting deleted: String) throws -> TemporaryKeychain {
        let temporary = try TemporaryKeychain()
        for (index, service) in services.enumerated() {
            var item = genericPassword("alice", service: service, data: "\(index)")
            item.attributes[.synchronizable] = .number(1)
            try temporary.keychain.add(item)
        }
        try temporary.keychain.add(genericPassword("bob", service: services[0]))
        try temporary.keychain.delete(
            ItemQuery(
                class: .genericPassword, attributes: [.account: .string("alice"), .service: .string(deleted)],
                synchronizable: .yes))
        return temporary
    }

    private func secrets(_ keychain: KeychainDatabase, _ query: ItemQuery) throws -> Set<String> {
        Set(try keychain.find(query, includeData: true).map { String(decoding: $0.data ?? Data(), as: UTF8.self) })
    }

    @Test("neither the account nor the service has tag rows; the label has its own")
    func accountHasNoTagRows() throws {
        let temporary = try TemporaryKeychain()
        var item = genericPassword("alice", service: "mail")
        item.attributes[.label] = .string("Alice")
        try temporary.keychain.add(item)
        let counts = try GRDBTestAccess.queue(temporary.path).read { db in
            (
                try Int.fetchOne(db, sql: "SELECT count(*) FROM tags"),
                try Int.fetchOne(db, sql: "SELECT length(pk) FROM items")
            )
        }
        #expect(counts.0 == 1)
        #expect(counts.1 == 2 * IndexTagger.prefixLength + IndexTagger.tagLength)
    }

    @Test(
        "lookups by account, account and service, service, and account with label find exactly their items",
        arguments: [
            ([AttributeName.account: AttributeValue.string("alice")], ["alice@mail", "alice@chat"]),
            ([.account: .string("alice"), .service: .string("chat")], ["alice@chat"]),
            ([.service: .string("mail")], ["alice@mail", "bob@mail", "@mail"]),
            ([.account: .string("")], ["@mail"]),
            ([.account: .string("alice"), .label: .string("alice on mail")], ["alice@mail"]),
            ([.service: .string("mail"), .label: .string("bob on mail")], ["bob@mail"]),
            ([.label: .string("alice on chat")], ["alice@chat"]),
            ([.service: .string("chat"), .label: .string("alice on mail")], []),
            ([.account: .string("bob"), .label: .string("alice on mail")], []),
            ([.account: .string("carol")], []),
            ([.account: .string("bob"), .service: .string("chat")], []),
        ])
    func lookups(filters: Attributes, expected: [String]) throws {
        let temporary = try keychainWithAccounts()
        #expect(try secrets(temporary.keychain, query(.genericPassword, filters)) == Set(expected))
    }

    @Test(
        "a limit applies to the items that match, in the order they were added, with and without tombstones",
        arguments: [false, true])
    func limitAfterPrefix(includesTombstones: Bool) throws {
        // Tombstones among them, when asked for, count like the others.
        let temporary = try synchronizedAlice(services: (0..<20).map { "service-\($0)" }, deleting: "service-3")
        let keychain = temporary.keychain
        for limit in [1, 5, 19] {
            var limited = ItemQuery(
                class: .genericPassword, attributes: [.account: .string("alice")], synchronizable: .any, limit: limit,
                includesTombstones: includesTombstones)
            limited.limit = limit
            let services = try keychain.find(limited).map { $0.attributes[.service] }
            let expected = (0..<20).filter { includesTombstones || $0 != 3 }.prefix(limit).map {
                AttributeValue.string("service-\($0)")
            }
            #expect(services == Array(expected), "limit \(limit)")
        }
    }

    @Test("an updated tombstone is a live item again, without the tombstone attribute")
    func revivedTombstoneIsLive() throws {
        let keychain = try KeychainDatabase.inMemory()
        var item = genericPassword("alice", data: "old")
        item.attributes[.synchronizable] = .number(1)
        try keychain.add(item)
        try keychain.delete(ItemQuery(class: .genericPassword, synchronizable: .yes))
        let everything = ItemQuery(class: .genericPassword, synchronizable: .any, includesTombstones: true)
        #expect(try keychain.update(everything, attributes: [.label: .string("back")]) == 1)
        let found = try keychain.find(everything)
        #expect(found.count == 1)
        #expect(found.first?.attributes[.tombstone] == nil)
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)).count == 1)
        // An upsert never stores a tombstone attribute given by the caller.
        var upserted = genericPassword("carol")
        upserted.attributes[.tombstone] = .number(1)
        try keychain.upsert(upserted)
        try keychain.upsert(upserted)
        let carol = try keychain.find(query(.genericPassword, [.account: .string("carol")]))
        #expect(carol.count == 1)
        #expect(carol.first?.attributes[.tombstone] == nil)
    }

    @Test("adds keep working when a row id beyond what an identity carries was written into the file")
    func hugeRowIDDoesNotBlockAdds() throws {
        let temporary = try TemporaryKeychain()
        try temporary.keychain.add(genericPassword("first"))
        try GRDBTestAccess.queue(temporary.path).write { db in
            try db.execute(sql: "UPDATE items SET id = ?", arguments: [Int64(1) << 50])
        }
        let added = try temporary.keychain.add(genericPassword("second"))
        let identity = try #require(added.persistentID)
        let rowID = try #require(PersistentIdentity.rowID(of: identity))
        #expect(rowID > 0 && rowID <= PersistentIdentity.maximumRowID)
        let found = try temporary.keychain.find(ItemQuery(class: nil, persistentID: identity))
        #expect(found.map { $0.attributes[.account] } == [.string("second")])
    }

    @Test("tombstones are found by account when asked for, and only then")
    func tombstonesByAccount() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        var synced = genericPassword("alice", service: "sync", data: "old")
        synced.attributes[.synchronizable] = .number(1)
        try keychain.add(synced)
        try keychain.add(genericPassword("alice", service: "local"))
        try keychain.delete(
            ItemQuery(class: .genericPassword, attributes: [.service: .string("sync")], synchronizable: .yes))
        let live = ItemQuery(class: .genericPassword, attributes: [.account: .string("alice")], synchronizable: .any)
        #expect(try keychain.find(live).map { $0.attributes[.service] } == [.string("local")])
        var all = live
        all.includesTombstones = true
        let found = try keychain.find(all)
        #expect(Set(found.map { $0.attributes[.service] }) == [.string("sync"), .string("local")])
        #expect(found.filter { $0.attributes[.tombstone] == .number(1) }.count == 1)
    }

    @Test("a lookup by account, or by account and service, reads the primary-key index", arguments: [false, true])
    func prefixLookupsUseTheIndex(includesTombstones: Bool) throws {
        let temporary = try TemporaryKeychain()
        let shape = SearchShape(
            tags: 0, persistentID: nil, includesTombstones: includesTombstones, groups: nil, synchronizable: true,
            protection: false, primaryKeyRange: true, limit: false, includeData: true)
        let bounds = [Data(repeating: 0, count: 32), Data(repeating: 0xFF, count: 32)]
        var arguments: StatementArguments = ["genp", Data(count: 16)]
        for bound in includesTombstones ? bounds + bounds : bounds { arguments += [bound] }
        let plan = try GRDBTestAccess.queue(temporary.path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + shape.sql, arguments: arguments)
                .map { $0["detail"] as String? ?? "" }
        }
        #expect(!plan.contains { $0.hasPrefix("SCAN items") || $0.hasPrefix("SCAN i") }, "\(plan)")
        #expect(plan.contains { $0.contains("items_primary_key") }, "\(plan)")
        if includesTombstones { #expect(plan.contains { $0.contains("items_tombstones") }, "\(plan)") }
    }

    @Test(
        "a lookup by account alone scans the primary-key index (and the tombstones'), never the table",
        arguments: [false, true])
    func accountLookupScansTheIndex(includesTombstones: Bool) throws {
        let temporary = try TemporaryKeychain()
        let shape = SearchShape(
            tags: 0, persistentID: nil, includesTombstones: includesTombstones, groups: nil, synchronizable: true,
            protection: false, scannedKeyBytes: true, limit: false, includeData: true)
        var arguments: StatementArguments = ["genp", Data(count: 16)]
        for _ in 0..<(includesTombstones ? 2 : 1) { arguments += [Data(count: IndexTagger.prefixLength)] }
        let plan = try GRDBTestAccess.queue(temporary.path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + shape.sql, arguments: arguments)
                .map { $0["detail"] as String? ?? "" }
        }
        #expect(!plan.contains { $0 == "SCAN items" || $0 == "SCAN i" || $0.contains("SCAN i ") }, "\(plan)")
        #expect(plan.contains { $0.contains("USING INDEX items_primary_key") }, "\(plan)")
        if includesTombstones { #expect(plan.contains { $0.contains("items_tombstones") }, "\(plan)") }
    }

    @Test("a lookup by account alone finds live items and, when asked for, tombstones, in the order added")
    func accountLookupFindsTombstones() throws {
        let temporary = try synchronizedAlice(services: ["c", "a", "b"], deleting: "a")
        let keychain = temporary.keychain
        var alice = ItemQuery(class: .genericPassword, attributes: [.account: .string("alice")], synchronizable: .any)
        #expect(try keychain.find(alice).map { $0.attributes[.service] } == [.string("c"), .string("b")])
        alice.includesTombstones = true
        #expect(try keychain.find(alice).map { $0.attributes[.service] } == [.string("c"), .string("a"), .string("b")])
    }

    @Test("another value with the same prefix is not a match; a tag row that lies is tampering")
    func prefixMismatchIsNotTampering() {
        let plan = QueryPlan(
            classes: [.genericPassword], filters: [.account: .string("alice"), .label: .string("L")], groups: nil,
            synchronizable: nil, persistentID: nil, limit: nil, includesTombstones: false)
        let otherAccount: Attributes = [.account: .string("mallory"), .label: .string("L")]
        let otherLabel: Attributes = [.account: .string("alice"), .label: .string("M")]
        #expect(plan.verdict(otherAccount, itemClass: .genericPassword, layout: .primaryKeyPrefix) == .filteredOut)
        #expect(plan.verdict(otherAccount, itemClass: .genericPassword, layout: .tagged) == .contradictsIndex)
        #expect(plan.verdict(otherLabel, itemClass: .genericPassword, layout: .primaryKeyPrefix) == .contradictsIndex)
        // In the lookup-key layout, the account alone is found by its bytes in the primary key.
        #expect(plan.verdict(otherAccount, itemClass: .genericPassword, layout: .lookupKeys) == .filteredOut)
        #expect(plan.verdict(otherLabel, itemClass: .genericPassword, layout: .lookupKeys) == .contradictsIndex)
        let byService = QueryPlan(
            classes: [.genericPassword], filters: [.service: .string("mail"), .label: .string("L")], groups: nil,
            synchronizable: nil, persistentID: nil, limit: nil, includesTombstones: false)
        let otherService: Attributes = [.service: .string("chat"), .label: .string("L")]
        #expect(byService.verdict(otherService, itemClass: .genericPassword, layout: .lookupKeys) == .filteredOut)
        #expect(
            byService.verdict(otherService, itemClass: .genericPassword, layout: .primaryKeyPrefix) == .contradictsIndex
        )
    }

    @Test(
        "a file whose recorded index layout was removed or changed does not open",
        arguments: [0, 1, 2, 3], [false, true])
    func layoutIsAuthenticated(edit: Int, password: Bool) throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 7, count: 32)))
        _ = try KeychainDatabase.create(at: path, password: password ? "pw" : nil, configuration: configuration)
        try GRDBTestAccess.queue(path).write { db in
            switch edit {
            case 0: try db.execute(sql: "DELETE FROM meta WHERE name = 'index'")
            case 1: try db.execute(sql: "UPDATE meta SET value = x'04' WHERE name = 'index'")
            case 2: try db.execute(sql: "UPDATE meta SET value = CAST(x'02' || value AS BLOB) WHERE name = 'index'")
            default: try db.execute(sql: "UPDATE meta SET value = x'02' WHERE name = 'index'")
            }
        }
        let code = errorCode { _ = try KeychainDatabase.open(at: path, configuration: configuration) }
        // Removed or changed to another layout: the wrapped keys no longer authenticate (and do
        // with the recorded layout), so the header is known to be altered; edited otherwise: the
        // value is not a layout.
        #expect(code == (edit == 0 || edit == 3 ? .decode : .invalidKeychain), "\(String(describing: code))")
    }

    @Test("a layout entry added to a file of layout 1 does not open either")
    func layoutAddedToOldFile() throws {
        let fixture = try FixtureCopy(version: 2)
        try GRDBTestAccess.queue(fixture.path).write { db in
            try db.execute(sql: "INSERT INTO meta(name, value) VALUES ('index', x'02')")
        }
        #expect(errorCode { _ = try fixture.open() } == .decode)
    }

    @Test("an upgraded older file keeps its layout: accounts keep their tag rows")
    func upgradedFileKeepsTaggedLayout() throws {
        let fixture = try FixtureCopy(version: 2)
        let copy = fixture.path
        let keychain = try fixture.open()
        try keychain.unlock(password: "fixture")
        try keychain.add(genericPassword("erin", service: "new"))
        let pkLengths = try GRDBTestAccess.queue(copy).read { db in
            Set(try Int.fetchAll(db, sql: "SELECT length(pk) FROM items"))
        }
        #expect(pkLengths == [IndexTagger.tagLength])
        let found = try keychain.find(query(.genericPassword, [.account: .string("erin")]))
        #expect(found.count == 1)
    }
}
