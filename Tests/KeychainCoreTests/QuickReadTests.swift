import Foundation
import Testing

@testable import KeychainCore

/// One-class searches of a pooled keychain run on read-only connections of their own
/// (`QuickReaders`), outside GRDB's pool: they must see every commit as the pool's readers do,
/// and leave the file as the pool leaves it.
@Suite("Searches on the handle's own read connections")
struct QuickReadTests {
    private let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 7, count: 32)))

    private func secret(_ keychain: KeychainDatabase, _ account: String) throws -> String? {
        try keychain.findFirst(
            ItemQuery(class: .genericPassword, attributes: [.service: .string("svc"), .account: .string(account)]),
            includeData: true
        ).flatMap { $0.data.map { String(decoding: $0, as: UTF8.self) } }
    }

    @Test("a search sees at once what this handle and another handle on the file add, update and delete")
    func seesEveryCommit() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let reader = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
        let writer = try KeychainDatabase.open(at: path, configuration: configuration)
        #expect(try secret(reader, "a") == nil)
        #expect(reader.quickReaders?.opened == 1, "the search ran on a connection of the handle's own")

        try writer.add(genericPassword("a", data: "one"))
        #expect(try secret(reader, "a") == "one")
        _ = try writer.update(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("a")]), attributes: [:],
            data: Data("two".utf8))
        #expect(try secret(reader, "a") == "two")
        try reader.add(genericPassword("b", data: "mine"))
        #expect(try secret(reader, "b") == "mine")
        #expect(try secret(writer, "b") == "mine")
        _ = try writer.delete(ItemQuery(class: .genericPassword, attributes: [.account: .string("a")]))
        #expect(try secret(reader, "a") == nil)
        #expect(reader.quickReaders?.opened == 1, "one connection served every search in turn")
    }

    @Test("more threads searching at once than the handle has connections all get their items")
    func concurrentSearches() throws {
        let scratch = try Scratch()
        let keychain = try KeychainDatabase.create(
            at: scratch.file("k.keychain-db"), password: nil, configuration: configuration)
        try keychain.add(contentsOf: (0..<50).map { genericPassword("a\($0)", data: "s\($0)") })
        let wrong = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<200 {
                let account = (thread * 7 + index) % 50
                if (try? secret(keychain, "a\(account)")) != "s\(account)" { wrong.withLock { $0 += 1 } }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect((keychain.quickReaders?.opened ?? 0) <= QuickReaders.limit)
    }

    @Test("a released handle leaves no log: its own read connections close before its writer")
    func releaseRemovesTheLog() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        do {
            let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
            try keychain.add(genericPassword("a"))
            #expect(try secret(keychain, "a") == "secret")
            #expect(keychain.quickReaders?.opened == 1)
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(try secret(try KeychainDatabase.open(at: path, configuration: configuration), "a") == "secret")
    }
}
