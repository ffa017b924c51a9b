import KeychainLibc
import KeychainModel

/// Reads of `/proc/PID/*` files, each with a bounded buffer and no following of the peer's paths.
enum ProcFS {
    /// Field 22 of `/proc/PID/stat`: the start time in clock ticks since boot.
    static func startTime(pid: Int32) throws -> UInt64 {
        guard let text = readSmallFile("/proc/\(pid)/stat") else {
            throw AgentError(.peerGone, "pid \(pid) has no /proc entry")
        }
        guard let value = processStartTime(procStat: text) else {
            throw AgentError(.peerGone, "pid \(pid): unreadable /proc stat")
        }
        return value
    }

    /// The executable of `pid`: `stat` of `/proc/PID/exe` and its link text. `nil` when the
    /// process is not ours to inspect (non-dumpable, another user) or is gone.
    static func executable(pid: Int32) -> ExecutableIdentity? {
        executable(link: executableLink(pid: pid))
    }

    /// `/proc/PID/exe`.
    static func executableLink(pid: Int32) -> String { "/proc/\(pid)/exe" }

    /// The executable behind `link` (``executableLink(pid:)``), as ``executable(pid:)``.
    static func executable(link: String) -> ExecutableIdentity? {
        var info = stat()
        guard stat(link, &info) == 0, let path = readLink(link) else { return nil }
        return ExecutableIdentity(info, path: path)
    }

    /// The system service `pid` runs in, by its cgroup (``systemService(cgroup:)``); `nil` for
    /// any other process, or one that is gone.
    static func systemService(pid: Int32) -> String? {
        readSmallFile("/proc/\(pid)/cgroup").flatMap(systemService(cgroup:))
    }

    /// The system service that a `/proc/PID/cgroup` text puts its process in: the first
    /// `*.service` below `/system.slice` (past any `*.slice`) in the hierarchy systemd tracks
    /// processes with (`name=systemd` on a legacy or hybrid layout, else the unified `0::`).
    ///
    /// Only root makes cgroups below `/system.slice` or moves a process there, so no program of
    /// the user can claim a name it finds there; a unit that delegates its own cgroup may make
    /// sub-cgroups, which is why the first unit on the path names it, whatever lies below.
    /// A user's service manager (`/user.slice/…/user@UID.service/…`) is delegated to the user,
    /// who can start a unit of any name in it: no name comes from there.
    static func systemService(cgroup text: String) -> String? {
        var tracked: Substring?
        var unified: Substring?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[1] == "name=systemd" { tracked = fields[2] }
            if fields[0] == "0" && fields[1].isEmpty { unified = fields[2] }
        }
        guard let path = tracked ?? unified else { return nil }
        var steps = path.split(separator: "/", omittingEmptySubsequences: false)[...]
        guard steps.first == "", steps.dropFirst().first == "system.slice" else { return nil }
        steps = steps.dropFirst(2)
        while let step = steps.first, step.hasSuffix(".slice") { steps = steps.dropFirst() }
        guard let unit = steps.first.map(String.init), TrustedApplication.isValidServiceUnitName(unit) else {
            return nil
        }
        return unit
    }

    static func readLink(_ path: String) -> String? {
        // Checked on every request of a known caller: a buffer on the stack, not zeroed.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { buffer in
            let count = readlink(path, buffer.baseAddress!, buffer.count - 1)
            guard count > 0 else { return nil }
            return buffer.baseAddress!.withMemoryRebound(to: UInt8.self, capacity: count) {
                String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
            }
        }
    }

    /// The contents of a small file (at most `limit` bytes), or `nil`.
    static func readSmallFile(_ path: String, limit: Int = 64 * 1024) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd, limit: limit)
    }

    /// Reads an open file to its end, or `nil` past `limit` bytes or on error.
    static func readAll(_ fd: Int32, limit: Int) -> String? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += chunk[..<count]
            if bytes.count > limit { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
