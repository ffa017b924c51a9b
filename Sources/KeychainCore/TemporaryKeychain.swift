import Foundation

/// A keychain file in a fresh temporary directory, removed when the value is released.
///
/// For the tests of projects that depend on this package: it runs the real file code path
/// (SQLite WAL, permissions, key wrapping) without touching the user's keychains.
///
/// ```swift
/// let temporary = try TemporaryKeychain()
/// try temporary.keychain.add(Item(class: .genericPassword, data: Data("x".utf8)))
/// ```
public final class TemporaryKeychain: Sendable {
    /// The temporary directory; it holds the keychain file and nothing else of the user's.
    public let directory: String
    /// The open keychain.
    public let keychain: KeychainDatabase

    /// Creates a keychain in a new temporary directory.
    /// - Parameters:
    ///   - password: A password (the keychain then starts locked), or `nil`.
    ///   - configuration: Defaults to ``KeychainModel/KeychainConfiguration/testing(deviceKey:)``.
    public init(password: String? = nil, configuration: KeychainConfiguration = .testing()) throws {
        let base = FileManager.default.temporaryDirectory.path
        directory = base + "/keychain-test-\(UUID().uuidString)"
        try SecureFileSystem.ensureDirectory(directory)
        keychain = try KeychainDatabase.create(
            at: directory + "/test.keychain-db", password: password, configuration: configuration)
    }

    /// The keychain file's path.
    public var path: String { keychain.path ?? "" }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}
