import Foundation
import KeychainCore
import PostgresScratchServer
import Testing

@testable import KeychainSync

/// The background sync keychaind runs: a change on one machine reaches the other through
/// `LISTEN`/`NOTIFY` without anyone running `security sync now`, and survives a server restart.
extension SyncIntegration {
    @Suite("Background sync (LISTEN, journal watch, reconnect)", .serialized, .timeLimit(.minutes(10)))
    struct SyncRunnerTests {

        @Test("adds on one machine reach the other by themselves, 20 times in a row")
        func changesArriveWithoutSyncNow() async throws {
            let machines = try await makeZone(machines: 2)
            let (a, b) = (machines[0], machines[1])
            let runners = [a, b].map { SyncRunner(keychain: $0.keychain, pollInterval: .seconds(600)) }
            for runner in runners { runner.start() }
            var times: [Duration] = []
            for round in 0..<20 {
                try a.add(service: "live", account: "r\(round)", secret: "v\(round)")
                let arrived = try await timeUntil(within: .seconds(20)) {
                    try b.syncedItems().contains("live|r\(round)|v\(round)")
                }
                #expect(arrived != nil, "round \(round) did not arrive; \(runners[1].lastError ?? "no error")")
                if let arrived { times.append(arrived) }
            }
            // And back: B's change reaches A.
            try b.keychain.update(b.query(service: "live", account: "r0"), attributes: [:], data: Data("from b".utf8))
            #expect(
                try await timeUntil(within: .seconds(20)) { try a.syncedItems().contains("live|r0|from b") } != nil)
            for runner in runners { await runner.stop() }
            #expect(runners.allSatisfy { $0.lastError == nil })
            let sorted = times.sorted()
            print(
                "sync: background propagation over \(sorted.count) rounds: median \(sorted[sorted.count / 2]), max \(sorted.last!)"
            )
        }

        @Test("after the server restarts (immediate shutdown), the runners reconnect and changes flow again")
        func reconnectsAfterARestart() async throws {
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            let machines = try await makeZone(machines: 2, cluster: cluster)
            let (a, b) = (machines[0], machines[1])
            let runners = [a, b].map { SyncRunner(keychain: $0.keychain, pollInterval: .seconds(600)) }
            for runner in runners { runner.start() }
            try a.add(service: "before", account: "x", secret: "1")
            #expect(try await timeUntil(within: .seconds(20)) { try b.syncedItems().count == 1 } != nil)
            try cluster.restart(mode: .immediate)
            try a.add(service: "after", account: "x", secret: "2")
            #expect(try await timeUntil(within: .seconds(60)) { try b.syncedItems().count == 2 } != nil)
            for runner in runners { await runner.stop() }
        }
    }
}
