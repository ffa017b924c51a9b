import CKeychainAgent
import KeychainLibc

/// The agent's listening socket, bound at an ``AgentSocketLocation`` while holding its lock.
///
/// Binding takes `flock(agent.lock)` first, so two agents never serve one user; a socket file
/// left by a dead agent is detected by a connect probe (nobody accepting) and replaced. The
/// socket file is made 0600 right after `bind`, inside the 0700 directory that already keeps
/// everyone else out. `DBusServer.serve(listeningSocket:unixPath:objects:configuration:group:)`
/// then serves ``fileDescriptor`` (a duplicate of it), while the listener keeps the lock.
///
/// ```swift
/// let location = try AgentSocketLocation.resolve(environment: env, hostName: host)
/// let listener = try AgentListener(location: location)
/// let client = try listener.accept()
/// ```
public final class AgentListener: Sendable {
    /// Where the socket is.
    public let location: AgentSocketLocation
    /// The listening socket.
    public let fileDescriptor: Int32
    private let lockDescriptor: Int32

    /// Prepares the directory, takes the lock, replaces a stale socket, binds and listens.
    /// - Parameters:
    ///   - location: Where to listen.
    ///   - uid: The user the directory must belong to.
    ///   - backlog: The `listen` backlog.
    /// - Throws: ``AgentError/Code/unsafeLocation`` for a bad directory or a non-socket at the
    ///   path; ``AgentError/Code/alreadyRunning`` when another agent holds the lock or accepts
    ///   on the socket.
    public init(location: AgentSocketLocation, uid: UInt32 = geteuid(), backlog: Int32 = 128) throws {
        try location.prepareDirectory(uid: uid)
        let lock = try Self.takeLock(location.lockPath)
        do {
            try Self.removeStaleSocket(location.socketPath)
            fileDescriptor = try Self.bindAndListen(location.socketPath, backlog: backlog)
        } catch {
            close(lock)
            throw error
        }
        self.location = location
        lockDescriptor = lock
    }

    deinit {
        close(fileDescriptor)
        unlink(location.socketPath)
        close(lockDescriptor)
    }

    /// Waits for a client and returns the connected socket (close-on-exec). The caller owns it.
    public func accept() throws -> Int32 {
        while true {
            let client = ck_accept_cloexec(fileDescriptor)
            if client >= 0 { return client }
            if errno != EINTR { throw AgentError.system("accept", location.socketPath) }
        }
    }

    static func takeLock(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw AgentError.system("open", path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw AgentError(.alreadyRunning, "another keychaind holds \(path); fix: use the running agent")
            }
            throw AgentError.system("flock", path, errno: code)
        }
        return fd
    }

    /// Another listening socket of this agent at `path`, in the directory whose lock the agent
    /// holds (the SSH agent's, beside its own): a stale socket file is replaced, a live one or a
    /// non-socket refused, and the new one made 0600, as the agent's own socket is.
    /// - Throws: ``AgentError`` as ``init(location:uid:backlog:)`` does.
    package static func listeningSocket(at path: String, backlog: Int32 = 64) throws -> Int32 {
        try removeStaleSocket(path)
        return try bindAndListen(path, backlog: backlog)
    }

    /// Unlinks a socket file nobody accepts on; refuses a live one or a non-socket.
    private static func removeStaleSocket(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw AgentError(.unsafeLocation, "\(path) exists and is not a socket; fix: remove it")
        }
        if try probe(path) {
            throw AgentError(.alreadyRunning, "an agent already accepts on \(path) without holding the lock")
        }
        guard unlink(path) == 0 else { throw AgentError.system("unlink", path) }
    }

    /// Whether something accepts connections on `path` (`true`), or nobody does (`false`).
    static func probe(_ path: String) throws -> Bool {
        let fd = try connectedSocket(path, tolerating: [ECONNREFUSED, ENOENT])
        guard fd >= 0 else { return false }
        close(fd)
        return true
    }

    /// A socket connected to `path`, or -1 when connect fails with one of `tolerated`.
    static func connectedSocket(_ path: String, tolerating tolerated: Set<Int32> = []) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentError.system("socket", path) }
        var address = try socketAddress(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result == 0 { return fd }
        let code = errno
        close(fd)
        if tolerated.contains(code) { return -1 }
        throw AgentError.system("connect", path, errno: code)
    }

    private static func bindAndListen(_ path: String, backlog: Int32) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentError.system("socket", path) }
        do {
            var address = try socketAddress(path)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard bound == 0 else { throw AgentError.system("bind", path) }
            guard chmod(path, 0o600) == 0 else { throw AgentError.system("chmod", path) }
            guard listen(fd, backlog) == 0 else { throw AgentError.system("listen", path) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// A filesystem `sockaddr_un` for `path` (never the abstract namespace: the path must be absolute).
    static func socketAddress(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.hasPrefix("/"), bytes.count < capacity, !bytes.contains(0) else {
            throw AgentError(.unsafeLocation, "\(path) is not an absolute socket path shorter than \(capacity) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}

/// The one-agent-per-user lock alone, for an agent whose listening socket systemd made
/// (`keychaind.socket`): held for the agent's life, so that a client that finds no socket file
/// (removed by hand, or by a cleaner) cannot start a second agent beside this one.
public final class AgentLock: Sendable {
    private let descriptor: Int32

    /// Takes `agent.lock` beside the socket.
    /// - Throws: ``AgentError/Code/alreadyRunning`` when another agent holds it;
    ///   ``AgentError/Code/unsafeLocation`` for a bad directory.
    public init(location: AgentSocketLocation, uid: UInt32 = geteuid()) throws {
        try location.prepareDirectory(uid: uid)
        descriptor = try AgentListener.takeLock(location.lockPath)
    }

    deinit { close(descriptor) }
}
