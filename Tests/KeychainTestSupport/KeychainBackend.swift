// The fixture of the test targets above the seam: the backends a test's keychain can be kept
// in, and a fresh keychain of each.
import Foundation
import KeychainClient
import KeychainCore
import Testing

/// Where a test's keychain is kept: by the engine in the test process (in memory, or in a
/// temporary file), or by the test process's `keychaind` (``TestAgent``), reached through
/// `AgentKeychain` as a user's process reaches it. A parameterised test over backends names each
/// case by its raw value (`memory`, `file`, `agent`).
public enum KeychainBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    /// A keychain of the engine in this process, in memory.
    case memory
    /// A keychain of the engine in this process, in a file of a temporary directory
    /// (`TemporaryKeychain`).
    case file
    /// A keychain file kept by the test process's `keychaind`.
    case agent

    /// The backends whose configuration a test chooses: the agent's keychains have its own
    /// (the caller's access groups are who it is, the size limit the engine's default).
    public static let inProcess: [KeychainBackend] = [.memory, .file]

    /// The engine in memory and the agent: one keychain on each side of the agent's seam, for
    /// the tests whose subject (Apple's API) is the same over both.
    public static let memoryAndAgent: [KeychainBackend] = [.memory, .agent]

    /// The raw value, as the test's case is named.
    public var testDescription: String { rawValue }

    /// A fresh keychain of this backend, with the configuration `KeychainConfiguration.testing()`
    /// and `accessGroups` and `maximumDataSize` (when not `nil`), protected by `password` when one
    /// is given (a file then starts locked, the others need not: a test that needs either state
    /// sets it).
    ///
    /// The agent's keychains have its configuration: it gives the test process its default
    /// access groups, and the engine's size limit; asking one of it for others is a
    /// programming error (a test of other groups is an in-process test).
    public func make(accessGroups: AccessGroups = .standard, maximumDataSize: Int? = nil, password: String? = nil)
        throws -> TestKeychain
    {
        var configuration = KeychainConfiguration.testing()
        configuration.accessGroups = accessGroups
        if let maximumDataSize { configuration.maximumDataSize = maximumDataSize }
        switch self {
        case .memory:
            return TestKeychain(
                handle: try KeychainDatabase.inMemory(password: password, configuration: configuration), owner: nil)
        case .file:
            let temporary = try TemporaryKeychain(password: password, configuration: configuration)
            return TestKeychain(handle: temporary.keychain, owner: temporary)
        case .agent:
            precondition(
                accessGroups == .standard && maximumDataSize == nil, "the agent's keychains have its configuration")
            let agent = try TestAgent.shared()
            return TestKeychain(
                handle: try agent.makeKeychain(password: password.map { Data($0.utf8) }), owner: agent)
        }
    }

    /// Runs `body` with a fresh keychain of this backend (``make(accessGroups:maximumDataSize:password:)``)
    /// as the task's default keychain (`Keychains.withDefault`), so that code reaching for "the
    /// default keychain" gets it.
    public func withDefaultKeychain<T>(
        accessGroups: AccessGroups = .standard, password: String? = nil, _ body: (any KeychainHandle) throws -> T
    ) throws -> T {
        let keychain = try make(accessGroups: accessGroups, password: password)
        return try withExtendedLifetime(keychain) {
            try Keychains.withDefault(keychain.handle) { try body(keychain.handle) }
        }
    }
}

/// A keychain made for one test, and what must stay alive while it is used. A temporary file's
/// directory is removed when its owner goes; the agent's keychains are not deleted when a test
/// ends (a `Keychain` value made from one may outlive its test's fixture): they go with the
/// agent's directory at exit.
public final class TestKeychain: Sendable {
    /// The keychain, as the modules above the seam hold it.
    public let handle: any KeychainHandle
    /// The temporary keychain whose directory holds the file, or the agent; `nil` in memory.
    private let owner: (any AnyObject & Sendable)?

    init(handle: any KeychainHandle, owner: (any AnyObject & Sendable)?) {
        self.handle = handle
        self.owner = owner
    }
}
