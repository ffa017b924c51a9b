import Foundation
import KeychainCore
import PostgresScratchServer
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// The design's tombstone test (docs/sync.md, test plan 13): the server purges tombstones
    /// older than the zone's retention R that every active machine has acknowledged, and heads
    /// every machine has passed; a machine offline longer than R reconciles, applies the
    /// deletions it missed, and keeps (and pushes again) its own edits of deleted items.
    @Suite("Tombstones and heads are collected", .serialized, .timeLimit(.minutes(10)))
    struct GarbageCollectionTests {
        /// R for these tests, as a PostgreSQL interval.
        static let retention = "2 seconds"

        private func zoneID(_ machine: TestMachine) throws -> String {
            try SyncSetup.status(of: machine.keychain).zone.description
        }

        private func tombstones(_ zone: String) throws -> String {
            try SharedCluster.get().sql(
                "SELECT count(*) FROM keychain_sync.records WHERE zone_id = '\(zone)' AND tombstone")
        }

        @Test(
            "tombstones older than R go; a machine offline past R applies the deletes and keeps its edits; a machine joining after gets everything"
        )
        func tombstonesAreCollected() async throws {
            let machines = try await makeZone(machines: 3)
            let (a, b, c) = (machines[0], machines[1], machines[2])
            let cluster = try SharedCluster.get()
            let zone = try zoneID(a)
            try cluster.sql(
                "UPDATE keychain_sync.zones SET tombstone_retention = interval '\(Self.retention)' WHERE zone_id = '\(zone)'"
            )
            for index in 0..<6 { try a.add(service: "gc", account: "k\(index)", secret: "v\(index)") }
            for machine in machines { _ = try await machine.syncNow() }
            #expect(try c.syncedItems().count == 6)

            // C goes offline and edits k0 (which A deletes later) and k5 (which stays).
            try c.keychain.update(c.query(service: "gc", account: "k0"), attributes: [:], data: Data("c0".utf8))
            try c.keychain.update(c.query(service: "gc", account: "k5"), attributes: [:], data: Data("c5".utf8))
            try await Task.sleep(for: .milliseconds(5))
            for index in 0..<3 { try a.keychain.delete(a.query(service: "gc", account: "k\(index)")) }
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try tombstones(zone) == "3")

            // Past R: A and B acknowledge again; C, silent for longer than R, no longer holds
            // the tombstones back.
            let waited = ContinuousClock.now
            try await Task.sleep(for: .seconds(2.5))
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try tombstones(zone) == "0")
            let headsBefore = try cluster.sql(
                "SELECT count(*) FROM keychain_sync.commits WHERE zone_id = '\(zone)'")

            // C comes back: the deletions of k1 and k2 apply; its edits of k0 and k5 stay and
            // are pushed (k0 comes back to life rather than losing C's edit).
            let returned = ContinuousClock.now
            _ = try await c.syncNow()
            let reconciled = ContinuousClock.now - returned
            let expected = ["gc|k0|c0", "gc|k3|v3", "gc|k4|v4", "gc|k5|c5"]
            #expect(try c.syncedItems() == expected)
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try a.syncedItems() == expected)
            #expect(try b.syncedItems() == expected)
            for machine in machines {
                #expect(try SyncSetup.status(of: machine.keychain).pendingChanges == 0)
            }

            // Every machine has passed the older heads: they went, the newest stays.
            let heads = try cluster.sql(
                """
                SELECT min(seq) > 1, count(*) < max(seq), max(seq) = (SELECT head_seq FROM keychain_sync.zones
                WHERE zone_id = '\(zone)') FROM keychain_sync.commits WHERE zone_id = '\(zone)'
                """)
            #expect(heads == "t|t|t")

            // A machine joining now starts from the oldest head kept and receives every item.
            let late = try TestMachine()
            let code = try await SyncSetup.invite(keychain: a.keychain)
            _ = try await SyncSetup.join(keychain: late.keychain, code: code, deviceName: "late")
            #expect(try await SyncSetup.approve(keychain: a.keychain).count == 1)
            _ = try await late.syncNow()
            #expect(try late.syncedItems() == expected)
            print(
                "sync GC: 3 tombstones purged \(Self.retention) after the deletes (waited \(ContinuousClock.now - waited)); "
                    + "\(headsBefore) heads kept before C returned; C reconciled in \(reconciled)")
        }

        @Test("a tombstone older than R stays until every active machine has acknowledged it")
        func activeMachineHoldsTombstones() async throws {
            let machines = try await makeZone(machines: 2)
            let (a, b) = (machines[0], machines[1])
            let cluster = try SharedCluster.get()
            let zone = try zoneID(a)
            try cluster.sql(
                "UPDATE keychain_sync.zones SET tombstone_retention = interval '1 hour' WHERE zone_id = '\(zone)'")
            try a.add(service: "gc", account: "gone", secret: "x")
            try a.add(service: "gc", account: "kept", secret: "y")
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            try a.keychain.delete(a.query(service: "gc", account: "gone"))
            _ = try await a.syncNow()
            // The tombstone is made older than R; B, which acknowledged within R, has not seen it.
            try cluster.sql(
                """
                UPDATE keychain_sync.records SET written_at = now() - interval '2 hours'
                WHERE zone_id = '\(zone)' AND tombstone
                """)
            _ = try await a.syncNow()
            #expect(try tombstones(zone) == "1")
            _ = try await b.syncNow()
            #expect(try tombstones(zone) == "0")
            #expect(try b.syncedItems() == ["gc|kept|y"])
            // A superuser (a cron job) may collect too.
            #expect(try cluster.sql("SELECT keychain_sync.kc_collect_garbage('\(zone)')") == "0")
        }
    }
}
