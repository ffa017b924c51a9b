import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

@testable import Keychain

@Suite("Locked keychain")
struct LockedStateTests {
    @Test("while locked, every operation on when-unlocked items throws errSecInteractionNotAllowed")
    func lockedOperationsThrow() throws {
        let memory = try InMemoryKeychain()
        let keychain = memory.keychain(service: "svc")
        try keychain.set("secret", forKey: "token")
        memory.lock()
        #expect(memory.isLocked)

        let operations: [(String, () throws -> Void)] = [
            ("string", { _ = try keychain.string(forKey: "token") }),
            ("data", { _ = try keychain.data(forKey: "token") }),
            ("contains", { _ = try keychain.contains("token") }),
            ("allKeys", { _ = try keychain.allKeys() }),
            ("allItems", { _ = try keychain.allItems() }),
            ("set", { try keychain.set("other", forKey: "token") }),
            ("set new", { try keychain.set("other", forKey: "new") }),
            ("remove", { try keychain.remove("token") }),
            ("removeAll", { try keychain.removeAll() }),
        ]
        for (name, operation) in operations {
            do {
                try operation()
                Issue.record("\(name) did not throw while locked")
            } catch let error as KeychainError {
                #expect(error.code == .interactionNotAllowed, "\(name)")
                #expect(error.osStatus == -25308, "\(name)")
            }
        }
        try memory.unlock()
        #expect(!memory.isLocked)
        #expect(try keychain.string(forKey: "token") == "secret")
        #expect(try keychain.allKeys() == ["token"])
    }

    @Test(
        "items readable after first unlock or always stay readable while locked",
        arguments: [
            Accessibility.afterFirstUnlock, .always, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
        ])
    func backgroundItemsStayReadable(accessibility: Accessibility) throws {
        let memory = try InMemoryKeychain()
        let keychain = memory.keychain(service: "svc").accessibility(accessibility)
        try keychain.set("secret", forKey: "token")
        memory.lock()
        #expect(try keychain.string(forKey: "token") == "secret")
        try keychain.set("new", forKey: "token")
        #expect(try keychain.string(forKey: "token") == "new")
    }

    @Test("a locked read is an error, never nil", arguments: KeychainBackend.allCases)
    func lockedReadIsNotNil(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain()
        try keychain.set("secret", forKey: "token")
        fixture.handle.lock()
        #expect(throws: KeychainError.self) { try keychain.string(forKey: "token") }
        try fixture.handle.unlock(password: nil)
    }

    @Test("a subscript that cannot read stops the program instead of returning nil")
    func subscriptStopsOnLockedRead() async {
        await #expect(processExitsWith: .failure) {
            let memory = try InMemoryKeychain()
            let keychain = memory.keychain(service: "svc")
            try keychain.set("secret", forKey: "token")
            memory.lock()
            _ = keychain["token"]
        }
    }

    @Test("a subscript that cannot write stops the program instead of ignoring the error")
    func subscriptStopsOnLockedWrite() async {
        await #expect(processExitsWith: .failure) {
            let memory = try InMemoryKeychain()
            let keychain = memory.keychain(service: "svc")
            memory.lock()
            keychain["token"] = "value"
        }
    }
}
