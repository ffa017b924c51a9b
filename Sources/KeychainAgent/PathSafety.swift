import KeychainLibc

/// Checks that a file and every directory above it can be changed by root alone.
enum PathSafety {
    /// Throws unless `info` is owned by root and not writable by group or others.
    static func requireRootOwned(_ info: stat, _ path: String) throws {
        guard info.st_uid == 0 else {
            throw AgentError(.invalidManifest, "\(path) is owned by uid \(info.st_uid), not root")
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw AgentError(
                .invalidManifest, "\(path) is writable by group or others (mode \(octal(info.st_mode & 0o7777)))")
        }
    }

    /// Throws unless every ancestor directory of the absolute `path` is root-owned and not
    /// writable by group or others. A root-owned world-writable directory with the sticky bit
    /// (`/tmp`) is accepted: others may add entries there but cannot rename or remove root's.
    static func requireRootOwnedAncestors(of path: String) throws {
        var directory = parent(of: path)
        while true {
            var info = stat()
            guard lstat(directory, &info) == 0 else { throw AgentError.system("lstat", directory) }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw AgentError(.invalidManifest, "\(directory) is not a directory")
            }
            let sticky = info.st_mode & S_ISVTX != 0
            if !(sticky && info.st_uid == 0) { try requireRootOwned(info, directory) }
            if directory == "/" { return }
            directory = parent(of: directory)
        }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
