import DBusWire
import KeychainCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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

    /// Who the caller behind a connection is.
    /// - Parameter credentials: The connection's kernel credentials.
    /// - Returns: The identity, from the cache when the process is provably the one identified.
    /// - Throws: ``AgentError/Code/peerRefused`` without credentials or for another uid;
    ///   ``AgentError/Code/peerGone`` when the process has exited or changed while it was examined.
    public func identity(for credentials: DBusPeerCredentials?) throws -> CallerIdentity {
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
            if try isSameProcess(cached.peer, connection: credentials) { return cached.identity }
            cache.withLock { $0.remove(key, ifSameAs: cached.peer) }
        }
        let peer = try PeerCredentials(
            uid: credentials.uid, gid: credentials.gid, pid: credentials.pid, pidFD: credentials.pidFD)
        try peer.authorize(agentUID: agentUID)
        let identity = try resolver.identify(peer)
        cache.withLock { $0.insert(Entry(peer: peer, identity: identity), capacity: capacity) }
        return identity
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

    /// How many identities are cached, for tests.
    var count: Int { cache.withLock { $0.entries.count } }

    struct Key: Hashable, Sendable {
        var pid: Int32
        var startTime: UInt64
    }

    struct Entry: Sendable {
        var peer: PeerCredentials
        var identity: CallerIdentity
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
