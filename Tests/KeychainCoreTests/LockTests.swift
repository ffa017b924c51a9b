import Foundation
import GRDB
import KeychainCore
import Testing

private func item(_ account: String, _ accessibility: Accessibility) -> Item {
    Item(
        class: .genericPassword,
        attributes: [.account: .string(account), .accessible: .string(accessibility.rawValue)],
        data: Data("secret-\(account)".utf8))
}

private func read(_ keychain: KeychainDatabase, _ account: String) throws -> Data? {
    try keychain.findFirst(
        ItemQuery(class: .genericPassword, attributes: [.account: .string(account)]), includeData: true)?.data
}

@Suite("Lock, unlock and passwords")
struct LockTests {
    @Test("a password keychain starts locked and a wrong password unlocks nothing", arguments: Backend.allCases)
    func wrongPasswordUnlocksNothing(backend: Backend) throws {
        let (keychain, owner) = try backend.make(password: "right")
        defer { withExtendedLifetime(owner) {} }
        #expect(keychain.isLocked)
        #expect(keychain.hasPassword)
        #expect(errorCode { try keychain.add(item("a", .whenUnlocked)) } == .interactionNotAllowed)
        for wrong in ["wrong", "", "Right", "right "] {
            #expect(errorCode { try keychain.unlock(password: wrong) } == .authFailed)
        }
        #expect(errorCode { try keychain.unlock(password: nil) } == .authFailed)
        #expect(keychain.isLocked)
        #expect(errorCode { try keychain.add(item("a", .whenUnlocked)) } == .interactionNotAllowed)
        try keychain.unlock(password: "right")
        #expect(!keychain.isLocked)
        try keychain.add(item("a", .whenUnlocked))
        #expect(try read(keychain, "a") == Data("secret-a".utf8))
    }

    /// When each accessibility class is readable, as on iOS (Apple's `kc_parse_keyclass`,
    /// `keychain/securityd/SecDbKeychainItem.m`), on Linux: (accessibility, never unlocked,
    /// unlocked, relocked).
    static let matrix: [(Accessibility, Bool, Bool, Bool)] = [
        (.whenUnlocked, false, true, false),
        (.whenUnlockedThisDeviceOnly, false, true, false),
        (.whenPasscodeSetThisDeviceOnly, false, true, false),
        (.afterFirstUnlock, false, true, true),
        (.afterFirstUnlockThisDeviceOnly, false, true, true),
        (.always, true, true, true),
        (.alwaysThisDeviceOnly, true, true, true),
    ]

    @Test("each accessibility class is readable exactly when §6 says", arguments: 0..<7)
    func accessibilityMatrix(row: Int) throws {
        let (accessibility, neverUnlocked, unlocked, relocked) = Self.matrix[row]
        let temporary = try TemporaryKeychain(password: "pw")
        let keychain = temporary.keychain
        try keychain.unlock(password: "pw")
        try keychain.add(item("x", accessibility))
        // A second handle on the same file has never been unlocked.
        let fresh = try KeychainDatabase.open(at: temporary.path, configuration: keychain.configuration)
        func readable(_ handle: KeychainDatabase) -> Bool {
            (try? read(handle, "x")) == Data("secret-x".utf8)
        }
        #expect(readable(fresh) == neverUnlocked)
        if !neverUnlocked {
            #expect(errorCode { _ = try read(fresh, "x") } == .interactionNotAllowed)
            // Attribute-only queries fail too: the attributes are sealed under the class key.
            #expect(errorCode { _ = try fresh.find(ItemQuery(class: .genericPassword)) } == .interactionNotAllowed)
        }
        try fresh.unlock(password: "pw")
        #expect(readable(fresh) == unlocked)
        fresh.lock()
        #expect(readable(fresh) == relocked)
        #expect(errorCode { try fresh.add(item("y", accessibility)) } == (relocked ? nil : .interactionNotAllowed))
    }

    @Test("a passcode-bound item needs a password keychain")
    func passcodeItemNeedsPassword() throws {
        let keychain = try KeychainDatabase.inMemory()
        #expect(errorCode { try keychain.add(item("p", .whenPasscodeSetThisDeviceOnly)) } == .authFailed)
    }

    @Test("changing the password keeps every item readable and retires the old one", arguments: Backend.allCases)
    func changePassword(backend: Backend) throws {
        let (keychain, owner) = try backend.make(password: "old")
        defer { withExtendedLifetime(owner) {} }
        try keychain.unlock(password: "old")
        for (index, accessibility) in Accessibility.all.enumerated() {
            try keychain.add(item("item\(index)", accessibility))
        }
        #expect(errorCode { try keychain.changePassword(old: "bad", new: "new") } == .authFailed)
        try keychain.changePassword(old: "old", new: "new")
        keychain.lock()
        #expect(errorCode { try keychain.unlock(password: "old") } == .authFailed)
        try keychain.unlock(password: "new")
        for index in Accessibility.all.indices {
            #expect(try read(keychain, "item\(index)") == Data("secret-item\(index)".utf8))
        }
        if let path = keychain.path {
            let reopened = try KeychainDatabase.open(at: path, configuration: keychain.configuration)
            #expect(errorCode { try reopened.unlock(password: "old") } == .authFailed)
            try reopened.unlock(password: "new")
            #expect(try reopened.find(ItemQuery(class: .genericPassword)).count == Accessibility.all.count)
        }
    }

    @Test("a password can be set on a password-less keychain")
    func setPasswordOnPasswordless() throws {
        let temporary = try TemporaryKeychain()
        try temporary.keychain.add(item("a", .whenUnlocked))
        try temporary.keychain.changePassword(old: nil, new: "pw")
        let reopened = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        #expect(reopened.isLocked)
        #expect(errorCode { _ = try read(reopened, "a") } == .interactionNotAllowed)
        try reopened.unlock(password: "pw")
        #expect(try read(reopened, "a") == Data("secret-a".utf8))
    }

    @Test("this-device-only items need the device key; the others move with the file and password")
    func thisDeviceOnlyNeedsDeviceKey() throws {
        let scratch = try Scratch()
        let path = scratch.file("moved.keychain-db")
        let here = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 1, count: 32)))
        let keychain = try KeychainDatabase.create(at: path, password: "pw", configuration: here)
        try keychain.unlock(password: "pw")
        for (index, accessibility) in Accessibility.all.enumerated() {
            try keychain.add(item("item\(index)", accessibility))
        }
        let elsewhere = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 2, count: 32)))
        let moved = try KeychainDatabase.open(at: path, configuration: elsewhere)
        try moved.unlock(password: "pw")
        for (index, accessibility) in Accessibility.all.enumerated() {
            let result = Result { try read(moved, "item\(index)") }
            if accessibility.isThisDeviceOnly {
                #expect(throws: KeychainError.self, "\(accessibility)") { try result.get() }
            } else {
                #expect(try result.get() == Data("secret-item\(index)".utf8), "\(accessibility)")
            }
        }
    }

    @Test("a password-less keychain opens with its device key only")
    func passwordlessNeedsDeviceKey() throws {
        let scratch = try Scratch()
        let path = scratch.file("a.keychain-db")
        let keychain = try KeychainDatabase.create(
            at: path, password: nil, configuration: .testing(deviceKey: .fixed(Data(repeating: 1, count: 32))))
        try keychain.add(item("a", .whenUnlocked))
        #expect(
            errorCode {
                _ = try KeychainDatabase.open(
                    at: path, configuration: .testing(deviceKey: .fixed(Data(repeating: 2, count: 32))))
            } == .authFailed)
    }

    @Test("key-derivation parameters edited in the file are refused")
    func editedKeyDerivationIsRefused() throws {
        let temporary = try TemporaryKeychain(password: "pw")
        try temporary.keychain.unlock(password: "pw")
        try temporary.keychain.add(item("a", .whenUnlocked))
        let queue = try GRDBTestAccess.queue(temporary.path)
        // Lower the cost from 2^10 to 2^9: the wrapped keys no longer authenticate.
        func setCost(_ logN: UInt8) throws {
            try queue.write { db in
                var value = try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'kdf'")!
                value[value.startIndex + 1] = logN
                try db.execute(sql: "UPDATE meta SET value = ? WHERE name = 'kdf'", arguments: [value])
            }
        }
        try setCost(9)
        // The device key vouches for the parameters: the edit is refused when the file is opened,
        // before any password is derived.
        #expect(
            errorCode {
                _ = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
            }
                == .decode)
        // On another device the seal cannot be checked; the password wrappings still refuse.
        var elsewhere = temporary.keychain.configuration
        elsewhere.deviceKey = .fixed(Data(repeating: 9, count: 32))
        let moved = try KeychainDatabase.open(at: temporary.path, configuration: elsewhere)
        #expect(errorCode { try moved.unlock(password: "pw") } == .authFailed)
        // An absurd cost (2^40) is refused before anything is derived or allocated.
        try setCost(40)
        let absurd = KeyDerivation.countingDerivations {
            errorCode {
                let keychain = try KeychainDatabase.open(
                    at: temporary.path, configuration: temporary.keychain.configuration)
                try keychain.unlock(password: "pw")
            }
        }
        #expect(absurd.result == .invalidKeychain)
        #expect(absurd.derivations == 0)
    }

    @Test("weak key derivation is refused unless explicitly allowed for tests")
    func weakKeyDerivationNeedsOptIn() throws {
        var configuration = KeychainConfiguration.testing()
        configuration.allowsUnsafeKeyDerivation = false
        #expect(
            errorCode { _ = try KeychainDatabase.inMemory(password: "pw", configuration: configuration) }
                == .invalidKeychain)
        let temporary = try TemporaryKeychain(password: "pw")
        #expect(
            errorCode { _ = try KeychainDatabase.open(at: temporary.path, configuration: configuration) }
                == .invalidKeychain)
    }
}
