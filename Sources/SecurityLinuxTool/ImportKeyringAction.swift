import Foundation
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
                let file = try GnomeKeyringFile(contentsOf: try Data(contentsOf: URL(fileURLWithPath: path)))
                var password = Data()
                if file.form == .encrypted {
                    if typed == nil { typed = try keyringPassword(for: file.label, in: session) }
                    guard let typed else { throw CommandFailure.failure("import-keyring: no password was entered") }
                    password = typed
                }
                let report = try session.withAccess(to: target) {
                    try KeyringMoveIn.moveIn(
                        gnomeKeyringAt: path, password: password, into: target.database, stamps: stamps)
                }
                for label in report.leftOutLabels {
                    Console.err(
                        "security: import-keyring: \"\(label)\" left out: another item has its service and account\n")
                }
                Console.out(
                    "\(path): \(report.added) imported, \(report.updated) updated, \(report.unchanged) already "
                        + "present, \(report.leftOut) left out\n")
                failed = failed || report.leftOut > 0
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
}
