import Foundation
import KeychainCore
import SeededRandom
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// The design's convergence test (docs/sync.md, test plan 3): five machines make random adds,
    /// updates and deletes on 50 primary keys they all share, while a random part of them is cut
    /// off from the server in every round. After the partitions heal, every machine holds exactly
    /// what an oracle says: for each primary key, the last write made anywhere (last writer wins,
    /// by hybrid logical clock, on one machine's clock here, so "last" is the order of the writes).
    @Suite("Random partitions converge to the last writes", .serialized, .timeLimit(.minutes(10)))
    struct PartitionTests {
        static let machines = 5
        static let keys = 50
        static let operations = 2_000
        static let operationsPerRound = 50

        /// A write as the oracle keeps it: the key's value, or nil for a deletion.
        typealias Oracle = [Int: String?]

        @Test(
            "5 machines, 2,000 random writes on 50 shared primary keys under random partitions end equal to the oracle")
        func randomPartitionsConverge() async throws {
            let seed = UInt64(ProcessInfo.processInfo.environment["KEYCHAIN_SYNC_SEED"] ?? "") ?? 0x5eed_3003
            var random = SplitMix64(seed: seed)
            let zone = try await makeZone(machines: Self.machines)
            var oracle = Oracle()
            var rounds = 0
            for operation in 0..<Self.operations {
                let machine = zone[Int.random(in: 0..<zone.count, using: &random)]
                let key = Int.random(in: 0..<Self.keys, using: &random)
                oracle[key] = try Self.write(operation, key: key, on: machine, &random)
                // Writes one or more milliseconds apart: the clock's order is the writes' order.
                try await Task.sleep(for: .milliseconds(2))
                if (operation + 1).isMultiple(of: Self.operationsPerRound) {
                    rounds += 1
                    for index in Self.online(zone.count, &random) { _ = try await zone[index].syncNow() }
                }
            }
            let healing = ContinuousClock.now
            for _ in 0..<2 {
                for machine in zone { _ = try await machine.syncNow() }
            }
            let healed = ContinuousClock.now - healing
            let expected = Self.items(oracle)
            for (index, machine) in zone.enumerated() {
                let items = try machine.syncedItems()
                #expect(items == expected, "machine \(index), seed \(seed)")
                let primaryKeys = items.map { $0.split(separator: "|").prefix(2).joined(separator: "|") }
                #expect(Set(primaryKeys).count == primaryKeys.count, "duplicate primary keys on machine \(index)")
                #expect(try SyncSetup.status(of: machine.keychain).pendingChanges == 0)
            }
            #expect(rounds == Self.operations / Self.operationsPerRound)
            #expect(expected.count > 0 && expected.count < Self.keys, "the run deletes some keys and keeps others")
            print(
                "sync: \(Self.operations) writes on \(Self.machines) machines in \(rounds) partitioned rounds; "
                    + "\(expected.count) keys live; healed in \(healed) (two passes of sync now)")
        }

        /// One random write of `key` on `machine`: an update or a deletion when the machine holds
        /// the key, an add when it does not; what the oracle records.
        static func write(_ operation: Int, key: Int, on machine: TestMachine, _ random: inout SplitMix64) throws
            -> String?
        {
            let query = machine.query(service: "p\(key)", account: "shared")
            let value = "v\(operation)"
            if try machine.keychain.find(query).isEmpty {
                try machine.add(service: "p\(key)", account: "shared", secret: value)
                return value
            }
            if Int.random(in: 0..<10, using: &random) < 6 {
                try machine.keychain.update(query, attributes: [:], data: Data(value.utf8))
                return value
            }
            try machine.keychain.delete(query)
            return nil
        }

        /// The machines that reach the server this round: each with probability 0.6, in random
        /// order (sometimes none).
        static func online(_ count: Int, _ random: inout SplitMix64) -> [Int] {
            (0..<count).filter { _ in Int.random(in: 0..<10, using: &random) < 6 }.shuffled(using: &random)
        }

        /// The synchronizable items the oracle expects, as ``TestMachine/syncedItems()`` lists them.
        static func items(_ oracle: Oracle) -> [String] {
            oracle.compactMap { key, value in value.map { "p\(key)|shared|\($0)" } }.sorted()
        }
    }
}
