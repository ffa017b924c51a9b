import Foundation
import GRDB
import KeychainCore
import Testing

@Suite("Tampering and foreign files")
struct TamperTests {
    private func twoItems(_ keychain: KeychainDatabase, groupB: String = AccessGroups.defaultGroupName) throws {
        try keychain.add(genericPassword("alice", data: "alice-secret"))
        var bob = genericPassword("bob", data: "bob-secret")
        bob.attributes[.accessGroup] = .string(groupB)
        try keychain.add(bob)
    }

    private func readAll(_ keychain: KeychainDatabase) -> Result<[Item], KeychainError> {
        Result {
            try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any), includeData: true)
        }.mapError { $0 as! KeychainError }
    }

    @Test("a secret or attribute blob moved to another row fails to open", arguments: ["data", "attributes"])
    func blobSwapBetweenRows(column: String) throws {
        let temporary = try TemporaryKeychain()
        try twoItems(temporary.keychain)
        let queue = try GRDBTestAccess.queue(temporary.path)
        try queue.write { db in
            try db.execute(sql: "UPDATE items SET \(column) = (SELECT \(column) FROM items WHERE id = 1) WHERE id = 2")
        }
        #expect(throws: KeychainError.self) {
            _ = try temporary.keychain.find(
                ItemQuery(class: .genericPassword, attributes: [.account: .string("bob")]), includeData: true)
        }
        // The untouched item still reads back.
        let alice = try temporary.keychain.findFirst(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("alice")]), includeData: true)
        #expect(alice?.data == Data("alice-secret".utf8))
    }

    @Test(
        "a row moved to another class, group, protection class or sync state fails to open",
        arguments: [
            "class = 'inet'", "agrp = (SELECT agrp FROM items WHERE id = 2)", "protection = 3",
            "sync = (SELECT sync FROM items WHERE id = 2)", "pk = randomblob(16)",
            "uuid = randomblob(16)",
        ])
    func rowColumnTampering(change: String) throws {
        let temporary = try TemporaryKeychain()
        try temporary.keychain.add(genericPassword("alice"))
        var other = Item(
            class: .genericPassword, attributes: [.account: .string("x"), .accessGroup: .string("other")])
        other.attributes[.synchronizable] = .number(1)
        try temporary.keychain.add(other)
        let queue = try GRDBTestAccess.queue(temporary.path)
        try queue.write { db in try db.execute(sql: "UPDATE items SET \(change) WHERE id = 1") }
        let everything: [Result<[Item], any Error>] = [ItemClass.genericPassword, .internetPassword].map { itemClass in
            Result { try temporary.keychain.find(ItemQuery(class: itemClass, synchronizable: .any), includeData: true) }
        }
        let failures = everything.filter { if case .failure = $0 { true } else { false } }
        #expect(failures.count >= 1)
        for result in everything {
            if case .success(let items) = result {
                #expect(!items.contains { $0.attributes[.account] == .string("alice") })
            }
        }
    }

    @Test("a blob copied from another keychain with the same password and device key fails to open")
    func blobSwapBetweenKeychains() throws {
        let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 3, count: 32)))
        let first = try TemporaryKeychain(password: "pw", configuration: configuration)
        let second = try TemporaryKeychain(password: "pw", configuration: configuration)
        for keychain in [first.keychain, second.keychain] {
            try keychain.unlock(password: "pw")
            try keychain.add(genericPassword("alice", data: keychain === first.keychain ? "one" : "two"))
        }
        let source = try GRDBTestAccess.queue(first.path)
        let row = try source.read { db in try Row.fetchOne(db, sql: "SELECT * FROM items")! }
        let target = try GRDBTestAccess.queue(second.path)
        try target.write { db in
            try db.execute(
                sql: "UPDATE items SET data = ?, attributes = ?",
                arguments: [row["data"] as Data?, row["attributes"] as Data?])
        }
        #expect(throws: KeychainError.self) {
            _ = try second.keychain.find(ItemQuery(class: .genericPassword), includeData: true)
        }
        // Wrapped keys copied between the keychains do not open either.
        let wrapped = try source.read { db in
            try Row.fetchAll(db, sql: "SELECT name, value FROM meta WHERE name LIKE 'wrap.%'")
        }
        try target.write { db in
            for entry in wrapped {
                try db.execute(
                    sql: "UPDATE meta SET value = ? WHERE name = ?",
                    arguments: [entry["value"] as Data?, entry["name"] as String?])
            }
        }
        #expect(
            errorCode {
                _ = try KeychainDatabase.open(at: second.path, configuration: configuration).unlock(password: "pw")
            } != nil)
    }

    @Test("every single-bit flip in a sealed blob is detected", arguments: ["data", "attributes"])
    func bitFlipsAreDetected(column: String) throws {
        let temporary = try TemporaryKeychain()
        try temporary.keychain.add(genericPassword("alice", data: "alice-secret"))
        let queue = try GRDBTestAccess.queue(temporary.path)
        let original = try queue.read { db in try Data.fetchOne(db, sql: "SELECT \(column) FROM items")! }
        for bit in stride(from: 0, to: original.count * 8, by: 7) {
            var flipped = original
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            try queue.write { db in try db.execute(sql: "UPDATE items SET \(column) = ?", arguments: [flipped]) }
            let result = Result { try temporary.keychain.find(ItemQuery(class: .genericPassword), includeData: true) }
            guard case .failure(let error as KeychainError) = result else {
                Issue.record("bit \(bit) of \(column) went undetected")
                return
            }
            #expect(error.code == .decode)
        }
    }

    static let foreignContents: [(String, Data)] = [
        ("empty", Data()),
        ("garbage", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
        ("text", Data("SQLite format 2\nnot really\n".utf8)),
    ]

    @Test("a file that is not a keychain is refused and left unchanged", arguments: 0..<3)
    func foreignFileUnchanged(index: Int) throws {
        let scratch = try Scratch()
        let path = scratch.file("foreign.keychain-db")
        FileManager.default.createFile(atPath: path, contents: Self.foreignContents[index].1)
        let before = sha256(ofFile: path)
        #expect(errorCode { _ = try KeychainDatabase.open(at: path, configuration: .testing()) } == .invalidKeychain)
        #expect(sha256(ofFile: path) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test("another application's SQLite database is refused and left unchanged")
    func foreignSQLiteUnchanged() throws {
        let scratch = try Scratch()
        let path = scratch.file("other.sqlite")
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        }
        let before = sha256(ofFile: path)
        #expect(errorCode { _ = try KeychainDatabase.open(at: path, configuration: .testing()) } == .invalidKeychain)
        #expect(sha256(ofFile: path) == before)
    }

    @Test("a keychain of a future format version is refused and left unchanged")
    func futureVersionUnchanged() throws {
        let temporary = try TemporaryKeychain()
        let path = temporary.path
        let queue = try GRDBTestAccess.queue(path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA user_version = 99")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try queue.close()
        let before = sha256(ofFile: path)
        #expect(errorCode { _ = try KeychainDatabase.open(at: path, configuration: .testing()) } == .wrongVersion)
        #expect(sha256(ofFile: path) == before)
    }

    @Test("a keychain whose header was altered is refused and left unchanged")
    func alteredHeaderUnchanged() throws {
        let temporary = try TemporaryKeychain()
        let path = temporary.path
        let queue = try GRDBTestAccess.queue(path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "UPDATE meta SET value = randomblob(16) WHERE name = 'id'")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        try queue.close()
        let before = sha256(ofFile: path)
        #expect(
            errorCode { _ = try KeychainDatabase.open(at: path, configuration: temporary.keychain.configuration) }
                == .authFailed)
        #expect(sha256(ofFile: path) == before)
    }

    @Test("a missing keychain is reported as such")
    func missingKeychain() throws {
        let scratch = try Scratch()
        #expect(
            errorCode { _ = try KeychainDatabase.open(at: scratch.file("none"), configuration: .testing()) }
                == .noSuchKeychain)
        let temporary = try TemporaryKeychain()
        #expect(
            errorCode { _ = try KeychainDatabase.create(at: temporary.path, password: nil, configuration: .testing()) }
                == .duplicateKeychain)
    }
}

/// One damaged row must not hide the intact ones from a recovery listing
/// (`findReadable`), while `find` keeps refusing the whole search.
@Suite("Tampering: listing what is intact")
struct ReadableListingTests {
    /// Three items, alice, bob and carol (rows 1, 2, 3), with one byte of bob's `column`
    /// flipped in the file.
    private func keychainWithOneBadRow(column: String) throws -> (TemporaryKeychain, bob: Item) {
        let temporary = try TemporaryKeychain()
        var bob: Item?
        for account in ["alice", "bob", "carol"] {
            let added = try temporary.keychain.add(genericPassword(account, data: "\(account)-secret"))
            if account == "bob" { bob = added }
        }
        let queue = try GRDBTestAccess.queue(temporary.path)
        try queue.write { db in
            var blob = try Data.fetchOne(db, sql: "SELECT \(column) FROM items WHERE id = 2")!
            blob[blob.startIndex + blob.count / 2] ^= 0x01
            try db.execute(sql: "UPDATE items SET \(column) = ? WHERE id = 2", arguments: [blob])
        }
        return (temporary, try #require(bob))
    }

    @Test("one row failing authentication does not hide the intact rows", arguments: ["data", "attributes"])
    func oneBadRowDoesNotHideTheIntactOnes(column: String) throws {
        let (temporary, bob) = try keychainWithOneBadRow(column: column)
        let everything = ItemQuery(class: .genericPassword, synchronizable: .any)
        let found = try temporary.keychain.findReadable(everything, includeData: true)
        #expect(found.items.map { $0.attributes[.account] } == [.string("alice"), .string("carol")])
        #expect(found.items.map(\.data) == [Data("alice-secret".utf8), Data("carol-secret".utf8)])
        #expect(found.unreadable.count == 1)
        let bad = try #require(found.unreadable.first)
        #expect(bad.rowID == 2)
        #expect(bad.persistentID != nil && bad.persistentID == bob.persistentID)
        #expect(bad.itemClass == .genericPassword)
        #expect(bad.error.code == .decode)
        #expect(!"\(bad)".contains("bob") && "\(bad)".contains("row 2"), "\(bad)")
        // The normal search still refuses: tampering is an error, never skipped silently.
        #expect(errorCode { _ = try temporary.keychain.find(everything, includeData: true) } == .decode)
    }

    @Test("a malformed row is reported by its row id and skipped")
    func malformedRowIsReportedAndSkipped() throws {
        let (temporary, _) = try keychainWithOneBadRow(column: "data")
        let queue = try GRDBTestAccess.queue(temporary.path)
        try queue.write { db in try db.execute(sql: "UPDATE items SET attributes = 'text' WHERE id = 3") }
        let found = try temporary.keychain.findReadable(ItemQuery(class: .genericPassword), includeData: false)
        // Without the secrets, bob's damaged data is not read: only carol's row fails.
        #expect(found.items.map { $0.attributes[.account] } == [.string("alice"), .string("bob")])
        #expect(found.unreadable.map(\.rowID) == [3])
        #expect(found.unreadable.first?.error.code == .decode)
        #expect(errorCode { _ = try temporary.keychain.find(ItemQuery(class: .genericPassword)) } == .decode)
    }

    @Test("a locked keychain still fails the recovery listing as a whole")
    func lockedKeychainFailsTheReadableListing() throws {
        let temporary = try TemporaryKeychain(password: "pw")
        try temporary.keychain.unlock(password: "pw")
        try temporary.keychain.add(genericPassword("alice"))
        temporary.keychain.lock()
        #expect(
            errorCode { _ = try temporary.keychain.findReadable(ItemQuery(class: .genericPassword)) }
                == .interactionNotAllowed)
    }
}
