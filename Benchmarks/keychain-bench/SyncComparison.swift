import Foundation
import KeychainCore
import KeychainSync
import Logging
import PostgresNIO
import PostgresScratchServer
import Synchronization

/// The sync rows: two machines (two keychains) in one zone on a private PostgreSQL on loopback.
/// Push throughput and pull time of a batch of adds, against the floor of the same database work
/// done plainly in the same run (one INSERT of as many blobs of the same size in one transaction;
/// one SELECT of them), and the propagation time of one item (A pushes, B pulls).
struct SyncComparison {
    let options: BenchmarkOptions
    let progress: (String) -> Void

    func run() -> SyncResult {
        do {
            let cluster = try PostgresCluster()
            defer { cluster.stop() }
            let options = self.options
            return try Self.blocking { try await Self.measure(cluster, options: options) }
        } catch {
            var result = SyncResult(items: options.syncItems)
            result.note = "not measured: \(error)"
            return result
        }
    }

    /// Runs `body` on Swift's concurrency pool and waits for it on this (benchmark) thread.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let box = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let value = try await body()
                box.withLock { $0 = .success(value) }
            } catch {
                box.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0! }.get()
    }

    private static func measure(_ cluster: PostgresCluster, options: BenchmarkOptions) async throws -> SyncResult {
        var result = SyncResult(items: options.syncItems)
        let scratch = FileManager.default.temporaryDirectory.path + "/kc-bench-sync-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let a = try KeychainDatabase.create(
            at: scratch + "/a.keychain-db", password: nil as Data?, configuration: .testing())
        let b = try KeychainDatabase.create(
            at: scratch + "/b.keychain-db", password: nil as Data?, configuration: .testing())
        _ = try await SyncSetup.initialize(keychain: a, adminURL: cluster.superuserURL, deviceName: "a")
        let code = try await SyncSetup.invite(keychain: a)
        _ = try await SyncSetup.join(keychain: b, code: code, deviceName: "b")
        _ = try await SyncSetup.approve(keychain: a)
        _ = try await SyncSetup.syncNow(keychain: b)

        try a.add(
            contentsOf: (0..<options.syncItems).map { index in
                Item(
                    class: .genericPassword,
                    attributes: [
                        .service: .string("bench"), .account: .string("user\(index)"), .synchronizable: .number(1),
                    ], data: Workload.secret(index))
            })
        result.pushSeconds = try await seconds { _ = try await SyncSetup.syncNow(keychain: a) }
        result.pullSeconds = try await seconds { _ = try await SyncSetup.syncNow(keychain: b) }

        var samples: [UInt64] = []
        for round in 0..<options.syncPropagations {
            let start = DispatchTime.now().uptimeNanoseconds
            try a.add(
                Item(
                    class: .genericPassword,
                    attributes: [
                        .service: .string("propagation"), .account: .string("r\(round)"), .synchronizable: .number(1),
                    ], data: Data("secret \(round)".utf8)))
            _ = try await SyncSetup.syncNow(keychain: a)
            _ = try await SyncSetup.syncNow(keychain: b)
            samples.append(DispatchTime.now().uptimeNanoseconds - start)
        }
        result.propagation = Summary(nanoseconds: samples)
        var machines = [a, b]
        result.singlePushes = try await concurrentPushes(by: [a])
        for index in machines.count..<SyncResult.pushers {
            let machine = try KeychainDatabase.create(
                at: scratch + "/m\(index).keychain-db", password: nil as Data?, configuration: .testing())
            _ = try await SyncSetup.join(
                keychain: machine, code: try await SyncSetup.invite(keychain: a), deviceName: "m\(index)")
            _ = try await SyncSetup.approve(keychain: a)
            machines.append(machine)
        }
        result.concurrentPushes = try await concurrentPushes(by: machines)

        let blobSize = try averageBlobSize(cluster)
        (result.floorInsertSeconds, result.floorSelectSeconds) = try await floor(
            cluster, count: options.syncItems, blobSize: blobSize)
        return result
    }

    /// How long the concurrent pushers run.
    static let concurrentPushSeconds = 3.0

    /// Single-item pushes per second by `machines` at once, each adding one item and syncing (pull,
    /// seal, commit) in a loop on connections it keeps open, as keychaind's runner does: the load
    /// the server-restart test (`ServerRestartTests`) puts on the server, 200 pushes a second
    /// (docs/sync.md, "Measured here"). Every commit is a compare-and-swap on the zone's one head;
    /// a machine that loses it waits for its turn (``SyncServer/withPushTurn(_:_:)``).
    private static func concurrentPushes(by machines: [KeychainDatabase]) async throws -> ConcurrentPushes {
        for machine in machines { _ = try await SyncSetup.syncNow(keychain: machine) }
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(concurrentPushSeconds * 1e9)
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, machine) in machines.enumerated() {
                group.addTask {
                    try await SyncSetup.withEngine(keychain: machine) { engine in
                        var pushes = 0
                        while DispatchTime.now().uptimeNanoseconds < deadline {
                            try machine.add(
                                Item(
                                    class: .genericPassword,
                                    attributes: [
                                        .service: .string("load\(machines.count)-\(index)"),
                                        .account: .string("n\(pushes)"),
                                        .synchronizable: .number(1),
                                    ], data: Data("secret".utf8)))
                            _ = try await engine.syncNow()
                            pushes += 1
                        }
                        return pushes
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return ConcurrentPushes(pushes: counts, seconds: elapsed)
    }

    private static func seconds(_ body: () async throws -> Void) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    private static func averageBlobSize(_ cluster: PostgresCluster) throws -> Int {
        Int(try cluster.sql("SELECT coalesce(avg(length(blob))::int, 512) FROM keychain_sync.records")) ?? 512
    }

    /// One INSERT of `count` random blobs of `blobSize` bytes in one transaction, then one SELECT
    /// of them: what a push and a pull of as many records cost the database, without sync.
    private static func floor(_ cluster: PostgresCluster, count: Int, blobSize: Int) async throws -> (Double, Double) {
        let address = SyncServerAddress(
            host: "127.0.0.1", port: cluster.port, database: cluster.database, username: "postgres",
            password: cluster.superuserPassword)
        let connection = try await address.connect(id: 1, logger: Logger(label: "keychain-bench.sync"))
        defer { Task { try? await connection.close() } }
        let logger = Logger(label: "keychain-bench.sync")
        _ = try await connection.query(
            "CREATE TABLE bench_floor (id bytea PRIMARY KEY, seq bigint, blob bytea)", logger: logger)
        let ids = (0..<count).map { _ in ByteBuffer(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) }) }
        let blobs = (0..<count).map { _ in ByteBuffer(bytes: (0..<blobSize).map { _ in UInt8.random(in: 0...255) }) }
        let insert = try await seconds {
            _ = try await connection.query("BEGIN", logger: logger)
            _ = try await connection.query(
                "INSERT INTO bench_floor SELECT r.id, 1, r.blob FROM unnest(\(ids)::bytea[], \(blobs)::bytea[]) AS r(id, blob)",
                logger: logger)
            _ = try await connection.query("COMMIT", logger: logger)
        }
        let select = try await seconds {
            let rows = try await connection.query(
                "SELECT id, seq, blob FROM bench_floor WHERE seq > 0 ORDER BY seq", logger: logger)
            var received = 0
            for try await _ in rows { received += 1 }
            precondition(received == count)
        }
        return (insert, select)
    }
}

/// The sync rows of the report.
struct SyncResult: Codable, Sendable {
    /// Adds pushed and pulled in the throughput rows.
    var items: Int
    /// Seconds for one machine to push them (`sync now`: pull, seal, commit).
    var pushSeconds: Double?
    /// Seconds for the other machine to pull them (verify, open, apply).
    var pullSeconds: Double?
    /// The floor: one plain INSERT of as many blobs of the same size, and one SELECT of them.
    var floorInsertSeconds: Double?
    var floorSelectSeconds: Double?
    /// One item from one machine's add to the other machine having it (push, then pull).
    var propagation: Summary?
    /// Single-item pushes by ``pushers`` machines at once.
    var concurrentPushes: ConcurrentPushes?
    /// Single-item pushes by one machine alone: the round without contention.
    var singlePushes: ConcurrentPushes?
    /// The machines pushing at once in ``concurrentPushes``.
    static let pushers = 4
    /// Why rows are missing.
    var note: String?

    init(items: Int) { self.items = items }
}

/// Pushes made by several machines at once, each one item and a `sync now` at a time.
struct ConcurrentPushes: Codable, Sendable {
    /// Acknowledged pushes, all machines together.
    var pushes: Int
    /// How long they took.
    var seconds: Double
    /// Pushes per second.
    var perSecond: Double { Double(pushes) / max(seconds, 1e-9) }
}
