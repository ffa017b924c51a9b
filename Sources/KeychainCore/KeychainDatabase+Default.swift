import Foundation

extension KeychainDatabase {
    @TaskLocal static var taskDefault: KeychainDatabase?

    private static let processDefault = Mutex<KeychainDatabase?>(nil)

    /// The default keychain for the current task, when one was set with
    /// ``withDefault(_:operation:)-(_,()->R)``; `nil` otherwise.
    package static var defaultOverride: KeychainDatabase? { taskDefault }

    /// The keychain that "the default keychain" means here: the one set for the current task
    /// by ``withDefault(_:operation:)-(_,()->R)``, else the process's default keychain,
    /// opened (and created, password-less) on first use and then reused.
    ///
    /// Every module of this package resolves the default keychain through this method, so
    /// they share one handle, and so one lock state, per process.
    /// - Throws: ``KeychainError`` when the default keychain cannot be opened or created.
    public static func current() throws -> KeychainDatabase {
        if let database = taskDefault { return database }
        return try processDefault.withLock { cached in
            if let cached { return cached }
            let database = try openDefault()
            cached = database
            return database
        }
    }

    /// Runs `operation` with `database` as the default keychain of the current task (and of
    /// the tasks it creates), for tests that run in parallel.
    ///
    /// ```swift
    /// let memory = try KeychainDatabase.inMemory()
    /// try KeychainDatabase.withDefault(memory) {
    ///     try codeThatUsesTheDefaultKeychain()
    /// }
    /// ```
    public static func withDefault<R>(_ database: KeychainDatabase, operation: () throws -> R) rethrows -> R {
        try $taskDefault.withValue(database, operation: operation)
    }

    /// The asynchronous form of ``withDefault(_:operation:)-(_,()->R)``.
    public static func withDefault<R>(
        _ database: KeychainDatabase, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> R
    ) async rethrows -> R {
        try await $taskDefault.withValue(database, operation: operation)
    }
}
