import Dispatch
import Foundation
import KeychainCore
import KeychainStorage
import KeychainTestSupport
import Synchronization
import Testing

@Suite("Creating, opening and removing stores")
struct StoreLifecycleTests {
    @Test(
        "a created store is open, and reopening it with its cipher shows its values",
        arguments: KeychainBackend.allCases)
    func createIsOpen(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let cipher = try testCipher()
        let store = try fixture.create("profile", cipher: cipher)
        try store.put(data: Data("v".utf8), for: "k")
        #expect(store.name == "profile")
        #expect(store.accessGroup == AccessGroups.defaultGroupName)

        let reopened = try fixture.open("profile", cipher: try testCipher())
        #expect(try reopened.data(for: "k") == Data("v".utf8))
    }

    @Test(
        "creating a store that exists fails with storeAlreadyExists and keeps its values",
        arguments: KeychainBackend.allCases)
    func createExistingFails(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let store = try fixture.create("profile", cipher: try testCipher())
        try store.put(data: Data("v".utf8), for: "k")

        let error = storageError { try fixture.create("profile", cipher: nil) }
        #expect(error?.code == .storeAlreadyExists)
        #expect(error?.osStatus == -25299)
        #expect(try store.data(for: "k") == Data("v".utf8))
    }

    @Test("opening a store that does not exist fails with storeNotFound", arguments: KeychainBackend.allCases)
    func openMissingFails(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let error = storageError { try fixture.open("nothing", cipher: nil) }
        #expect(error?.code == .storeNotFound)
        #expect(error?.osStatus == -25300)
    }

    @Test(
        "removing a store removes its values; the name can be reused; removing again does nothing",
        arguments: KeychainBackend.allCases)
    func removeStore(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let store = try fixture.create("profile", cipher: try testCipher())
        for index in 0..<5 { try store.put(data: Data([UInt8(index)]), for: "k\(index)") }

        try KeychainStorage.removeStore(name: "profile", accessGroup: nil, database: fixture.handle)
        #expect(try fixture.itemCount() == 0)
        #expect(storageErrorCode { try fixture.open("profile", cipher: try testCipher()) } == .storeNotFound)
        #expect(storageErrorCode { try store.data(for: "k0") } == .storeNotFound)
        #expect(storageErrorCode { try store.put(data: Data(), for: "k0") } == .storeNotFound)
        try KeychainStorage.removeStore(name: "profile", accessGroup: nil, database: fixture.handle)

        let fresh = try fixture.create("profile", cipher: nil)
        #expect(try fresh.keys().isEmpty)
    }

    @Test("stores with different names are independent")
    func storesAreIndependent() throws {
        let fixture = try KeychainBackend.memory.make()
        let a = try fixture.create("a", cipher: try testCipher())
        let b = try fixture.create("b", cipher: nil)
        try a.put(data: Data("1".utf8), for: "k")
        try b.put(data: Data("2".utf8), for: "k")
        #expect(try a.data(for: "k") == Data("1".utf8))
        #expect(try b.data(for: "k") == Data("2".utf8))
        try a.removeAllData()
        #expect(try b.keys() == ["k"])
        try KeychainStorage.removeStore(name: "a", accessGroup: nil, database: fixture.handle)
        #expect(try b.data(for: "k") == Data("2".utf8))
    }

    static let invalidNames = [
        "", "a/b", "/", "..", "../x", "a..b", ".", "a\\b", "nul\u{0}byte", "tab\tname", "bell\u{7}",
        "broken\u{FFFD}utf8", String(repeating: "x", count: 201),
    ]

    @Test("a name that is not a plain name is refused by create, open and remove", arguments: invalidNames)
    func invalidNamesAreRefused(name: String) throws {
        let fixture = try KeychainBackend.memory.make()
        let error = storageError { try fixture.create(name, cipher: nil) }
        #expect(error?.code == .invalidStoreName)
        #expect(error?.osStatus == -50)
        #expect(storageErrorCode { try fixture.open(name, cipher: nil) } == .invalidStoreName)
        #expect(
            storageErrorCode {
                try KeychainStorage.removeStore(name: name, accessGroup: nil, database: fixture.handle)
            } == .invalidStoreName)
        #expect(try fixture.itemCount() == 0)
    }

    @Test(
        "names that are plain text are accepted",
        arguments: [
            "cache", "my store", "café", "日本語", "a.b", "-", "x.y.z", String(repeating: "x", count: 200),
        ])
    func validNamesAreAccepted(name: String) throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try fixture.create(name, cipher: nil)
        try store.put(data: Data("v".utf8), for: "k")
        #expect(try fixture.open(name, cipher: nil).data(for: "k") == Data("v".utf8))
    }

    @Test(
        "opening with the wrong cipher fails with wrongCipher",
        arguments: [
            "other password", "different salt", "none given", "given for a plain store",
        ])
    func wrongCipherOnOpen(mismatch: String) throws {
        let fixture = try KeychainBackend.memory.make()
        let right = try testCipher()
        let created: (any Ciphering)?
        let opening: (any Ciphering)?
        switch mismatch {
        case "other password": (created, opening) = (right, try testCipher("other"))
        case "different salt": (created, opening) = (right, try testCipher(salt: Data(repeating: 7, count: 16)))
        case "none given": (created, opening) = (right, nil)
        default: (created, opening) = (nil, right)
        }
        let store = try fixture.create("s", cipher: created)
        try store.put(data: Data("v".utf8), for: "k")

        let error = storageError { try fixture.open("s", cipher: opening) }
        #expect(error?.code == .wrongCipher)
        #expect(error?.osStatus == -25293)
        #expect(try fixture.open("s", cipher: created).data(for: "k") == Data("v".utf8))
    }
}

@Suite("Values in a store")
struct StoreValueTests {
    @Test("put, read, overwrite, remove and list values", arguments: KeychainBackend.allCases, [true, false])
    func values(backend: KeychainBackend, encrypted: Bool) throws {
        let fixture = try backend.make()
        let store = try fixture.create("s", cipher: encrypted ? try testCipher() : nil)
        #expect(try store.data(for: "a") == nil)
        #expect(try store.keys().isEmpty)

        try store.put(data: Data("1".utf8), for: "a")
        try store.put(data: Data(), for: "empty")
        try store.put(data: Data(count: 100_000), for: "large")
        #expect(try store.data(for: "a") == Data("1".utf8))
        #expect(try store.data(for: "empty") == Data())
        #expect(try store.data(for: "large") == Data(count: 100_000))
        #expect(try store.keys() == ["a", "empty", "large"])

        try store.put(data: Data("2".utf8), for: "a")
        #expect(try store.data(for: "a") == Data("2".utf8))
        #expect(try store.keys().count == 3)

        try store.removeData(for: "a")
        try store.removeData(for: "a")
        #expect(try store.data(for: "a") == nil)
        try store.removeAllData()
        try store.removeAllData()
        #expect(try store.keys().isEmpty)
        #expect(try fixture.itemCount() == 1)
    }

    @Test("with a cipher the keychain holds ciphertext; without one, the value as given")
    func cipherControlsWhatIsStored() throws {
        let fixture = try KeychainBackend.memory.make()
        let secret = Data("plaintext secret".utf8)
        try fixture.create("encrypted", cipher: try testCipher()).put(data: secret, for: "k")
        try fixture.create("plain", cipher: nil).put(data: secret, for: "k")

        let rows = try fixture.handle.find(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("k")]), includeData: true)
        #expect(rows.count == 2)
        let stored = rows.compactMap(\.data)
        #expect(stored.contains(secret))
        let ciphertext = try #require(stored.first { $0 != secret })
        #expect(ciphertext.count == secret.count + 29)
        #expect(ciphertext.first == 1)
        #expect(try testCipher().decrypt(ciphertext) == secret)
    }

    @Test("a value that does not decrypt throws decryptionFailed")
    func tamperedValueFails() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try fixture.create("s", cipher: try testCipher())
        try store.put(data: Data("v".utf8), for: "k")
        let query = ItemQuery(class: .genericPassword, attributes: [.account: .string("k")])
        var ciphertext = try #require(try fixture.handle.findFirst(query, includeData: true)?.data)
        ciphertext[ciphertext.count - 1] ^= 1
        try fixture.handle.update(query, attributes: [:], data: ciphertext)

        let error = storageError { try store.data(for: "k") }
        #expect(error?.code == .decryptionFailed)
        #expect(error?.osStatus == -26275)
    }

    @Test("concurrent puts from many threads all land", arguments: KeychainBackend.allCases)
    func concurrentPuts(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let store = try fixture.create("s", cipher: try testCipher())
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 48) { index in
            do {
                try store.put(data: Data("v\(index)".utf8), for: "k\(index)")
                try store.put(data: Data("shared\(index)".utf8), for: "shared")
                _ = try store.data(for: "k\(index)")
                _ = try store.keys()
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try store.keys().count == 49)
        for index in 0..<48 {
            #expect(try store.data(for: "k\(index)") == Data("v\(index)".utf8))
        }
        let shared = try #require(try store.data(for: "shared"))
        #expect(String(decoding: shared, as: UTF8.self).hasPrefix("shared"))
    }

    @Test("a locked keychain makes every operation throw errSecInteractionNotAllowed")
    func lockedKeychain() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try fixture.create("s", cipher: try testCipher())
        try store.put(data: Data("v".utf8), for: "k")
        fixture.handle.lock()

        let operations: [(String, () throws -> Void)] = [
            ("data", { _ = try store.data(for: "k") }),
            ("put", { try store.put(data: Data("w".utf8), for: "k") }),
            ("removeData", { try store.removeData(for: "k") }),
            ("removeAllData", { try store.removeAllData() }),
            ("keys", { _ = try store.keys() }),
            ("changeCipher", { try store.changeCipher(to: nil) }),
            ("openStore", { _ = try fixture.open("s", cipher: try testCipher()) }),
            (
                "removeStore",
                {
                    try KeychainStorage.removeStore(name: "s", accessGroup: nil, database: fixture.handle)
                }
            ),
        ]
        for (name, operation) in operations {
            let error = storageError(operation)
            #expect(error?.code == .keychain, "\(name)")
            #expect(error?.osStatus == -25308, "\(name)")
        }
        try fixture.handle.unlock(password: nil)
        #expect(try store.data(for: "k") == Data("v".utf8))
    }

    @Test("a store created readable after first unlock stays readable while locked")
    func afterFirstUnlockStore() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try fixture.create("s", cipher: nil, accessibility: .afterFirstUnlock)
        try store.put(data: Data("v".utf8), for: "k")
        fixture.handle.lock()
        #expect(try store.data(for: "k") == Data("v".utf8))
        #expect(try fixture.open("s", cipher: nil).accessibility == .afterFirstUnlock)
    }

    @Test("KeychainStorage works through the DataStoring protocol")
    func dataStoringProtocol() throws {
        func roundTrip(_ storage: some DataStoring) throws -> Data? {
            try storage.put(data: Data("x".utf8), for: "key")
            return try storage.data(for: "key")
        }
        let fixture = try KeychainBackend.memory.make()
        #expect(try roundTrip(fixture.create("s", cipher: nil)) == Data("x".utf8))
    }

    @Test("a description names the store and never a value")
    func descriptionHasNoSecret() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try fixture.create("described", cipher: try testCipher())
        try store.put(data: Data("hunter2".utf8), for: "k")
        #expect(String(describing: store).contains("described"))
        #expect(!String(describing: store).contains("hunter2"))
    }
}

@Suite("Sharing through an access group")
struct SharingTests {
    @Test("two programs sharing a group share the store; a program outside it cannot reach it")
    func sharedStore() throws {
        let temporary = try TemporaryKeychain()
        func handle(_ groups: [String]) throws -> KeychainDatabase {
            var configuration = temporary.keychain.configuration
            configuration.accessGroups = AccessGroups(groups)
            return try KeychainDatabase.open(at: temporary.path, configuration: configuration)
        }
        let appA = try handle(["team.a", "team.shared"])
        let appB = try handle(["team.b", "team.shared"])
        let outsider = try handle(["other"])

        let shared = try KeychainStorage.createStore(
            name: "shared", cipher: try testCipher(), accessGroup: "team.shared", database: appA)
        try shared.put(data: Data("from A".utf8), for: "k")
        let privateStore = try KeychainStorage.createStore(
            name: "private", cipher: nil, accessGroup: nil, database: appA)
        #expect(privateStore.accessGroup == "team.a")

        let opened = try KeychainStorage.openStore(
            name: "shared", cipher: try testCipher(), accessGroup: "team.shared", database: appB)
        #expect(try opened.data(for: "k") == Data("from A".utf8))
        try opened.put(data: Data("from B".utf8), for: "k")
        #expect(try shared.data(for: "k") == Data("from B".utf8))

        #expect(
            storageErrorCode {
                try KeychainStorage.openStore(name: "private", cipher: nil, accessGroup: nil, database: appB)
            } == .storeNotFound)
        let denied = storageError {
            try KeychainStorage.openStore(name: "shared", cipher: nil, accessGroup: "team.shared", database: outsider)
        }
        #expect(denied?.code == .keychain)
        #expect(denied?.osStatus == -34018)
    }
}
