import Foundation
import KeychainCore
import PostgresScratchServer
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// The design's amnesia test (docs/sync.md, test plan 9): the server's rows of a zone are put
    /// back as they were earlier (as a restored backup, or a failover to a replica that lagged,
    /// would leave them); every machine finds its last verified head gone, writes back from its
    /// mirror what the server lost, and all end with every item. One test restores a real base
    /// backup (`pg_basebackup`) over a stopped server.
    @Suite("A server that lost the end of the log is repaired by the machines", .serialized, .timeLimit(.minutes(10)))
    struct AmnesiaTests {
        /// Copies the zone's records, heads and head aside, as the superuser; returns the name
        /// prefix of the copies.
        private func snapshot(_ zone: String) throws -> String {
            let snapshot = "snap_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            try SharedCluster.get().sql(
                """
                CREATE TABLE \(snapshot)_records AS SELECT * FROM keychain_sync.records WHERE zone_id = '\(zone)';
                CREATE TABLE \(snapshot)_commits AS SELECT * FROM keychain_sync.commits WHERE zone_id = '\(zone)';
                CREATE TABLE \(snapshot)_zone AS SELECT head_seq, head_hash FROM keychain_sync.zones WHERE zone_id = '\(zone)';
                """)
            return snapshot
        }

        /// Puts the zone's rows back as `snapshot` had them, and drops the copies.
        private func restore(_ zone: String, from snapshot: String) throws {
            try SharedCluster.get().sql(
                """
                BEGIN;
                DELETE FROM keychain_sync.records WHERE zone_id = '\(zone)';
                DELETE FROM keychain_sync.commits WHERE zone_id = '\(zone)';
                INSERT INTO keychain_sync.records SELECT * FROM \(snapshot)_records;
                INSERT INTO keychain_sync.commits SELECT * FROM \(snapshot)_commits;
                UPDATE keychain_sync.zones z SET head_seq = s.head_seq, head_hash = s.head_hash
                    FROM \(snapshot)_zone s WHERE z.zone_id = '\(zone)';
                COMMIT;
                DROP TABLE \(snapshot)_records, \(snapshot)_commits, \(snapshot)_zone;
                """)
        }

        @Test("the zone's rows rewound to an earlier snapshot: every machine detects it and re-pushes; 0 items lost")
        func rewoundServerIsRepaired() async throws {
            let machines = try await makeZone(machines: 3)
            let (a, b, c) = (machines[0], machines[1], machines[2])
            let cluster = try SharedCluster.get()
            let zone = try SyncSetup.status(of: a.keychain).zone.description
            for index in 0..<10 { try a.add(service: "amnesia", account: "s\(index)", secret: "v\(index)") }
            for machine in machines { _ = try await machine.syncNow() }

            // The "backup": the zone's records, heads and head, as the superuser sees them.
            let backup = try snapshot(zone)

            // After the backup: adds, an update, a delete, on every machine.
            for index in 0..<3 { try a.add(service: "amnesia", account: "a\(index)", secret: "after") }
            try b.keychain.update(b.query(service: "amnesia", account: "s0"), attributes: [:], data: Data("b".utf8))
            try b.add(service: "amnesia", account: "b0", secret: "after")
            try c.keychain.delete(c.query(service: "amnesia", account: "s1"))
            for _ in 0..<2 {
                for machine in machines { _ = try await machine.syncNow() }
            }
            let expected = try a.syncedItems()
            #expect(expected.count == 13)  // 10 + 3 adds by A + 1 by B - 1 deleted by C
            #expect(expected.contains("amnesia|s0|b") && !expected.contains { $0.hasPrefix("amnesia|s1|") })
            #expect(try b.syncedItems() == expected)
            #expect(try c.syncedItems() == expected)
            let before = try cluster.sql("SELECT head_seq FROM keychain_sync.zones WHERE zone_id = '\(zone)'")

            // The restore: everything written after the backup is gone from the server.
            try restore(zone, from: backup)
            let restored = try cluster.sql("SELECT head_seq FROM keychain_sync.zones WHERE zone_id = '\(zone)'")
            #expect(Int(restored)! < Int(before)!)

            let started = ContinuousClock.now
            var pushed: [Int] = []
            for machine in machines { pushed.append(try await machine.syncNow().pushed) }
            for machine in machines { _ = try await machine.syncNow() }
            let repaired = ContinuousClock.now - started
            for (index, machine) in machines.enumerated() {
                #expect(try machine.syncedItems() == expected, "machine \(index)")
                let status = try SyncSetup.status(of: machine.keychain)
                #expect(status.rollbacksRepaired == 1, "machine \(index) detected the rewind")
                #expect(status.pendingChanges == 0)
            }
            // The first machine wrote back everything the server lost (3 adds, the update, an
            // add and the delete, all of which it had seen).
            #expect(pushed[0] == 6)
            let live = try cluster.sql(
                "SELECT count(*) FROM keychain_sync.records WHERE zone_id = '\(zone)' AND NOT tombstone")
            #expect(live == "\(expected.count)")
            // A machine that joins afterwards gets the repaired zone.
            let late = try TestMachine()
            let code = try await SyncSetup.invite(keychain: b.keychain)
            _ = try await SyncSetup.join(keychain: late.keychain, code: code, deviceName: "late")
            #expect(try await SyncSetup.approve(keychain: b.keychain).count == 1)
            _ = try await late.syncNow()
            #expect(try late.syncedItems() == expected)
            print(
                "sync amnesia: head \(before) rewound to \(restored); 3 machines repaired and converged in \(repaired); "
                    + "written back: \(pushed)")
        }

        @Test(
            "a real base backup restored after more commits (pg_basebackup, then the server stopped at once and the backup put in its place): every machine repairs; 0 items lost"
        )
        func restoredBaseBackupIsRepaired() async throws {
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            let machines = try await makeZone(machines: 3, cluster: cluster)
            let (a, b, c) = (machines[0], machines[1], machines[2])
            let zone = try SyncSetup.status(of: a.keychain).zone.description
            let head = "SELECT head_seq FROM keychain_sync.zones WHERE zone_id = '\(zone)'"
            for index in 0..<10 { try a.add(service: "backup", account: "s\(index)", secret: "v\(index)") }
            for machine in machines { _ = try await machine.syncNow() }
            let backup = try await onDispatchThread { try cluster.baseBackup(named: "backup") }

            // After the backup: adds, an update and a delete, each on another machine.
            for index in 0..<3 { try a.add(service: "backup", account: "a\(index)", secret: "after") }
            try b.keychain.update(b.query(service: "backup", account: "s0"), attributes: [:], data: Data("b".utf8))
            try c.keychain.delete(c.query(service: "backup", account: "s1"))
            for _ in 0..<2 {
                for machine in machines { _ = try await machine.syncNow() }
            }
            let expected = try a.syncedItems()
            #expect(expected.count == 12)  // 10 + 3 adds by A - 1 deleted by C
            #expect(expected.contains("backup|s0|b") && !expected.contains { $0.hasPrefix("backup|s1|") })
            let before = try cluster.sql(head)

            try await onDispatchThread { try cluster.restore(from: backup) }
            let restored = try cluster.sql(head)
            #expect(Int(restored)! < Int(before)!, "the restored server lost the commits after the backup")

            for _ in 0..<2 {
                for machine in machines { _ = try await machine.syncNow() }
            }
            for (index, machine) in machines.enumerated() {
                #expect(try machine.syncedItems() == expected, "machine \(index)")
                let status = try SyncSetup.status(of: machine.keychain)
                #expect(status.rollbacksRepaired == 1, "machine \(index) detected the restore")
                #expect(status.pendingChanges == 0)
            }
            let live = try cluster.sql(
                "SELECT count(*) FROM keychain_sync.records WHERE zone_id = '\(zone)' AND NOT tombstone")
            #expect(live == "\(expected.count)")
            print("sync amnesia from a base backup: head \(before) restored to \(restored); 3 machines repaired")
        }

        @Test(
            "a rewound log written again past a machine's head is detected: the same seq with another hash, and a next head that does not chain"
        )
        func rewrittenLogIsDetected() async throws {
            let machines = try await makeZone(machines: 3)
            let (a, b, c) = (machines[0], machines[1], machines[2])
            let zone = try SyncSetup.status(of: a.keychain).zone.description
            try a.add(service: "rewrite", account: "base", secret: "0")
            for machine in machines { _ = try await machine.syncNow() }
            let backup = try snapshot(zone)
            try b.add(service: "rewrite", account: "b1", secret: "1")
            for machine in [b, a, c] { _ = try await machine.syncNow() }
            try restore(zone, from: backup)
            // A finds the server before its head and writes B's item back, with one of its own:
            // the log has B's and C's sequence number again, with another head.
            try a.add(service: "rewrite", account: "a1", secret: "2")
            _ = try await a.syncNow()
            #expect(try SyncSetup.status(of: a.keychain).headSeq == SyncSetup.status(of: b.keychain).headSeq)
            _ = try await b.syncNow()
            #expect(try SyncSetup.status(of: b.keychain).rollbacksRepaired == 1)
            #expect(try b.syncedItems().contains("rewrite|a1|2"))
            // One more commit: C's next head does not chain from its own.
            try a.add(service: "rewrite", account: "a2", secret: "3")
            _ = try await a.syncNow()
            _ = try await c.syncNow()
            for machine in machines { _ = try await machine.syncNow() }
            let expected = ["rewrite|a1|2", "rewrite|a2|3", "rewrite|b1|1", "rewrite|base|0"]
            for (index, machine) in machines.enumerated() {
                #expect(try machine.syncedItems() == expected, "machine \(index)")
                #expect(try SyncSetup.status(of: machine.keychain).rollbacksRepaired == 1, "machine \(index)")
            }
        }
    }
}
