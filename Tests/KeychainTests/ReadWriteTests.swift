import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

@testable import Keychain

@Suite("Reading and writing by key")
struct ReadWriteTests {
    @Test("a string, data and a Codable value read back as written", arguments: KeychainBackend.allCases)
    func roundTrip(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain()
        let credentials = Credentials(
            user: "alice", scopes: ["read", "write"], expires: Date(timeIntervalSince1970: 1_700_000_000))

        try keychain.set("s3cr3t", forKey: "token")
        try keychain.set(Data([0, 1, 2, 255]), forKey: "blob")
        try keychain.set(credentials, forKey: "credentials")
        try keychain.set(42, forKey: "count")

        #expect(try keychain.string(forKey: "token") == "s3cr3t")
        #expect(try keychain.data(forKey: "blob") == Data([0, 1, 2, 255]))
        #expect(try keychain.value(Credentials.self, forKey: "credentials") == credentials)
        #expect(try keychain.value(Int.self, forKey: "count") == 42)
        // Strings and data are stored as they are, so every reader agrees.
        #expect(try keychain.data(forKey: "token") == Data("s3cr3t".utf8))
        #expect(try keychain.value(String.self, forKey: "token") == "s3cr3t")
        #expect(try keychain.value(Data.self, forKey: "blob") == Data([0, 1, 2, 255]))
    }

    @Test(
        "an absent key reads as nil, is not contained, and removing it reports false",
        arguments: KeychainBackend.allCases)
    func absentKeyIsNil(backend: KeychainBackend) throws {
        let keychain = try backend.make().keychain()
        #expect(try keychain.string(forKey: "missing") == nil)
        #expect(try keychain.data(forKey: "missing") == nil)
        #expect(try keychain.value(Credentials.self, forKey: "missing") == nil)
        #expect(try keychain.contains("missing") == false)
        #expect(try keychain.attributes(forKey: "missing") == nil)
        #expect(try keychain.remove("missing") == false)
        #expect(try keychain.removeAll() == false)
        #expect(try keychain.allKeys().isEmpty)
    }

    @Test(
        "writing a key twice replaces its value and keeps one item with its identity",
        arguments: KeychainBackend.allCases)
    func overwriteReplaces(backend: KeychainBackend) throws {
        let keychain = try backend.make().keychain()
        try keychain.set("one", forKey: "token")
        let first = try #require(try keychain.attributes(forKey: "token"))
        try keychain.set("two", forKey: "token")
        let second = try #require(try keychain.attributes(forKey: "token"))

        #expect(try keychain.string(forKey: "token") == "two")
        #expect(try keychain.allKeys() == ["token"])
        #expect(second.persistentID == first.persistentID)
        #expect(second.creationDate == first.creationDate)
        #expect(try #require(second.modificationDate) > #require(first.modificationDate))
    }

    @Test("contains, remove and removeAll address only this keychain's items", arguments: KeychainBackend.allCases)
    func removeAndContains(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain("service.a")
        let other = fixture.keychain("service.b")
        try keychain.set("1", forKey: "a")
        try keychain.set("2", forKey: "b")
        try other.set("3", forKey: "a")

        #expect(try keychain.contains("a"))
        #expect(try keychain.remove("a") == true)
        #expect(try keychain.contains("a") == false)
        #expect(try other.string(forKey: "a") == "3")

        #expect(try keychain.removeAll() == true)
        #expect(try keychain.allKeys().isEmpty)
        #expect(try other.allKeys() == ["a"])
    }

    @Test("subscripts read, write, and remove on nil", arguments: KeychainBackend.allCases)
    func subscripts(backend: KeychainBackend) throws {
        let keychain = try backend.make().keychain()
        keychain["token"] = "abc"
        #expect(keychain["token"] == "abc")
        #expect(try keychain.string(forKey: "token") == "abc")
        keychain["token"] = nil
        #expect(keychain["token"] == nil)
        #expect(try keychain.contains("token") == false)

        keychain[data: "blob"] = Data([9, 8])
        #expect(keychain[data: "blob"] == Data([9, 8]))
        keychain[data: "blob"] = nil
        #expect(keychain[data: "blob"] == nil)
    }

    @Test(
        "allKeys lists keys in the order they were added; allItems gives their attributes",
        arguments: KeychainBackend.allCases)
    func listing(backend: KeychainBackend) throws {
        let keychain = try backend.make().keychain().label("Tests").comment("made by a test")
        for key in ["c", "a", "b"] { try keychain.set("secret-\(key)", forKey: key) }
        #expect(try keychain.allKeys() == ["c", "a", "b"])

        let items = try keychain.allItems()
        #expect(items.map(\.key) == ["c", "a", "b"])
        for item in items {
            #expect(item.label == "Tests")
            #expect(item.comment == "made by a test")
            #expect(item.accessibility == .whenUnlocked)
            #expect(item.synchronizable == false)
            #expect(item.accessGroup == AccessGroups.defaultGroupName)
            #expect(item.creationDate != nil)
            #expect(!String(describing: item).contains("secret"))
        }
    }

    @Test("listing keys and items never asks the engine for secrets")
    func listingNeverDecryptsSecrets() throws {
        let spy = SpyStore(try .inMemory())
        let keychain = Keychain.spied(spy)
        try keychain.set("secret", forKey: "a")
        try keychain.set("secret", forKey: "b")
        let before = spy.findIncludeData.count

        _ = try keychain.allKeys()
        _ = try keychain.allItems()
        _ = try keychain.contains("a")
        _ = try keychain.attributes(forKey: "a")

        let listing = spy.findIncludeData.dropFirst(before)
        #expect(listing.count == 4)
        #expect(listing.allSatisfy { $0 == false })
        _ = try keychain.string(forKey: "a")
        #expect(spy.findIncludeData.last == true)
    }

    @Test("reading a secret that is not UTF-8 as a string throws errSecDecode")
    func nonUTF8StringThrows() throws {
        let keychain = try KeychainBackend.memory.make().keychain()
        try keychain.set(Data([0xFF, 0xFE, 0xFD]), forKey: "binary")
        #expect(keychainErrorCode { try keychain.string(forKey: "binary") } == .decode)
        #expect(KeychainError.Code.decode.rawValue == -26275)
    }

    @Test("decoding the wrong type throws errSecDecode without quoting the secret")
    func wrongTypeThrowsWithoutSecret() throws {
        let keychain = try KeychainBackend.memory.make().keychain()
        try keychain.set("{\"user\":\"hunter2-secret\"}", forKey: "json")
        do {
            _ = try keychain.value(Credentials.self, forKey: "json")
            Issue.record("decoding did not fail")
        } catch let error as KeychainError {
            #expect(error.code == .decode)
            #expect(error.osStatus == -26275)
            #expect(!String(describing: error).contains("hunter2"))
            #expect(error.underlying == nil)
        }
    }
}

@Suite("Configuration values")
struct ConfigurationTests {
    @Test("configuration methods return a new Keychain and leave the original unchanged")
    func configurationIsAValue() throws {
        let base = try KeychainBackend.memory.make().keychain()
        let configured = base.accessibility(.afterFirstUnlock).synchronizable(true).label("L").comment("C")
        #expect(base.accessibility == .whenUnlocked)
        #expect(base.synchronizable == false)
        #expect(base.label == nil)
        #expect(base.comment == nil)
        #expect(configured.accessibility == .afterFirstUnlock)
        #expect(configured.synchronizable)
        #expect(configured.label == "L")
        #expect(configured.comment == "C")
    }

    @Test(
        "written items get the configured accessibility, label and comment",
        arguments: [
            Accessibility.whenUnlocked, .afterFirstUnlock, .always, .whenUnlockedThisDeviceOnly,
            .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
        ])
    func attributesAreWritten(accessibility: Accessibility) throws {
        let keychain = try KeychainBackend.memory.make().keychain().accessibility(accessibility).label("Label").comment(
            "Comment")
        try keychain.set("x", forKey: "k")
        let attributes = try #require(try keychain.attributes(forKey: "k"))
        #expect(attributes.accessibility == accessibility)
        #expect(attributes.label == "Label")
        #expect(attributes.comment == "Comment")
    }

    @Test("rewriting an item applies a changed accessibility and label")
    func rewriteAppliesNewConfiguration() throws {
        let fixture = try KeychainBackend.memory.make()
        try fixture.keychain().label("old").set("1", forKey: "k")
        try fixture.keychain().accessibility(.afterFirstUnlock).label("new").set("2", forKey: "k")
        let attributes = try #require(try fixture.keychain().attributes(forKey: "k"))
        #expect(attributes.accessibility == .afterFirstUnlock)
        #expect(attributes.label == "new")
        #expect(try fixture.keychain().string(forKey: "k") == "2")
        #expect(try fixture.keychain().allKeys().count == 1)
    }

    @Test("a synchronizable keychain and a plain one address different items")
    func synchronizableIsExact() throws {
        let fixture = try KeychainBackend.memory.make()
        let plain = fixture.keychain()
        let synced = plain.synchronizable(true)
        try plain.set("local", forKey: "k")
        try synced.set("synced", forKey: "k")
        #expect(try plain.string(forKey: "k") == "local")
        #expect(try synced.string(forKey: "k") == "synced")
        #expect(try synced.allItems().map(\.synchronizable) == [true])
        try synced.remove("k")
        #expect(try plain.string(forKey: "k") == "local")
    }

    @Test("an access group keeps items apart, and a group the process may not use is refused")
    func accessGroups() throws {
        let fixture = try KeychainBackend.memory.make(accessGroups: AccessGroups(["team.app", "team.shared"]))
        let app = fixture.keychain(accessGroup: "team.app")
        let shared = fixture.keychain(accessGroup: "team.shared")
        let unnamed = fixture.keychain()
        try app.set("a", forKey: "k")
        try shared.set("s", forKey: "k")

        #expect(try app.string(forKey: "k") == "a")
        #expect(try shared.string(forKey: "k") == "s")
        #expect(try shared.allItems().map(\.accessGroup) == ["team.shared"])
        // Without a group, writes go to the first group and reads see every group.
        try unnamed.set("u", forKey: "k")
        #expect(try app.string(forKey: "k") == "u")
        #expect(try unnamed.allKeys() == ["k", "k"])

        let foreign = fixture.keychain(accessGroup: "other.team")
        #expect(keychainErrorCode { try foreign.set("x", forKey: "k") } == .missingEntitlement)
        #expect(KeychainError.Code.missingEntitlement.rawValue == -34018)
    }

    @Test("Internet-password keychains are keyed by server, protocol, authentication, port and path")
    func internetPasswords() throws {
        let fixture = try KeychainBackend.memory.make()
        let https = Keychain(server: "api.example.com", protocolType: .https, database: fixture.handle)
        let http = Keychain(server: "api.example.com", protocolType: .http, database: fixture.handle)
        let form = Keychain(
            server: "api.example.com", protocolType: .https, authenticationType: .htmlForm,
            database: fixture.handle)
        let url = Keychain(
            server: URL(string: "https://api.example.com:8443/v1")!, protocolType: .https, database: fixture.handle)

        try https.set("h", forKey: "alice")
        try http.set("p", forKey: "alice")
        try form.set("f", forKey: "alice")
        try url.set("u", forKey: "alice")

        #expect(try https.string(forKey: "alice") == "h")
        #expect(try http.string(forKey: "alice") == "p")
        #expect(try form.string(forKey: "alice") == "f")
        #expect(try url.string(forKey: "alice") == "u")
        #expect(
            url.itemKind
                == .internetPassword(
                    server: "api.example.com", protocolType: .https, authenticationType: .default, port: 8443,
                    path: "/v1"))
        // The items are real Internet passwords, visible to engine queries with Apple's codes.
        let stored = try fixture.handle.find(
            ItemQuery(class: .internetPassword, attributes: [.server: .string("api.example.com")]))
        #expect(stored.count == 4)
        #expect(Set(stored.compactMap { $0.attributes[.protocol]?.stringValue }) == ["htps", "http"])
    }

    @Test("a description shows the configuration and never a secret")
    func descriptionHasNoSecret() throws {
        let keychain = try KeychainBackend.memory.make().keychain("svc").label("L")
        try keychain.set("hunter2", forKey: "k")
        let text = String(describing: keychain)
        #expect(text.contains("svc"))
        #expect(!text.contains("hunter2"))
    }
}

@Suite("The default keychain")
struct DefaultKeychainTests {
    @Test(
        "Keychain(service:) created under withDefaultDatabase uses that database", arguments: KeychainBackend.allCases)
    func overrideRoutesDefaultKeychain(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        try Keychain.withDefaultDatabase(fixture.handle) {
            try Keychain(service: "routed").set("v", forKey: "k")
        }
        #expect(try fixture.keychain("routed").string(forKey: "k") == "v")
        let value = try Keychain.withDefaultDatabase(fixture.handle) {
            try Keychain(service: "routed").string(forKey: "k")
        }
        #expect(value == "v")
    }

    @Test("the asynchronous override reaches child tasks", arguments: KeychainBackend.allCases)
    func asyncOverride(backend: KeychainBackend) async throws {
        let fixture = try backend.make()
        try await Keychain.withDefaultDatabase(fixture.handle) {
            let keychain = Keychain(service: "routed")
            try await keychain.set("v", forKey: "k")
            let value = try await Task { try await Keychain(service: "routed").string(forKey: "k") }.value
            #expect(value == "v")
        }
        #expect(try await fixture.keychain("routed").string(forKey: "k") == "v")
    }
}
