import Foundation
import Synchronization

/// Runs `body` on Swift's concurrency pool and waits for it on this thread, which must not be
/// one of the pool's: for blocking code (a command's `run`) that calls async API (D-Bus, sync).
package func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
