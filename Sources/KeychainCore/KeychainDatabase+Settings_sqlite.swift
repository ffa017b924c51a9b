import Foundation
import GRDB

extension KeychainDatabase {
    /// The keychain's lock settings, as stored in its file (the defaults when none were set).
    ///
    /// Reading them needs no password: a locked keychain has settings too.
    /// - Throws: ``KeychainModel/KeychainError``: `.notAvailable` after ``close()``, `.decode` when the
    ///   stored settings are damaged, `.wrongVersion` when a later version wrote them.
    public var settings: KeychainSettings {
        get throws {
            try KeychainSettings(stored: headerEntry(KeychainSettings.metaName))
        }
    }

    /// The header entry `name` (settings, display name, upgrades), or `nil`.
    /// - Throws: `.notAvailable` after ``close()``.
    func headerEntry(_ name: String) throws -> Data? {
        guard keys.read({ !$0.isClosed }) else { throw KeychainError(.notAvailable, "the keychain was closed") }
        return try Self.run {
            try writer.read { db in
                try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = ?", arguments: [name])
            }
        }
    }

    /// Stores the keychain's lock settings in its file, in one transaction.
    ///
    /// As macOS's `SecKeychainSetSettings`, this needs the keychain unlocked (a keychain
    /// without a password always is) and its file writable.
    /// - Parameter settings: The new settings.
    /// - Throws: ``KeychainModel/KeychainError``: `.parameter` for a lock interval out of range,
    ///   `.interactionNotAllowed` while the keychain is locked, `.readOnly` for a file that
    ///   cannot be written, `.notAvailable` after ``close()``.
    public func setSettings(_ settings: KeychainSettings) throws {
        guard settings.isValid else {
            throw KeychainError.parameter(
                "a lock interval is from 1 to \(KeychainSettings.maximumLockInterval) seconds, or none")
        }
        try keys.read { state in
            guard !state.isClosed else { throw KeychainError(.notAvailable, "the keychain was closed") }
            guard state.isUnlocked else {
                throw KeychainError(.interactionNotAllowed, "the keychain must be unlocked to change its settings")
            }
        }
        try Self.run {
            try writer.write { db in try Storage.setMeta(db, KeychainSettings.metaName, settings.encoded()) }
        }
    }
}
