import Foundation

/// Finds damage in a keychain's write-ahead log that SQLite would silently treat as the end of
/// the log.
///
/// SQLite replays the `-wal` file frame by frame, each frame's checksum chained to the one
/// before (<https://www.sqlite.org/fileformat2.html#walformat>), and stops at the first frame
/// that fails: everything after it is ignored without an error, and the next write or
/// checkpoint makes the loss permanent.
///
/// What was acknowledged is what SQLite's own index of the log, the `-shm` file, had counted:
/// a writer records a transaction there (`mxFrame`) only after its frames are written and
/// synced, and a process killed before that leaves frames that no one was told about (SQLite
/// drops those rightly, and a later writer may overwrite part of them). So when the index is
/// there and belongs to the log's current generation, the log is damaged exactly when SQLite's
/// replay would end before the last frame the index counted; when the log's own header fails,
/// when SQLite would ignore the whole log, what the index counted past the last checkpoint is
/// lost.
///
/// Without a usable index (deleted, or a file from before a power cut), a heuristic decides:
/// past the first failing frame, frames of the current generation that chain from it (from its
/// stored checksum, or from its bytes as they now are) up to a commit frame were committed after
/// it. Damage confined to the log's very last frame cannot be told from a write cut short then.
package enum LogIntegrity {
    /// What a scan found.
    package struct Damage: Equatable, Sendable {
        /// The 1-based number of the first frame SQLite would not replay.
        package var frame: Int
        /// How many committed transactions after it SQLite would drop.
        package var lostCommits: Int
    }

    private static let headerSize = 32
    private static let frameHeaderSize = 24

    /// Scans the log beside `path`, with SQLite's index of it when there is one; `nil` when the
    /// log is absent, empty or sound.
    ///
    /// Other processes may be closing the keychain meanwhile, and SQLite removes both files when
    /// the last connection closes: a file removed before it is opened here counts as absent.
    package static func damage(ofLogBeside path: String) throws -> Damage? {
        // The index first: a writer records a transaction there only once its frames are in the log.
        let index = try SecureFileSystem.withContentsIfPresent(of: path + "-shm", limit: IndexHeader.size) {
            IndexHeader($0)
        }
        return try SecureFileSystem.withContentsIfPresent(of: path + "-wal") { log in
            log.count > headerSize ? scan(log, index: index ?? nil) : nil
        } ?? nil
    }

    /// The header of SQLite's index of the log (the `-shm` file's first bytes), as SQLite's
    /// `wal.c` lays it out: two identical 48-byte copies (version, change counter, `isInit`, byte
    /// order, page size, `mxFrame`, page count, the last frame's checksum, the log's salts, a
    /// checksum of the first 40 bytes in this machine's byte order), then the checkpoint
    /// information, whose first word is `nBackfill`.
    struct IndexHeader: Equatable {
        static let size = 100
        /// The last frame of the last transaction the index counted.
        var lastFrame: Int
        /// The frames already copied into the database file by a checkpoint.
        var backfilled: Int
        /// The log's salts, as the log's header stores them.
        var salts: [UInt8]
        /// The page size the index was built with.
        var pageSize: Int

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= Self.size,
                Array(bytes[0..<48]) == Array(bytes[48..<96]), bytes[12] == 1,
                LogIntegrity.word(bytes, 0, bigEndian: Self.bigEndianHost) == 3_007_000
            else { return nil }
            let sum = LogIntegrity.checksum(bytes, 0, 40, seed: (0, 0), bigEndian: Self.bigEndianHost)
            guard
                sum
                    == (
                        LogIntegrity.word(bytes, 40, bigEndian: Self.bigEndianHost),
                        LogIntegrity.word(bytes, 44, bigEndian: Self.bigEndianHost)
                    )
            else { return nil }
            lastFrame = Int(LogIntegrity.word(bytes, 16, bigEndian: Self.bigEndianHost))
            backfilled = Int(LogIntegrity.word(bytes, 96, bigEndian: Self.bigEndianHost))
            salts = Array(bytes[32..<40])
            // A 16-bit field: SQLite keeps 65536 in its lowest bit.
            let storedPageSize = Int(bytes.loadUnaligned(fromByteOffset: 14, as: UInt16.self))
            pageSize = storedPageSize & 0xFE00 + (storedPageSize & 1) << 16
        }

        static let bigEndianHost = UInt32(1).bigEndian == 1
    }

    /// Refuses a keychain whose log is damaged, before SQLite replays it (and, at the next write
    /// or checkpoint, makes the loss permanent). A log that a writer is appending to can look
    /// damaged for an instant (a frame half written when read, the next one complete), so damage
    /// counts only when a second scan, a moment later, finds it at the same frame.
    static func check(logBeside path: String) throws {
        guard let first = try damage(ofLogBeside: path) else { return }
        usleep(50_000)
        guard let second = try damage(ofLogBeside: path), second.frame == first.frame else { return }
        throw KeychainError(
            .decode,
            "the keychain's write-ahead log \(path)-wal is damaged at frame \(second.frame): "
                + "\(second.lostCommits) committed transaction(s) after it would be lost without a word. "
                + "Nothing was changed; copy the keychain and its -wal file somewhere safe before anything else",
            isSetupProblem: true)
    }

    /// Scans the bytes of a log, with the bytes of its index when there is one.
    static func scan(_ bytes: Data, index: Data? = nil) -> Damage? {
        let header = index.flatMap { $0.withUnsafeBytes(IndexHeader.init) }
        return bytes.withUnsafeBytes { raw in scan(raw, index: header) }
    }

    private static func scan(_ log: UnsafeRawBufferPointer, index: IndexHeader?) -> Damage? {
        guard log.count >= headerSize else { return nil }
        let magic = word(log, 0, bigEndian: true)
        let headerPageSize = Int(word(log, 8, bigEndian: true))
        let storedHeaderSum = (word(log, 24, bigEndian: true), word(log, 28, bigEndian: true))
        // SQLite's walIndexRecover ignores the whole log when its magic, page size or checksum fails.
        let sound = magic & 0xFFFF_FFFE == 0x377F_0682 && isPageSize(headerPageSize)
        if sound {
            let frames = Frames(bytes: log, pageSize: headerPageSize, bigEndian: magic & 1 == 1)
            guard frames.frames > 0 else { return nil }
            let headerSum = frames.checksum(0, 24, seed: (0, 0))
            if headerSum == storedHeaderSum {
                return intactHeaderDamage(frames, headerSum: headerSum, index: index)
            }
        }
        if let index {
            // What the index counted past the last checkpoint is lost, in frames of the index's page size.
            guard index.lastFrame > index.backfilled, isPageSize(index.pageSize) else { return nil }
            let frames = Frames(bytes: log, pageSize: index.pageSize, bigEndian: magic & 1 == 1)
            return Damage(frame: 1, lostCommits: frames.commits(in: (index.backfilled + 1)...index.lastFrame))
        }
        // Without an index, the damaged header may be the page size or the byte order itself:
        // committed frames chained from the header under any of them were lost.
        var lost = 0
        for pageSize in (9...16).map({ 1 << $0 }) {
            for bigEndian in [false, true] {
                let frames = Frames(bytes: log, pageSize: pageSize, bigEndian: bigEndian)
                guard frames.frames > 0 else { continue }
                for seed in [storedHeaderSum, frames.checksum(0, 24, seed: (0, 0))] {
                    lost = max(lost, frames.commitsChained(from: 1, seed: seed, salts: frames.salts(1)))
                }
            }
        }
        return lost > 0 ? Damage(frame: 1, lostCommits: lost) : nil
    }

    /// Damage past a sound, intact log header: where SQLite's replay ends before what the index
    /// counted, or (without an index) committed frames chained past a failing one.
    private static func intactHeaderDamage(_ frames: Frames, headerSum: (UInt32, UInt32), index: IndexHeader?)
        -> Damage?
    {
        let salts = (frames.word(16), frames.word(20))
        guard let index else { return frames.damage(salts: salts, seed: headerSum) }
        guard Array(frames.bytes[16..<24]) == index.salts else { return nil }  // another generation
        let end = frames.replayEnd(salts: salts, seed: headerSum)
        guard end < index.lastFrame else { return nil }
        return Damage(frame: end + 1, lostCommits: max(1, frames.commits(in: (end + 1)...index.lastFrame)))
    }

    private static func isPageSize(_ size: Int) -> Bool {
        size >= 512 && size <= 65536 && size & (size - 1) == 0
    }

    /// A log's frames, read with its checksum byte order.
    private struct Frames {
        let bytes: UnsafeRawBufferPointer
        let pageSize: Int
        let frames: Int
        let bigEndian: Bool

        init(bytes: UnsafeRawBufferPointer, pageSize: Int, bigEndian: Bool) {
            self.bytes = bytes
            self.pageSize = pageSize
            self.frames = max(0, (bytes.count - headerSize) / (frameHeaderSize + pageSize))
            self.bigEndian = bigEndian
        }

        func offset(_ frame: Int) -> Int { headerSize + (frame - 1) * (frameHeaderSize + pageSize) }
        func word(_ offset: Int) -> UInt32 { LogIntegrity.word(bytes, offset, bigEndian: true) }
        func salts(_ frame: Int) -> (UInt32, UInt32) { (word(offset(frame) + 8), word(offset(frame) + 12)) }
        func stored(_ frame: Int) -> (UInt32, UInt32) { (word(offset(frame) + 16), word(offset(frame) + 20)) }
        func isCommit(_ frame: Int) -> Bool { word(offset(frame) + 4) != 0 }

        func checksum(_ start: Int, _ count: Int, seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
            LogIntegrity.checksum(bytes, start, count, seed: seed, bigEndian: bigEndian)
        }

        /// The checksum of `frame` chained from `seed`, as SQLite computes it.
        func chained(_ frame: Int, from seed: (UInt32, UInt32)) -> (UInt32, UInt32) {
            let head = checksum(offset(frame), 8, seed: seed)
            return checksum(offset(frame) + frameHeaderSize, pageSize, seed: head)
        }

        func isValid(_ frame: Int, salts: (UInt32, UInt32), seed: (UInt32, UInt32)) -> Bool {
            self.salts(frame) == salts && word(offset(frame)) != 0 && chained(frame, from: seed) == stored(frame)
        }

        /// Damage past the frames SQLite replays from a sound header.
        func damage(salts: (UInt32, UInt32), seed: (UInt32, UInt32)) -> Damage? {
            var running = seed
            var frame = 1
            while frame <= frames, isValid(frame, salts: salts, seed: running) {
                running = stored(frame)
                frame += 1
            }
            // A frame of another generation ends the log; only a frame of this one can be damaged.
            guard frame < frames, self.salts(frame) == salts || self.salts(frame + 1) == salts else { return nil }
            // Committed transactions chained from the failing frame, however it failed.
            let lost =
                [stored(frame), chained(frame, from: running)].map {
                    commitsChained(from: frame + 1, seed: $0, salts: salts)
                }.max() ?? 0
            return lost > 0 ? Damage(frame: frame, lostCommits: lost) : nil
        }

        /// The last commit frame of the frames SQLite replays (0 when none).
        func replayEnd(salts: (UInt32, UInt32), seed: (UInt32, UInt32)) -> Int {
            var running = seed
            var lastCommit = 0
            var frame = 1
            while frame <= frames, isValid(frame, salts: salts, seed: running) {
                if isCommit(frame) { lastCommit = frame }
                running = stored(frame)
                frame += 1
            }
            return lastCommit
        }

        /// How many of the frames in `range` that the log holds are commit frames.
        func commits(in range: ClosedRange<Int>) -> Int {
            range.clamped(to: 1...max(1, frames)).filter { $0 <= frames && isCommit($0) }.count
        }

        /// How many commit frames chain, frame after frame, from `seed` starting at `first`.
        func commitsChained(from first: Int, seed: (UInt32, UInt32), salts: (UInt32, UInt32)) -> Int {
            var seed = seed
            var commits = 0
            var frame = first
            while frame <= frames, isValid(frame, salts: salts, seed: seed) {
                if isCommit(frame) { commits += 1 }
                seed = stored(frame)
                frame += 1
            }
            return commits
        }
    }

    fileprivate static func word(_ buffer: UnsafeRawBufferPointer, _ offset: Int, bigEndian: Bool) -> UInt32 {
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value)
    }

    /// SQLite's log checksum over `count` bytes (a multiple of 8) from `start`.
    fileprivate static func checksum(
        _ buffer: UnsafeRawBufferPointer, _ start: Int, _ count: Int, seed: (UInt32, UInt32), bigEndian: Bool
    ) -> (UInt32, UInt32) {
        var (s1, s2) = seed
        guard let base = buffer.baseAddress?.advanced(by: start) else { return seed }
        let words = UnsafeRawBufferPointer(start: base, count: count).bindMemory(to: UInt32.self)
        // The log's checksum words are in its own byte order; compare with this machine's once.
        if bigEndian == (UInt32(1).bigEndian == 1) {
            var index = 0
            while index + 1 < words.count {
                s1 = s1 &+ words[index] &+ s2
                s2 = s2 &+ words[index + 1] &+ s1
                index += 2
            }
        } else {
            var index = 0
            while index + 1 < words.count {
                s1 = s1 &+ words[index].byteSwapped &+ s2
                s2 = s2 &+ words[index + 1].byteSwapped &+ s1
                index += 2
            }
        }
        return (s1, s2)
    }
}
