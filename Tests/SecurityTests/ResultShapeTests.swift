import Foundation
import KeychainCore
import KeychainTestSupport
import Security
import Testing

/// Every combination of the four return keys with limit one and limit all (the shapes of Apple's
/// `SecItemResultCopyPrepared`, `OSX/sec/Security/SecItem.m`), for a generic password with data.
struct ShapeCase: CustomTestStringConvertible, Sendable {
    var data: Bool, attributes: Bool, ref: Bool, persistentRef: Bool, limitAll: Bool

    var testDescription: String {
        let keys = [
            data ? "Data" : nil, attributes ? "Attributes" : nil, ref ? "Ref" : nil,
            persistentRef ? "PersistentRef" : nil,
        ]
        .compactMap { $0 }.joined(separator: "+")
        return (keys.isEmpty ? "none" : keys) + (limitAll ? ", limit all" : ", limit one")
    }

    enum Shape: Equatable { case nothing, data, reference, dictionary(Set<String>) }

    /// What Apple returns per item (`SecItemResultCopyPrepared`, `OSX/sec/Security/SecItem.m`).
    var expected: Shape {
        let others = [data, attributes, persistentRef].filter { $0 }.count
        if attributes || (ref && others > 0) || others > 1 {
            var keys: Set<String> = []
            if attributes || ref {
                keys.formUnion(["acct", "svce", "agrp", "pdmn", "sync", "musr", "tomb", "accc", "cdat", "mdat"])
            }
            if data { keys.insert("sha1") }
            if data || ref { keys.insert("v_Data") }
            if persistentRef { keys.insert("v_PersistentRef") }
            if ref { keys.insert("class") }
            // Data + PersistentRef alone also carries the attributes on iOS (callers rely only on the two keys).
            if data && persistentRef && !attributes && !ref {
                keys.formUnion(["acct", "svce", "agrp", "pdmn", "sync", "musr", "tomb", "accc", "cdat", "mdat"])
            }
            return .dictionary(keys)
        }
        if data { return .data }
        if persistentRef { return .reference }
        return .nothing
    }
}

let shapeCases: [ShapeCase] = (0..<32).map {
    ShapeCase(
        data: $0 & 1 != 0, attributes: $0 & 2 != 0, ref: $0 & 4 != 0, persistentRef: $0 & 8 != 0, limitAll: $0 & 16 != 0
    )
}

@Suite("§4.3 result shapes")
struct ResultShapeTests {
    @Test(
        "each combination of return keys and limit gives Apple's result shape",
        arguments: KeychainBackend.memoryAndAgent,
        shapeCases)
    func shape(backend: KeychainBackend, _ row: ShapeCase) throws {
        try withKeychain(backend) { _ in
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a", kSecAttrService: "s",
                    kSecValueData: Data("x".utf8),
                ]) == errSecSuccess)
            var query: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "a"]
            query[kSecReturnData] = row.data
            query[kSecReturnAttributes] = row.attributes
            query[kSecReturnRef] = row.ref
            query[kSecReturnPersistentRef] = row.persistentRef
            if row.limitAll { query[kSecMatchLimit] = kSecMatchLimitAll }
            let (status, result) = copyMatching(query)
            #expect(status == errSecSuccess)
            let object: Any?
            if row.limitAll {
                let array = try #require(result as? [Any], "limit all always returns an array")
                #expect(array.count == (row.expected == .nothing ? 0 : 1))
                object = array.first
            } else {
                object = result
            }
            switch row.expected {
            case .nothing:
                #expect(object == nil)
            case .data:
                #expect(object as? Data == Data("x".utf8))
            case .reference:
                #expect((object as? Data)?.count == 20)
            case .dictionary(let keys):
                let dictionary = try #require(object as? [String: Any])
                #expect(Set(dictionary.keys) == keys)
            }
        }
    }
}

@Suite("§6 locked keychain per accessibility class, through SecItem")
struct SecItemAccessibilityTests {
    static let table: [(String, Bool)] = [
        ("ak", false), ("aku", false), ("ck", false), ("cku", false), ("dk", true), ("dku", true),
    ]

    @Test("a never-unlocked password keychain serves only the always classes", arguments: 0..<6)
    func neverUnlocked(index: Int) throws {
        let (accessibility, readable) = Self.table[index]
        let temporary = try TemporaryKeychain(password: "pw")
        try temporary.keychain.unlock(password: "pw")
        try temporary.keychain.add(
            Item(
                class: .genericPassword, attributes: [.account: .string("x"), .accessible: .string(accessibility)],
                data: Data("secret".utf8)))
        let fresh = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        try KeychainDatabase.withDefault(fresh) {
            let (status, result) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "x", kSecReturnData: true,
            ])
            #expect(status == (readable ? errSecSuccess : errSecInteractionNotAllowed))
            #expect((result as? Data != nil) == readable)
            let update = SecItemUpdate(
                [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "x"] as CFDictionary,
                [kSecAttrLabel: "l"] as CFDictionary)
            #expect(update == (readable ? errSecSuccess : errSecInteractionNotAllowed))
            #expect(SecKeychainUnlock(nil, 2, "pw", true) == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "x", kSecReturnData: true]).0
                    == errSecSuccess)
        }
    }

    @Test(
        "dates: creation dates come back as Date and match exactly; key dates default to 2001-01-01",
        arguments: KeychainBackend.memoryAndAgent)
    func dates(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            #expect(add([kSecClass: kSecClassKey, kSecAttrApplicationTag: Data("t".utf8)]) == errSecSuccess)
            let (_, result) = copyMatching([kSecClass: kSecClassKey, kSecReturnAttributes: true])
            let dictionary = try #require(result as? [String: Any])
            let created = try #require(dictionary["cdat"] as? Date)
            #expect(dictionary["sdat"] as? Date == Date(timeIntervalSinceReferenceDate: 0))
            #expect(copyMatching([kSecClass: kSecClassKey, kSecAttrCreationDate: created]).0 == errSecSuccess)
            #expect(
                copyMatching([kSecClass: kSecClassKey, kSecAttrCreationDate: created.addingTimeInterval(1)]).0
                    == errSecItemNotFound)
            #expect(copyMatching([kSecClass: kSecClassKey, kSecAttrCreationDate: "yesterday"]).0 == errSecParam)
        }
    }
}
