import Crypto
import Foundation
import GRDB
@testable import KeychainCore
import Testing

/// Dates and the accessibility have no index rows: a filter on them is checked on the
/// decrypted attributes, which must give the same answers as an indexed lookup.
@Suite("Filters checked after decryption")
struct FilterTests {
    /// Ten items, alternately when-unlocked and after-first-unlock, added in order.
    private func mixedKeychain(_ backend: Backend) throws -> (KeychainDatabase, AnyObject?, [Item]) {
        let (keychain, owner) = try backend.make()
        var added: [Item] = []
        for index in 0..<10 {
            var item = genericPassword("user\(index)", data: "secret\(index)")
            item.attributes[.accessible] = .string(
                (index.isMultiple(of: 2) ? Accessibility.whenUnlocked : .afterFirstUnlock).rawValue)
            added.append(try keychain.add(item))
        }
        return (keychain, owner, added)
    }

    private func accounts(_ items: [Item]) -> [String] {
        items.compactMap { $0.attributes[.account]?.stringValue }
    }

    @Test("a query on the accessibility returns exactly the items that have it", arguments: Backend.allCases)
    func accessibilityFilter(backend: Backend) throws {
        let (keychain, owner, _) = try mixedKeychain(backend)
        defer { withExtendedLifetime(owner) {} }
        let found = try keychain.find(query(.genericPassword, [.accessible: .string("ck")]), includeData: true)
        #expect(accounts(found) == ["user1", "user3", "user5", "user7", "user9"])
        #expect(
            found.map(\.data) == ["secret1", "secret3", "secret5", "secret7", "secret9"].map { Data($0.utf8) as Data? })
    }

    @Test("the limit counts matching items, not candidate rows", arguments: Backend.allCases)
    func limitAppliesAfterFiltering(backend: Backend) throws {
        let (keychain, owner, _) = try mixedKeychain(backend)
        defer { withExtendedLifetime(owner) {} }
        var limited = query(.genericPassword, [.accessible: .string("ck")])
        limited.limit = 2
        #expect(accounts(try keychain.find(limited)) == ["user1", "user3"])
        // The first candidate (user0) fails the filter; the first match is still found.
        let first = try keychain.findFirst(query(.genericPassword, [.accessible: .string("ck")]))
        #expect(first?.attributes[.account] == .string("user1"))
    }

    @Test("an indexed and a decrypted filter combine", arguments: Backend.allCases)
    func indexedAndResidualFiltersCombine(backend: Backend) throws {
        let (keychain, owner, _) = try mixedKeychain(backend)
        defer { withExtendedLifetime(owner) {} }
        let hit = query(.genericPassword, [.account: .string("user3"), .accessible: .string("ck")])
        #expect(accounts(try keychain.find(hit)) == ["user3"])
        let miss = query(.genericPassword, [.account: .string("user3"), .accessible: .string("ak")])
        #expect(try keychain.find(miss).isEmpty)
        #expect(errorCode { try keychain.update(miss, attributes: [.label: .string("x")]) } == .itemNotFound)
        #expect(errorCode { try keychain.delete(miss) } == .itemNotFound)
    }

    @Test("a query on a creation date finds the item created then", arguments: Backend.allCases)
    func creationDateFilter(backend: Backend) throws {
        let (keychain, owner, added) = try mixedKeychain(backend)
        defer { withExtendedLifetime(owner) {} }
        let created = try #require(added[4].attributes[.creationDate])
        let found = try keychain.find(query(.genericPassword, [.creationDate: created]))
        #expect(found.allSatisfy { $0.attributes[.creationDate] == created })
        #expect(accounts(found).contains("user4"))
        #expect(found.count == added.filter { $0.attributes[.creationDate] == created }.count)
    }

    @Test("update and delete change only the items that pass the filter", arguments: Backend.allCases)
    func writesHonourResidualFilters(backend: Backend) throws {
        let (keychain, owner, _) = try mixedKeychain(backend)
        defer { withExtendedLifetime(owner) {} }
        let unlocked = query(.genericPassword, [.accessible: .string("ak")])
        #expect(try keychain.update(unlocked, attributes: [.label: .string("changed")]) == 5)
        let labelled = try keychain.find(query(.genericPassword, [.label: .string("changed")]))
        #expect(accounts(labelled) == ["user0", "user2", "user4", "user6", "user8"])
        #expect(try keychain.delete(unlocked) == 5)
        #expect(accounts(try keychain.find(query())) == ["user1", "user3", "user5", "user7", "user9"])
    }

    @Test("an index row moved to another item makes the lookup fail, never return that item")
    func movedIndexRowIsDetected() throws {
        let temporary = try TemporaryKeychain()
        for name in ["alice", "bob"] {
            var item = genericPassword(name, service: "svc-\(name)", data: "\(name)-secret")
            item.attributes[.label] = .string("\(name)'s label")
            try temporary.keychain.add(item)
        }
        try GRDBTestAccess.queue(temporary.path).write { db in
            try db.execute(sql: "UPDATE OR REPLACE tags SET item = 2 WHERE item = 1")
        }
        // Found through the label's tag row alone, bob's item contradicts the filter.
        let lookup = query(.genericPassword, [.label: .string("alice's label")])
        #expect(errorCode { _ = try temporary.keychain.find(lookup, includeData: true) } == .decode)
        // With the service too, whose bytes are in the primary key, bob's row does not qualify.
        let both = query(.genericPassword, [.label: .string("alice's label"), .service: .string("svc-alice")])
        let found = try? temporary.keychain.find(both, includeData: true)
        #expect(found?.contains { $0.data == Data("bob-secret".utf8) } != true)
    }
}

/// The keyed index hashes canonical bytes written straight into the hash input; they must
/// be the bytes ``AttributeSpec/canonicalBytes(_:)`` defines, or files written before would
/// no longer be found.
@Suite("Canonical bytes")
struct CanonicalBytesTests {
    private static func randomValue(_ generator: inout some RandomNumberGenerator) -> AttributeValue {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0:
            let scalars = (0..<Int.random(in: 0..<12, using: &generator)).map { _ in
                Unicode.Scalar(UInt32.random(in: 0x20..<0x3000, using: &generator)) ?? "x"
            }
            return .string(String(String.UnicodeScalarView(scalars)))
        case 1:
            return .data(
                Data(
                    (0..<Int.random(in: 0..<40, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }))
        case 2:
            return .number(Int64.random(in: .min ... .max, using: &generator))
        default:
            return .date(Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...1e9, using: &generator)))
        }
    }

    @Test("appended canonical bytes equal canonicalBytes, with and without a length", arguments: [false, true])
    func appendedBytesMatch(comparesBytes: Bool) {
        var generator = SystemRandomNumberGenerator()
        let spec = AttributeSpec(name: "acct", kind: .blob, comparesBytes: comparesBytes, defaultValue: nil)
        for _ in 0..<2_000 {
            let value = Self.randomValue(&generator)
            let expected = [UInt8](spec.canonicalBytes(value))
            var plain: [UInt8] = [7]
            spec.appendCanonicalBytes(of: value, to: &plain, lengthPrefixed: false)
            #expect(plain == [7] + expected)
            var prefixed: [UInt8] = []
            spec.appendCanonicalBytes(of: value, to: &prefixed, lengthPrefixed: true)
            #expect(prefixed == withUnsafeBytes(of: UInt32(expected.count).bigEndian) { Array($0) } + expected)
        }
    }
}

/// Cases a second reading of the filter and update changes found.
@Suite("Filters and updates: edge cases")
struct FilterEdgeCaseTests {
    @Test(
        "an accessibility filter reads only rows of its protection class, so a locked class it excludes does not fail it"
    )
    func accessibilityFilterSkipsOtherClassesWhileLocked() throws {
        let keychain = try KeychainDatabase.inMemory(password: "pw")
        try keychain.unlock(password: "pw")
        for (account, accessibility) in [("a", "ak"), ("c", "ck"), ("d", "dk")] {
            var item = genericPassword(account)
            item.attributes[.accessible] = .string(accessibility)
            try keychain.add(item)
        }
        keychain.lock()  // when-unlocked items lock; after-first-unlock and always stay open
        let afterFirstUnlock = try keychain.find(
            query(.genericPassword, [.accessible: .string("ck")]), includeData: true)
        #expect(afterFirstUnlock.map(\.data) == [Data("secret".utf8)])
        #expect(afterFirstUnlock.map { $0.attributes[.account] } == [.string("c")])
        #expect(
            errorCode { _ = try keychain.find(query(.genericPassword, [.accessible: .string("ak")])) }
                == .interactionNotAllowed)
    }

    @Test("a limit of 0 returns nothing, with or without a filter checked after decryption", arguments: [false, true])
    func zeroLimit(withResidualFilter: Bool) throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.add(genericPassword("a"))
        var limited = query(.genericPassword, withResidualFilter ? [.accessible: .string("ak")] : [:])
        limited.limit = 0
        #expect(try keychain.find(limited).isEmpty)
    }

    @Test("updating a tombstone revives it in place")
    func updatingATombstone() throws {
        let keychain = try KeychainDatabase.inMemory()
        var synced = genericPassword("s", data: "old")
        synced.attributes[.synchronizable] = .number(1)
        try keychain.add(synced)
        let everything = ItemQuery(class: .genericPassword, synchronizable: .any, includesTombstones: true)
        try keychain.delete(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("s")], synchronizable: .any))
        #expect(try keychain.find(everything).count == 1)  // the tombstone
        #expect(try keychain.update(everything, attributes: [:], data: Data("new".utf8)) == 1)
        let revived = try keychain.find(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("s")], synchronizable: .any),
            includeData: true)
        #expect(revived.map(\.data) == [Data("new".utf8)])
    }
}

@Suite("Primary-key comparison")
struct PrimaryKeyComparisonTests {
    @Test(
        "comparing primary-key values agrees with comparing primary-key tags, in every index layout",
        arguments: IndexLayout.allCases)
    func valuesAgreeWithTags(layout: IndexLayout) {
        let tagger = IndexTagger(key: SymmetricKey(size: .bits256), layout: layout)
        let schema = ItemSchema.of(.genericPassword)
        let choices: [AttributeValue?] = [nil, .string(""), .string("a"), .data(Data("a".utf8)), .string("b")]
        var generator = SystemRandomNumberGenerator()
        func random() -> Attributes {
            var attributes: Attributes = [:]
            for name in [AttributeName.account, .service, .accessGroup, .label] {
                attributes[name] = choices.randomElement(using: &generator)!
            }
            return attributes
        }
        var same = 0
        for _ in 0..<2_000 {
            let (a, b) = (random(), random())
            let tagsEqual = tagger.primaryKeyTag(schema, a) == tagger.primaryKeyTag(schema, b)
            #expect(schema.hasSamePrimaryKey(a, b) == tagsEqual, "\(a) vs \(b)")
            if tagsEqual { same += 1 }
        }
        #expect(same > 0)
    }
}

/// The checks `SecItem*` used to make in the caller after the keychain handed it the items and
/// their secrets: the keychain makes them, so nothing it withholds leaves it (the seam a
/// session agent serves).
@Suite("Checks the keychain makes for its callers")
struct CallerCheckTests {
    private func internetItem(_ server: String, account: String) -> Item {
        Item(
            class: .internetPassword,
            attributes: [.server: .string(server), .account: .string(account)], data: Data("pw-\(account)".utf8))
    }

    @Test(
        "host or subdomain: the server itself and its subdomains match, lookalikes do not, and the limit counts matches",
        arguments: Backend.allCases)
    func hostOrSubdomain(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        for (index, server) in ["badexample.com", "example.com", "api.example.com", "example.org", "xexample.com"]
            .enumerated()
        {
            _ = try keychain.add(internetItem(server, account: "a\(index)"))
        }
        var query = ItemQuery(class: .internetPassword)
        query.hostOrSubdomain = "example.com"
        let found = try keychain.find(query, includeData: true)
        #expect(found.compactMap { $0.attributes[.server]?.stringValue } == ["example.com", "api.example.com"])
        #expect(found.map(\.data) == [Data("pw-a1".utf8), Data("pw-a2".utf8)])
        query.limit = 1
        // The first item added does not match: a limit applied before the check would return nothing.
        #expect(try keychain.find(query).compactMap { $0.attributes[.server]?.stringValue } == ["example.com"])
    }

    @Test(
        "an item that asks for user authentication fails the search, is left out, or is listed, as the query says",
        arguments: Backend.allCases)
    func authentication(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        var guarded = genericPassword("guarded", data: "biometric secret")
        guarded.attributes[.accessControl] = .data(StoredAccessControl(flags: 1 << 1, protection: "ak").serialized)
        var plain = genericPassword("plain", data: "plain secret")
        plain.attributes[.accessControl] = .data(StoredAccessControl(flags: 0, protection: "ak").serialized)
        _ = try keychain.add(guarded)
        _ = try keychain.add(plain)
        var query = ItemQuery(class: .genericPassword)
        query.authenticationUI = .fail
        #expect(throws: KeychainError.self) { try keychain.find(query, includeData: true) }
        do {
            _ = try keychain.find(query, includeData: true)
        } catch let error as KeychainError {
            #expect(error.code == .interactionNotAllowed)
            #expect(!error.message.contains("biometric secret"))
        }
        query.authenticationUI = .skip
        let skipped = try keychain.find(query, includeData: true)
        #expect(skipped.map(\.data) == [Data("plain secret".utf8)])
        query.limit = 1
        #expect(try keychain.find(query).compactMap { $0.attributes[.account]?.stringValue } == ["plain"])
        query.limit = nil
        query.authenticationUI = .ignore
        #expect(try keychain.find(query).count == 2)
    }
}
