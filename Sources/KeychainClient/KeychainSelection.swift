import KeychainCore
import KeychainLibc
import Synchronization

/// Which keychain a call uses: the one place that decides it, for every process of the package
/// (the `security` tool, `Security`'s `SecKeychain…` and `SecItem…` calls, the libraries), so
/// that they all agree on a keychain's file and on its one spelling.
///
/// - **A name or path** (``keychain(named:)``): macOS's System keychain
///   (`/Library/Keychains/System.keychain`) is root's file ``systemKeychain``; a path in macOS's
///   `~/Library/Keychains` names the keychain of the same name; a bare name is a file in the
///   keychains directory (`.keychain-db` added when it has no extension, and `NAME.keychain`
///   also finding `NAME.keychain-db`, as on macOS); every path gets its one absolute spelling
///   (``canonical(_:)``), so that one file is one open handle with one lock state.
/// - **The default keychain** (``defaultKeychain(preferences:)``): `KEYCHAIN_DEFAULT_PATH` when
///   this process sets it, else the user's choice (`security default-keychain -s`, kept in the
///   preferences file), else the login keychain. A process's choice is its own: through the
///   agent it travels with the process's requests (``Keychains``).
/// - **The search list** (``searchList(preferences:)``): the user's list, else the default keychain.
///
/// ```swift
/// let selection = KeychainSelection()
/// let file = selection.keychain(named: "build.keychain")
/// let preferences = try KeychainPreferences.load(from: selection.paths.preferencesFile)
/// let fallback = selection.defaultKeychain(preferences: preferences)
/// ```
public struct KeychainSelection: Sendable {
    /// Where the user's keychains, device key and preferences are.
    public let paths: KeychainPaths
    /// The directory of the System keychain (`KEYCHAIN_SYSTEM_DIRECTORY`, for tests, else
    /// `/var/lib/keychain`).
    public let systemDirectory: String

    /// The environment variable that moves the System keychain's directory.
    public static let systemDirectoryVariable = "KEYCHAIN_SYSTEM_DIRECTORY"
    /// The names macOS scripts give the System keychain.
    public static let macOSSystemKeychainPaths: Set<String> = [
        "/Library/Keychains/System.keychain", "/Library/Keychains/System.keychain-db",
    ]

    /// The selection for an environment (the process's by default).
    public init(environment: [String: String]? = nil) {
        let environment = environment ?? ProcessEnvironment.current()
        paths = KeychainPaths(environment: environment)
        systemDirectory = environment[Self.systemDirectoryVariable] ?? "/var/lib/keychain"
    }

    /// The System keychain's file: root's, under a device key of its own beside it.
    public var systemKeychain: String { systemDirectory + "/System.keychain-db" }

    /// The login keychain's file.
    public var loginKeychain: String { Self.canonical(paths.loginKeychain) }

    /// The default keychain this process chose (`KEYCHAIN_DEFAULT_PATH`), or `nil` when the user's
    /// preferences decide.
    public var chosenDefault: String? { paths.chosenDefault.map(Self.canonical) }

    /// The keychain made on first use when it is the default and does not exist: the one this
    /// process chose, else the login keychain (a keychain chosen with `default-keychain -s` is
    /// never made implicitly).
    public var implicitDefault: String { chosenDefault ?? loginKeychain }

    /// The default keychain: the one this process chose, else the user's choice in
    /// `preferences`, else the login keychain.
    /// The rule is ``KeychainModel/KeychainPaths/defaultKeychain(preferences:)``'s; this gives
    /// the answer its one spelling.
    public func defaultKeychain(preferences: KeychainPreferences?) -> String {
        Self.canonical(paths.defaultKeychain(preferences: preferences))
    }

    /// The keychains searched when a call names none: the user's list, else the default keychain.
    public func searchList(preferences: KeychainPreferences?) -> [String] {
        preferences?.searchList ?? [defaultKeychain(preferences: preferences)]
    }

    /// The file a keychain argument names, as macOS reads `security`'s and `SecKeychainOpen`'s
    /// arguments (see the type's description).
    public func keychain(named name: String) -> String {
        if Self.macOSSystemKeychainPaths.contains(name) { return systemKeychain }
        let path = Self.canonical(paths.resolve(name))
        if path.hasSuffix(".keychain"), !Self.exists(path),
            Self.exists(path + "-db") || path + "-db" == implicitDefault || path + "-db" == loginKeychain
        {
            return path + "-db"
        }
        return path
    }

    /// Where a keychain created by `name` goes: as ``keychain(named:)``, and like macOS a name
    /// ending in `.keychain` gets the `-db` suffix.
    public func creationPath(for name: String) -> String {
        let path = Self.canonical(paths.resolve(name))
        return path.hasSuffix(".keychain") ? path + "-db" : path
    }

    /// `path` as the one absolute spelling of its file: against the working directory, with its
    /// links, `.` and `..` resolved.
    ///
    /// The spelling of an absolute path to a file that exists is remembered (a bounded table):
    /// a `SecItem…` call without `kSecUseKeychain` asks for the default keychain's spelling
    /// each time, and resolving it walks the path's links.
    public static func canonical(_ path: String) -> String {
        guard path.hasPrefix("/") else { return CanonicalPath.of(path) }
        if let known = spellings.withLock({ $0[path] }) { return known }
        let resolved = CanonicalPath.of(path)
        if exists(resolved) {
            spellings.withLock {
                if $0.count >= 64 { $0.removeAll() }
                $0[path] = resolved
            }
        }
        return resolved
    }

    /// Absolute paths of existing files, and their one spelling.
    private static let spellings = Mutex<[String: String]>([:])

    /// The default keychain this process chose (`KEYCHAIN_DEFAULT_PATH`, as written), read from
    /// the environment without copying the rest of it: what a call that uses the default
    /// keychain reads each time.
    public static func processChosenDefault() -> String? {
        guard let value = getenv(KeychainPaths.defaultKeychainVariable), value.pointee != 0 else { return nil }
        return String(validatingCString: value)
    }

    /// The default keychain of a process whose environment `variable` reads (this process's by
    /// default): ``defaultKeychain(preferences:)`` with the preferences file as it is now.
    ///
    /// The answer is remembered until one of the variables it depends on or the preferences
    /// file (its device, inode, size and modification time) changes: a `SecItem…` call without
    /// `kSecUseKeychain` asks for it every time, and it then costs four variable reads and one
    /// `stat`, not a copy of the environment and a JSON decode of the preferences.
    public static func processDefaultKeychain(
        variable: (String) -> String? = { name in getenv(name).flatMap { String(validatingCString: $0) } }
    ) -> String {
        var environment: [String: String] = [:]
        for name in defaultKeychainVariables { environment[name] = variable(name) }
        let selection = KeychainSelection(environment: environment)
        let key = DefaultKeychainKey(
            environment: environment, preferences: FileStamp(of: selection.paths.preferencesFile))
        if let known = processDefault.withLock({ $0 }), known.key == key { return known.path }
        let path = selection.defaultKeychain(
            preferences: try? KeychainPreferences.load(from: selection.paths.preferencesFile))
        processDefault.withLock { $0 = (key, path) }
        return path
    }

    /// The variables the default keychain depends on: where the data and configuration
    /// directories are, and the process's own choice.
    static let defaultKeychainVariables = [
        "HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", KeychainPaths.defaultKeychainVariable, systemDirectoryVariable,
    ]

    /// What ``processDefaultKeychain(variable:)`` answered last, and for what.
    private static let processDefault = Mutex<(key: DefaultKeychainKey, path: String)?>(nil)

    /// What the default keychain was decided from.
    private struct DefaultKeychainKey: Equatable {
        var environment: [String: String]
        var preferences: FileStamp?
    }

    /// What tells one version of a file from another without reading it.
    private struct FileStamp: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var seconds: Int
        var nanoseconds: Int

        /// The stamp of the file at `path`, or `nil` when there is none.
        init?(of path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            seconds = info.st_mtim.tv_sec
            nanoseconds = info.st_mtim.tv_nsec
        }
    }

    /// Whether something (a file or a link) is at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}
