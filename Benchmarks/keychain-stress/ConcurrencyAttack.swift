import Foundation
import GRDB
import KeychainCore
import KeychainLibc
import SeededRandom

// MARK: - Two processes adding the same primary key

/// The worker side: `racer <keychain>`: for each `go <account> <unix-time>` line on standard
/// input, waits for that instant, adds the account and prints `<outcome> <start-time>`.
func racerWorker(_ arguments: [String]) throws -> Int32 {
    guard let path = arguments.first else { throw WorkerUsage() }
    let keychain = try KeychainDatabase.open(at: path, configuration: StressKeys.fromEnvironment())
    emit("ready")
    while let line = Swift.readLine() {
        let fields = line.split(separator: " ")
        guard fields.count == 3, fields[0] == "go", let start = Double(fields[2]) else { continue }
        while realtimeSeconds() < start {}
        let began = realtimeSeconds()
        let code = errorCode {
            try keychain.add(
                Item(
                    class: .genericPassword,
                    attributes: [.service: .string("race"), .account: .string(String(fields[1]))],
                    data: Data("\(getpid())".utf8)))
        }
        emit("\(codeName(code)) \(String(format: "%.6f", began))")
    }
    return 0
}

// MARK: - Many processes and threads

/// The worker side: `contend <keychain> <prefix> <threads> <adds> <start-time>`: adds from
/// every thread while two more threads query without pause; prints `added <n> errors <n>` and
/// one `error <description>` line per error.
func contendWorker(_ arguments: [String]) throws -> Int32 {
    guard arguments.count >= 5, let threads = Int(arguments[2]), let adds = Int(arguments[3]),
        let start = Double(arguments[4])
    else { throw WorkerUsage() }
    let keychain = try KeychainDatabase.open(at: arguments[0], configuration: StressKeys.fromEnvironment())
    let prefix = arguments[1]
    let added = Mutex(0)
    let errors = Mutex<[String]>([])
    let writersDone = Mutex(0)
    let queries = Mutex(0)
    @Sendable func work(_ thread: Int) {
        if thread >= threads {
            // Readers: run queries until every writer has finished.
            var index = 0
            while writersDone.withLock({ $0 }) < threads {
                index += 1
                do {
                    if index % 2 == 0 {
                        _ = try keychain.find(
                            ItemQuery(class: .genericPassword, attributes: [.service: .string("contend")], limit: 5),
                            includeData: true)
                    } else {
                        _ = try keychain.findFirst(
                            ItemQuery(
                                class: .genericPassword,
                                attributes: [.account: .string("\(prefix)-0-\(index % max(1, adds))")]))
                    }
                    queries.withLock { $0 += 1 }
                } catch {
                    errors.withLock { $0.append("query: \(error)") }
                }
            }
            return
        }
        for index in 0..<adds {
            do {
                try keychain.add(
                    Item(
                        class: .genericPassword,
                        attributes: [.service: .string("contend"), .account: .string("\(prefix)-\(thread)-\(index)")],
                        data: Data("x".utf8)))
                added.withLock { $0 += 1 }
            } catch {
                errors.withLock { $0.append("add: \(error)") }
            }
        }
        writersDone.withLock { $0 += 1 }
    }
    // Real threads (concurrentPerform would run no more of them at once than there are cores).
    let group = DispatchGroup()
    for thread in 0..<threads + 2 {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            while realtimeSeconds() < start { usleep(200) }
            work(thread)
        }
    }
    group.wait()
    let all = errors.withLock { $0 }
    emit("added \(added.withLock { $0 }) errors \(all.count) queries \(queries.withLock { $0 })")
    for error in all.prefix(20) { emit("error \(error)") }
    return 0
}

/// Races, contention and ThreadSanitizer reports from child processes.
func concurrencyAttacks(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("concurrency")
    var rows: [StressRow] = []
    var sanitizerReports = 0

    // Two processes, one primary key, the same instant.
    let racePath = scratch.file("race.keychain-db")
    _ = try KeychainDatabase.create(at: racePath, password: nil, configuration: StressKeys.testing())
    let trials = context.mode.pick(quick: 60, long: 1_000)
    let racers = try (0..<2).map { _ in try LineChild(["racer", racePath], scratch: scratch) }
    for racer in racers { _ = racer.readLine() }
    var exactlyOne = 0
    var skews: [Double] = []
    var failures: [String] = []
    for trial in 0..<trials {
        let start = realtimeSeconds() + context.mode.pick(quick: 0.03, long: 0.01)
        for racer in racers { racer.send("go race-\(trial) \(String(format: "%.6f", start))") }
        let answers = racers.map { $0.readLine() ?? "none" }
        let outcomes = answers.map { $0.split(separator: " ").first.map(String.init) ?? "none" }.sorted()
        let times = answers.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        if times.count == 2 { skews.append(abs(times[0] - times[1])) }
        if outcomes == ["duplicateItem", "success"] {
            exactlyOne += 1
        } else {
            failures.append("trial \(trial): \(outcomes)")
        }
    }
    for racer in racers {
        racer.closeInput()
        let end = racer.finish()
        sanitizerReports += end.errors.components(separatedBy: "WARNING: ThreadSanitizer").count - 1
    }
    let (rowsStored, duplicates) = try rawQueue(racePath).read { db in
        (
            try Int.fetchOne(db, sql: "SELECT count(*) FROM items") ?? -1,
            try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT pk FROM items GROUP BY pk HAVING count(*) > 1)")
                ?? -1
        )
    }
    skews.sort()
    let medianSkew = skews.isEmpty ? 0 : skews[skews.count / 2] * 1e6
    rows.append(
        StressRow(
            group: "Concurrency", attack: "two processes add the same primary key at the same instant",
            trials: trials, required: "exactly one success and one errSecDuplicateItem each time; 0 duplicate rows",
            measured:
                "\(exactlyOne)/\(trials) exactly one winner; \(rowsStored) rows, \(duplicates) duplicated keys; median start skew \(medianSkew < 1 ? "< 1" : String(Int(medianSkew))) µs",
            passed: exactlyOne == trials && rowsStored == trials && duplicates == 0, evidence: failures))

    // 4 processes × 10 threads × 20 adds, with queries running.
    let (processes, threads, adds) = context.mode.pick(quick: (4, 5, 10), long: (4, 10, 20))
    let busyPath = scratch.file("busy.keychain-db")
    _ = try KeychainDatabase.create(at: busyPath, password: nil, configuration: StressKeys.testing())
    let start = realtimeSeconds() + 0.5
    let children = try (0..<processes).map {
        try Child.worker(
            ["contend", busyPath, "p\($0)", String(threads), String(adds), String(format: "%.6f", start)],
            scratch: scratch)
    }
    var added = 0
    var errors: [String] = []
    var queries = 0
    for child in children {
        let result = child.wait(timeout: 900)
        sanitizerReports += result.err.components(separatedBy: "WARNING: ThreadSanitizer").count - 1
        for line in result.out.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if line.hasPrefix("added"), fields.count >= 6 {
                added += Int(fields[1]) ?? 0
                queries += Int(fields[5]) ?? 0
            } else if line.hasPrefix("error ") {
                errors.append(String(line.dropFirst(6)))
            }
        }
        if result.status != 0 { errors.append("worker exited \(result.status): \(result.err.suffix(200))") }
    }
    let stored = try rawQueue(busyPath).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items") ?? -1 }
    let locked = errors.filter { $0.contains("locked") || $0.contains("busy") || $0.contains("notAvailable") }.count
    let expected = processes * threads * adds
    rows.append(
        StressRow(
            group: "Concurrency",
            attack: "\(processes) processes × \(threads) threads × \(adds) adds while queries run",
            trials: expected,
            required: "exactly \(expected) items; 0 \"database is locked\" (or any) errors reaching a caller",
            measured:
                "\(stored) items, \(added) adds acknowledged, \(errors.count) errors (\(locked) locked/busy), \(count(queries)) queries",
            passed: stored == expected && added == expected && errors.isEmpty, evidence: errors))
    if isThreadSanitized {
        rows.append(
            StressRow(
                group: "Concurrency", attack: "ThreadSanitizer reports from the racing and contending processes",
                trials: processes + 2, required: "0 reports", measured: "\(sanitizerReports) reports",
                passed: sanitizerReports == 0))
    }
    return rows
}

/// Whether this binary was built with `--sanitize=thread`.
var isThreadSanitized: Bool { dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil }

// MARK: - lock() during reads

/// `lock()` in the middle of 1,000 reads on 8 threads, round after round, on one handle.
func lockDuringReadsAttack(_ context: StressContext) throws -> [StressRow] {
    let scratch = try Scratch("lock")
    let keychain = try KeychainDatabase.create(
        at: scratch.file("lock.keychain-db"), password: Corpus.password, configuration: StressKeys.testing())
    try keychain.unlock(password: Corpus.password)
    for index in 0..<20 {
        try keychain.add(
            Item(
                class: .genericPassword,
                attributes: [
                    .account: .string("a\(index)"), .accessible: .string(Accessibility.whenUnlocked.rawValue),
                ],
                data: Data(repeating: UInt8(index), count: 64 + index)))
    }
    let rounds = context.mode.pick(quick: 3, long: 40)
    let readsPerRound = 1_000
    let threads = 8
    var total = 0
    var late = 0
    var duringCall = 0
    _ = duringCall
    var wrongErrors: [String] = []
    var lockedWhileReading = 0
    var afterLock = 0
    var random = SplitMix64(seed: context.seed)
    for _ in 0..<rounds {
        try keychain.unlock(password: Corpus.password)
        // Every read takes a ticket before it starts and another when it returns; lock() takes
        // one before and one after. Readers keep going until 1,000 reads have started; lock()
        // comes after a random number of them.
        let sequence = Mutex(0)
        @Sendable func ticket() -> Int {
            sequence.withLock { value -> Int in
                value += 1
                return value
            }
        }
        let started = Mutex(0)
        let results = Mutex<[(start: Int, end: Int, data: Bool, code: KeychainError.Code?)]>([])
        let lockAfter = 100 + random.int(readsPerRound - 300)
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var index = thread
                while started.withLock({ value -> Bool in
                    guard value < readsPerRound else { return false }
                    value += 1
                    return true
                }) {
                    index += 1
                    let start = ticket()
                    var data = false
                    let code = errorCode {
                        data =
                            try keychain.findFirst(
                                ItemQuery(class: .genericPassword, attributes: [.account: .string("a\(index % 20)")]),
                                includeData: true)?.data != nil
                    }
                    let end = ticket()
                    results.withLock { $0.append((start, end, data, code)) }
                }
            }
        }
        while started.withLock({ $0 }) < lockAfter { usleep(50) }
        let called = ticket()
        keychain.lock()
        let returned = ticket()
        group.wait()
        for read in results.withLock({ $0 }) {
            total += 1
            if read.start > returned && read.data { late += 1 }
            if read.start > called && read.start < returned && read.data { duringCall += 1 }
            if read.start < called && read.end > called { lockedWhileReading += 1 }
            if let code = read.code, code != .interactionNotAllowed {
                wrongErrors.append("a read failed with \(codeName(code))")
            }
            if read.start > returned && !read.data && read.code != .interactionNotAllowed {
                wrongErrors.append("a read after lock() gave \(codeName(read.code)) instead of interactionNotAllowed")
            }
            if read.start > returned { afterLock += 1 }
        }
    }
    return [
        StressRow(
            group: "Concurrency", attack: "lock() during \(count(readsPerRound)) in-flight reads on \(threads) threads",
            trials: total,
            required:
                "0 reads started after lock() returned give data; those reads fail with errSecInteractionNotAllowed",
            measured:
                "\(late) of \(count(afterLock)) reads started after lock() returned gave data; \(lockedWhileReading) reads in flight when lock() was called; \(wrongErrors.count) other errors",
            passed: late == 0 && wrongErrors.isEmpty && total == rounds * readsPerRound && afterLock > 0
                && lockedWhileReading > 0, evidence: wrongErrors)
    ]
}
