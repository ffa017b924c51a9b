import Foundation
import KeychainCore
@testable import SecretService
import Testing

/// A D-Bus item's attributes are search terms: a search by any of them is an index lookup, a
/// locked keychain answers it exactly, and items stored before terms existed get theirs once.
@Suite("Secret Service searches through search terms")
struct SecretSearchTermsTests {
    private static func store(_ attributes: [String: String], in keychain: KeychainDatabase, withoutTerms: Bool = false)
        throws -> UUID
    {
        var stored = SecretAttributes.keychainAttributes(for: attributes, label: "L")
        if withoutTerms { stored[.searchTerms] = nil }  // as the provider stored items before terms
        let item = Item(class: SecretAttributes.itemClass(for: attributes), attributes: stored, data: Data("s".utf8))
        return try #require(try keychain.add(item).persistentID)
    }

    private static func found(_ query: [String: String], in keychain: KeychainDatabase) throws -> Set<UUID> {
        let found = try SecretServiceProvider.find(query, in: keychain)
        return Set(found.items.filter { SecretAttributes.matches($0, query) }.compactMap(\.persistentID) + found.locked)
    }

    @Test("a search by a browser's attributes finds items stored before terms once the keychain is upgraded")
    func upgradeOfOlderItems() throws {
        let keychain = try KeychainDatabase.inMemory()
        let chrome = ["xdg:schema": "chrome_libsecret_os_crypt_password_v2", "application": "chrome"]
        let older = try Self.store(chrome, in: keychain, withoutTerms: true)
        let newer = try Self.store(chrome.merging(["profile": "2"]) { $1 }, in: keychain)
        _ = try Self.store(
            ["xdg:schema": "chrome_libsecret_os_crypt_password_v2", "application": "edge"], in: keychain)
        #expect(try Self.found(["application": "chrome"], in: keychain) == [newer], "the older item has no terms yet")
        let changed = try keychain.upgradeItems(
            named: SecretServiceProvider.searchTermsUpgrade, classes: SecretServiceProvider.passwordClasses,
            SecretAttributes.missingSearchTerms)
        #expect(changed == 1)
        #expect(try Self.found(["application": "chrome"], in: keychain) == [older, newer])
        #expect(try Self.found(["profile": "2", "application": "chrome"], in: keychain) == [newer])
    }

    @Test("a locked keychain lists exactly the items of any stored attributes, and of a server and protocol")
    func lockedSearches() throws {
        let keychain = try KeychainDatabase.inMemory(password: "pw")
        try keychain.unlock(password: "pw")
        let chrome = try Self.store(["xdg:schema": "chrome_v2", "application": "chrome"], in: keychain)
        let other = try Self.store(["xdg:schema": "chrome_v2", "application": "other"], in: keychain)
        let plain = try Self.store(["service": "svc", "account": "a"], in: keychain)
        let git = try Self.store(
            [
                "xdg:schema": "org.gnome.keyring.NetworkPassword", "server": "example.com", "protocol": "https",
                "user": "alice",
            ],
            in: keychain)
        keychain.lock()
        #expect(try Self.found(["application": "chrome"], in: keychain) == [chrome])
        #expect(try Self.found(["xdg:schema": "chrome_v2"], in: keychain) == [chrome, other])
        #expect(try Self.found(["application": "none"], in: keychain).isEmpty, "an exact answer: none, not IsLocked")
        #expect(try Self.found(["service": "svc", "account": "a"], in: keychain) == [plain])
        #expect(try Self.found(["server": "example.com", "protocol": "https"], in: keychain) == [git])
        #expect(
            try Self.found(
                ["server": "example.com", "protocol": "https", "xdg:schema": "org.gnome.keyring.NetworkPassword"],
                in: keychain) == [git])
        #expect(try Self.found(["server": "example.com", "protocol": "ftp"], in: keychain).isEmpty)
        // A user name is `acct` only when the map has no `account`: the index cannot say.
        #expect(throws: KeychainError.self) {
            try Self.found(["server": "example.com", "user": "alice"], in: keychain)
        }
        // Unlocked, the same searches find the same items.
        try keychain.unlock(password: "pw")
        #expect(try Self.found(["xdg:schema": "chrome_v2"], in: keychain) == [chrome, other])
        #expect(try Self.found(["server": "example.com", "user": "alice"], in: keychain) == [git])
    }
}
