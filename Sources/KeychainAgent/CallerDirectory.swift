import DBusNIO
import DBusWire
import KeychainCore
import KeychainLibc
import Synchronization

/// The agent's answer to "whose call is this?" for each D-Bus request: the caller's
/// ``CallerIdentity`` and so its access groups, from the connection's kernel credentials.
///
/// It refuses calls without credentials and calls from other users, builds ``PeerCredentials``
/// from the connection's (duplicating its pidfd), and asks the ``IdentityResolver``. Identities
/// are cached per process, keyed by (pid, start time), and every use of a cached identity first
/// checks ``PeerCredentials/isStillTheSameProcess()`` and that the connection's pidfd still names
/// that live process: a reused pid, or a process that exec-ed another file, is identified anew
/// and never inherits what the cache holds.
///
/// Each cached identity keeps the process's pidfd open. Entries of processes that have exited are
/// swept out as new ones come in, and at most ``capacity`` are kept (the least recently used go
/// first).
///
/// ```swift
/// let callers = CallerDirectory(resolver: IdentityResolver())
/// let service = AgentService(configuration: configuration) { try callers.accessGroups(for: $0) }
/// ```
public final class CallerDirectory: Sendable {
    /// How callers are identified.
    public let resolver: IdentityResolver
    /// The only user whose processes are served.
    public let agentUID: UInt32
    /// The most identities kept.
    public let capacity: Int

    private let cache = Mutex(Cache())
    /// Counted apart from the cache: these calls take no lock.
    private let connectionHitCount = Atomic<Int>(0)

    /// Creates a directory.
    /// - Parameters:
    ///   - resolver: How callers are identified (manifests, default groups).
    ///   - agentUID: The user served (`getuid()`); every other uid is refused.
    ///   - capacity: The most identities kept (each holds a pidfd), 4096 by default.
    public init(resolver: IdentityResolver, agentUID: UInt32 = getuid(), capacity: Int = 4096) {
        self.resolver = resolver
        self.agentUID = agentUID
        self.capacity = max(1, capacity)
    }

    /// The access groups of the caller behind a connection: the closure ``AgentService`` takes.
    /// - Parameter credentials: The connection's kernel credentials (`call.peerCredentials`).
    /// - Returns: The groups of the caller's ``CallerIdentity``.
    /// - Throws: As ``identity(for:)``.
    public func accessGroups(for credentials: DBusPeerCredentials?) throws -> AccessGroups {
        try identity(for: credentials).accessGroups
    }

    /// The access groups of the caller behind `connection`, checked once per connection.
    ///
    /// The first call identifies the caller as ``identity(for:)`` does and keeps the result in
    /// the connection (``DBusWire/DBusConnection/attachment``), with its pidfd. Each later call
    /// re-checks only what can change while that pidfd is alive
    /// (``PeerCredentials/isStillTheSameProcess()``: the executable, then that the process has
    /// not exited), three system calls instead of reading `/proc/PID/stat` and the pidfd's
    /// `fdinfo` again. A process that has exited or exec-ed another file goes the whole way
    /// again: it is refused, or identified anew.
    /// - Parameter connection: The connection the call came in on.
    /// - Returns: The groups of the caller's ``CallerIdentity``.
    /// - Throws: As ``identity(for:)``.
    public func accessGroups(for connection: DBusConnection) throws -> AccessGroups {
        try identity(for: connection).accessGroups
    }

    /// Who the caller behind `connection` is; see ``accessGroups(for:)-(DBusConnection)``.
    /// - Parameter connection: The connection the call came in on.
    /// - Returns: The identity, from the connection when the process is provably the one identified.
    /// - Throws: As ``identity(for:)-(DBusPeerCredentials?)``.
    public func identity(for connection: DBusConnection) throws -> CallerIdentity {
        let known = connection.attachment as? Entry
        // Resolving never declines.
        let entry = try entry(for: connection.peerCredentials, known: known, resolving: true)!
        if entry.peer.process !== known?.peer.process { connection.attach(entry) }
        return entry.identity
    }

    /// The access groups of the caller behind `connection` when they are known without the
    /// resolver's work (reading manifests, hashing an executable): from the connection, or from
    /// this directory's cache for the caller's process; `nil` otherwise. For a request answered
    /// on an event loop, which must not wait for files: a `nil` sends it to a thread that may.
    /// - Parameter connection: The connection the call came in on.
    /// - Returns: The groups, or `nil` when the caller has not been identified yet.
    /// - Throws: As ``identity(for:)-(DBusConnection)``, for a caller that is refused or gone.
    public func knownAccessGroups(for connection: DBusConnection) throws -> AccessGroups? {
        let known = connection.attachment as? Entry
        guard let entry = try entry(for: connection.peerCredentials, known: known, resolving: false) else {
            return nil
        }
        if entry.peer.process !== known?.peer.process { connection.attach(entry) }
        return entry.identity.accessGroups
    }

    /// The caller behind a connection whose earlier call left `known`: `known` itself while its
    /// process is provably the same (``PeerCredentials/isStillTheSameProcess()``), else as
    /// ``entry(for:resolving:)`` finds it.
    func entry(for credentials: DBusPeerCredentials?, known: Entry?, resolving: Bool) throws -> Entry? {
        if let known, known.peer.isStillTheSameProcess() {
            connectionHitCount.add(1, ordering: .relaxed)
            return known
        }
        return try entry(for: credentials, resolving: resolving)
    }

    /// Who the caller behind a connection is.
    /// - Parameter credentials: The connection's kernel credentials.
    /// - Returns: The identity, from the cache when the process is provably the one identified.
    /// - Throws: ``AgentError/Code/peerRefused`` without credentials or for another uid;
    ///   ``AgentError/Code/peerGone`` when the process has exited or changed while it was examined.
    public func identity(for credentials: DBusPeerCredentials?) throws -> CallerIdentity {
        try entry(for: credentials, resolving: true)!.identity
    }

    /// The caller behind `connection` as the access log names it (``AccessLog/callerName(_:executable:systemService:pid:)``),
    /// from what was read when it was identified (for the request being served, which checked
    /// it); `nil` when it cannot be identified.
    func logName(for connection: DBusConnection) -> String? {
        let checked = connection.attachment as? Entry
        guard let entry = checked ?? (try? entry(for: connection.peerCredentials, resolving: true)) else { return nil }
        return AccessLog.callerName(
            entry.identity, executable: entry.peer.executable?.path, systemService: entry.peer.systemService,
            pid: entry.peer.pid)
    }

    /// The caller behind `credentials` as the access log names it; `nil` when it cannot be identified.
    package func logName(for credentials: DBusPeerCredentials) -> String? {
        guard let entry = try? entry(for: credentials, resolving: true) else { return nil }
        return AccessLog.callerName(
            entry.identity, executable: entry.peer.executable?.path, systemService: entry.peer.systemService,
            pid: entry.peer.pid)
    }

    /// The identity of the caller behind `credentials` with the peer it was checked against;
    /// `nil` when it is not cached and `resolving` is false.
    func entry(for credentials: DBusPeerCredentials?, resolving: Bool) throws -> Entry? {
        guard let credentials else {
            throw AgentError(.peerRefused, "a caller without kernel credentials is refused")
        }
        guard credentials.uid == agentUID else {
            throw AgentError(
                .peerRefused,
                "peer pid \(credentials.pid) runs as uid \(credentials.uid); this agent serves uid \(agentUID) only")
        }
        let key = Key(pid: credentials.pid, startTime: try ProcFS.startTime(pid: credentials.pid))
        if let cached = cache.withLock({ $0.use(key) }) {
            if try isSameProcess(cached.peer, connection: credentials) { return cached }
            cache.withLock { $0.remove(key, ifSameAs: cached.peer) }
        }
        guard resolving else { return nil }
        let peer = try PeerCredentials(
            uid: credentials.uid, gid: credentials.gid, pid: credentials.pid, pidFD: credentials.pidFD)
        try peer.authorize(agentUID: agentUID)
        let entry = Entry(
            peer: peer, identity: try resolver.identify(peer), inAgentRoot: !FlatpakInfo.isInSeparateRoot(pid: peer.pid)
        )
        cache.withLock { $0.insert(entry, capacity: capacity) }
        return entry
    }

    /// Whether a cached peer is the process behind `connection`: still the same process (alive,
    /// same start time, same executable) and, when the connection has a pidfd, named by it.
    private func isSameProcess(_ peer: PeerCredentials, connection: DBusPeerCredentials) throws -> Bool {
        guard peer.isStillTheSameProcess() else { return false }
        // Two live processes cannot share a pid: a connection pidfd alive for this pid is the
        // cached process. Without it (kernels before 6.5) the pid is all the connection tells.
        if let pidFD = connection.pidFD { _ = try ProcessHandle.duplicate(pidFD: pidFD, of: connection.pid) }
        return true
    }

    /// How many identifications the resolver has run (cache misses), for tests.
    var identifications: Int { cache.withLock { $0.identifications } }

    /// How many calls were answered by what their connection kept, for tests.
    var connectionHits: Int { connectionHitCount.load(ordering: .relaxed) }

    /// How many identities are cached, for tests.
    var count: Int { cache.withLock { $0.entries.count } }

    struct Key: Hashable, Sendable {
        var pid: Int32
        var startTime: UInt64
    }

    struct Entry: Sendable {
        var peer: PeerCredentials
        var identity: CallerIdentity
        /// Whether the process shares the agent's root and mount namespace, so that the path of
        /// its executable names the file the agent sees there.
        var inAgentRoot: Bool
        var lastUse: UInt64 = 0
    }

    struct Cache: Sendable {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
        var identifications = 0
        var insertionsSinceSweep = 0

        /// The entry for `key`, marked as used.
        mutating func use(_ key: Key) -> Entry? {
            guard entries[key] != nil else { return nil }
            clock += 1
            entries[key]?.lastUse = clock
            return entries[key]
        }

        /// Removes the entry for `key` if it still holds `peer` (another thread may have replaced it).
        mutating func remove(_ key: Key, ifSameAs peer: PeerCredentials) {
            if entries[key]?.peer.process === peer.process { entries[key] = nil }
        }

        mutating func insert(_ entry: Entry, capacity: Int) {
            identifications += 1
            insertionsSinceSweep += 1
            if insertionsSinceSweep >= 32 || entries.count >= capacity {
                // Processes that have exited: their entries can never be used again.
                entries = entries.filter { $0.value.peer.process.isAlive }
                insertionsSinceSweep = 0
            }
            while entries.count >= capacity, let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                entries[oldest.key] = nil
            }
            clock += 1
            var entry = entry
            entry.lastUse = clock
            entries[Key(pid: entry.peer.pid, startTime: entry.peer.startTime)] = entry
        }
    }
}
