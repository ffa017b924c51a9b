import Dispatch

/// Runs seconds of CPU work on a Dispatch thread: the test runner's cooperative pool has as
/// many threads as cores (two here), and other suites' tests wait on them.
func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
