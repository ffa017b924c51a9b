import Foundation
import PostgresNIO
import Synchronization

/// Runs `body`, giving up after `limit` with a `.connectionFailed` error (the work is cancelled
/// and left to end on its own).
///
/// postgres-nio 1.33.2 can leave a query sent on a connection the server has already closed
/// waiting forever, deaf to cancellation; a sync round must not wait with it. The caller drops the
/// server object, and with it the connection, and starts again.
public func withSyncDeadline<T: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    return try await race.result { continuation in
        race.prepare(continuation)
        let timer = Task {
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            race.fail(SyncServerError(.connectionFailed, "the server did not answer within \(limit)"))
        }
        race.onSettle { timer.cancel() }
        race.run(body)
    }
}

/// Runs `body`, which uses the connection `closed` watches, giving up with a `.connectionFailed`
/// error when it has not ended `grace` after the connection closed.
///
/// postgres-nio hands a query to its connection's channel without a promise for the write: a
/// query sent just as the server closes the connection (a restart, an administrator's
/// `pg_terminate_backend`) is dropped with the channel's handlers and never answered. When the
/// server closes a connection, postgres-nio fails every query it holds at once; a body still
/// waiting after that is waiting for a query that was lost. No timer runs unless the connection
/// closes.
func untilClosed<T: Sendable>(
    _ closed: ConnectionClosedSignal, grace: Duration = .seconds(1), _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = Race<T>()
    return try await race.result { continuation in
        race.prepare(continuation)
        let token = closed.onClose {
            Task {
                try? await Task.sleep(for: grace)
                race.fail(SyncServerError(.connectionFailed, "the server closed the connection"))
            }
        }
        if let token { race.onSettle { closed.cancel(token) } }
        race.run(body)
    }
}

/// A body raced against a failure: the first to settle resumes the caller; a failure cancels the
/// body and leaves it to end on its own. Cancelling the caller cancels the body.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var settled = false
        var cancelled = false
        var work: Task<Void, Never>?
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    /// Waits for the first result; `start` prepares the race and runs the body.
    func result(_ start: (CheckedContinuation<T, any Error>) -> Void) async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(start)
        } onCancel: {
            let work = state.withLock { state -> Task<Void, Never>? in
                state.cancelled = true
                return state.work
            }
            work?.cancel()
        }
    }

    func prepare(_ continuation: CheckedContinuation<T, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    /// Runs `cleanup` once settled (at once if settled already).
    func onSettle(_ cleanup: @escaping @Sendable () -> Void) {
        let settled = state.withLock { state -> Bool in
            if !state.settled { state.cleanup = cleanup }
            return state.settled
        }
        if settled { cleanup() }
    }

    /// Starts `body` (unless a failure came first).
    func run(_ body: @escaping @Sendable () async throws -> T) {
        let work = Task {
            do {
                let value = try await body()
                self.settle(.success(value))
            } catch {
                self.settle(.failure(error))
            }
        }
        let stop = state.withLock { state -> Bool in
            if !state.settled { state.work = work }
            return state.settled || state.cancelled
        }
        if stop { work.cancel() }
    }

    func fail(_ error: any Error) {
        let (first, work) = settle(.failure(error))
        if first { work?.cancel() }
    }

    /// Resumes the caller if this is the first result; returns whether it was, and the body's task.
    @discardableResult
    private func settle(_ result: Result<T, any Error>) -> (first: Bool, work: Task<Void, Never>?) {
        let taken = state.withLock { state -> State? in
            guard !state.settled, state.continuation != nil else { return nil }
            defer { state = State(settled: true, cancelled: state.cancelled) }
            return state
        }
        guard let taken, let continuation = taken.continuation else { return (false, nil) }
        taken.cleanup?()
        continuation.resume(with: result)
        return (true, taken.work)
    }
}

/// Fires once, when a connection closes, calling what was registered with ``onClose(_:)``. One
/// per pooled connection, registered on its close future once (a callback per query on the
/// future itself would pile up for the connection's whole life).
final class ConnectionClosedSignal: Sendable {
    private struct State {
        var closed = false
        var callbacks: [Int: @Sendable () -> Void] = [:]
        var next = 0
    }
    private let state = Mutex(State())

    init(_ connection: PostgresConnection) {
        connection.closeFuture.whenComplete { [self] _ in fire() }
    }

    /// How many callbacks wait for the close.
    var waiting: Int { state.withLock { $0.callbacks.count } }

    private func fire() {
        let callbacks = state.withLock { state in
            state.closed = true
            defer { state.callbacks = [:] }
            return Array(state.callbacks.values)
        }
        for callback in callbacks { callback() }
    }

    /// Calls `callback` when the connection closes (at once, returning nil, if it has); the
    /// token returned cancels it.
    func onClose(_ callback: @escaping @Sendable () -> Void) -> Int? {
        let token = state.withLock { state -> Int? in
            guard !state.closed else { return nil }
            defer { state.next += 1 }
            state.callbacks[state.next] = callback
            return state.next
        }
        if token == nil { callback() }
        return token
    }

    /// Cancels a callback registered with ``onClose(_:)``.
    func cancel(_ token: Int) {
        _ = state.withLock { $0.callbacks.removeValue(forKey: token) }
    }
}
