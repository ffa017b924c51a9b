import KeychainLibc

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
