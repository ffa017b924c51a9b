import Foundation
import KeychainCore
import KeychainTestSupport
import KeychainStorage
import Logging
import Synchronization
import Testing

/// A store's keychain: a fresh one of a backend (`KeychainBackend.make`), which every store
/// behaviour runs against.
extension TestKeychain {
    /// Every generic password in the keychain (the store's marker and values).
    func itemCount() throws -> Int {
        try handle.find(ItemQuery(class: .genericPassword)).count
    }

    func create(_ name: String, cipher: (any Ciphering)?, accessibility: Accessibility = .whenUnlocked) throws
        -> KeychainStorage
    {
        try KeychainStorage.createStore(
            name: name, cipher: cipher, accessGroup: nil, database: handle, accessibility: accessibility)
    }

    func open(_ name: String, cipher: (any Ciphering)?) throws -> KeychainStorage {
        try KeychainStorage.openStore(name: name, cipher: cipher, accessGroup: nil, database: handle)
    }
}

/// A 32-byte salt for tests.
let testSalt = Data((0..<32).map { UInt8($0) })

/// A cipher with the cheap test-only key derivation.
func testCipher(_ password: String = "password", salt: Data = testSalt) throws -> Cipher {
    try Cipher(password: password, salt: salt, keyDerivation: .unsafeTestingOnly)
}

/// The `KeychainStorageError` code thrown by `body`, or `nil`.
func storageErrorCode<T>(_ body: () throws -> T) -> KeychainStorageError.Code? {
    storageError(body)?.code
}

func storageError<T>(_ body: () throws -> T) -> KeychainStorageError? {
    do {
        _ = try body()
        return nil
    } catch let error as KeychainStorageError {
        return error
    } catch {
        Issue.record("expected a KeychainStorageError, got \(error)")
        return nil
    }
}

/// A cipher that wraps another and fails on demand.
final class FlakyCipher: Ciphering {
    struct Failure: Error {}

    let base: any Ciphering
    private let encryptions = Mutex(0)
    private let failAfter: Int

    /// Fails every encryption after the first `failAfter` ones.
    init(_ base: any Ciphering, failAfter: Int) {
        self.base = base
        self.failAfter = failAfter
    }

    func encrypt(_ data: Data) throws -> Data {
        let count = encryptions.withLock { value -> Int in
            value += 1
            return value
        }
        if count > failAfter { throw Failure() }
        return try base.encrypt(data)
    }

    func decrypt(_ data: Data) throws -> Data { try base.decrypt(data) }
}

// MARK: - Log capture

/// Every log line emitted in this test process, for the tests that read logs.
final class LogCapture: Sendable {
    struct Entry: Sendable {
        var label: String
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
        var error: String?

        /// All the text of the line.
        var text: String {
            ([label, message, error ?? ""] + metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }

    static let shared = LogCapture()

    /// Routes swift-log to the capture; runs once per process.
    static let installed: Void = {
        LoggingSystem.bootstrap { label in CapturingHandler(label: label) }
    }()

    private let entries = Mutex<[Entry]>([])

    func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    func entries(where predicate: (Entry) -> Bool) -> [Entry] {
        entries.withLock { $0.filter(predicate) }
    }
}

struct CapturingHandler: LogHandler {
    let label: String
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        LogCapture.shared.append(
            LogCapture.Entry(
                label: label, level: event.level, message: event.message.description,
                metadata: merged.mapValues { "\($0)" }, error: event.error.map { "\($0)" }))
    }
}
