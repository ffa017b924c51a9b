import Foundation
import KeychainClient
import KeychainModel

/// A keychain that lives in memory, for the tests of projects that use ``Keychain``.
///
/// It runs the real engine (sealing, indexing, access groups, lock states) without files
/// and without touching the user's keychain, and can simulate a locked device.
///
/// ```swift
/// @Test func tokenSurvivesRestart() throws {
///     let memory = try InMemoryKeychain()
///     let keychain = memory.keychain(service: "com.example.api")
///     try keychain.set("t", forKey: "token")
///
///     memory.lock()
///     #expect(throws: KeychainError.self) { try keychain.string(forKey: "token") }
///     try memory.unlock()
///     #expect(try keychain.string(forKey: "token") == "t")
/// }
/// ```
public final class InMemoryKeychain: Sendable {
    /// The in-memory keychain's handle (the engine's, in this process); pass it wherever an
    /// `any KeychainHandle` is expected.
    public let database: any KeychainHandle

    /// Creates an empty, unlocked in-memory keychain.
    /// - Parameter accessGroups: The access groups the simulated process may use; the
    ///   default adds to `"default"` and reads every group.
    /// - Throws: ``KeychainModel/KeychainError`` if the engine cannot start.
    public init(accessGroups: AccessGroups = .standard) throws {
        var configuration = KeychainConfiguration.testing()
        configuration.accessGroups = accessGroups
        database = try Keychains.inMemory(configuration: configuration)
    }

    /// A ``Keychain`` of the generic passwords of `service` in this keychain.
    /// - Parameters:
    ///   - service: The service of every item.
    ///   - accessGroup: The access group, or `nil` for the configured groups.
    /// - Returns: The keychain.
    public func keychain(service: String, accessGroup: String? = nil) -> Keychain {
        Keychain(service: service, accessGroup: accessGroup, database: database)
    }

    /// A ``Keychain`` of the Internet passwords of `server` in this keychain.
    /// - Parameters:
    ///   - server: The host name.
    ///   - protocolType: The protocol.
    ///   - authenticationType: The authentication scheme.
    ///   - accessGroup: The access group, or `nil` for the configured groups.
    /// - Returns: The keychain.
    public func keychain(
        server: String, protocolType: ProtocolType, authenticationType: AuthenticationType = .default,
        accessGroup: String? = nil
    ) -> Keychain {
        Keychain(
            server: server, protocolType: protocolType, authenticationType: authenticationType,
            accessGroup: accessGroup, database: database)
    }

    /// Simulates the device locking.
    ///
    /// Until ``unlock()``, items whose accessibility is ``KeychainModel/Accessibility/whenUnlocked``
    /// (or another when-unlocked value, the default) can be neither read, listed nor
    /// written: every such operation throws `KeychainError` with `.interactionNotAllowed`
    /// (`errSecInteractionNotAllowed`, -25308), exactly as on a locked device. Items that are
    /// readable after first unlock or always stay readable.
    public func lock() {
        database.lock()
    }

    /// Simulates the device unlocking.
    /// - Throws: ``KeychainModel/KeychainError`` if the engine cannot unwrap its keys.
    public func unlock() throws {
        try database.unlock(password: nil)
    }

    /// Whether the keychain is locked.
    public var isLocked: Bool { database.isLocked }

    /// Runs `operation` with this keychain standing in for the default keychain: a
    /// ``Keychain`` created inside it without a `database` uses this one.
    public func asDefault<R>(_ operation: () throws -> R) rethrows -> R {
        try Keychain.withDefaultDatabase(database, operation: operation)
    }
}
