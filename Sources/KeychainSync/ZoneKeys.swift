import Crypto
import CryptoExtras
import Foundation

/// The class of protection a synced item's data key is wrapped under.
///
/// Items readable only while the keychain is unlocked (Apple accessibility `ak`, `aku`) use
/// class A; every other synchronizable item uses class C.
public enum KeyClass: String, Sendable, CaseIterable {
    /// While unlocked (`ak`, `aku`).
    case a
    /// After first unlock and always (`ck`, `cku`, `dk`, `dku`, …).
    case c

    /// The class for an item of Apple accessibility `accessibility` (`pdmn`: "ak", "ck", …).
    public init(accessibility: String) {
        self = (accessibility == "ak" || accessibility == "aku") ? .a : .c
    }
}

/// A class key: the key that data keys of one class are wrapped under, and its identity (the
/// `key_id` of the records sealed under it).
public struct ClassKey: Sendable, CustomStringConvertible {
    /// The key's identity (visible to the server).
    public let id: UUID
    /// The 256-bit key.
    public let key: SymmetricKey

    /// Wraps a key and its identity.
    public init(id: UUID, key: SymmetricKey) {
        self.id = id
        self.key = key
    }

    /// A fresh random class key.
    public static func generate() -> ClassKey { ClassKey(id: UUID(), key: SymmetricKey(size: .bits256)) }

    /// The identity only.
    public var description: String { "ClassKey(\(id.uuidString.lowercased()))" }
}

/// The key hierarchy of one epoch of a zone (docs/sync.md, "Cryptography").
///
/// - The zone key ZK wraps everything else of its epoch, and the previous epoch's ZK.
/// - The record-ID key KR keys the record identifiers. It is made once, at zone creation, and
///   re-wrapped under every new ZK, so record identifiers never change. Its row of each epoch has
///   the derived identity ``recordIDKeyRowID(zone:epoch:)``.
/// - The class keys KA and KC wrap the single-use data keys of records.
///
/// ## Key rows
/// Every wrapped key is one ``ServerKey``: `keyID` is the wrapped key's identity, `epoch` the
/// epoch of the ZK it is wrapped under, and `wrapped` is
///
///     version (1 byte, 1) ‖ nonce (12) ‖ ciphertext (32) ‖ tag (16)          61 bytes
///
/// sealed with AES-256-GCM-SIV under ZK with a random nonce. The authenticated data is
///
///     "kcsync-key-v1" ‖ zone (16) ‖ keyID (16) ‖ epoch (8, big-endian) ‖ role (1)
///
/// with role 1 = KR, 2 = KA, 3 = KC, 4 = the previous epoch's ZK. The role is not stored: the
/// reader finds it by which authenticated data opens the row, so the server does not learn
/// which key of the zone is which.
public struct ZoneKeys: Sendable, CustomStringConvertible {
    /// The zone key epoch.
    public let epoch: Int64
    /// ZK, 256-bit.
    public let zoneKey: SymmetricKey
    /// KR, 256-bit.
    public let recordIDKey: SymmetricKey
    /// KA and KC.
    public let classKeys: [KeyClass: ClassKey]

    /// Assembles a hierarchy; `classKeys` must hold both classes.
    public init(
        epoch: Int64, zoneKey: SymmetricKey, recordIDKey: SymmetricKey, classKeys: [KeyClass: ClassKey]
    ) {
        self.epoch = epoch
        self.zoneKey = zoneKey
        self.recordIDKey = recordIDKey
        self.classKeys = classKeys
    }

    /// A new zone's keys: every key fresh and random.
    public static func generate(epoch: Int64 = 1) -> ZoneKeys {
        ZoneKeys(
            epoch: epoch, zoneKey: SymmetricKey(size: .bits256),
            recordIDKey: SymmetricKey(size: .bits256), classKeys: freshClassKeys())
    }

    /// The next epoch's keys (rotation: docs/sync.md, "Machines", Remove): a new ZK and new class
    /// keys; KR unchanged.
    public func rotated() -> ZoneKeys {
        ZoneKeys(
            epoch: epoch + 1, zoneKey: SymmetricKey(size: .bits256),
            recordIDKey: recordIDKey, classKeys: Self.freshClassKeys())
    }

    /// The class key of `keyClass`.
    public func classKey(_ keyClass: KeyClass) -> ClassKey {
        guard let key = classKeys[keyClass] else { preconditionFailure("ZoneKeys without a class \(keyClass) key") }
        return key
    }

    /// The class keys by identity, as ``RecordCodec/open(_:zone:classKeys:)`` takes them.
    public var classKeysByID: [UUID: SymmetricKey] {
        Dictionary(uniqueKeysWithValues: classKeys.values.map { ($0.id, $0.key) })
    }

    /// The identity of this epoch's ZK (derived from the zone and epoch; see ``zoneKeyID(zone:epoch:)``).
    public func zoneKeyID(zone: ZoneID) -> UUID { Self.zoneKeyID(zone: zone, epoch: epoch) }

    /// The identity of a zone's ZK of `epoch` (the `keyID` of the row that chains it from the
    /// next epoch): see ``derivedKeyID(_:zone:epoch:)``.
    public static func zoneKeyID(zone: ZoneID, epoch: Int64) -> UUID {
        derivedKeyID("kcsync-zone-key-id-v1", zone: zone, epoch: epoch)
    }

    /// The `keyID` of the row that wraps KR under the ZK of `epoch`: see ``derivedKeyID(_:zone:epoch:)``.
    /// KR never changes, but each epoch's row of it has its own identity, so every key row of a
    /// zone has a distinct `keyID`.
    public static func recordIDKeyRowID(zone: ZoneID, epoch: Int64) -> UUID {
        derivedKeyID("kcsync-record-id-key-row-v1", zone: zone, epoch: epoch)
    }

    /// The first 16 bytes of SHA-256(`label` ‖ zone ‖ epoch as 8 bytes big-endian), marked as an
    /// RFC 9562 version 8 UUID.
    static func derivedKeyID(_ label: String, zone: ZoneID, epoch: Int64) -> UUID {
        var writer = SyncWriter(prefix: label)
        writer.uuid(zone.uuid)
        writer.i64(epoch)
        var b = Array(SHA256.hash(data: writer.data).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x80
        b[8] = (b[8] & 0x3F) | 0x80
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// The epoch and key identities only.
    public var description: String {
        let classes = KeyClass.allCases.compactMap { c in
            classKeys[c].map { "\(c.rawValue): \($0.id.uuidString.lowercased())" }
        }
        return "ZoneKeys(epoch: \(epoch), \(classes.joined(separator: ", ")))"
    }

    private static func freshClassKeys() -> [KeyClass: ClassKey] {
        Dictionary(uniqueKeysWithValues: KeyClass.allCases.map { ($0, ClassKey.generate()) })
    }
}

// MARK: - Key rows

/// What a key row holds (bound in its authenticated data, never stored in the clear).
enum WrappedKeyRole: UInt8, CaseIterable {
    case recordID = 1
    case classA = 2
    case classC = 3
    case previousZoneKey = 4

    init(_ keyClass: KeyClass) { self = keyClass == .a ? .classA : .classC }
}

extension ZoneKeys {
    static let wrapVersion: UInt8 = 1
    static let wrappedLength = 1 + 12 + 32 + 16

    /// This epoch's key rows: KR, KA and KC, each wrapped under ZK.
    public func wrappedRows(zone: ZoneID) throws -> [ServerKey] {
        var rows = [
            try Self.wrap(
                recordIDKey, role: .recordID, keyID: Self.recordIDKeyRowID(zone: zone, epoch: epoch), zone: zone,
                epoch: epoch, under: zoneKey)
        ]
        for keyClass in KeyClass.allCases {
            let classKey = classKey(keyClass)
            rows.append(
                try Self.wrap(
                    classKey.key, role: WrappedKeyRole(keyClass), keyID: classKey.id, zone: zone, epoch: epoch,
                    under: zoneKey))
        }
        return rows
    }

    /// This epoch's key rows after a rotation: those of ``wrappedRows(zone:)`` and `previous`'s ZK
    /// wrapped under this ZK, so a device holding only the newest ZK can open older records.
    ///
    /// - Throws: `.malformed` unless `previous` is the epoch just before this one.
    public func wrappedRows(zone: ZoneID, previous: ZoneKeys) throws -> [ServerKey] {
        guard previous.epoch == epoch - 1 else {
            throw SyncError(.malformed, "epoch \(previous.epoch) does not precede epoch \(epoch)")
        }
        let chain = try Self.wrap(
            previous.zoneKey, role: .previousZoneKey, keyID: previous.zoneKeyID(zone: zone), zone: zone, epoch: epoch,
            under: zoneKey)
        return try wrappedRows(zone: zone) + [chain]
    }

    /// Opens the key rows of `epoch` (those whose `epoch` is it; others are ignored) with that
    /// epoch's ZK.
    ///
    /// - Throws: `.tampered` if a row of the epoch does not open under `zoneKey` (wrong key,
    ///   a row moved from another zone, epoch or key id, a flipped byte) or a role appears twice;
    ///   `.unknownKey` if KR, KA or KC is missing.
    public static func unwrap(rows: [ServerKey], zoneKey: SymmetricKey, epoch: Int64, zone: ZoneID) throws -> ZoneKeys {
        try unwrapEpoch(rows: rows, zoneKey: zoneKey, epoch: epoch, zone: zone).keys
    }

    /// The ZK of the epoch before `epoch`, from its chain row; `nil` when there is none (epoch 1).
    ///
    /// - Throws: as ``unwrap(rows:zoneKey:epoch:zone:)``.
    public static func previousZoneKey(rows: [ServerKey], zoneKey: SymmetricKey, epoch: Int64, zone: ZoneID) throws
        -> SymmetricKey?
    {
        try unwrapEpoch(rows: rows, zoneKey: zoneKey, epoch: epoch, zone: zone).previous
    }

    /// The keys of `epoch` and of every earlier epoch down to 1, following the chain of previous
    /// ZKs; keyed by epoch.
    ///
    /// - Throws: as ``unwrap(rows:zoneKey:epoch:zone:)``; `.unknownKey` if an epoch after the
    ///   first has no chain row.
    public static func unwrapChain(rows: [ServerKey], zoneKey: SymmetricKey, epoch: Int64, zone: ZoneID) throws
        -> [Int64: ZoneKeys]
    {
        var result: [Int64: ZoneKeys] = [:]
        var current = (key: zoneKey, epoch: epoch)
        while current.epoch >= 1 {
            let opened = try unwrapEpoch(rows: rows, zoneKey: current.key, epoch: current.epoch, zone: zone)
            result[current.epoch] = opened.keys
            guard current.epoch > 1 else { break }
            guard let previous = opened.previous else {
                throw SyncError(.unknownKey, "zone \(zone) epoch \(current.epoch) has no previous zone key row")
            }
            current = (previous, current.epoch - 1)
        }
        return result
    }

    private static func unwrapEpoch(rows: [ServerKey], zoneKey: SymmetricKey, epoch: Int64, zone: ZoneID) throws
        -> (keys: ZoneKeys, previous: SymmetricKey?)
    {
        var found: [WrappedKeyRole: (id: UUID, key: SymmetricKey)] = [:]
        for row in rows where row.epoch == epoch {
            let (role, key) = try unwrap(row, zone: zone, under: zoneKey)
            guard found[role] == nil else {
                throw SyncError(.tampered, "zone \(zone) epoch \(epoch) has two key rows of one role")
            }
            found[role] = (row.keyID, key)
        }
        guard let kr = found[.recordID], let ka = found[.classA], let kc = found[.classC] else {
            throw SyncError(.unknownKey, "zone \(zone) epoch \(epoch) lacks a key row")
        }
        if let previous = found[.previousZoneKey], previous.id != zoneKeyID(zone: zone, epoch: epoch - 1) {
            throw SyncError(.tampered, "zone \(zone) epoch \(epoch) chains to a key of another epoch")
        }
        guard kr.id == recordIDKeyRowID(zone: zone, epoch: epoch) else {
            throw SyncError(.tampered, "zone \(zone) epoch \(epoch) has a record-ID key row of another epoch")
        }
        let keys = ZoneKeys(
            epoch: epoch, zoneKey: zoneKey, recordIDKey: kr.key,
            classKeys: [.a: ClassKey(id: ka.id, key: ka.key), .c: ClassKey(id: kc.id, key: kc.key)])
        return (keys, found[.previousZoneKey]?.key)
    }

    static func wrapAD(role: WrappedKeyRole, keyID: UUID, zone: ZoneID, epoch: Int64) -> Data {
        var writer = SyncWriter(prefix: "kcsync-key-v1")
        writer.uuid(zone.uuid)
        writer.uuid(keyID)
        writer.i64(epoch)
        writer.u8(role.rawValue)
        return writer.data
    }

    static func wrap(
        _ key: SymmetricKey, role: WrappedKeyRole, keyID: UUID, zone: ZoneID, epoch: Int64, under zoneKey: SymmetricKey
    ) throws -> ServerKey {
        let ad = wrapAD(role: role, keyID: keyID, zone: zone, epoch: epoch)
        let box = try AES.GCM._SIV.seal(
            key.syncKeyBytes, using: zoneKey, nonce: AES.GCM._SIV.Nonce(), authenticating: ad)
        var writer = SyncWriter()
        writer.u8(wrapVersion)
        writer.raw(box.combined)
        return ServerKey(keyID: keyID, epoch: epoch, wrapped: writer.data)
    }

    /// Opens one row, trying each role's authenticated data.
    static func unwrap(_ row: ServerKey, zone: ZoneID, under zoneKey: SymmetricKey) throws -> (
        WrappedKeyRole, SymmetricKey
    ) {
        guard row.wrapped.count == wrappedLength, row.wrapped.first == wrapVersion else {
            throw SyncError(.tampered, "key row \(row.keyID.uuidString.lowercased()) has the wrong shape")
        }
        let box = try AES.GCM._SIV.SealedBox(combined: row.wrapped.dropFirst())
        for role in WrappedKeyRole.allCases {
            let ad = wrapAD(role: role, keyID: row.keyID, zone: zone, epoch: row.epoch)
            if let plain = try? AES.GCM._SIV.open(box, using: zoneKey, authenticating: ad) {
                return (role, try symmetricKey256(plain, what: "a wrapped key"))
            }
        }
        throw SyncError(
            .tampered,
            "key row \(row.keyID.uuidString.lowercased()) does not open under zone \(zone) epoch \(row.epoch)")
    }
}

// MARK: - Record identifiers

extension ZoneKeys {
    /// The record identifier of an item: HMAC-SHA256 under KR of the canonical encoding of its
    /// class and primary key, truncated to 16 bytes.
    ///
    /// The canonical encoding is the class, then the `(name, value)` pairs sorted by name (then
    /// value), each string and value as a big-endian `UInt32` length and its bytes (names as
    /// UTF-8). So the attributes' order does not matter, and no two distinct keys encode alike.
    ///
    /// - Parameters:
    ///   - itemClass: the item class (`genp`, `inet`, …).
    ///   - primaryKey: the primary-key attributes, values already encoded as bytes by the caller.
    public func recordID(itemClass: String, primaryKey: [(name: String, value: Data)]) -> RecordID {
        Self.recordID(key: recordIDKey, itemClass: itemClass, primaryKey: primaryKey)
    }

    static func recordID(key: SymmetricKey, itemClass: String, primaryKey: [(name: String, value: Data)]) -> RecordID {
        let pairs = primaryKey.map { (name: Array($0.name.utf8), value: Array($0.value)) }.sorted {
            $0.name != $1.name
                ? $0.name.lexicographicallyPrecedes($1.name) : $0.value.lexicographicallyPrecedes($1.value)
        }
        var writer = SyncWriter()
        writer.string(itemClass)
        for pair in pairs {
            writer.bytes(pair.name)
            writer.bytes(pair.value)
        }
        let mac = HMAC<SHA256>.authenticationCode(for: writer.data, using: key)
        guard let id = RecordID(Data(mac.prefix(RecordID.length))) else {
            preconditionFailure("HMAC-SHA256 shorter than 16 bytes")
        }
        return id
    }
}
