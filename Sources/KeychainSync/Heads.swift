import Crypto
import Foundation

/// A zone head: the state of the zone after one commit, chained to the head before it
/// (docs/sync.md, "Shape" and "Cryptography").
///
/// Encoding, 159 bytes, integers big-endian:
///
///     offset  size  field
///          0    14  "kcsync-head-v1" (domain separation)
///         14     1  version (1)
///         15    16  zone id
///         31     8  seq
///         39    32  previous head hash (32 zero bytes for seq 1)
///         71    32  state digest (see StateDigest)
///        103     8  roster epoch
///        111     8  key epoch
///        119    16  commit id
///        135    16  author device id
///        151     8  time (hybrid logical clock)
public struct Head: Equatable, Sendable {
    static let domain = "kcsync-head-v1"
    static let version: UInt8 = 1
    /// The encoded length.
    public static let encodedLength = 159
    /// The previous-head hash of a zone's first head.
    public static let genesisHash = Data(count: 32)

    /// The zone.
    public var zone: ZoneID
    /// The head's sequence number (1 for a zone's first commit).
    public var seq: Int64
    /// The hash (``SignedHead/hash``) of the head before, or 32 zero bytes for seq 1.
    public var previousHash: Data
    /// The digest of the zone's live records after the commit (``StateDigest``).
    public var stateDigest: Data
    /// The roster epoch in force after the commit.
    public var rosterEpoch: Int64
    /// The zone key epoch in force after the commit.
    public var keyEpoch: Int64
    /// The commit's client-chosen identity.
    public var commitID: UUID
    /// The device that made and signed the commit.
    public var author: DeviceID
    /// When the commit was made.
    public var time: HybridLogicalClock

    /// Creates a head.
    public init(
        zone: ZoneID, seq: Int64, previousHash: Data, stateDigest: Data, rosterEpoch: Int64, keyEpoch: Int64,
        commitID: UUID, author: DeviceID, time: HybridLogicalClock
    ) {
        self.zone = zone
        self.seq = seq
        self.previousHash = previousHash
        self.stateDigest = stateDigest
        self.rosterEpoch = rosterEpoch
        self.keyEpoch = keyEpoch
        self.commitID = commitID
        self.author = author
        self.time = time
    }

    /// The 159 bytes that are signed.
    public var encoded: Data {
        precondition(previousHash.count == 32 && stateDigest.count == 32, "head hashes are 32 bytes")
        var writer = SyncWriter(prefix: Self.domain)
        writer.u8(Self.version)
        writer.uuid(zone.uuid)
        writer.i64(seq)
        writer.raw(previousHash)
        writer.raw(stateDigest)
        writer.i64(rosterEpoch)
        writer.i64(keyEpoch)
        writer.uuid(commitID)
        writer.uuid(author.uuid)
        writer.u64(time.rawValue)
        return writer.data
    }

    /// Parses an encoding.
    ///
    /// - Throws: `.malformed` unless `bytes` is a whole version-1 head.
    public init(decoding bytes: Data) throws {
        var reader = SyncReader(bytes, what: "head")
        guard try reader.raw(Self.domain.utf8.count) == Data(Self.domain.utf8), try reader.u8() == Self.version else {
            throw SyncError(.malformed, "head is not a version 1 head")
        }
        zone = ZoneID(try reader.uuid())
        seq = try reader.i64()
        previousHash = try reader.raw(32)
        stateDigest = try reader.raw(32)
        rosterEpoch = try reader.i64()
        keyEpoch = try reader.i64()
        commitID = try reader.uuid()
        author = DeviceID(try reader.uuid())
        time = HybridLogicalClock(rawValue: try reader.u64())
        try reader.finish()
    }
}

/// A head with its author's Ed25519 signature over ``Head/encoded``.
///
/// Stored as ``ServerHead/bytes`` = encoding (159) ‖ signature (64).
public struct SignedHead: Equatable, Sendable {
    /// The head.
    public let head: Head
    /// The author's Ed25519 signature over the head's encoding.
    public let signature: Data

    /// Signs a head.
    ///
    /// - Throws: `.malformed` if the head's hashes are not 32 bytes.
    public static func sign(_ head: Head, with key: Curve25519.Signing.PrivateKey) throws -> SignedHead {
        guard head.previousHash.count == 32, head.stateDigest.count == 32 else {
            throw SyncError(.malformed, "head \(head.seq)'s hashes are not 32 bytes")
        }
        return SignedHead(head: head, signature: try key.signature(for: head.encoded))
    }

    private init(head: Head, signature: Data) {
        self.head = head
        self.signature = signature
    }

    /// Parses a stored head and checks that the row's sequence number, commit id and author are
    /// the head's. The signature is not checked here (see ``verify(signedBy:)``).
    ///
    /// - Throws: `.malformed` if the bytes are not a head and a signature; `.tampered` if the row
    ///   disagrees with the head.
    public init(decoding row: ServerHead) throws {
        guard row.bytes.count == Head.encodedLength + 64 else {
            throw SyncError(.malformed, "head \(row.seq) has \(row.bytes.count) bytes")
        }
        let bytes = Data(row.bytes)
        let head = try Head(decoding: bytes.prefix(Head.encodedLength))
        guard head.seq == row.seq, head.commitID == row.commitID, head.author == row.author else {
            throw SyncError(.tampered, "head \(row.seq)'s row disagrees with the signed head")
        }
        self.init(head: head, signature: bytes.suffix(64))
    }

    /// Parses a stored head of `zone` (see ``init(decoding:)``).
    ///
    /// - Throws: also `.tampered` if the head belongs to another zone.
    public init(decoding row: ServerHead, zone: ZoneID) throws {
        try self.init(decoding: row)
        guard head.zone == zone else { throw SyncError(.tampered, "head \(row.seq) belongs to another zone") }
    }

    /// The row to store.
    public var serverHead: ServerHead {
        ServerHead(seq: head.seq, commitID: head.commitID, author: head.author, bytes: bytes)
    }

    /// The stored bytes: encoding ‖ signature.
    public var bytes: Data { head.encoded + signature }

    /// SHA-256 of the stored bytes: what the next head's ``Head/previousHash`` names.
    public var hash: Data { Data(SHA256.hash(data: bytes)) }

    /// Whether `key` signed this head.
    public func verify(signedBy key: Curve25519.Signing.PublicKey) -> Bool {
        key.isValidSignature(signature, for: head.encoded)
    }

    /// Checks that `heads` extend the chain: consecutive sequence numbers, each head naming the
    /// hash of the one before (the first naming `lastVerified`, or the genesis hash at seq 1),
    /// all of one zone, each signed by a device of `signers`.
    ///
    /// - Parameters:
    ///   - lastVerified: the sequence number and hash of the last head this device verified.
    ///   - heads: the heads after it, ascending.
    ///   - signers: the signing keys of the devices allowed to author heads.
    /// - Throws: `.tampered` for an unknown signer or a bad signature; `.rolledBack` if the first
    ///   head is not after `lastVerified`; `.forked` for any other break of the chain (a gap, a
    ///   reordering, a head that does not name its predecessor's hash, a change of zone).
    public static func verifyChain(
        from lastVerified: (seq: Int64, hash: Data)?, heads: [SignedHead],
        signers: [DeviceID: Curve25519.Signing.PublicKey]
    ) throws {
        var previous = lastVerified
        for (index, signed) in heads.enumerated() {
            let head = signed.head
            guard let key = signers[head.author] else {
                throw SyncError(.tampered, "head \(head.seq) is signed by unknown device \(head.author)")
            }
            guard signed.verify(signedBy: key) else {
                throw SyncError(.tampered, "head \(head.seq) has a bad signature")
            }
            guard head.zone == heads[0].head.zone else {
                throw SyncError(.forked, "head \(head.seq) belongs to another zone")
            }
            try checkLink(head, after: previous, first: index == 0)
            previous = (head.seq, signed.hash)
        }
    }

    private static func checkLink(_ head: Head, after previous: (seq: Int64, hash: Data)?, first: Bool) throws {
        guard let previous else {
            // An unanchored chain may start anywhere, but a first head names the genesis hash.
            if head.seq == 1, head.previousHash != Head.genesisHash {
                throw SyncError(.forked, "head 1 does not start the chain")
            }
            return
        }
        if head.seq <= previous.seq {
            throw SyncError(
                first ? .rolledBack : .forked, "head \(head.seq) does not follow head \(previous.seq)")
        }
        guard head.seq == previous.seq + 1 else {
            throw SyncError(.forked, "heads \(previous.seq + 1)..<\(head.seq) are missing")
        }
        guard head.previousHash == previous.hash else {
            throw SyncError(.forked, "head \(head.seq) does not chain from head \(previous.seq)")
        }
    }
}

/// The digest of a zone's live records that every head signs (docs/sync.md, "Tombstones and heads
/// on the server"): a device that applied a pull recomputes it over its mirror, so a dropped,
/// replayed or altered record, or a missing tombstone, is caught.
public enum StateDigest {
    /// The bytes every state digest's input starts with (domain separation).
    static let domain = "kcsync-state-v1"

    /// SHA-256 of "kcsync-state-v1" followed, in record-id order, by each live record's id (16)
    /// and blob hash (32). Tombstones are not passed in.
    ///
    /// - Parameter live: the blob hash (``RecordCodec/blobHash(_:)``) of every live record.
    public static func compute(_ live: [RecordID: Data]) -> Data {
        // Gathered and hashed once, through raw buffers (Data's own iterator goes byte by byte).
        var bytes = Array(domain.utf8)
        for id in live.keys.sorted() {
            id.bytes.withUnsafeBytes { bytes.append(contentsOf: $0) }
            (live[id] ?? Data()).withUnsafeBytes { bytes.append(contentsOf: $0) }
        }
        return Data(SHA256.hash(data: bytes))
    }
}
