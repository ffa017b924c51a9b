import NIOCore
import Synchronization

/// What a ``DBusServer`` lets its peers hold, so that no peer (and no crowd of peers) can take
/// the server's memory or descriptors from the others.
public struct DBusServerLimits: Sendable, Hashable {
    /// The most connections open at once; a peer beyond it is disconnected at once, before the
    /// handshake, so its client fails fast instead of waiting. 4,096 by default.
    public var maximumConnections = 4_096
    /// The most connections one process (by `SO_PEERCRED` pid) may hold open. 1,024 by default.
    public var maximumConnectionsPerProcess = 1_024
    /// How long a message may take to arrive once its first bytes have: a peer that stops
    /// half-way is disconnected, and the bytes it sent are freed. 30 seconds by default.
    public var partialMessageTimeout: Duration = .seconds(30)
    /// The most bytes of messages still arriving the server holds for all its peers together;
    /// a message that would go beyond it disconnects its peer. 256 MiB by default.
    public var maximumPendingMessageBytes = 256 << 20

    /// The default limits.
    public init() {}
}

/// The connections a server holds, by process, against ``DBusServerLimits``.
final class ConnectionCensus: Sendable {
    private struct Counts {
        var total = 0
        var byProcess: [Int32: Int] = [:]
    }

    private let counts = Mutex(Counts())
    let limits: DBusServerLimits

    init(limits: DBusServerLimits) { self.limits = limits }

    /// Counts a connection of `pid` in, or answers `false` when a limit is reached.
    func admit(_ pid: Int32) -> Bool {
        counts.withLock { counts in
            let ofProcess = counts.byProcess[pid, default: 0]
            guard counts.total < limits.maximumConnections, ofProcess < limits.maximumConnectionsPerProcess else {
                return false
            }
            counts.total += 1
            counts.byProcess[pid] = ofProcess + 1
            return true
        }
    }

    /// Counts a connection of `pid` out.
    func release(_ pid: Int32) {
        counts.withLock { counts in
            counts.total -= 1
            let left = counts.byProcess[pid, default: 1] - 1
            counts.byProcess[pid] = left > 0 ? left : nil
        }
    }
}

/// The bytes of messages still arriving, for all connections of a server together.
public final class PendingMessageBudget: Sendable {
    private let used = Atomic<Int>(0)
    /// The most bytes held at once.
    public let capacity: Int

    /// A budget of `capacity` bytes.
    public init(capacity: Int) { self.capacity = capacity }

    /// Takes `count` bytes, or answers `false` when that would go beyond the capacity.
    func reserve(_ count: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            guard current + count <= capacity else { return false }
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + count, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives `count` bytes back.
    func release(_ count: Int) {
        used.subtract(count, ordering: .relaxed)
    }

    /// The bytes held now.
    public var inUse: Int { used.load(ordering: .relaxed) }
}
