import Foundation
import Testing

@testable import KeychainCore

/// One keychain served to callers with different access groups, as the session agent serves
/// its clients: each sees and writes only its groups, and all share one lock state.
@Suite("Callers of one keychain")
struct CallerTests {
    /// A keychain opened with no group of its own, as the agent opens them.
    private func agentKeychain() throws -> KeychainDatabase {
        var configuration = KeychainConfiguration.testing()
        configuration.accessGroups = AccessGroups([])
        return try KeychainDatabase.inMemory(configuration: configuration)
    }

    @Test("each caller adds to its first group and sees only its groups")
    func groupsSeparateCallers() throws {
        let keychain = try agentKeychain()
        let app = keychain.acting(for: AccessGroups(["com.example.app", "com.example.shared"]))
        let other = keychain.acting(for: AccessGroups(["com.example.other"]))
        let stored = try app.add(genericPassword("alice", data: "app secret"))
        #expect(stored.attributes[.accessGroup] == .string("com.example.app"))
        _ = try other.add(genericPassword("alice", data: "other secret"))
        #expect(try app.find(query(), includeData: true).map(\.data) == [Data("app secret".utf8)])
        #expect(try other.find(query(), includeData: true).map(\.data) == [Data("other secret".utf8)])
        #expect(app.accessGroups.groups == ["com.example.app", "com.example.shared"])

        var shared = genericPassword("bob")
        shared.attributes[.accessGroup] = .string("com.example.shared")
        _ = try app.add(shared)
        var intruding = genericPassword("mallory")
        intruding.attributes[.accessGroup] = .string("com.example.app")
        let refused = #expect(throws: KeychainError.self) { try other.add(intruding) }
        #expect(refused?.code == .missingEntitlement)
        var targeted = query()
        targeted.attributes[.accessGroup] = .string("com.example.app")
        #expect((#expect(throws: KeychainError.self) { try other.find(targeted) })?.code == .missingEntitlement)
        #expect(try other.delete(query()) == 1, "deletes only its own item")
        #expect(try app.find(query()).count == 2)
        #expect(try app.update(query(), attributes: [.label: .string("x")]) == 2)
        #expect(try other.find(query()).isEmpty)
    }

    @Test("outside any caller, the agent's own handle has no group and can do nothing with items")
    func noCallerNoGroup() throws {
        let keychain = try agentKeychain()
        _ = try keychain.acting(for: AccessGroups(["g"])).add(genericPassword("a"))
        #expect((#expect(throws: KeychainError.self) { try keychain.find(query()) })?.code == .missingEntitlement)
        #expect(
            (#expect(throws: KeychainError.self) { try keychain.add(genericPassword("b")) })?.code
                == .missingEntitlement)
    }

    @Test("callers share the keychain's lock state")
    func sharedLockState() throws {
        var configuration = KeychainConfiguration.testing()
        configuration.accessGroups = AccessGroups([])
        let scratch = try Scratch()
        let path = scratch.file("callers.keychain-db")
        let keychain = try KeychainDatabase.create(at: path, password: Data("pw".utf8), configuration: configuration)
        let first = keychain.acting(for: AccessGroups(["a"]))
        let second = keychain.acting(for: AccessGroups(["b"]))
        #expect(first.isLocked && second.isLocked)
        try first.unlock(password: Data("pw".utf8))
        #expect(!second.isLocked)
        _ = try second.add(genericPassword("x", data: "secret"))
        second.lock()
        #expect(first.isLocked)
        #expect(
            (#expect(throws: KeychainError.self) { try second.find(query(), includeData: true) })?.code
                == .interactionNotAllowed)
    }
}
