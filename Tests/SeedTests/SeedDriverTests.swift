// Drives the seed documents' code against a fresh in-memory default keychain per test:
// add, read back, update (errSecDuplicateItem, then SecItemUpdate), delete, read → not found.

import Foundation
import KeychainCore
import Security
import Testing

private func withKeychain<T>(_ body: () throws -> T) throws -> T {
    let keychain = try KeychainDatabase.inMemory(configuration: .testing())
    return try KeychainDatabase.withDefault(keychain) { try body() }
}

private func status(service: String? = nil, account: String) -> OSStatus {
    var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: account]
    if let service { query[kSecAttrService as String] = service }
    return SecItemCopyMatching(query as CFDictionary, nil)
}

@Suite("Seed documents")
struct SeedDriverTests {
    @Test("seed 002 KeychainHelper: save, read, save again (duplicate → update), delete")
    func seed002() throws {
        try withKeychain {
            let helper = KeychainHelper.standard
            helper.save(Data("dummy-access-token".utf8), service: "access-token", account: "facebook")
            let data = try #require(helper.read(service: "access-token", account: "facebook"))
            #expect(String(data: data, encoding: .utf8) == "dummy-access-token")
            helper.save(Data("rotated-token".utf8), service: "access-token", account: "facebook")
            #expect(helper.read(service: "access-token", account: "facebook") == Data("rotated-token".utf8))
            helper.delete(service: "access-token", account: "facebook")
            #expect(helper.read(service: "access-token", account: "facebook") == nil)
            #expect(status(service: "access-token", account: "facebook") == errSecItemNotFound)
        }
    }

    @Test("seed 001 KeychainAccess: add, query, duplicate → SecItemUpdate, delete")
    func seed001() throws {
        try withKeychain {
            let access = KeychainAccess()
            try access.addKeychainData(itemKey: "api", itemValue: "first")
            #expect(try access.queryKeychainData(itemKey: "api") == "first")
            let query: [String: AnyObject] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "api" as AnyObject,
            ]
            var add = query
            add[kSecValueData as String] = Data("second".utf8) as AnyObject
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecDuplicateItem)
            let update = [kSecValueData as String: Data("second".utf8) as AnyObject]
            #expect(SecItemUpdate(query as CFDictionary, update as CFDictionary) == errSecSuccess)
            #expect(try access.queryKeychainData(itemKey: "api") == "second")
            try access.addKeychainData(itemKey: "api", itemValue: "third")
            #expect(try access.queryKeychainData(itemKey: "api") == "third")
            try access.deleteKeychainData(itemKey: "api")
            #expect(try access.queryKeychainData(itemKey: "api") == nil)
            #expect(status(account: "api") == errSecItemNotFound)
        }
    }

    @Test("seed 000 KeychainManager and KeychainItemStorable: save, read, duplicate → update, delete")
    func seed000() throws {
        try withKeychain {
            let manager = KeychainManager.shared
            try manager.saveItem("hunter2", itemClass: .generic, key: "alice", attributes: [kSecAttrService: "mail"])
            let storable = KeychainItemStorable(service: "mail", account: "alice")
            #expect(try storable.readPassword() == "\"hunter2\"")
            do {
                try manager.saveItem(
                    "hunter3", itemClass: .generic, key: "alice", attributes: [kSecAttrService: "mail"])
                Issue.record("a second save must report a duplicate")
            } catch KeychainManager.KeychainError.duplicateItem {
                let query =
                    [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice", kSecAttrService: "mail"]
                    as CFDictionary
                let changes = [kSecValueData: try JSONEncoder().encode("hunter3")] as CFDictionary
                #expect(SecItemUpdate(query, changes) == errSecSuccess)
            }
            #expect(try storable.readPassword() == "\"hunter3\"")
            let delete = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "alice"] as CFDictionary
            #expect(SecItemDelete(delete) == errSecSuccess)
            do {
                _ = try storable.readPassword()
                Issue.record("a deleted password must not be found")
            } catch KeychainItemStorable.Error.passwordNotFound {
            }
        }
    }

    struct Token: Codable, Equatable {
        var value: String
        var expires: Date
    }

    /// What Apple returns when the manager saves a Codable value keyed by account in each class:
    /// passwords store it; certificates, keys and identities have no account attribute.
    static let classOutcomes: [(KeychainManager.ItemClass, OSStatus)] = [
        (.generic, errSecSuccess), (.password, errSecSuccess), (.certificate, errSecNoSuchAttr),
        (.cryptography, errSecNoSuchAttr), (.identity, errSecNoSuchAttr),
    ]

    @Test("seed 000 stores a Codable value in each class or fails with Apple's code", arguments: 0..<5)
    func seed000Classes(index: Int) throws {
        let (itemClass, expected) = Self.classOutcomes[index]
        try withKeychain {
            let token = Token(value: "abc", expires: Date(timeIntervalSinceReferenceDate: 1000))
            var thrown: OSStatus = errSecSuccess
            do {
                try KeychainManager.shared.saveItem(token, itemClass: itemClass, key: "k")
            } catch KeychainManager.KeychainError.unexpected(let status) {
                thrown = status
            }
            #expect(thrown == expected)
            guard expected == errSecSuccess else { return }
            var result: CFTypeRef?
            let query = [kSecClass: itemClass.rawValue, kSecAttrAccount: "k", kSecReturnData: true] as CFDictionary
            #expect(SecItemCopyMatching(query, &result) == errSecSuccess)
            let data = try #require(result as? Data)
            #expect(try JSONDecoder().decode(Token.self, from: data) == token)
        }
    }
}
