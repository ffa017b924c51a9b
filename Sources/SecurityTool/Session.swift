import Foundation
import KeychainClient
import KeychainModel
import KeychainLibc

/// An open keychain, with the name the user gave for it (for messages).
package struct OpenKeychain {
    /// The keychain argument as typed, or `nil` when the default or the search list was used.
    var name: String?
    /// The keychain's absolute path.
    var path: String
    /// The open handle.
    package var database: any KeychainHandle
}

/// Everything one `security` process shares between its commands: the environment, the
/// keychain handles it has opened (so that, in interactive mode, `unlock-keychain` keeps a
/// keychain unlocked for the commands that follow), standard input and the preferences.
///
/// Lock state lives in the handles, so it lasts exactly as long as this process.
package final class Session {
    /// The environment variable that supplies the password of a locked keychain to one-shot
    /// commands (read before prompting on the terminal).
    package static let passwordVariable = "KEYCHAIN_PASSWORD"
    /// Test-only: when set to `1`, keychains are created with the engine's cheap
    /// `KeyDerivation.unsafeTestingOnly` and such keychains may be opened. Never set it for
    /// real keychains: their passwords become cheap to guess. (Keychains made with it do not
    /// open without it, so a weak keychain cannot slip into normal use unnoticed.)
    static let unsafeTestKDFVariable = "KEYCHAIN_UNSAFE_TEST_KDF"

    package let environment: [String: String]
    /// The bytes of ``passwordVariable``, exactly as set (`ProcessInfo` would replace bytes
    /// that are not UTF-8), or `nil` when it is not set.
    package let environmentPassword: Data?
    /// Which keychain each command uses.
    let selection: KeychainSelection
    var paths: KeychainPaths { selection.paths }
    package let configuration: KeychainConfiguration
    package let input = StandardInput()
    var interactive = false
    var verbose = false
    /// `security -q`: commands leave out their success messages, as macOS's `do_quiet`.
    var quiet = false
    /// The command line being run, its command's name first, as typed.
    var commandLine: [String] = []
    /// The implementations of the Linux-only commands, in `security-linux`; `nil` in `security`,
    /// which runs them in `security-linux` (``runLinuxCommand(_:)``).
    var linuxCommandRunner: LinuxCommandRunner?
    private var handles: [String: any KeychainHandle] = [:]
    private var prefetched: KeychainPrefetch?
    private var cachedPreferences: KeychainPreferences?

    /// - Parameter environment: The environment; by default the process's, whose password
    ///   variable is then read as bytes.
    init(environment given: [String: String]? = nil) {
        let environment = given ?? ProcessEnvironment.current()
        self.environment = environment
        if given != nil {
            environmentPassword = environment[Self.passwordVariable].map { Data($0.utf8) }
        } else {
            environmentPassword = ArgumentBytes.environmentValue(Self.passwordVariable).map { Data($0) }
        }
        selection = KeychainSelection(environment: environment)
        var configuration = KeychainConfiguration(accessGroups: .fromEnvironment(environment))
        // One command, one thread: one SQLite connection per keychain opens fastest.
        configuration.concurrentReads = false
        if environment[Self.unsafeTestKDFVariable] == "1" {
            configuration.keyDerivation = .unsafeTestingOnly
            configuration.allowsUnsafeKeyDerivation = true
        }
        self.configuration = configuration
    }

    var secrets: SecretReader { SecretReader(input: input) }

    // MARK: Preferences

    var preferencesPath: String { paths.preferencesFile }

    func preferences() throws -> KeychainPreferences {
        if let cachedPreferences { return cachedPreferences }
        let loaded = try Self.preferencesFailure { try KeychainPreferences.load(from: preferencesPath) }
        cachedPreferences = loaded
        return loaded
    }

    /// Changes the preferences under their lock (``KeychainPreferences/update(at:_:)``): the
    /// change sees what other processes wrote before it, and none of them writes in between.
    /// `change` must work from the preferences it is given, not from ``preferences()``.
    func updatePreferences(_ change: (inout KeychainPreferences) -> Void) throws {
        let updated = try Self.preferencesFailure {
            try KeychainPreferences.update(at: preferencesPath) { preferences in
                change(&preferences)
                return preferences
            }
        }
        cachedPreferences = updated
    }

    /// Reports a preferences problem as a plain failure (exit 1), as the tool always has.
    private static func preferencesFailure<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as KeychainError {
            throw CommandFailure.failure(error.message)
        }
    }

    // MARK: Keychain names and paths

    /// The login keychain: `login.keychain-db` in the keychains directory.
    var loginKeychainPath: String { paths.loginKeychain }

    /// The keychain created on first use: `KEYCHAIN_DEFAULT_PATH` when set, else the login
    /// keychain (``KeychainClient/KeychainSelection/implicitDefault``).
    package var engineDefaultKeychain: String { selection.implicitDefault }

    /// The default keychain (``KeychainClient/KeychainSelection/defaultKeychain(preferences:)``);
    /// the preferences are not read when `KEYCHAIN_DEFAULT_PATH` decides.
    package func defaultKeychainPath() throws -> String {
        if let chosen = selection.chosenDefault { return chosen }
        return selection.defaultKeychain(preferences: try preferences())
    }

    /// The default keychain given these preferences (`KEYCHAIN_DEFAULT_PATH` still wins).
    func defaultKeychainPath(in preferences: KeychainPreferences) -> String {
        selection.defaultKeychain(preferences: preferences)
    }

    /// The keychains searched when a command names none.
    func searchList() throws -> [String] {
        selection.searchList(preferences: try preferences())
    }

    /// Resolves a keychain argument as macOS does
    /// (``KeychainClient/KeychainSelection/keychain(named:)``).
    package func resolve(_ name: String) -> String { selection.keychain(named: name) }

    /// Where `create-keychain` puts a keychain
    /// (``KeychainClient/KeychainSelection/creationPath(for:)``).
    func creationPath(_ name: String) -> String { selection.creationPath(for: name) }

    /// `path` as the one absolute spelling of its file
    /// (``KeychainClient/KeychainSelection/canonical(_:)``).
    package func absolute(_ path: String) -> String { KeychainSelection.canonical(path) }

    package func fileExists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    // MARK: Opening

    /// Opens a keychain by its path, reusing this process's handle.
    ///
    /// The login keychain is created (without a password) whenever it is opened and does not
    /// exist yet, however it is named: on macOS it always exists, and scripts name it before
    /// anything has written to it (`import dev.p12 -k login.keychain`, or fastlane restoring
    /// the default with `default-keychain -s` and the path `default-keychain` printed).
    /// - Parameter createDefault: Whether to create the engine's default keychain (without a
    ///   password) when `path` is that keychain and it does not exist yet.
    func database(at path: String, createDefault: Bool = false) throws -> any KeychainHandle {
        if let handle = handles[path] { return handle }
        if path == selection.systemKeychain {
            let handle = try SystemKeychain.open(configuration: configuration, selection: selection)
            handles[path] = handle
            return handle
        }
        try useAgent()
        if let handle = prefetched?.take(path) {
            handles[path] = handle
            return handle
        }
        let handle: any KeychainHandle
        if createDefault && path == engineDefaultKeychain {
            var defaultPaths = paths
            defaultPaths.defaultKeychain = path
            handle = try Keychains.openDefault(paths: defaultPaths, configuration: configuration)
        } else if path == selection.loginKeychain {
            handle = try Keychains.openCreatingIfMissing(at: path, configuration: configuration)
        } else {
            handle = try Keychains.open(at: path, configuration: configuration)
        }
        handles[path] = handle
        return handle
    }

    /// Opens the keychain a command names, or the default keychain.
    package func open(_ name: String?, createDefault: Bool = false) throws -> OpenKeychain {
        let path = try name.map(resolve) ?? defaultKeychainPath()
        return OpenKeychain(name: name, path: path, database: try database(at: path, createDefault: createDefault))
    }

    /// Starts opening, on a second thread, the keychains a command names (the default keychain
    /// when it names none), so that ArgumentParser's reading of the command line and the
    /// opening, each about a third of a short process's own work, overlap. Only a keychain that
    /// opens is kept; the command's own open reports any failure as before, in its place.
    func prefetch(names: [String]) {
        prefetched?.wait()
        let wanted = names.isEmpty ? nil : names.map(resolve).filter { handles[$0] == nil }
        guard wanted?.isEmpty != true else { return }
        prefetched = KeychainPrefetch(paths: wanted, defaults: paths, configuration: configuration)
    }

    /// Connects to the session agent, starting it when none answers, unless `KEYCHAIN_AGENT`
    /// is `off` (see `Keychains.agent(startingIfNeeded:)`): the tool is how scripts unlock a
    /// keychain once for the commands after it.
    /// - Returns: Whether the agent keeps this process's keychains.
    /// - Throws: With `KEYCHAIN_AGENT=required`, the reason no agent can be reached.
    @discardableResult
    func useAgent() throws -> Bool {
        do {
            return try Keychains.agent(startingIfNeeded: true) != nil
        } catch {
            throw CommandFailure.status(of: error, "keychaind")
        }
    }

    /// Keeps a handle this process made (a keychain just created).
    func adopt(_ database: any KeychainHandle, at path: String) { handles[path] = database }

    /// Forgets this process's handle for a keychain (before deleting its file).
    func close(_ path: String) { handles[path] = nil }

    /// Closes every keychain this process opened, as it ends: a keychain whose write-ahead log
    /// has grown past its close limit folds it into the file, so the log never grows across the
    /// thousands of short processes a script runs. A keychain another process is
    /// writing is left to that process.
    func closeAll() {
        // The handles are kept: releasing them would close SQLite's connections, and the last
        // one to close deletes the log, which the next process then writes a transaction to
        // create again (GRDB makes sure a pool has a non-empty log).
        for handle in handles.values { try? handle.close() }
        for handle in prefetched?.unused() ?? [] { try? handle.close() }
    }

    /// Every keychain handle this process has open.
    var openDatabases: [any KeychainHandle] { Array(handles.values) }

    // MARK: Locked keychains

    /// Runs `body`; if it fails because a password keychain is locked, obtains the password
    /// (``passwordVariable``, else a prompt on the terminal), unlocks, and runs it again.
    ///
    /// - Throws: The engine's error unchanged when no password is available
    ///   (errSecInteractionNotAllowed), or errSecAuthFailed when the password is wrong.
    package func withAccess<T>(to keychain: OpenKeychain, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as KeychainError
            where error.code == .interactionNotAllowed && keychain.database.isLocked
            && keychain.database.hasPassword
        {
            guard try unlockForAccess(keychain) else { throw error }
            return try body()
        }
    }

    /// Unlocks a locked password keychain with the environment's password or one typed on the
    /// terminal. Returns `false` when no password is available.
    private func unlockForAccess(_ keychain: OpenKeychain) throws -> Bool {
        let name = keychain.name ?? keychain.path
        let wrongPassword = CommandFailure.status(KeychainError.Code.authFailed.rawValue, "SecKeychainUnlock \(name)")
        if let password = environmentPassword {
            do {
                try keychain.database.unlock(password: password)
            } catch let error as KeychainError where error.code == .authFailed {
                throw wrongPassword
            }
            return true
        }
        guard Console.inputIsTerminal else { return false }
        for _ in 1...3 {
            guard let typed = try secrets.readFromTerminalOnly(prompt: "password to unlock \(name): ") else {
                return false
            }
            do {
                try keychain.database.unlock(password: Data(typed))
                return true
            } catch let error as KeychainError where error.code == .authFailed {
                continue
            }
        }
        throw wrongPassword
    }

    /// The hint printed after errSecInteractionNotAllowed: with the session agent, the keychain
    /// is locked for every process until one unlocks it; without it, in this process.
    static func lockedHint() -> String {
        if (try? Keychains.agent()) != nil {
            return "the keychain is locked: unlock it with `security unlock-keychain`, set \(passwordVariable), "
                + "or run on a terminal"
        }
        return "the keychain is locked in this process: set \(passwordVariable), run on a terminal, or unlock it "
            + "in a `security -i` session (see `security help unlock-keychain`)"
    }
}

/// Keychains opened on a thread of their own while the command line is read (see
/// ``Session/prefetch(names:)``).
final class KeychainPrefetch: @unchecked Sendable {
    private let condition = NSCondition()
    private var opened: [String: any KeychainHandle] = [:]
    private var finished = false

    /// Starts opening `paths`, or the default keychain of `defaults` when `paths` is `nil`.
    init(paths: [String]?, defaults: KeychainPaths, configuration: KeychainConfiguration) {
        Thread.detachNewThread { [self] in
            var opened: [String: any KeychainHandle] = [:]
            _ = try? Keychains.agent(startingIfNeeded: true)
            for path in paths ?? [defaults.defaultKeychain] {
                opened[path] = try? Keychains.open(at: path, configuration: configuration)
            }
            condition.withLock {
                self.opened = opened
                finished = true
                condition.broadcast()
            }
        }
    }

    /// Waits until the thread is done.
    func wait() {
        condition.withLock {
            while !finished { condition.wait() }
        }
    }

    /// The handle opened for `path`, once; `nil` when it was not asked for or did not open.
    func take(_ path: String) -> (any KeychainHandle)? {
        wait()
        return condition.withLock { opened.removeValue(forKey: path) }
    }

    /// The handles no command took, after the thread is done.
    func unused() -> [any KeychainHandle] {
        wait()
        return condition.withLock { Array(opened.values) }
    }
}
