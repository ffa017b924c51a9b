import Foundation
import GRDB
import KeychainCore
import KeychainLibc
import SeededRandom

// MARK: - Writers killed at random moments

private let accountsPerWriter = 24

/// An item whose label and secret both carry its version, so a torn write shows.
private func versioned(_ account: String, _ version: Int) -> Item {
    Item(
        class: .genericPassword,
        attributes: [
            .service: .string("crash"), .account: .string(account), .label: .string("\(account) v\(version)"),
        ],
        data: Data("\(account)|v\(version)|".utf8) + Data(repeating: UInt8(version % 251), count: version % 97))
}

/// Reads the version an item carries; `nil` when its label and secret disagree (torn).
private func version(of item: Item) -> Int? {
    guard let account = item.attributes[.account]?.stringValue,
        let label = item.attributes[.label]?.stringValue, label.hasPrefix(account + " v"),
        let fromLabel = Int(label.dropFirst(account.count + 2)), let data = item.data
    else { return nil }
    return data == versioned(account, fromLabel).data ? fromLabel : nil
}

/// The worker side: `writer <keychain> <log> <writer-id> <seed>`: mixed adds, updates and
/// deletes on its own accounts until killed. Each operation is logged as an intent (`I`)
/// before and an acknowledgement (`A`) after it returns; the log survives SIGKILL in the page
/// cache.
func writerWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 4, let seed = UInt64(arguments[3]) else { throw WorkerUsage() }
    let keychain = try KeychainDatabase.open(at: arguments[0], configuration: StressKeys.fromEnvironment())
    let log = open(arguments[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    guard log >= 0 else { return 1 }
    func record(_ line: String) { _ = line.withCString { write(log, $0, strlen($0)) } }
    let writer = arguments[2]
    var random = SplitMix64(seed: seed)
    var state: [String: Int] = [:]
    for item in try keychain.find(
        ItemQuery(class: .genericPassword, attributes: [.service: .string("crash")]), includeData: true)
    {
        if let account = item.attributes[.account]?.stringValue, account.hasPrefix(writer + "-"),
            let version = version(of: item)
        {
            state[account] = version
        }
    }
    var next = (state.values.max() ?? 0) + 1
    while true {
        let account = "\(writer)-\(random.int(accountsPerWriter))"
        let query = ItemQuery(class: .genericPassword, attributes: [.account: .string(account)])
        if let current = state[account] {
            if random.chance(65) {
                let version = next
                next += 1
                record("I \(account) \(version)\n")
                let item = versioned(account, version)
                try keychain.update(
                    query, attributes: [.label: item.attributes[.label]!], data: item.data)
                record("A \(account) \(version)\n")
                state[account] = version
            } else {
                record("I \(account) -1\n")
                try keychain.delete(query)
                record("A \(account) -1\n")
                state[account] = nil
            }
            _ = current
        } else {
            let version = next
            next += 1
            record("I \(account) \(version)\n")
            try keychain.add(versioned(account, version))
            record("A \(account) \(version)\n")
            state[account] = version
        }
    }
}

/// Writers in several processes killed with SIGKILL at random moments, round after round.
func crashAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("crash")
    let path = scratch.file("crash.keychain-db")
    let configuration = StressKeys.testing()
    _ = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
    let rounds = context.mode.pick(quick: 8, long: 1_000)
    let writers = 3
    var random = SplitMix64(seed: context.seed)
    // The state every account is known to have: -1 (or absent) for no item.
    var known: [String: Int] = [:]
    var failures: [String] = []
    var opened = 0
    var integrityOK = 0
    var acknowledged = 0
    var lost = 0
    var torn = 0
    var phantoms = 0
    var inFlight = 0
    for round in 0..<rounds {
        let logs = (0..<writers).map { scratch.file("log-\(round)-\($0)") }
        var children: [Child] = []
        for writer in 0..<writers {
            children.append(
                try Child.worker(
                    ["writer", path, logs[writer], "w\(writer)", String(random.next())], scratch: scratch))
        }
        // Each writer dies at its own random moment: during start-up, open, or mid-transaction.
        let started = monotonicSeconds()
        var deadlines = (0..<writers).map { _ in
            Double(10 + random.int(context.mode.pick(quick: 400, long: 250))) / 1000
        }
        var alive = Set(0..<writers)
        while !alive.isEmpty {
            let now = monotonicSeconds() - started
            for writer in alive where now >= deadlines[writer] {
                children[writer].kill()
                alive.remove(writer)
            }
            usleep(500)
        }
        deadlines.removeAll()
        for child in children {
            let result = child.wait()
            if !result.signaled && !result.err.isEmpty {
                failures.append("round \(round): writer failed: \(result.err.suffix(200))")
            }
        }
        // The file opens, passes SQLite's check, and holds every acknowledged write.
        let keychain: KeychainDatabase
        do {
            keychain = try KeychainDatabase.open(at: path, configuration: configuration)
            opened += 1
        } catch {
            failures.append("round \(round): the keychain did not open: \(error)")
            break
        }
        let integrity = try? rawQueue(path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        if integrity == ["ok"] {
            integrityOK += 1
        } else {
            failures.append("round \(round): integrity_check says \(integrity ?? ["(no answer)"])")
        }
        var observed: [String: Int] = [:]
        do {
            for item in try keychain.find(
                ItemQuery(class: .genericPassword, attributes: [.service: .string("crash")]), includeData: true)
            {
                let account = item.attributes[.account]?.stringValue ?? "?"
                guard let version = version(of: item) else {
                    torn += 1
                    failures.append("round \(round): \(account) is torn")
                    continue
                }
                if observed[account] != nil { failures.append("round \(round): \(account) twice") }
                observed[account] = version
            }
        } catch {
            failures.append("round \(round): reading failed: \(error)")
        }
        // Replay each writer's log over what was known before the round.
        var allowed: [String: Set<Int>] = [:]
        var expected = known
        for log in logs {
            let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            var pending: (String, Int)?
            for line in lines {
                let fields = line.split(separator: " ")
                guard fields.count == 3, let version = Int(fields[2]) else { continue }
                let account = String(fields[1])
                if fields[0] == "I" {
                    pending = (account, version)
                } else {
                    acknowledged += 1
                    expected[account] = version
                    pending = nil
                }
            }
            if let (account, version) = pending {
                inFlight += 1
                allowed[account, default: []].insert(version)
            }
        }
        for account in Set(expected.keys).union(observed.keys) {
            let want = expected[account] ?? -1
            let have = observed[account] ?? -1
            if have == want { continue }
            if allowed[account]?.contains(have) == true { continue }
            if expected[account] == nil && known[account] == nil && allowed[account] == nil {
                phantoms += 1
                failures.append("round \(round): \(account) v\(have) was never written")
            } else {
                lost += 1
                failures.append("round \(round): \(account) is v\(have), acknowledged v\(want)")
            }
        }
        known = observed
        if context.verbose && round % 100 == 99 { context.log("crash round \(round + 1)/\(rounds)") }
    }
    return [
        StressRow(
            group: "Crashes",
            attack: "SIGKILL at random moments of \(writers) writer processes (mixed add, update, delete)",
            trials: rounds,
            required: "opens every time, integrity_check ok every time, 0 acknowledged writes lost, 0 torn items",
            measured:
                "opened \(opened)/\(rounds), integrity ok \(integrityOK)/\(rounds), \(lost) of \(count(acknowledged)) acknowledged writes lost, \(torn) torn, \(phantoms) phantom; \(inFlight) writes in flight at the kill",
            passed: failures.isEmpty && opened == rounds && integrityOK == rounds && acknowledged > 0,
            evidence: failures)
    ]
}

// MARK: - A crash at each step of a password change

/// The worker side: `passwd-crash <keychain> <old|-> <new> <step>`: changes the password as
/// `security set-keychain-password` does (rotating every key and re-sealing every item) with
/// the crashing VFS installed; prints `steps <n>` when it survives.
func passwordCrashWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 4, let step = Int(arguments[3]) else { throw WorkerUsage() }
    CrashingVFS.install()
    CrashingVFS.crashAt = step
    let keychain = try KeychainDatabase.open(at: arguments[0], configuration: StressKeys.fromEnvironment())
    CrashingVFS.counting = true
    try keychain.rotateKeys(password: arguments[1] == "-" ? nil : arguments[1], newPassword: arguments[2])
    CrashingVFS.counting = false
    emit("steps \(CrashingVFS.steps)")
    emit(CrashingVFS.log.joined(separator: "; "))
    return 0
}

/// Kills a password change at each of its I/O steps; exactly one password must open.
func passwordChangeCrashAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("passwd")
    let configuration = StressKeys.testing()
    var trials = 0
    var failures: [String] = []
    var stepCounts: [String] = []
    var goodSteps = 0
    for (variant, old) in [("password → password", "old password" as String?), ("no password → password", nil)] {
        let pristine = scratch.file("pristine-\(trials).keychain-db")
        let keychain = try KeychainDatabase.create(at: pristine, password: old, configuration: configuration)
        if let old { try keychain.unlock(password: old) }
        var expected: [String: Data] = [:]
        for (index, accessibility) in Accessibility.all.enumerated() where old != nil || index != 3 {
            let item = Item(
                class: .genericPassword,
                attributes: [.account: .string("item\(index)"), .accessible: .string(accessibility.rawValue)],
                data: Data("secret \(index)".utf8))
            try keychain.add(item)
            expected["item\(index)"] = item.data
        }
        try checkpoint(pristine)
        // Kill the change at its first I/O step, then its second, … until one run finishes: every
        // step of that run was a kill point. (The number of steps varies from run to run: a
        // rotation's new keys give the index pages another layout.)
        var step = 0
        var finished = false
        while !finished && step < 400 {
            step += 1
            trials += 1
            let failuresBefore = failures.count
            defer { if failures.count == failuresBefore { goodSteps += 1 } }
            let path = scratch.file("crash.keychain-db")
            try copyFile(pristine, path)
            let run = try Child.worker(
                ["passwd-crash", path, old ?? "-", "new password", String(step)], scratch: scratch
            )
            .wait(timeout: 120)
            if !run.signaled {
                finished = true
                if run.status != 0 {
                    failures.append("\(variant) step \(step): the change failed (\(run.status)) \(run.err.suffix(200))")
                }
            }
            var opens: [String] = []
            for candidate in [old, "new password"] {
                guard let handle = try? KeychainDatabase.open(at: path, configuration: configuration) else {
                    failures.append("\(variant) step \(step): the keychain does not open")
                    continue
                }
                let unlocked: Bool
                if let candidate {
                    unlocked = (try? handle.unlock(password: candidate)) != nil
                } else {
                    unlocked = handle.hasPassword == false
                }
                guard unlocked else { continue }
                opens.append(candidate ?? "(no password)")
                for (account, data) in expected {
                    let found = try? handle.findFirst(
                        ItemQuery(class: .genericPassword, attributes: [.account: .string(account)]), includeData: true)
                    if found?.data != data {
                        failures.append("\(variant) step \(step): \(account) unreadable with \(candidate ?? "none")")
                    }
                }
            }
            if opens.count != 1 {
                failures.append("\(variant) step \(step): \(opens.count) passwords open it (\(opens))")
            }
            let integrity = try? rawQueue(path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            if integrity != ["ok"] { failures.append("\(variant) step \(step): integrity \(integrity ?? [])") }
        }
        if !finished { failures.append("\(variant): still killed after \(step) steps") }
        stepCounts.append("\(variant): \(step - 1) steps")
    }
    var rows = [
        StressRow(
            group: "Crashes",
            attack:
                "SIGKILL injected at each I/O step of a password change with key rotation (\(stepCounts.joined(separator: ", ")))",
            trials: trials, required: "exactly one of old and new password opens; every item reads back",
            measured:
                "\(goodSteps)/\(trials) crash points: exactly one password opens, every item reads back, integrity ok",
            passed: failures.isEmpty && trials > 2, evidence: failures)
    ]
    rows.append(try directorySyncCheck(scratch))
    rows.append(try syncRow(context, scratch: scratch))
    return rows
}

// MARK: - Creating a keychain syncs its directory

/// The worker side: `create <keychain> <umask-octal>`: creates a keychain with the standard
/// device key (under the scratch XDG_CONFIG_HOME), adds an item and, with the file still open,
/// prints the mode of every file next to it (`M <path> <octal>`).
func createWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 2, let mask = Int(arguments[1], radix: 8) else { throw WorkerUsage() }
    umask(mode_t(mask))
    let configuration = KeychainConfiguration(accessGroups: .standard)
    let keychain = try KeychainDatabase.create(at: arguments[0], password: nil, configuration: configuration)
    try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("a")], data: Data("x".utf8)))
    let again = try KeychainDatabase.open(at: arguments[0], configuration: configuration)
    _ = try again.find(ItemQuery(class: .genericPassword), includeData: true)
    let directory = (arguments[0] as NSString).deletingLastPathComponent
    let paths = KeychainPaths()
    for path in [directory, paths.configurationDirectory, paths.deviceKeyFile]
        + ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).map({ directory + "/" + $0 })
    {
        emit("M \(path) \(String(fileMode(path), radix: 8))")
    }
    withExtendedLifetime((keychain, again)) {}
    return 0
}

/// Traces a keychain creation with strace: the new file's directory must be fsynced after
/// the file is linked into it.
private func directorySyncCheck(_ scratch: Scratch) throws -> StressRow {
    let required = "fsync(directory) after the file is linked into it"
    guard
        let strace = ["/usr/bin/strace", "/bin/strace"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        })
    else {
        return .notRun(
            group: "Crashes", attack: "creating a keychain fsyncs its directory", required: required,
            reason: "strace is not installed")
    }
    let directory = try scratch.directory("sync/keychains")
    let path = directory + "/synced.keychain-db"
    let trace = scratch.file("trace")
    let result = try Child(
        strace,
        [
            "-f", "-qq", "-o", trace, "-e",
            "trace=openat,open,link,linkat,rename,renameat,renameat2,fsync,fdatasync,close",
            stressExecutable, "worker", "create", path, "077",
        ], environment: scratch.environment
    ).wait(timeout: 120)
    let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    guard result.status == 0, !lines.isEmpty else {
        return .notRun(
            group: "Crashes", attack: "creating a keychain fsyncs its directory", required: required,
            reason: "strace could not trace (\(result.status)): \(result.err.suffix(120))")
    }
    // The line that links the file into place, then an fsync of a descriptor opened on the
    // directory.
    let linkIndex = lines.firstIndex {
        ($0.contains("link(") || $0.contains("linkat(") || $0.contains("rename")) && $0.contains("\"\(path)\"")
            && $0.hasSuffix("= 0")
    }
    var directoryDescriptors: [String: Int] = [:]
    var synced: Int?
    for (index, line) in lines.enumerated() {
        if (line.contains("openat(") || line.contains("open(")) && line.contains("\"\(directory)\"")
            && line.contains("O_DIRECTORY"),
            let fd = line.split(separator: "=").last?.trimmingCharacters(in: .whitespaces), Int(fd) != nil
        {
            directoryDescriptors[fd] = index
        }
        if line.contains("fsync("), let linkIndex, index > linkIndex {
            let fd = line.split(separator: "(").dropFirst().first?.split(separator: ")").first.map(String.init) ?? ""
            if let opened = directoryDescriptors[fd], opened < index { synced = index }
        }
    }
    let measured =
        linkIndex == nil
        ? "no link of the keychain file seen"
        : synced == nil ? "no fsync of the directory after the link" : "directory fsynced after the link"
    return StressRow(
        group: "Crashes", attack: "creating a keychain fsyncs its directory (strace)", trials: 1, required: required,
        measured: measured, passed: synced != nil)
}

/// The worker side: `vfs-selftest <path> <synchronous>`: the I/O steps of one insert into a
/// plain WAL database with the given `synchronous` setting (checks the crashing VFS sees syncs).
func vfsSelfTestWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 2 else { throw WorkerUsage() }
    CrashingVFS.install()
    var configuration = Configuration()
    let mode = arguments[1]
    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(mode)") }
    let pool = try DatabasePool(path: arguments[0], configuration: configuration)
    try pool.write { db in try db.execute(sql: "CREATE TABLE IF NOT EXISTS t(x)") }
    CrashingVFS.counting = true
    try pool.write { db in try db.execute(sql: "INSERT INTO t VALUES (1)") }
    CrashingVFS.counting = false
    let value = try pool.write { db in try String.fetchOne(db, sql: "PRAGMA synchronous") } ?? "?"
    emit("synchronous \(value): \(CrashingVFS.log.joined(separator: "; "))")
    return 0
}

// MARK: - Acknowledged writes are synced

/// The worker side: `sync-check <keychain> <adds>`: adds items with the crashing VFS counting
/// (never crashing) and prints `synced <k> of <n>`: how many adds synced the WAL or journal
/// before returning, which is what makes them survive a power loss.
func syncCheckWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 2, let adds = Int(arguments[1]) else { throw WorkerUsage() }
    CrashingVFS.install()
    let keychain = try KeychainDatabase.open(at: arguments[0], configuration: StressKeys.fromEnvironment())
    var synced = 0
    var example = ""
    for index in 0..<adds {
        CrashingVFS.log.removeAll()
        CrashingVFS.counting = true
        try keychain.add(
            Item(class: .genericPassword, attributes: [.account: .string("sync-\(index)")], data: Data("x".utf8)))
        CrashingVFS.counting = false
        if CrashingVFS.log.contains("sync") { synced += 1 }
        example = CrashingVFS.log.joined(separator: "; ")
    }
    emit("synced \(synced) of \(adds)")
    emit("last: \(example)")
    return 0
}

/// Adds observed at the VFS: each must sync before it is acknowledged.
func syncRow(_ context: StressContext, scratch: Scratch) throws -> StressRow {
    let path = scratch.file("sync.keychain-db")
    _ = try KeychainDatabase.create(at: path, password: nil, configuration: StressKeys.testing())
    let adds = context.mode.pick(quick: 20, long: 200)
    let result = try Child.worker(["sync-check", path, String(adds)], scratch: scratch).wait(timeout: 300)
    let lines = result.out.split(separator: "\n")
    let synced = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? -1
    return StressRow(
        group: "Crashes", attack: "acknowledged adds sync the WAL first (synchronous=FULL, seen at the SQLite VFS)",
        trials: adds, required: "every add syncs before it returns (survives power loss, not only SIGKILL)",
        measured: "\(max(0, synced))/\(adds) adds synced before returning",
        passed: synced == adds,
        evidence: synced == adds
            ? [] : ["I/O of one add: \(lines.dropFirst().joined())", result.err.suffix(200).description])
}
