import Foundation
import KeychainCore
import Testing

/// The two back ends every item test runs against: in memory and a real file. The engine's
/// own: `KeychainTestSupport`'s `KeychainBackend`, which the tests above the seam share, brings
/// the agent's client and D-Bus, which the engine's tests do not depend on.
enum Backend: String, CaseIterable, CustomTestStringConvertible {
    case memory, file
    var testDescription: String { rawValue }

    func make(password: String? = nil) throws -> (KeychainDatabase, AnyObject?) {
        switch self {
        case .memory:
            return (try KeychainDatabase.inMemory(password: password), nil)
        case .file:
            let temporary = try TemporaryKeychain(password: password)
            return (temporary.keychain, temporary)
        }
    }
}

let sampleItems: [Item] = [
    Item(
        class: .genericPassword,
        attributes: [
            .service: .string("api.example.com"), .account: .string("alice"), .label: .string("API"),
            .generic: .data(Data([1, 2, 3])), .comment: .string("note"),
        ], data: Data("s3cret".utf8)),
    Item(
        class: .internetPassword,
        attributes: [
            .server: .string("example.com"), .account: .string("bob"), .protocol: .string("htps"),
            .port: .number(443), .path: .string("/login"), .authenticationType: .string("form"),
        ], data: Data("hunter2".utf8)),
    Item(
        class: .certificate,
        attributes: [
            "ctyp": .number(3), "issr": .data(Data("issuer".utf8)), "slnr": .data(Data([9, 9])),
            "subj": .data(Data("subject".utf8)), "pkhh": .data(Data(repeating: 7, count: 20)),
        ], data: Data([0x30, 0x82, 0x01, 0x00])),
    Item(
        class: .key,
        attributes: [
            "kcls": .number(1), "klbl": .data(Data(repeating: 7, count: 20)), "atag": .data(Data("tag".utf8)),
            "type": .number(73), "bsiz": .number(256), "sign": .number(1),
        ], data: Data(repeating: 0xAB, count: 32)),
]

@Suite("Item round trips")
struct ItemRoundTripTests {
    @Test("every class round-trips its attributes and data", arguments: Backend.allCases, sampleItems)
    func classRoundTrips(backend: Backend, item: Item) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        let stored = try keychain.add(item)
        #expect(stored.persistentID != nil)
        let found = try keychain.find(ItemQuery(class: item.itemClass, attributes: item.attributes), includeData: true)
        #expect(found.count == 1)
        let result = try #require(found.first)
        #expect(result.data == item.data)
        #expect(result.persistentID == stored.persistentID)
        for (name, value) in item.attributes {
            #expect(result.attributes[name] == value, "attribute \(name)")
        }
        #expect(result.accessGroup == AccessGroups.defaultGroupName)
        #expect(result.accessibility == (item.itemClass == .certificate ? .always : .whenUnlocked))
        #expect(result.attributes[.creationDate]?.dateValue != nil)
        let attributesOnly = try #require(try keychain.findFirst(ItemQuery(class: item.itemClass)))
        #expect(attributesOnly.data == nil)
    }

    @Test("an identity is a private key joined with its certificate", arguments: Backend.allCases)
    func identityRoundTrips(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        try keychain.add(sampleItems[2])
        try keychain.add(sampleItems[3])
        let identities = try keychain.find(ItemQuery(class: .identity), includeData: true)
        #expect(identities.count == 1)
        let identity = try #require(identities.first)
        #expect(identity.itemClass == .identity)
        #expect(identity.data == sampleItems[3].data)
        #expect(identity.attributes["certdata"] == .data(sampleItems[2].data!))
        #expect(identity.attributes["issr"] == .data(Data("issuer".utf8)))
        #expect(identity.attributes["kcls"] == .number(1))
        let none = try keychain.find(ItemQuery(class: .identity, attributes: ["slnr": .data(Data([1]))]))
        #expect(none.isEmpty)
        #expect(
            try keychain.update(
                ItemQuery(class: .identity), attributes: [.label: .string("mine"), "atag": .string("t2")])
                == 1)
        let updated = try #require(
            try keychain.findFirst(ItemQuery(class: .identity, attributes: [.label: .string("mine")])))
        #expect(updated.attributes["atag"] == .string("t2"))
        #expect(try keychain.findFirst(ItemQuery(class: .certificate))?.attributes[.label] == .string("mine"))
        #expect(
            errorCode { try keychain.update(ItemQuery(class: .identity), attributes: [.server: .string("x")]) }
                == .noSuchAttribute)
        #expect(try keychain.delete(ItemQuery(class: .identity)) == 1)
        #expect(try keychain.find(ItemQuery(class: .certificate)).isEmpty)
        #expect(try keychain.find(ItemQuery(class: .key)).isEmpty)
        #expect(errorCode { try keychain.delete(ItemQuery(class: .identity)) } == .itemNotFound)
    }

    @Test("a missing item is an empty result, and update/delete report not found", arguments: Backend.allCases)
    func missingItem(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        #expect(try keychain.find(query(.genericPassword, [.account: .string("nobody")])).isEmpty)
        #expect(
            errorCode { try keychain.update(query(.genericPassword), attributes: [.label: .string("x")]) }
                == .itemNotFound)
        #expect(errorCode { try keychain.delete(query(.genericPassword)) } == .itemNotFound)
    }

    @Test(
        "update changes the secret and attributes, keeps the identity, and advances mdat", arguments: Backend.allCases)
    func updateKeepsIdentity(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        let stored = try keychain.add(genericPassword("alice"))
        let before = try #require(try keychain.findFirst(query(.genericPassword, [.account: .string("alice")])))
        let count = try keychain.update(
            query(.genericPassword, [.account: .string("alice")]), attributes: [.label: .string("new")],
            data: Data("changed".utf8))
        #expect(count == 1)
        let after = try #require(
            try keychain.findFirst(query(.genericPassword, [.account: .string("alice")]), includeData: true))
        #expect(after.data == Data("changed".utf8))
        #expect(after.attributes[.label] == .string("new"))
        #expect(after.persistentID == stored.persistentID)
        #expect(after.attributes[.creationDate] == before.attributes[.creationDate])
        let oldDate = try #require(before.attributes[.modificationDate]?.dateValue)
        let newDate = try #require(after.attributes[.modificationDate]?.dateValue)
        #expect(newDate > oldDate)
        #expect(try keychain.find(query(.genericPassword, [.label: .string("new")])).count == 1)
    }

    @Test("an update that would create a duplicate fails and changes nothing", arguments: Backend.allCases)
    func updateCreatingDuplicateFails(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        try keychain.add(genericPassword("alice", data: "a"))
        try keychain.add(genericPassword("bob", data: "b"))
        try keychain.add(genericPassword("carol", data: "c"))
        // Renaming every account to "alice" collides: nothing may change.
        #expect(
            errorCode {
                try keychain.update(
                    query(.genericPassword), attributes: [.account: .string("alice")], data: Data("z".utf8))
            } == .duplicateItem)
        let all = try keychain.find(query(.genericPassword), includeData: true)
        #expect(all.compactMap { $0.attributes[.account]?.stringValue }.sorted() == ["alice", "bob", "carol"])
        #expect(all.compactMap { $0.data.map { String(decoding: $0, as: UTF8.self) } }.sorted() == ["a", "b", "c"])
    }

    @Test("delete removes every match and only matches", arguments: Backend.allCases)
    func deleteScope(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        try keychain.add(genericPassword("a", service: "s1"))
        try keychain.add(genericPassword("b", service: "s1"))
        try keychain.add(genericPassword("c", service: "s2"))
        #expect(try keychain.delete(query(.genericPassword, [.service: .string("s1")])) == 2)
        let rest = try keychain.find(query(.genericPassword))
        #expect(rest.map { $0.attributes[.account] } == [.string("c")])
    }

    @Test("synchronizable items are hidden from default queries and leave tombstones")
    func synchronizableMatching() throws {
        let keychain = try KeychainDatabase.inMemory()
        var synced = genericPassword("alice")
        synced.attributes[.synchronizable] = .number(1)
        try keychain.add(synced)
        try keychain.add(genericPassword("alice"))
        #expect(try keychain.find(query(.genericPassword)).count == 1)
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)).count == 2)
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes)).count == 1)
        try keychain.delete(ItemQuery(class: .genericPassword, synchronizable: .yes))
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)).count == 1)
        let tombstones = try keychain.find(
            ItemQuery(class: .genericPassword, synchronizable: .yes, includesTombstones: true), includeData: true)
        #expect(tombstones.count == 1)
        #expect(tombstones.first?.data == nil)
        // Adding the same primary key again replaces the tombstone.
        try keychain.add(synced)
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes)).count == 1)
    }

    @Test("items come back in insertion order and the limit is honoured")
    func orderingAndLimit() throws {
        let keychain = try KeychainDatabase.inMemory()
        for name in ["c", "a", "b"] { try keychain.add(genericPassword(name)) }
        let all = try keychain.find(query(.genericPassword))
        #expect(all.map { $0.attributes[.account] } == [.string("c"), .string("a"), .string("b")])
        var limited = query(.genericPassword)
        limited.limit = 2
        #expect(try keychain.find(limited).count == 2)
    }

    @Test("a persistent identity finds its item without a class")
    func persistentIdentity() throws {
        let keychain = try KeychainDatabase.inMemory()
        let stored = try keychain.add(sampleItems[1])
        let found = try keychain.find(ItemQuery(class: nil, persistentID: stored.persistentID), includeData: true)
        #expect(found.first?.itemClass == .internetPassword)
        #expect(found.first?.data == sampleItems[1].data)
    }

    @Test("wrong attribute types and unknown attributes are rejected without a trap")
    func badInput() throws {
        let keychain = try KeychainDatabase.inMemory()
        #expect(
            errorCode { try keychain.add(Item(class: .genericPassword, attributes: [.server: .string("x")])) }
                == .noSuchAttribute)
        #expect(
            errorCode { try keychain.add(Item(class: .genericPassword, attributes: [.account: .date(Date())])) }
                == .parameter)
        #expect(
            errorCode { try keychain.add(Item(class: .genericPassword, attributes: [.accessible: .string("zz")])) }
                == .parameter)
        #expect(
            errorCode { try keychain.add(Item(class: .genericPassword, attributes: [.accessGroup: .number(3)])) }
                == .parameter)
        let huge = Data(count: keychain.configuration.maximumDataSize + 1)
        #expect(errorCode { try keychain.add(Item(class: .genericPassword, data: huge)) } == .parameter)
        #expect(errorCode { _ = try keychain.find(ItemQuery(class: nil)) } == .parameter)
        #expect(try keychain.find(query(.genericPassword)).isEmpty)
    }

    @Test("descriptions never show secrets or attribute values")
    func descriptionsAreRedacted() throws {
        let item = genericPassword("canary-account-1234", data: "canary-secret-5678")
        #expect(!item.description.contains("canary"))
        #expect(!AttributeValue.string("canary-x").description.contains("canary"))
        let error = KeychainError(.duplicateItem, "an item with the same primary key exists")
        #expect(error.osStatus == -25299)
    }
}

@Suite("Batch add and upsert")
struct UpsertTests {
    @Test("add(contentsOf:) stores all items or none", arguments: Backend.allCases)
    func batchAddIsAtomic(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        let stored = try keychain.add(contentsOf: (0..<50).map { genericPassword("batch\($0)") })
        #expect(stored.count == 50)
        #expect(Set(stored.compactMap(\.persistentID)).count == 50)
        // The last item duplicates the first: nothing of this batch may land.
        let failing = (50..<60).map { genericPassword("batch\($0)") } + [genericPassword("batch0")]
        #expect(errorCode { try keychain.add(contentsOf: failing) } == .duplicateItem)
        #expect(try keychain.find(query(.genericPassword)).count == 50)
    }

    @Test(
        "upsert adds, then replaces the data and given attributes, keeping identity and creation date",
        arguments: Backend.allCases)
    func upsertReplaces(backend: Backend) throws {
        let (keychain, owner) = try backend.make()
        defer { withExtendedLifetime(owner) {} }
        var item = genericPassword("alice", data: "one")
        item.attributes[.label] = .string("first")
        let first = try keychain.upsert(item)
        #expect(first.added)
        var second = genericPassword("alice", data: "two")
        second.attributes[.comment] = .string("note")
        let replaced = try keychain.upsert(second)
        #expect(!replaced.added)
        let all = try keychain.find(query(.genericPassword), includeData: true)
        #expect(all.count == 1)
        let stored = try #require(all.first)
        #expect(stored.data == Data("two".utf8))
        #expect(stored.attributes[.label] == .string("first"))
        #expect(stored.attributes[.comment] == .string("note"))
        #expect(stored.persistentID == first.item.persistentID)
        #expect(stored.attributes[.creationDate] == first.item.attributes[.creationDate])
        #expect(
            try #require(stored.attributes[.modificationDate]?.dateValue) > first.item.attributes[.modificationDate]!
                .dateValue!)
    }

    @Test("a failed upsert keeps the old value")
    func failedUpsertKeepsOldValue() throws {
        let temporary = try TemporaryKeychain(password: "pw")
        let keychain = temporary.keychain
        try keychain.unlock(password: "pw")
        try keychain.upsert(genericPassword("alice", data: "old"))
        keychain.lock()
        #expect(errorCode { try keychain.upsert(genericPassword("alice", data: "new")) } == .interactionNotAllowed)
        var tooBig = genericPassword("alice")
        tooBig.data = Data(count: keychain.configuration.maximumDataSize + 1)
        try keychain.unlock(password: "pw")
        #expect(errorCode { try keychain.upsert(tooBig) } == .parameter)
        #expect(try keychain.findFirst(query(.genericPassword), includeData: true)?.data == Data("old".utf8))
    }
}
