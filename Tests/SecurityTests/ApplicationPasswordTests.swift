// `.applicationPassword` items: their secret is sealed in the app's process under a key derived
// from the password its LAContext gives (kSecUseAuthenticationContext), so the keychain holds it
// sealed and nothing reads it without that password.

import Foundation
import KeychainCore
import KeychainTestSupport
import LocalAuthentication
import Security
import Testing

@Suite("kSecAttrAccessControl with .applicationPassword")
struct ApplicationPasswordTests {
    static func context(_ password: Data) -> LAContext {
        let context = LAContext()
        context.setCredential(password, type: .applicationPassword)
        return context
    }

    static func randomPassword() -> Data { Data((0..<Int.random(in: 0...40)).map { _ in UInt8.random(in: 0...255) }) }

    static func control(_ flags: SecAccessControlCreateFlags) throws -> SecAccessControl {
        try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flags, nil))
    }

    static func read(_ account: String, context: LAContext? = nil, skip: Bool = false) -> (OSStatus, Data?) {
        var query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrAccount: account, kSecReturnData: true,
        ]
        if let context { query[kSecUseAuthenticationContext] = context }
        if skip { query[kSecUseAuthenticationUI] = kSecUseAuthenticationUISkip }
        let (status, result) = copyMatching(query)
        return (status, result as? Data)
    }

    @Test(
        "sealed with the app's password: read back with it, refused with another or none, never stored in the clear",
        arguments: KeychainBackend.memoryAndAgent)
    func sealedUnderTheApplicationPassword(backend: KeychainBackend) throws {
        try withKeychain(backend) { keychain in
            let password = Self.randomPassword()
            let secret = Data("the app's secret \(UUID())".utf8)
            let control = try Self.control(.applicationPassword)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "sealed", kSecValueData: secret,
                    kSecAttrAccessControl: control,
                    kSecUseAuthenticationContext: Self.context(password),
                ]) == errSecSuccess)
            let read = Self.read("sealed", context: Self.context(password))
            #expect(read.0 == errSecSuccess && read.1 == secret)
            // What the keychain keeps is sealed.
            var raw = ItemQuery(class: .genericPassword, attributes: [.account: .string("sealed")])
            raw.opensApplicationPassword = true
            raw.authenticationUI = .fail
            let stored = try #require(try keychain.find(raw, includeData: true).first?.data)
            #expect(stored != secret && stored.range(of: secret) == nil)
            // Another password, none, an invalidated context.
            var other = Self.randomPassword()
            if other == password { other.append(1) }
            #expect(Self.read("sealed", context: Self.context(other)).0 == errSecAuthFailed)
            #expect(Self.read("sealed").0 == errSecInteractionNotAllowed)
            #expect(Self.read("sealed", skip: true).0 == errSecItemNotFound)
            let invalidated = Self.context(password)
            invalidated.invalidate()
            #expect(Self.read("sealed", context: invalidated).0 == errSecInteractionNotAllowed)
            // Other readers of the keychain (the security tool, the Secret Service) are refused.
            var plainReader = ItemQuery(class: .genericPassword, attributes: [.account: .string("sealed")])
            plainReader.authenticationUI = .fail
            #expect(throws: KeychainError.self) { try keychain.find(plainReader, includeData: true) }
            // Even its attributes, as for every item that asks for authentication (§8.20).
            let (status, _) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "sealed", kSecReturnAttributes: true,
            ])
            #expect(status == errSecInteractionNotAllowed)
        }
    }

    @Test(
        "adding or updating the secret without the password is refused; with it, the new secret is sealed",
        arguments: KeychainBackend.memoryAndAgent)
    func writesNeedThePassword(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let password = Self.randomPassword()
            let control = try Self.control(.applicationPassword)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w", kSecValueData: Data("a".utf8),
                    kSecAttrAccessControl: control,
                ]) == errSecInteractionNotAllowed)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w", kSecValueData: Data("a".utf8),
                    kSecAttrAccessControl: control, kSecUseAuthenticationContext: Self.context(password),
                ]) == errSecSuccess)
            let query: [CFString: Any] = [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "w"]
            #expect(
                SecItemUpdate(query as CFDictionary, [kSecValueData: Data("b".utf8)] as CFDictionary)
                    == errSecInteractionNotAllowed)
            var withContext = query
            withContext[kSecUseAuthenticationContext] = Self.context(password)
            #expect(
                SecItemUpdate(withContext as CFDictionary, [kSecValueData: Data("b".utf8)] as CFDictionary)
                    == errSecSuccess)
            #expect(Self.read("w", context: Self.context(password)).1 == Data("b".utf8))
            // A label: with the password, as every change of such an item; the secret stays sealed.
            #expect(
                SecItemUpdate(query as CFDictionary, [kSecAttrLabel: "renamed"] as CFDictionary)
                    == errSecInteractionNotAllowed)
            #expect(
                SecItemUpdate(withContext as CFDictionary, [kSecAttrLabel: "renamed"] as CFDictionary) == errSecSuccess)
            #expect(Self.read("w", context: Self.context(password)).1 == Data("b".utf8))
            // Taking the seal away without a new secret would leave it unreadable: refused.
            let plain = try #require(SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, [], nil))
            #expect(
                SecItemUpdate(withContext as CFDictionary, [kSecAttrAccessControl: plain] as CFDictionary)
                    == errSecParam)
        }
    }

    @Test(
        "the password is asked in addition to the other constraints: with .userPresence the read still needs the user")
    func inAdditionToOtherConstraints() throws {
        try withKeychain(.memory) { _ in
            let password = Self.randomPassword()
            let control = try Self.control([.userPresence, .applicationPassword])
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "both", kSecValueData: Data("s".utf8),
                    kSecAttrAccessControl: control,
                    kSecUseAuthenticationContext: Self.context(password),
                ]) == errSecSuccess)
            #expect(Self.read("both", context: Self.context(password)).0 == errSecInteractionNotAllowed)
        }
    }

    @Test("a secret put back in the clear under the seal's flag is refused, never taken as the secret")
    func aSecretInTheClearIsRefused() throws {
        try withKeychain(.memory) { keychain in
            let password = Self.randomPassword()
            let control = try Self.control(.applicationPassword)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "t", kSecValueData: Data("s".utf8),
                    kSecAttrAccessControl: control,
                    kSecUseAuthenticationContext: Self.context(password),
                ]) == errSecSuccess)
            // Another program of the user overwrites the secret through the engine (which lets a
            // caller that says it opens the seal itself change the item).
            var tampering = ItemQuery(class: .genericPassword, attributes: [.account: .string("t")])
            tampering.opensApplicationPassword = true
            #expect(try keychain.update(tampering, attributes: [:], data: Data("attacker's choice".utf8)) == 1)
            #expect(Self.read("t", context: Self.context(password)).0 == errSecDecode)
        }
    }
}
