import Foundation
import GRDB
import Synchronization

/// Read-only connections of their own for searches that are one `SELECT`, beside a keychain's
/// pool.
///
/// A read through GRDB's `DatabasePool` checks a reader out of its pool, reads the schema
/// version with a `PRAGMA` and hands the work to the reader's queue: in a lookup served by
/// keychaind, perf put that at a fifth of the agent's time, more than the `SELECT` itself. A
/// single statement needs none of it: SQLite runs it on one snapshot of the write-ahead log by
/// itself, and recompiles a cached statement when another connection changed the schema. So a
/// one-class search takes a free connection from this small set, without waiting; when every
/// one is busy (more threads than ``limit`` reading at once) it reads through the pool as
/// before, so readers never queue behind each other here.
///
/// The connections are opened on first use, read-only (they can never write or checkpoint),
/// and closed before the pool when the handle goes away (``close()``), so that the pool's
/// writer is the last connection and SQLite can fold the log into the file as it closes.
final class QuickReaders: Sendable {
    /// The most connections kept: one per core of the machines this runs on, as the pool's
    /// readers are used in practice.
    static let limit = 2

    private let path: String
    private let busyTimeout: TimeInterval
    private struct State {
        var idle: [DatabaseQueue] = []
        var opened = 0
        /// Set when a connection could not be opened, or once closed: every read goes to the pool.
        var disabled = false
    }
    private let state = Mutex(State())

    init(path: String, busyTimeout: TimeInterval) {
        self.path = path
        self.busyTimeout = busyTimeout
    }

    /// How many connections were opened (for tests: whether reads went this way).
    var opened: Int { state.withLock { $0.opened } }

    /// Runs `read` on a free connection of this set, or returns `nil` when there is none (all
    /// busy, or this set is disabled): the caller then reads through its pool.
    func read<T>(_ read: (Database) throws -> T) throws -> T? {
        guard let queue = try checkOut() else { return nil }
        defer { checkIn(queue) }
        return try queue.unsafeRead(read)
    }

    /// Closes every idle connection and sends every later read to the pool. A connection in use
    /// now is closed when its read returns.
    func close() {
        let idle = state.withLock { state in
            state.disabled = true
            defer { state.idle = [] }
            return state.idle
        }
        for queue in idle { try? queue.close() }
    }

    private func checkOut() throws -> DatabaseQueue? {
        enum Next { case use(DatabaseQueue), open, none }
        let next = state.withLock { state -> Next in
            if state.disabled { return .none }
            if let queue = state.idle.popLast() { return .use(queue) }
            guard state.opened < Self.limit else { return .none }
            state.opened += 1
            return .open
        }
        switch next {
        case .use(let queue): return queue
        case .none: return nil
        case .open:
            do {
                return try DatabaseQueue(
                    path: path, configuration: Storage.configuration(busyTimeout: busyTimeout, readonly: true))
            } catch {
                state.withLock { $0.disabled = true }
                return nil
            }
        }
    }

    private func checkIn(_ queue: DatabaseQueue) {
        let kept = state.withLock { state -> Bool in
            guard !state.disabled else { return false }
            state.idle.append(queue)
            return true
        }
        if !kept { try? queue.close() }
    }
}
