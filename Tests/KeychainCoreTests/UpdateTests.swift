import Foundation
import GRDB
import KeychainCore
import Testing

/// Updates rewrite a row in place: the row keeps its id, and only index rows of changed
/// values are replaced.
@Suite("Updates in place")
struct UpdateInPlaceTests {
    private struct Snapshot: Equatable {
        var rows: [[String]]
        var tags: Set<[String]>
    }

    private func snapshot(_ path: String) throws -> Snapshot {
        try GRDBTestAccess.queue(path).read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT id, hex(uuid), hex(pk), hex(agrp) FROM items ORDER BY id").map
            {
                row in (0..<4).map { "\(row[$0] as DatabaseValue)" }
            }
            let tags = try Row.fetchAll(db, sql: "SELECT hex(tag), item FROM tags").map { row in
                ["\(row[0] as DatabaseValue)", "\(row[1] as DatabaseValue)"]
            }
            return Snapshot(rows: rows, tags: Set(tags))
        }
    }

    @Test("a new secret keeps the row, its identity and every index row")
    func newSecretTouchesNoIndexRow() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        let added = try keychain.add(genericPassword("alice", data: "old"))
        try keychain.add(genericPassword("bob"))
        let before = try snapshot(temporary.path)
        #expect(
            try keychain.update(
                query(.genericPassword, [.account: .string("alice")]), attributes: [:], data: Data("new".utf8)) == 1)
        #expect(try snapshot(temporary.path) == before)
        let found = try #require(
            try keychain.findFirst(query(.genericPassword, [.account: .string("alice")]), includeData: true))
        #expect(found.data == Data("new".utf8))
        #expect(found.persistentID == added.persistentID)
    }

    @Test("a new secret writes one page to the log, not the item's index pages")
    func newSecretWritesOnePage() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        for index in 0..<50 { try keychain.add(genericPassword("user\(index)")) }
        let queue = try GRDBTestAccess.queue(temporary.path)
        let pageSize = try queue.read { try Int.fetchOne($0, sql: "PRAGMA page_size") } ?? 4096
        _ = try queue.writeWithoutTransaction { try Row.fetchOne($0, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        #expect(fileSize(temporary.path + "-wal") == 0)
        try keychain.update(
            query(.genericPassword, [.account: .string("user7")]), attributes: [:], data: Data("new".utf8))
        let frames = (fileSize(temporary.path + "-wal") - 32) / (pageSize + 24)
        #expect(frames >= 1 && frames <= 2, "\(frames) pages written")
    }

    private func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1
    }

    @Test(
        "a changed account and service move their index entries: the old values find nothing, the new ones the item"
    )
    func changedAttributeMovesIndexRow() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        var item = genericPassword("alice", data: "secret")
        item.attributes[.label] = .string("Alice")
        let added = try keychain.add(item)
        let before = try snapshot(temporary.path)
        try keychain.update(
            query(.genericPassword, [.account: .string("alice")]),
            attributes: [.account: .string("carol"), .service: .string("other")])
        let after = try snapshot(temporary.path)
        #expect(after.rows.map { $0[0] } == before.rows.map { $0[0] })  // same row id
        // A new primary-key tag, which carries the service and the account; neither has tag
        // rows, so the label's stays as it was.
        #expect(after.rows[0][2] != before.rows[0][2])
        #expect(after.tags == before.tags && after.tags.count == 1)
        try keychain.update(query(.genericPassword, [.label: .string("Alice")]), attributes: [.label: .string("Carol")])
        let relabelled = try snapshot(temporary.path)
        #expect(relabelled.tags.count == 1 && relabelled.tags.isDisjoint(with: after.tags))  // the label's row replaced
        #expect(try keychain.find(query(.genericPassword, [.label: .string("Alice")])).isEmpty)
        #expect(try keychain.find(query(.genericPassword, [.account: .string("alice")])).isEmpty)
        #expect(try keychain.find(query(.genericPassword, [.service: .string("svc")])).isEmpty)
        for lookup: Attributes in [
            [.account: .string("carol")], [.service: .string("other")],
            [.account: .string("carol"), .service: .string("other")], [.label: .string("Carol")],
        ] {
            let moved = try #require(try keychain.findFirst(query(.genericPassword, lookup), includeData: true))
            #expect(moved.data == Data("secret".utf8))
            #expect(moved.persistentID == added.persistentID)
        }
    }

    @Test("a changed access group updates the group column and stays findable by group")
    func changedGroup() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.add(genericPassword("alice"))
        try keychain.update(
            query(.genericPassword, [.account: .string("alice")]), attributes: [.accessGroup: .string("other")])
        let found = try keychain.find(query(.genericPassword, [.accessGroup: .string("other")]))
        #expect(found.map { $0.attributes[.account] } == [.string("alice")])
        #expect(try keychain.find(query(.genericPassword, [.accessGroup: .string("default")])).isEmpty)
    }
}
