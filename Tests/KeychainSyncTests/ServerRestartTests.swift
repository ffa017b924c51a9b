import Foundation
import KeychainCore
import PostgresScratchServer
import Synchronization
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// The design's durability test (docs/sync.md, test plan 8): machines push as fast as they can
    /// while the server is stopped with `pg_ctl restart -m immediate` (no checkpoint, as after a
    /// power cut of the server process); every commit a push acknowledged before the restart is
    /// still there after it, and every write made during the outage arrives once the server is back.
    /// Each machine keeps its engine and connections, as keychaind's runner does, and writes
    /// ``itemsPerRound`` items between rounds, so the server takes the design's 200 records a
    /// second even in a debug build (the rate is printed, not asserted).
    @Suite("A server restarted under load loses no acknowledged commit", .serialized, .timeLimit(.minutes(4)))
    struct ServerRestartTests {
        static let pushers = 4
        static let itemsPerRound = 8

        /// What one pushing machine did: how many items it wrote, and how many of them a push had
        /// acknowledged (a `sync now` that returned after the item was written).
        struct Pushed: Sendable {
            var written = 0
            var acknowledged = 0
            var pushes = 0
            var records = 0
            var failures = 0
        }

        @Test("4 machines pushing through pg_ctl restart -m immediate: 0 acknowledged commits lost")
        func restartUnderLoad() async throws {
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            let zone = try await makeZone(machines: Self.pushers + 1, cluster: cluster)
            let reader = zone[Self.pushers]
            let stop = StopFlag()
            let started = ContinuousClock.now
            let results = try await withThrowingTaskGroup(of: (Int, Pushed).self) { group in
                for index in 0..<Self.pushers {
                    let machine = zone[index]
                    group.addTask { (index, try await Self.push(machine, index, until: stop)) }
                }
                try await Task.sleep(for: .seconds(3))
                let beforeRestart = stop.records.load(ordering: .relaxed)
                print(
                    "sync: \(beforeRestart) records pushed in the 3 s before the restart (\(beforeRestart / 3)/s, debug build)"
                )
                // pg_ctl waits for the server: on a Dispatch thread, not one of the test pool's.
                try await onDispatchThread { try cluster.restart(mode: .immediate) }
                try await Task.sleep(for: .seconds(3))
                stop.value.store(true, ordering: .relaxed)
                var results = [Pushed](repeating: Pushed(), count: Self.pushers)
                for try await (index, pushed) in group { results[index] = pushed }
                return results
            }
            let elapsed = ContinuousClock.now - started
            // After the load: each machine pushes what the outage left pending, then the reader pulls.
            for machine in zone.prefix(Self.pushers) { _ = try await machine.syncNow() }
            _ = try await reader.syncNow()
            let arrived = Set(try reader.syncedItems())
            for (index, pushed) in results.enumerated() {
                #expect(pushed.acknowledged > 0, "machine \(index) had pushes acknowledged")
                let acknowledgedLost = (0..<pushed.acknowledged).filter { !arrived.contains(Self.item(index, $0)) }
                #expect(acknowledgedLost.isEmpty, "machine \(index) lost acknowledged items \(acknowledgedLost)")
                let lost = (0..<pushed.written).filter { !arrived.contains(Self.item(index, $0)) }
                #expect(lost.isEmpty, "machine \(index) lost items written during the outage: \(lost)")
            }
            #expect(arrived.count == results.map(\.written).reduce(0, +))
            #expect(results.map(\.failures).reduce(0, +) > 0, "some pushes met the restart")
            let pushes = results.map(\.pushes).reduce(0, +)
            let records = results.map(\.records).reduce(0, +)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "sync: \(records) records in \(pushes) acknowledged rounds by \(Self.pushers) machines in \(elapsed) "
                    + "(\(Int(Double(records) / seconds)) records/s, \(Int(Double(pushes) / seconds)) rounds/s, "
                    + "debug build, outage included), through an immediate restart; "
                    + "\(results.map(\.failures).reduce(0, +)) rounds failed during the outage; 0 lost")
        }

        /// The item `number` of pusher `index`, as ``TestMachine/syncedItems()`` lists it.
        static func item(_ index: Int, _ number: Int) -> String { "load\(index)|n\(number)|secret-\(number)" }

        /// Adds ``itemsPerRound`` items and syncs on one engine, again and again until `stop`; a
        /// round that fails (the server is down) is retried with the next items after a short
        /// pause, on connections the engine opens again.
        static func push(_ machine: TestMachine, _ index: Int, until stop: StopFlag) async throws
            -> Pushed
        {
            try await SyncSetup.withEngine(keychain: machine.keychain) { engine in
                var pushed = Pushed()
                while !stop.value.load(ordering: .relaxed) {
                    for _ in 0..<itemsPerRound {
                        try machine.add(
                            service: "load\(index)", account: "n\(pushed.written)", secret: "secret-\(pushed.written)")
                        pushed.written += 1
                    }
                    do {
                        let round = try await withSyncDeadline(SyncSetup.roundLimit) { try await engine.syncNow() }
                        pushed.acknowledged = pushed.written
                        pushed.pushes += 1
                        pushed.records += round.pushed
                        stop.records.add(round.pushed, ordering: .relaxed)
                    } catch {
                        pushed.failures += 1
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
                return pushed
            }
        }
    }
}

/// A flag that tells the pushers to stop, and the records they pushed so far.
final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
    let records = Atomic<Int>(0)
}

/// Runs `work` (CPU-heavy, or waiting for a process) on a Dispatch thread, leaving the test
/// pool's two threads free.
func onDispatchThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

extension SyncIntegration {
    @Suite("The scratch server's processes", .timeLimit(.minutes(2)))
    struct ScratchServerDescriptorTests {
        /// The postmaster and the watchdog outlive the call that starts them: a descriptor of the
        /// starting process they inherited would stay open for their whole life (a test's D-Bus
        /// connection that then never closes, so the bus never says its client left).
        @Test("a server started from this process holds none of its descriptors")
        func inheritsNoDescriptor() throws {
            var ends: [Int32] = [-1, -1]
            #expect(pipe(&ends) == 0)  // not close-on-exec: as a NIO socket is
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            close(ends[1])
            _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
            var byte: UInt8 = 0
            // End of file: no other process holds the write end.
            #expect(read(ends[0], &byte, 1) == 0, "a process the server started holds this process's pipe")
            close(ends[0])
        }
    }
}
