import Crypto
import Foundation
import KeychainModel

/// The recovery key RK (docs/sync.md, "Cryptography" and "Machines"): 128 random bits, shown once
/// to the user as 26 base32 characters, that open the zone's escrow when every device is lost.
///
/// Display form: `RecoveryKeyText`'s, as every recovery key of this project.
///
/// ## Escrow blob
///
///     version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16)
///
/// AES-256-GCM under HKDF-SHA256(RK, salt: zone, info: "kcsync-escrow-v1"), authenticated data
/// "kcsync-escrow-v1" ‖ zone (16) ‖ epoch (8).
public struct RecoveryKey: Sendable, CustomStringConvertible, CustomReflectable {
    static let escrowVersion: UInt8 = 1

    /// The 16 bytes.
    let bytes: Data

    /// A fresh random recovery key.
    public static func generate() -> RecoveryKey { RecoveryKey(bytes: SymmetricKey(size: .bits128).syncKeyBytes) }

    private init(bytes: Data) { self.bytes = bytes }

    /// Parses a key as the user typed it.
    ///
    /// - Throws: `.malformed` unless it is 26 base32 characters (dashes, spaces and case ignored)
    ///   whose last character's unused bits are zero.
    public init(parsing text: String) throws {
        do {
            bytes = try RecoveryKeyText.bytes(parsing: text)
        } catch .length {
            throw SyncError(.malformed, "a recovery key has \(RecoveryKeyText.characterCount) characters")
        } catch .character {
            throw SyncError(.malformed, "a recovery key has only letters and the digits 2 to 7")
        } catch {
            throw SyncError(.malformed, "the recovery key is mistyped")
        }
    }

    /// The 26 characters, undecorated.
    var characters: String { RecoveryKeyText.characters(of: bytes) }

    /// The key for showing once: groups of 4 characters separated by dashes.
    public var displayString: String { RecoveryKeyText.display(bytes) }

    /// Seals an escrow payload (the zone key chain) for `zone` at `epoch`.
    public func sealEscrow(_ payload: Data, zone: ZoneID, epoch: Int64) throws -> Data {
        let sealed = try AES.GCM.seal(
            payload, using: escrowKey(zone: zone), nonce: AES.GCM.Nonce(),
            authenticating: Self.escrowAD(zone: zone, epoch: epoch))
        guard let combined = sealed.combined else {
            preconditionFailure("AES-GCM with a 12-byte nonce has a combined form")
        }
        return Data([Self.escrowVersion]) + combined
    }

    /// Opens an escrow blob of `zone` at `epoch`.
    ///
    /// - Throws: `.tampered` if it does not open (another key, zone or epoch, or altered);
    ///   `.malformed` if it is not an escrow blob.
    public func openEscrow(_ blob: Data, zone: ZoneID, epoch: Int64) throws -> Data {
        guard blob.count >= 1 + 12 + 16, blob.first == Self.escrowVersion else {
            throw SyncError(.malformed, "not an escrow blob")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: blob.dropFirst())
            return try AES.GCM.open(
                box, using: escrowKey(zone: zone), authenticating: Self.escrowAD(zone: zone, epoch: epoch))
        } catch {
            throw SyncError(.tampered, "the escrow of zone \(zone) epoch \(epoch) does not open with this recovery key")
        }
    }

    /// The recovery peer's Ed25519 signing key for `zone`, derived from RK (docs/sync.md,
    /// "Machines", Recover: listed in the roster so a recovered device can sign itself in).
    public func recoverySigningKey(zone: ZoneID) throws -> Curve25519.Signing.PrivateKey {
        let seed = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: zone.uuid.syncBytes,
            info: Data("kcsync-recovery-peer-v1".utf8),
            outputByteCount: 32)
        return try Curve25519.Signing.PrivateKey(rawRepresentation: seed.syncKeyBytes)
    }

    /// The recovery peer's X25519 key-agreement key for `zone`, derived from RK: every zone key
    /// is shared with it (it is in the roster), so the recovery key opens the newest zone key
    /// even after keys rolled.
    public func recoveryAgreementKey(zone: ZoneID) throws -> Curve25519.KeyAgreement.PrivateKey {
        let seed = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: zone.uuid.syncBytes,
            info: Data("kcsync-recovery-peer-agreement-v1".utf8), outputByteCount: 32)
        return try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: seed.syncKeyBytes)
    }

    /// The recovery peer's device identity in `zone` (derived from the zone alone: every member
    /// recognises it).
    public static func peerDeviceID(zone: ZoneID) -> DeviceID {
        DeviceID(ZoneKeys.derivedKeyID("kcsync-recovery-peer-id-v1", zone: zone, epoch: 0))
    }

    /// The name the recovery peer has in the roster.
    public static let peerName = "recovery key"

    /// The recovery peer's roster card for `zone`: a member whose keys only RK derives.
    public func peerCard(zone: ZoneID, addedAt: Date = Date()) throws -> DeviceCard {
        DeviceCard(
            id: Self.peerDeviceID(zone: zone), name: Self.peerName,
            signingKey: try recoverySigningKey(zone: zone).publicKey,
            agreementKey: try recoveryAgreementKey(zone: zone).publicKey, addedAt: addedAt)
    }

    private func escrowKey(zone: ZoneID) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: zone.uuid.syncBytes, info: Data("kcsync-escrow-v1".utf8),
            outputByteCount: 32)
    }

    private static func escrowAD(zone: ZoneID, epoch: Int64) -> Data {
        var writer = SyncWriter(prefix: "kcsync-escrow-v1")
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        return writer.data
    }

    /// Never the key.
    public var description: String { "RecoveryKey(…)" }

    /// Never the key.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
