import Foundation
import KeychainCore
import Testing

/// One row of the primary-key table (Apple's `keychain/securityd/SecItemSchema.c`): a class, one of
/// its primary-key attributes, and two different values of it.
struct PrimaryKeyCase: CustomTestStringConvertible, Sendable {
    var itemClass: ItemClass
    var attribute: AttributeName
    var first: AttributeValue
    var second: AttributeValue
    var testDescription: String { "\(itemClass).\(attribute)" }
}

/// Two values of the right kind for any primary-key attribute.
private func distinctValues(_ spec: AttributeSpec) -> (AttributeValue, AttributeValue) {
    switch spec.kind {
    case .number: (.number(1), .number(2))
    case .sync: (.number(0), .number(1))
    case .date: (.date(Date(timeIntervalSinceReferenceDate: 10)), .date(Date(timeIntervalSinceReferenceDate: 20)))
    case .data: (.data(Data("one".utf8)), .data(Data("two".utf8)))
    default: (.string("one"), .string("two"))
    }
}

/// Every primary-key attribute of every storable class, read from the schema, except `musr`,
/// which the engine always sets itself.
let primaryKeyCases: [PrimaryKeyCase] = [ItemClass.genericPassword, .internetPassword, .certificate, .key]
    .flatMap { itemClass -> [PrimaryKeyCase] in
        let schema = ItemSchema.of(itemClass)
        return schema.primaryKey.filter { $0 != .multiUser }.map { name in
            let (a, b) = distinctValues(schema.spec(for: name)!)
            return PrimaryKeyCase(itemClass: itemClass, attribute: name, first: a, second: b)
        }
    }

@Suite("Primary keys and duplicates")
struct DuplicateTests {
    @Test("the table covers the spec's primary keys")
    func tableMatchesSpec() {
        let names = { (c: ItemClass) in Set(primaryKeyCases.filter { $0.itemClass == c }.map(\.attribute.rawValue)) }
        let common: Set = ["agrp", "sync", "vwht", "tkid", "ggrp"]
        // `pkdx` is Linux's: it counts only when set (Secret Service items of other schemas).
        #expect(names(.genericPassword) == common.union(["acct", "svce", "pkdx"]))
        #expect(
            names(.internetPassword) == common.union(["acct", "sdmn", "srvr", "ptcl", "atyp", "port", "path", "pkdx"]))
        #expect(names(.certificate) == common.union(["ctyp", "issr", "slnr"]))
        #expect(
            names(.key) == common.union(["kcls", "klbl", "atag", "crtr", "type", "bsiz", "esiz", "sdat", "edat"]))
    }

    @Test("The discriminator counts only when set: absent and empty are Apple's key, a value is another item")
    func discriminatorCountsOnlyWhenSet() throws {
        let keychain = try KeychainDatabase.inMemory()
        let plain: Attributes = [.service: .string("s"), .account: .string("a")]
        try keychain.add(Item(class: .genericPassword, attributes: plain, data: Data("1".utf8)))
        var empty = plain
        empty[.primaryKeyDiscriminator] = .data(Data())
        #expect(errorCode { try keychain.add(Item(class: .genericPassword, attributes: empty)) } == .duplicateItem)
        var schemaA = plain
        schemaA[.primaryKeyDiscriminator] = .data(Data([1]))
        var schemaB = plain
        schemaB[.primaryKeyDiscriminator] = .data(Data([2]))
        try keychain.add(Item(class: .genericPassword, attributes: schemaA))
        try keychain.add(Item(class: .genericPassword, attributes: schemaB))
        #expect(errorCode { try keychain.add(Item(class: .genericPassword, attributes: schemaB)) } == .duplicateItem)
        #expect(try keychain.find(ItemQuery(class: .genericPassword, attributes: plain)).count == 3)
        // Clearing a discriminator by update moves the item onto Apple's key, where one is.
        #expect(
            errorCode {
                _ = try keychain.update(
                    ItemQuery(class: .genericPassword, attributes: schemaA),
                    attributes: [.primaryKeyDiscriminator: .data(Data())])
            } == .duplicateItem)
    }

    @Test("items equal in every primary-key attribute collide", arguments: primaryKeyCases)
    func equalPrimaryKeysCollide(_ row: PrimaryKeyCase) throws {
        let keychain = try KeychainDatabase.inMemory()
        let item = Item(class: row.itemClass, attributes: [row.attribute: row.first], data: Data("a".utf8))
        try keychain.add(item)
        var same = item
        same.data = Data("b".utf8)
        same.attributes[.label] = .string("labels never distinguish items")
        #expect(errorCode { try keychain.add(same) } == .duplicateItem)
        #expect(try keychain.find(ItemQuery(class: row.itemClass, synchronizable: .any)).count == 1)
    }

    @Test("items differing in one primary-key attribute coexist", arguments: primaryKeyCases)
    func differingPrimaryKeysCoexist(_ row: PrimaryKeyCase) throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.add(Item(class: row.itemClass, attributes: [row.attribute: row.first]))
        try keychain.add(Item(class: row.itemClass, attributes: [row.attribute: row.second]))
        #expect(try keychain.find(ItemQuery(class: row.itemClass, synchronizable: .any)).count == 2)
    }

    @Test("defaults make absent primary-key attributes concrete (spec §8.2)")
    func defaultsCollide() throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("a")]))
        #expect(
            errorCode { try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("a")])) }
                == .duplicateItem)
        #expect(
            errorCode {
                try keychain.add(
                    Item(class: .genericPassword, attributes: [.account: .string("a"), .service: .string("")]))
            } == .duplicateItem)
        #expect(
            errorCode {
                try keychain.add(
                    Item(class: .genericPassword, attributes: [.account: .string("a"), "vwht": .string("")]))
            } == .duplicateItem, "an absent view hint counts as \"\" for uniqueness")
        let stored = try #require(try keychain.findFirst(ItemQuery(class: .genericPassword)))
        #expect(stored.attributes[.service] == .string(""))
        #expect(stored.attributes["vwht"] == nil, "view hint, token id and sharing group are returned only when set")
    }

    @Test("a string and data with the same bytes are the same account (spec §8.1)")
    func stringAndDataAreTheSameValue() throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("bob")]))
        #expect(
            errorCode {
                try keychain.add(Item(class: .genericPassword, attributes: [.account: .data(Data("bob".utf8))]))
            }
                == .duplicateItem)
        let found = try keychain.find(
            ItemQuery(class: .genericPassword, attributes: [.account: .data(Data("bob".utf8))]))
        #expect(found.first?.attributes[.account] == .string("bob"))
    }

    @Test("the same primary key may exist once per class")
    func classesAreSeparate() throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("a")]))
        try keychain.add(Item(class: .internetPassword, attributes: [.account: .string("a")]))
        #expect(try keychain.find(ItemQuery(class: .internetPassword)).count == 1)
    }

    @Test("non-key attributes (label, comment, accessibility, data) never distinguish items")
    func nonKeyAttributesDoNotDistinguish() throws {
        let keychain = try KeychainDatabase.inMemory()
        try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("a"), .label: .string("x")]))
        let variant = Item(
            class: .genericPassword,
            attributes: [
                .account: .string("a"), .label: .string("y"), .comment: .string("c"),
                .accessible: .string("dk"),
            ], data: Data("other".utf8))
        #expect(errorCode { try keychain.add(variant) } == .duplicateItem)
    }
}
