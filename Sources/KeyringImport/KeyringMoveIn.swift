import Crypto
import Foundation
import KeychainCore
import SecretService

/// Moving in from another keyring's files: GNOME Keyring's and a `pass` store's, what
/// `security import-keyring` and the first login with `pam_keychain.so` do (docs/moving-in.md).
///
/// Each file is read whole and decrypted before anything is stored, so a wrong password, a
/// truncated file or an altered one stores nothing. The items are stored as keychaind's Secret
/// Service stores D-Bus items, so every program that used the old keyring finds them by the
/// same attributes; what is new goes in in one transaction with its own dates. The old files
/// are only read. Each file moved in is recorded in ``MoveInStamps``, by its contents' hash.
public enum KeyringMoveIn {
    /// What moving in one file did.
    public struct Report: Sendable, Equatable {
        /// The file.
        public var path: String
        /// The keyring's label.
        public var label: String
        /// What became of its items.
        public var tally: SecretServiceImport.Tally
    }

    /// GNOME Keyring's files in the data directory that holds `keychainsDirectory`
    /// (`${XDG_DATA_HOME:-$HOME/.local/share}/keyrings/*.keyring`), sorted; none when it has none.
    public static func gnomeKeyrings(besideKeychainsIn keychainsDirectory: String) -> [String] {
        let directory = URL(fileURLWithPath: keychainsDirectory).deletingLastPathComponent()
            .appendingPathComponent("keyrings").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".keyring") }.sorted().map { directory + "/" + $0 }
    }

    /// KWallet's files in the data directory that holds `keychainsDirectory`
    /// (`${XDG_DATA_HOME:-$HOME/.local/share}/kwalletd/*.kwl`), sorted; none when it has none.
    public static func kwallets(besideKeychainsIn keychainsDirectory: String) -> [String] {
        let directory = URL(fileURLWithPath: keychainsDirectory).deletingLastPathComponent()
            .appendingPathComponent("kwalletd").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".kwl") }.sorted().map { directory + "/" + $0 }
    }

    /// What the first login moves in (`keychaind --pam login`, with the login keychain unlocked):
    /// GNOME Keyring's login keyring, which GNOME Keyring's own PAM module opens with the login
    /// password, every keyring without a password, and KDE's default wallet (`kdewallet.kwl`),
    /// which pam_kwallet opens with the login password; each once, and again only when its file
    /// changes (``MoveInStamps``). Another keyring or wallet has a password of its own: it is left
    /// for `security import-keyring`, as is a login keyring the login password does not open.
    /// - Returns: What each file tried did, or why it was not moved in.
    public static func moveInAtLogin(
        password: Data, into keychain: any KeychainHandle, keychainsDirectory: String
    ) -> [(path: String, result: Result<Report, any Error>)] {
        let stamps = MoveInStamps(keychainsDirectory: keychainsDirectory)
        let wallets: [(path: String, result: Result<Report, any Error>)] =
            kwallets(besideKeychainsIn: keychainsDirectory).compactMap { path in
                guard URL(fileURLWithPath: path).lastPathComponent == "kdewallet.kwl",
                    let contents = FileManager.default.contents(atPath: path),
                    !stamps.hasMovedIn(path, contents: contents),
                    let file = try? KWalletFile(contentsOf: contents, name: "kdewallet")
                else { return nil }
                return (
                    path, Result { try moveIn(file, from: path, password: password, into: keychain, stamps: stamps) }
                )
            }
        return wallets
            + gnomeKeyrings(besideKeychainsIn: keychainsDirectory).compactMap { path in
                let isLogin = URL(fileURLWithPath: path).lastPathComponent == "login.keyring"
                guard let contents = FileManager.default.contents(atPath: path),
                    !stamps.hasMovedIn(path, contents: contents),
                    let file = try? GnomeKeyringFile(contentsOf: contents), isLogin || file.form == .plain
                else { return nil }
                let result = Result {
                    try moveIn(
                        file, from: path, password: file.form == .plain ? Data() : password, into: keychain,
                        stamps: stamps)
                }
                return (path, result)
            }
    }

    /// Reads the GNOME Keyring file at `path`, decrypts it with `password` (an empty one for a
    /// keyring without a password) and stores its items in `keychain`; records it in `stamps`.
    /// - Throws: ``KeyringFileError`` when the file cannot be read or opened (nothing stored),
    ///   `CocoaError` when it cannot be read at all, ``KeychainModel/KeychainError`` when the
    ///   keychain refuses.
    public static func moveIn(
        gnomeKeyringAt path: String, password: Data, into keychain: any KeychainHandle, stamps: MoveInStamps? = nil
    ) throws -> Report {
        let file = try GnomeKeyringFile(contentsOf: try Data(contentsOf: URL(fileURLWithPath: path)))
        return try moveIn(file, from: path, password: password, into: keychain, stamps: stamps)
    }

    /// As ``moveIn(gnomeKeyringAt:password:into:stamps:)``, for a file already read from `path`.
    public static func moveIn(
        _ file: GnomeKeyringFile, from path: String, password: Data, into keychain: any KeychainHandle,
        stamps: MoveInStamps? = nil
    ) throws -> Report {
        try moveIn(
            try file.items(password: password), readFrom: path, label: file.label, contents: file.contents,
            into: keychain, stamps: stamps)
    }

    /// Reads the KWallet file at `path`, decrypts it with `password` and the salt file beside it
    /// (``KWalletFile``), and stores its entries in `keychain`; records it in `stamps`.
    /// - Throws: ``KeyringFileError`` when the file or its salt cannot be read or opened (nothing
    ///   stored), ``KeychainModel/KeychainError`` when the keychain refuses.
    public static func moveIn(
        kwalletAt path: String, password: Data, into keychain: any KeychainHandle, stamps: MoveInStamps? = nil
    ) throws -> Report {
        let contents = try Data(contentsOf: URL(fileURLWithPath: path))
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return try moveIn(
            try KWalletFile(contentsOf: contents, name: name), from: path, password: password, into: keychain,
            stamps: stamps)
    }

    /// As ``moveIn(kwalletAt:password:into:stamps:)``, for a file already read from `path`.
    public static func moveIn(
        _ file: KWalletFile, from path: String, password: Data, into keychain: any KeychainHandle,
        stamps: MoveInStamps? = nil
    ) throws -> Report {
        guard let salt = FileManager.default.contents(atPath: KWalletFile.saltPath(forWalletAt: path)) else {
            throw KeyringFileError.damaged("its salt file \(KWalletFile.saltPath(forWalletAt: path)) cannot be read")
        }
        return try moveIn(
            try file.items(password: password, salt: salt), readFrom: path, label: file.name, contents: file.contents,
            into: keychain, stamps: stamps)
    }

    /// Decrypts every entry of the `pass` store in `directory` (through `gpg`, all of them before
    /// anything is stored) and stores them in `keychain` (``PassStore``); records it in `stamps`.
    /// - Throws: ``KeyringFileError`` when it is not a store or an entry cannot be decrypted
    ///   (nothing stored), ``KeychainModel/KeychainError`` when the keychain refuses.
    public static func moveIn(
        passStoreAt directory: String, into keychain: any KeychainHandle, stamps: MoveInStamps? = nil
    ) throws -> Report {
        let passStore = try PassStore(directory: directory)
        return try moveIn(
            try passStore.items(), readFrom: directory, label: "pass", contents: passStore.recordedContents(),
            into: keychain, stamps: stamps)
    }

    /// Stores `items`, read and decrypted from the file at `path` (a KeePass database, say), as
    /// the Secret Service stores D-Bus items, and records the file's `contents` in `stamps`.
    /// - Throws: ``KeychainModel/KeychainError`` when the keychain refuses.
    public static func moveIn(
        _ items: [ForeignSecretItem], readFrom path: String, label: String, contents: Data,
        into keychain: any KeychainHandle, stamps: MoveInStamps? = nil
    ) throws -> Report {
        let report = Report(
            path: path, label: label, tally: .init(try SecretServiceImport.store(items, in: keychain), of: items))
        try stamps?.record(path: path, contents: contents, items: items.count)
        return report
    }
}

/// The record of the keyring files moved in, kept beside the keychains
/// (`moved-in.json` in the keychains directory), as oo7 records its migration: the first login
/// moves a file in once, and again only when its contents change. It holds paths, hashes, dates
/// and counts, never an item.
public struct MoveInStamps: Sendable {
    /// One file moved in.
    public struct Entry: Codable, Sendable, Equatable {
        /// The SHA-256 of its contents when it was moved in, in hexadecimal.
        public var sha256: String
        /// When.
        public var date: Date
        /// How many items it had.
        public var items: Int
    }

    /// The record's file.
    public let path: String

    /// The record in `keychainsDirectory`.
    public init(keychainsDirectory: String) {
        path = keychainsDirectory + "/moved-in.json"
    }

    /// The entries by file path; none when there is no record (or it cannot be read).
    public func entries() -> [String: Entry] {
        guard let data = FileManager.default.contents(atPath: path) else { return [:] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (try? decoder.decode([String: Entry].self, from: data)) ?? [:]
    }

    /// Whether the file at `path` was moved in with the contents it has now.
    public func hasMovedIn(_ file: String) -> Bool {
        guard
            let contents = FileManager.default.contents(atPath: file)
                ?? (try? PassStore(directory: file))?.recordedContents()
        else { return false }
        return hasMovedIn(file, contents: contents)
    }

    /// Whether the file at `path`, read as `contents`, was moved in with those contents.
    public func hasMovedIn(_ file: String, contents: Data) -> Bool {
        entries()[file]?.sha256 == Self.hash(contents)
    }

    /// Records that `path`, with `contents`, was moved in (replacing the record atomically).
    public func record(path file: String, contents: Data, items: Int) throws {
        var all = entries()
        all[file] = Entry(sha256: Self.hash(contents), date: Date(), items: items)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(all).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    static func hash(_ contents: Data) -> String {
        SHA256.hash(data: contents).map { String(format: "%02x", $0) }.joined()
    }
}
