import Foundation
import KeychainCore
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// The design's test 4 (docs/sync.md): the same primary key added offline on two machines,
    /// 100 rounds, with one machine's clock up to five minutes ahead of the other's.
    @Suite("Concurrent adds under clock skew", .serialized, .timeLimit(.minutes(10)))
    struct ClockSkewTests {
        /// A machine's hybrid logical clock.
        static func clock(_ machine: TestMachine) throws -> UInt64 {
            try machine.keychain.withSyncTransaction { try $0.clock() }
        }

        /// Moves `machine`'s clock `skew` milliseconds past `base`, as a wall clock that runs
        /// ahead would: every later write it makes is stamped at least that far ahead.
        static func runAhead(_ machine: TestMachine, of base: UInt64, by skew: UInt64) throws {
            try machine.keychain.withSyncTransaction { try $0.observe(clock: base + skew << 16) }
        }

        @Test(
            "100 rounds, clocks up to ±5 min apart: one item per round, the later clock wins, and an edit made after seeing it wins"
        )
        func concurrentAddsUnderSkew() async throws {
            let zone = try await makeZone(machines: 2)
            let machines = (zone[0], zone[1])
            var rng = SystemRandomNumberGenerator()
            let rounds = 100
            var causalEdits = 0
            try await SyncSetup.withEngine(keychain: machines.0.keychain) { first in
                try await SyncSetup.withEngine(keychain: machines.1.keychain) { second in
                    let engines = [first, second]
                    let pair = [machines.0, machines.1]
                    for round in 0..<rounds {
                        let aheadIndex = Int.random(in: 0...1, using: &rng)
                        let (ahead, behind) = (pair[aheadIndex], pair[1 - aheadIndex])
                        let skew = UInt64.random(in: 1_000...300_000, using: &rng)
                        let base = max(
                            try Self.clock(ahead), try Self.clock(behind),
                            UInt64(Date().timeIntervalSince1970 * 1000) << 16)
                        try Self.runAhead(ahead, of: base, by: skew)
                        // Both add the same primary key while neither has seen the other's: in a
                        // random order, so the order in time decides nothing.
                        let service = "k\(round)"
                        let writers = Bool.random(using: &rng) ? [ahead, behind] : [behind, ahead]
                        for writer in writers {
                            try writer.add(
                                service: service, account: "me", secret: writer === ahead ? "ahead" : "behind")
                        }
                        _ = try await engines[0].syncNow()
                        _ = try await engines[1].syncNow()
                        _ = try await engines[0].syncNow()
                        for machine in pair {
                            let items = try machine.syncedItems().filter { $0.hasPrefix("\(service)|") }
                            #expect(items == ["\(service)|me|ahead"], "round \(round): \(items)")
                        }
                        // The machine behind edits what it now sees: its edit is after the other's
                        // in causality, though its own clock is minutes behind.
                        try behind.keychain.update(
                            behind.query(service: service, account: "me"), attributes: [:],
                            data: Data("edited after".utf8))
                        _ = try await engines[1 - aheadIndex].syncNow()
                        _ = try await engines[aheadIndex].syncNow()
                        let edited = try pair.map { try $0.syncedItems().filter { $0.hasPrefix("\(service)|") } }
                        if edited.allSatisfy({ $0 == ["\(service)|me|edited after"] }) { causalEdits += 1 }
                    }
                }
            }
            #expect(causalEdits == rounds)
            let (a, b) = machines
            #expect(try a.syncedItems() == b.syncedItems())
            #expect(try a.syncedItems().count == rounds)
            // Every round's losing add is in a conflict log, ordered before its winner.
            let conflicts = try SyncSetup.conflicts(of: a.keychain) + SyncSetup.conflicts(of: b.keychain)
            let losers = Set(
                conflicts.filter { String(decoding: $0.loser.data ?? Data(), as: UTF8.self) == "behind" }.compactMap {
                    $0.loser.attributes[.service]?.stringValue
                })
            #expect(losers.count == rounds)
            #expect(conflicts.allSatisfy { $0.loserClock < $0.winnerClock })
            #expect(try SyncSetup.status(of: a.keychain).pendingChanges == 0)
            #expect(try SyncSetup.status(of: b.keychain).pendingChanges == 0)
        }
    }
}
