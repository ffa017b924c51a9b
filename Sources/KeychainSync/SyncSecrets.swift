import Crypto
import Foundation
import KeychainCore

/// What a device keeps secret about its zone: its own keys, its server login and the zone's
/// keys. Kept sealed in the keychain file (``KeychainDatabase/sealSyncSecret(_:name:)``); never
/// written anywhere in the clear, never in a `description`.
struct SyncSecrets: Codable, Sendable, CustomStringConvertible {
    /// The device's Ed25519 signing key (raw representation).
    var signingKey: Data
    /// The device's X25519 key-agreement key (raw representation).
    var agreementKey: Data
    /// The device's server login password.
    var password: String
    /// Zone keys by epoch (the newest opens the older through the server's key rows too).
    var zoneKeys: [Int64: Data]
    /// The record-ID key.
    var recordIDKey: Data
    /// Class keys by key id, with the class each belongs to.
    var classKeys: [UUID: StoredClassKey]
    /// The invitations this device made and has not seen used (each code holds its one-time
    /// secret, which authenticates the joining device's request).
    var invitations: [StoredInvitation] = []

    struct StoredInvitation: Codable, Sendable {
        var code: String
        var expires: Date
    }

    struct StoredClassKey: Codable, Sendable {
        var keyClass: String
        var epoch: Int64
        var key: Data
    }

    var description: String { "SyncSecrets(epochs: \(zoneKeys.keys.sorted()), class keys: \(classKeys.count))" }

    static let name = "sync.secrets"

    /// Opens the sealed secrets (a locked keychain refuses, every time) and decodes them, or
    /// reuses what `decoded` decoded from the same bytes.
    static func load(_ keychain: KeychainDatabase, sealed: Data, reusing decoded: DecodedValues? = nil) throws
        -> SyncSecrets
    {
        try DecodedValues.decode(
            SyncSecrets.self, from: try keychain.openSyncSecret(sealed, name: name), reusing: decoded)
    }

    func sealed(by keychain: KeychainDatabase) throws -> Data {
        try keychain.sealSyncSecret(try JSONEncoder().encode(self), name: Self.name)
    }

    func sealed(in transaction: SyncTransaction) throws -> Data {
        try transaction.sealSyncSecret(try JSONEncoder().encode(self), name: Self.name)
    }

    var signing: Curve25519.Signing.PrivateKey {
        get throws { try Curve25519.Signing.PrivateKey(rawRepresentation: signingKey) }
    }

    var agreement: Curve25519.KeyAgreement.PrivateKey {
        get throws { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: agreementKey) }
    }

    /// The current zone keys (the newest epoch).
    func currentZoneKeys() throws -> ZoneKeys {
        guard let epoch = zoneKeys.keys.max(), let zoneKey = zoneKeys[epoch] else {
            throw SyncError(.notEnrolled, "this device holds no zone key")
        }
        var classes: [KeyClass: ClassKey] = [:]
        for (id, stored) in classKeys where stored.epoch == epoch {
            guard let keyClass = KeyClass(rawValue: stored.keyClass) else { continue }
            classes[keyClass] = ClassKey(id: id, key: SymmetricKey(data: stored.key))
        }
        return ZoneKeys(
            epoch: epoch, zoneKey: SymmetricKey(data: zoneKey), recordIDKey: SymmetricKey(data: recordIDKey),
            classKeys: classes)
    }

    /// Every class key this device holds, by id (older epochs' too, so older records open).
    var classKeysByID: [UUID: SymmetricKey] { classKeys.mapValues { SymmetricKey(data: $0.key) } }

    /// The ids of the when-unlocked (class A) keys of every epoch: records sealed under them are
    /// not opened while the keychain is locked.
    var whenUnlockedKeyIDs: Set<UUID> {
        Set(classKeys.filter { $0.value.keyClass == KeyClass.a.rawValue }.keys)
    }

    /// Adds a zone epoch's keys.
    mutating func install(_ keys: ZoneKeys) {
        zoneKeys[keys.epoch] = keys.zoneKey.syncKeyBytes
        recordIDKey = keys.recordIDKey.syncKeyBytes
        for (keyClass, classKey) in keys.classKeys {
            classKeys[classKey.id] = StoredClassKey(
                keyClass: keyClass.rawValue, epoch: keys.epoch, key: classKey.key.syncKeyBytes)
        }
    }
}
