import Foundation
import GRDB
import SeededRandom
import Testing

@testable import KeychainSync

/// The state digest a commit signs and a pull checks is read from the mirror table in its
/// record-id order with the commit's changes laid over it; it must equal the digest of the same
/// state built as a dictionary (``StateDigest/compute(_:)``), whatever the mix.
@Suite struct StateDigestTests {
    @Test("record ids order by their bytes, as SQLite orders the mirror's BLOB keys", arguments: [1, 2, 3])
    func recordIDOrderIsByteOrder(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        for _ in 0..<2_000 {
            let a = Self.randomID(&random, prefix: Int.random(in: 0...16, using: &random))
            let b = Self.randomID(&random, prefix: 0)
            #expect((a < b) == a.bytes.lexicographicallyPrecedes(b.bytes))
            #expect(!(a < a))
        }
    }

    @Test("the digest's bytes are pinned: SHA-256 of the domain, then each live id and blob hash in id order")
    func knownAnswer() {
        // Computed with Python's hashlib over b"kcsync-state-v1" + id + hash + id + hash: every
        // machine's heads must agree on these bytes, release after release.
        let low = RecordID(Data(repeating: 1, count: 16))!
        let high = RecordID(Data(repeating: 2, count: 16))!
        let live = [high: Data(repeating: 0xBB, count: 32), low: Data(repeating: 0xAA, count: 32)]
        let expected = "dc83adffd5e19d0adec0913c3c24a4e211ab3e7482120e029c2036fea989af8c"
        func hex(_ digest: Data) -> String { digest.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(StateDigest.compute(live)) == expected)
        var entries: [UInt8] = []
        LiveSet.set(high, live[high], in: &entries)
        LiveSet.set(low, live[low], in: &entries)
        #expect(hex(LiveSet.digest(of: entries, overlaying: [:])) == expected)
        #expect(hex(LiveSet.digest(of: [], overlaying: [low: live[low], high: live[high]])) == expected)
        #expect(hex(StateDigest.compute([:])) == "377c1f69b1fda20aba49b3bfd7d90d4e2b1a97d9b34a743ec0503335d4fcf74d")
    }

    @Test(
        "the mirror's digest with changes laid over it equals the digest of the same state as a dictionary",
        arguments: [11, 12, 13, 14])
    func overlaidDigestMatchesDictionaryDigest(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let queue = try DatabaseQueue()
        var live: [RecordID: Data] = [:]
        var ids: [RecordID] = []
        try queue.write { db in
            try LocalSyncStore.createTables(db)
            for _ in 0..<Int.random(in: 0...300, using: &random) {
                let id = Self.randomID(&random, prefix: 0)
                let tombstone = Int.random(in: 0..<5, using: &random) == 0
                let hash = Self.randomBytes(&random, count: 32)
                try LocalSyncStore.setMirror(
                    MirrorRow(
                        recordID: id, seq: 1, hlc: HybridLogicalClock(rawValue: 1), author: DeviceID(UUID()),
                        tombstone: tombstone, blobHash: hash, item: nil, sealedPrimaryKey: nil), db)
                ids.append(id)
                live[id] = tombstone ? nil : hash
            }
        }
        var changes: [RecordID: Data?] = [:]
        for _ in 0..<Int.random(in: 0...40, using: &random) {
            // Existing ids (live or tombstone) and new ones; new blob hashes and deletions.
            let id =
                ids.isEmpty || Bool.random(using: &random)
                ? Self.randomID(&random, prefix: 0) : ids[Int.random(in: 0..<ids.count, using: &random)]
            changes[id] = Bool.random(using: &random) ? Self.randomBytes(&random, count: 32) : nil as Data?
        }
        for (id, hash) in changes { live[id] = hash }
        // A live set new to the mirror reads it whole.
        let digest = try queue.read { try LiveSet().digest(overlaying: changes, $0) }
        #expect(digest == StateDigest.compute(live))
    }

    @Test(
        "a live set kept between rounds follows every change to the mirror from its log, and reads the mirror whole only when it must",
        arguments: [21, 22, 23])
    func liveSetFollowsTheMirror(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let queue = try DatabaseQueue()
        try queue.write { try LocalSyncStore.createTables($0) }
        let liveSet = LiveSet()
        var live: [RecordID: Data] = [:]
        var ids: [RecordID] = []
        var expectedWholeReads = 1  // the first round
        for round in 0..<30 {
            // Writes as any process makes them: new records, new versions, tombstones, and a
            // row deleted outright.
            try queue.write { db in
                for _ in 0..<Int.random(in: 0...20, using: &random) {
                    let id =
                        ids.isEmpty || Int.random(in: 0..<3, using: &random) == 0
                        ? Self.randomID(&random, prefix: Int.random(in: 0...16, using: &random))
                        : ids[Int.random(in: 0..<ids.count, using: &random)]
                    if !ids.contains(id) { ids.append(id) }
                    if Int.random(in: 0..<10, using: &random) == 0 {
                        try db.execute(sql: "DELETE FROM sync_mirror WHERE record_id = ?", arguments: [id.bytes])
                        live[id] = nil
                        continue
                    }
                    let tombstone = Int.random(in: 0..<4, using: &random) == 0
                    let hash = Self.randomBytes(&random, count: 32)
                    try LocalSyncStore.setMirror(
                        MirrorRow(
                            recordID: id, seq: Int64(round), hlc: HybridLogicalClock(rawValue: 1),
                            author: DeviceID(UUID()), tombstone: tombstone, blobHash: hash, item: nil,
                            sealedPrimaryKey: nil), db)
                    live[id] = tombstone ? nil : hash
                }
                if round == 10 {
                    // The log was pruned past what the live set has seen.
                    try db.execute(sql: "DELETE FROM sync_mirror_log")
                    expectedWholeReads += 1
                }
                if round == 20 {
                    // Sync set up again: a new log, and a mirror started afresh.
                    try LocalSyncStore.dropTables(db)
                    try LocalSyncStore.createTables(db)
                    live = [:]
                    expectedWholeReads += 1
                }
            }
            var changes: [RecordID: Data?] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                changes[Self.randomID(&random, prefix: 0)] = Self.randomBytes(&random, count: 32)
            }
            if let id = ids.randomElement(using: &random) { changes[id] = nil as Data? }
            var expected = live
            for (id, hash) in changes { expected[id] = hash }
            let digest = try queue.read { try liveSet.digest(overlaying: changes, $0) }
            #expect(digest == StateDigest.compute(expected), "round \(round)")
        }
        #expect(liveSet.wholeReads == expectedWholeReads)
    }

    static func randomBytes(_ random: inout SplitMix64, count: Int) -> Data {
        Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    /// A random id; with a `prefix`, its first bytes are zero, so ids share prefixes of every
    /// length.
    static func randomID(_ random: inout SplitMix64, prefix: Int) -> RecordID {
        var bytes = randomBytes(&random, count: RecordID.length)
        for index in 0..<min(prefix, RecordID.length) { bytes[index] = 0 }
        return RecordID(bytes)!
    }
}
