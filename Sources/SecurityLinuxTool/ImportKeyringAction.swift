import Foundation
import KeePassFormat
import KeychainCore
import KeyringImport
import SecurityTool

extension ImportKeyring {
    /// What `security import-keyring` does: each file read, opened and moved in on its own; one
    /// that cannot be is reported and stores nothing.
    func run(in session: Session) throws -> Int32 {
        let directory = keychainsDirectory(in: session)
        let paths = files.isEmpty ? KeyringMoveIn.gnomeKeyrings(besideKeychainsIn: directory) : files
        guard !paths.isEmpty else {
            throw CommandFailure.failure(
                "import-keyring: no GNOME Keyring file in \(URL(fileURLWithPath: directory).deletingLastPathComponent().path)/keyrings",
                then: "name the .keyring files to move in")
        }
        let target = try session.open(keychain, createDefault: keychain == nil)
        let stamps = MoveInStamps(keychainsDirectory: directory)
        var typed: Data?
        var failed = false
        for path in paths {
            do {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                    let report = try session.withAccess(to: target) {
                        try KeyringMoveIn.moveIn(passStoreAt: path, into: target.database, stamps: stamps)
                    }
                    failed = Self.print(report) || failed
                    continue
                }
                let contents = try Data(contentsOf: URL(fileURLWithPath: path))
                if KeePassFile.isKeePassFile(contents) {
                    let database = try KeePassFile(contentsOf: contents)
                    let name = URL(fileURLWithPath: path).lastPathComponent
                    if typed == nil { typed = try keyringPassword(of: "the KeePass database \"\(name)\"", in: session) }
                    guard let typed else { throw CommandFailure.failure("import-keyring: no password was entered") }
                    let items = try database.items(password: typed)
                    let report = try session.withAccess(to: target) {
                        try KeyringMoveIn.moveIn(
                            items, readFrom: path, label: name,
                            contents: contents, into: target.database, stamps: stamps)
                    }
                    failed = Self.print(report) || failed
                    continue
                }
                let file = try GnomeKeyringFile(contentsOf: contents)
                var password = Data()
                if file.form == .encrypted {
                    if typed == nil {
                        let name = file.label.isEmpty ? "the GNOME keyring" : "the GNOME keyring \"\(file.label)\""
                        typed = try keyringPassword(of: name, in: session)
                    }
                    guard let typed else { throw CommandFailure.failure("import-keyring: no password was entered") }
                    password = typed
                }
                let report = try session.withAccess(to: target) {
                    try KeyringMoveIn.moveIn(
                        file, from: path, password: password, into: target.database, stamps: stamps)
                }
                failed = Self.print(report) || failed
            } catch let error as KeyringFileError {
                Console.err("security: import-keyring: \(path): \(error)\n")
                failed = true
            } catch let error as CocoaError
                where error.code == .fileReadNoSuchFile || error.code == .fileReadNoPermission
            {
                Console.err("security: import-keyring: \(path): cannot be read\n")
                failed = true
            }
        }
        return failed ? 1 : 0
    }

    /// Prints what moving one file or store in did; `true` when items were left out.
    private static func print(_ report: KeyringMoveIn.Report) -> Bool {
        for label in report.tally.leftOut {
            Console.err("security: import-keyring: \"\(label)\" left out: another item has its service and account\n")
        }
        Console.out("\(report.path): \(report.tally.summary)\n")
        return !report.tally.leftOut.isEmpty
    }
}
