import Foundation
import SecretService

/// A `pass` password store (`~/.password-store`): one GnuPG-encrypted file per entry, its path
/// below the store naming it, decrypted by `gpg` (so the user's own `gpg-agent` and pinentry ask
/// for the key's passphrase, as `pass show` does).
///
/// Each entry becomes a generic password: its path (`Email/alice`) is the service and the label,
/// the value of a `login:`, `username:` or `user:` line (the conventions of `pass` extensions and
/// browserpass) the account, and the whole decrypted entry, less its final line break, the
/// secret: a one-line entry reads back as its password, and a multi-line one loses nothing.
/// The file's modification time is its date.
///
/// ```swift
/// let store = try PassStore(directory: home + "/.password-store")
/// let items = try store.items()
/// ```
public struct PassStore: Sendable {
    /// The store's directory.
    public let directory: String
    /// The `gpg` that decrypts its entries.
    public var gpg = "/usr/bin/gpg"

    /// The store in `directory`.
    /// - Throws: ``KeyringFileError/unrecognized(_:)`` when it has no `.gpg-id` (not a store).
    public init(directory: String) throws {
        guard FileManager.default.fileExists(atPath: directory + "/.gpg-id") else {
            throw KeyringFileError.unrecognized("\(directory) is not a pass store (no .gpg-id)")
        }
        self.directory = directory
    }

    /// The entries' paths below the store, sorted, without `.gpg` (hidden directories such as
    /// `.git` and `.extensions` skipped).
    public func entries() -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        var found: [String] = []
        while let relative = walker.nextObject() as? String {
            if relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { continue }
            if relative.hasSuffix(".gpg") { found.append(String(relative.dropLast(4))) }
        }
        return found.sorted()
    }

    /// What ``MoveInStamps`` records of the store: its entries' names and encrypted files, in order.
    func recordedContents() -> Data {
        entries().reduce(into: Data()) { contents, entry in
            contents +=
                Data(entry.utf8) + (FileManager.default.contents(atPath: directory + "/" + entry + ".gpg") ?? Data())
        }
    }

    /// Every entry, decrypted: all of them or none.
    /// - Throws: ``KeyringFileError/damaged(_:)`` naming the first entry `gpg` cannot decrypt
    ///   (no secret key, a wrong passphrase, an altered file); nothing is returned then.
    public func items() throws -> [ForeignSecretItem] {
        try entries().map { entry in
            let file = directory + "/" + entry + ".gpg"
            let decrypted = try decrypt(file, entry: entry)
            let modified = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date
            return Self.item(entry: entry, contents: decrypted, modified: modified)
        }
    }

    /// The item an entry's decrypted `contents` make.
    static func item(entry: String, contents: Data, modified: Date?) -> ForeignSecretItem {
        var secret = contents
        if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
        var attributes = ["service": entry]
        let lines = String(decoding: contents, as: UTF8.self).split(separator: "\n").dropFirst()
        for key in ["login", "username", "user"] where attributes["account"] == nil {
            if let line = lines.first(where: { $0.lowercased().hasPrefix(key + ":") }) {
                attributes["account"] = line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces)
            }
        }
        return ForeignSecretItem(
            label: entry, attributes: attributes, secret: secret, created: modified, modified: modified)
    }

    /// `gpg --decrypt` of one file, its output read through a pipe (never written anywhere).
    private func decrypt(_ file: String, entry: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gpg)
        process.arguments = ["--quiet", "--yes", "--decrypt", "--", file]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw KeyringFileError.unrecognized("gpg cannot be run (\(gpg)): install GnuPG to move a pass store in")
        }
        let contents = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw KeyringFileError.damaged(
                "gpg cannot decrypt the entry \(entry) (no secret key for it, a wrong passphrase, or an altered file)")
        }
        return contents
    }
}
