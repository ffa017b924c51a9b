import Foundation
import PostgresScratchServer
import KeychainCore
import Testing

@testable import KeychainSync

/// What a malicious or careless server can do to a zone, done for real as the superuser of the
/// suite's PostgreSQL, and what the devices make of it: every change is refused (nothing
/// applied, the cursor kept), and the zone syncs again once the rows are put back.
extension SyncIntegration {
    @Suite("A hostile server is caught", .serialized, .timeLimit(.minutes(10)))
    struct HostileServerTests {
        /// Two machines with `count` synced items, all pulled by B; then A adds one more, pushed.
        private func zoneWithPendingPull(count: Int = 3) async throws -> (a: TestMachine, b: TestMachine, zone: String)
        {
            let machines = try await makeZone(machines: 2)
            let (a, b) = (machines[0], machines[1])
            for index in 0..<count { try a.add(service: "svc", account: "acct\(index)", secret: "secret \(index)") }
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            try a.add(service: "svc", account: "late", secret: "late secret")
            _ = try await a.syncNow()
            return (a, b, try SyncSetup.status(of: a.keychain).zone.description)
        }

        /// B's pull fails with a sync error of one of `codes`, and B's cursor and items stay as they were.
        private func expectRefused(_ b: TestMachine, codes: Set<SyncError.Code>) async throws {
            let before = try SyncSetup.status(of: b.keychain).headSeq
            let items = try b.syncedItems()
            do {
                _ = try await b.syncNow()
                Issue.record("the pull was accepted")
            } catch let error as SyncError {
                #expect(codes.contains(error.code), "\(error)")
            }
            #expect(try SyncSetup.status(of: b.keychain).headSeq == before)
            #expect(try b.syncedItems() == items)
        }

        @Test("a flipped byte in a record's blob is refused, and the zone syncs once it is restored")
        func flippedBlobByte() async throws {
            let (_, b, zone) = try await zoneWithPendingPull()
            let cluster = try SharedCluster.get()
            let original = try cluster.sql(
                "SELECT encode(blob, 'hex') FROM keychain_sync.records WHERE zone_id = '\(zone)' ORDER BY seq DESC LIMIT 1"
            )
            try cluster.sql(
                """
                UPDATE keychain_sync.records SET blob = set_byte(blob, 200, get_byte(blob, 200) # 1)
                WHERE zone_id = '\(zone)' AND seq = (SELECT max(seq) FROM keychain_sync.records WHERE zone_id = '\(zone)')
                """)
            try await expectRefused(b, codes: [.tampered])
            try cluster.sql(
                """
                UPDATE keychain_sync.records SET blob = decode('\(original)', 'hex')
                WHERE zone_id = '\(zone)' AND seq = (SELECT max(seq) FROM keychain_sync.records WHERE zone_id = '\(zone)')
                """)
            _ = try await b.syncNow()
            #expect(try b.syncedItems().contains("svc|late|late secret"))
        }

        @Test("a record's blob swapped with another record's is refused")
        func swappedBlobs() async throws {
            let (_, b, zone) = try await zoneWithPendingPull()
            let cluster = try SharedCluster.get()
            // The newest record gets an older record's blob (a valid blob, of another record).
            try cluster.sql(
                """
                UPDATE keychain_sync.records r SET blob = o.blob
                FROM (SELECT blob FROM keychain_sync.records WHERE zone_id = '\(zone)' ORDER BY seq ASC LIMIT 1) o
                WHERE r.zone_id = '\(zone)' AND r.seq = (SELECT max(seq) FROM keychain_sync.records WHERE zone_id = '\(zone)')
                """)
            try await expectRefused(b, codes: [.tampered])
        }

        @Test("a dropped record is caught by the signed state digest")
        func droppedRecord() async throws {
            let (_, b, zone) = try await zoneWithPendingPull()
            let cluster = try SharedCluster.get()
            try cluster.sql(
                """
                DELETE FROM keychain_sync.records
                WHERE zone_id = '\(zone)' AND seq = (SELECT max(seq) FROM keychain_sync.records WHERE zone_id = '\(zone)')
                """)
            try await expectRefused(b, codes: [.tampered])
        }

        @Test("a live record dropped with a collected tombstone is not taken for a deletion")
        func droppedRecordIsNotACollectedTombstone() async throws {
            let machines = try await makeZone(machines: 2)
            let (a, b) = (machines[0], machines[1])
            try a.add(service: "svc", account: "x", secret: "deleted")
            try a.add(service: "svc", account: "y", secret: "kept")
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            try a.keychain.delete(a.query(service: "svc", account: "x"))
            _ = try await a.syncNow()
            let zone = try SyncSetup.status(of: a.keychain).zone.description
            let cluster = try SharedCluster.get()
            // x's tombstone goes as a collection would take it; y, live, goes with it.
            let kept = try cluster.sql(
                """
                SELECT encode(record_id, 'hex') || ' ' || seq || ' ' || key_id || ' ' || encode(blob, 'hex')
                FROM keychain_sync.records WHERE zone_id = '\(zone)' AND NOT tombstone
                """
            ).split(separator: " ").map(String.init)
            try cluster.sql("DELETE FROM keychain_sync.records WHERE zone_id = '\(zone)'")
            try await expectRefused(b, codes: [.tampered])
            // With y back, the missing tombstone alone is a collected one: B deletes x, keeps y.
            try cluster.sql(
                """
                INSERT INTO keychain_sync.records (zone_id, record_id, seq, key_id, tombstone, blob)
                VALUES ('\(zone)', decode('\(kept[0])', 'hex'), \(kept[1]), '\(kept[2])', false, decode('\(kept[3])', 'hex'))
                """)
            _ = try await b.syncNow()
            #expect(try b.syncedItems() == ["svc|y|kept"])
        }

        @Test("a replayed older version of a record is caught")
        func replayedRecord() async throws {
            let machines = try await makeZone(machines: 2)
            let (a, b) = (machines[0], machines[1])
            try a.add(service: "svc", account: "x", secret: "v1")
            _ = try await a.syncNow()
            let zone = try SyncSetup.status(of: a.keychain).zone.description
            let cluster = try SharedCluster.get()
            let old = try cluster.sql(
                "SELECT encode(blob, 'hex') FROM keychain_sync.records WHERE zone_id = '\(zone)'")
            try a.keychain.update(a.query(service: "svc", account: "x"), attributes: [:], data: Data("v2".utf8))
            _ = try await a.syncNow()
            try cluster.sql("UPDATE keychain_sync.records SET blob = decode('\(old)', 'hex') WHERE zone_id = '\(zone)'")
            try await expectRefused(b, codes: [.tampered])
        }

        @Test("a head whose signature does not verify, or a rewritten chain, is refused")
        func forgedHead() async throws {
            let (_, b, zone) = try await zoneWithPendingPull()
            let cluster = try SharedCluster.get()
            try cluster.sql(
                """
                UPDATE keychain_sync.commits SET head = set_byte(head, length(head) - 1, get_byte(head, length(head) - 1) # 1)
                WHERE zone_id = '\(zone)' AND seq = (SELECT max(seq) FROM keychain_sync.commits WHERE zone_id = '\(zone)')
                """)
            try await expectRefused(b, codes: [.tampered, .forked])
        }

        @Test("a roster the server rewrites is refused by the members and by a machine that just joined")
        func forgedRosterIsRefused() async throws {
            let machines = try await makeZone(machines: 2)
            let (a, b) = (machines[0], machines[1])
            try a.add(service: "svc", account: "y", secret: "shared")
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            let newcomer = try TestMachine()
            let code = try await SyncSetup.invite(keychain: a.keychain)
            _ = try await SyncSetup.join(keychain: newcomer.keychain, code: code, deviceName: "late")
            #expect(try await SyncSetup.approve(keychain: a.keychain).count == 1)
            let zone = try SyncSetup.status(of: a.keychain).zone.description
            let cluster = try SharedCluster.get()
            let latest = "(SELECT max(epoch) FROM keychain_sync.rosters WHERE zone_id = '\(zone)')"
            let original = try cluster.sql(
                "SELECT encode(blob, 'hex') FROM keychain_sync.rosters WHERE zone_id = '\(zone)' AND epoch = \(latest)")
            try cluster.sql(
                """
                UPDATE keychain_sync.rosters SET blob = set_byte(blob, 40, get_byte(blob, 40) # 1)
                WHERE zone_id = '\(zone)' AND epoch = \(latest)
                """)
            await #expect(throws: SyncError.self) { _ = try await newcomer.syncNow() }
            #expect(try newcomer.syncedItems().isEmpty)
            try await expectRefused(b, codes: [.tampered, .malformed])
            try cluster.sql(
                """
                UPDATE keychain_sync.rosters SET blob = decode('\(original)', 'hex')
                WHERE zone_id = '\(zone)' AND epoch = \(latest)
                """)
            _ = try await newcomer.syncNow()
            _ = try await b.syncNow()
            #expect(try newcomer.syncedItems() == ["svc|y|shared"])
            #expect(try SyncSetup.devices(of: b.keychain).count == 3)
        }
    }
}

/// Test 2 of the design's plan: the server never holds a secret or an attribute value.
extension SyncIntegration {
    @Suite(
        "Zero knowledge: the server's files, WAL, dump and statement log hold no canary", .serialized,
        .timeLimit(.minutes(10)))
    struct ZeroKnowledgeTests {
        @Test("canary secrets and attributes of three machines appear nowhere on the server")
        func noCanaryOnTheServer() async throws {
            let machines = try await makeZone(machines: 3)
            let canary = "CANARY\(UInt32.random(in: 100_000...999_999))"
            var canaries: [String] = []
            for (index, machine) in machines.enumerated() {
                let values = [
                    "\(canary)svc\(index)", "\(canary)acct\(index)", "\(canary)secret\(index)",
                    "\(canary)label\(index)",
                ]
                canaries += values
                try machine.keychain.add(
                    Item(
                        class: .genericPassword,
                        attributes: [
                            .service: .string(values[0]), .account: .string(values[1]), .label: .string(values[3]),
                            .synchronizable: .number(1),
                        ], data: Data(values[2].utf8)))
                // A this-device-only item: not even a row.
                try machine.add(
                    service: "\(canary)local\(index)", account: "x", secret: "\(canary)local", accessible: "aku")
                _ = try await machine.syncNow()
            }
            for machine in machines { _ = try await machine.syncNow() }
            #expect(try machines[2].syncedItems().count == 3 + 1)
            let cluster = try SharedCluster.get()
            try cluster.sql("CHECKPOINT")
            var haystacks: [(String, Data)] = []
            for directory in ["base", "pg_wal", "global"] {
                let root = cluster.dataDirectory.appendingPathComponent(directory)
                let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
                while let file = files?.nextObject() as? URL {
                    if let data = try? Data(contentsOf: file) { haystacks.append((file.path, data)) }
                }
            }
            haystacks.append(("statement log", try Data(contentsOf: cluster.logFile)))
            haystacks.append(("pg_dump", Data(try cluster.dump().utf8)))
            #expect(haystacks.count > 10)
            // The scan takes seconds of CPU: on a Dispatch thread, not one of the test pool's two.
            let needles = (canaries + ["\(canary)local"]).flatMap { needle in encodings(of: needle).map { (needle, $0) }
            }
            let searched = haystacks
            let hits = try await onDispatchThread {
                var hits: [String] = []
                for (needle, form) in needles {
                    for (name, data) in searched where data.range(of: form) != nil {
                        hits.append("\(needle) in \(name)")
                    }
                }
                return hits
            }
            #expect(hits.isEmpty, "\(hits.prefix(5))")
            // The scan finds what is there: the zone's id is on the server in the clear.
            let zone = try SyncSetup.status(of: machines[0].keychain).zone.description
            #expect(searched.contains { $0.1.range(of: Data(zone.utf8)) != nil })
        }

        /// A value as raw UTF-8, UTF-16 (both byte orders), hex and base64.
        private func encodings(of value: String) -> [Data] {
            let utf8 = Data(value.utf8)
            return [
                utf8, value.data(using: .utf16LittleEndian)!, value.data(using: .utf16BigEndian)!,
                Data(utf8.map { String(format: "%02x", $0) }.joined().utf8),
                Data(utf8.base64EncodedString().dropLast(4).utf8),
            ]
        }
    }
}

extension PostgresCluster {
    /// The whole database as `pg_dump` writes it (as the superuser).
    func dump() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binaries + "/pg_dump")
        process.arguments = ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database]
        process.environment = ["PGPASSWORD": superuserPassword]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SyncError(.server, "pg_dump failed") }
        return String(decoding: data, as: UTF8.self)
    }
}
