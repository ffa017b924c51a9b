import Foundation
import SeededRandom
import Testing

@testable import KeychainCore

/// A damaged write-ahead log must never roll a keychain back silently: SQLite stops replaying
/// at the first frame whose checksum fails and drops every later commit without an error.
@Suite("Write-ahead log damage")
struct LogDamageTests {
    /// A keychain whose acknowledged writes are all still in its log, copied as a crash leaves
    /// it (the writer never closed, so nothing was checkpointed): the file, its log and SQLite's
    /// index of the log (`-shm`).
    private struct CrashedCopy {
        let scratch: Scratch
        let path: String
        let log: Data
        let index: Data
        let pageSize: Int
        static let items = 24
        static let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 7, count: 32)))

        init() throws {
            scratch = try Scratch()
            let original = scratch.file("live.keychain-db")
            let keychain = try KeychainDatabase.create(at: original, password: nil, configuration: Self.configuration)
            for index in 0..<Self.items { try keychain.add(genericPassword("acct\(index)", data: "v\(index)")) }
            path = scratch.file("copy.keychain-db")
            try FileManager.default.copyItem(atPath: original, toPath: path)
            log = try Data(contentsOf: URL(fileURLWithPath: original + "-wal"))
            index = try Data(contentsOf: URL(fileURLWithPath: original + "-shm"))
            let header = try Data(contentsOf: URL(fileURLWithPath: original)).prefix(100)
            pageSize = Int(header[16]) << 8 | Int(header[17])
            withExtendedLifetime(keychain) {}
        }

        /// The number of frames in the log.
        var frames: Int { (log.count - 32) / (pageSize + 24) }
        func frameOffset(_ frame: Int) -> Int { 32 + (frame - 1) * (pageSize + 24) }
        func isCommit(_ frame: Int) -> Bool {
            log[frameOffset(frame) + 4..<frameOffset(frame) + 8].contains { $0 != 0 }
        }
        var commitFrames: [Int] { (1...frames).filter(isCommit) }

        func open(withLog bytes: Data, index: Data?) throws -> KeychainDatabase {
            try bytes.write(to: URL(fileURLWithPath: path + "-wal"))
            try? FileManager.default.removeItem(atPath: path + "-shm")
            if let index { try index.write(to: URL(fileURLWithPath: path + "-shm")) }
            return try KeychainDatabase.open(at: path, configuration: Self.configuration)
        }

        /// The index, saying that its last counted frame is `frame` (both header copies, with
        /// their checksum recomputed as SQLite computes it).
        func index(countingUpTo frame: Int) -> Data {
            var bytes = [UInt8](index)
            for copy in [0, 48] {
                withUnsafeBytes(of: UInt32(frame).littleEndian) {
                    bytes.replaceSubrange(copy + 16..<copy + 20, with: $0)
                }
            }
            var (s1, s2): (UInt32, UInt32) = (0, 0)
            func word(_ at: Int) -> UInt32 { bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
            for at in stride(from: 0, to: 40, by: 8) {
                s1 = s1 &+ word(at) &+ s2
                s2 = s2 &+ word(at + 4) &+ s1
            }
            for copy in [0, 48] {
                withUnsafeBytes(of: s1.littleEndian) { bytes.replaceSubrange(copy + 40..<copy + 44, with: $0) }
                withUnsafeBytes(of: s2.littleEndian) { bytes.replaceSubrange(copy + 44..<copy + 48, with: $0) }
            }
            return Data(bytes)
        }
    }

    @Test("an intact log of a crashed writer opens with every acknowledged item, with or without its index")
    func intactLogOpensWhole() throws {
        let copy = try CrashedCopy()
        #expect(LogIntegrity.scan(copy.log, index: copy.index) == nil)
        #expect(LogIntegrity.scan(copy.log) == nil)
        for index in [copy.index, nil] {
            let keychain = try copy.open(withLog: copy.log, index: index)
            #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == CrashedCopy.items)
        }
    }

    @Test("a flipped byte anywhere in a log its index counted is reported, never a silent rollback")
    func flippedByteInTheLogIsReported() throws {
        let copy = try CrashedCopy()
        let seed = UInt64.random(in: 0 ... .max)
        var random = SplitMix64(seed: seed)
        #expect(copy.commitFrames.count > 10, "the log should hold many commits")
        for trial in 0..<60 {
            var damaged = copy.log
            let offset = Int.random(in: 0..<damaged.count, using: &random)
            damaged[offset] ^= UInt8.random(in: 1...255, using: &random)
            let context = Comment(rawValue: "seed \(seed), trial \(trial), byte \(offset)")
            #expect(LogIntegrity.scan(damaged, index: copy.index) != nil, context)
            let error = try #require(throws: KeychainError.self, context) {
                _ = try copy.open(withLog: damaged, index: copy.index)
            }
            #expect(error.code == .decode && error.isSetupProblem, context)
            #expect(error.message.contains(copy.path + "-wal"), context)
        }
        // Nothing was changed: the intact log still opens whole.
        let keychain = try copy.open(withLog: copy.log, index: copy.index)
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == CrashedCopy.items)
    }

    @Test(
        "a flipped byte in the log's header (magic, page size, salts, checksum), which makes SQLite ignore every frame, is reported",
        arguments: 0..<32)
    func flippedHeaderByteIsReported(offset: Int) throws {
        let copy = try CrashedCopy()
        for flip: UInt8 in [0x01, 0x80, 0xFF] {
            var damaged = copy.log
            damaged[offset] ^= flip
            for index in [copy.index, nil] {
                let context = Comment(rawValue: "byte \(offset) ^ \(flip), index \(index != nil)")
                #expect(LogIntegrity.scan(damaged, index: index)?.frame == 1, context)
                #expect(throws: KeychainError.self, context) { _ = try copy.open(withLog: damaged, index: index) }
            }
        }
    }

    @Test("without an index, a flipped byte anywhere but the log's last frame is still reported")
    func flippedByteWithoutTheIndexIsReported() throws {
        let copy = try CrashedCopy()
        let seed = UInt64.random(in: 0 ... .max)
        var random = SplitMix64(seed: seed)
        for trial in 0..<40 {
            var damaged = copy.log
            let offset = Int.random(in: 0..<copy.frameOffset(copy.frames), using: &random)
            damaged[offset] ^= UInt8.random(in: 1...255, using: &random)
            let context = Comment(rawValue: "seed \(seed), trial \(trial), byte \(offset)")
            #expect(LogIntegrity.scan(damaged) != nil, context)
            #expect(throws: KeychainError.self, context) { _ = try copy.open(withLog: damaged, index: nil) }
        }
    }

    @Test("frames the index never counted (a writer killed before recording its commit) are not damage")
    func framesTheIndexNeverCountedAreNotDamage() throws {
        let copy = try CrashedCopy()
        let commits = copy.commitFrames
        let counted = commits[commits.count / 2]
        var overwritten = copy.log
        // Another writer, trusting the index, wrote over the frame after the last counted one.
        overwritten[copy.frameOffset(counted + 1) + 100] ^= 0xFF
        #expect(LogIntegrity.scan(overwritten, index: copy.index(countingUpTo: counted)) == nil)
        #expect(LogIntegrity.scan(overwritten, index: copy.index(countingUpTo: commits.last!)) != nil)
        let keychain = try copy.open(withLog: overwritten, index: copy.index(countingUpTo: counted))
        let found = try keychain.find(ItemQuery(class: .genericPassword)).count
        #expect(found > 0 && found < CrashedCopy.items)
    }

    @Test("without an index, a log cut short by a crash (a torn last frame, or an uncommitted tail) is not damage")
    func tornTailIsNotDamage() throws {
        let copy = try CrashedCopy()
        var torn = copy.log
        torn[torn.count - 100] ^= 0xFF
        #expect(LogIntegrity.scan(torn) == nil)
        #expect(LogIntegrity.scan(copy.log.prefix(copy.log.count - 700)) == nil)
        let keychain = try copy.open(withLog: torn, index: nil)
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == CrashedCopy.items - 1)
    }

    @Test("a log and index removed while the check reads them (another process closing) count as absent, not an error")
    func logRemovedWhileCheckedIsAbsent() throws {
        let copy = try CrashedCopy()
        let log = URL(fileURLWithPath: copy.path + "-wal")
        let index = URL(fileURLWithPath: copy.path + "-shm")
        let (logBytes, indexBytes) = (copy.log, copy.index)
        let done = StopFlag()
        let stopped = DispatchSemaphore(value: 0)
        // As SQLite does when the last connection closes, and a later one opens: the files come
        // whole and go.
        let churn = Thread {
            while !done.isSet {
                // Written beside and renamed (not Foundation's atomic write, which links the
                // file under a second name for a moment).
                for (bytes, file) in [(indexBytes, index), (logBytes, log)] {
                    let beside = file.path + ".new"
                    try? bytes.write(to: URL(fileURLWithPath: beside))
                    rename(beside, file.path)
                }
                usleep(50)
                unlink(log.path)
                unlink(index.path)
                usleep(50)
            }
            stopped.signal()
        }
        churn.start()
        // The thread ends before the scratch directory is removed.
        defer {
            done.set()
            stopped.wait()
        }
        var present = 0
        var absent = 0
        // Until both states were seen often (a loaded machine may run the other thread seldom),
        // within a bound so that a thread that never runs fails the test instead of hanging it.
        let deadline = ContinuousClock.now + .seconds(60)
        var rounds = 0
        while rounds < 2_000 || min(present, absent) < 20, ContinuousClock.now < deadline {
            rounds += 1
            #expect(try LogIntegrity.damage(ofLogBeside: copy.path) == nil)
            let seen = try SecureFileSystem.withContentsIfPresent(of: log.path) { $0.count == copy.log.count }
            if seen == nil { absent += 1 } else { present += 1 }
            #expect(seen != false, "a log read whole or not at all")
        }
        #expect(min(present, absent) >= 20, "present \(present), absent \(absent) in \(rounds) rounds")
    }

    @Test("reading a file that may vanish: absent is nil, a link or another type is refused")
    func contentsIfPresent() throws {
        let scratch = try Scratch()
        let file = scratch.file("f")
        #expect(try SecureFileSystem.withContentsIfPresent(of: file) { $0.count } == nil)
        try Data("abcdef".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try SecureFileSystem.withContentsIfPresent(of: file) { Array($0) } == Array("abcdef".utf8))
        #expect(try SecureFileSystem.withContentsIfPresent(of: file, limit: 4) { Array($0) } == Array("abcd".utf8))
        let link = scratch.file("link")
        symlink(file, link)
        #expect(throws: KeychainError.self) { try SecureFileSystem.withContentsIfPresent(of: link) { $0.count } }
        #expect(throws: KeychainError.self) {
            try SecureFileSystem.withContentsIfPresent(of: scratch.path) { $0.count }
        }
    }
}

/// A flag one thread sets and another reads.
private final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
