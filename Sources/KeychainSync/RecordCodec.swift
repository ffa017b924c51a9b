import Crypto
import CryptoExtras
import Foundation

/// The clear header of a record blob: what the server sees, and the authenticated data of both
/// of the blob's ciphertexts (docs/sync.md, "Cryptography": the record header).
///
/// Layout, 74 bytes, integers big-endian:
///
///     offset  size  field
///          0     1  version (1)
///          1    16  zone id
///         17    16  record id
///         33    16  key id (the class key the data key is wrapped under)
///         49     1  flags: bit 0 = tombstone; the other bits are zero
///         50     8  hybrid logical clock (48-bit milliseconds ‖ 16-bit counter)
///         58    16  author device id
public struct RecordHeader: Equatable, Sendable {
    /// The only version written and read.
    public static let currentVersion: UInt8 = 1
    /// The encoded length.
    public static let encodedLength = 74

    /// The layout version.
    public var version: UInt8
    /// The zone the record belongs to.
    public var zone: ZoneID
    /// The record's identity.
    public var recordID: RecordID
    /// The class key the data key is wrapped under.
    public var keyID: UUID
    /// Whether this version is a deletion.
    public var tombstone: Bool
    /// When (in causal order) this version was written.
    public var hlc: HybridLogicalClock
    /// The device that wrote it.
    public var author: DeviceID

    /// Creates a header of the current version.
    public init(
        zone: ZoneID, recordID: RecordID, keyID: UUID, tombstone: Bool, hlc: HybridLogicalClock, author: DeviceID
    ) {
        self.version = Self.currentVersion
        self.zone = zone
        self.recordID = recordID
        self.keyID = keyID
        self.tombstone = tombstone
        self.hlc = hlc
        self.author = author
    }

    /// The 74 bytes.
    public var encoded: Data {
        var writer = SyncWriter()
        writer.u8(version)
        writer.uuid(zone.uuid)
        writer.raw(recordID.bytes)
        writer.uuid(keyID)
        writer.u8(tombstone ? 1 : 0)
        writer.u64(hlc.rawValue)
        writer.uuid(author.uuid)
        return writer.data
    }

    /// Parses the first 74 bytes of `reader`.
    init(reading reader: inout SyncReader) throws {
        version = try reader.u8()
        guard version == Self.currentVersion else {
            throw SyncError(.malformed, "record version \(version) is not supported")
        }
        zone = ZoneID(try reader.uuid())
        guard let id = RecordID(try reader.raw(RecordID.length)) else { preconditionFailure("16 bytes read") }
        recordID = id
        keyID = try reader.uuid()
        let flags = try reader.u8()
        guard flags & ~1 == 0 else { throw SyncError(.malformed, "record flags \(flags) are not defined") }
        tombstone = flags == 1
        hlc = HybridLogicalClock(rawValue: try reader.u64())
        author = DeviceID(try reader.uuid())
    }
}

/// Seals item versions into record blobs and opens them (docs/sync.md, "Cryptography").
///
/// Blob layout:
///
///     header (74, see RecordHeader)
///     wrapped data key (60): nonce (12) ‖ ciphertext (32) ‖ tag (16)
///         AES-256-GCM-SIV under the class key, authenticated data = the header bytes
///     payload: nonce (12) ‖ ciphertext (padded length) ‖ tag (16)
///         AES-256-GCM under a fresh random single-use data key, authenticated data = the header bytes
///
/// The payload is padded before sealing: a 0x80 byte, then zeros, to 256 bytes, then to the next
/// power of two up to 4 KiB, then to the next multiple of 4 KiB (the marker counts).
public enum RecordCodec {
    static let wrappedDataKeyLength = 12 + 32 + 16
    static let sealedOverhead = 12 + 16

    /// Seals `payload` as the version of a record that `header` describes.
    ///
    /// - Parameter classKey: the class key named by `header.keyID`.
    public static func seal(payload: Data, header: RecordHeader, classKey: SymmetricKey) throws -> Data {
        let ad = header.encoded
        let dataKey = SymmetricKey(size: .bits256)
        let wrapped = try AES.GCM._SIV.seal(
            dataKey.syncKeyBytes, using: classKey, nonce: AES.GCM._SIV.Nonce(), authenticating: ad)
        let sealed = try AES.GCM.seal(pad(payload), using: dataKey, nonce: AES.GCM.Nonce(), authenticating: ad)
        guard let combined = sealed.combined else {
            preconditionFailure("AES-GCM with a 12-byte nonce has a combined form")
        }
        var writer = SyncWriter()
        writer.raw(ad)
        writer.raw(wrapped.combined)
        writer.raw(combined)
        return writer.data
    }

    /// The blob's header, unauthenticated: for ordering decisions before the keys are at hand.
    /// Nothing in it may be trusted until ``open(_:zone:classKeys:)`` succeeds.
    ///
    /// - Throws: `.malformed` if the blob is too short or of an unknown version.
    public static func header(of blob: Data) throws -> RecordHeader {
        var reader = SyncReader(blob, what: "record blob")
        return try RecordHeader(reading: &reader)
    }

    /// A record's header, checked against its row and `zone` but not authenticated: what a
    /// device can check of a record it cannot open yet (its class key is locked away). Nothing
    /// in it may be trusted beyond that until ``open(_:zone:classKeys:)`` succeeds.
    ///
    /// - Throws: `.tampered` if the header's zone, record id, key id or tombstone flag disagrees
    ///   with the row or `zone`; `.malformed` if it cannot be parsed.
    public static func header(of record: ServerRecord, zone: ZoneID) throws -> RecordHeader {
        let header = try header(of: record.blob)
        try check(header, of: record, zone: zone)
        return header
    }

    private static func check(_ header: RecordHeader, of record: ServerRecord, zone: ZoneID) throws {
        guard header.zone == zone, header.recordID == record.recordID, header.keyID == record.keyID,
            header.tombstone == record.tombstone
        else { throw SyncError(.tampered, "record \(record.recordID)'s header disagrees with its row") }
    }

    /// Opens a record: checks its header against the row and the zone, then authenticates and
    /// decrypts it and strips the padding.
    ///
    /// - Parameters:
    ///   - record: the row as the server returned it.
    ///   - zone: the zone it was pulled from.
    ///   - classKeys: the class keys held, by identity.
    /// - Throws: `.tampered` if the header's zone, record id, key id or tombstone flag disagrees
    ///   with the row or `zone`, or the blob fails authentication; `.unknownKey` if the blob's
    ///   class key is not in `classKeys`; `.malformed` if it cannot be parsed.
    public static func open(_ record: ServerRecord, zone: ZoneID, classKeys: [UUID: SymmetricKey]) throws
        -> (header: RecordHeader, payload: Data)
    {
        var reader = SyncReader(record.blob, what: "record blob")
        let header = try RecordHeader(reading: &reader)
        try check(header, of: record, zone: zone)
        guard let classKey = classKeys[header.keyID] else {
            throw SyncError(
                .unknownKey,
                "record \(record.recordID) is sealed under unknown key \(header.keyID.uuidString.lowercased())")
        }
        guard reader.remaining >= wrappedDataKeyLength + sealedOverhead else {
            throw SyncError(.tampered, "record \(record.recordID) is truncated")
        }
        let ad = header.encoded
        let wrapped = try reader.raw(wrappedDataKeyLength)
        let sealed = try reader.raw(reader.remaining)
        let padded: Data
        do {
            let dataKey = try AES.GCM._SIV.open(
                AES.GCM._SIV.SealedBox(combined: wrapped), using: classKey, authenticating: ad)
            padded = try AES.GCM.open(
                AES.GCM.SealedBox(combined: sealed), using: SymmetricKey(data: dataKey), authenticating: ad)
        } catch {
            throw SyncError(.tampered, "record \(record.recordID) fails authentication")
        }
        return (header, try unpad(padded))
    }

    /// SHA-256 of a blob (what the state digest covers).
    public static func blobHash(_ blob: Data) -> Data { Data(SHA256.hash(data: blob)) }

    // MARK: Padding

    /// The padded length of a payload of `count` bytes (the 0x80 marker included).
    static func paddedLength(_ count: Int) -> Int {
        let needed = count + 1
        if needed <= 256 { return 256 }
        if needed <= 4096 {
            var size = 512
            while size < needed { size *= 2 }
            return size
        }
        return (needed + 4095) / 4096 * 4096
    }

    static func pad(_ payload: Data) -> Data {
        var padded = Data(payload)
        padded.append(0x80)
        padded.append(Data(count: paddedLength(payload.count) - padded.count))
        return padded
    }

    static func unpad(_ padded: Data) throws -> Data {
        guard let marker = padded.lastIndex(where: { $0 != 0 }), padded[marker] == 0x80 else {
            throw SyncError(.malformed, "record padding has no marker")
        }
        let payload = Data(padded[padded.startIndex..<marker])
        guard paddedLength(payload.count) == padded.count else {
            throw SyncError(.malformed, "record padding has the wrong length")
        }
        return payload
    }
}
