import Foundation
import GRDB
import KeychainCore
import KeychainLibc
import SeededRandom

// MARK: - Foreign files

/// The kinds of file that are not a keychain this build can open.
private let foreignKinds = [
    "empty", "garbage", "garbage after the SQLite magic", "truncated keychain", "foreign SQLite schema",
    "foreign schema under the keychain application id", "future format version", "application id altered",
]

/// Builds one foreign file at `path` from a real keychain `template`.
private func makeForeignFile(_ path: String, template: String, kind: String, random: inout SplitMix64) throws -> String
{
    try? FileManager.default.removeItem(atPath: path)
    switch kind {
    case "empty":
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        return "0 bytes"
    case "garbage":
        let size = 1 + random.int(65_536)
        _ = FileManager.default.createFile(atPath: path, contents: random.bytes(size))
        return "\(size) random bytes"
    case "garbage after the SQLite magic":
        let size = 100 + random.int(65_536)
        var bytes = random.bytes(size)
        bytes.replaceSubrange(0..<16, with: Data("SQLite format 3\0".utf8))
        if random.chance(50) {
            // A plausible header: the keychain's application id and version, garbage after.
            let header = try Data(contentsOf: URL(fileURLWithPath: template)).prefix(100)
            bytes.replaceSubrange(0..<100, with: header)
        }
        _ = FileManager.default.createFile(atPath: path, contents: bytes)
        return "\(size) bytes"
    case "truncated keychain":
        let bytes = try Data(contentsOf: URL(fileURLWithPath: template))
        let pageSize = 4096
        let length =
            random.chance(50)
            ? random.int(bytes.count) : pageSize * (1 + random.int(max(1, bytes.count / pageSize - 1)))
        _ = FileManager.default.createFile(atPath: path, contents: bytes.prefix(length))
        return "\(length) of \(bytes.count) bytes"
    case "foreign SQLite schema", "foreign schema under the keychain application id":
        var configuration = Configuration()
        let journal = random.pick(["delete", "wal", "truncate", "persist"])
        let pageSize = random.pick([512, 1024, 4096, 8192, 65_536])
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        configuration.label = nil
        let spoof = kind.hasPrefix("foreign schema under")
        let applicationID = spoof ? 0x4B43_484E : random.pick([0, 1, 0x4B43_484F, Int(Int32.max)])
        let userVersion = spoof ? 1 : random.pick([0, 1, 2, 99])
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = \(journal)")
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
            try db.execute(sql: "PRAGMA user_version = \(userVersion)")
            let tables = 1 + random.int(3)
            for table in 0..<tables {
                let name = random.pick(["t\(table)", "items", "meta", "tags", "main_\(table)"])
                try? db.execute(sql: "CREATE TABLE \(name)(a, b BLOB, c TEXT)")
                for row in 0..<random.int(50) {
                    try? db.execute(
                        sql: "INSERT INTO \(name) VALUES (?, ?, ?)",
                        arguments: [row, random.bytes(random.int(200)), "x"])
                }
            }
        }
        try queue.close()
        for suffix in sidecarSuffixes { try? FileManager.default.removeItem(atPath: path + suffix) }
        return "journal \(journal), page \(pageSize), application id \(applicationID), version \(userVersion)"
    case "future format version":
        try copyFile(template, path)
        let version = random.pick([
            KeychainDatabase.formatVersion + 1, KeychainDatabase.formatVersion + 2, 99, Int(Int32.max), -1,
        ])
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        withUnsafeBytes(of: Int32(version).bigEndian) { bytes.replaceSubrange(60..<64, with: $0) }
        try bytes.write(to: URL(fileURLWithPath: path))
        return "user_version \(version)"
    default:
        try copyFile(template, path)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let id = UInt32(truncatingIfNeeded: random.next())
        withUnsafeBytes(of: id.bigEndian) { bytes.replaceSubrange(68..<72, with: $0) }
        try bytes.write(to: URL(fileURLWithPath: path))
        return String(format: "application id 0x%08x", id)
    }
}

/// The codes that say "this file is not a keychain I can open".
private let definedRefusals: Set<KeychainError.Code> = [.invalidKeychain, .wrongVersion, .decode, .authFailed]

/// The worker side: `foreign <template> <seed> <dir>`.
func foreignWorker(_ arguments: [String], from: Int, count: Int) throws {
    guard arguments.count >= 3, let seed = UInt64(arguments[1]) else { throw WorkerUsage() }
    let template = arguments[0]
    let directory = arguments[2]
    let configuration = StressKeys.fromEnvironment()
    serveTrials(from: from, count: count) { index in
        var random = SplitMix64(seed: seed &+ UInt64(index) &* 0x9E37_79B9)
        let kind = foreignKinds[index % foreignKinds.count]
        let path = directory + "/foreign-\(getpid())-\(index).keychain-db"
        defer {
            for file in [path] + sidecarSuffixes.map({ path + $0 }) {
                try? FileManager.default.removeItem(atPath: file)
            }
        }
        do {
            let what = try makeForeignFile(path, template: template, kind: kind, random: &random)
            let before = sha256(ofFile: path)
            var code: KeychainError.Code?
            var opened = false
            code = errorCode {
                let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
                opened = true
                try keychain.unlock(password: Corpus.password)
                _ = try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any), includeData: true)
            }
            let after = sha256(ofFile: path)
            let sidecars = sidecarSuffixes.filter { FileManager.default.fileExists(atPath: path + $0) }
            let detail = "\(kind), \(what) [seed \(seed) trial \(index)]"
            if before != after { return ("FILE CHANGED", "\(detail): \(codeName(code))") }
            guard let code else { return ("OPENED", detail) }
            if !definedRefusals.contains(code) { return ("other error", "\(detail): \(codeName(code))") }
            if !sidecars.isEmpty { return ("sidecar files left", "\(detail): \(sidecars) (\(codeName(code)))") }
            return (opened ? "refused after open" : "refused", "\(kind): \(codeName(code))")
        } catch {
            return ("setup failed", "\(kind): \(error)")
        }
    }
}

// MARK: - Key-derivation parameters

/// Rewrites the stored key-derivation parameters of a checkpointed keychain.
private func editKeyDerivation(_ path: String, _ edit: (inout Data) -> Void) throws {
    let queue = try rawQueue(path)
    try queue.write { db in
        var value = try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'kdf'") ?? Data()
        edit(&value)
        try db.execute(sql: "UPDATE meta SET value = ? WHERE name = 'kdf'", arguments: [value])
    }
    try queue.close()
    try checkpoint(path)
}

private func setUInt32(_ data: inout Data, at offset: Int, _ value: UInt32) {
    withUnsafeBytes(of: value.bigEndian) { data.replaceSubrange(offset..<offset + 4, with: $0) }
}

/// A parameter edit: a name and what it does to the stored bytes
/// (algorithm byte, logN, r or rounds, p, salt length, salt).
private struct KDFEdit {
    var name: String
    var apply: (inout Data) -> Void

    static func scrypt(_ logN: UInt8, _ r: UInt32, _ p: UInt32) -> KDFEdit {
        KDFEdit(name: "scrypt(2^\(logN), r=\(r), p=\(p))") { data in
            data[1] = logN
            setUInt32(&data, at: 2, r)
            setUInt32(&data, at: 6, p)
        }
    }

    static func pbkdf2(_ rounds: UInt32) -> KDFEdit {
        KDFEdit(name: "PBKDF2(\(rounds) rounds)") { data in
            data[0] = 2
            data[1] = 0
            setUInt32(&data, at: 2, rounds)
            setUInt32(&data, at: 6, 0)
        }
    }
}

/// The worker side of an edited-parameter trial: opens and unlocks the keychain with the
/// production configuration; prints `R 0\t<code>\t<milliseconds> <peak growth bytes>`, or
/// `R 0\tderived\t…` and exits at once when a key derivation starts (so an accepted
/// parameter is seen by the mechanism, never by how long the child took).
func kdfOpenWorker(_ arguments: [String]) -> Int32 {
    guard let path = arguments.first else { return 2 }
    var configuration = StressKeys.production(device: StressKeys.device)
    configuration.allowsUnsafeKeyDerivation = arguments.count > 1 && arguments[1] == "unsafe"
    resetPeakMemory()
    let base = memoryStatus().peak
    let started = monotonicSeconds()
    let code = KeyDerivation.$willDerive.withValue({ _ in
        emit("R 0\tderived\t\(String(format: "%.2f", (monotonicSeconds() - started) * 1000)) 0")
        exit(0)
    }) {
        errorCode {
            let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
            try keychain.unlock(password: Corpus.password)
        }
    }
    let elapsed = (monotonicSeconds() - started) * 1000
    let growth = memoryStatus().peak - base
    emit("R 0\t\(codeName(code))\t\(String(format: "%.2f", elapsed)) \(growth)")
    return 0
}

/// Opens an edited file in a child process. A child that starts a derivation says so and
/// exits (`derived`); `deadline` only guards against a hang (a child still running then is
/// killed and counted as accepting the parameters).
private func probeInChild(_ path: String, scratch: Scratch, unsafe: Bool, deadline: Double) -> (
    code: String, milliseconds: Double, peakGrowth: Int
) {
    guard
        let child = try? LineChild(
            ["kdf-open", path] + (unsafe ? ["unsafe"] : []), scratch: scratch)
    else { return ("cannot start", 0, 0) }
    let started = monotonicSeconds()
    let result = Mutex<String?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let line = child.readLine()
        result.withLock { $0 = line }
        done.signal()
    }
    var rss = 0
    while done.wait(timeout: .now() + 0.02) == .timedOut {
        rss = max(rss, memoryStatus(pid: child.pid).resident)
        if monotonicSeconds() - started > deadline {
            _ = kill(child.pid, SIGKILL)
            done.wait()
            _ = child.finish()
            return ("still deriving after \(Int(deadline)) s", deadline * 1000, rss)
        }
    }
    _ = child.finish()
    guard let line = result.withLock({ $0 }), line.hasPrefix("R ") else { return ("no answer", 0, rss) }
    let fields = line.split(separator: "\t")
    let numbers = fields.count > 2 ? fields[2].split(separator: " ") : []
    return (
        fields.count > 1 ? String(fields[1]) : "?", numbers.first.flatMap { Double($0) } ?? 0,
        numbers.count > 1 ? Int(numbers[1]) ?? 0 : 0
    )
}

/// Edited key-derivation parameters: downwards (never used), absurd (refused at once).
func keyDerivationAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("kdf")
    var rows: [StressRow] = []
    // A keychain with the production derivation, and one with PBKDF2 at its default strength.
    let scryptPath = scratch.file("scrypt.keychain-db")
    let production = StressKeys.production()
    let keychain = try KeychainDatabase.create(at: scryptPath, password: Corpus.password, configuration: production)
    try keychain.unlock(password: Corpus.password)
    try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("a")], data: Data("secret".utf8)))
    try checkpoint(scryptPath)
    let pbkdf2Path = scratch.file("pbkdf2.keychain-db")
    var pbkdf2Configuration = production
    pbkdf2Configuration.keyDerivation = .pbkdf2()
    _ = try KeychainDatabase.create(at: pbkdf2Path, password: Corpus.password, configuration: pbkdf2Configuration)
    try checkpoint(pbkdf2Path)

    // Downwards: every weaker setting of the production file, opened with the production
    // configuration and with one that allows weak derivations (tests only).
    var downwards: [(String, KDFEdit)] = [
        (scryptPath, .scrypt(16, 8, 1)), (scryptPath, .scrypt(15, 8, 1)), (scryptPath, .scrypt(14, 8, 1)),
        (scryptPath, .scrypt(10, 8, 1)), (scryptPath, .scrypt(1, 1, 1)), (scryptPath, .scrypt(17, 4, 1)),
        (scryptPath, .scrypt(17, 1, 1)), (scryptPath, .pbkdf2(210_000)), (scryptPath, .pbkdf2(1)),
        (pbkdf2Path, .pbkdf2(300_000)), (pbkdf2Path, .pbkdf2(210_000)), (pbkdf2Path, .pbkdf2(1_000)),
        (pbkdf2Path, .scrypt(15, 8, 1)),
    ]
    if context.mode == .quick {
        downwards = downwards.filter { !$0.1.name.contains("2^15") }
    }
    var used: [String] = []
    var slow: [String] = []
    var worst = 0.0
    var trials = 0
    for (source, edit) in downwards {
        for unsafe in [false, true] {
            let path = scratch.file("edited.keychain-db")
            try copyFile(source, path)
            try editKeyDerivation(path, edit.apply)
            let probe = probeInChild(path, scratch: scratch, unsafe: unsafe, deadline: 120)
            trials += 1
            worst = max(worst, probe.milliseconds)
            let label = "\(edit.name)\(unsafe ? " (weak allowed)" : "")"
            if probe.code == "success" || probe.code == "derived" || probe.code.hasPrefix("still") {
                used.append("\(label): \(probe.code)")
            }
            if probe.milliseconds >= 100 { slow.append("\(label): \(probe.code) after \(Int(probe.milliseconds)) ms") }
        }
    }
    // Whether the refusal came before any derivation is checked by the mechanism (the child
    // reports a derivation as it starts); the time is judged in the long run only, so that a
    // loaded machine cannot fail the quick suite.
    let timed = context.mode == .long
    rows.append(
        StressRow(
            group: "Foreign files", attack: "KDF parameters edited downwards (scrypt N, r; PBKDF2 rounds; algorithm)",
            trials: trials,
            required: "refused before any key derivation starts" + (timed ? ", in < 100 ms" : ""),
            measured:
                "\(used.count) derived or used; \(trials - slow.count)/\(trials) refused in < 100 ms (slowest \(Int(worst)) ms)",
            passed: used.isEmpty && (!timed || slow.isEmpty),
            evidence: used.map { "DERIVED OR USED: \($0)" } + (timed ? slow : [])))

    // Absurd: out-of-range fields, memory over the cap, and work far beyond the default.
    let absurd: [KDFEdit] = [
        .scrypt(0, 8, 1), .scrypt(23, 8, 1), .scrypt(40, 8, 1), .scrypt(64, 8, 1), .scrypt(255, 8, 1),
        .scrypt(17, 0, 1), .scrypt(17, 33, 1), .scrypt(17, UInt32.max, 1), .scrypt(17, 8, 0), .scrypt(17, 8, 17),
        .scrypt(17, 8, UInt32.max), .scrypt(22, 32, 1), .scrypt(21, 8, 1), .scrypt(22, 32, 16),
        .scrypt(19, 8, 16), .scrypt(17, 32, 16), .scrypt(22, 1, 16),
        .pbkdf2(0), .pbkdf2(10_000_001), .pbkdf2(UInt32.max), .pbkdf2(10_000_000),
        KDFEdit(name: "unknown algorithm 0") { $0[0] = 0 },
        KDFEdit(name: "unknown algorithm 255") { $0[0] = 255 },
        KDFEdit(name: "salt length 255 (past the end)") { $0[10] = 255 },
        KDFEdit(name: "empty parameters") { $0 = Data() },
        KDFEdit(name: "salt of 8 bytes") { data in
            data[10] = 8
            data = data.prefix(19)
        },
    ]
    var accepted: [String] = []
    var costly: [String] = []
    var slowest = 0.0
    var largest = 0
    for edit in absurd {
        let path = scratch.file("absurd.keychain-db")
        try copyFile(scryptPath, path)
        try editKeyDerivation(path, edit.apply)
        let probe = probeInChild(
            path, scratch: scratch, unsafe: false, deadline: context.mode.pick(quick: 120, long: 3))
        slowest = max(slowest, probe.milliseconds)
        largest = max(largest, probe.peakGrowth)
        if probe.code == "success" || probe.code == "derived" || probe.code.hasPrefix("still") {
            accepted.append("\(edit.name): \(probe.code), \(probe.peakGrowth >> 20) MiB resident")
        } else if (timed && probe.milliseconds >= 100) || probe.peakGrowth > 32 << 20 {
            costly.append(
                "\(edit.name): \(probe.code) after \(Int(probe.milliseconds)) ms, peak +\(probe.peakGrowth >> 20) MiB")
        }
    }
    rows.append(
        StressRow(
            group: "Foreign files",
            attack: "KDF parameters edited to absurd values (N, r, p out of range; > 1 GiB; ≥ 64× the default work)",
            trials: absurd.count,
            required: "refused before any key derivation starts, < 32 MiB allocated" + (timed ? ", in < 100 ms" : ""),
            measured:
                "\(absurd.count - accepted.count - costly.count)/\(absurd.count) refused (slowest \(Int(slowest)) ms, peak +\(largest >> 20) MiB); \(accepted.count) accepted",
            passed: accepted.isEmpty && costly.isEmpty, evidence: accepted.map { "ACCEPTED: \($0)" } + costly))
    return rows
}

/// Files that are not keychains, judged in worker processes.
func foreignFileAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("foreign")
    let corpus = try Corpus.build(at: scratch.file("template.keychain-db"), hasPassword: true, seed: context.seed)
    let work = try scratch.directory("work")
    let total = context.mode.pick(quick: 120, long: 2_000)
    let (lines, crashes) = runTrials(
        ["foreign", corpus.path, String(context.seed), work], total: total, batch: 250, workers: context.workers,
        scratch: scratch)
    var tally = Tally()
    for line in lines { tally.add(line.outcome, example: line.detail) }
    for crash in crashes { tally.add("CRASH", example: "trial \(crash.index): \(crash.detail)") }
    let refused = tally["refused"] + tally["refused after open"]
    let bad = ["FILE CHANGED", "OPENED", "other error", "CRASH", "setup failed", "sidecar files left"]
    return [
        StressRow(
            group: "Foreign files",
            attack: "garbage, empty, truncated, foreign-schema, future-version files (\(foreignKinds.count) kinds)",
            trials: tally.total,
            required:
                "a defined error (errSecInvalidKeychain/WrongSecVersion/Decode), SHA-256 unchanged, no files left",
            measured: "\(refused)/\(tally.total) refused, file unchanged (\(tally.summary(order: ["refused"])))",
            passed: refused == tally.total, evidence: tally.evidence(for: bad))
    ]
}
