// The code examples of seed 003 (KeychainStorage), compiled as written with only their
// placeholders filled in. `logger` is a swift-log `Logger` whose lines the tests read.

import Foundation
import KeychainCore
import KeychainTestSupport
import KeychainStorage
import Logging
import Synchronization
import Testing

/// Collects the lines the examples log.
final class SeedLog: Sendable {
    private let lines = Mutex<[(message: String, error: String?)]>([])
    func append(_ message: String, _ error: String?) { lines.withLock { $0.append((message, error)) } }
    var messages: [String] { lines.withLock { $0.map(\.message) } }
    var errors: [String] { lines.withLock { $0.compactMap(\.error) } }
}

struct SeedLogHandler: LogHandler {
    let log: SeedLog
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { log.append(event.message.description, event.error.map { "\($0)" }) }
}

/// The backends the examples run over: a keychain file on each side of the agent's seam.
private let backends: [KeychainBackend] = [.file, .agent]

@Suite("Seed 003 examples")
struct SeedExampleTests {
    let log = SeedLog()
    var logger: Logger { Logger(label: "SeedExamples") { _ in SeedLogHandler(log: log) } }

    /// The keychain standing in for the default one: a temporary file in this process, or a
    /// file kept by the test process's `keychaind`.
    struct Standing {
        let made: TestKeychain
        var keychain: any KeychainHandle { made.handle }

        init(_ backend: KeychainBackend) throws { made = try backend.make() }

        /// Runs an example with this keychain as the default one.
        func run(_ example: () throws -> Void) rethrows {
            try KeychainStorage.withDefaultDatabase(keychain, operation: example)
        }

        func open(_ name: String, _ cipher: (any Ciphering)?) throws -> KeychainStorage {
            try KeychainStorage.openStore(name: name, cipher: cipher, accessGroup: nil, database: keychain)
        }
    }

    @Test(
        "Store Creation: creates an open, empty store; creating it again logs storeAlreadyExists",
        arguments: backends)
    func storeCreation(backend: KeychainBackend) throws {
        let standing = try Standing(backend)
        let example = {
            do {
                let cipher = try Cipher(password: "correct horse battery staple", salt: "seed-003-salt-16+")
                let keychainStorage = try KeychainStorage.createStore(
                    name: "seed-store", cipher: cipher, accessGroup: nil)
            } catch {
                logger.error("An error occurred while creating the store.", error: error)
            }
        }
        standing.run(example)
        #expect(log.messages.isEmpty)
        let cipher = try Cipher(password: "correct horse battery staple", salt: "seed-003-salt-16+")
        #expect(try standing.open("seed-store", cipher).keys().isEmpty)

        standing.run(example)
        #expect(log.messages == ["An error occurred while creating the store."])
        #expect(log.errors.first?.contains("storeAlreadyExists") == true)
    }

    @Test(
        "Opening Store: opens an existing store and logs an error for a missing one",
        arguments: backends)
    func openingStore(backend: KeychainBackend) throws {
        let standing = try Standing(backend)
        let cipher = try Cipher(password: "open sesame", salt: "seed-003-salt-16+")
        _ = try KeychainStorage.createStore(
            name: "existing", cipher: cipher, accessGroup: nil, database: standing.keychain)
        for storeName in ["existing", "missing"] {
            standing.run {
                do {
                    let keychainStorage = try KeychainStorage.openStore(
                        name: storeName, cipher: cipher, accessGroup: nil)
                } catch {
                    logger.error("An error occurred while opening the store.", error: error)
                }
            }
        }
        #expect(log.messages == ["An error occurred while opening the store."])
        #expect(log.errors.count == 1)
        #expect(log.errors.first?.contains("storeNotFound") == true)
    }

    @Test("Removing Store: removes the store; an invalid name logs an error", arguments: backends)
    func removingStore(backend: KeychainBackend) throws {
        let standing = try Standing(backend)
        _ = try KeychainStorage.createStore(name: "doomed", cipher: nil, accessGroup: nil, database: standing.keychain)
        for storeName in ["doomed", "../doomed"] {
            standing.run {
                do {
                    try KeychainStorage.removeStore(name: storeName, accessGroup: nil)
                } catch {
                    logger.error("An error occurred while removing the store", error: error)
                }
            }
        }
        #expect(throws: KeychainStorageError.self) { try standing.open("doomed", nil) }
        #expect(log.messages == ["An error occurred while removing the store"])
        #expect(log.errors.first?.contains("invalidStoreName") == true)
    }

    @Test(
        "Changing Cipher on Store: the store then opens with the new cipher only", arguments: backends)
    func changingCipher(backend: KeychainBackend) throws {
        let standing = try Standing(backend)
        standing.run {
            do {
                let cipher = try Cipher(password: "old password", salt: "seed-003-salt-16+")
                let keychainStorage = try KeychainStorage.createStore(name: "rekeyed", cipher: cipher, accessGroup: nil)

                let newCipher = try Cipher(password: "new password", salt: "seed-003-new-salt")

                try keychainStorage.changeCipher(to: newCipher)
            } catch {
                logger.error("An error occurred while changing the cipher.", error: error)
            }
        }
        #expect(log.messages.isEmpty)
        _ = try standing.open("rekeyed", try Cipher(password: "new password", salt: "seed-003-new-salt"))
        let error = storageError {
            try standing.open("rekeyed", try Cipher(password: "old password", salt: "seed-003-salt-16+"))
        }
        #expect(error?.code == .wrongCipher)
    }

    @Test(
        "Manipulating Store: put, read, remove, remove all and keys behave as described",
        arguments: backends)
    func manipulatingStore(backend: KeychainBackend) throws {
        let standing = try Standing(backend)
        let keychainStorage = try KeychainStorage.createStore(
            name: "manipulated", cipher: try testCipher(), accessGroup: nil, database: standing.keychain)
        let key = "greeting"
        let data = Data("hello".utf8)

        do {
            try keychainStorage.put(data: data, for: key)
        } catch {
            logger.error("An error occurred while putting into the store.", error: error)
        }
        #expect(try keychainStorage.data(for: key) == data)

        do {
            let data = try keychainStorage.data(for: key)
        } catch {
            logger.error("An error occurred while reading from the store.", error: error)
        }

        do {
            let keys = try keychainStorage.keys()
        } catch {
            logger.error("An error occurred while get all keys from the store.", error: error)
        }

        do {
            try keychainStorage.removeData(for: key)
        } catch {
            logger.error("An error occurred while removing from the store.", error: error)
        }
        #expect(try keychainStorage.data(for: key) == nil)

        try keychainStorage.put(data: data, for: "other")
        do {
            try keychainStorage.removeAllData()
        } catch {
            logger.error("An error occurred while removing all data from the store.", error: error)
        }
        #expect(try keychainStorage.keys().isEmpty)
        #expect(log.messages.isEmpty)

        // Reading throws upon failure: a locked keychain is logged, not read as nil.
        standing.keychain.lock()
        do {
            let data = try keychainStorage.data(for: key)
        } catch {
            logger.error("An error occurred while reading from the store.", error: error)
        }
        #expect(log.messages == ["An error occurred while reading from the store."])
        try standing.keychain.unlock(password: nil)
    }
}
