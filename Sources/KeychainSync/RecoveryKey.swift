import Crypto
import Foundation

/// The recovery key RK (docs/sync.md, "Cryptography" and "Machines"): 128 random bits, shown once
/// to the user as 26 base32 characters, that open the zone's escrow when every device is lost.
///
/// Display form: RFC 4648 base32 (A–Z, 2–7) in dash-separated groups of 4, the last group of 2
/// ("ABCD-EFGH-…-XY"); the last character's two low bits are zero. Parsing ignores dashes,
/// spaces and case.
///
/// ## Escrow blob
///
///     version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16)
///
/// AES-256-GCM under HKDF-SHA256(RK, salt: zone, info: "kcsync-escrow-v1"), authenticated data
/// "kcsync-escrow-v1" ‖ zone (16) ‖ epoch (8).
public struct RecoveryKey: Sendable, CustomStringConvertible, CustomReflectable {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    static let characterCount = 26
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
        let characters = text.uppercased().filter { $0 != "-" && !$0.isWhitespace }
        guard characters.count == Self.characterCount else {
            throw SyncError(.malformed, "a recovery key has \(Self.characterCount) characters")
        }
        var accumulator: UInt32 = 0
        var bits = 0
        var bytes = Data()
        for character in characters {
            guard let value = Self.alphabet.firstIndex(of: character) else {
                throw SyncError(.malformed, "a recovery key has only letters and the digits 2 to 7")
            }
            accumulator = (accumulator << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        guard bytes.count == 16, accumulator == 0 else { throw SyncError(.malformed, "the recovery key is mistyped") }
        self.bytes = bytes
    }

    /// The 26 characters, undecorated.
    var characters: String {
        var result = ""
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                result.append(Self.alphabet[Int((accumulator >> UInt32(bits)) & 31)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { result.append(Self.alphabet[Int((accumulator << UInt32(5 - bits)) & 31)]) }
        return result
    }

    /// The key for showing once: groups of 4 characters separated by dashes.
    public var displayString: String {
        let all = Array(characters)
        return stride(from: 0, to: all.count, by: 4).map { String(all[$0..<min($0 + 4, all.count)]) }.joined(
            separator: "-")
    }

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
