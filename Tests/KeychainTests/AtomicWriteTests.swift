import Dispatch
import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

@testable import Keychain

@Suite("Atomic upsert")
struct AtomicWriteTests {
    @Test("a write is one engine upsert, never a delete followed by an add")
    func writeIsOneUpsert() throws {
        let spy = SpyStore(try .inMemory())
        let keychain = Keychain.spied(spy)
        try keychain.set("old", forKey: "token")
        try keychain.set("new", forKey: "token")
        try keychain.set(Credentials(user: "u", scopes: [], expires: .distantPast), forKey: "other")
        #expect(spy.calls == ["upsert", "upsert", "upsert"])
        #expect(try keychain.string(forKey: "token") == "new")
    }

    @Test(
        "a failed write throws the engine's error with its OSStatus, untouched",
        arguments: [
            KeychainError(.io, "disk full"), KeychainError(.interactionNotAllowed, "locked"),
            KeychainError(.init(rawValue: -99_999), "a status the package does not know"),
        ])
    func failedWriteThrowsStatus(failure: KeychainError) throws {
        let spy = SpyStore(try .inMemory())
        let keychain = Keychain.spied(spy)
        try keychain.set("old", forKey: "token")
        spy.failUpserts(with: [failure])
        do {
            try keychain.set("new", forKey: "token")
            Issue.record("the write did not fail")
        } catch let error as KeychainError {
            #expect(error.code == failure.code)
            #expect(error.osStatus == failure.code.rawValue)
        }
        #expect(try keychain.string(forKey: "token") == "old")
    }

    @Test("a write that fails inside the engine's transaction keeps the old value")
    func failureInsideTransactionKeepsOldValue() throws {
        // The existing item is readable while locked, the new accessibility is not: the
        // engine finds and opens the old row, then cannot seal the new one, and rolls back.
        let memory = try InMemoryKeychain()
        let background = memory.keychain(service: "svc").accessibility(.afterFirstUnlock)
        try background.set("old", forKey: "token")
        memory.lock()
        let error = keychainErrorCode {
            try background.accessibility(.whenUnlocked).set("new", forKey: "token")
        }
        #expect(error == .interactionNotAllowed)
        #expect(try background.string(forKey: "token") == "old")
        #expect(try background.attributes(forKey: "token")?.accessibility == .afterFirstUnlock)
    }

    @Test("a write rejected by the engine keeps the old value", arguments: KeychainBackend.inProcess)
    func oversizedWriteKeepsOldValue(backend: KeychainBackend) throws {
        let fixture = try backend.make(maximumDataSize: 64)
        let keychain = fixture.keychain()
        try keychain.set("old", forKey: "token")
        #expect(keychainErrorCode { try keychain.set(Data(count: 65), forKey: "token") } == .parameter)
        #expect(try keychain.string(forKey: "token") == "old")
    }

    @Test("a write while locked fails with errSecInteractionNotAllowed and keeps the old value")
    func lockedWriteKeepsOldValue() throws {
        let memory = try InMemoryKeychain()
        let keychain = memory.keychain(service: "svc")
        try keychain.set("old", forKey: "token")
        memory.lock()
        #expect(keychainErrorCode { try keychain.set("new", forKey: "token") } == .interactionNotAllowed)
        try memory.unlock()
        #expect(try keychain.string(forKey: "token") == "old")
    }

    @Test("concurrent writes from many threads all land", arguments: KeychainBackend.allCases)
    func concurrentWrites(backend: KeychainBackend) throws {
        let fixture = try backend.make()
        let keychain = fixture.keychain()
        let failures = FailureLog()
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            do {
                try keychain.set("value-\(index)", forKey: "key-\(index % 16)")
                try keychain.set("own-\(index)", forKey: "own-\(index)")
            } catch {
                failures.append("\(error)")
            }
        }
        #expect(failures.all.isEmpty)
        let keys = try Set(keychain.allKeys())
        #expect(keys.count == 16 + 64)
        for index in 0..<64 {
            #expect(try keychain.string(forKey: "own-\(index)") == "own-\(index)")
        }
        for slot in 0..<16 {
            let value = try #require(try keychain.string(forKey: "key-\(slot)"))
            let writer = try #require(Int(value.dropFirst("value-".count)))
            #expect(writer % 16 == slot)
        }
    }
}

/// A thread-safe list of failure descriptions.
final class FailureLog: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

import Synchronization
