import Foundation
import Synchronization

/// Something that seals a small secret to this machine's hardware, so that only this machine
/// can unseal it, and only with the authorization it was sealed under: a TPM 2.0
/// (`KeychainTPM`'s `TPMSealer`).
///
/// The engine uses it to entangle a keychain's password with the machine (``HardwareSealing``).
/// A conforming type throws ``KeychainError`` only: `.authFailed` for a wrong authorization (one
/// the hardware counts against its dictionary-attack limit), `.authFailed` with
/// ``KeychainError/isSetupProblem`` when the hardware refuses for now (locked out) or the secret
/// was sealed by other hardware (another machine, or this TPM cleared), `.notAvailable` when no
/// hardware answers, `.decode` for a malformed sealed secret.
public protocol KeychainSealer: Sendable {
    /// Seals `secret` (at most 128 bytes) under `authorization` (at most 32 bytes).
    func seal(_ secret: Data, authorization: Data) throws -> Data
    /// Unseals what ``seal(_:authorization:)`` returned, with the same authorization.
    func unseal(_ sealed: Data, authorization: Data) throws -> Data
    /// Seals `secret` to this machine's boot state: it unseals with no authorization, and only
    /// while the machine boots the same way (a TPM's PCR 7: Secure Boot's state and keys).
    func sealToBootState(_ secret: Data) throws -> Data
    /// Unseals what ``sealToBootState(_:)`` returned.
    /// - Throws: `.authFailed` with ``KeychainError/isSetupProblem`` when the boot state changed.
    func unsealFromBootState(_ sealed: Data) throws -> Data
    /// Seals `secret` to this machine alone: it unseals with no authorization, only on this
    /// hardware, and even while wrong passwords have locked the hardware out.
    func sealToMachine(_ secret: Data) throws -> Data
    /// Unseals what ``sealToMachine(_:)`` returned.
    func unsealFromMachine(_ sealed: Data) throws -> Data
}

/// Which keychains' passwords are entangled with this machine's hardware, and the sealer.
///
/// A keychain listed in ``keychains`` is sealed when a password is set on it (created with one,
/// converted from password-less, or its password changed): its password-derived key becomes
/// `HKDF(scrypt(password) ‖ secret)`, where `secret` is 32 random bytes sealed by ``sealer``
/// under an authorization derived from the password. Opening it then needs both the password
/// and this machine, and each wrong password is counted by the hardware. A keychain sealed once
/// stays sealed through every password change, listed or not; none is ever unsealed silently.
public struct HardwareSealing: Sendable {
    /// The hardware.
    public var sealer: any KeychainSealer
    /// The keychain files sealed when a password is set on them (the login keychain), as
    /// ``KeychainPaths`` spells them.
    public var keychains: Set<String>
    /// Whether the device key file is sealed too (``sealer``'s ``KeychainSealer/sealToMachine(_:)``):
    /// converted in place when first read, and made sealed. Only processes with a sealer can
    /// then open password-less keychains and the "this device only" classes.
    public var sealsDeviceKey: Bool
    /// The device keys unsealed so far, so that the hardware is asked once per key file.
    package let unsealedDeviceKeys = UnsealedDeviceKeys()

    /// Sealing for `keychains` by `sealer`, and of the device key file when `sealsDeviceKey`.
    public init(sealer: any KeychainSealer, keychains: Set<String>, sealsDeviceKey: Bool = true) {
        self.sealer = sealer
        self.keychains = keychains
        self.sealsDeviceKey = sealsDeviceKey
    }
}

/// Device keys already unsealed by a process's ``HardwareSealing``, by their sealed bytes.
package final class UnsealedDeviceKeys: Sendable {
    private let keys = Mutex<[Data: DeviceKeySource.KeyBytes]>([:])

    /// The key unsealed from `sealed`, by `unseal` the first time.
    package func key(for sealed: Data, unseal: () throws -> Data) throws -> DeviceKeySource.KeyBytes {
        if let key = keys.withLock({ $0[sealed] }) { return key }
        var secret = try unseal()
        defer { secret.resetBytes(in: 0..<secret.count) }
        let key = DeviceKeySource.KeyBytes(secret)
        keys.withLock { $0[sealed] = key }
        return key
    }
}
