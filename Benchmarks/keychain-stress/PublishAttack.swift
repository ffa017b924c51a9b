import Foundation
import KeychainCore
import KeychainLibc
import SeededRandom

/// Attacks on how files come and go: first use of a fresh home by many processes at once,
/// creation and deletion killed at every system call, and a damaged write-ahead log.
func publishingAttacks(_ context: StressContext) throws -> [StressRow] {
    [try firstUseRace(context), try killedAtEveryStep(context), try logDamage(context)]
}

/// `first-use <account> <start-at-unix-seconds>`: waits for the start, opens (creating on first
/// use) the default keychain with the device key file of the environment, and adds one item.
func firstUseWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count == 2, let start = Double(arguments[1]) else { throw WorkerUsage() }
    while Date().timeIntervalSince1970 < start { usleep(100) }
    let keychain = try KeychainDatabase.openDefault(configuration: KeychainConfiguration(accessGroups: .standard))
    try keychain.add(
        Item(class: .genericPassword, attributes: [.account: .string(arguments[0])], data: Data("x".utf8)))
    return 0
}

/// `delete <keychain>`: deletes a keychain.
func deleteWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count == 1 else { throw WorkerUsage() }
    try KeychainDatabase.deleteKeychain(at: arguments[0])
    return 0
}

private func firstUseRace(_ context: StressContext) throws -> StressRow {
    let trials = context.mode.pick(quick: 2, long: 20)
    let processes = 12
    var failures: [String] = []
    for trial in 0..<trials {
        let home = try Scratch("first-use")
        let start = Date().timeIntervalSince1970 + 0.5
        let children = try (0..<processes).map { index in
            try Child.worker(["first-use", "a\(index)", "\(start)"], scratch: home)
        }
        for (index, child) in children.enumerated() {
            let result = child.wait(timeout: 120)
            if result.status != 0 { failures.append("trial \(trial), process \(index): \(result.err.suffix(160))") }
        }
        let keychain = try? KeychainDatabase.open(
            at: home.file("data/keychains/login.keychain-db"),
            configuration: KeychainConfiguration(deviceKey: .file(at: home.file("config/keychain/device-key"))))
        let listed = (try? keychain?.find(ItemQuery(class: .genericPassword)).count) ?? nil
        if listed != processes { failures.append("trial \(trial): \(listed.map(String.init) ?? "no") items listed") }
    }
    return StressRow(
        group: "Crashes", attack: "first use of a fresh home by \(processes) processes at once",
        trials: trials * processes, required: "every process succeeds; every item listed",
        measured: failures.isEmpty ? "0 failures" : "\(failures.count) failures", passed: failures.isEmpty,
        evidence: Array(failures.prefix(3)))
}

private func killedAtEveryStep(_ context: StressContext) throws -> StressRow {
    let attack = "create and delete killed at each system call that changes names or syncs (strace)"
    let required = "the keychain is whole or gone, never refused or rolled back"
    guard
        let strace = ["/usr/bin/strace", "/bin/strace"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        })
    else {
        return .notRun(group: "Crashes", attack: attack, required: required, reason: "strace is not installed")
    }
    let calls = "link,linkat,unlink,unlinkat,rename,renameat,renameat2,fsync,fdatasync,flock"
    var failures: [String] = []
    var kills = 0
    for operation in ["create", "delete"] {
        var step = 1
        var finished = false
        while !finished && step < 200 {
            let home = try Scratch("kill-step")
            let path = home.file("data/keychains/k.keychain-db")
            let configuration = KeychainConfiguration(deviceKey: .file(at: home.file("config/keychain/device-key")))
            if operation == "delete" {
                let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
                try keychain.add(Item(class: .genericPassword, attributes: [.account: .string("kept")], data: Data()))
            }
            let arguments = operation == "create" ? ["create", path, "077"] : ["delete", path]
            let result = try Child(
                strace,
                [
                    "-f", "-qq", "-o", "/dev/null", "-e", "trace=" + calls, "-e",
                    "inject=\(calls):signal=KILL:when=\(step)",
                    stressExecutable, "worker",
                ] + arguments,
                environment: home.environment
            ).wait(timeout: 120)
            finished = result.status == 0
            if !finished { kills += 1 }
            let expected = operation == "delete" ? 1 : 0
            do {
                let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
                let count = try keychain.find(ItemQuery(class: .genericPassword)).count
                if operation == "delete" && count != expected && !finished {
                    failures.append("\(operation) step \(step): \(count) items")
                }
            } catch let error as KeychainError where error.code == .noSuchKeychain {
                if (try? KeychainDatabase.create(at: path, password: nil, configuration: configuration)) == nil {
                    failures.append("\(operation) step \(step): gone, but a new keychain cannot be made there")
                }
            } catch {
                failures.append("\(operation) step \(step): \(error)")
            }
            step += 1
        }
        if !finished { failures.append("\(operation): never ran to its end") }
    }
    return StressRow(
        group: "Crashes", attack: attack, trials: kills, required: required,
        measured: failures.isEmpty ? "\(kills) kills, 0 bad outcomes" : "\(failures.count) bad outcomes",
        passed: failures.isEmpty, evidence: Array(failures.prefix(3)))
}

private func logDamage(_ context: StressContext) throws -> StressRow {
    let trials = context.mode.pick(quick: 40, long: 400)
    let scratch = try Scratch("log-damage")
    let original = scratch.file("live.keychain-db")
    let configuration = KeychainConfiguration.testing(deviceKey: .fixed(StressKeys.device))
    let items = 50
    let keychain = try KeychainDatabase.create(at: original, password: nil, configuration: configuration)
    for index in 0..<items {
        try keychain.add(
            Item(
                class: .genericPassword, attributes: [.account: .string("a\(index)")], data: Data("v\(index)".utf8)))
    }
    let log = try Data(contentsOf: URL(fileURLWithPath: original + "-wal"))
    let index = try Data(contentsOf: URL(fileURLWithPath: original + "-shm"))
    var random = SplitMix64(seed: context.seed)
    var silent: [String] = []
    var refused = 0
    let copy = scratch.file("copy.keychain-db")
    for trial in 0..<trials {
        try? FileManager.default.removeItem(atPath: copy)
        try? FileManager.default.removeItem(atPath: copy + "-shm")
        try copyFile(original, copy)
        var damaged = log
        let offset = random.int(log.count)
        damaged[offset] ^= UInt8(1 + random.int(255))
        try damaged.write(to: URL(fileURLWithPath: copy + "-wal"))
        try index.write(to: URL(fileURLWithPath: copy + "-shm"))
        do {
            let reopened = try KeychainDatabase.open(at: copy, configuration: configuration)
            let count = try reopened.find(ItemQuery(class: .genericPassword)).count
            if count != items { silent.append("trial \(trial), byte \(offset): \(count) of \(items) items, no error") }
        } catch {
            refused += 1
        }
    }
    withExtendedLifetime(keychain) {}
    return StressRow(
        group: "Tampering",
        attack:
            "one flipped byte anywhere in the write-ahead log of \(items) acknowledged adds (a crash's log and index)",
        trials: trials, required: "0 silent rollbacks",
        measured: "\(silent.count) silent rollbacks, \(refused) refused with an error", passed: silent.isEmpty,
        evidence: Array(silent.prefix(3)))
}
