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
        let paths =
            files.isEmpty
            ? KeyringMoveIn.gnomeKeyrings(besideKeychainsIn: directory)
                + KeyringMoveIn.kwallets(besideKeychainsIn: directory) : files
        guard !paths.isEmpty else {
            let data = URL(fileURLWithPath: directory).deletingLastPathComponent().path
            throw CommandFailure.failure(
                "import-keyring: no GNOME Keyring or KWallet file in \(data)/keyrings or \(data)/kwalletd",
                then: "name the files (.keyring, .kwl, .kdbx) or the pass store to move in")
        }
        let target = try session.open(keychain, createDefault: keychain == nil)
        let stamps = MoveInStamps(keychainsDirectory: directory)
        var typed: Data?
        var failed = false
        for path in paths {
            do {
                let report = try moveIn(path, into: target, stamps: stamps, password: &typed, in: session)
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

    /// Moves one file (GNOME Keyring's, a KeePass database, a KWallet) or `pass` store in. A file with a
    /// password asks for it the first time one is needed (`typed`), and uses it for the others.
    private func moveIn(
        _ path: String, into target: OpenKeychain, stamps: MoveInStamps, password typed: inout Data?,
        in session: Session
    ) throws -> KeyringMoveIn.Report {
        func password(of name: String) throws -> Data {
            if typed == nil { typed = try keyringPassword(of: name, in: session) }
            guard let typed else { throw CommandFailure.failure("import-keyring: no password was entered") }
            return typed
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return try session.withAccess(to: target) {
                try KeyringMoveIn.moveIn(passStoreAt: path, into: target.database, stamps: stamps)
            }
        }
        let contents = try Data(contentsOf: URL(fileURLWithPath: path))
        if KeePassFile.isKeePassFile(contents) {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let items = try KeePassFile(contentsOf: contents).items(
                password: try password(of: "the KeePass database \"\(name)\""))
            return try session.withAccess(to: target) {
                try KeyringMoveIn.moveIn(
                    items, readFrom: path, label: name, contents: contents, into: target.database, stamps: stamps)
            }
        }
        if KWalletFile.isKWalletFile(contents) {
            // A wallet this cannot read is refused before a password is asked.
            let wallet = try KWalletFile(
                contentsOf: contents, name: URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent)
            let key = try password(of: "the KWallet \"\(wallet.name)\"")
            return try session.withAccess(to: target) {
                try KeyringMoveIn.moveIn(wallet, from: path, password: key, into: target.database, stamps: stamps)
            }
        }
        let file = try GnomeKeyringFile(contentsOf: contents)
        let key =
            file.form == .encrypted
            ? try password(of: file.label.isEmpty ? "the GNOME keyring" : "the GNOME keyring \"\(file.label)\"")
            : Data()
        return try session.withAccess(to: target) {
            try KeyringMoveIn.moveIn(file, from: path, password: key, into: target.database, stamps: stamps)
        }
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
