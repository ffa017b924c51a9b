import Foundation

/// Where keychains and the device key live, following the XDG base directories.
///
/// - Keychains: `${XDG_DATA_HOME:-$HOME/.local/share}/keychains/`, the default one being
///   `login.keychain-db`.
/// - The device key: `${XDG_CONFIG_HOME:-$HOME/.config}/keychain/device-key`, outside the
///   data directory, so that a copy of the data directory alone opens nothing.
/// - The default keychain: the file named by `KEYCHAIN_DEFAULT_PATH` when it is set, else the one
///   chosen in the user's ``KeychainPreferences`` (`security default-keychain -s`), else
///   `login.keychain-db`.
/// - macOS's keychains directory, `$HOME/Library/Keychains`: a path in it, as macOS scripts
///   write them, names the keychain of the same name in ``keychainsDirectory`` (see
///   ``resolve(_:)``).
public struct KeychainPaths: Sendable, Hashable {
    /// The directory that holds keychain files.
    public var keychainsDirectory: String
    /// Where macOS keeps a user's keychains, `$HOME/Library/Keychains`: paths in it are read as
    /// names of keychains in ``keychainsDirectory``. The engine creates nothing there (the
    /// `security` tool keeps links of macOS's names for the keychains it creates by such a path).
    public var macOSKeychainsDirectory: String
    /// The directory that holds the device key.
    public var configurationDirectory: String
    /// The default keychain's file: the one chosen when these paths were made (by the
    /// environment or by setting this property), else the one in the user's preferences as they
    /// are now, else ``loginKeychain``. The preferences are read only when this is asked for,
    /// so a command that names its keychain never parses them.
    public var defaultKeychain: String {
        get {
            if let chosenDefaultKeychain { return chosenDefaultKeychain }
            return defaultKeychain(preferences: try? KeychainPreferences.load(from: preferencesFile))
        }
        set { chosenDefaultKeychain = newValue }
    }
    private var chosenDefaultKeychain: String?

    /// The default keychain's file given the user's preferences, reading no file: the policy
    /// itself. The one chosen for these paths (by `KEYCHAIN_DEFAULT_PATH` or by setting
    /// ``defaultKeychain``), else the preferences' default keychain, else ``loginKeychain``.
    ///
    /// ```swift
    /// let paths = KeychainPaths(environment: ["HOME": "/home/u"])
    /// var preferences = KeychainPreferences()
    /// paths.defaultKeychain(preferences: preferences)  // "/home/u/.local/share/keychains/login.keychain-db"
    /// preferences.defaultKeychain = "/srv/ci.keychain-db"
    /// paths.defaultKeychain(preferences: preferences)  // "/srv/ci.keychain-db"
    /// ```
    /// - Parameter preferences: The user's preferences (``KeychainPreferences/load(from:)``
    ///   of ``preferencesFile``), or `nil` for none.
    /// - Returns: The default keychain's path.
    public func defaultKeychain(preferences: KeychainPreferences?) -> String {
        chosenDefaultKeychain ?? preferences?.defaultKeychain.flatMap { $0.isEmpty ? nil : $0 } ?? loginKeychain
    }

    /// The default keychain when it was chosen for these paths (by `KEYCHAIN_DEFAULT_PATH` or
    /// by setting ``defaultKeychain``), `nil` when the user's preferences decide. A client of
    /// the agent sends this path with its requests: the agent serves every process of the
    /// user, and its own environment is not this process's.
    public var chosenDefault: String? { chosenDefaultKeychain }

    /// The environment variable that points the default keychain elsewhere.
    public static let defaultKeychainVariable = "KEYCHAIN_DEFAULT_PATH"

    /// Creates the paths for an environment (the process's by default).
    public init(environment: [String: String]? = nil) {
        let environment = environment ?? ProcessEnvironment.current()
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? home + "/.local/share"
        let config =
            environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? home + "/.config"
        keychainsDirectory = data + "/keychains"
        macOSKeychainsDirectory = home + "/Library/Keychains"
        configurationDirectory = config + "/keychain"
        chosenDefaultKeychain = environment[Self.defaultKeychainVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The login keychain: `login.keychain-db` in ``keychainsDirectory``.
    public var loginKeychain: String { keychainsDirectory + "/login.keychain-db" }

    /// The device key's file.
    public var deviceKeyFile: String { configurationDirectory + "/device-key" }

    /// The user's keychain preferences file (see ``KeychainPreferences``).
    public var preferencesFile: String { configurationDirectory + "/preferences.json" }

    /// Resolves a keychain argument: a path (containing `/`) as is, a bare name inside
    /// ``keychainsDirectory`` (adding `.keychain-db` when it has no extension).
    ///
    /// A path in ``macOSKeychainsDirectory`` names the keychain that the same bare name names,
    /// so that macOS scripts run unchanged. macOS keeps the keychain `X` in the file `X-db`, so
    /// `$HOME/Library/Keychains/build` and `…/build-db` resolve as the name `build`, and
    /// `…/build.keychain` and `…/build.keychain-db` as `build.keychain` and `build.keychain-db`
    /// (the file that `security create-keychain build.keychain` makes).
    ///
    /// ```swift
    /// let paths = KeychainPaths(environment: ["HOME": "/home/u"])
    /// paths.resolve("/home/u/Library/Keychains/build-db")  // "/home/u/.local/share/keychains/build.keychain-db"
    /// ```
    public func resolve(_ nameOrPath: String) -> String {
        let name = macOSKeychainName(nameOrPath) ?? nameOrPath
        if name.contains("/") { return name }
        return keychainsDirectory + "/" + (name.contains(".") ? name : name + ".keychain-db")
    }

    /// The bare name that a path in ``macOSKeychainsDirectory`` stands for, or `nil` for any
    /// other argument. The path is compared as written (after the shell expanded `~`), with
    /// repeated slashes ignored; files in subdirectories are not keychains of macOS's list.
    package func macOSKeychainName(_ path: String) -> String? {
        let directory = macOSKeychainsDirectory.split(separator: "/")
        let components = path.split(separator: "/")
        guard path.hasPrefix("/"), components.count == directory.count + 1,
            components.starts(with: directory), let file = components.last, file != ".", file != ".."
        else { return nil }
        // macOS adds `-db` to the name it was given: `X-db` is the keychain `X`, except that
        // `X.keychain-db` already names a file of ours.
        if file.hasSuffix("-db"), !file.hasSuffix(".keychain-db"), file.count > 3 {
            return String(file.dropLast(3))
        }
        return String(file)
    }
}
