import Crypto
import Foundation

/// A keychain's password entangled with this machine's hardware (``KeychainModel/HardwareSealing``).
///
/// The password-derived key of a sealed keychain is `HKDF(derived ‖ secret)`, where `derived` is
/// the key derivation's output and `secret` 32 random bytes that the hardware seals under
/// `HKDF(derived)` (another key from the same derivation, never the password-derived key
/// itself). Opening the keychain therefore needs the password *and* this machine's hardware,
/// and the hardware checks every guess, so its dictionary-attack lockout limits their rate.
extension KeychainDatabase {
    /// The key that opens the password wrappings of the keychain whose header is `header`.
    /// - Throws: `.authFailed` for a wrong password (counted by the hardware when sealed);
    ///   `.notAvailable` when the keychain is sealed and this process has no sealer; the
    ///   sealer's errors.
    func passwordKey(_ password: Data, header: Header) throws -> SymmetricKey {
        guard let (derivation, salt) = header.kdf else {
            throw KeychainError(.authFailed, "this keychain has no password")
        }
        let derived = try derivation.deriveKey(password: password, salt: salt)
        guard let sealed = header.sealed else { return derived }
        guard let sealing = configuration.hardwareSealing else {
            throw KeychainError(
                .notAvailable,
                "the keychain \(path ?? "in memory") is sealed to this machine's TPM, and this process "
                    + "has none configured: keychaind uses /dev/tpmrm0 or the `tpm` preference (docs/login.md)",
                isSetupProblem: true)
        }
        let secret = try sealing.sealer.unseal(
            sealed, authorization: Self.sealAuthorization(derived, keychainID: keychainID))
        return Self.entangle(derived, with: secret, keychainID: keychainID)
    }

    /// The sealer a password set now is entangled with: the one the keychain is sealed with
    /// already (a sealed keychain stays sealed), or the configuration's when it lists this
    /// keychain; `nil` for none.
    /// - Throws: `.notAvailable` when the keychain is sealed and this process has no sealer
    ///   (its password cannot change without unsealing it, which it will not do silently).
    func sealerForNewPassword(current: Header) throws -> (any KeychainSealer)? {
        let sealing = configuration.hardwareSealing
        if current.sealed != nil {
            guard let sealing else {
                throw KeychainError(
                    .notAvailable,
                    "the keychain \(path ?? "in memory") is sealed to this machine's TPM, and this process "
                        + "has none configured: keychaind uses /dev/tpmrm0 or the `tpm` preference (docs/login.md)",
                    isSetupProblem: true)
            }
            return sealing.sealer
        }
        guard let sealing, let path, sealing.keychains.contains(path) else { return nil }
        return sealing.sealer
    }

    /// The authorization the hardware seals the secret under: derived from the password's key,
    /// with a purpose of its own.
    static func sealAuthorization(_ derived: SymmetricKey, keychainID: Data) -> Data {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: derived, salt: keychainID, info: Data("keychain-linux seal authorization v1".utf8),
            outputByteCount: 32
        ).bytes
    }

    /// The password-derived key of a sealed keychain: the derivation's output and the sealed
    /// secret, through HKDF.
    static func entangle(_ derived: SymmetricKey, with secret: Data, keychainID: Data) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: derived.bytes + secret), salt: keychainID,
            info: Data("keychain-linux entangled password v1".utf8), outputByteCount: 32)
    }
}
