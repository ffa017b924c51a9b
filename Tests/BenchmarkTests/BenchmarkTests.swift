import Foundation
import GRDB
import KeychainCore
import Testing

@testable import keychain_bench

/// Keeps `keychain-bench` building and working: one tiny run through the module and one
/// through the built executable. Rows and sanity of the numbers are checked, never timings
/// (the targets are the benchmark's business, on a quiet machine in release mode).
@Suite("keychain-bench")
struct BenchmarkTests {
    static func tinyOptions() -> BenchmarkOptions {
        var options = BenchmarkOptions()
        options.sizes = [30, 60]
        options.referenceSize = 60
        options.iterations = 10
        options.testKeyDerivation = true
        options.progress = false
        options.openRepetitions = 3
        options.processRepetitions = 2
        options.keyDerivationRepetitions = 1
        options.scriptSizes = [12]
        options.agentMemoryItems = 90
        options.agentConnections = 24
        options.secretServiceItems = 20
        // The sync rows wait for their async work on the calling thread: in this process that is
        // a thread of the test pool, so they run as their own process (KeychainSyncTests).
        options.syncItems = 0
        return options
    }

    static func expectSensible(_ summary: Summary, _ what: String) {
        #expect(summary.count > 0, "\(what): no samples")
        #expect(summary.minimumMicroseconds > 0, "\(what): a zero duration")
        #expect(summary.minimumMicroseconds <= summary.medianMicroseconds, "\(what): minimum above median")
        #expect(summary.medianMicroseconds <= summary.p99Microseconds, "\(what): median above p99")
        #expect(summary.p99Microseconds.isFinite, "\(what): p99 \(summary.p99Microseconds)")
    }

    static func expectComplete(_ report: BenchmarkReport, sizes: [Int]) {
        #expect(report.sizes.map(\.items) == sizes)
        for size in report.sizes {
            #expect(size.operations.map(\.operation) == KeychainOperation.allCases)
            #expect(size.floor.map(\.operation) == FloorOperation.allCases)
            for result in size.operations {
                expectSensible(result.engine, "engine \(result.operation) @\(size.items)")
                expectSensible(result.secItem, "SecItem \(result.operation) @\(size.items)")
                for ratio in [result.engineRatio, result.secItemRatio, result.secItemOverEngine] {
                    #expect(ratio.isFinite && ratio > 0, "\(result.operation) @\(size.items): ratio \(ratio)")
                }
            }
            for floor in size.floor { expectSensible(floor.summary, "floor \(floor.operation) @\(size.items)") }
            // SecKey's rows: ECDSA sign and verify against swift-crypto, a key lookup by tag against
            // the password floor, a token key's signature.
            #expect(size.keyOperations?.map(\.operation) == KeyOperation.allCases)
            for result in size.keyOperations ?? [] {
                expectSensible(result.summary, "key \(result.operation) @\(size.items)")
                #expect(result.ratio.isFinite && result.ratio > 0, "\(result.operation): ratio \(result.ratio)")
            }
            expectSensible(size.openWithoutKeyDerivation, "open @\(size.items)")
            #expect(size.seeding.seconds > 0)
        }
        #expect(report.growth?.sizes == sizes)
        for summary in (report.growth?.find ?? []) + (report.growth?.add ?? []) { expectSensible(summary, "growth") }
        let change = report.passwordChange
        #expect(change?.items == sizes.last)
        if let change {
            expectSensible(change.withCheapKeyDerivation, "password change")
            expectSensible(change.withKeyDerivation, "password change with key derivation")
        }
        if let open = report.openWithKeyDerivation { expectSensible(open.openAndUnlock, "open + unlock") }
        #expect(report.openWithKeyDerivation != nil)
        let memory = report.memory
        #expect(memory?.items == sizes.max())
        #expect((memory?.residentAfterOpenBytes ?? 0) > 1 << 20)
        #expect((memory?.residentAfterLookupBytes ?? 0) > 1 << 20)
        // The security rows exist whether or not the tool is built yet: a timing or a note.
        for name in ["security-add"] {
            let row = report.processes.first { $0.name == name }
            #expect(row != nil, "no \(name) row")
            if let row {
                #expect((row.summary != nil) != (row.note != nil), "\(name): exactly one of a timing or a note")
                if let summary = row.summary { expectSensible(summary, name) }
            }
        }
        // Per script size: in-process and through keychaind, each ÷ floor and ÷ secret-tool; and
        // keychaind's five (lookup ÷ in process, four clients ÷ one, its memory, connections at once,
        // a saturated agent ÷ an idle one);
        // SecKey's three (sign, verify, key lookup by tag); the PKI three (.p12 import, legacy .p12
        // import, chain evaluation); the Secret Service's five (moving GNOME Keyring's file in, secret-tool,
        // SearchItems + GetSecrets, CreateItem, OpenSession with Diffie-Hellman); the login unlock's four
        // (plain and sealed to a swtpm, each by keychaind --pam login and through PAM); KeePass's two
        // (a database moved in, one written); the SSH agent's one (a signature ÷ OpenSSH's agent);
        // the Secure Enclave's one (a signature in a swtpm through keychaind ÷ tpm2_sign).
        #expect(report.targets.count == 33 + 4 * report.scripts.count)
        let enclave = report.secureEnclave
        #expect(enclave?.note == nil, "\(enclave?.note ?? "no Secure Enclave rows")")
        for summary in [enclave?.agent, enclave?.engine, enclave?.tpm2Sign, enclave?.software] {
            #expect(summary != nil)
            if let summary { expectSensible(summary, "Secure Enclave") }
        }
        #expect(enclave?.agentOverTools.map { $0.isFinite && $0 > 0 } == true)
        let ssh = report.sshAgent
        #expect(ssh?.note == nil, "\(ssh?.note ?? "no SSH agent rows")")
        for summary in [ssh?.ours, ssh?.openSSH, ssh?.floor] {
            #expect(summary != nil)
            if let summary { expectSensible(summary, "SSH agent") }
        }
        #expect(ssh?.oursOverOpenSSH.map { $0.isFinite && $0 > 0 } == true)
        let lookups = report.agentLookups
        #expect(lookups?.note == nil, "\(lookups?.note ?? "no agent lookups")")
        let saturation = report.agentSaturation
        #expect(saturation?.ratio != nil, "\(saturation?.note ?? "no saturated-agent row")")
        #expect(saturation?.halfSentCutOff ?? 0 > 0, "the agent's 256 MiB budget cuts some half-sent messages off")
        // The interleaved lookups, the socket floor, and the same lookups with this process and a
        // keychaind of its own held on one CPU.
        // An item whose access list names the bench pinned by digest, and its twin without one.
        for summary in [
            lookups?.inProcess, lookups?.agent, lookups?.roundTrip, lookups?.inProcessOneCore, lookups?.agentOneCore,
            lookups?.plainTwin, lookups?.listedLookup,
        ] {
            #expect(summary != nil)
            if let summary { expectSensible(summary, "agent lookups") }
        }
        #expect(lookups?.agentOverInProcess.map { $0.isFinite && $0 > 0 } == true)
        #expect(lookups?.agentOverInProcessOneCore.map { $0.isFinite && $0 > 0 } == true)
        #expect(lookups?.agentOverhead?.isFinite == true)
        // The agent's memory is read from its /proc status after lookups on 90 items, and every
        // lookup of 24 connections open at once was answered with its item.
        #expect(lookups?.memoryNote == nil, "\(lookups?.memoryNote ?? "")")
        #expect(lookups?.memoryItems == 90 && (lookups?.memoryBytes ?? 0) > 1 << 20)
        #expect(lookups?.concurrentNote == nil, "\(lookups?.concurrentNote ?? "")")
        #expect(lookups?.concurrentConnections == 24 && lookups?.concurrentErrors == 0)
        #expect(lookups?.fourOverOne.map { $0.isFinite && $0 > 0 } == true)
        #expect(report.targets.allSatisfy { !$0.measured.isEmpty })
        expectScripts(report)
        expectSecretService(report)
    }

    /// The Secret Service rows: keychaind --secret-service and GNOME Keyring (which `.ci/run`
    /// installs), each timed, with the four ratios numeric and their targets evaluated.
    static func expectSecretService(_ report: BenchmarkReport) {
        let result = report.secretService
        #expect(result?.items == 20)
        #expect(result?.note == nil, "\(result?.note ?? "no Secret Service rows")")
        #expect(result?.gnomeNote == nil, "\(result?.gnomeNote ?? "")")
        #expect(result?.secretToolNote == nil, "\(result?.secretToolNote ?? "")")
        for (summary, what) in [
            (result?.secretToolOurs, "secret-tool on keychaind"), (result?.secretToolGnome, "secret-tool on GNOME"),
            (result?.lookupOurs, "lookup on keychaind"), (result?.lookupGnome, "lookup on GNOME"),
            (result?.createOurs, "CreateItem on keychaind"), (result?.createGnomeLogin, "CreateItem on GNOME"),
            (result?.openSessionOurs, "OpenSession on keychaind"), (result?.openSessionGnome, "OpenSession on GNOME"),
            (result?.loadAllOurs, "every item loaded at once from keychaind"),
            (result?.loadAllGnome, "every item loaded at once from GNOME"),
            (result?.moveIn, "moving GNOME Keyring's file in"), (result?.moveInFloor, "the move-in's floor"),
            (result?.portalOurs, "RetrieveSecret with keychaind"), (result?.portalGnome, "RetrieveSecret with GNOME"),
            (result?.portalFloor, "the portal's floor"),
        ] {
            #expect(summary != nil, "no \(what) timing")
            if let summary { expectSensible(summary, what) }
        }
        for ratio in [
            result?.secretToolOursOverGnome, result?.lookupGnomeOverOurs, result?.createGnomeOverOurs,
            result?.openSessionOursOverGnome, result?.loadAllOursOverGnome, result?.moveInOverFloor,
            result?.portalOursOverGnome,
            result?.portalOverFloor,
        ] {
            #expect(ratio.map { $0.isFinite && $0 > 0 } == true)
        }
        #expect(result?.moveInNote == nil, "\(result?.moveInNote ?? "")")
        #expect(result?.loadAllNote == nil, "\(result?.loadAllNote ?? "")")
        #expect(
            result?.portalNote == nil && result?.portalGnomeNote == nil,
            "\(result?.portalNote ?? "") \(result?.portalGnomeNote ?? "")")
        #expect(report.targets.contains { $0.name.hasPrefix("moving in from GNOME Keyring's file") && $0.met != nil })
        // The last five targets, in this order.
        let targets = Array(report.targets.suffix(5))
        #expect(
            targets.map { $0.name.prefix(18) } == [
                "secret-tool lookup", "SearchItems + GetS", "CreateItem, GNOME ", "OpenSession with D",
                "Secret portal Retr",
            ])
        #expect(targets.allSatisfy { $0.met != nil }, "\(targets.map(\.measured))")
        let table = TableRenderer.render(report)
        #expect(table.contains("SearchItems + GetSecrets in process") && table.contains("GNOME ÷ ours"))
    }

    /// The lookup processes on keychains filled by add processes: ours, the floor and
    /// `secret-tool` on GNOME Keyring (which `.ci/run` installs), all timed, with both ratios.
    static func expectScripts(_ report: BenchmarkReport) {
        #expect(report.scripts.map(\.items) == [12])
        for script in report.scripts {
            #expect(script.note == nil, "\(script.note ?? "")")
            #expect(script.secretToolNote == nil, "\(script.secretToolNote ?? "")")
            for (summary, what) in [(script.find, "find"), (script.floor, "floor"), (script.secretTool, "secret-tool")]
            {
                #expect(summary != nil, "no \(what) timing")
                if let summary { expectSensible(summary, what) }
            }
            #expect((script.fillSeconds ?? 0) > 0 && (script.secretToolFillSeconds ?? 0) > 0)
            #expect(script.findOverFloor.map { $0.isFinite && $0 > 0 } == true)
            #expect(script.findOverSecretTool.map { $0.isFinite && $0 > 0 } == true)
            // Served by keychaind (built beside security), started and stopped by the bench.
            #expect(script.agentNote == nil, "\(script.agentNote ?? "")")
            if let served = script.agentFind { expectSensible(served, "find through keychaind") }
            #expect(script.agentFindOverFloor.map { $0.isFinite && $0 > 0 } == true)
            #expect(script.agentFindOverSecretTool.map { $0.isFinite && $0 > 0 } == true)
        }
    }

    @Test("a tiny run through the module produces every row, table and JSON")
    func tinyRun() throws {
        let report = try BenchmarkRunner(options: Self.tinyOptions()).run()
        Self.expectComplete(report, sizes: [30, 60])

        let table = TableRenderer.render(report)
        for operation in KeychainOperation.allCases { #expect(table.contains(operation.title)) }
        for operation in FloorOperation.allCases { #expect(table.contains(operation.title)) }
        // The PKI rows (openssl-made files; a missing openssl fails here, it is never skipped):
        // each with its same-run swift-crypto floor and breakdown, and a target.
        if case .failure(let failure) = PKIFixture.shared { Issue.record("PKI rows not measured: \(failure)") }
        for operation in [KeyOperation.pkcs12Import, .pkcs12ImportLegacy, .trustEvaluate] {
            #expect(table.contains(operation.title), "\(operation)")
            #expect(table.contains(operation.referenceDescription), "\(operation)")
            #expect(report.targets.contains { $0.name.hasPrefix(operation.title) }, "\(operation)")
        }
        #expect(table.contains("Target"))
        #expect(table.contains(report.machine.cpuModel))
        let addNotes = report.notes.filter { $0.contains("Engine add ÷ that insert") }
        #expect(addNotes.count == 2, "one note each for the indexed and the clustered insert")
        for note in addNotes { #expect(note.contains("@30") && note.contains("@60")) }
        // The login unlock pam_keychain.so starts, against its floors, and its target.
        #expect(
            report.loginUnlock?.unlockOverFloor.map { $0.isFinite && $0 > 0 } == true,
            "\(report.loginUnlock?.note ?? "")")
        #expect(table.contains("keychaind --pam login"))
        #expect(report.targets.contains { $0.name.hasPrefix("login unlock") })
        // The same sealed to a private swtpm, against the derivation and tpm2_unseal on it.
        #expect(
            report.sealedLoginUnlock?.unlockOverFloor.map { $0.isFinite && $0 > 0 } == true,
            "\(report.sealedLoginUnlock?.note ?? "")")
        #expect(report.sealedLoginUnlock?.tpmUnseal != nil)
        #expect(table.contains("tpm2_unseal on the same swtpm"))
        #expect(report.targets.contains { $0.name.hasPrefix("sealed login unlock") })
        // Both through a real PAM transaction (pamtester, pam_wrapper, the built pam_keychain.so).
        for login in [report.loginUnlock, report.sealedLoginUnlock] {
            #expect(login?.pamOverFloor.map { $0.isFinite && $0 > 0 } == true, "\(login?.pamNote ?? "")")
        }
        #expect(table.contains("a login through PAM"))
        #expect(report.targets.filter { $0.name.contains("through PAM") }.count == 2)
        // A KeePass database moved in and one written out, each against Argon2 and the same adds or reads.
        #expect(report.keePass?.moveInOverFloor.map { $0.isFinite && $0 > 0 } == true, "\(report.keePass?.note ?? "")")
        #expect(report.keePass?.exportOverFloor.map { $0.isFinite && $0 > 0 } == true, "\(report.keePass?.note ?? "")")
        #expect(table.contains("moving the database in"))

        let decoded = try JSONDecoder().decode(BenchmarkReport.self, from: Data(try KeychainBench.json(report).utf8))
        #expect(decoded.sizes.map(\.items) == report.sizes.map(\.items))
        #expect(decoded.targets.map(\.name) == report.targets.map(\.name))
    }

    @Test("--only secret-service measures the Secret Service rows and nothing else")
    func secretServiceOnly() throws {
        var options = Self.tinyOptions()
        options.secretServiceOnly = true
        let report = try BenchmarkRunner(options: options).run()
        #expect(report.sizes.isEmpty && report.scripts.isEmpty && report.agentLookups == nil)
        Self.expectSecretService(report)
        let decoded = try JSONDecoder().decode(BenchmarkReport.self, from: Data(try KeychainBench.json(report).utf8))
        #expect(decoded.secretService?.lookupGnomeOverOurs == report.secretService?.lookupGnomeOverOurs)
    }

    @Test("the built executable runs and prints a JSON report")
    func executable() throws {
        let executable = try #require(Lifecycle.benchmarkExecutable, "keychain-bench is not built next to the tests")
        let outcome = try ChildProcess.run(
            executable,
            [
                "--sizes", "20", "--iterations", "5", "--json", "--test-kdf", "--quiet", "--script-sizes", "8",
                "--agent-memory-items", "40", "--agent-connections", "8", "--secret-service-items", "0",
            ],
            environment: ["PATH": "/usr/bin:/bin", "TMPDIR": NSTemporaryDirectory()])
        #expect(outcome.status == 0, "\(String(decoding: outcome.standardError, as: UTF8.self))")
        let report = try JSONDecoder().decode(BenchmarkReport.self, from: outcome.standardOutput)
        #expect(report.schemaVersion == 1)
        #expect(report.scripts.map(\.items) == [8] && report.scripts.allSatisfy { $0.find != nil })
        #expect(report.sizes.map(\.items) == [20])
        #expect(report.sizes.first?.operations.count == KeychainOperation.allCases.count)
        #expect(report.agentLookups?.memoryItems == 40 && report.agentLookups?.concurrentErrors == 0)

        let help = try ChildProcess.run(executable, ["--help"], environment: [:])
        #expect(help.status == 0)
        #expect(String(decoding: help.standardOutput, as: UTF8.self).contains("--sizes"))
        let wrong = try ChildProcess.run(executable, ["--no-such-flag"], environment: [:])
        #expect(wrong.status == 2)
    }

    @Test("a copy of the executable under another name still measures memory in a fresh process")
    func renamedExecutableProbesItself() throws {
        let built = try #require(Lifecycle.benchmarkExecutable, "keychain-bench is not built next to the tests")
        let directory = try Self.scratchDirectory("renamed-bench")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/kb"
        try Self.copyExecutable(built, to: copy)
        let outcome = try ChildProcess.run(
            copy,
            [
                "--sizes", "20", "--iterations", "5", "--json", "--test-kdf", "--quiet", "--script-sizes", "0",
                "--agent-memory-items", "40", "--agent-connections", "8", "--secret-service-items", "0",
            ],
            environment: ["PATH": "/usr/bin:/bin", "TMPDIR": NSTemporaryDirectory()])
        #expect(outcome.status == 0, "\(String(decoding: outcome.standardError, as: UTF8.self))")
        let report = try JSONDecoder().decode(BenchmarkReport.self, from: outcome.standardOutput)
        #expect(report.memory?.method == "fresh process")
        #expect(report.processes.contains { $0.name == "swift-noop" && $0.summary != nil })
    }

    /// Copies an executable through a close-on-exec descriptor: a child that another test
    /// starts meanwhile must not inherit the copy open for writing, or starting the copy fails
    /// with `ETXTBSY` for as long as that child runs.
    static func copyExecutable(_ source: String, to destination: String) throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
        let fd = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(fd) }
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw CocoaError(.fileWriteUnknown) }
                offset += written
            }
        }
    }

    @Test("starting an executable that is briefly open for writing elsewhere waits for it")
    func busyExecutableIsRetried() throws {
        let directory = try Self.scratchDirectory("busy-bench")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/true"
        // The copy and the writer are other processes: a descriptor of this process open on the
        // file could be inherited by a child another test starts meanwhile (a number reused
        // between its close and that test's dup2), keeping the file busy for as long as that
        // child runs, which is no longer what this test measures.
        let copy = try ChildProcess.run("/bin/cp", ["/bin/true", path], environment: [:])
        try #require(copy.status == 0)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", "exec 3>>\"$1\"; echo open; sleep 0.2", "sh", path]
        let said = Pipe()
        holder.standardOutput = said
        try holder.run()
        // Read on a thread of its own: the cooperative pool may be held by other tests.
        let opened = DispatchSemaphore(value: 0)
        let line = LockedLine()
        Thread.detachNewThread {
            line.set(String(decoding: said.fileHandleForReading.availableData, as: UTF8.self))
            opened.signal()
        }
        opened.wait()
        try #require(line.value.hasPrefix("open"), "the holder has the file open for writing")
        let outcome = try ChildProcess.run(path, [], environment: [:], capture: false)
        holder.waitUntilExit()
        #expect(outcome.status == 0)
    }

    @Test("a one-CPU run holds this thread and the processes it starts on the CPU it was on, then restores its set")
    func oneCPURun() throws {
        let before = try OneCore.cpuSet()
        let (cpu, inside, child) = try OneCore.run { cpu in
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = ["-c", "grep Cpus_allowed_list /proc/self/status"]
            let output = Pipe()
            shell.standardOutput = output
            try shell.run()
            shell.waitUntilExit()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (cpu, try OneCore.cpuSet(), text)
        }
        var expected = [UInt8](repeating: 0, count: before.count)
        expected[Int(cpu) / 8] = 1 << (cpu % 8)
        #expect(inside == expected)
        #expect(child.split(separator: ":").last?.trimmingCharacters(in: .whitespacesAndNewlines) == "\(cpu)")
        #expect(try OneCore.cpuSet() == before)
    }

    @Test("flags")
    func flags() throws {
        guard
            case .run(let options) = try BenchmarkOptions.parse([
                "--sizes", "10_000,1000", "--iterations", "7", "--json",
            ])
        else {
            Issue.record("not a run")
            return
        }
        #expect(options.sizes == [1_000, 10_000])
        #expect(options.iterations == 7)
        #expect(options.json)

        guard case .run(let quick) = try BenchmarkOptions.parse(["--quick"]) else {
            Issue.record("not a run")
            return
        }
        #expect(quick.sizes == [1_000, 10_000])
        #expect(quick.iterations == 200)
        guard case .run(let defaults) = try BenchmarkOptions.parse([]) else {
            Issue.record("not a run")
            return
        }
        #expect(defaults.sizes == [1_000, 10_000, 100_000])

        #expect(throws: BenchmarkFailure.self) { try BenchmarkOptions.parse(["--sizes", "0"]) }
        #expect(throws: BenchmarkFailure.self) { try BenchmarkOptions.parse(["--iterations"]) }
        #expect(throws: BenchmarkFailure.self) { try BenchmarkOptions.parse(["--bogus"]) }
        guard
            case .run(let secretService) = try BenchmarkOptions.parse([
                "--only", "secret-service", "--secret-service-items", "500",
            ])
        else {
            Issue.record("not a run")
            return
        }
        #expect(secretService.secretServiceOnly && !secretService.agentOnly)
        #expect(secretService.secretServiceItems == 500)
        #expect(defaults.secretServiceItems == 10_000)
        #expect(throws: BenchmarkFailure.self) { try BenchmarkOptions.parse(["--only", "nothing"]) }

        guard
            case .profile(_, let operation, let against) = try BenchmarkOptions.parse([
                "--profile", "engine.add", "--against", "floor.insert",
            ])
        else {
            Issue.record("not a profile")
            return
        }
        #expect(operation == "engine.add")
        #expect(against == "floor.insert")
        #expect(throws: BenchmarkFailure.self) { try BenchmarkOptions.parse(["--against", "floor.insert"]) }
    }

    @Test("a paired profile alternates two operations and times each of them")
    func pairedProfile() throws {
        var options = Self.tinyOptions()
        options.sizes = [40]
        options.iterations = 12
        let results = try BenchmarkRunner(options: options).profile(["engine.delete", "floor.delete"])
        #expect(results.count == 2)
        for result in results {
            Self.expectSensible(result.wall, "paired profile")
            #expect(result.wall.count == 12 && result.cpu.count == 12)
            #expect(result.cpu.medianMicroseconds > 0, "no CPU time measured")
        }
        #expect(throws: BenchmarkFailure.self) {
            try BenchmarkRunner(options: options).profile(["engine.add", "engine.nonsense"])
        }
    }

    @Test("median, 99th percentile and mean")
    func statistics() {
        let summary = Summary(nanoseconds: (1...100).map { UInt64($0) * 1_000 }.shuffled())
        #expect(summary.count == 100)
        #expect(summary.medianMicroseconds == 50.5)
        #expect(summary.p99Microseconds == 99)
        #expect(summary.minimumMicroseconds == 1)
        #expect(summary.meanMicroseconds == 50.5)
        let odd = Summary(nanoseconds: [3_000, 1_000, 2_000])
        #expect(odd.medianMicroseconds == 2)
        #expect(odd.p99Microseconds == 3)
        #expect(Summary(nanoseconds: [1_000, 1_000, 7_000]).meanMicroseconds == 3)
    }

    @Test("workload names are distinct and services hold their accounts")
    func workload() {
        let workload = Workload(count: 95, accountsPerService: 10)
        let names = (0..<95).map { workload.name(of: $0) }
        #expect(Set(names.map { "\($0.service)|\($0.account)" }).count == 95)
        let perService = Dictionary(grouping: names, by: \.service).mapValues(\.count)
        for s in 0..<workload.serviceCount {
            #expect(perService[workload.service(number: s)] == workload.accounts(ofService: s))
        }
        #expect(Workload.secret(1).count == Workload.secretLength)
        #expect(Workload.secret(1) != Workload.secret(2))
        #expect(Workload.secret(1) == Workload.secret(1))
    }

    @Test("added names are new, distinct, and fall anywhere among the seeded names in key order")
    func addedNames() {
        let workload = Workload(count: 10_000, accountsPerService: 10)
        let seeded = (0..<workload.serviceCount).map { workload.service(number: $0) }.sorted()
        let added = Workload.Adder.allCases.flatMap { adder in (0..<1_050).map { workload.addedName(adder, $0) } }
        #expect(Set(added.map(\.service)).count == added.count, "two added items share a service")
        #expect(Set(added.map(\.service)).isDisjoint(with: seeded), "an added item joins a seeded service")
        // Where each added service would go among the seeded ones: every tenth of the seeded
        // names receives about a tenth of the added ones (names numbered in sequence would all
        // land in one place).
        func rank(_ service: String) -> Int {
            var low = 0
            var high = seeded.count
            while low < high {
                let middle = (low + high) / 2
                if seeded[middle] < service { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var tenths = [Int](repeating: 0, count: 10)
        for name in added { tenths[min(9, rank(name.service) * 10 / seeded.count)] += 1 }
        for count in tenths { #expect(count > added.count / 20 && count < added.count / 5, "\(tenths)") }
        // The clustered names all sort after every seeded name.
        let clustered = (0..<1_050).map { Workload.clusteredName($0).service }
        #expect(clustered.allSatisfy { rank($0) == seeded.count })
    }

    /// A new empty directory under the temporary directory; the caller removes it.
    static func scratchDirectory(_ prefix: String) throws -> String {
        let directory = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("settling brings a write-ahead log to its steady size, after which writes no longer grow it")
    func settlingWriteAheadLog() throws {
        let directory = try Self.scratchDirectory("settle")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/floor.sqlite"
        let floor = try SQLiteBaseline(path: path, workload: Workload(count: 50))
        #expect(try WriteAheadLog.pageSize(of: path) == 4096)
        let steady = WriteAheadLog.steadySize(pageSize: 4096)
        #expect(WriteAheadLog.size(ofLogOf: path) < steady)
        try BenchmarkRunner.settle(floor, path: path)
        let settled = WriteAheadLog.size(ofLogOf: path)
        #expect(settled >= steady)
        for i in 0..<400 {
            try floor.insert(service: "after", account: "a\(i)", data: Data("x".utf8))
            #expect(try floor.delete(service: "after", account: "a\(i)") == 1)
        }
        // A cycle of the log or more later, it is at most a few frames longer (a commit that
        // crosses the threshold may end a little past the previous one).
        #expect(WriteAheadLog.size(ofLogOf: path) <= settled + 8 * (4096 + 24))
        #expect(try floor.select(service: "after", account: "a0") == nil)
    }

    @Test("settling a keychain leaves its items as they were")
    func settlingKeychain() throws {
        let directory = try Self.scratchDirectory("settle")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/bench.keychain-db"
        let keychain = try KeychainDatabase.create(
            at: path, password: nil,
            configuration: .testing(deviceKey: .file(at: directory + "/device-key")))
        try keychain.add(Workload.item(service: "kept", account: "me", secret: Workload.secret(1)))
        try BenchmarkRunner.settle(keychain, path: path)
        #expect(WriteAheadLog.size(ofLogOf: path) >= WriteAheadLog.steadySize(pageSize: 4096))
        let all = try keychain.find(ItemQuery(class: .genericPassword, attributes: [:]), includeData: true)
        #expect(all.map(\.data) == [Workload.secret(1)])
    }

    @Test("the floor has one unique index; the table with the keychain's indexes has the keychain's two")
    func floorIndexes() throws {
        let directory = try Self.scratchDirectory("floor-indexes")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let workload = Workload(count: 40)
        func indexes(_ layout: SQLiteBaseline.Indexes) throws -> [String] {
            let floor = try SQLiteBaseline(path: directory + "/\(layout).sqlite", workload: workload, indexes: layout)
            try floor.insert(service: "s", account: "a", data: Data("x".utf8))
            return try floor.pool.read { db in
                try String.fetchAll(
                    db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items' ORDER BY name")
            }
        }
        #expect(try indexes(.plain) == ["CREATE UNIQUE INDEX items_service_account ON items(service, account)"])
        #expect(
            try indexes(.keychain) == [
                "CREATE INDEX items_label ON items(label)",
                "CREATE UNIQUE INDEX items_service_account ON items(service, account)",
            ])
    }
}

/// A line one thread reads and another waits for.
private final class LockedLine: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""
    var value: String { lock.withLock { text } }
    func set(_ newValue: String) { lock.withLock { text = newValue } }
}
