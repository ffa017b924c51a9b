import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where keychains and the device key live, following the XDG base directories.
///
/// - Keychains: `${XDG_DATA_HOME:-$HOME/.local/share}/keychains/`, the default one being
///   `login.keychain-db`.
/// - The device key: `${XDG_CONFIG_HOME:-$HOME/.config}/keychain/device-key`, outside the
///   data directory, so that a copy of the data directory alone opens nothing.
/// - The default keychain: the file named by `KEYCHAIN_DEFAULT_PATH` when it is set, else the one
///   chosen in the user's ``KeychainPreferences`` (`security default-keychain -s`), else
///   `login.keychain-db`.
public struct KeychainPaths: Sendable, Hashable {
    /// The directory that holds keychain files.
    public var keychainsDirectory: String
    /// The directory that holds the device key.
    public var configurationDirectory: String
    /// The default keychain's file.
    public var defaultKeychain: String

    /// The environment variable that points the default keychain elsewhere.
    public static let defaultKeychainVariable = "KEYCHAIN_DEFAULT_PATH"

    /// Creates the paths for an environment (the process's by default).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? home + "/.local/share"
        let config =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? home + "/.config"
        keychainsDirectory = data + "/keychains"
        configurationDirectory = config + "/keychain"
        let preferences = try? KeychainPreferences.load(from: configurationDirectory + "/preferences.json")
        defaultKeychain =
            environment[Self.defaultKeychainVariable].flatMap { $0.isEmpty ? nil : $0 }
            ?? preferences?.defaultKeychain.flatMap { $0.isEmpty ? nil : $0 }
            ?? keychainsDirectory + "/login.keychain-db"
    }

    /// The login keychain: `login.keychain-db` in ``keychainsDirectory``.
    public var loginKeychain: String { keychainsDirectory + "/login.keychain-db" }

    /// The device key's file.
    public var deviceKeyFile: String { configurationDirectory + "/device-key" }

    /// The user's keychain preferences file (see ``KeychainPreferences``).
    public var preferencesFile: String { configurationDirectory + "/preferences.json" }

    /// Resolves a keychain argument: a path (containing `/`) as is, a bare name inside
    /// ``keychainsDirectory`` (adding `.keychain-db` when it has no extension).
    public func resolve(_ nameOrPath: String) -> String {
        if nameOrPath.contains("/") { return nameOrPath }
        let name = nameOrPath.contains(".") ? nameOrPath : nameOrPath + ".keychain-db"
        return keychainsDirectory + "/" + name
    }
}

/// File-system operations with the keychain's rules: directories 0700, files 0600 whatever
/// the umask, and no symbolic link or foreign-owned file followed.
enum SecureFileSystem {
    /// Creates a directory and its parents as needed; the last component gets mode 0700.
    static func ensureDirectory(_ path: String) throws {
        var info = stat()
        if lstat(path, &info) == 0 {
            try checkOwned(info, path: path, expecting: S_IFDIR)
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path {
            var parentInfo = stat()
            if stat(parent, &parentInfo) != 0 { try ensureDirectory(parent) }
        }
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw posixError("cannot create directory", path)
        }
        guard lstat(path, &info) == 0 else { throw posixError("cannot inspect directory", path) }
        try checkOwned(info, path: path, expecting: S_IFDIR)
        if chmod(path, 0o700) != 0 { throw posixError("cannot set directory mode", path) }
    }

    /// Checks that `path` is a regular file owned by this user (not a link); `false` if absent.
    static func existingFile(_ path: String) throws -> Bool {
        var info = stat()
        if lstat(path, &info) != 0 {
            if errno == ENOENT { return false }
            throw posixError("cannot inspect file", path)
        }
        try checkOwned(info, path: path, expecting: S_IFREG)
        guard info.st_nlink == 1 else {
            throw KeychainError(.invalidKeychain, "refusing a file with several hard links")
        }
        return true
    }

    private static func checkOwned(_ info: stat, path: String, expecting type: mode_t) throws {
        if info.st_mode & S_IFMT == S_IFLNK {
            throw KeychainError(.invalidKeychain, "refusing a symbolic link at a keychain path")
        }
        guard info.st_mode & S_IFMT == type else {
            throw KeychainError(.invalidKeychain, "unexpected file type at a keychain path")
        }
        guard info.st_uid == geteuid() else {
            throw KeychainError(.invalidKeychain, "refusing a file owned by another user")
        }
    }

    /// Creates a new file exclusively with mode 0600 and writes `contents`, synced.
    static func createFile(_ path: String, contents: Data) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw KeychainError(.duplicateKeychain, "file exists") }
            throw posixError("cannot create file", path)
        }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else { throw posixError("cannot set file mode", path) }
        try contents.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                guard written > 0 else { throw posixError("cannot write file", path) }
                offset += written
            }
        }
        guard fsync(fd) == 0 else { throw posixError("cannot sync file", path) }
    }

    /// Reads a whole file without following a symbolic link, up to `limit` bytes.
    static func readFile(_ path: String, limit: Int) throws -> Data {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open file", path) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: limit + 1)
        var total = 0
        while total <= limit {
            let count = buffer.withUnsafeMutableBytes {
                read(fd, $0.baseAddress! + total, limit + 1 - total)
            }
            if count < 0 { throw posixError("cannot read file", path) }
            if count == 0 { break }
            total += count
        }
        return Data(buffer[0..<min(total, limit + 1)])
    }

    /// The size of a file in bytes, without following a symbolic link.
    static func size(of path: String) throws -> Int {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw posixError("cannot inspect file", path) }
        return Int(info.st_size)
    }

    /// Makes a directory entry durable.
    static func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open directory", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw posixError("cannot sync directory", path) }
    }

    /// Links `source` to `destination` atomically; fails if `destination` exists.
    static func linkExclusive(_ source: String, to destination: String) throws {
        if link(source, destination) != 0 {
            if errno == EEXIST { throw KeychainError(.duplicateKeychain, "a keychain exists there") }
            throw posixError("cannot link file", destination)
        }
    }

    static func remove(_ path: String) { unlink(path) }

    static func posixError(_ what: String, _ path: String) -> KeychainError {
        let code = errno
        let message = "\(what) \(path): \(String(cString: strerror(code)))"
        switch code {
        case ENOENT: return KeychainError(.noSuchKeychain, message)
        case EACCES, EPERM, EROFS: return KeychainError(.readOnly, message)
        case ENOSPC: return KeychainError(.io, message)
        default: return KeychainError(.io, message)
        }
    }
}
