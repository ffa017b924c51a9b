import Foundation
import KeychainCore
import KeychainLibc

/// A snapshot of a directory: every entry with its size and hash.
private func snapshot(_ directory: String) -> [String: String] {
    var result: [String: String] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
        let path = directory + "/" + name
        var info = stat()
        lstat(path, &info)
        result[name] = "\(info.st_mode) \(info.st_size) \(info.st_uid) \(sha256(ofFile: path) ?? "-")"
    }
    return result
}

/// Modes under three umasks; links, other users' files and special files at keychain paths.
func fileSystemAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("files")
    var rows: [StressRow] = []

    // Files 0600 and directories 0700 whatever the umask, WAL and SHM included.
    var modeFailures: [String] = []
    var checked = 0
    for mask in ["000", "022", "077", "002"] {
        let home = try Scratch("umask")
        let path = home.path + "/data/keychains/login.keychain-db"
        let result = try Child.worker(["create", path, mask], scratch: home).wait(timeout: 120)
        guard result.status == 0 else {
            modeFailures.append("umask \(mask): the worker failed: \(result.err.suffix(200))")
            continue
        }
        for line in result.out.split(separator: "\n") where line.hasPrefix("M ") {
            let fields = line.split(separator: " ")
            guard fields.count == 3 else { continue }
            let file = String(fields[1])
            let mode = String(fields[2])
            let isDirectory = file.hasSuffix("/keychains") || file.hasSuffix("/keychain")
            checked += 1
            if mode != (isDirectory ? "700" : "600") {
                modeFailures.append("umask \(mask): \(file.replacingOccurrences(of: home.path, with: "~")) is \(mode)")
            }
        }
    }
    rows.append(
        StressRow(
            group: "File system",
            attack: "keychain, WAL, SHM, device key and their directories under umask 000, 022, 077, 002",
            trials: checked, required: "files 0600, directories 0700",
            measured: "\(checked - modeFailures.count)/\(checked) files and directories with the right mode",
            passed: modeFailures.isEmpty && checked >= 16, evidence: modeFailures))

    // Something else at the keychain path: refused, and nothing written anywhere.
    let victimDirectory = try scratch.directory("victim")
    let attackDirectory = try scratch.directory("attack")
    let real = try Corpus.build(at: victimDirectory + "/real.keychain-db", hasPassword: false, seed: context.seed)
    let plainVictim = victimDirectory + "/victim.txt"
    _ = FileManager.default.createFile(atPath: plainVictim, contents: Data("do not touch\n".utf8))
    let isRoot = geteuid() == 0
    var cases: [(String, (String) throws -> Void)] = [
        (
            "symbolic link to a keychain",
            { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: real.path) }
        ),
        (
            "symbolic link to another file",
            { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: plainVictim) }
        ),
        (
            "dangling symbolic link",
            {
                try FileManager.default.createSymbolicLink(
                    atPath: $0, withDestinationPath: victimDirectory + "/new.keychain-db")
            }
        ),
        (
            "hard link to a keychain",
            { path in guard link(real.path, path) == 0 else { throw KeychainError(.io, "link") } }
        ),
        ("named pipe", { path in guard mkfifo(path, 0o600) == 0 else { throw KeychainError(.io, "mkfifo") } }),
        ("directory", { try FileManager.default.createDirectory(atPath: $0, withIntermediateDirectories: false) }),
        (
            "keychain with its -wal a symbolic link to another file",
            { path in
                try copyFile(real.path, path)
                try FileManager.default.createSymbolicLink(atPath: path + "-wal", withDestinationPath: plainVictim)
            }
        ),
        (
            "keychain with its -shm a symbolic link to another file",
            { path in
                try copyFile(real.path, path)
                try FileManager.default.createSymbolicLink(atPath: path + "-shm", withDestinationPath: plainVictim)
            }
        ),
    ]
    if isRoot {
        cases.append(
            (
                "a keychain owned by another user",
                { path in
                    try copyFile(real.path, path)
                    guard chown(path, 65_534, 65_534) == 0 else { throw KeychainError(.io, "chown") }
                }
            ))
        cases.append(
            (
                "a file owned by another user",
                { path in
                    _ = FileManager.default.createFile(atPath: path, contents: Data())
                    guard chown(path, 65_534, 65_534) == 0 else { throw KeychainError(.io, "chown") }
                }
            ))
    }
    var linkFailures: [String] = []
    var attempts = 0
    for (name, plant) in cases {
        for operation in ["open", "create"] {
            attempts += 1
            let path = attackDirectory + "/target.keychain-db"
            for file in existingFiles(path) { try? FileManager.default.removeItem(atPath: file) }
            try? FileManager.default.removeItem(atPath: path)
            try plant(path)
            let victimsBefore = snapshot(victimDirectory)
            let attackBefore = snapshot(attackDirectory)
            let code = errorCode {
                if operation == "open" {
                    let keychain = try KeychainDatabase.open(at: path, configuration: StressKeys.testing())
                    try keychain.add(
                        Item(class: .genericPassword, attributes: [.account: .string("intruder")], data: Data("x".utf8))
                    )
                } else {
                    let keychain = try KeychainDatabase.create(
                        at: path, password: nil, configuration: StressKeys.testing())
                    try keychain.add(
                        Item(class: .genericPassword, attributes: [.account: .string("intruder")], data: Data("x".utf8))
                    )
                }
            }
            if code == nil { linkFailures.append("\(name), \(operation): accepted") }
            if snapshot(victimDirectory) != victimsBefore {
                linkFailures.append("\(name), \(operation): a file the link points to changed (\(codeName(code)))")
            }
            if snapshot(attackDirectory) != attackBefore {
                linkFailures.append("\(name), \(operation): files appeared or changed at the path (\(codeName(code)))")
            }
            for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
                var info = stat()
                if lstat(file, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { rmdir(file) } else { unlink(file) }
            }
        }
    }
    rows.append(
        StressRow(
            group: "File system",
            attack:
                "symbolic link, hard link, other user's file, FIFO, directory, linked -wal/-shm at the keychain path",
            trials: attempts, required: "refused, 0 bytes written",
            measured:
                "\(attempts - Set(linkFailures.map { $0.split(separator: ":")[0] }).count)/\(attempts) refused with nothing written"
                + (isRoot ? "" : " (other users' files not tried: not root)"),
            passed: linkFailures.isEmpty, evidence: linkFailures))
    rows += try publishingAttacks(context)
    return rows
}
