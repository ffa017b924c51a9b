import Foundation
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
    let race = DeadlineRace<T>()
    return try await withCheckedThrowingContinuation { continuation in
        race.start(continuation: continuation, limit: limit, body: body)
    }
}

/// The two sides of ``withSyncDeadline(_:_:)``: the first to finish resumes the caller.
private final class DeadlineRace<T: Sendable>: Sendable {
    private let state = Mutex<(settled: Bool, timer: Task<Void, Never>?)>((false, nil))

    func start(
        continuation: CheckedContinuation<T, any Error>, limit: Duration,
        body: @escaping @Sendable () async throws -> T
    ) {
        let work = Task {
            do {
                let value = try await body()
                self.finish(continuation, .success(value))
            } catch {
                self.finish(continuation, .failure(error))
            }
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            if self.finish(
                continuation, .failure(SyncServerError(.connectionFailed, "the server did not answer within \(limit)")))
            {
                work.cancel()
            }
        }
        state.withLock { $0.timer = timer }
    }

    @discardableResult
    private func finish(_ continuation: CheckedContinuation<T, any Error>, _ result: Result<T, any Error>) -> Bool {
        let (first, timer) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            defer { state.settled = true }
            return (!state.settled, state.timer)
        }
        guard first else { return false }
        timer?.cancel()
        continuation.resume(with: result)
        return true
    }
}
