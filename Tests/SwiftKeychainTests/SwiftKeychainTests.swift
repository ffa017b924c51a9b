import Foundation
import KeychainClient
import KeychainCore
import KeychainTestSupport
import SwiftKeychain
import Testing

/// An item with configurable identity and contents.
struct Note: KeychainGenericPasswordType {
    var accountName: String
    var serviceName: String = "notes"
    var accessMode: String = "ak"
    var accessGroup: String?
    var contents: KeychainData = [:]
    var classes: [AnyClass] = []
    var data = KeychainData()

    var dataToStore: KeychainData { contents }
    var storedClasses: [AnyClass] { classes }
}

/// A service that records the dictionaries it receives.
final class RecordingService: KeychainServiceType {
    var inserted: [KeychainAttributes] = []
    var removed: [KeychainAttributes] = []
    var fetched: [KeychainAttributes] = []
    var answer: KeychainItem?

    func insertItemWithAttributes(_ attributes: KeychainAttributes) throws { inserted.append(attributes) }
    func removeItemWithAttributes(_ attributes: KeychainAttributes) throws { removed.append(attributes) }
    func fetchItemWithAttributes(_ attributes: KeychainAttributes) throws -> KeychainItem? {
        fetched.append(attributes)
        return answer
    }
}

func swiftKeychainError(_ body: () throws -> Void) -> SwiftKeychainError? {
    do {
        try body()
        return nil
    } catch let error as SwiftKeychainError {
        return error
    } catch {
        Issue.record("expected a SwiftKeychainError, got \(error)")
        return nil
    }
}

@Suite("Protocol defaults")
struct ProtocolDefaultTests {
    struct Plain: KeychainGenericPasswordType {
        var accountName = "acct"
        var data = KeychainData()
        var dataToStore: KeychainData { ["k": "v"] }
    }

    @Test("a generic password defaults to the swift.keychain.service service, when-unlocked and no group")
    func defaults() {
        let item = Plain()
        #expect(item.serviceName == "swift.keychain.service")
        #expect(item.accessMode == "ak")
        #expect(item.accessGroup == nil)
        #expect(item.storedClasses.isEmpty)
        #expect(item.attributes["class"] as? String == "genp")
        #expect(item.attributes["svce"] as? String == "swift.keychain.service")
        #expect(item.attributes["acct"] as? String == "acct")
        #expect(item.attributes["pdmn"] as? String == "ak")
    }

    @Test("the item methods hand Apple-keyed dictionaries to the service")
    func dictionariesPassedToService() throws {
        let service = RecordingService()
        var note = Note(accountName: "a", accessGroup: "group.x", contents: ["k": "v"])
        try note.saveInKeychain(service)
        try note.removeFromKeychain(service)
        try note.fetchFromKeychain(service)

        let inserted = try #require(service.inserted.first)
        #expect(inserted["class"] as? String == "genp")
        #expect(inserted["svce"] as? String == "notes")
        #expect(inserted["acct"] as? String == "a")
        #expect(inserted["agrp"] as? String == "group.x")
        #expect(inserted["v_Data"] is Data)
        #expect(service.removed.first?["v_Data"] == nil)
        #expect(service.removed.first?["agrp"] as? String == "group.x")
        #expect(service.fetched.first?["r_Data"] as? Bool == true)
        #expect(service.fetched.first?["r_Attributes"] as? Bool == true)
        #expect(note.data.isEmpty)
    }
}

@Suite("KeychainService")
struct KeychainServiceTests {
    /// The service over a keychain of `backend`: in memory (the module's own
    /// `InMemoryKeychainService`), in a file, or in a file kept by the test process's
    /// `keychaind`, which the service finds as the task's default keychain (`Keychains.withDefault`).
    func service(_ backend: KeychainBackend) throws -> (KeychainServiceType, any KeychainHandle, AnyObject?) {
        switch backend {
        case .memory:
            let memory = try InMemoryKeychainService()
            return (memory, memory.database, memory)
        case .file:
            let keychain = try backend.make()
            return (KeychainService(database: keychain.handle), keychain.handle, keychain)
        case .agent:
            let keychain = try backend.make()
            return (Keychains.withDefault(keychain.handle) { KeychainService() }, keychain.handle, keychain)
        }
    }

    @Test("values of every property-list type round-trip", arguments: KeychainBackend.allCases)
    func roundTrip(backend: KeychainBackend) throws {
        let (service, _, owner) = try service(backend)
        defer { withExtendedLifetime(owner) {} }
        let contents: KeychainData = [
            "string": "text", "int": 42, "double": 2.5, "bool": true, "data": Data([1, 2, 3]),
            "array": ["a", "b"], "nested": ["inner": 7],
        ]
        try Note(accountName: "n", contents: contents).saveInKeychain(service)
        var fetched = Note(accountName: "n")
        try fetched.fetchFromKeychain(service)
        #expect(fetched.data["string"] as? String == "text")
        #expect(fetched.data["int"] as? Int == 42)
        #expect(fetched.data["double"] as? Double == 2.5)
        #expect(fetched.data["bool"] as? Bool == true)
        #expect(fetched.data["data"] as? Data == Data([1, 2, 3]))
        #expect(fetched.data["array"] as? [String] == ["a", "b"])
        #expect((fetched.data["nested"] as? [String: Any])?["inner"] as? Int == 7)
    }

    @Test(
        "fetching a missing item throws errSecItemNotFound, as the original does, and keeps data",
        arguments: KeychainBackend.allCases)
    func fetchMissingThrowsItemNotFound(backend: KeychainBackend) throws {
        let (service, _, owner) = try service(backend)
        defer { withExtendedLifetime(owner) {} }
        var note = Note(accountName: "missing")
        note.data = ["previous": "value"]
        let error = swiftKeychainError { try note.fetchFromKeychain(service) }
        #expect(error?.osStatus == -25300)
        #expect(error?.osStatus == SwiftKeychainError.itemNotFoundStatus)
        #expect((error as NSError?)?.domain == "swift.keychain.error")
        #expect((error as NSError?)?.code == -25300)
        #expect(note.data["previous"] as? String == "value")
        #expect(swiftKeychainError { _ = try service.fetchItemWithAttributes(note.attributes) }?.osStatus == -25300)
    }

    @Test(
        "removing a missing item throws errSecItemNotFound, as the original does", arguments: KeychainBackend.allCases)
    func removeMissingThrowsItemNotFound(backend: KeychainBackend) throws {
        let (service, _, owner) = try service(backend)
        defer { withExtendedLifetime(owner) {} }
        #expect(swiftKeychainError { try Note(accountName: "missing").removeFromKeychain(service) }?.osStatus == -25300)
        #expect(
            swiftKeychainError { try service.removeItemWithAttributes(Note(accountName: "x").attributes) }?.osStatus
                == -25300)
    }

    @Test("a removed item is gone: fetching it, or removing it again, throws errSecItemNotFound")
    func fetchAfterRemove() throws {
        let memory = try InMemoryKeychainService()
        try Note(accountName: "a", contents: ["k": 1]).saveInKeychain(memory)
        try Note(accountName: "a").removeFromKeychain(memory)
        var note = Note(accountName: "a")
        #expect(swiftKeychainError { try note.fetchFromKeychain(memory) }?.osStatus == -25300)
        #expect(note.data.isEmpty)
        #expect(swiftKeychainError { try Note(accountName: "a").removeFromKeychain(memory) }?.osStatus == -25300)
    }

    @Test("a custom service that answers nil leaves the item's data unchanged")
    func customServiceNil() throws {
        let service = RecordingService()
        var note = Note(accountName: "a")
        note.data = ["previous": "value"]
        try note.fetchFromKeychain(service)
        #expect(note.data["previous"] as? String == "value")
    }

    @Test("removing an item removes only it")
    func remove() throws {
        let memory = try InMemoryKeychainService()
        try Note(accountName: "a", contents: ["k": 1]).saveInKeychain(memory)
        try Note(accountName: "b", contents: ["k": 2]).saveInKeychain(memory)
        try Note(accountName: "a").removeFromKeychain(memory)
        #expect(try memory.itemCount() == 1)
        var b = Note(accountName: "b")
        try b.fetchFromKeychain(memory)
        #expect(b.data["k"] as? Int == 2)
    }

    @Test("saving replaces atomically: a failed save keeps the old item")
    func failedSaveKeepsOldItem() throws {
        let memory = try InMemoryKeychainService()
        try Note(accountName: "n", contents: ["v": "old"]).saveInKeychain(memory)
        memory.lock()
        let error = swiftKeychainError { try Note(accountName: "n", contents: ["v": "new"]).saveInKeychain(memory) }
        #expect(error?.osStatus == -25308)
        try memory.unlock()
        var note = Note(accountName: "n")
        try note.fetchFromKeychain(memory)
        #expect(note.data["v"] as? String == "old")
    }

    @Test("saving with a new access mode updates the stored accessibility")
    func accessModeIsApplied() throws {
        let memory = try InMemoryKeychainService()
        try Note(accountName: "n", contents: ["v": 1]).saveInKeychain(memory)
        try Note(accountName: "n", accessMode: "ck", contents: ["v": 2]).saveInKeychain(memory)
        let items = try memory.database.find(ItemQuery(class: .genericPassword))
        #expect(items.count == 1)
        #expect(items.first?.accessibility == .afterFirstUnlock)
    }

    @Test("an access group stores the item there, and an unknown group is refused with its OSStatus")
    func accessGroups() throws {
        let memory = try InMemoryKeychainService(accessGroups: AccessGroups(["app", "shared"]))
        try Note(accountName: "n", accessGroup: "shared", contents: ["v": 1]).saveInKeychain(memory)
        #expect(try memory.database.find(ItemQuery(class: .genericPassword)).first?.accessGroup == "shared")
        let error = swiftKeychainError {
            try Note(accountName: "n", accessGroup: "foreign", contents: ["v": 1]).saveInKeychain(memory)
        }
        #expect(error?.osStatus == -34018)
    }

    @Test("a locked keychain makes fetch throw errSecInteractionNotAllowed, as an NSError too")
    func lockedFetchThrows() throws {
        let memory = try InMemoryKeychainService()
        try Note(accountName: "n", contents: ["token": "hunter2"]).saveInKeychain(memory)
        memory.lock()
        var note = Note(accountName: "n")
        let error = try #require(swiftKeychainError { try note.fetchFromKeychain(memory) })
        #expect(error.osStatus == -25308)
        let nsError = error as NSError
        #expect(nsError.domain == "swift.keychain.error")
        #expect(nsError.code == -25308)
        #expect(!String(describing: error).contains("hunter2"))
        #expect(throws: SwiftKeychainError.self) { try memory.itemCount() }
        try memory.unlock()
    }

    @Test("a class missing from storedClasses is refused on save, not a crash")
    func unlistedClassRefusedOnSave() throws {
        let memory = try InMemoryKeychainService()
        for value: Any in [NSDate(), Date(), URL(string: "https://example.com")!, NSObject()] {
            let note = Note(accountName: "n", contents: ["v": value as! any Sendable])
            let error = swiftKeychainError { try note.saveInKeychain(memory) }
            #expect(error?.osStatus == -50, "\(type(of: value))")
        }
        #expect(try memory.itemCount() == 0)
        try Note(accountName: "n", contents: ["v": Date(timeIntervalSince1970: 9)], classes: [NSDate.self])
            .saveInKeychain(memory)
    }

    @Test("stored data holding a class the fetching type does not list is an error, not a crash")
    func unlistedClassRefusedOnFetch() throws {
        let memory = try InMemoryKeychainService()
        try Note(accountName: "n", contents: ["date": NSDate()], classes: [NSDate.self]).saveInKeychain(memory)
        var withoutClasses = Note(accountName: "n")
        let error = swiftKeychainError { try withoutClasses.fetchFromKeychain(memory) }
        #expect(error?.osStatus == -26275)
        var withClasses = Note(accountName: "n", classes: [NSDate.self])
        try withClasses.fetchFromKeychain(memory)
        #expect(withClasses.data["date"] is NSDate)
    }

    @Test("stored bytes that are not an archive are an error")
    func corruptArchive() throws {
        let memory = try InMemoryKeychainService()
        try memory.insertItemWithAttributes([
            "class": "genp", "svce": "notes", "acct": "n", "v_Data": Data("not an archive".utf8),
        ])
        var note = Note(accountName: "n")
        #expect(swiftKeychainError { try note.fetchFromKeychain(memory) }?.osStatus == -26275)
    }

    @Test("the service reads and writes raw dictionaries with Apple's keys")
    func rawDictionaries() throws {
        let memory = try InMemoryKeychainService()
        try memory.insertItemWithAttributes([
            "class": "inet", "srvr": "example.com", "acct": "alice", "ptcl": "htps", "port": 443,
            "v_Data": Data("pw".utf8), "labl": "Example",
        ])
        let item = try #require(
            try memory.fetchItemWithAttributes([
                "class": "inet", "srvr": "example.com", "acct": "alice", "r_Data": true,
            ]))
        #expect(item["class"] as? String == "inet")
        #expect(item["v_Data"] as? Data == Data("pw".utf8))
        #expect(item["labl"] as? String == "Example")
        #expect(item["port"] as? Int == 443)
        let withoutData = try #require(try memory.fetchItemWithAttributes(["class": "inet", "acct": "alice"]))
        #expect(withoutData["v_Data"] == nil)
        #expect(swiftKeychainError { try memory.insertItemWithAttributes(["svce": "x"]) }?.osStatus == -50)
        #expect(swiftKeychainError { try memory.insertItemWithAttributes(["class": "nope"]) }?.osStatus == -25306)
    }

    @Test("saves from many threads all land", arguments: KeychainBackend.allCases)
    func concurrentSaves(backend: KeychainBackend) throws {
        let (service, database, owner) = try service(backend)
        defer { withExtendedLifetime(owner) {} }
        DispatchQueue.concurrentPerform(iterations: 32) { index in
            do {
                try Note(accountName: "n\(index % 8)", contents: ["i": index]).saveInKeychain(service)
                try Note(accountName: "own\(index)", contents: ["i": index]).saveInKeychain(service)
            } catch {
                Issue.record("save failed: \(error)")
            }
        }
        #expect(try database.find(ItemQuery(class: .genericPassword)).count == 8 + 32)
    }

    @Test("KeychainService() created under withDefaultDatabase uses that database", arguments: KeychainBackend.allCases)
    func defaultOverride(backend: KeychainBackend) throws {
        let (_, database, owner) = try service(backend)
        defer { withExtendedLifetime(owner) {} }
        try KeychainService.withDefaultDatabase(database) {
            try Note(accountName: "routed", contents: ["v": 1]).saveInKeychain()
        }
        #expect(try database.find(ItemQuery(class: .genericPassword)).count == 1)
    }
}
