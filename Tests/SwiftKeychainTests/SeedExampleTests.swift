// The code examples of seed 004 (SwiftKeychain), compiled as written in Swift 5 mode.
// The two versions of `InstagramAccount` live in two namespaces; the statements of the
// "Save", "Remove" and "Fetch" examples run inside tests, with an in-memory keychain
// standing in for the default one.

import Foundation
import KeychainCore
import SwiftKeychain
import Testing

enum SeedAbstract {
    struct InstagramAccount: KeychainGenericPasswordType {
        let accountName: String
        let token: String
        var data = KeychainData()

        var dataToStore: KeychainData {
            return ["token": token]
        }

        var accessToken: String? {
            return data["token"] as? String
        }

        init(name: String, accessToken: String = "") {
            accountName = name
            token = accessToken
        }
    }
}

enum SeedClasses {
    struct InstagramAccount: KeychainGenericPasswordType {
        let accountName: String
        let token: String
        let tokenDate: NSDate
        var data = KeychainData()

        var dataToStore: KeychainData {
            return [
                "token": token,
                "tokenDate": tokenDate,
            ]
        }

        var storedClasses: [AnyClass] {
            return [NSDate.self]
        }

        var accessToken: String? {
            return data["token"] as? String
        }

        var accessTokenDate: NSDate? {
            return data["tokenDate"] as? NSDate
        }

        init(name: String, accessToken: String, accessTokenDate: NSDate) {
            accountName = name
            token = accessToken
            tokenDate = accessTokenDate
        }
    }
}

/// Captures what the examples print.
final class PrintLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func print(_ items: Any...) {
        lock.lock()
        defer { lock.unlock() }
        lines.append(items.map { "\($0)" }.joined(separator: " "))
    }
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }
}

@Suite("Seed 004 examples")
struct SeedExampleTests {
    let memory: InMemoryKeychainService
    let output = PrintLog()

    init() throws { memory = try InMemoryKeychainService() }

    func print(_ items: Any...) { output.print(items.map { "\($0)" }.joined(separator: " ")) }

    /// The "Save Item" example.
    func saveExample() {
        typealias InstagramAccount = SeedAbstract.InstagramAccount
        let newAccount = InstagramAccount(name: "John", accessToken: "123456")

        do {
            try newAccount.saveInKeychain()
        } catch {
            print(error)
        }
    }

    /// The "Fetch Item" example.
    func fetchExample() {
        typealias InstagramAccount = SeedAbstract.InstagramAccount
        var account = InstagramAccount(name: "John")

        do {
            try account.fetchFromKeychain()

            if let token = account.accessToken {
                print("name: \(account.accountName), token: \(token)")
            }
        } catch {
            print(error)
        }
    }

    /// The "Remove Item" example.
    func removeExample() {
        typealias InstagramAccount = SeedAbstract.InstagramAccount
        let account = InstagramAccount(name: "John")

        do {
            try account.removeFromKeychain()
        } catch {
            print(error)
        }
    }

    @Test("Save, Fetch and Remove behave as the README describes")
    func saveFetchRemove() throws {
        KeychainService.withDefaultDatabase(memory.database) {
            saveExample()
            fetchExample()
        }
        #expect(output.all == ["name: John, token: 123456"])
        #expect(try memory.itemCount() == 1)

        KeychainService.withDefaultDatabase(memory.database) {
            removeExample()
            fetchExample()
        }
        // As with the original library, fetching the removed item prints errSecItemNotFound.
        #expect(output.all.count == 2)
        #expect(output.all.first == "name: John, token: 123456")
        #expect(output.all.last?.contains("-25300") == true)
        #expect(try memory.itemCount() == 0)
    }

    @Test("removing or fetching an account that was never saved prints errSecItemNotFound")
    func missingItemPrintsItemNotFound() throws {
        KeychainService.withDefaultDatabase(memory.database) {
            removeExample()
            fetchExample()
        }
        #expect(output.all.count == 2)
        #expect(output.all.allSatisfy { $0.contains("-25300") })
        #expect(try memory.itemCount() == 0)
    }

    @Test("saving again replaces the existing item")
    func saveReplaces() throws {
        try KeychainService.withDefaultDatabase(memory.database) {
            saveExample()
            try SeedAbstract.InstagramAccount(name: "John", accessToken: "654321").saveInKeychain()
            fetchExample()
        }
        #expect(output.all == ["name: John, token: 654321"])
        #expect(try memory.itemCount() == 1)
    }

    @Test("a locked keychain makes the examples print an error carrying its OSStatus")
    func lockedKeychainPrintsError() throws {
        KeychainService.withDefaultDatabase(memory.database) { saveExample() }
        memory.lock()
        KeychainService.withDefaultDatabase(memory.database) { fetchExample() }
        #expect(output.all.count == 1)
        #expect(output.all.first?.contains("-25308") == true)
        #expect(output.all.first?.contains("123456") == false)
        try memory.unlock()
    }

    @Test("Support for classes: an NSDate listed in storedClasses is stored and fetched")
    func storedClasses() throws {
        let date = NSDate(timeIntervalSince1970: 1_700_000_000)
        let account = SeedClasses.InstagramAccount(name: "John", accessToken: "abc", accessTokenDate: date)
        try account.saveInKeychain(memory)

        var fetched = SeedClasses.InstagramAccount(name: "John", accessToken: "", accessTokenDate: NSDate())
        try fetched.fetchFromKeychain(memory)
        #expect(fetched.accessToken == "abc")
        #expect(fetched.accessTokenDate == date)
    }
}
