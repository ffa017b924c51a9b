import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

@testable import Keychain

@Suite("Async variants")
struct AsyncTests {
    @Test(
        "the async variants read, write, list and remove like the synchronous ones", arguments: KeychainBackend.allCases
    )
    func asyncRoundTrip(backend: KeychainBackend) async throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain("async")
        let credentials = Credentials(user: "a", scopes: ["x"], expires: Date(timeIntervalSince1970: 5))
        try await keychain.set("s", forKey: "string")
        try await keychain.set(Data([1]), forKey: "data")
        try await keychain.set(credentials, forKey: "codable")

        #expect(try await keychain.string(forKey: "string") == "s")
        #expect(try await keychain.data(forKey: "data") == Data([1]))
        #expect(try await keychain.value(Credentials.self, forKey: "codable") == credentials)
        #expect(try await keychain.contains("string"))
        #expect(try await keychain.allKeys() == ["string", "data", "codable"])
        #expect(try await keychain.allItems().count == 3)
        #expect(try await keychain.remove("string"))
        #expect(try await keychain.string(forKey: "string") == nil)
        #expect(try await keychain.removeAll())
        #expect(try await keychain.allKeys().isEmpty)
    }

    @Test("async errors carry their OSStatus", arguments: KeychainBackend.allCases)
    func asyncErrors(backend: KeychainBackend) async throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain("async")
        try await keychain.set("s", forKey: "k")
        fixture.handle.lock()
        await #expect(throws: KeychainError.self) { try await keychain.string(forKey: "k") }
        do {
            _ = try await keychain.string(forKey: "k")
            Issue.record("no error")
        } catch let error as KeychainError {
            #expect(error.osStatus == -25308)
        }
    }

    @Test("many concurrent tasks write without losing a value", arguments: KeychainBackend.allCases)
    func concurrentTasks(backend: KeychainBackend) async throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain("async")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<32 {
                group.addTask { try await keychain.set("v\(index)", forKey: "k\(index)") }
            }
            try await group.waitForAll()
        }
        #expect(try await keychain.allKeys().count == 32)
    }

    @Test("a task cancelled before the call starts throws CancellationError")
    func cancellation() async throws {
        let memory = try InMemoryKeychain()
        let keychain = memory.keychain(service: "async")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await keychain.string(forKey: "k")
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
