import Foundation
import KeychainClient
import KeychainCore
import KeychainModel
import KeychainTestSupport
import Security
import Testing

/// macOS's access objects (`SecAccessCreate`, `SecTrustedApplicationCreateFromPath`) given to
/// `SecItemAdd` as `kSecAttrAccess`: the item's access list, which keychaind enforces.
@Suite("SecAccess: trusted applications through SecItemAdd")
struct SecAccessTests {
    static func trustedApplication(_ path: String?) -> (OSStatus, SecTrustedApplication?) {
        var application: SecTrustedApplication?
        let status =
            path.map { path in path.withCString { SecTrustedApplicationCreateFromPath($0, &application) } }
            ?? SecTrustedApplicationCreateFromPath(nil, &application)
        return (status, application)
    }

    static func access(_ trusted: [SecTrustedApplication]?) throws -> SecAccess {
        var access: SecAccess?
        #expect(SecAccessCreate("an item" as CFString, trusted.map { $0 as CFArray }, &access) == errSecSuccess)
        return try #require(access)
    }

    /// The access list keychaind stored for the item with `account`.
    static func storedList(_ keychain: any KeychainHandle, account: String) throws -> [String]? {
        let item = try keychain.findFirst(
            ItemQuery(class: .genericPassword, attributes: [.account: .string(account)]), includeData: false)
        return item?.attributes[.access]?.dataValue.map { AccessList(serialized: $0).applications.map(\.description) }
    }

    @Test("a program is named by its real file; nil names this program; a missing file is errSecParam")
    func trustedApplicationsAreNamedByTheirFiles() throws {
        let real = URL(fileURLWithPath: "/usr/bin/true").resolvingSymlinksInPath().path
        let (status, named) = Self.trustedApplication("/usr/bin/true")
        #expect(status == errSecSuccess && named?.description == "<SecTrustedApplicationRef: \(real)>")
        let this = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(Self.trustedApplication(nil).1?.description == "<SecTrustedApplicationRef: \(this)>")
        #expect(Self.trustedApplication("/nonexistent/program").0 == errSecParam)
        var access: SecAccess?
        #expect(SecAccessCreate("x" as CFString, ["not an application"] as CFArray, &access) == errSecParam)
    }

    @Test(
        "through keychaind an item whose list names this program reads; one naming another program asks (nobody here: errSecInteractionNotAllowed) and lists; an empty list trusts nobody"
    )
    func keychaindFollowsTheList() throws {
        try withKeychain(.agent) { keychain in
            let other = try #require(Self.trustedApplication("/usr/bin/true").1)
            for (account, trusted) in [("mine", nil), ("other", [other]), ("nobody", [])]
                as [(String, [SecTrustedApplication]?)]
            {
                let status = add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: account,
                    kSecValueData: Data("s-\(account)".utf8),
                    kSecAttrAccess: try Self.access(trusted),
                ])
                #expect(status == errSecSuccess, "\(account)")
            }
            func read(_ account: String) -> OSStatus {
                copyMatching([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: account, kSecReturnData: true,
                ]).0
            }
            #expect(read("mine") == errSecSuccess)
            #expect(read("other") == errSecInteractionNotAllowed)
            #expect(read("nobody") == errSecInteractionNotAllowed)
            // Attributes alone are no secret: listed as any item is.
            let (listed, _) = copyMatching([
                kSecClass: kSecClassGenericPassword, kSecAttrAccount: "other", kSecReturnAttributes: true,
            ])
            #expect(listed == errSecSuccess)
            let this = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            #expect(try Self.storedList(keychain, account: "mine") == [this])
            #expect(try Self.storedList(keychain, account: "nobody") == [])
        }
    }

    @Test(
        "kSecUseDataProtectionKeychain drops kSecAttrAccess, as macOS does; anything but a SecAccess is errSecParam; updates drop it"
    )
    func dataProtectionKeychainDropsIt() throws {
        try withKeychain(.memory) { keychain in
            let nobody = try Self.access([])
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "dp", kSecValueData: Data("s".utf8),
                    kSecAttrAccess: nobody, kSecUseDataProtectionKeychain: true,
                ]) == errSecSuccess)
            #expect(try Self.storedList(keychain, account: "dp") == nil)
            #expect(
                add([
                    kSecClass: kSecClassGenericPassword, kSecAttrAccount: "bad", kSecValueData: Data("s".utf8),
                    kSecAttrAccess: "a string",
                ]) == errSecParam)
            #expect(
                SecItemUpdate(
                    [kSecClass: kSecClassGenericPassword, kSecAttrAccount: "dp"] as CFDictionary,
                    [kSecAttrAccess: nobody, kSecAttrLabel: "relabelled"] as CFDictionary) == errSecSuccess)
            #expect(try Self.storedList(keychain, account: "dp") == nil)
        }
    }
}
