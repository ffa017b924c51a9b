import DBusWire
import KeychainLibc
import Synchronization

/// When each unique name of a message bus appeared, so that the process behind a name's pid
/// can be checked to be the one that connected, not one that reused its pid later.
///
/// The bus daemon reports a caller by pid (`GetConnectionCredentials`). Once that process has
/// exited, the pid may be reused while a child keeps the connection open; the new process would
/// then lend its identity to the connection. dbus-daemon 1.14 (Debian 12) gives no `ProcessFD`
/// to pin the process, so the check is by age: a process that started after the name appeared
/// cannot have opened that connection, and is refused. Times are the kernel's clock ticks since
/// boot, as `/proc/PID/stat` gives start times.
///
/// The bus announces each name (`NameOwnerChanged` from `org.freedesktop.DBus`); the owner of
/// this value records those announcements as they arrive (``appeared(_:)``, ``left(_:)``), before
/// any later call is handled, and marks when it started receiving them (``startWatching()``): a
/// name never announced appeared before that.
///
/// ```swift
/// bus.observeSignals { births.record($0) }  // before AddMatch
/// _ = try await bus.callBus("AddMatch", [.string("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'")])
/// births.startWatching()
/// try births.requireOriginal(pid: credentials.pid, of: sender)
/// ```
public final class BusNameBirths: Sendable {
    private struct State {
        var births: [String: UInt64] = [:]
        var watchingSince: UInt64?
    }

    private let state = Mutex(State())
    private let now: @Sendable () -> UInt64

    /// Creates an empty record.
    /// - Parameter now: The current time in clock ticks since boot (the kernel's boot clock by
    ///   default; tests pass another).
    public init(now: @escaping @Sendable () -> UInt64 = BusNameBirths.bootTicks) {
        self.now = now
    }

    /// The boot clock (`CLOCK_BOOTTIME`, which `/proc/PID/stat` start times count from) in clock
    /// ticks, rounded down.
    public static func bootTicks() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        let ticksPerSecond = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        let nanoseconds = UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        return nanoseconds / (1_000_000_000 / ticksPerSecond)
    }

    /// Marks that announcements are received from now on: every name not announced appeared
    /// before this moment.
    public func startWatching() {
        let tick = now()
        state.withLock { $0.watchingSince = $0.watchingSince ?? tick }
    }

    /// Records that the unique name `name` appeared now.
    public func appeared(_ name: String) {
        let tick = now()
        state.withLock { $0.births[name] = tick }
    }

    /// Forgets `name`, which left the bus (unique names are never reused).
    public func left(_ name: String) {
        _ = state.withLock { $0.births.removeValue(forKey: name) }
    }

    /// The latest tick at which `name` can have appeared, or `nil` before ``startWatching()``.
    public func latestBirth(of name: String) -> UInt64? {
        state.withLock { state in state.births[name] ?? state.watchingSince }
    }

    /// Checks that the process `pid` started no later than `name` appeared.
    /// - Throws: ``AgentError/Code/peerGone`` when it started later (it reused the pid of the
    ///   process that connected), or has no `/proc` entry. Nothing is checked before
    ///   ``startWatching()``.
    public func requireOriginal(pid: Int32, of name: String) throws {
        guard let birth = latestBirth(of: name) else { return }
        let started = try ProcFS.startTime(pid: pid)
        guard started <= birth else {
            throw AgentError(.peerGone, "pid \(pid) started after \(name) connected: it is not the connecting process")
        }
    }

    /// Records a `NameOwnerChanged` signal of the bus itself (sender `org.freedesktop.DBus`):
    /// a unique name that appeared (`name, "", name`) or left (`name, name, ""`). Other
    /// signals, and any sent by another connection, are ignored.
    /// - Parameter signal: A signal received on the bus connection.
    public func record(_ signal: DBusMessage) {
        let arguments = signal.body.compactMap(\.stringValue)
        guard signal.sender == DBusMessage.busDriverName, signal.member == "NameOwnerChanged",
            signal.body.count == 3, arguments.count == 3, arguments[0].hasPrefix(":")
        else { return }
        if arguments[1].isEmpty && arguments[2] == arguments[0] {
            appeared(arguments[0])
        } else if arguments[2].isEmpty {
            left(arguments[0])
        }
    }
}
