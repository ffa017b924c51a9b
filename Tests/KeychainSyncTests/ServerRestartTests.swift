import Foundation
import KeychainCore
import PostgresScratchServer
import Synchronization
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// The design's durability test (docs/sync.md, test plan 8): machines push as fast as they can
    /// while the server is stopped with `pg_ctl restart -m fast` or `-m immediate` (no checkpoint,
    /// as after a power cut of the server process); every commit a push acknowledged before the
    /// restart is still there after it, every write made during the outage arrives once the server
    /// is back, every machine pushes again (how soon is printed against the design's 15 s), and
    /// no round waits out its limit (a query lost with a closed connection did, before
    /// ``untilClosed(_:grace:_:)``).
    ///
    /// Two shapes of load, each with both modes. One zone with four machines racing for its head
    /// (compare-and-swap retries meet the restart; each round carries ``Load/itemsPerRound`` adds,
    /// so the server takes about 200 records a second even in a debug build). And several zones with
    /// one machine each, one add per push, so the server takes the design's 200 pushes a second
    /// (commits) in a debug build, which one contended zone cannot: its commits are serial. The
    /// rates are printed, not asserted.
    @Suite("A server restarted under load loses no acknowledged commit", .serialized, .timeLimit(.minutes(10)))
    struct ServerRestartTests {
        /// How the load is spread: `zones` zones (sync accounts) on the one server, `pushers`
        /// machines pushing in each, `itemsPerRound` adds before each push.
        struct Load: Sendable, CustomTestStringConvertible {
            let zones: Int
            let pushers: Int
            let itemsPerRound: Int
            var testDescription: String {
                "\(zones) zone\(zones == 1 ? "" : "s") × \(pushers) machine\(pushers == 1 ? "" : "s"), \(itemsPerRound) add\(itemsPerRound == 1 ? "" : "s") a push"
            }
            static let contended = Load(zones: 1, pushers: 4, itemsPerRound: 8)
            static let spread = Load(zones: 4, pushers: 1, itemsPerRound: 1)
        }

        /// What one pushing machine did: how many items it wrote, and how many of them a push had
        /// acknowledged (a `sync now` that returned after the item was written).
        struct Pushed: Sendable {
            var written = 0
            var acknowledged = 0
            var pushes = 0
            var records = 0
            var failures = 0
            /// From the restart's return to this machine's first acknowledged push after it.
            var resumedAfter: Duration?
            /// Rounds that failed only when their limit (``SyncSetup/roundLimit``) ran out.
            var timedOut = 0
        }

        @Test(
            "machines pushing through a server restart: 0 acknowledged commits lost, pushes resume",
            arguments: [PostgresCluster.ShutdownMode.immediate, .fast], [Load.contended, .spread])
        func restartUnderLoad(mode: PostgresCluster.ShutdownMode, load: Load) async throws {
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            var zones: [[TestMachine]] = []
            for _ in 0..<load.zones { zones.append(try await makeZone(machines: load.pushers + 1, cluster: cluster)) }
            let pushers = zones.flatMap { $0.prefix(load.pushers) }
            let flag = StopFlag()
            let started = ContinuousClock.now
            let results = try await withThrowingTaskGroup(of: (Int, Pushed).self) { group in
                for (index, machine) in pushers.enumerated() {
                    group.addTask { (index, try await Self.push(machine, index, load: load, flag: flag)) }
                }
                try await Task.sleep(for: .seconds(3))
                let records = flag.records.load(ordering: .relaxed)
                let pushes = flag.pushes.load(ordering: .relaxed)
                print(
                    "sync: \(records) records in \(pushes) pushes in the 3 s before the restart "
                        + "(\(records / 3) records/s, \(pushes / 3) pushes/s, \(load.testDescription), debug build)")
                // pg_ctl waits for the server: on a Dispatch thread, not one of the test pool's.
                try await onDispatchThread { try cluster.restart(mode: mode) }
                flag.restarted.withLock { $0 = .now }
                // Until every machine has pushed again (a liveness bound, not a speed limit), and 2 s more.
                let deadline = ContinuousClock.now + .seconds(90)
                while flag.resumed.load(ordering: .relaxed) < pushers.count, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                try await Task.sleep(for: .seconds(2))
                flag.value.store(true, ordering: .relaxed)
                var results = [Pushed](repeating: Pushed(), count: pushers.count)
                for try await (index, pushed) in group { results[index] = pushed }
                return results
            }
            let elapsed = ContinuousClock.now - started
            // After the load: each machine pushes what the outage left pending, then the readers pull.
            for machine in pushers { _ = try await machine.syncNow() }
            var arrived = Set<String>()
            for zone in zones {
                _ = try await zone[load.pushers].syncNow()
                arrived.formUnion(try zone[load.pushers].syncedItems())
            }
            for (index, pushed) in results.enumerated() {
                #expect(pushed.acknowledged > 0, "machine \(index) had pushes acknowledged")
                #expect(pushed.resumedAfter != nil, "machine \(index) pushed again after the restart")
                #expect(pushed.timedOut == 0, "machine \(index): \(pushed.timedOut) rounds waited out their limit")
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
            let resumed = results.compactMap(\.resumedAfter).max() ?? .zero
            print(
                "sync: \(records) records in \(pushes) acknowledged pushes by \(pushers.count) machines in \(elapsed) "
                    + "(\(Int(Double(records) / seconds)) records/s, \(Int(Double(pushes) / seconds)) pushes/s, "
                    + "debug build, outage included), through pg_ctl restart -m \(mode.rawValue); "
                    + "\(results.map(\.failures).reduce(0, +)) pushes failed during the outage; "
                    + "every machine pushed again \(resumed) after the restart at most (design: 15 s); 0 lost")
        }

        /// The item `number` of pusher `index`, as ``TestMachine/syncedItems()`` lists it.
        static func item(_ index: Int, _ number: Int) -> String { "load\(index)|n\(number)|secret-\(number)" }

        /// Adds `load.itemsPerRound` items and syncs on one engine, again and again until the
        /// flag says stop; a round that fails (the server is down) is retried with the next items
        /// after a short pause, on connections the engine opens again.
        static func push(_ machine: TestMachine, _ index: Int, load: Load, flag: StopFlag) async throws -> Pushed {
            try await SyncSetup.withEngine(keychain: machine.keychain) { engine in
                var pushed = Pushed()
                while !flag.value.load(ordering: .relaxed) {
                    for _ in 0..<load.itemsPerRound {
                        try machine.add(
                            service: "load\(index)", account: "n\(pushed.written)", secret: "secret-\(pushed.written)")
                        pushed.written += 1
                    }
                    let began = ContinuousClock.now
                    do {
                        let round = try await withSyncDeadline(SyncSetup.roundLimit) { try await engine.syncNow() }
                        pushed.acknowledged = pushed.written
                        pushed.pushes += 1
                        pushed.records += round.pushed
                        flag.records.add(round.pushed, ordering: .relaxed)
                        flag.pushes.add(1, ordering: .relaxed)
                        if pushed.resumedAfter == nil, let restarted = flag.restarted.withLock({ $0 }) {
                            pushed.resumedAfter = .now - restarted
                            flag.resumed.add(1, ordering: .relaxed)
                        }
                    } catch {
                        pushed.failures += 1
                        if ContinuousClock.now - began >= SyncSetup.roundLimit { pushed.timedOut += 1 }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
                return pushed
            }
        }
    }
}

/// A flag that tells the pushers to stop, what they pushed so far, when the server restarted and
/// how many of them have pushed since.
final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
    let records = Atomic<Int>(0)
    let pushes = Atomic<Int>(0)
    let restarted = Mutex<ContinuousClock.Instant?>(nil)
    let resumed = Atomic<Int>(0)
}

/// Runs `work` (CPU-heavy, or waiting for a process) on a Dispatch thread, leaving the test
/// pool's two threads free.
func onDispatchThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}

extension SyncIntegration {
    @Suite("The scratch server's processes", .timeLimit(.minutes(10)))
    struct ScratchServerDescriptorTests {
        /// The postmaster and the watchdog outlive the call that starts them: a descriptor of the
        /// starting process they inherited would stay open for their whole life (a test's D-Bus
        /// connection that then never closes, so the bus never says its client left).
        @Test("a server started from this process holds none of its descriptors")
        func inheritsNoDescriptor() throws {
            var ends: [Int32] = [-1, -1]
            #expect(pipe(&ends) == 0)  // not close-on-exec: as a NIO socket is
            defer { for end in ends { close(end) } }
            var status = stat()
            #expect(fstat(ends[1], &status) == 0)
            let pipeLink = "pipe:[\(status.st_ino)]"
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            // The server's own processes, by pid: other tests running beside this one spawn
            // children of their own, which may inherit the pipe in the meantime; that is not
            // the server's doing.
            let roots = [cluster.postmasterPID(), cluster.watchdogPID()].compactMap { $0 }
            #expect(roots.count == 2, "the postmaster and the watchdog run")
            let holders = Self.processes(descendingFrom: roots).filter {
                Self.descriptorLinks(of: $0).contains(pipeLink)
            }
            #expect(holders.isEmpty, "processes the server started hold this process's pipe: \(holders)")
        }

        /// `roots` and every process below them, from each process's parent in `/proc/PID/stat`.
        static func processes(descendingFrom roots: [pid_t]) -> Set<pid_t> {
            var parents: [pid_t: pid_t] = [:]
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
                guard let pid = pid_t(entry),
                    let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { continue }
                // After the name in parentheses: state, then the parent's pid.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 1, let parent = pid_t(fields[1]) { parents[pid] = parent }
            }
            var found = Set(roots)
            var grew = true
            while grew {
                grew = false
                for (pid, parent) in parents where found.contains(parent) && !found.contains(pid) {
                    found.insert(pid)
                    grew = true
                }
            }
            return found
        }

        /// What each open descriptor of `pid` points at (`pipe:[INODE]`, a path…).
        static func descriptorLinks(of pid: pid_t) -> Set<String> {
            let directory = "/proc/\(pid)/fd"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return Set(
                names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)") })
        }
    }
}
