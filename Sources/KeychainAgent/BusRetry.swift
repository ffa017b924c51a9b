import DBusNIO
import DBusWire

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

    /// A connection to the bus at `addresses` (calls time out after 10 s), or `nil` after
    /// logging why there is none: `unavailable` says what goes without it.
    static func connect(
        to addresses: @autoclosure () throws -> [DBusAddress], unavailable: String,
        log: @Sendable (String) -> Void
    ) async -> DBusConnection? {
        do {
            var configuration = DBusConnection.Configuration()
            configuration.callTimeout = .seconds(10)
            return try await DBusConnection.connect(to: try addresses(), configuration: configuration)
        } catch {
            log("\(unavailable) (\(error))")
            return nil
        }
    }
}
