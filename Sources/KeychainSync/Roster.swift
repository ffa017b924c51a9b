import Crypto
import CryptoExtras
import Foundation

/// A device as the roster lists it: its identity, public keys and name.
///
/// Encoding (inside a sealed roster or join request), integers big-endian:
///
///     id (16) ‖ Ed25519 signing key (32) ‖ X25519 agreement key (32) ‖
///     added at (8, milliseconds since 1970) ‖ name length (4) ‖ name (UTF-8, at most 1 KiB)
public struct DeviceCard: Equatable, Sendable {
    static let maximumNameLength = 1024

    /// The device.
    public var id: DeviceID
    /// The device's name, as its owner chose it (sealed: the server never sees it).
    public var name: String
    /// The key that signs the device's heads, rosters and shares.
    public var signingKey: Curve25519.Signing.PublicKey
    /// The key shares are sealed to.
    public var agreementKey: Curve25519.KeyAgreement.PublicKey
    /// When it joined (kept to the millisecond).
    public var addedAt: Date

    /// Creates a card; `addedAt` is rounded to the millisecond (as it is encoded).
    public init(
        id: DeviceID, name: String, signingKey: Curve25519.Signing.PublicKey,
        agreementKey: Curve25519.KeyAgreement.PublicKey, addedAt: Date
    ) {
        self.id = id
        self.name = name
        self.signingKey = signingKey
        self.agreementKey = agreementKey
        self.addedAt = Date(timeIntervalSince1970: Double(Self.milliseconds(addedAt)) / 1000)
    }

    /// The signing key's fingerprint for a person to compare: the first 16 bytes of SHA-256 of
    /// its raw bytes, as lowercase hex in dash-separated groups of 4 ("ab12-cd34-…", 8 groups).
    public var fingerprint: String { Self.fingerprint(of: signingKey) }

    /// The fingerprint of a signing key (see ``fingerprint``).
    public static func fingerprint(of key: Curve25519.Signing.PublicKey) -> String {
        let hex = Array(Data(SHA256.hash(data: key.rawRepresentation).prefix(16)).syncHex)
        return stride(from: 0, to: hex.count, by: 4).map { String(hex[$0..<$0 + 4]) }.joined(separator: "-")
    }

    /// Same device, keys, name and date.
    public static func == (lhs: DeviceCard, rhs: DeviceCard) -> Bool {
        lhs.id == rhs.id && lhs.name == rhs.name && lhs.signingKey.rawRepresentation == rhs.signingKey.rawRepresentation
            && lhs.agreementKey.rawRepresentation == rhs.agreementKey.rawRepresentation && lhs.addedAt == rhs.addedAt
    }

    func write(to writer: inout SyncWriter) {
        writer.uuid(id.uuid)
        writer.raw(signingKey.rawRepresentation)
        writer.raw(agreementKey.rawRepresentation)
        writer.i64(Self.milliseconds(addedAt))
        writer.string(name)
    }

    init(reading reader: inout SyncReader) throws {
        id = DeviceID(try reader.uuid())
        do {
            signingKey = try Curve25519.Signing.PublicKey(rawRepresentation: try reader.raw(32))
            agreementKey = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: try reader.raw(32))
        } catch let error as SyncError {
            throw error
        } catch {
            throw SyncError(.malformed, "device card has an invalid public key")
        }
        addedAt = Date(timeIntervalSince1970: Double(try reader.i64()) / 1000)
        name = try reader.string(limit: Self.maximumNameLength)
    }

    /// The card's encoding.
    var encoded: Data {
        var writer = SyncWriter()
        write(to: &writer)
        return writer.data
    }

    private static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}

/// Who is in a zone at one roster epoch, and who signed that list.
///
/// ## Sealed form
/// The roster is encoded as
///
///     version (1) ‖ zone (16) ‖ epoch (8) ‖ signer (16) ‖ count (4) ‖ count × DeviceCard
///
/// sealed with AES-256-GCM-SIV under the zone key (random nonce; authenticated data
/// "kcsync-roster-v1" ‖ zone ‖ epoch ‖ signer), and signed with Ed25519 by the signer over
/// "kcsync-roster-sig-v1" ‖ zone ‖ epoch ‖ signer ‖ sealed box. The blob is
///
///     version (1) ‖ signer (16) ‖ sealed length (4) ‖ nonce (12) ‖ ciphertext ‖ tag (16) ‖ signature (64)
public struct Roster: Equatable, Sendable {
    static let version: UInt8 = 1
    static let maximumDevices = 10_000

    /// The zone.
    public var zone: ZoneID
    /// The roster epoch.
    public var epoch: Int64
    /// The members.
    public var devices: [DeviceCard]
    /// The device that signs this roster.
    public var signer: DeviceID

    /// Creates a roster.
    public init(zone: ZoneID, epoch: Int64, devices: [DeviceCard], signer: DeviceID) {
        self.zone = zone
        self.epoch = epoch
        self.devices = devices
        self.signer = signer
    }

    /// The member `id`, if it is one.
    public func device(_ id: DeviceID) -> DeviceCard? { devices.first { $0.id == id } }

    /// The members' signing keys (what ``SignedHead/verifyChain(from:heads:signers:)`` takes).
    public var signers: [DeviceID: Curve25519.Signing.PublicKey] {
        Dictionary(devices.map { ($0.id, $0.signingKey) }, uniquingKeysWith: { first, _ in first })
    }

    /// Seals and signs the roster.
    ///
    /// - Parameters:
    ///   - zoneKey: the zone key the members hold.
    ///   - signingKey: ``signer``'s signing key.
    public func seal(zoneKey: SymmetricKey, signingKey: Curve25519.Signing.PrivateKey) throws -> Data {
        let box = try AES.GCM._SIV.seal(
            plaintext, using: zoneKey, nonce: AES.GCM._SIV.Nonce(),
            authenticating: Self.authenticatedData(zone: zone, epoch: epoch, signer: signer))
        let signature = try signingKey.signature(
            for: Self.signedMessage(zone: zone, epoch: epoch, signer: signer, box: box.combined))
        var writer = SyncWriter()
        writer.u8(Self.version)
        writer.uuid(signer.uuid)
        writer.bytes(box.combined)
        writer.raw(signature)
        return writer.data
    }

    /// Checks and opens a sealed roster.
    ///
    /// - Parameters:
    ///   - blob: the sealed roster.
    ///   - zone: the zone it should belong to.
    ///   - epoch: the epoch it should be.
    ///   - zoneKey: the zone key.
    ///   - trusting: the signing key of a device trusted to sign this roster (a member of the
    ///     previous roster, or the invitation's anchor), or `nil`.
    /// - Throws: `.tampered` if the signer is not trusted, the signature or the seal fails, or
    ///   the sealed zone, epoch or signer are not the expected ones; `.malformed` if unparseable.
    public static func open(
        _ blob: Data, zone: ZoneID, epoch: Int64, zoneKey: SymmetricKey,
        trusting: (DeviceID) -> Curve25519.Signing.PublicKey?
    ) throws -> Roster {
        var reader = SyncReader(blob, what: "roster")
        guard try reader.u8() == version else { throw SyncError(.malformed, "roster version is not supported") }
        let signer = DeviceID(try reader.uuid())
        let sealed = try reader.bytes()
        let signature = try reader.raw(64)
        try reader.finish()
        guard let key = trusting(signer) else {
            throw SyncError(.tampered, "roster \(epoch) is signed by untrusted \(signer)")
        }
        guard key.isValidSignature(signature, for: signedMessage(zone: zone, epoch: epoch, signer: signer, box: sealed))
        else {
            throw SyncError(.tampered, "roster \(epoch) has a bad signature")
        }
        let plain: Data
        do {
            let box = try AES.GCM._SIV.SealedBox(combined: sealed)
            plain = try AES.GCM._SIV.open(
                box, using: zoneKey, authenticating: authenticatedData(zone: zone, epoch: epoch, signer: signer))
        } catch {
            throw SyncError(.tampered, "roster \(epoch) does not open under the zone key")
        }
        let roster = try decode(plain)
        guard roster.zone == zone, roster.epoch == epoch, roster.signer == signer else {
            throw SyncError(.tampered, "roster \(epoch) is not the expected zone, epoch or signer")
        }
        return roster
    }

    /// Opens a sealed roster with the zone key as the only anchor (recovery, where the recovery
    /// key's share gave the zone key and no member is known yet): the seal shows it was written
    /// by a holder of the zone key, and the signature is checked against the signer's own card
    /// in it.
    ///
    /// - Throws: as ``open(_:zone:epoch:zoneKey:trusting:)``; `.tampered` also when the signer
    ///   is not in the roster it signed.
    static func open(_ blob: Data, zone: ZoneID, epoch: Int64, zoneKey: SymmetricKey) throws -> Roster {
        var reader = SyncReader(blob, what: "roster")
        guard try reader.u8() == version else { throw SyncError(.malformed, "roster version is not supported") }
        let signer = DeviceID(try reader.uuid())
        let sealed = try reader.bytes()
        let plain: Data
        do {
            plain = try AES.GCM._SIV.open(
                try AES.GCM._SIV.SealedBox(combined: sealed), using: zoneKey,
                authenticating: authenticatedData(zone: zone, epoch: epoch, signer: signer))
        } catch {
            throw SyncError(.tampered, "roster \(epoch) does not open under the zone key")
        }
        let unverified = try decode(plain)
        return try open(blob, zone: zone, epoch: epoch, zoneKey: zoneKey) { unverified.device($0)?.signingKey }
    }

    var plaintext: Data {
        var writer = SyncWriter()
        writer.u8(Self.version)
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        writer.uuid(signer.uuid)
        writer.u32(UInt32(devices.count))
        for device in devices { device.write(to: &writer) }
        return writer.data
    }

    static func decode(_ plain: Data) throws -> Roster {
        var reader = SyncReader(plain, what: "roster")
        guard try reader.u8() == version else { throw SyncError(.malformed, "roster version is not supported") }
        let zone = ZoneID(try reader.uuid())
        let epoch = try reader.i64()
        let signer = DeviceID(try reader.uuid())
        let count = Int(try reader.u32())
        guard count <= maximumDevices else { throw SyncError(.malformed, "roster lists too many devices") }
        var devices: [DeviceCard] = []
        for _ in 0..<count { devices.append(try DeviceCard(reading: &reader)) }
        try reader.finish()
        return Roster(zone: zone, epoch: epoch, devices: devices, signer: signer)
    }

    static func authenticatedData(zone: ZoneID, epoch: Int64, signer: DeviceID) -> Data {
        var writer = SyncWriter(prefix: "kcsync-roster-v1")
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        writer.uuid(signer.uuid)
        return writer.data
    }

    static func signedMessage(zone: ZoneID, epoch: Int64, signer: DeviceID, box: Data) -> Data {
        var writer = SyncWriter(prefix: "kcsync-roster-sig-v1")
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        writer.uuid(signer.uuid)
        writer.raw(box)
        return writer.data
    }
}
