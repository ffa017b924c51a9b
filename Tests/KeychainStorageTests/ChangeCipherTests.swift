import Foundation
import KeychainCore
import KeychainStorage
import KeychainTestSupport
import Testing

@Suite("Changing a store's cipher")
struct ChangeCipherTests {
    static let values: [String: Data] = [
        "alpha": Data("first".utf8), "beta": Data("second".utf8), "gamma": Data(), "delta": Data(count: 300),
    ]

    func populated(_ fixture: TestKeychain, cipher: (any Ciphering)?) throws -> KeychainStorage {
        let store = try fixture.create("s", cipher: cipher)
        for (key, value) in Self.values.sorted(by: { $0.key < $1.key }) { try store.put(data: value, for: key) }
        return store
    }

    func expectValues(_ store: KeychainStorage) throws {
        #expect(try store.keys() == Set(Self.values.keys))
        for (key, value) in Self.values { #expect(try store.data(for: key) == value, "\(key)") }
    }

    @Test(
        "every value is re-encrypted: the new cipher opens the store and the old one no longer does",
        arguments: KeychainBackend.allCases)
    func changeReencrypts(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let old = try testCipher("old")
        let new = try testCipher("new")
        let store = try populated(fixture, cipher: old)

        try store.changeCipher(to: new)
        try expectValues(store)
        try expectValues(try fixture.open("s", cipher: new))
        #expect(storageErrorCode { try fixture.open("s", cipher: old) } == .wrongCipher)
        // Every stored ciphertext now opens with the new cipher only.
        for row in try fixture.handle.find(ItemQuery(class: .genericPassword), includeData: true) {
            let data = try #require(row.data)
            #expect(throws: KeychainStorageError.self) { try old.decrypt(data) }
            _ = try new.decrypt(data)
        }
        // The old generation is gone: one marker plus one item per key.
        #expect(try fixture.itemCount() == Self.values.count + 1)
        try store.put(data: Data("later".utf8), for: "epsilon")
        #expect(try fixture.open("s", cipher: new).data(for: "epsilon") == Data("later".utf8))
    }

    @Test("a cipher can be added to a plain store and removed from an encrypted one")
    func toAndFromNoCipher() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try populated(fixture, cipher: nil)
        try store.changeCipher(to: try testCipher())
        try expectValues(try fixture.open("s", cipher: try testCipher()))
        #expect(storageErrorCode { try fixture.open("s", cipher: nil) } == .wrongCipher)

        try store.changeCipher(to: nil)
        try expectValues(try fixture.open("s", cipher: nil))
        let stored = try fixture.handle.find(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("alpha")]), includeData: true)
        #expect(stored.first?.data == Data("first".utf8))
    }

    @Test("a cipher that fails midway leaves every value readable with the old cipher", arguments: [0, 1, 2, 3, 4])
    func failingCipherChangesNothing(failAfter: Int) throws {
        let fixture = try KeychainBackend.memory.make()
        let old = try testCipher("old")
        let store = try populated(fixture, cipher: old)
        let itemsBefore = try fixture.itemCount()
        let failing = FlakyCipher(try testCipher("new"), failAfter: failAfter)

        let error = storageError { try store.changeCipher(to: failing) }
        #expect(error?.code == .encryptionFailed)
        try expectValues(store)
        try expectValues(try fixture.open("s", cipher: old))
        #expect(storageErrorCode { try fixture.open("s", cipher: try testCipher("new")) } == .wrongCipher)
        #expect(try fixture.itemCount() == itemsBefore)
    }

    @Test(
        "a keychain failure midway leaves every value readable with the old cipher",
        arguments: KeychainBackend.inProcess)
    func keychainFailureChangesNothing(backend: KeychainBackend) throws {
        // Values of 250 bytes fit as given (limit 256) but not once encrypted (+29 bytes), so
        // the keychain refuses the re-encrypted write of the large value after others landed.
        let fixture = try backend.make(maximumDataSize: 256)
        let store = try fixture.create("s", cipher: nil)
        let values = ["a": Data("small".utf8), "b": Data("small too".utf8), "c": Data(count: 250), "d": Data("x".utf8)]
        for key in values.keys.sorted() { try store.put(data: values[key]!, for: key) }
        let itemsBefore = try fixture.itemCount()

        let error = storageError { try store.changeCipher(to: try testCipher()) }
        #expect(error?.code == .keychain)
        #expect(error?.osStatus == -50)

        for reader in [store, try fixture.open("s", cipher: nil)] {
            #expect(try reader.keys() == Set(values.keys))
            for (key, value) in values { #expect(try reader.data(for: key) == value) }
        }
        #expect(try fixture.itemCount() == itemsBefore)
        // The store still works, and a later change with a cipher that fits succeeds.
        try store.removeData(for: "c")
        try store.changeCipher(to: try testCipher())
        #expect(try fixture.open("s", cipher: try testCipher()).keys() == ["a", "b", "d"])
    }

    @Test("a value that does not decrypt with the old cipher stops the change before anything is written")
    func undecryptableValueChangesNothing() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try populated(fixture, cipher: try testCipher())
        let query = ItemQuery(class: .genericPassword, attributes: [.account: .string("beta")])
        try fixture.handle.update(query, attributes: [:], data: Data("not ciphertext at all, sorry".utf8))
        let itemsBefore = try fixture.itemCount()

        #expect(storageErrorCode { try store.changeCipher(to: try testCipher("new")) } == .decryptionFailed)
        #expect(try store.data(for: "alpha") == Data("first".utf8))
        #expect(try fixture.itemCount() == itemsBefore)
    }

    @Test("another open instance learns of the change instead of reading stale values")
    func otherInstancesSeeTheChange() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try populated(fixture, cipher: try testCipher("old"))
        let other = try fixture.open("s", cipher: try testCipher("old"))

        try store.changeCipher(to: try testCipher("new"))
        let error = storageError { try other.data(for: "alpha") }
        #expect(error?.code == .cipherChanged)
        #expect(storageErrorCode { try other.put(data: Data(), for: "alpha") } == .cipherChanged)
        #expect(try store.data(for: "alpha") == Data("first".utf8))
    }

    @Test("changing the cipher of an empty store works")
    func emptyStore() throws {
        let fixture = try KeychainBackend.memory.make()
        let store = try fixture.create("s", cipher: nil)
        try store.changeCipher(to: try testCipher())
        #expect(try store.keys().isEmpty)
        _ = try fixture.open("s", cipher: try testCipher())
    }
}
