import Foundation
import KeychainCore

/// The measurements around the item operations: opening a keychain, changing its password,
/// resident memory, and whole `security` processes.
struct Lifecycle {
    let options: BenchmarkOptions
    let deviceKeyFile: String
    let scratch: String
    let progress: (String) -> Void

    /// A password-less keychain configuration with the benchmark's device key file.
    var configuration: KeychainConfiguration { .testing(deviceKey: .file(at: deviceKeyFile)) }

    /// The derivation timed where the issue asks for key-derivation timings.
    var keyDerivation: KeyDerivation { options.testKeyDerivation ? .unsafeTestingOnly : .default }

    // MARK: Open

    /// Opens the keychain at `path` repeatedly, with no other handle open, and closes it
    /// after each open (the close is not timed).
    func openWithoutKeyDerivation(path: String) throws -> Summary {
        var samples: [UInt64] = []
        for repetition in 0...options.openRepetitions {
            var handle: KeychainDatabase?
            let elapsed = try Clock.time { handle = try KeychainDatabase.open(at: path, configuration: configuration) }
            guard handle?.isLocked == false else { throw BenchmarkFailure("the opened keychain is locked") }
            handle = nil
            if repetition > 0 { samples.append(elapsed) }  // the first open warms the page cache
        }
        return Summary(nanoseconds: samples)
    }

    /// Opens a copy of the keychain at `path` as a crash leaves it: 240 adds made through a
    /// handle that never closed, so their pages are still in the write-ahead log (about 1,000
    /// frames, the log's steady size), which the open reads once to check it for damage.
    func openAfterCrash(path: String, directory: String) throws -> SizeResult.CrashedOpen {
        let live = directory + "/crashed-source.keychain-db"
        let target = directory + "/crashed.keychain-db"
        let files = { (base: String) in ["", "-wal", "-shm"].map { base + $0 } }
        defer { for file in files(live) + files(target) { try? FileManager.default.removeItem(atPath: file) } }
        try FileManager.default.copyItem(atPath: path, toPath: live)
        let (main, log): (Data, Data)
        do {
            let handle = try KeychainDatabase.open(at: live, configuration: configuration)
            for index in 0..<240 {
                try handle.add(
                    Item(
                        class: .genericPassword,
                        attributes: [.service: .string("crash \(index)"), .account: .string("a")],
                        data: Data(repeating: 7, count: 100)))
            }
            main = try Data(contentsOf: URL(fileURLWithPath: live))
            log = try Data(contentsOf: URL(fileURLWithPath: live + "-wal"))
            withExtendedLifetime(handle) {}
        }
        var samples: [UInt64] = []
        var checks: [UInt64] = []
        for repetition in 0...options.openRepetitions {
            for file in files(target) { try? FileManager.default.removeItem(atPath: file) }
            try main.write(to: URL(fileURLWithPath: target))
            try log.write(to: URL(fileURLWithPath: target + "-wal"))
            chmod(target, 0o600)
            chmod(target + "-wal", 0o600)
            let checked = try Clock.time {
                guard try LogIntegrity.damage(ofLogBeside: target) == nil else {
                    throw BenchmarkFailure("an intact log was reported as damaged")
                }
            }
            var handle: KeychainDatabase?
            let elapsed = try Clock.time {
                handle = try KeychainDatabase.open(at: target, configuration: configuration)
            }
            handle = nil
            if repetition > 0 {
                samples.append(elapsed)
                checks.append(checked)
            }
        }
        return SizeResult.CrashedOpen(
            logBytes: log.count, open: Summary(nanoseconds: samples), check: Summary(nanoseconds: checks))
    }

    // MARK: Password

    /// Sets a password on the keychain at `path`, then times password changes with the cheap
    /// test derivation and with the real one, then opening and unlocking with the real one.
    /// Leaves the keychain with a password.
    func passwordTimings(path: String, items: Int) throws -> (PasswordChangeTiming, KeyDerivationTiming) {
        var cheapSamples: [UInt64] = []
        var rotationSamples: [UInt64] = []
        var password = "benchmark password 0"
        do {
            let handle = try KeychainDatabase.open(at: path, configuration: configuration)
            try handle.changePassword(old: nil, new: password)
            for repetition in 1...options.openRepetitions {
                let next = "benchmark password \(repetition)"
                cheapSamples.append(try Clock.time { try handle.changePassword(old: password, new: next) })
                password = next
            }
            progress("key rotation on \(Format.count(items)) items, and its floor")
            for repetition in 1...options.keyDerivationRepetitions {
                let next = "rotated \(repetition)"
                rotationSamples.append(
                    try Clock.time { try handle.rotateKeys(password: password, newPassword: next) })
                password = next
            }
        }
        let rotationFloor = try RotationFloor.measure(
            keychainPath: path, scratch: scratch, repetitions: options.keyDerivationRepetitions)
        var strong = configuration
        strong.keyDerivation = keyDerivation
        var strongSamples: [UInt64] = []
        do {
            let handle = try KeychainDatabase.open(at: path, configuration: strong)
            // From the cheap derivation to the real one: one real derivation, not timed.
            try handle.changePassword(old: password, new: "strong 0")
            password = "strong 0"
            progress("password change with \(keyDerivation) on \(Format.count(items)) items")
            for repetition in 1...options.keyDerivationRepetitions {
                let next = "strong \(repetition)"
                strongSamples.append(try Clock.time { try handle.changePassword(old: password, new: next) })
                password = next
            }
        }
        var openSamples: [UInt64] = []
        var unlockSamples: [UInt64] = []
        for _ in 0..<options.keyDerivationRepetitions {
            var handle: KeychainDatabase?
            let start = Clock.now()
            handle = try KeychainDatabase.open(at: path, configuration: strong)
            let opened = Clock.now()
            try handle?.unlock(password: password)
            let end = Clock.now()
            guard handle?.isLocked == false else { throw BenchmarkFailure("unlock left the keychain locked") }
            handle = nil
            openSamples.append(end - start)
            unlockSamples.append(end - opened)
        }
        let unlock = Summary(nanoseconds: unlockSamples)
        let change = Summary(nanoseconds: strongSamples)
        return (
            PasswordChangeTiming(
                items: items, cheapKeyDerivation: KeyDerivation.unsafeTestingOnly.description,
                withCheapKeyDerivation: Summary(nanoseconds: cheapSamples), keyDerivation: keyDerivation.description,
                withKeyDerivation: change, rotation: Summary(nanoseconds: rotationSamples),
                rotationFloor: rotationFloor),
            KeyDerivationTiming(
                items: items, keyDerivation: keyDerivation.description,
                openAndUnlock: Summary(nanoseconds: openSamples),
                unlock: unlock)
        )
    }

    // MARK: Memory

    /// Resident memory after opening the keychain at `path` and after one lookup, measured in
    /// a fresh process (this executable run as a probe) when possible.
    func memory(path: String, items: Int, service: String, account: String) throws -> MemoryResult {
        let request = MemoryProbe.Request(
            keychain: path, deviceKeyFile: deviceKeyFile, service: service, account: account)
        guard let executable = probeExecutable else {
            let probe = try MemoryProbe.measure(request)
            return probe.result(items: items, method: "in-process (no keychain-bench executable found)")
        }
        let outcome = try ChildProcess.run(
            executable, ["--internal-memory-probe"] + request.arguments, environment: childEnvironment(keychain: path))
        guard outcome.status == 0,
            let probe = try? JSONDecoder().decode(MemoryProbe.self, from: outcome.standardOutput)
        else {
            throw BenchmarkFailure(
                "the memory probe failed (status \(outcome.status)): "
                    + String(decoding: outcome.standardError, as: UTF8.self))
        }
        return probe.result(items: items, method: "fresh process")
    }

    // MARK: Processes

    /// The environment of child processes: the scratch directory as home, configuration
    /// and data directories (so the device key file is the benchmark's), and the keychain
    /// as the default keychain. Nothing of the user's is reachable.
    func childEnvironment(keychain: String) -> [String: String] {
        [
            "HOME": scratch + "/home",
            "XDG_CONFIG_HOME": scratch + "/config",
            "XDG_DATA_HOME": scratch + "/data",
            "KEYCHAIN_DEFAULT_PATH": keychain,
            "KEYCHAIN_ACCESS_GROUPS": AccessGroups.standard.groups.joined(separator: ","),
            "PATH": "/usr/bin:/bin",
            "LANG": "C.UTF-8",
            // The in-process rows: each process opens the keychain itself.
            "KEYCHAIN_AGENT": "off",
        ]
    }

    /// Whole-process timings: the floors (`/bin/true`, this executable doing nothing) and
    /// `security add-generic-password` on the keychain at `path` (lookups are timed on keychains
    /// filled the way scripts fill them, in ``ScriptComparison``).
    func processes(path: String, items: Int, service: String, account: String, secret: Data) -> [ProcessResult] {
        let environment = childEnvironment(keychain: path)
        var results: [ProcessResult] = []
        func time(_ name: String, _ executable: String, _ arguments: [String], display: String, items: Int?)
            -> ProcessResult
        {
            var samples: [UInt64] = []
            do {
                for repetition in 0...options.processRepetitions {
                    let outcome = try ChildProcess.run(
                        executable, arguments, environment: environment, capture: false)
                    guard outcome.status == 0 else { throw BenchmarkFailure("exit status \(outcome.status)") }
                    if repetition > 0 { samples.append(outcome.nanoseconds) }
                }
                return ProcessResult(name: name, command: display, items: items, summary: Summary(nanoseconds: samples))
            } catch {
                return ProcessResult(name: name, command: display, items: items, summary: nil, note: "failed: \(error)")
            }
        }
        if FileManager.default.isExecutableFile(atPath: "/bin/true") {
            results.append(time("true", "/bin/true", [], display: "/bin/true (process floor)", items: nil))
        }
        if let bench = probeExecutable {
            results.append(
                time(
                    "swift-noop", bench, ["--internal-noop"], display: "keychain-bench doing nothing (Swift floor)",
                    items: nil))
        }
        let addDisplay = "security add-generic-password -s … -a … -w (secret on standard input)"
        guard let security = securityExecutable else {
            let note = "not available: no security executable next to keychain-bench (build the security product)"
            results.append(ProcessResult(name: "security-add", command: addDisplay, items: items, note: note))
            return results
        }
        let expected = String(decoding: secret, as: UTF8.self)
        var addNote: String?
        // The secret goes in on standard input (a trailing -w), never on the command line.
        let input = Data((expected + "\n").utf8)
        let probeArguments = ["add-generic-password", "-s", "cli.bench.example.net", "-a", "probe", path, "-w"]
        do {
            let outcome = try ChildProcess.run(security, probeArguments, environment: environment, input: input)
            if outcome.status != 0 { addNote = "not available: " + Self.describe(outcome, expectedOutput: false) }
        } catch {
            addNote = "not available: \(error)"
        }
        if let addNote {
            results.append(ProcessResult(name: "security-add", command: addDisplay, items: items, note: addNote))
        } else {
            var samples: [UInt64] = []
            var failure: String?
            for repetition in 0..<options.processRepetitions {
                let arguments = [
                    "add-generic-password", "-s", "cli.bench.example.net", "-a", "cli-\(repetition)", path, "-w",
                ]
                do {
                    let outcome = try ChildProcess.run(
                        security, arguments, environment: environment, capture: false, input: input)
                    guard outcome.status == 0 else { throw BenchmarkFailure("exit status \(outcome.status)") }
                    samples.append(outcome.nanoseconds)
                } catch {
                    failure = "failed: \(error)"
                    break
                }
            }
            results.append(
                ProcessResult(
                    name: "security-add", command: addDisplay, items: items,
                    summary: failure == nil ? Summary(nanoseconds: samples) : nil, note: failure))
        }
        return results
    }

    private static func describe(_ outcome: ChildProcess.Outcome, expectedOutput wrongOutput: Bool) -> String {
        let message =
            String(decoding: outcome.standardError, as: UTF8.self)
            .split(separator: "\n").first.map(String.init) ?? ""
        if outcome.status == 0 && wrongOutput { return "the command succeeded but printed another secret" }
        return "exit status \(outcome.status)" + (message.isEmpty ? "" : " (\(message.prefix(100)))")
    }

    /// The `security` executable: `--security`, else the one built next to this executable.
    var securityExecutable: String? {
        if let path = options.securityTool {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        guard let directory = Self.executableDirectory else { return nil }
        let path = directory + "/security"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// The `keychaind` executable: beside `security` (as the tool finds it).
    var agentExecutable: String? {
        guard let security = securityExecutable else { return nil }
        let path = (security as NSString).deletingLastPathComponent + "/keychaind"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    static var executableDirectory: String? {
        ChildProcess.currentExecutable.map { ($0 as NSString).deletingLastPathComponent }
    }

    /// The executable for the fresh-process probes: the running `keychain-bench` (see
    /// ``BenchmarkOptions/probeExecutable``), else ``benchmarkExecutable``.
    var probeExecutable: String? { options.probeExecutable ?? Self.benchmarkExecutable }

    /// This executable when it is `keychain-bench`, else the `keychain-bench` built next to
    /// the running executable (the test bundle).
    static var benchmarkExecutable: String? {
        guard let current = ChildProcess.currentExecutable else { return nil }
        if (current as NSString).lastPathComponent == "keychain-bench" { return current }
        let sibling = (current as NSString).deletingLastPathComponent + "/keychain-bench"
        return FileManager.default.isExecutableFile(atPath: sibling) ? sibling : nil
    }
}

/// What the probe process reports: resident memory of a fresh process around opening a
/// keychain and looking up one item.
struct MemoryProbe: Codable, Sendable {
    var residentBeforeOpen: Int64
    var residentAfterOpen: Int64
    var residentAfterLookup: Int64
    var peak: Int64
    var openMicroseconds: Double
    var lookupMicroseconds: Double

    struct Request: Sendable {
        var keychain: String
        var deviceKeyFile: String
        var service: String
        var account: String

        init(keychain: String, deviceKeyFile: String, service: String, account: String) {
            self.keychain = keychain
            self.deviceKeyFile = deviceKeyFile
            self.service = service
            self.account = account
        }

        init(arguments: [String]) throws {
            guard arguments.count == 4 else {
                throw BenchmarkFailure("--internal-memory-probe KEYCHAIN DEVICE-KEY-FILE SERVICE ACCOUNT")
            }
            self.init(
                keychain: arguments[0], deviceKeyFile: arguments[1], service: arguments[2], account: arguments[3])
        }

        var arguments: [String] { [keychain, deviceKeyFile, service, account] }
    }

    /// Opens the keychain, looks the item up, and reads resident memory at each step.
    static func measure(_ request: Request) throws -> MemoryProbe {
        let before = ResidentMemory.current()
        var keychain: KeychainDatabase?
        let open = try Clock.time {
            keychain = try KeychainDatabase.open(
                at: request.keychain, configuration: .testing(deviceKey: .file(at: request.deviceKeyFile)))
        }
        let afterOpen = ResidentMemory.current()
        var found: Item?
        let lookup = try Clock.time {
            found = try keychain?.findFirst(
                ItemQuery(
                    class: .genericPassword,
                    attributes: [.service: .string(request.service), .account: .string(request.account)]),
                includeData: true)
        }
        guard found?.data?.count == Workload.secretLength else {
            throw BenchmarkFailure("the probe's lookup found no secret")
        }
        let afterLookup = ResidentMemory.current()
        return MemoryProbe(
            residentBeforeOpen: before, residentAfterOpen: afterOpen, residentAfterLookup: afterLookup,
            peak: ResidentMemory.peak(), openMicroseconds: Double(open) / 1_000,
            lookupMicroseconds: Double(lookup) / 1_000)
    }

    func result(items: Int, method: String) -> MemoryResult {
        MemoryResult(
            items: items, method: method, residentBeforeOpenBytes: residentBeforeOpen,
            residentAfterOpenBytes: residentAfterOpen, residentAfterLookupBytes: residentAfterLookup, peakBytes: peak,
            openMicroseconds: openMicroseconds, firstLookupMicroseconds: lookupMicroseconds)
    }
}
