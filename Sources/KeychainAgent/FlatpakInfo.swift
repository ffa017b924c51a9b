import KeychainLibc
import KeychainModel

/// Reads a sandboxed process's Flatpak app id the way xdg-desktop-portal does: through the
/// process's own root (`/proc/PID/root`), never following a symbolic link, only from a regular
/// file, and only when the process really lives in another root or mount namespace.
///
/// Outside a sandbox, `/proc/PID/root` is the host's `/`, which the user cannot write; inside a
/// Flatpak, `/.flatpak-info` is a read-only bind mount made by flatpak before the app starts.
public enum FlatpakInfo {
    /// The app id of `pid`'s sandbox, or `nil` when the process is not sandboxed or has no
    /// usable `/.flatpak-info`.
    /// - Throws: ``AgentError/Code/invalidManifest`` when the file exists but is a link, not a
    ///   regular file, too large, or names no valid app id.
    public static func appID(pid: Int32) throws -> String? {
        guard isInSeparateRoot(pid: pid) else { return nil }
        let root = open("/proc/\(pid)/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY)
        guard root >= 0 else { return nil }
        defer { close(root) }
        let fd = openat(root, ".flatpak-info", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw AgentError(.invalidManifest, "pid \(pid): /.flatpak-info cannot be opened safely", errno: errno)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 64 * 1024,
            let text = ProcFS.readAll(fd, limit: 64 * 1024)
        else {
            throw AgentError(.invalidManifest, "pid \(pid): /.flatpak-info is not a small regular file")
        }
        guard let name = iniValue(text, section: "Application", key: "name"), isValidAppID(name) else {
            throw AgentError(.invalidManifest, "pid \(pid): /.flatpak-info names no valid [Application] name")
        }
        return name
    }

    /// Whether `pid`'s root directory or mount namespace differs from the agent's.
    static func isInSeparateRoot(pid: Int32) -> Bool {
        differs("/proc/\(pid)/root", "/proc/self/root") || differs("/proc/\(pid)/ns/mnt", "/proc/self/ns/mnt")
    }

    private static func differs(_ theirs: String, _ ours: String) -> Bool {
        var a = stat()
        var b = stat()
        guard stat(theirs, &a) == 0, stat(ours, &b) == 0 else { return false }
        return a.st_dev != b.st_dev || a.st_ino != b.st_ino
    }

    /// The value of `key` in `[section]` of a GKeyFile-style text (first occurrence).
    static func iniValue(_ text: String, section: String, key: String) -> String? {
        var current = ""
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: " \t")
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast())
                continue
            }
            guard current == section, let equals = line.firstIndex(of: "=") else { continue }
            if line[..<equals].trimmingCharacters(in: " \t") == key {
                return line[line.index(after: equals)...].trimmingCharacters(in: " \t")
            }
        }
        return nil
    }

    /// Flatpak's app id rules (``KeychainModel/TrustedApplication/isValidFlatpakAppID(_:)``).
    static func isValidAppID(_ name: String) -> Bool { TrustedApplication.isValidFlatpakAppID(name) }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, set.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}
