import Foundation
import KeychainCore
import KeychainTestSupport
import KeychainStorage
import Logging
import Synchronization
import Testing

/// The two kinds of keychain every store behaviour runs against.
enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case file
    /// A keychain file kept by the test process's `keychaind`, reached as a user's process
    /// reaches it.
    case agent

    /// The backends whose configuration a test chooses: the agent's keychains have its own
    /// (the caller's access groups are who it is, the size limit the engine's default).
    static let inProcess: [Backend] = [.memory, .file]

    var testDescription: String { rawValue }

    func make(accessGroups: AccessGroups = .standard, maximumDataSize: Int? = nil) throws -> Fixture {
        var configuration = KeychainConfiguration.testing()
        configuration.accessGroups = accessGroups
        if let maximumDataSize { configuration.maximumDataSize = maximumDataSize }
        switch self {
        case .memory:
            return Fixture(database: try KeychainDatabase.inMemory(configuration: configuration), owner: nil)
        case .file:
            let temporary = try TemporaryKeychain(configuration: configuration)
            return Fixture(database: temporary.keychain, owner: temporary)
        case .agent:
            precondition(
                accessGroups == .standard && maximumDataSize == nil, "the agent's keychains have its configuration")
            let keychain = try KeychainBackend.agent.make()
            return Fixture(database: keychain.handle, owner: keychain)
        }
    }
}

struct Fixture {
    let database: any KeychainHandle
    let owner: AnyObject?

    /// Every generic password in the keychain (the store's marker and values).
    func itemCount() throws -> Int {
        try database.find(ItemQuery(class: .genericPassword)).count
    }

    func create(_ name: String, cipher: (any Ciphering)?, accessibility: Accessibility = .whenUnlocked) throws
        -> KeychainStorage
    {
        try KeychainStorage.createStore(
            name: name, cipher: cipher, accessGroup: nil, database: database, accessibility: accessibility)
    }

    func open(_ name: String, cipher: (any Ciphering)?) throws -> KeychainStorage {
        try KeychainStorage.openStore(name: name, cipher: cipher, accessGroup: nil, database: database)
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
