import Foundation
import KeychainLibc

/// File-system operations with the keychain's rules: directories 0700, files 0600 whatever
/// the umask, and no symbolic link or foreign-owned file followed.
package enum SecureFileSystem {
    /// Creates a directory and its parents as needed; the last component gets mode 0700.
    package static func ensureDirectory(_ path: String) throws {
        var info = stat()
        if lstat(path, &info) == 0 {
            try checkOwned(info, path: path, expecting: S_IFDIR)
            try checkNotShared(info, path: path)
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
    package static func existingFile(_ path: String) throws -> Bool {
        var info = stat()
        if lstat(path, &info) != 0 {
            if errno == ENOENT { return false }
            throw posixError("cannot inspect file", path)
        }
        try checkOwned(info, path: path, expecting: S_IFREG)
        if info.st_nlink == 2, recoverInterruptedPublish(of: path, inode: info.st_ino, device: info.st_dev) {
            return try existingFile(path)
        }
        try checkSingleName(info)
        return true
    }

    /// Refuses a file with more than one name: another name could be a way in that the
    /// keychain's directory does not guard. (Zero is a file removed since it was opened.)
    private static func checkSingleName(_ info: stat) throws {
        guard info.st_nlink <= 1 else {
            throw KeychainError(.invalidKeychain, "refusing a file with several hard links")
        }
    }

    /// Refuses a directory that other users may write to: they could delete the device key, or
    /// put links where keychains are created. The message says how to repair it, as ssh does.
    private static func checkNotShared(_ info: stat, path: String) throws {
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw KeychainError(
                .invalidKeychain,
                "refusing the directory \(path): other users can write to it (mode \(String(mode, radix: 8))); "
                    + "run chmod go-w \(path)",
                isSetupProblem: true)
        }
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
    package static func createFile(_ path: String, contents: Data) throws {
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

    /// Reads a whole file without following a symbolic link, up to `limit` bytes (one more
    /// when the file is longer, so that callers can tell).
    package static func readFile(_ path: String, limit: Int) throws -> Data {
        var data = Data(count: limit + 1)
        let count = try data.withUnsafeMutableBytes { try readAll(path, into: $0) }
        return data.prefix(count)
    }

    /// Reads `path` (without following a symbolic link) into `buffer`, up to its size.
    /// - Returns: The number of bytes read.
    package static func readAll(_ path: String, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open file", path) }
        defer { close(fd) }
        return try read(fd, into: buffer, path: path)
    }

    /// Reads a file that another process may remove at any moment, as SQLite removes a
    /// keychain's `-wal` and `-shm` files when the last connection to it closes: its size and
    /// bytes come from one descriptor, so a file removed after it was opened is still read
    /// whole, and one removed before is absent, never an error.
    /// - Parameters:
    ///   - path: The file, which must be this user's regular file (not a link).
    ///   - limit: The most bytes read.
    ///   - body: Called with the bytes read.
    /// - Returns: What `body` returns, or `nil` when there is no file at `path`.
    package static func withContentsIfPresent<T>(
        of path: String, limit: Int = .max, _ body: (UnsafeRawBufferPointer) throws -> T
    ) throws -> T? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw posixError("cannot open file", path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw posixError("cannot inspect file", path) }
        try checkOwned(info, path: path, expecting: S_IFREG)
        try checkSingleName(info)
        let buffer = UnsafeMutableRawBufferPointer.allocate(
            byteCount: max(0, min(Int(info.st_size), limit)), alignment: 16)
        defer { buffer.deallocate() }
        let count = try read(fd, into: buffer, path: path)
        return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// Reads from `fd` into `buffer` until it is full or the file ends.
    private static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
        var total = 0
        while total < buffer.count {
            let count = Glibc.read(fd, buffer.baseAddress! + total, buffer.count - total)
            if count < 0 {
                if errno == EINTR { continue }
                throw posixError("cannot read file", path)
            }
            if count == 0 { break }
            total += count
        }
        return total
    }

    /// The size of a file in bytes, without following a symbolic link.
    package static func size(of path: String) throws -> Int {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw posixError("cannot inspect file", path) }
        return Int(info.st_size)
    }

    /// Whether `path` cannot be opened for writing because it, or its file system, is read-only.
    ///
    /// Asked with `access`, not by opening the file: closing a descriptor of a file releases
    /// every POSIX lock this process holds on it, SQLite's included.
    package static func isReadOnly(_ path: String) -> Bool {
        guard access(path, W_OK) != 0 else { return false }
        return errno == EROFS || errno == EACCES || errno == EPERM
    }

    /// Makes a directory entry durable.
    package static func syncDirectory(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open directory", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw posixError("cannot sync directory", path) }
    }

    // MARK: Publishing new files

    /// A fresh temporary name beside `path`, in the one shape ``removeStaleTemporaries(of:)``
    /// and ``recoverInterruptedPublish(of:inode:device:)`` recognise:
    /// `.NAME.PID.RANDOM.tmp`.
    package static func temporaryPath(for path: String) -> String {
        let (directory, name) = split(path)
        return directory + "/.\(name).\(getpid()).\(UInt32.random(in: 0 ... .max)).tmp"
    }

    /// Moves the finished file `temporary` to `destination` in one step, failing with
    /// `.duplicateKeychain` if `destination` exists: the name never shows a half-made file,
    /// and the file never has two names (which ``existingFile(_:)`` would refuse).
    ///
    /// Uses `renameat2(RENAME_NOREPLACE)`; where the kernel or file system lacks it, falls back
    /// to `link` then `unlink`, and a process killed between the two leaves a second name that
    /// ``existingFile(_:)`` recognises and removes.
    package static func publish(_ temporary: String, as destination: String) throws {
        if let renameNoReplace = renameNoReplace {
            if renameNoReplace(AT_FDCWD, temporary, AT_FDCWD, destination, 1 /* RENAME_NOREPLACE */) == 0 {
                return
            }
            switch errno {
            case EEXIST: throw KeychainError(.duplicateKeychain, "a keychain exists there")
            case EINVAL, ENOSYS, EOPNOTSUPP: break
            default: throw posixError("cannot publish file", destination)
            }
        }
        if link(temporary, destination) != 0 {
            if errno == EEXIST { throw KeychainError(.duplicateKeychain, "a keychain exists there") }
            throw posixError("cannot link file", destination)
        }
        unlink(temporary)
    }

    private typealias RenameAt2 =
        @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32

    /// glibc's `renameat2` (2.28 and later), looked up at run time: Swift's Glibc module does
    /// not declare it (it is a GNU extension).
    private static let renameNoReplace: RenameAt2? = {
        #if os(Linux)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else { return nil }
            return unsafeBitCast(symbol, to: RenameAt2.self)
        #else
            return nil
        #endif
    }()

    /// Runs `body` holding an exclusive `flock` on `directory`, so that creating and deleting
    /// files in it (and cleaning up after a process killed doing so) never interleave.
    package static func withDirectoryLock<T>(_ directory: String, _ body: () throws -> T) throws -> T {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw posixError("cannot open directory", directory) }
        defer { close(fd) }
        try lockExclusively(fd, directory)
        return try body()
    }

    /// Takes an exclusive `flock` on `fd` (the file at `path`), waiting for it.
    package static func lockExclusively(_ fd: Int32, _ path: String) throws {
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw posixError("cannot lock", path) }
        }
    }

    /// Removes the temporary files (and SQLite's files beside them) that a process killed while
    /// creating or deleting `path` left behind: `.NAME.PID.RANDOM.tmp*` whose process is gone.
    package static func removeStaleTemporaries(of path: String) {
        let (directory, name) = split(path)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries {
            guard let pid = temporaryOwner(entry, name: name), pid != getpid(), !processExists(pid) else { continue }
            unlink(directory + "/" + entry)
        }
    }

    /// When a publish fell back to `link` and its process was killed before the `unlink`, the
    /// file at `path` also has its temporary name. Removes that name; `true` if it did.
    private static func recoverInterruptedPublish(of path: String, inode: ino_t, device: dev_t) -> Bool {
        let (directory, name) = split(path)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return false }
        for entry in entries where temporaryOwner(entry, name: name) != nil && entry.hasSuffix(".tmp") {
            var info = stat()
            let candidate = directory + "/" + entry
            guard lstat(candidate, &info) == 0, info.st_ino == inode, info.st_dev == device else { continue }
            return unlink(candidate) == 0
        }
        return false
    }

    /// The process id in a temporary name made by ``temporaryPath(for:)`` for `name` (also with
    /// SQLite's `-journal`, `-wal` or `-shm` after it), or `nil` for any other name.
    package static func temporaryOwner(_ entry: String, name: String) -> pid_t? {
        let prefix = "." + name + "."
        guard entry.hasPrefix(prefix) else { return nil }
        var rest = entry.dropFirst(prefix.count)
        for suffix in ["-journal", "-wal", "-shm"] where rest.hasSuffix(suffix) { rest = rest.dropLast(suffix.count) }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2] == "tmp", UInt32(parts[1]) != nil, let pid = pid_t(parts[0]), pid > 0
        else { return nil }
        return pid
    }

    private static func processExists(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    private static func split(_ path: String) -> (directory: String, name: String) {
        let directory = (path as NSString).deletingLastPathComponent
        return (directory.isEmpty ? "." : directory, (path as NSString).lastPathComponent)
    }

    package static func remove(_ path: String) { unlink(path) }

    package static func posixError(_ what: String, _ path: String) -> KeychainError {
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

/// The process's environment, read from `environ(7)`: what `ProcessInfo.processInfo.environment`
/// returns, without building `ProcessInfo`, which costs a short-lived process a measurable part of
/// its run. A variable whose name or value is not UTF-8 is left out; of a name set twice, the
/// first value counts, as `getenv(3)` finds it.
package enum ProcessEnvironment {
    package static func current() -> [String: String] {
        var variables: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            defer { entry += 1 }
            let bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")),
                let name = String(validating: bytes[..<equals], as: UTF8.self),
                let value = String(validating: bytes[(equals + 1)...], as: UTF8.self),
                variables[name] == nil
            else { continue }
            variables[name] = value
        }
        return variables
    }
}

/// The one absolute spelling of a file's path, with the file system's own calls: what
/// `NSString.standardizingPath` returns for a path that exists, without the bridging to
/// `NSString` and `FileManager` that costs a short-lived process more than its lookup.
package enum CanonicalPath {
    /// The most symbolic links followed through a part of the path that does not exist, as
    /// `realpath(3)` allows (`MAXSYMLINKS`).
    package static let linkLimit = 40

    /// `path` made absolute against the working directory, with every `.`, `..`, repeated `/`
    /// and symbolic link resolved as `realpath(3)` does. The part of the path that does not
    /// exist yet (a keychain about to be created) is appended as written, less its `.` and
    /// `..`; a link among it to a file not there yet is followed. A path that starts with `~`
    /// is expanded as Foundation expands it.
    ///
    /// ```swift
    /// CanonicalPath.of("k.keychain-db")  // "/home/me/k.keychain-db" in /home/me
    /// CanonicalPath.of("/tmp//a/../k")   // "/tmp/k"
    /// ```
    package static func of(_ path: String) -> String {
        if path.hasPrefix("~") { return (path as NSString).standardizingPath }
        return resolved(path.hasPrefix("/") ? path : workingDirectory() + "/" + path, links: 0)
    }

    /// The working directory, or `/` when it cannot be read.
    private static func workingDirectory() -> String {
        guard let directory = getcwd(nil, 0) else { return "/" }
        defer { free(directory) }
        return String(cString: directory)
    }

    /// `path` (absolute) resolved: by `realpath(3)` when it exists, else its parent resolved
    /// and its last name appended.
    private static func resolved(_ path: String, links: Int) -> String {
        if let real = realpath(path, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return path }
        let name = trimmed[trimmed.index(after: slash)...]
        if name.isEmpty { return "/" }
        let parent = resolved(slash == trimmed.startIndex ? "/" : String(trimmed[..<slash]), links: links)
        switch name {
        case ".":
            return parent
        case "..":
            guard let up = parent.lastIndex(of: "/"), up != parent.startIndex else { return "/" }
            return String(parent[..<up])
        default:
            let joined = (parent == "/" ? "" : parent) + "/" + name
            if links < linkLimit, let target = linkTarget(joined) {
                return resolved(target.hasPrefix("/") ? target : parent + "/" + target, links: links + 1)
            }
            return joined
        }
    }

    /// Where the symbolic link at `path` points, or `nil` when `path` is not one.
    private static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
