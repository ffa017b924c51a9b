import Foundation
import GRDB
@testable import KeychainCore
import Testing

/// Search terms (`trms`): each term has a keyed hash of its own, a filter matches the items that
/// have every term it lists, and the index follows updates, deletes and key rotation.
@Suite("Search terms")
struct SearchTermsTests {
    private static func terms(_ words: [String]) -> AttributeValue { .data(SearchTerms(words).encoded) }

    private static func item(_ account: String, _ words: [String], class itemClass: ItemClass = .genericPassword)
        -> Item
    {
        var attributes: Attributes = [.account: .string(account), .searchTerms: terms(words)]
        attributes[itemClass == .internetPassword ? .server : .service] = .string("host")
        return Item(class: itemClass, attributes: attributes, data: Data("secret-\(account)".utf8))
    }

    private static func accounts(_ items: [Item]) -> [String] {
        items.compactMap { $0.attributes[.account]?.stringValue }.sorted()
    }

    private static func find(
        _ keychain: KeychainDatabase, _ words: [String], class itemClass: ItemClass = .genericPassword
    )
        throws -> [String]
    {
        accounts(try keychain.find(ItemQuery(class: itemClass, attributes: [.searchTerms: terms(words)])))
    }

    @Test("the encoded form reads back, in one order whatever the input's, and malformed forms are refused")
    func encoding() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let words = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                String(
                    (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                        ["a", "é", "\u{0}", ":", "z", "😀"].randomElement(using: &generator)!
                    })
            }
            let terms = SearchTerms(words)
            #expect(SearchTerms(encoded: terms.encoded) == terms)
            #expect(SearchTerms(words.shuffled(using: &generator)).encoded == terms.encoded)
        }
        #expect(SearchTerms(encoded: Data([0, 0, 0, 5, 0x61])) == nil, "a length beyond the end")
        #expect(SearchTerms(encoded: Data([0, 0, 0])) == nil, "a cut length")
        #expect(SearchTerms(encoded: Data([0, 0, 0, 1, 0xFF])) == nil, "not UTF-8")
        #expect(SearchTerms(encoded: Data()) == SearchTerms([]))
    }

    @Test("a filter finds the items that have every term it lists", arguments: Backend.allCases)
    func containment(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        _ = try keychain.add(Self.item("ab", ["a", "b"]))
        _ = try keychain.add(Self.item("bc", ["b", "c"]))
        _ = try keychain.add(genericPassword("plain"))
        _ = try keychain.add(Self.item("inet", ["a", "b"], class: .internetPassword))
        #expect(try Self.find(keychain, ["b"]) == ["ab", "bc"])
        #expect(try Self.find(keychain, ["a", "b"]) == ["ab"])
        #expect(try Self.find(keychain, ["a", "c"]) == [])
        #expect(try Self.find(keychain, ["x"]) == [])
        #expect(try Self.find(keychain, []) == ["ab", "bc", "plain"], "no terms: every item")
        #expect(try Self.find(keychain, ["a"], class: .internetPassword) == ["inet"])
        // Terms narrow together with other attributes.
        let both = ItemQuery(
            class: .genericPassword, attributes: [.account: .string("bc"), .searchTerms: Self.terms(["c"])])
        #expect(Self.accounts(try keychain.find(both)) == ["bc"])
    }

    @Test("an update moves the item's index entries; a delete removes them", arguments: Backend.allCases)
    func updatesAndDeletes(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        _ = try keychain.add(Self.item("one", ["old", "kept"]))
        let changed = try keychain.update(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("one")]),
            attributes: [.searchTerms: Self.terms(["new", "kept"])])
        #expect(changed == 1)
        #expect(try Self.find(keychain, ["old"]) == [])
        #expect(try Self.find(keychain, ["new", "kept"]) == ["one"])
        #expect(try Self.tagRows(keychain) == 2, "one row per term")
        _ = try keychain.delete(ItemQuery(class: .genericPassword, attributes: [.account: .string("one")]))
        #expect(try Self.tagRows(keychain) == 0)
    }

    /// The tag rows of the search terms: every row, since these items have no other tagged
    /// attribute in the lookup-key layout but their label, which they do not set.
    private static func tagRows(_ keychain: KeychainDatabase) throws -> Int {
        try keychain.writer.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM tags") ?? -1 }
    }

    @Test("terms that are not encoded terms are errSecParam, never stored", arguments: Backend.allCases)
    func malformedTerms(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        var item = Self.item("bad", [])
        item.attributes[.searchTerms] = .data(Data([0, 0, 0, 9]))
        #expect(errorCode { _ = try keychain.add(item) } == .parameter)
        item.attributes[.searchTerms] = .string("a")
        #expect(errorCode { _ = try keychain.add(item) } == .parameter)
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).isEmpty)
    }

    @Test("a locked keychain finds passwords by their terms, and by a server, without opening an item")
    func lockedMatches() throws {
        let (keychain, owner) = try Backend.file.make(password: "pw")
        defer { withExtendedLifetime(owner) {} }
        try keychain.unlock(password: "pw")
        let first = try keychain.add(Self.item("one", ["schema", "app"]))
        _ = try keychain.add(Self.item("two", ["schema"]))
        var site = Self.item("site", ["schema"], class: .internetPassword)
        site.attributes[.protocol] = .string("htps")
        let web = try keychain.add(site)
        keychain.lock()
        #expect(errorCode { _ = try keychain.find(ItemQuery(class: .genericPassword)) } == .interactionNotAllowed)
        let byTerms = try keychain.lockedMatches(
            ItemQuery(class: .genericPassword, attributes: [.searchTerms: Self.terms(["schema", "app"])]))
        #expect(byTerms == [first.persistentID].compactMap { $0 })
        let byServer = try keychain.lockedMatches(
            ItemQuery(
                class: .internetPassword,
                attributes: [
                    .server: .string("host"), .protocol: .string("htps"), .searchTerms: Self.terms(["schema"]),
                ]))
        #expect(byServer == [web.persistentID].compactMap { $0 })
        let otherProtocol = try keychain.lockedMatches(
            ItemQuery(class: .internetPassword, attributes: [.server: .string("host"), .protocol: .string("ftp ")]))
        #expect(otherProtocol.isEmpty)
        #expect(
            errorCode {
                _ = try keychain.lockedMatches(ItemQuery(class: .genericPassword, attributes: [.comment: .string("c")]))
            } == nil, "a comment has tag rows too")
        #expect(
            errorCode {
                _ = try keychain.lockedMatches(
                    ItemQuery(class: .genericPassword, attributes: [.creationDate: .date(Date())]))
            } == .parameter, "a date is checked only after decryption")
    }

    @Test("terms stay searchable after the keys are rotated")
    func rotation() throws {
        let (keychain, owner) = try Backend.file.make(password: "pw")
        defer { withExtendedLifetime(owner) {} }
        try keychain.unlock(password: "pw")
        _ = try keychain.add(Self.item("one", ["a", "b"]))
        try keychain.rotateKeys(password: "pw", newPassword: "pw2")
        #expect(try Self.find(keychain, ["b", "a"]) == ["one"])
        #expect(try Self.tagRows(keychain) == 2)
    }

    @Test("an upgrade changes the items once, in every group, and is recorded; locked, it changes nothing")
    func upgradeOnce() throws {
        let (keychain, owner) = try Backend.file.make(password: "pw")
        defer { withExtendedLifetime(owner) {} }
        try keychain.unlock(password: "pw")
        for (index, group) in ["g1", "g2", "g1"].enumerated() {
            var item = genericPassword("user\(index)")
            item.attributes[.accessGroup] = .string(group)
            _ = try keychain.acting(for: AccessGroups([group])).add(item)
        }
        let before = try keychain.find(ItemQuery(class: .genericPassword), includeData: true)
        let addTerm: (Item) -> Attributes? = { item in
            item.attributes[.searchTerms] == nil ? [.searchTerms: Self.terms(["upgraded"])] : nil
        }
        keychain.lock()
        #expect(errorCode { try keychain.upgradeItems(named: "test", classes: [.genericPassword], addTerm) } != nil)
        try keychain.unlock(password: "pw")
        #expect(try Self.find(keychain, ["upgraded"]) == [], "nothing changed while locked")
        #expect(try keychain.upgradeItems(named: "test", classes: [.genericPassword], addTerm) == 3)
        #expect(try Self.find(keychain, ["upgraded"]) == ["user0", "user1", "user2"])
        let after = try keychain.find(ItemQuery(class: .genericPassword), includeData: true)
        #expect(after.map(\.data) == before.map(\.data), "secrets kept")
        #expect(after.map(\.persistentID) == before.map(\.persistentID), "identities kept")
        #expect(
            after.map { $0.attributes[.modificationDate] } == before.map { $0.attributes[.modificationDate] },
            "modification dates kept")
        // Recorded: a new item without terms is not changed by a second call.
        _ = try keychain.add(genericPassword("late"))
        #expect(try keychain.upgradeItems(named: "test", classes: [.genericPassword], addTerm) == 0)
        #expect(try Self.find(keychain, ["upgraded"]).count == 3)
        // Another name is another upgrade.
        #expect(try keychain.upgradeItems(named: "other", classes: [.genericPassword], addTerm) == 1)
        // A change of the primary key is refused, and nothing of that upgrade is kept.
        #expect(
            errorCode {
                try keychain.upgradeItems(named: "bad", classes: [.genericPassword]) { _ in
                    [.account: .string("x")]
                }
            } == .parameter)
    }
}
