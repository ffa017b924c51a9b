import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import KeychainSync

extension SyncIntegration {
    /// postgres-nio can drop a query sent just as the server closes its connection and never
    /// answer it (found by the restart test: a push waited for its round's 30 s limit after
    /// `pg_ctl restart -m fast`). Every use of a pooled connection is raced against its close.
    @Suite("A query on a connection the server closed cannot hang", .serialized, .timeLimit(.minutes(10)))
    struct ConnectionGuardTests {
        static func connect() async throws -> PostgresConnection {
            try await SyncServerAddress(url: try SharedCluster.get().superuserURL).connect(
                id: 1, logger: Logger(label: "test"))
        }

        static func backendPID(_ connection: PostgresConnection) async throws -> Int32 {
            for try await pid in try await connection.query("SELECT pg_backend_pid()", logger: Logger(label: "test"))
                .decode(Int32.self)
            {
                return pid
            }
            throw SyncServerError(.server, "no pid")
        }

        /// A body that never ends and ignores cancellation, as a lost query does; `release` ends it.
        final class Stuck: Sendable {
            let waiter = Mutex<CheckedContinuation<Void, Never>?>(nil)
            let entered = Atomic<Bool>(false)
            func body() async {
                await withCheckedContinuation { continuation in
                    waiter.withLock { $0 = continuation }
                    entered.store(true, ordering: .relaxed)
                }
            }
            func release() {
                waiter.withLock {
                    $0?.resume(); $0 = nil
                }
            }
        }

        @Test("a body still waiting after the server terminated its connection fails with connectionFailed")
        func stuckBodyFailsAfterTheClose() async throws {
            let connection = try await Self.connect()
            let signal = ConnectionClosedSignal(connection)
            let pid = try await Self.backendPID(connection)
            let stuck = Stuck()
            let guarded = Task { try await untilClosed(signal, grace: .milliseconds(100)) { await stuck.body() } }
            while !stuck.entered.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(10)) }
            // The server ends the backend, as a restart or an administrator does.
            let admin = try await Self.connect()
            try await admin.run("SELECT pg_terminate_backend(\(pid))", logger: Logger(label: "test"))
            try await admin.close()
            do {
                try await guarded.value
                Issue.record("the guarded body returned")
            } catch let error as SyncServerError {
                #expect(error.code == .connectionFailed)
                #expect(signal.waiting == 0)
            }
            #expect(connection.isClosed)
            stuck.release()
        }

        @Test("bodies that end leave no callback behind, and a body on a closed connection still fails")
        func finishedBodiesLeaveNothing() async throws {
            let connection = try await Self.connect()
            let signal = ConnectionClosedSignal(connection)
            for round in 0..<50 {
                let pid = try await untilClosed(signal) { try await Self.backendPID(connection) }
                #expect(pid > 0, "round \(round)")
                #expect(signal.waiting == 0)
            }
            try await connection.close()
            let stuck = Stuck()
            await #expect(throws: SyncServerError.self) {
                try await untilClosed(signal, grace: .milliseconds(100)) { await stuck.body() }
            }
            stuck.release()
        }

        @Test("cancelling the caller cancels the guarded body")
        func cancellationReachesTheBody() async throws {
            let connection = try await Self.connect()
            let signal = ConnectionClosedSignal(connection)
            let started = Atomic<Bool>(false)
            let caller = Task {
                try await untilClosed(signal) {
                    started.store(true, ordering: .relaxed)
                    try await Task.sleep(for: .seconds(600))
                }
            }
            while !started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(10)) }
            caller.cancel()
            await #expect(throws: CancellationError.self) { try await caller.value }
            #expect(signal.waiting == 0)
            try await connection.close()
        }

        @Test("a transport whose idle connection the server terminated answers the next call")
        func poolReplacesATerminatedConnection() async throws {
            let cluster = try SharedCluster.get()
            let alice = try await TestDevice.bootstrap(cluster, maximumConnections: 1)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let admin = try await Self.connect()
            try await admin.run(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = \(alice.role)",
                logger: Logger(label: "test"))
            try await admin.close()
            try await Task.sleep(for: .milliseconds(100))
            #expect(try await alice.server.push(zone.commit(expectedSeq: 1, author: alice.device)) == .committed)
        }
    }
}
