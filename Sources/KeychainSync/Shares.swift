import Crypto
import Foundation

/// Zone key shares: one epoch's zone key sealed to one device with HPKE and signed by the
/// device that sponsors it (docs/sync.md, "Cryptography" and "Machines").
///
/// HPKE base mode, suite X25519 / HKDF-SHA256 / AES-256-GCM (RFC 9180 ids 0x0020, 0x0001,
/// 0x0002), info = "kcsync-share-v1" ‖ zone (16) ‖ epoch (8) ‖ recipient (16) ‖ sponsor (16).
///
/// Blob layout:
///
///     version (1) ‖ sponsor (16) ‖ encapsulated key length (2) ‖ encapsulated key (32) ‖
///     ciphertext length (4) ‖ ciphertext (32 + 16) ‖ signature (64)
///
/// The Ed25519 signature by the sponsor covers "kcsync-share-sig-v1" ‖ zone ‖ epoch ‖ recipient ‖
/// every byte of the blob before it. HPKE's auth mode would convince only the recipient; the
/// signature lets any member check who vouched for whom.
public enum ZoneKeyShare {
    static let version: UInt8 = 1

    /// The HPKE suite: X25519, HKDF-SHA256, AES-256-GCM (swift-crypto has no predefined one).
    public static let ciphersuite = HPKE.Ciphersuite(
        kem: .Curve25519_HKDF_SHA256, kdf: .HKDF_SHA256, aead: .AES_GCM_256)

    /// Seals `zoneKey` of `epoch` to `recipient`, signed by `sponsor`.
    public static func seal(
        zoneKey: SymmetricKey, epoch: Int64, zone: ZoneID, to recipient: DeviceCard, from sponsor: DeviceID,
        signingKey: Curve25519.Signing.PrivateKey
    ) throws -> ServerShare {
        let info = self.info(zone: zone, epoch: epoch, recipient: recipient.id, sponsor: sponsor)
        var sender = try HPKE.Sender(recipientKey: recipient.agreementKey, ciphersuite: ciphersuite, info: info)
        let ciphertext = try sender.seal(zoneKey.syncKeyBytes)
        var writer = SyncWriter()
        writer.u8(version)
        writer.uuid(sponsor.uuid)
        writer.u16(UInt16(sender.encapsulatedKey.count))
        writer.raw(sender.encapsulatedKey)
        writer.bytes(ciphertext)
        let signature = try signingKey.signature(
            for: signedMessage(zone: zone, epoch: epoch, recipient: recipient.id, body: writer.data))
        writer.raw(signature)
        return ServerShare(epoch: epoch, recipient: recipient.id, blob: writer.data)
    }

    /// Checks and opens a share sealed to this device.
    ///
    /// - Parameters:
    ///   - share: the share row.
    ///   - zone: the zone it belongs to.
    ///   - recipientKey: this device's agreement key.
    ///   - recipient: this device.
    ///   - sponsorKey: the signing key of a device trusted to sponsor shares, or `nil`.
    /// - Throws: `.tampered` if the share is for another device, its sponsor is not trusted, or
    ///   its signature or seal fails; `.malformed` if unparseable.
    public static func open(
        _ share: ServerShare, zone: ZoneID, recipientKey: Curve25519.KeyAgreement.PrivateKey, recipient: DeviceID,
        sponsorKey: (DeviceID) -> Curve25519.Signing.PublicKey?
    ) throws -> (zoneKey: SymmetricKey, sponsor: DeviceID) {
        guard share.recipient == recipient else {
            throw SyncError(.tampered, "share \(share.epoch) is for another device")
        }
        var reader = SyncReader(share.blob, what: "share")
        guard try reader.u8() == version else { throw SyncError(.malformed, "share version is not supported") }
        let sponsor = DeviceID(try reader.uuid())
        let encapsulatedKey = try reader.raw(Int(try reader.u16()))
        let ciphertext = try reader.bytes(limit: 1024)
        let bodyLength = reader.position
        let signature = try reader.raw(64)
        try reader.finish()
        guard let key = sponsorKey(sponsor) else {
            throw SyncError(.tampered, "share \(share.epoch) is sponsored by untrusted \(sponsor)")
        }
        let message = signedMessage(
            zone: zone, epoch: share.epoch, recipient: recipient, body: share.blob.prefix(bodyLength))
        guard key.isValidSignature(signature, for: message) else {
            throw SyncError(.tampered, "share \(share.epoch) has a bad signature")
        }
        let plain: Data
        do {
            var receiver = try HPKE.Recipient(
                privateKey: recipientKey, ciphersuite: ciphersuite,
                info: info(zone: zone, epoch: share.epoch, recipient: recipient, sponsor: sponsor),
                encapsulatedKey: encapsulatedKey)
            plain = try receiver.open(ciphertext)
        } catch {
            throw SyncError(.tampered, "share \(share.epoch) does not open with this device's key")
        }
        return (try symmetricKey256(plain, what: "a shared zone key"), sponsor)
    }

    /// The zone key and sponsor of a share, its signature not checked yet: recovery learns the
    /// sponsor's key from the roster this zone key opens, then checks the share with
    /// ``open(_:zone:recipientKey:recipient:sponsorKey:)``.
    static func openUnverified(
        _ share: ServerShare, zone: ZoneID, recipientKey: Curve25519.KeyAgreement.PrivateKey, recipient: DeviceID
    ) throws -> (zoneKey: SymmetricKey, sponsor: DeviceID) {
        var reader = SyncReader(share.blob, what: "share")
        guard try reader.u8() == version else { throw SyncError(.malformed, "share version is not supported") }
        let sponsor = DeviceID(try reader.uuid())
        let encapsulatedKey = try reader.raw(Int(try reader.u16()))
        let ciphertext = try reader.bytes(limit: 1024)
        let plain: Data
        do {
            var receiver = try HPKE.Recipient(
                privateKey: recipientKey, ciphersuite: ciphersuite,
                info: info(zone: zone, epoch: share.epoch, recipient: recipient, sponsor: sponsor),
                encapsulatedKey: encapsulatedKey)
            plain = try receiver.open(ciphertext)
        } catch {
            throw SyncError(.tampered, "share \(share.epoch) does not open with this device's key")
        }
        return (try symmetricKey256(plain, what: "a shared zone key"), sponsor)
    }

    static func info(zone: ZoneID, epoch: Int64, recipient: DeviceID, sponsor: DeviceID) -> Data {
        var writer = SyncWriter(prefix: "kcsync-share-v1")
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        writer.uuid(recipient.uuid)
        writer.uuid(sponsor.uuid)
        return writer.data
    }

    static func signedMessage<D: DataProtocol>(zone: ZoneID, epoch: Int64, recipient: DeviceID, body: D) -> Data {
        var writer = SyncWriter(prefix: "kcsync-share-sig-v1")
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        writer.uuid(recipient.uuid)
        writer.raw(body)
        return writer.data
    }
}
