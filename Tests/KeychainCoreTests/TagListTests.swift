import Foundation
import GRDB
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
        var random = SeededGenerator(seed: seed)
        let accounts = ["a", "b", "c", "d"]
        for step in 0..<60 {
            let account = accounts.randomElement(using: &random)!
            let synchronizable = Bool.random(using: &random)
            var item = genericPassword(account, service: ["s1", "s2"].randomElement(using: &random)!)
            if synchronizable { item.attributes[.synchronizable] = .number(1) }
            let target = ItemQuery(
                class: .genericPassword, attributes: [.account: .string(account)], synchronizable: .any)
            switch Int.random(in: 0..<5, using: &random) {
            case 0: _ = try? keychain.add(item)
            case 1: try keychain.upsert(item)
            case 2:
                _ = try? keychain.update(
                    target,
                    attributes: [
                        .label: .string("L\(step % 3)"), .account: .string(accounts.randomElement(using: &random)!),
                    ])
            case 3: _ = try? keychain.update(target, attributes: [.service: .string("s\(step % 4)")])
            default: _ = try? keychain.delete(target)
            }
            try checkTagLists(temporary.path, "seed \(seed), step \(step)")
        }
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
        let scratch = try Scratch()
        let copy = scratch.file("old.keychain-db")
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v\(version).keychain-db").path
        try FileManager.default.copyItem(atPath: fixture, toPath: copy)
        let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 0x42, count: 32)))
        let keychain = try KeychainDatabase.open(at: copy, configuration: configuration)
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
        #expect(PersistentIdentity.rowID(of: UUID(uuidString: "0B54A4D4-41A6-4F05-8C2D-3E9D1C0E7A10")!) == nil)
        #expect(throws: KeychainError.self) { try PersistentIdentity.make(rowID: 0) }
        #expect(throws: KeychainError.self) { try PersistentIdentity.make(rowID: PersistentIdentity.maximumRowID + 1) }
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

/// A deterministic generator (SplitMix64), so a failing seed can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
