import Foundation

extension KeychainDatabase {
    private static let processDefault = Mutex<KeychainDatabase?>(nil)

    /// The engine's default keychain (see `Keychains.current()`) when it is an engine handle.
    ///
    /// Every module of this package resolves the default keychain through `Keychains`, so
    /// they share one handle, and so one lock state, per process.
    /// - Throws: ``KeychainModel/KeychainError`` when the default keychain cannot be opened or created, or
    ///   `.notAvailable` when the current task's default keychain is not an engine handle.
    public static func current() throws -> KeychainDatabase {
        guard let handle = TaskDefaultKeychain.handle else { return try processDefaultDatabase() }
        guard let database = handle as? KeychainDatabase else {
            throw KeychainError(.notAvailable, "the current task's default keychain is not an in-process keychain")
        }
        return database
    }

    /// The process's default keychain, opened (and created, password-less) on first use, with
    /// `configuration`, and then reused.
    package static func processDefaultDatabase(
        configuration: KeychainConfiguration = KeychainConfiguration()
    ) throws -> KeychainDatabase {
        try processDefault.withLock { cached in
            if let cached { return cached }
            let database = try openDefault(configuration: configuration)
            cached = database
            return database
        }
    }

    /// Runs `operation` with `database` as the default keychain of the current task (and of
    /// the tasks it creates), for tests that run in parallel; the same as
    /// `Keychains.withDefault`.
    ///
    /// ```swift
    /// let memory = try KeychainDatabase.inMemory()
    /// try KeychainDatabase.withDefault(memory) {
    ///     try codeThatUsesTheDefaultKeychain()
    /// }
    /// ```
    public static func withDefault<R>(_ database: KeychainDatabase, operation: () throws -> R) rethrows -> R {
        try TaskDefaultKeychain.$handle.withValue(database, operation: operation)
    }

    /// The asynchronous form of ``withDefault(_:operation:)-(_,()->R)``.
    public static func withDefault<R>(
        _ database: KeychainDatabase, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await TaskDefaultKeychain.$handle.withValue(database, operation: operation)
    }
}
