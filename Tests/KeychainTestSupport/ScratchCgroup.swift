import Foundation
import Synchronization

/// A cgroup made for one test in the hierarchy systemd tracks processes with (`name=systemd` on
/// a legacy or hybrid layout, else the unified one), as the system's service manager would make
/// it for a unit (`system.slice/NAME.service`), and removed when the test ends.
///
/// Making one and moving a process into it needs root, as it does for systemd; the processes a
/// test starts in it are real members, and `/proc/PID/cgroup` says so as it says for a unit's.
public final class ScratchCgroup {
    /// Its path below the hierarchy's root, `/system.slice/NAME.service`.
    public let path: String
    /// Its directory in the mounted hierarchy.
    public let directory: String
    /// The directories made for it, deepest first (removed in that order).
    private let made: [String]
    /// Held while directories are made or removed: two tests' cgroups may share a parent, which
    /// one would otherwise remove while the other makes its own below it.
    private static let tree = Mutex(())

    /// Makes the cgroup at `path` (below the root: `system.slice/x.service`).
    /// - Throws: When no hierarchy is mounted, or it cannot be made (not root).
    public init(_ path: String) throws {
        let root = try Self.trackingHierarchy()
        self.path = "/" + path
        directory = root + self.path
        self.made = try Self.tree.withLock { _ in
            var made: [String] = []
            var current = root
            for step in path.split(separator: "/") {
                current += "/" + step
                if !FileManager.default.fileExists(atPath: current) {
                    guard mkdir(current, 0o755) == 0 else {
                        throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: current])
                    }
                    made.insert(current, at: 0)
                }
            }
            return made
        }
    }

    /// `arguments` (a program and its arguments) as started inside the cgroup: a shell moves
    /// itself in, then runs the program, so that the program is a member from its first
    /// instruction.
    public func running(_ arguments: [String]) -> [String] {
        ["/bin/sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", directory] + arguments
    }

    deinit {
        // A directory whose processes are gone is removed; one still holding a process stays
        // (rmdir fails) rather than moving a process a test left behind.
        Self.tree.withLock { _ in for directory in made { rmdir(directory) } }
    }

    /// The mounted hierarchy systemd would track processes in.
    static func trackingHierarchy() throws -> String {
        let own = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
        let candidates =
            own.contains(":name=systemd:")
            ? ["/sys/fs/cgroup/systemd"] : ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        for candidate in candidates where FileManager.default.fileExists(atPath: candidate + "/cgroup.procs") {
            return candidate
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: candidates.joined(separator: ", ")])
    }
}
