import Foundation
import DBusNIO
import KeychainLibc

/// The pid of the process listening on the Unix socket at `path` (`SO_PEERCRED` of a plain
/// connection), or `nil` when none listens. A plain `connect`, not the agent client's, which
/// rightly refuses a listener of another uid: tests stop other users' agents too.
public func agentPid(at path: String) -> pid_t? {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        for (index, byte) in bytes.enumerated() { buffer[index] = byte }
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard connected == 0, let pid = (try? DBusPeerCredentials(socket: fd))?.pid, pid > 0 else { return nil }
    return pid
}

/// Waits (up to 10 s) until `pid` no longer exists; a zombie waiting for its parent counts as gone.
public func waitUntilGone(_ pid: pid_t) -> Bool {
    for _ in 0..<1000 {
        if kill(pid, 0) != 0 && errno == ESRCH { return true }
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"), stat[close...].dropFirst(2).first == "Z"
        {
            return true
        }
        usleep(10_000)
    }
    return false
}

/// Stops the agent listening at `path` by its pid: SIGTERM, then SIGKILL after 10 s.
public func stopAgent(at path: String) {
    guard let pid = agentPid(at: path) else { return }
    kill(pid, SIGTERM)
    if !waitUntilGone(pid) { kill(pid, SIGKILL) }
}

/// Stops, with SIGKILL, every process (but this one) whose environment holds `variable` exactly:
/// an agent a test's client started while it was itself being killed can come up after the test
/// stopped the agent at its socket, and would outlive the test.
public func stopProcesses(withEnvironmentEntry variable: String) {
    let needle = Data(variable.utf8) + Data([0])
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for entry in entries {
        guard let pid = pid_t(entry), pid != getpid(),
            var environment = FileManager.default.contents(atPath: "/proc/\(entry)/environ")
        else { continue }
        environment.insert(0, at: environment.startIndex)
        if environment.range(of: Data([0]) + needle) != nil { kill(pid, SIGKILL) }
    }
}
