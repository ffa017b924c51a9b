import Foundation
import KeePassFormat
import KeychainCore
import SecurityTool

extension ExportKeyring {
    /// What `security export-keyring` does: the keychain's passwords read, then written into a
    /// new KeePass database in one go (a temporary file renamed into place).
    func run(in session: Session) throws -> Int32 {
        guard !FileManager.default.fileExists(atPath: output) else {
            throw CommandFailure.failure("export-keyring: \(output) exists", then: "name a new file")
        }
        let source = try session.open(keychain)
        let items: [Item] = try session.withAccess(to: source) {
            try [ItemClass.genericPassword, .internetPassword].flatMap { itemClass in
                try source.database.find(ItemQuery(class: itemClass, synchronizable: .any), includeData: true)
            }
        }
        let entries = items.compactMap(KeePassExport.Entry.init(exporting:))
        guard let password = try databasePassword(in: session), !password.isEmpty else {
            throw CommandFailure.failure("export-keyring: no password was entered")
        }
        let name = URL(fileURLWithPath: source.database.path ?? "keychain").deletingPathExtension().lastPathComponent
        let database = try KeePassExport.database(entries, name: name, password: password)
        try Self.write(database, to: output)
        Console.out("\(output): \(entries.count) exported, \(items.count - entries.count) left out (not text)\n")
        return 0
    }

    /// Writes `contents` to a new file at `path` with mode 600: into a temporary file beside it,
    /// flushed, then linked into place, so a file there is never replaced or left half-written.
    static func write(_ contents: Data, to path: String) throws {
        let temporary = path + ".\(UUID().uuidString.prefix(8)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CommandFailure.failure("export-keyring: cannot write beside \(path) (errno \(errno))")
        }
        defer { unlink(temporary) }
        let written = contents.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written, synced, link(temporary, path) == 0 else {
            throw CommandFailure.failure("export-keyring: cannot write \(path) (errno \(errno))")
        }
    }
}
