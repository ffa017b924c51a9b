import Crypto
import Foundation
import GRDB

/// Unlocking without a password on this machine as it boots now (docs/login.md, "Logins without a
/// password"): the password key sealed to the boot state by the configuration's sealer, so that
/// `unlock(password: nil)` opens the keychain while the machine boots the same way.
extension KeychainDatabase {
    /// Whether the keychain unlocks without a password while the boot state is unchanged.
    public var unlocksWithBootState: Bool { header.withLock { $0.unlocksWithBootState } }

    /// Turns unlocking without a password on (the password key sealed to this machine's boot
    /// state) or off.
    /// - Parameters:
    ///   - enabled: On or off.
    ///   - password: The keychain's password (to turn it on; ignored to turn it off).
    /// - Throws: `.parameter` for a keychain without a password; `.notAvailable` without a
    ///   sealer (no TPM); `.authFailed` for a wrong password.
    public func setUnlocksWithBootState(_ enabled: Bool, password: Data?) throws {
        guard enabled else {
            try Self.run { try writer.write { try $0.execute(sql: "DELETE FROM meta WHERE name = 'kdf.boot'") } }
            header.withLock { $0.unlocksWithBootState = false }
            return
        }
        guard hasPassword else {
            throw KeychainError(.parameter, "a keychain without a password opens without one already")
        }
        guard let sealer = configuration.hardwareSealing?.sealer else {
            throw KeychainError(
                .notAvailable, "unlocking without a password needs a TPM, and this process uses none",
                isSetupProblem: true)
        }
        guard let password else { throw KeychainError(.authFailed, "the password is required") }
        try Self.run {
            try writer.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    let meta = try Storage.meta(db)
                    let current = try Header(meta: meta)
                    let passwordKey = try self.passwordKey(password, header: current)
                    let opened = try unwrapAll(
                        meta: meta, header: current,
                        wrapping: WrappingKeys(deviceKey: deviceKey, passwordKey: passwordKey, keychainID: keychainID))
                    guard opened[.protection(.whenUnlocked)] != nil else {
                        throw KeychainError(.authFailed, "the password is not correct")
                    }
                    try Storage.setMeta(db, "kdf.boot", try sealer.sealToBootState(passwordKey.bytes))
                    return .commit
                }
            }
        }
        header.withLock { $0.unlocksWithBootState = true }
    }

    /// The keys the boot-state seal opens; `nil` when the keychain has none or this process no
    /// sealer.
    /// - Throws: the sealer's errors (`.authFailed` with ``KeychainModel/KeychainError/isSetupProblem``
    ///   when the boot state changed).
    func unwrapWithBootState(meta: [String: Data], header: Header) throws -> [KeyName: SymmetricKey]? {
        guard header.kdf != nil, let sealed = meta["kdf.boot"], let sealer = configuration.hardwareSealing?.sealer
        else { return nil }
        let passwordKey = SymmetricKey(data: try sealer.unsealFromBootState(sealed))
        let keys = try unwrapAll(
            meta: meta, header: header,
            wrapping: WrappingKeys(deviceKey: deviceKey, passwordKey: passwordKey, keychainID: keychainID))
        guard keys[.protection(.whenUnlocked)] != nil, keys[.protection(.afterFirstUnlock)] != nil else {
            throw KeychainError(
                .authFailed, "the keychain's boot-state seal does not open it: unlock with the password")
        }
        return keys
    }
}

extension KeychainDatabase: KeychainBootStateUnlock {}

extension CallerKeychain: KeychainBootStateUnlock {
    func setUnlocksWithBootState(_ enabled: Bool, password: Data?) throws {
        try database.setUnlocksWithBootState(enabled, password: password)
    }
}
