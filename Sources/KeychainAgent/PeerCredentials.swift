import CKeychainAgent
import DBusNIO
import DBusWire
import KeychainLibc

/// A process file descriptor (pidfd): a handle on one process that a reused pid number can
/// never point at. Closed when the last reference goes.
public final class ProcessHandle: Sendable {
    /// The pidfd.
    public let fileDescriptor: Int32

    init(fileDescriptor: Int32) { self.fileDescriptor = fileDescriptor }

    deinit { close(fileDescriptor) }

    /// A duplicate (close-on-exec) of a pidfd someone else owns, checked to be a pidfd for `pid`.
    ///
    /// - Parameters:
    ///   - pidFD: A pidfd owned elsewhere (a D-Bus connection's).
    ///   - pid: The process it must name.
    /// - Throws: ``AgentError/Code/peerGone`` when `pidFD` is closed, is not a pidfd, names
    ///   another process, or names one that has exited.
    static func duplicate(pidFD: Int32, of pid: Int32) throws -> ProcessHandle {
        let fd = fcntl(pidFD, F_DUPFD_CLOEXEC, 0)
        guard fd >= 0 else { throw AgentError(.peerGone, "the connection of pid \(pid) has closed") }
        let handle = ProcessHandle(fileDescriptor: fd)
        // A pidfd's fdinfo has "Pid:\t<pid>" (-1 once the process is reaped); any other file has none.
        guard handle.fdinfoPid == pid, handle.isAlive else {
            throw AgentError(.peerGone, "the pidfd of pid \(pid) no longer names it (the connection closed?)")
        }
        return handle
    }

    /// The process id in this pid namespace that `/proc/self/fdinfo` gives for the pidfd, or
    /// `nil` when the descriptor is not a pidfd.
    var fdinfoPid: Int32? {
        guard let text = ProcFS.readSmallFile("/proc/self/fdinfo/\(fileDescriptor)") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Pid:") {
            return Int32(String(line.dropFirst(4).drop { $0 == " " || $0 == "\t" }))
        }
        return nil
    }

    /// Whether the process is still running. A pidfd polls readable once its process has exited
    /// (a zombie not yet reaped counts as gone); unlike a signal probe this needs no permission
    /// over the process, so it answers for another user's process too.
    public var isAlive: Bool {
        var entry = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, 0)
            if ready == 0 { return true }
            if ready > 0 || errno != EINTR { return false }
        }
    }
}

/// An open `/proc/PID` directory: a handle on one process's entries that, unlike the
/// path, never reaches another process. Once the process has exited, every lookup through it
/// fails, even after its pid number has been given to a new process. Closed when the last
/// reference goes.
final class ProcessDirectory: Sendable {
    /// The directory's descriptor.
    let fileDescriptor: Int32

    /// Opens `/proc/PID`, or `nil` when there is no such process.
    init?(pid: Int32) {
        let fd = open("/proc/\(pid)", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    /// `stat` of the process's executable (`exe` followed), or `nil` when it cannot be read: the
    /// process has exited (a zombie has none), or it is not ours to inspect.
    func executableStatus() -> stat? {
        var info = stat()
        return fstatat(fileDescriptor, "exe", &info, 0) == 0 ? info : nil
    }
}

/// What identifies an executable file: the kernel's (device, inode) plus its status-change time,
/// which moves whenever the file is replaced in place, renamed, chmod-ed or re-linked.
public struct ExecutableIdentity: Sendable, Hashable {
    /// The device of the file system holding the executable.
    public let device: UInt64
    /// The inode number.
    public let inode: UInt64
    /// The status-change time, nanoseconds since the epoch.
    public let changeTimeNanoseconds: Int64
    /// The path the kernel reports (`readlink /proc/PID/exe`), as it was at accept.
    public let path: String

    init(_ info: stat, path: String) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        changeTimeNanoseconds = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        self.path = path
    }

    /// Whether `info` describes the same file, unchanged.
    func matches(_ info: stat) -> Bool {
        let other = ExecutableIdentity(info, path: path)
        return other == self
    }
}

/// Who is at the other end of a connected Unix socket, as the kernel says.
///
/// Built once at accept from `SO_PEERCRED` (uid, gid, pid as of `connect`), a pidfd from
/// `SO_PEERPIDFD` (or `pidfd_open` plus the start time, re-checked so a reused pid cannot
/// inherit the identity) and the executable behind `/proc/PID/exe`. Call
/// ``isStillTheSameProcess()`` before each request: it fails once the process has exited or
/// exec-ed another file.
///
/// ```swift
/// let peer = try PeerCredentials(socket: clientFD)
/// try peer.authorize(agentUID: getuid())
/// ```
public struct PeerCredentials: Sendable {
    /// The peer's user id.
    public let uid: UInt32
    /// The peer's group id.
    public let gid: UInt32
    /// The peer's process id, in the agent's pid namespace.
    public let pid: Int32
    /// The process's start time (`/proc/PID/stat` field 22, clock ticks since boot).
    public let startTime: UInt64
    /// The executable at accept, or `nil` when `/proc/PID/exe` cannot be read (a non-dumpable
    /// process, another user's): such a peer is never manifest-bound.
    public let executable: ExecutableIdentity?
    /// The system service the process runs in, from its cgroup at accept (`backup.service`), or
    /// `nil`: set only for a unit of the system's service manager.
    public let systemService: String?
    /// How the pidfd was obtained.
    public let pidfdSource: PidfdSource
    /// The pidfd for the peer process.
    public let process: ProcessHandle
    /// `/proc/PID`, opened while the pidfd showed the process alive, so it is this process's.
    private let directory: ProcessDirectory?

    /// Where a pidfd comes from.
    public enum PidfdSource: Sendable, Hashable {
        /// `getsockopt(SO_PEERPIDFD)`: the kernel's handle on the connecting process (Linux 6.5+),
        /// or a duplicate of the one a D-Bus connection got that way.
        case peerPidfd
        /// `pidfd_open(pid)` after `SO_PEERCRED`, validated by the start time. It cannot tell a
        /// process that died and whose pid was reused in the microseconds between `connect` and
        /// `pidfd_open`; from then on it is as strong as ``peerPidfd``.
        case pidfdOpen
    }

    /// Reads the credentials of the peer of a connected Unix socket.
    /// - Parameters:
    ///   - socket: A connected `AF_UNIX` socket.
    ///   - preferredSource: ``PidfdSource/peerPidfd`` falls back to `pidfd_open` on kernels without
    ///     it; ``PidfdSource/pidfdOpen`` forces the fallback (tests use it).
    /// - Throws: ``AgentError`` with ``AgentError/Code/peerGone`` when the peer has already exited,
    ///   ``AgentError/Code/system`` when the socket gives no credentials.
    public init(socket: Int32, preferring preferredSource: PidfdSource = .peerPidfd) throws {
        let kernel: DBusPeerCredentials
        do {
            kernel = try DBusPeerCredentials(socket: socket)
        } catch {
            throw AgentError.system("getsockopt", "SO_PEERCRED")
        }
        let handle = preferredSource == .peerPidfd ? Self.peerPidfd(socket) : nil
        try self.init(uid: kernel.uid, gid: kernel.gid, pid: kernel.pid, process: handle)
    }

    /// The credentials of a D-Bus connection's peer, as ``DBusWire/DBusServer`` read them at
    /// accept (`SO_PEERCRED`, and `SO_PEERPIDFD` where the kernel has it).
    ///
    /// The connection keeps its pidfd, and closes it when it closes: this takes a duplicate of
    /// its own (close-on-exec), after checking in `/proc/self/fdinfo` that the descriptor still
    /// is a pidfd for `pid`. Without a pidfd it uses `pidfd_open(pid)` (``PidfdSource/pidfdOpen``).
    /// Then, as ``init(socket:preferring:)``, it reads the start time and the executable and
    /// re-checks that the process did not change meanwhile.
    ///
    /// ```swift
    /// let peer = try PeerCredentials(uid: c.uid, gid: c.gid, pid: c.pid, pidFD: c.pidFD)
    /// ```
    ///
    /// - Parameters:
    ///   - uid: The peer's user id.
    ///   - gid: The peer's group id.
    ///   - pid: The peer's process id as of `connect`.
    ///   - pidFD: The connection's pidfd for the peer, or `nil`.
    /// - Throws: ``AgentError/Code/peerGone`` when the process has exited, or when `pidFD` no longer
    ///   is the connection's pidfd for `pid` (the connection closed and the number was reused).
    public init(uid: UInt32, gid: UInt32, pid: Int32, pidFD: Int32?) throws {
        let handle = try pidFD.map { try ProcessHandle.duplicate(pidFD: $0, of: pid) }
        try self.init(uid: uid, gid: gid, pid: pid, process: handle)
    }

    /// The part both ways in share: with `process` (a pidfd the kernel tied to the connection)
    /// or, without one, `pidfd_open`; then the start time, the executable, and the re-check.
    private init(uid: UInt32, gid: UInt32, pid: Int32, process handle: ProcessHandle?) throws {
        guard pid > 0 else { throw AgentError(.peerGone, "the socket has no peer process") }
        self.uid = uid
        self.gid = gid
        self.pid = pid
        let before = try ProcFS.startTime(pid: pid)
        if let handle {
            process = handle
            pidfdSource = .peerPidfd
        } else {
            // Opened after the first start-time read: the re-check below catches a pid reused
            // before pidfd_open.
            let fd = ck_pidfd_open(pid)
            guard fd >= 0 else { throw AgentError(.peerGone, "peer pid \(pid) has exited") }
            process = ProcessHandle(fileDescriptor: fd)
            pidfdSource = .pidfdOpen
        }
        startTime = before
        directory = ProcessDirectory(pid: pid)
        executable = ProcFS.executable(pid: pid)
        systemService = ProcFS.systemService(pid: pid)
        // The pid may have been reused between SO_PEERCRED and here: the pidfd must still be alive
        // and the start time unchanged after everything was read (and the directory opened).
        guard process.isAlive, (try? ProcFS.startTime(pid: pid)) == before else {
            throw AgentError(.peerGone, "peer pid \(pid) exited while it was being identified")
        }
    }

    /// Whether the peer is still the process that connected: with the same unchanged executable
    /// as at accept, and alive (through the pidfd) after that was read.
    ///
    /// One system call: `stat` of `exe` in the process's own `/proc/PID` directory, opened at
    /// accept while the pidfd showed the process alive (so it was this process's, not a
    /// successor's under a reused pid). Through that directory the lookup fails once the process
    /// has exited (a zombie has no executable) and stays failing after its pid is reused: the
    /// directory belongs to the process, not to the number. So a successful `stat` means the
    /// process is still running, and its result says whether it still runs the same file. An
    /// `exec` of another file changes the device and inode; anything that changes the path
    /// `readlink` would show for the same file (a rename, an unlink, a new link) changes its
    /// status-change time. So the `stat` alone sees every change the path would, and the process
    /// is identified anew. (An `exec` of the very same file through another, older hard link
    /// keeps the identity: the same code, which held these groups already.)
    ///
    /// A process whose executable could not be read at accept (non-dumpable) must still be
    /// unreadable, and its pidfd is polled for liveness. Without the directory (it could not be
    /// opened) the check reads `/proc/PID/exe` by path and then polls the pidfd: a process alive
    /// after the read held its pid throughout it.
    public func isStillTheSameProcess() -> Bool {
        guard let directory else { return isStillTheSameProcessByPath() }
        switch (executable, directory.executableStatus()) {
        case (let known?, let info?): return known.matches(info)
        case (nil, nil): return process.isAlive  // unreadable at accept (non-dumpable) and still
        default: return false
        }
    }

    private func isStillTheSameProcessByPath() -> Bool {
        var info = stat()
        let readable = stat(ProcFS.executableLink(pid: pid), &info) == 0
        switch (executable, readable) {
        case (nil, false): break
        case (let known?, true) where known.matches(info): break
        default: return false
        }
        return process.isAlive
    }

    /// Refuses a peer of another user.
    /// - Parameters:
    ///   - agentUID: The agent's user id (`getuid()`).
    ///   - allowingRoot: Accept uid 0 as well: only for a PAM module's login-unlock message (the
    ///     login keychain, issue 52).
    /// - Throws: ``AgentError/Code/peerRefused`` naming both uids.
    public func authorize(agentUID: UInt32, allowingRoot: Bool = false) throws {
        if uid == agentUID || (allowingRoot && uid == 0) { return }
        throw AgentError(
            .peerRefused, "peer pid \(pid) runs as uid \(uid); this agent serves uid \(agentUID) only")
    }

    private static func peerPidfd(_ socket: Int32) -> ProcessHandle? {
        var fd: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket, SOL_SOCKET, ck_so_peerpidfd(), &fd, &length) == 0, fd >= 0 else { return nil }
        return ProcessHandle(fileDescriptor: fd)
    }
}
