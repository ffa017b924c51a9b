import Foundation
import GRDB

extension KeychainDatabase {
    /// The header entry that holds the display name.
    static let displayNameMeta = "label"
    /// The longest display name, in UTF-8 bytes.
    public static let maximumDisplayNameLength = 1024

    /// The name people see for the keychain (the Secret Service shows it as its collection's
    /// `Label`; Seahorse lists keychains by it), or `nil` when none was set and the file's
    /// name stands for it.
    ///
    /// It is kept in the keychain's header, so it travels with the file. It is not secret and
    /// not sealed: reading it needs no password.
    /// - Throws: ``KeychainModel/KeychainError``: `.notAvailable` after ``close()``, `.decode` when the stored
    ///   name is not UTF-8.
    public var displayName: String? {
        get throws {
            guard let stored = try headerEntry(Self.displayNameMeta) else { return nil }
            guard let name = String(validating: stored, as: UTF8.self) else {
                throw KeychainError.decode("the keychain's display name is damaged")
            }
            return name
        }
    }

    /// Sets the name people see for the keychain (``displayName``), or removes it (`nil` or
    /// empty), in one transaction. A name is not secret, so the keychain may be locked.
    /// - Throws: ``KeychainModel/KeychainError``: `.parameter` for a name longer than
    ///   ``maximumDisplayNameLength`` bytes, `.readOnly` for a file that cannot be written,
    ///   `.notAvailable` after ``close()``.
    public func setDisplayName(_ name: String?) throws {
        guard keys.read({ !$0.isClosed }) else { throw KeychainError(.notAvailable, "the keychain was closed") }
        let name = name ?? ""
        guard name.utf8.count <= Self.maximumDisplayNameLength else {
            throw KeychainError.parameter("a keychain's name is at most \(Self.maximumDisplayNameLength) bytes")
        }
        try Self.run {
            try writer.write { db in
                if name.isEmpty {
                    try db.execute(sql: "DELETE FROM meta WHERE name = ?", arguments: [Self.displayNameMeta])
                } else {
                    try Storage.setMeta(db, Self.displayNameMeta, Data(name.utf8))
                }
            }
        }
    }
}
