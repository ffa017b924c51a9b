import Foundation

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

    /// Writes the preferences atomically with mode 0600, creating the directory (0700).
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
