import Foundation
import KeychainLibc

/// The user's keychain preferences: the default keychain and the search list.
///
/// macOS keeps these in the user's preference domain; here they live in one small JSON file,
/// ``KeychainPaths/preferencesFile`` (`${XDG_CONFIG_HOME:-$HOME/.config}/keychain/preferences.json`),
/// mode 0600 in a 0700 directory, replaced atomically on every change:
///
/// ```json
/// {
///   "defaultKeychain" : "/home/me/.local/share/keychains/build.keychain-db",
///   "searchList" : ["/home/me/.local/share/keychains/login.keychain-db"],
///   "version" : 1
/// }
/// ```
///
/// Changes go through ``update(at:_:)``, which holds an exclusive lock on a file beside it
/// (`preferences.json.lock`) from the read to the write, so that concurrent processes (eight
/// `security create-keychain` at once, say) never lose each other's changes.
///
/// A missing key means "not set". ``KeychainPaths`` reads the default keychain from here, so
/// `security default-keychain -s` moves the default of every module in every process
/// (`KEYCHAIN_DEFAULT_PATH` still wins for the process that sets it).
public struct KeychainPreferences: Codable, Equatable, Sendable {
    /// The format version of the file.
    public var version: Int = 1
    /// The absolute path of the default keychain, when one was chosen.
    public var defaultKeychain: String?
    /// The absolute paths of the keychains searched when a command names none, when set.
    public var searchList: [String]?
    /// The TPM that seals the login keychain to this machine, as a tpm2-tss TCTI configuration
    /// (`device:/dev/tpmrm0`, `swtpm:path=…`), or `none`; when not set, `/dev/tpmrm0` if this
    /// machine has one (docs/login.md).
    public var tpm: String?
    /// `tpm` when the login keychain unlocks at a login without a password on this machine's
    /// boot state (`security set-login-unlock tpm`); not set otherwise.
    public var loginUnlock: String?

    /// Empty preferences.
    public init() {}

    /// Loads the preferences; a missing file gives empty preferences.
    /// - Throws: ``KeychainError`` when the file exists but cannot be read or parsed, or is a
    ///   link or another user's file.
    public static func load(from path: String) throws -> KeychainPreferences {
        guard try SecureFileSystem.existingFile(path) else { return KeychainPreferences() }
        let contents = try SecureFileSystem.readFile(path, limit: 1 << 20)
        do {
            return try JSONDecoder().decode(KeychainPreferences.self, from: contents)
        } catch {
            throw KeychainError(.parameter, "the keychain preferences file \(path) is not valid; fix or remove it")
        }
    }

    /// Reads the preferences, lets `change` edit them and writes them back if they changed,
    /// holding the preferences lock throughout: no other process or thread that changes them
    /// through this method runs between the read and the write.
    ///
    /// ```swift
    /// try KeychainPreferences.update(at: paths.preferencesFile) { preferences in
    ///     preferences.searchList = (preferences.searchList ?? []) + [path]
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - path: The preferences file; the lock is `path` + `.lock`, mode 0600, in the same
    ///     directory (created 0700 when missing).
    ///   - change: Edits the preferences; when it throws, nothing is written.
    /// - Returns: What `change` returns.
    /// - Throws: ``KeychainError`` when the file or its lock cannot be read, locked or written
    ///   (a link or another user's file at either path is refused), or what `change` throws.
    @discardableResult
    public static func update<Result>(
        at path: String, _ change: (inout KeychainPreferences) throws -> Result
    ) throws -> Result {
        try SecureFileSystem.ensureDirectory((path as NSString).deletingLastPathComponent)
        let lock = try PreferencesLock(path: path + ".lock")
        defer { lock.release() }
        var preferences = try load(from: path)
        let before = preferences
        let result = try change(&preferences)
        if preferences != before { try preferences.save(to: path) }
        return result
    }

    /// Writes the preferences atomically with mode 0600, creating the directory (0700).
    ///
    /// This replaces the file whatever another process wrote since it was loaded: to change
    /// the preferences, use ``update(at:_:)``, which serializes read, change and write.
    /// - Throws: ``KeychainError`` when the file cannot be written.
    public func save(to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try SecureFileSystem.ensureDirectory(directory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(self) + Data([0x0A])
        } catch {
            throw KeychainError(.parameter, "cannot encode the keychain preferences")
        }
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0 ... .max)).tmp"
        try SecureFileSystem.createFile(temporary, contents: data)
        guard rename(temporary, path) == 0 else {
            let error = SecureFileSystem.posixError("cannot write the keychain preferences", path)
            SecureFileSystem.remove(temporary)
            throw error
        }
        try SecureFileSystem.syncDirectory(directory)
    }
}

/// An exclusive `flock(2)` on the preferences' lock file, held from ``init(path:)`` to
/// ``release()``.
///
/// `flock` (not `fcntl`) locks belong to the open file description, so two threads of one
/// process exclude each other as two processes do. The file is opened without following a
/// symbolic link and must be a regular file of this user; it is never removed (removing it
/// would let two writers lock two different files).
private struct PreferencesLock {
    private let descriptor: Int32

    init(path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP { throw KeychainError(.invalidKeychain, "refusing a symbolic link at \(path)") }
            throw SecureFileSystem.posixError("cannot open the keychain preferences lock", path)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = SecureFileSystem.posixError("cannot inspect the keychain preferences lock", path)
            close(fd)
            throw error
        }
        guard info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid() else {
            close(fd)
            throw KeychainError(.invalidKeychain, "refusing \(path): not a regular file of this user")
        }
        if info.st_mode & 0o077 != 0 && fchmod(fd, 0o600) != 0 {
            let error = SecureFileSystem.posixError("cannot set the mode of", path)
            close(fd)
            throw error
        }
        do {
            try SecureFileSystem.lockExclusively(fd, path)
        } catch {
            close(fd)
            throw error
        }
        descriptor = fd
    }

    /// Unlocks (closing the file releases the lock).
    func release() { close(descriptor) }
}
