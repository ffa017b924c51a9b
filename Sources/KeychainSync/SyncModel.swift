import Foundation

// The values that cross between a device and the shared store. Everything here is what the
// server may see: opaque identifiers, ordering, sizes and sealed blobs. Secrets and attribute
// values only ever travel inside a blob sealed on the device (see `RecordCodec`).
//
// Design: docs/sync.md (a zone is a signed, fast-forward-only log; the server enforces
// fast-forward with a compare-and-swap on the zone head).

/// A zone: one linear, signed log of records (one per keychain account in personal sync).
public struct ZoneID: Hashable, Sendable, CustomStringConvertible {
    /// The zone's random identifier.
    public let uuid: UUID
    /// Wraps an identifier.
    public init(_ uuid: UUID) { self.uuid = uuid }
    /// A fresh random zone identifier.
    public static func random() -> ZoneID { ZoneID(UUID()) }
    /// The identifier in lowercase UUID form.
    public var description: String { uuid.uuidString.lowercased() }
}

/// A device (machine) enrolled in a zone.
public struct DeviceID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The device's random identifier.
    public let uuid: UUID
    /// Wraps an identifier.
    public init(_ uuid: UUID) { self.uuid = uuid }
    /// A fresh random device identifier.
    public static func random() -> DeviceID { DeviceID(UUID()) }
    /// The identifier in lowercase UUID form.
    public var description: String { uuid.uuidString.lowercased() }
    /// Orders devices by their identifier's bytes (the tie-break of equal clocks).
    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        withUnsafeBytes(of: lhs.uuid.uuid) { l in
            withUnsafeBytes(of: rhs.uuid.uuid) { r in l.lexicographicallyPrecedes(r) }
        }
    }
}

/// A record's server-side identity: a keyed hash of the item's class and primary key, so the
/// server's primary key is the cross-device uniqueness constraint and reveals nothing.
public struct RecordID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The identifier's length in bytes.
    public static let length = 16
    /// The 16 bytes.
    public let bytes: Data
    /// Wraps 16 bytes; `nil` for any other length.
    public init?(_ bytes: Data) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = Data(bytes)
    }
    /// Hex, for logs and the command line (it is already visible to the server).
    public var description: String { bytes.map { String(format: "%02x", $0) }.joined() }
    /// Byte order.
    public static func < (lhs: RecordID, rhs: RecordID) -> Bool {
        rhs.bytes.withUnsafeBytes { lhs.order(against: $0) } < 0
    }

    /// memcmp order of this id against 16 raw bytes (as SQLite orders BLOB keys): a state
    /// digest orders every live record id, and Data's generic comparison made that most of a
    /// commit's time at 1,000 records.
    func order(against bytes: UnsafeRawBufferPointer) -> Int32 {
        self.bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, Self.length) }
    }
}

/// A hybrid logical clock reading: milliseconds since 1970 in the high 48 bits, a counter in the
/// low 16. Each write is stamped past every reading the device has seen, so an edit made after
/// seeing another orders after it even when clocks disagree.
public struct HybridLogicalClock: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The packed value.
    public var rawValue: UInt64
    /// Wraps a packed value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// A reading at `milliseconds` with `counter`.
    public init(milliseconds: UInt64, counter: UInt16 = 0) {
        rawValue = (milliseconds << 16) | UInt64(counter)
    }
    /// The wall-clock part.
    public var milliseconds: UInt64 { rawValue >> 16 }
    /// The wall-clock part as a date.
    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    /// The reading for a clock at `now`.
    public static func wallClock(_ now: Date = Date()) -> HybridLogicalClock {
        HybridLogicalClock(milliseconds: UInt64(max(0, now.timeIntervalSince1970 * 1000)))
    }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The date and counter.
    public var description: String { "\(milliseconds).\(rawValue & 0xFFFF)" }
}

/// A record as the shared store keeps it: the blob is sealed on a device; the other fields are
/// copies of what the blob's authenticated header says, which a reader checks.
public struct ServerRecord: Sendable, Equatable {
    /// The record's identity.
    public var recordID: RecordID
    /// The commit (zone sequence number) that last wrote it; assigned by ``SyncServer/push(_:)``.
    public var seq: Int64
    /// The class key the blob's data key is wrapped under.
    public var keyID: UUID
    /// Whether the record is a deletion.
    public var tombstone: Bool
    /// The sealed record (see `RecordCodec`).
    public var blob: Data

    /// Creates a record.
    public init(recordID: RecordID, seq: Int64, keyID: UUID, tombstone: Bool, blob: Data) {
        self.recordID = recordID
        self.seq = seq
        self.keyID = keyID
        self.tombstone = tombstone
        self.blob = blob
    }
}

/// A wrapped key row: a class key, the record-ID key, or an older zone key, wrapped under a zone key.
public struct ServerKey: Sendable, Equatable {
    /// The key's identity.
    public var keyID: UUID
    /// The zone key epoch it is wrapped under.
    public var epoch: Int64
    /// The wrapped key (see `ZoneKeys`).
    public var wrapped: Data

    /// Creates a key row.
    public init(keyID: UUID, epoch: Int64, wrapped: Data) {
        self.keyID = keyID
        self.epoch = epoch
        self.wrapped = wrapped
    }
}

/// A zone key share: the zone key of one epoch sealed (HPKE) to one device and signed by its sponsor.
public struct ServerShare: Sendable, Equatable {
    /// The roster epoch the share belongs to.
    public var epoch: Int64
    /// The device it is sealed to.
    public var recipient: DeviceID
    /// The sealed, signed share.
    public var blob: Data

    /// Creates a share row.
    public init(epoch: Int64, recipient: DeviceID, blob: Data) {
        self.epoch = epoch
        self.recipient = recipient
        self.blob = blob
    }
}

/// A signed head as stored: the encoded head with its signature (see `SignedHead`).
public struct ServerHead: Sendable, Equatable {
    /// The head's sequence number.
    public var seq: Int64
    /// The client-chosen commit identity that makes a retried push idempotent.
    public var commitID: UUID
    /// The device that signed it.
    public var author: DeviceID
    /// The encoded, signed head.
    public var bytes: Data

    /// Creates a head row.
    public init(seq: Int64, commitID: UUID, author: DeviceID, bytes: Data) {
        self.seq = seq
        self.commitID = commitID
        self.author = author
        self.bytes = bytes
    }
}

/// One commit: everything a push writes in one server transaction.
public struct Commit: Sendable {
    /// The zone.
    public var zone: ZoneID
    /// The head sequence number the author built on (0 for a zone's first commit).
    public var expectedSeq: Int64
    /// The new head (its `seq` is `expectedSeq + 1`).
    public var head: ServerHead
    /// Records written (their `seq` is set to the head's by the server).
    public var records: [ServerRecord]
    /// Key rows added.
    public var keys: [ServerKey]
    /// A new roster (epoch and sealed, signed blob), when the commit changes it.
    public var roster: (epoch: Int64, blob: Data)?
    /// Zone key shares added.
    public var shares: [ServerShare]
    /// A new recovery escrow blob for an epoch, when the commit changes it.
    public var escrow: (epoch: Int64, blob: Data)?

    /// Creates a commit.
    public init(
        zone: ZoneID, expectedSeq: Int64, head: ServerHead, records: [ServerRecord] = [], keys: [ServerKey] = [],
        roster: (epoch: Int64, blob: Data)? = nil, shares: [ServerShare] = [], escrow: (epoch: Int64, blob: Data)? = nil
    ) {
        self.zone = zone
        self.expectedSeq = expectedSeq
        self.head = head
        self.records = records
        self.keys = keys
        self.roster = roster
        self.shares = shares
        self.escrow = escrow
    }
}

/// What a push did.
public enum PushOutcome: Sendable, Equatable {
    /// The commit is the zone's new head.
    case committed
    /// The commit with this `commitID` was already committed (a retried push).
    case alreadyCommitted
    /// The zone's head moved: pull to `currentSeq`, rebase and push again.
    case staleHead(currentSeq: Int64)
}

/// What a pull returns: the heads and records written after a sequence number, in order.
public struct PullBatch: Sendable {
    /// The zone's head sequence number when the batch was read.
    public var headSeq: Int64
    /// Heads with `seq` in `(after, headSeq]`, ascending (the server keeps the last few thousand).
    public var heads: [ServerHead]
    /// Records (live and tombstones) whose `seq` is in `(after, headSeq]`, ascending by `seq`.
    /// Tombstones older than the zone's retention may be missing (docs/sync.md, "Tombstones and
    /// heads on the server").
    public var records: [ServerRecord]
    /// The hash of the zone's head (``SignedHead/hash``) as the server holds it, when it says:
    /// with `headSeq` equal to a device's cursor, a different hash means the log was rewound
    /// and written again (a restored backup).
    public var headHash: Data?

    /// Creates a batch.
    public init(headSeq: Int64, heads: [ServerHead], records: [ServerRecord], headHash: Data? = nil) {
        self.headSeq = headSeq
        self.heads = heads
        self.records = records
        self.headHash = headHash
    }
}

/// A zone's slowly changing state: roster, keys, notify channel.
public struct ZoneState: Sendable {
    /// The zone's head sequence number.
    public var headSeq: Int64
    /// The channel `LISTEN` waits on (a random token; any role may listen, only members learn it).
    public var notifyChannel: String
    /// The current roster epoch and its sealed, signed blob.
    public var roster: (epoch: Int64, blob: Data)?
    /// Every key row.
    public var keys: [ServerKey]
    /// The latest recovery escrow.
    public var escrow: (epoch: Int64, blob: Data)?

    /// Creates a state.
    public init(
        headSeq: Int64, notifyChannel: String, roster: (epoch: Int64, blob: Data)?, keys: [ServerKey],
        escrow: (epoch: Int64, blob: Data)?
    ) {
        self.headSeq = headSeq
        self.notifyChannel = notifyChannel
        self.roster = roster
        self.keys = keys
        self.escrow = escrow
    }
}

/// A request to join a zone, as a new device posts it with an invitation.
public struct ServerJoinRequest: Sendable, Equatable {
    /// The device asking.
    public var device: DeviceID
    /// Its card and proof of the invitation secret (see `JoinRequest`).
    public var blob: Data
    /// When it was posted.
    public var postedAt: Date

    /// Creates a join request row.
    public init(device: DeviceID, blob: Data, postedAt: Date) {
        self.device = device
        self.blob = blob
        self.postedAt = postedAt
    }
}

/// The shared store, as a device sees it. ``PostgresSyncServer`` is the implementation; every
/// method is one round trip (one SQL transaction).
///
/// The store is trusted with availability only: it can withhold, but every blob, head and
/// roster it returns is checked by the caller.
public protocol SyncServer: Sendable {
    /// Creates a zone owned by the connected login's account, with its first commit (seq 1),
    /// which carries the keys, the roster and the creator's share.
    func createZone(_ commit: Commit, notifyChannel: String) async throws

    /// Appends a commit if the zone's head is still `commit.expectedSeq` (compare-and-swap),
    /// then notifies the zone's channel with the new sequence number.
    func push(_ commit: Commit) async throws -> PushOutcome

    /// The heads and records written after `seq`.
    func pull(_ zone: ZoneID, after seq: Int64) async throws -> PullBatch

    /// The zone's roster, keys, escrow and channel.
    func zoneState(_ zone: ZoneID) async throws -> ZoneState

    /// The zone key shares sealed to a device.
    func shares(_ zone: ZoneID, for device: DeviceID) async throws -> [ServerShare]

    /// Every live and deleted record's identity and sequence number (a full reconcile).
    func recordIndex(_ zone: ZoneID) async throws -> [RecordID: Int64]

    /// Records that this device has verified and applied the zone's log up to `seq`, and purges the
    /// tombstones and heads no device needs any more (docs/sync.md, "Tombstones and heads on the
    /// server").
    /// - Returns: How many tombstones were purged.
    func acknowledge(_ zone: ZoneID, seq: Int64) async throws -> Int

    /// Runs `body` during this device's turn to write the zone: devices that lost the race
    /// for the head queue for turns instead of racing again, so none starves and no work is
    /// thrown away. A turn only orders writers; the compare-and-swap still decides every
    /// commit, so a store may run `body` without one.
    func withPushTurn<T: Sendable>(_ zone: ZoneID, _ body: () async throws -> T) async throws -> T
}

extension SyncServer {
    /// A store that keeps everything: nothing to acknowledge, nothing purged.
    public func acknowledge(_ zone: ZoneID, seq: Int64) async throws -> Int { 0 }

    /// A store without turns: `body` races as any push does.
    public func withPushTurn<T: Sendable>(_ zone: ZoneID, _ body: () async throws -> T) async throws -> T {
        try await body()
    }
}
