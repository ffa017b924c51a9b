// KeychainModel on its own (this target links neither the engine nor GRDB nor swift-crypto): the
// default-keychain policy as a value, and the one OSStatus mapping.

import Foundation
import KeychainModel
import Testing

@Suite("KeychainModel: the default keychain as a value")
struct DefaultKeychainPolicyTests {
    static let home = ["HOME": "/home/u"]
    static let login = "/home/u/.local/share/keychains/login.keychain-db"

    @Test(
        "KEYCHAIN_DEFAULT_PATH, else the preferences' default keychain, else the login keychain",
        arguments: [
            ([:], nil, login),
            ([:], "", login),
            ([:], "/srv/ci.keychain-db", "/srv/ci.keychain-db"),
            (["KEYCHAIN_DEFAULT_PATH": "/tmp/x.keychain-db"], "/srv/ci.keychain-db", "/tmp/x.keychain-db"),
            (["KEYCHAIN_DEFAULT_PATH": ""], nil, login),
            (["XDG_DATA_HOME": "/data"], nil, "/data/keychains/login.keychain-db"),
            (["XDG_DATA_HOME": "relative"], nil, login),
        ] as [([String: String], String?, String)])
    func defaultKeychain(environment: [String: String], preferred: String?, expected: String) {
        let paths = KeychainPaths(environment: Self.home.merging(environment) { $1 })
        var preferences = KeychainPreferences()
        preferences.defaultKeychain = preferred
        #expect(paths.defaultKeychain(preferences: preferences) == expected)
        if preferred == nil { #expect(paths.defaultKeychain(preferences: nil) == expected) }
    }

    @Test("a default keychain set on the paths wins over the preferences")
    func chosenDefaultWins() {
        var paths = KeychainPaths(environment: Self.home)
        #expect(paths.chosenDefault == nil)
        paths.defaultKeychain = "/k/chosen.keychain-db"
        var preferences = KeychainPreferences()
        preferences.defaultKeychain = "/k/preferred.keychain-db"
        #expect(paths.chosenDefault == "/k/chosen.keychain-db")
        #expect(paths.defaultKeychain(preferences: preferences) == "/k/chosen.keychain-db")
    }

    @Test("one mapping from any error to an OSStatus")
    func osStatusMapping() {
        #expect(KeychainError.osStatus(of: KeychainError(.itemNotFound)) == -25300)
        #expect(KeychainError.osStatus(of: POSIXError(.EIO)) == -36)
        #expect(KeychainError.osStatus(of: CocoaError(.fileNoSuchFile)) == -36)
        struct Unknown: Error {}
        #expect(KeychainError.osStatus(of: Unknown()) == KeychainError.internalComponent)
    }
}
