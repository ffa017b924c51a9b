import Foundation
import KeychainCore
import Testing

/// The engine's sync journal: which writes it records, and how changes from other machines are
/// applied without being recorded again.
@Suite("Sync journal")
struct SyncJournalTests {
    private func synced(_ account: String, data: String = "secret") -> Item {
        var item = genericPassword(account, data: data)
        item.attributes[.synchronizable] = .number(1)
        return item
    }

    private func journaledAccounts(_ keychain: KeychainDatabase) throws -> [String] {
        try keychain.syncJournal().compactMap { $0.item?.attributes[.account]?.stringValue }.sorted()
    }

    @Test("with the journal off, nothing is recorded; turning it on records every synchronizable row once")
    func startRecordsExistingRows() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.add(synced("a"))
        try keychain.add(synced("b"))
        try keychain.add(genericPassword("local"))
        try keychain.delete(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("b")], synchronizable: .yes))
        #expect(try keychain.isSyncJournalOn() == false)
        #expect(try keychain.syncJournal().isEmpty)
        try keychain.startSyncJournal()
        #expect(try keychain.isSyncJournalOn())
        let entries = try keychain.syncJournal()
        #expect(try journaledAccounts(keychain) == ["a", "b"])
        // The deleted item is journaled as its tombstone.
        #expect(
            entries.first { $0.item?.attributes[.account] == .string("b") }?.item?.attributes[.tombstone] == .number(1))
        #expect(entries.first { $0.item?.attributes[.account] == .string("a") }?.item?.data == Data("secret".utf8))
    }

    @Test("adds, updates and deletes of synchronizable items are journaled; other items are not")
    func writesAreJournaled() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.startSyncJournal()
        try keychain.add(genericPassword("local"))
        try keychain.update(query(.genericPassword, [.account: .string("local")]), attributes: [.label: .string("x")])
        #expect(try keychain.syncJournal().isEmpty)
        try keychain.add(synced("a"))
        let added = try #require(try keychain.syncJournal().first)
        try keychain.update(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("a")], synchronizable: .yes),
            attributes: [:], data: Data("new".utf8))
        let updated = try #require(try keychain.syncJournal().first)
        #expect(updated.row == added.row)
        #expect(updated.clock > added.clock)
        #expect(updated.item?.data == Data("new".utf8))
        try keychain.delete(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("a")], synchronizable: .yes))
        let deleted = try #require(try keychain.syncJournal().first)
        #expect(deleted.clock > updated.clock)
        #expect(deleted.item?.attributes[.tombstone] == .number(1))
        #expect(try keychain.syncJournal().count == 1)
    }

    @Test("an item leaving the sync set (sync 1 → 0) is journaled, so the others delete it")
    func leavingTheSyncSetIsJournaled() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.add(synced("a"))
        try keychain.startSyncJournal()
        try keychain.withSyncTransaction { transaction in
            for entry in try keychain.syncJournal() {
                try transaction.removeJournalEntry(row: entry.row, clock: entry.clock)
            }
        }
        #expect(try keychain.syncJournal().isEmpty)
        try keychain.update(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("a")], synchronizable: .yes),
            attributes: [.synchronizable: .number(0)])
        let entry = try #require(try keychain.syncJournal().first)
        #expect(entry.item?.isSynchronizable == false)
    }

    @Test("a pushed entry is removed only if its row did not change again meanwhile")
    func removalKeepsLaterChanges() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.startSyncJournal()
        try keychain.add(synced("a"))
        let pushed = try #require(try keychain.syncJournal().first)
        try keychain.update(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("a")], synchronizable: .yes),
            attributes: [:], data: Data("changed while pushing".utf8))
        try keychain.withSyncTransaction { try $0.removeJournalEntry(row: pushed.row, clock: pushed.clock) }
        #expect(try keychain.syncJournal().first?.item?.data == Data("changed while pushing".utf8))
    }

    @Test("changes from another machine are applied without being journaled, and the clock moves past theirs")
    func remoteChangesAreNotJournaled() throws {
        let source = try TemporaryKeychain()
        try source.keychain.add(synced("a", data: "remote"))
        let remote = try #require(
            try source.keychain.find(
                ItemQuery(class: .genericPassword, synchronizable: .yes), includeData: true
            ).first)
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.startSyncJournal()
        let future: UInt64 = (UInt64(Date().timeIntervalSince1970 * 1000) + 86_400_000) << 16
        let row = try keychain.withSyncTransaction { transaction in
            try transaction.observe(clock: future)
            return try transaction.applyRemote(remote)
        }
        #expect(try keychain.syncJournal().isEmpty)
        let found = try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes), includeData: true)
        #expect(found.map(\.data) == [Data("remote".utf8)])
        #expect(found.first?.attributes[.creationDate] == remote.attributes[.creationDate])
        // A later local write is stamped after the clock reading it has seen.
        try keychain.update(
            ItemQuery(class: .genericPassword, synchronizable: .yes), attributes: [.label: .string("l")])
        #expect(try #require(try keychain.syncJournal().first).clock > future)
        // A remote deletion leaves a tombstone in the same row; a later remote add revives it.
        try keychain.withSyncTransaction { try $0.applyRemoteDeletion(row: row) }
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes)).isEmpty)
        let revived = try keychain.withSyncTransaction { try $0.applyRemote(remote) }
        #expect(revived == row)
        #expect(
            try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes), includeData: true).map(\.data)
                == [Data("remote".utf8)])
    }

    @Test("a local row is found by another machine's item's primary key, with its pending clock")
    func localRowByPrimaryKey() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try keychain.startSyncJournal()
        try keychain.add(synced("a", data: "mine"))
        // Another machine's copy carries every stored attribute (the access group included).
        var theirs = try #require(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes)).first)
        theirs.data = Data("theirs".utf8)
        let local = try keychain.withSyncTransaction { try $0.row(withPrimaryKeyOf: theirs) }
        #expect(local?.item.data == Data("mine".utf8))
        #expect(local?.pendingClock == (try keychain.syncJournal().first?.clock))
        theirs.attributes[.account] = .string("b")
        let other = try keychain.withSyncTransaction { try $0.row(withPrimaryKeyOf: theirs) }
        #expect(other == nil)
    }
}
