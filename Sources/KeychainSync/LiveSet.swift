import Crypto
import Foundation
import GRDB
import KeychainCore
import Synchronization

/// The zone's live records as this keychain's mirror holds them (each id with its blob hash,
/// in id order), kept in memory between sync rounds.
///
/// A commit's state digest and a pull's check of it read this instead of the whole mirror,
/// and bring it up to date from the mirror's change log (`sync_mirror_log`, sync store
/// version 4), which triggers write on every change to the mirror, by any process. So each
/// costs what changed since the last round, not the zone's size. A snapshot whose changes
/// the log no longer holds, or a log made anew (sync set up again), is read whole again.
final class LiveSet: Sendable {
    /// One entry's length: the record id (16 bytes), then its blob hash (32).
    static let entryLength = RecordID.length + 32

    private let snapshot = Mutex<Snapshot?>(nil)
    private let wholeReadCount = Mutex(0)

    /// How many times the mirror was read whole, for tests.
    var wholeReads: Int { wholeReadCount.withLock { $0 } }

    /// The live entries as of one change of the log.
    struct Snapshot: Sendable {
        /// The log's identity.
        var token: Data
        /// The last change of the log the entries include.
        var version: Int64
        /// ``LiveSet/entryLength`` bytes per live record, ascending by id.
        var entries: [UInt8]
    }

    /// The state digest (``StateDigest``) of the live mirror with `changes` laid over it (a
    /// blob hash, or `nil` for a record no longer live).
    func digest(overlaying changes: [RecordID: Data?], _ db: Database) throws -> Data {
        Self.digest(of: try current(db), overlaying: changes)
    }

    /// The live entries now (in `db`'s snapshot): the kept ones with the changes logged since,
    /// or the mirror read whole.
    func current(_ db: Database) throws -> [UInt8] {
        guard let log = try LocalSyncStore.mirrorLog(db) else {
            return try readWhole(db)  // a keychain at store version 3
        }
        var next: Snapshot
        if let known = snapshot.withLock({ $0 }), known.token == log.token, known.version <= log.last,
            known.version >= log.first - 1
        {
            next = known
            if known.version < log.last {
                for (id, hash) in try LocalSyncStore.mirrorChanges(after: known.version, db) {
                    Self.set(id, hash, in: &next.entries)
                }
            }
        } else {
            next = Snapshot(token: log.token, version: 0, entries: try readWhole(db))
        }
        next.version = log.last
        snapshot.withLock { stored in
            if stored == nil || stored!.token != next.token || stored!.version <= next.version { stored = next }
        }
        return next.entries
    }

    private func readWhole(_ db: Database) throws -> [UInt8] {
        wholeReadCount.withLock { $0 += 1 }
        return try LocalSyncStore.liveEntries(db)
    }

    /// Sets one record's entry: its blob hash, or none (`nil`: a tombstone or no row).
    static func set(_ id: RecordID, _ hash: Data?, in entries: inout [UInt8]) {
        let (index, found) = entries.withUnsafeBytes { position(of: id, in: $0) }
        let offset = index * entryLength
        switch (hash, found) {
        case (let hash?, true):
            entries.replaceSubrange((offset + RecordID.length)..<(offset + entryLength), with: hash)
        case (let hash?, false):
            entries.insert(contentsOf: id.bytes + hash, at: offset)
        case (nil, true):
            entries.removeSubrange(offset..<(offset + entryLength))
        case (nil, false):
            break
        }
    }

    /// Where `id` is, or would go, among the entries (binary search).
    private static func position(of id: RecordID, in entries: UnsafeRawBufferPointer) -> (index: Int, found: Bool) {
        var low = 0
        var high = entries.count / entryLength
        while low < high {
            let middle = (low + high) / 2
            let order = id.order(against: UnsafeRawBufferPointer(rebasing: entries[(middle * entryLength)...]))
            if order == 0 { return (middle, true) }
            if order < 0 { high = middle } else { low = middle + 1 }
        }
        return (low, false)
    }

    /// The state digest of `entries` (as ``Snapshot/entries``) with `changes` laid over them:
    /// the unchanged runs of entries are hashed in place, each in one piece, around the few
    /// changes, which are found by binary search.
    static func digest(of entries: [UInt8], overlaying changes: [RecordID: Data?]) -> Data {
        var hasher = SHA256()
        hasher.update(data: Array(StateDigest.domain.utf8))
        entries.withUnsafeBytes { all in
            var next = 0  // the first entry not hashed yet
            for id in changes.keys.sorted() {
                let (index, found) = position(of: id, in: all)
                if index > next {
                    hasher.update(
                        bufferPointer: UnsafeRawBufferPointer(
                            rebasing: all[(next * entryLength)..<(index * entryLength)]))
                }
                if let hash = changes[id] ?? nil {
                    hasher.update(data: id.bytes)
                    hasher.update(data: hash)
                }
                next = found ? index + 1 : index  // the change replaces a stored entry
            }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: all[(next * entryLength)...]))
        }
        return Data(hasher.finalize())
    }
}
