import Foundation
import Logging
import PostgresNIO

/// A small pool of `PostgresConnection`s for one login.
///
/// `PostgresClient`'s pool keeps retrying a refused login for a minute before failing the
/// queries waiting on it (its circuit breaker), and a device whose login was revoked must
/// learn it at once; so a connection is made on demand and a refused login fails the call.
actor ConnectionPool {
    /// A connection with the signal that fires when it closes.
    struct Lease: Sendable {
        let connection: PostgresConnection
        let closed: ConnectionClosedSignal

        /// Runs `body` on the connection; see ``untilClosed(_:grace:_:)``.
        func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
            try await untilClosed(closed) { [connection] in try await body(connection) }
        }
    }

    private let address: SyncServerAddress
    let maximum: Int
    private let logger: Logger
    private var idle: [Lease] = []
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var nextID = 1
    private var isShutDown = false

    /// Connections made and not yet closed (leased or idle).
    private(set) var openCount = 0

    init(address: SyncServerAddress, maximum: Int, logger: Logger) {
        self.address = address
        self.maximum = max(1, maximum)
        self.logger = logger
    }

    /// An idle connection, a new one when under the maximum, or the next one released.
    func lease() async throws -> Lease {
        while true {
            guard !isShutDown else { throw SyncServerError(.closed, "the sync transport was shut down") }
            while let lease = idle.popLast() {
                if !lease.connection.isClosed { return lease }
                openCount -= 1
            }
            if openCount < maximum { return try await open() }
            await withCheckedContinuation { waiters.append($0) }
        }
    }

    private func open() async throws -> Lease {
        openCount += 1
        let id = nextID
        nextID += 1
        do {
            let connection = try await address.connect(id: id, logger: logger)
            guard !isShutDown else {
                try? await connection.close()
                openCount -= 1
                throw SyncServerError(.closed, "the sync transport was shut down")
            }
            return Lease(connection: connection, closed: ConnectionClosedSignal(connection))
        } catch {
            openCount -= 1
            wakeOne()
            throw error
        }
    }

    /// Returns a connection; one that failed mid-use (`reusable == false`) is closed.
    func release(_ lease: Lease, reusable: Bool) async {
        if reusable && !isShutDown && !lease.connection.isClosed {
            idle.append(lease)
        } else {
            try? await lease.connection.close()
            openCount -= 1
        }
        wakeOne()
    }

    /// Closes the idle connections and refuses new leases; leased connections close when released.
    func shutdown() async {
        isShutDown = true
        let closing = idle
        idle.removeAll()
        for lease in closing {
            try? await lease.connection.close()
            openCount -= 1
        }
        let waiting = waiters
        waiters.removeAll()
        for waiter in waiting { waiter.resume() }
    }

    private func wakeOne() {
        if !waiters.isEmpty { waiters.removeFirst().resume() }
    }
}
