/// Reconnecting to a bus: an attempt again whenever it ends, after a delay that doubles from one
/// second to ``longestDelay`` while no attempt subscribes, until the task is cancelled.
enum BusRetry {
    /// The longest wait between two attempts to reach a bus.
    static let longestDelay: Duration = .seconds(30)

    /// Runs `attempt` (which returns whether it subscribed) until the task is cancelled.
    static func repeatedly(_ attempt: () async -> Bool) async {
        var delay: Duration = .seconds(1)
        while !Task.isCancelled {
            if await attempt() { delay = .seconds(1) }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, longestDelay)
        }
    }
}
