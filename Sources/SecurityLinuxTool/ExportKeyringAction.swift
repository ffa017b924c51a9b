import CredentialExchange
import Foundation
import KeePassFormat
import KeychainCore
import KeychainLibc
import SecurityTool

extension ExportKeyring {
    /// What `security export-keyring` does: the keychain's passwords read, then written into a
    /// new KeePass database in one go (a temporary file renamed into place).
    func run(in session: Session) throws -> Int32 {
        switch format {
        case "kdbx": break
        case "cxf": return try runCredentialExchange(in: session)
        default: throw CommandFailure.usage("export-keyring: the format is kdbx or cxf")
        }
        guard !FileManager.default.fileExists(atPath: output) else {
            throw CommandFailure.failure("export-keyring: \(output) exists", then: "name a new file")
        }
        let exported = try entries(in: session)
        guard let password = try databasePassword(in: session), !password.isEmpty else {
            throw CommandFailure.failure("export-keyring: no password was entered")
        }
        let database = try KeePassExport.database(exported.entries, name: exported.name, password: password)
        try Self.write(database, to: output)
        Console.out("\(output): \(exported.summary)\n")
        return 0
    }

    /// The keychain's generic and internet passwords as export entries (those whose secret is
    /// text), with the keychain's name and what to say of them. Items whose secret asks for its
    /// owner's authentication (an access control's user presence, biometry, …) are left out and
    /// counted: an export is never a way around the person. A damaged item fails the export.
    func entries(in session: Session) throws -> (entries: [KeePassExport.Entry], name: String, summary: String) {
        let source = try session.open(keychain)
        var guarded = 0
        let items: [Item] = try session.withAccess(to: source) {
            try [ItemClass.genericPassword, .internetPassword].flatMap { itemClass in
                let found = try source.database.findReadable(
                    ItemQuery(class: itemClass, synchronizable: .any), includeData: true)
                if let damaged = found.unreadable.first(where: { $0.error.reason != .userAuthenticationNeeded }) {
                    throw damaged.error
                }
                guarded += found.unreadable.count
                return found.items
            }
        }
        let entries = items.compactMap(KeePassExport.Entry.init(exporting:))
        let name = URL(fileURLWithPath: source.database.path ?? "keychain").deletingPathExtension().lastPathComponent
        var summary = "\(entries.count) exported, \(items.count - entries.count) left out (not text)"
        if guarded > 0 { summary += ", \(guarded) left out (they ask for their owner's authentication)" }
        return (entries, name, summary)
    }

    /// `--format cxf`: the keychain's passwords as CXF, to standard output when it is a pipe or a
    /// socket (a program reading it), never a file or a terminal: CXF holds every secret in the
    /// clear.
    func runCredentialExchange(in session: Session) throws -> Int32 {
        guard output == "-" else {
            throw CommandFailure.failure(
                "export-keyring: a CXF export holds every secret in the clear, so it is never written to a file",
                then: "write it into the importing program: security export-keyring --format cxf -o - | program")
        }
        var status = stat()
        let kind = fstat(STDOUT_FILENO, &status) == 0 ? status.st_mode & S_IFMT : 0
        guard kind == S_IFIFO || kind == S_IFSOCK else {
            throw CommandFailure.failure(
                "export-keyring: standard output is not a pipe: a CXF export is written only into another program",
                then: "security export-keyring --format cxf -o - | program")
        }
        let exported = try entries(in: session)
        var document = try CredentialExchangeExport.document(
            exported.entries, userName: ProcessInfo.processInfo.environment["USER"] ?? NSUserName(),
            collection: exported.name)
        defer { document.resetBytes(in: 0..<document.count) }
        // A reader that goes away is an error to say, not a signal that ends this process.
        signal(SIGPIPE, SIG_IGN)
        guard document.withUnsafeBytes({ writeAll($0, to: STDOUT_FILENO) }) else {
            throw CommandFailure.failure("export-keyring: the program reading the export went away")
        }
        Console.err(exported.summary + "\n")
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
        let written = contents.withUnsafeBytes { writeAll($0, to: descriptor) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written, synced, link(temporary, path) == 0 else {
            throw CommandFailure.failure("export-keyring: cannot write \(path) (errno \(errno))")
        }
    }
}
