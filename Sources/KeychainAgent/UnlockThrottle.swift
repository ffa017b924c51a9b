/// Exponential back-off after repeated failed unlocks, per keychain.
///
/// The first ``freeFailures`` wrong passwords cost nothing; after that each failure doubles the
/// wait before the next attempt is accepted, from ``baseDelay`` up to ``maximumDelay``. A
/// successful unlock clears the keychain's count. Time comes from the injected clock, so tests
/// move time instead of sleeping.
///
/// ```swift
/// var throttle = UnlockThrottle(clock: ContinuousClock())
/// try throttle.checkAttempt(for: path)         // throws .throttled while the wait runs
/// if passwordIsWrong { throttle.recordFailure(for: path) } else { throttle.recordSuccess(for: path) }
/// ```
public struct UnlockThrottle<C: Clock>: Sendable where C.Duration == Duration, C: Sendable {
    /// Failures allowed before any delay.
    public var freeFailures: Int
    /// The delay after the first failure past ``freeFailures``.
    public var baseDelay: Duration
    /// The longest delay.
    public var maximumDelay: Duration
    /// The clock that measures the delays.
    public let clock: C
    private var states: [String: State] = [:]

    private struct State: Sendable {
        var failures = 0
        var notBefore: C.Instant?
    }

    /// Creates a throttle.
    /// - Parameters:
    ///   - freeFailures: Failures before the first delay (5).
    ///   - baseDelay: The first delay (1 s).
    ///   - maximumDelay: The cap (5 minutes).
    ///   - clock: The clock (a manual one in tests).
    public init(
        freeFailures: Int = 5, baseDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(300),
        clock: C
    ) {
        self.freeFailures = freeFailures
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.clock = clock
    }

    /// The number of consecutive failures recorded for `keychain`.
    public func failures(for keychain: String) -> Int { states[keychain]?.failures ?? 0 }

    /// The delay that the `failures`-th consecutive failure imposes.
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > freeFailures else { return .zero }
        let exponent = min(failures - freeFailures - 1, 62)
        let factor = Int64(1) << exponent
        let scaled = baseDelay * Double(factor)
        return min(scaled, maximumDelay)
    }

    /// How long the caller must still wait before an attempt on `keychain` is accepted.
    public func remainingDelay(for keychain: String) -> Duration {
        guard let notBefore = states[keychain]?.notBefore else { return .zero }
        let remaining = clock.now.duration(to: notBefore)
        return remaining > .zero ? remaining : .zero
    }

    /// Throws while `keychain` is in its back-off period.
    /// - Throws: ``AgentError/Code/throttled`` with the remaining wait in the message.
    public func checkAttempt(for keychain: String) throws {
        let remaining = remainingDelay(for: keychain)
        guard remaining == .zero else {
            let seconds = max(1, Int((remaining + .milliseconds(999)).components.seconds))
            throw AgentError(.throttled, "too many wrong passwords: try again in \(seconds) s")
        }
    }

    /// Records a wrong password for `keychain` and starts its next delay.
    public mutating func recordFailure(for keychain: String) {
        var state = states[keychain] ?? State()
        state.failures += 1
        let delay = delay(afterFailures: state.failures)
        state.notBefore = delay > .zero ? clock.now.advanced(by: delay) : nil
        states[keychain] = state
    }

    /// Records a successful unlock: the count for `keychain` starts again from zero.
    public mutating func recordSuccess(for keychain: String) {
        states[keychain] = nil
    }
}
