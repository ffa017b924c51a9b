import Foundation

/// A keychain that can make a recovery key: 128 random bits, shown once, that open the keychain
/// wherever its password does, with no key derivation and no TPM (docs/login.md).
///
/// The engine's handles and the agent's conform; ask with `as? any KeychainRecovery`.
public protocol KeychainRecovery {
    /// Makes a new recovery key for the keychain, which must be unlocked and have a password,
    /// replacing any earlier one, and returns its text (26 characters in groups of four).
    /// - Throws: ``KeychainError``: `.parameter` for a keychain without a password,
    ///   `.interactionNotAllowed` while it is locked.
    func makeRecoveryKey() throws -> String
}

/// A keychain that can unlock without a password while this machine boots as it does now: its
/// password key sealed to the boot state by a TPM (docs/login.md, "Logins without a password").
///
/// The engine's handles and the agent's conform; ask with `as? any KeychainBootStateUnlock`.
public protocol KeychainBootStateUnlock {
    /// Turns unlocking without a password on (`password` is the keychain's) or off.
    /// - Throws: ``KeychainError``: `.notAvailable` without a TPM, `.authFailed` for a wrong
    ///   password, `.parameter` for a keychain without a password.
    func setUnlocksWithBootState(_ enabled: Bool, password: Data?) throws
}
