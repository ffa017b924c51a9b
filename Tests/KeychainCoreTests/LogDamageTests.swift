import Foundation
import SeededRandom
import Testing

@testable import KeychainCore

/// A damaged write-ahead log must never roll a keychain back silently: SQLite stops replaying
/// at the first frame whose checksum fails and drops every later commit without an error.
@Suite("Write-ahead log damage")
struct LogDamageTests {
    /// A keychain whose acknowledged writes are all still in its log, copied as a crash leaves
    /// it (the writer never closed, so nothing was checkpointed).
    private struct CrashedCopy {
        let scratch: Scratch
        let path: String
        let log: Data
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
            let header = try Data(contentsOf: URL(fileURLWithPath: original)).prefix(100)
            pageSize = Int(header[16]) << 8 | Int(header[17])
            withExtendedLifetime(keychain) {}
        }

        /// The number of frames in the log.
        var frames: Int { (log.count - 32) / (pageSize + 24) }

        func open(withLog bytes: Data) throws -> KeychainDatabase {
            try bytes.write(to: URL(fileURLWithPath: path + "-wal"))
            try? FileManager.default.removeItem(atPath: path + "-shm")
            return try KeychainDatabase.open(at: path, configuration: Self.configuration)
        }
    }

    @Test("an intact log of a crashed writer opens with every acknowledged item")
    func intactLogOpensWhole() throws {
        let copy = try CrashedCopy()
        #expect(LogIntegrity.scan(copy.log) == nil)
        let keychain = try copy.open(withLog: copy.log)
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == CrashedCopy.items)
    }

    @Test("a flipped byte anywhere in the log but its last frame is reported, never a silent rollback")
    func flippedByteInTheLogIsReported() throws {
        let copy = try CrashedCopy()
        let seed = UInt64.random(in: 0 ... .max)
        var random = SplitMix64(seed: seed)
        let lastFrameStart = 32 + (copy.frames - 1) * (copy.pageSize + 24)
        #expect(copy.frames > 10, "the log should hold many commits")
        for trial in 0..<80 {
            var damaged = copy.log
            let offset = Int.random(in: 0..<lastFrameStart, using: &random)
            damaged[offset] ^= UInt8.random(in: 1...255, using: &random)
            let context = Comment(rawValue: "seed \(seed), trial \(trial), byte \(offset)")
            #expect(LogIntegrity.scan(damaged) != nil, context)
            let error = try #require(throws: KeychainError.self, context) { _ = try copy.open(withLog: damaged) }
            #expect(error.code == .decode && error.isSetupProblem, context)
            #expect(error.message.contains(copy.path + "-wal"), context)
        }
        // Nothing was changed: the intact log still opens whole.
        let keychain = try copy.open(withLog: copy.log)
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == CrashedCopy.items)
    }

    @Test("a log cut short by a crash (a torn last frame, or an uncommitted tail) is not damage")
    func tornTailIsNotDamage() throws {
        let copy = try CrashedCopy()
        var torn = copy.log
        torn[torn.count - 100] ^= 0xFF
        #expect(LogIntegrity.scan(torn) == nil)
        #expect(LogIntegrity.scan(copy.log.prefix(copy.log.count - 700)) == nil)
        let keychain = try copy.open(withLog: torn)
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == CrashedCopy.items - 1)
    }
}
