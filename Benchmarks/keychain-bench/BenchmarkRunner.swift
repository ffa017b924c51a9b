import Foundation
import KeychainClient
import KeychainCore
import Security

/// Runs the whole benchmark: for every size, seeds a keychain and the plain-SQLite floor,
/// times every operation through the engine, `SecItem*` and the floor interleaved, then
/// times opening; at the reference size (10,000 items) the `security` processes, at the
/// largest size resident memory in a fresh process. Then lookups and adds on every size in
/// one interleaved loop (growth), password changes and unlocking with key derivation on the
/// reference keychain (which then has a password), and last the lookup processes on keychains
/// filled by separate add processes, against the Swift floor and GNOME Keyring
/// (``ScriptComparison``).
///
/// Everything happens in a new scratch directory (mode 0700) that is removed at the end; the
/// keychains are password-less and protected by a device key file in that directory, so no
/// keychain or key of the user's is read or written.
struct BenchmarkRunner {
    let options: BenchmarkOptions
    let accountsPerService = 10

    /// Runs every measurement and returns the report (targets evaluated).
    func run() throws -> BenchmarkReport {
        let scratch = try Self.makeScratchDirectory(in: options.directory)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for directory in ["home", "data", "config/keychain"] {
            try FileManager.default.createDirectory(
                atPath: scratch + "/" + directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let lifecycle = Lifecycle(
            options: options, deviceKeyFile: scratch + "/config/keychain/device-key", scratch: scratch,
            progress: progress)
        var report = BenchmarkReport(
            date: ISO8601DateFormatter().string(from: Date()), machine: Machine.current(scratchDirectory: scratch),
            settings: .init(
                sizes: options.sizes, iterations: options.iterations, warmup: options.warmup,
                accountsPerService: accountsPerService, secretBytes: Workload.secretLength,
                keyDerivation: lifecycle.keyDerivation.description, openRepetitions: options.openRepetitions,
                processRepetitions: options.processRepetitions,
                keyDerivationRepetitions: options.keyDerivationRepetitions))
        if options.syncOnly {
            report.sync = syncComparison()
            report.machine.loadAtEnd = Machine.loadAverage()
            report.notes = notes(report)
            report.evaluateTargets()
            return report
        }
        if options.sshOnly {
            report.sshAgent = sshAgentComparison(lifecycle: lifecycle, scratch: scratch)
            report.secureEnclave = secureEnclaveComparison(lifecycle: lifecycle, scratch: scratch)
            report.companion = companionComparison(lifecycle: lifecycle, scratch: scratch)
            report.machine.loadAtEnd = Machine.loadAverage()
            report.notes = notes(report)
            report.evaluateTargets()
            return report
        }
        if options.secretServiceOnly {
            report.secretService = secretServiceComparison(lifecycle: lifecycle, scratch: scratch)
            report.keePass = keePassComparison(lifecycle: lifecycle, scratch: scratch)
            report.machine.loadAtEnd = Machine.loadAverage()
            report.notes = notes(report)
            report.evaluateTargets()
            return report
        }
        let referenceSize =
            options.sizes.contains(options.referenceSize) ? options.referenceSize : options.sizes.last!
        let largest = options.sizes.max()!
        var keychains: [(size: Int, path: String)] = []
        if options.agentOnly {
            progress("\(Format.count(referenceSize)) items, for the agent's rows only")
            keychains.append(
                (referenceSize, try seededKeychain(size: referenceSize, scratch: scratch, lifecycle: lifecycle)))
        }
        for (number, size) in options.sizes.enumerated() where !options.agentOnly {
            progress("[\(number + 1)/\(options.sizes.count)] \(Format.count(size)) items")
            let directory = scratch + "/size-\(size)"
            let result = try measureOperations(size: size, directory: directory, lifecycle: lifecycle)
            report.sizes.append(result.size)
            keychains.append((size, result.path))
            let workload = Workload(count: size, accountsPerService: accountsPerService)
            let (service, account) = workload.name(of: size / 2)
            if size == referenceSize {
                progress("whole-process security commands")
                report.processes = lifecycle.processes(
                    path: result.path, items: size, service: service, account: account,
                    secret: Workload.secret(size / 2))
            }
            if size == largest {
                progress("resident memory")
                report.memory = try lifecycle.memory(path: result.path, items: size, service: service, account: account)
            }
        }
        if keychains.count > 1, !options.agentOnly {
            progress("growth: find and add on every size, interleaved")
            report.growth = try measureGrowth(keychains, configuration: lifecycle.configuration)
        }
        // Before the password change, which gives the reference keychain a password.
        if let reference = keychains.first(where: { $0.size == referenceSize }) {
            progress("lookups served by keychaind")
            report.agentLookups = AgentLookups(
                options: options, lifecycle: lifecycle, scratch: scratch, accountsPerService: accountsPerService,
                progress: progress
            ).run(path: reference.path, items: reference.size)
            report.agentLookups?.concurrentConnections = options.agentConnections
            progress("\(Format.count(options.agentConnections)) connections to keychaind at once")
            let concurrent = AgentLookups(
                options: options, lifecycle: lifecycle, scratch: scratch, accountsPerService: accountsPerService,
                progress: progress
            ).concurrentConnections(path: reference.path, items: reference.size)
            report.agentLookups?.concurrentErrors = concurrent.errors
            report.agentLookups?.concurrentNote = concurrent.note
            progress("lookups through a keychaind under a hostile load, against an idle one")
            report.agentSaturation = AgentSaturation(
                options: options, lifecycle: lifecycle, scratch: scratch, accountsPerService: accountsPerService
            ).run(path: reference.path, items: reference.size)
        }
        if report.agentLookups != nil {
            progress("login unlock (pam_keychain.so's keychaind --pam login)")
            let login = LoginUnlock(
                lifecycle: lifecycle, scratch: scratch, repetitions: max(3, options.keyDerivationRepetitions),
                progress: progress)
            report.loginUnlock = login.run()
            progress("sealed login unlock (the login keychain sealed to a private swtpm)")
            report.sealedLoginUnlock = login.run(sealed: true)
            let size = options.agentMemoryItems
            progress("resident memory of keychaind after lookups on \(Format.count(size)) items")
            do {
                let path =
                    try keychains.first(where: { $0.size == size })?.path
                    ?? seededKeychain(size: size, scratch: scratch, lifecycle: lifecycle)
                report.agentLookups?.memoryItems = size
                let memory = AgentLookups(
                    options: options, lifecycle: lifecycle, scratch: scratch, accountsPerService: accountsPerService,
                    progress: progress
                ).memory(path: path, items: size)
                report.agentLookups?.memoryBytes = memory.bytes
                report.agentLookups?.memoryNote = memory.note
            } catch {
                report.agentLookups?.memoryNote = "not available: \(error)"
            }
        }
        if !options.agentOnly, let reference = keychains.first(where: { $0.size == referenceSize }) {
            progress("password change")
            let (change, open) = try lifecycle.passwordTimings(path: reference.path, items: reference.size)
            report.passwordChange = change
            report.openWithKeyDerivation = open
        }
        if !options.agentOnly {
            report.secretService = secretServiceComparison(lifecycle: lifecycle, scratch: scratch)
            report.keePass = keePassComparison(lifecycle: lifecycle, scratch: scratch)
            report.sshAgent = sshAgentComparison(lifecycle: lifecycle, scratch: scratch)
            report.secureEnclave = secureEnclaveComparison(lifecycle: lifecycle, scratch: scratch)
            report.companion = companionComparison(lifecycle: lifecycle, scratch: scratch)
            report.sync = syncComparison()
        }
        // Last: filling keychains with thousands of processes leaves the disk and the page
        // cache busy enough to slow the in-process timings above when they come after it.
        report.scripts = scriptComparisons(lifecycle: lifecycle, scratch: scratch)
        report.machine.loadAtEnd = Machine.loadAverage()
        report.notes = notes(report)
        report.evaluateTargets()
        return report
    }

    /// The sync rows (``SyncComparison``), unless `--sync-items 0`.
    func syncComparison() -> SyncResult? {
        guard options.syncItems > 0 else { return nil }
        progress("sync: two machines through a private PostgreSQL, \(Format.count(options.syncItems)) items")
        return SyncComparison(options: options, progress: progress).run()
    }

    /// The Secret Service rows (``SecretServiceComparison``), unless `--secret-service-items 0`.
    func secretServiceComparison(lifecycle: Lifecycle, scratch: String) -> SecretServiceResult? {
        guard options.secretServiceItems > 0 else { return nil }
        progress(
            "Secret Service: keychaind --secret-service and GNOME Keyring, \(Format.count(options.secretServiceItems)) items"
        )
        return SecretServiceComparison(options: options, lifecycle: lifecycle, scratch: scratch, progress: progress)
            .run()
    }

    /// An SSH signature through keychaind's agent and OpenSSH's (``SSHAgentComparison``).
    private func sshAgentComparison(lifecycle: Lifecycle, scratch: String) -> SSHAgentResult {
        progress("SSH agent: Ed25519 signatures through keychaind and OpenSSH's ssh-agent")
        return SSHAgentComparison(options: options, lifecycle: lifecycle, scratch: scratch, progress: progress).run()
    }

    /// A Secure Enclave key's signature in a swtpm and `tpm2_sign`'s (``SecureEnclaveComparison``).
    private func secureEnclaveComparison(lifecycle: Lifecycle, scratch: String) -> SecureEnclaveResult {
        progress("Secure Enclave keys: P-256 signatures in a swtpm, through keychaind and tpm2_sign")
        return SecureEnclaveComparison(options: options, lifecycle: lifecycle, scratch: scratch, progress: progress)
            .run()
    }

    /// A `.companion` item read with a touch, against libfido2's own assertion (``CompanionComparison``).
    private func companionComparison(lifecycle: Lifecycle, scratch: String) -> CompanionResult {
        progress("companion: a .companion read with a touch of a software FIDO2 key, and libfido2's assertion")
        return CompanionComparison(options: options, lifecycle: lifecycle, scratch: scratch, progress: progress).run()
    }

    /// KeePass databases moved in and written out (``KeePassComparison``), at the Secret Service
    /// rows' size.
    private func keePassComparison(lifecycle: Lifecycle, scratch: String) -> KeePassResult {
        progress("KeePass databases: moved in and written out, against Argon2 and the same adds or reads")
        return KeePassComparison(
            lifecycle: lifecycle, scratch: scratch, items: options.secretServiceItems, progress: progress
        ).run()
    }

    /// The lookup processes on keychains filled by separate processes (``ScriptComparison``),
    /// each size against a GNOME Keyring of its own when GNOME Keyring is installed.
    func scriptComparisons(lifecycle: Lifecycle, scratch: String) -> [ScriptResult] {
        guard !options.scriptSizes.isEmpty else { return [] }
        guard let security = lifecycle.securityExecutable else {
            return options.scriptSizes.map { size in
                var result = ScriptResult(items: size)
                result.note = "not available: no security executable next to keychain-bench"
                return result
            }
        }
        let environment = lifecycle.childEnvironment(keychain: scratch + "/data/keychains/login.keychain-db")
        var agent: BenchAgent?
        var agentNote: String?
        do {
            agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: scratch + "/agent.sock", environment: environment)
        } catch {
            agentNote = "not available: \(error)"
        }
        let comparison = ScriptComparison(
            options: options, scratch: scratch, environment: environment, security: security,
            floorExecutable: lifecycle.probeExecutable, agent: agent, agentNote: agentNote, progress: progress)
        defer { withExtendedLifetime(agent) {} }
        return options.scriptSizes.map { size in
            progress("lookup processes on \(Format.count(size)) items added by processes")
            do {
                let gnome = try GnomeKeyring.start(in: scratch + "/gnome-\(size)")
                return comparison.run(size: size, gnome: gnome)
            } catch {
                var result = comparison.run(size: size, gnome: nil)
                result.secretToolNote = "not available: \(error)"
                return result
            }
        }
    }

    /// Seeds a keychain of the first size, then runs one operation (`engine.find`,
    /// `secitem.add`, `floor.select`, …) `iterations` times, alone, inside
    /// ``profiledLoop(_:range:)``, so that a profiler can count that loop only:
    ///
    /// ```
    /// valgrind --tool=callgrind --toggle-collect='*profiledLoop*' \
    ///     keychain-bench --profile engine.find --sizes 10000 --iterations 2000
    /// ```
    ///
    /// With two names, the operations alternate on every iteration (`engine.add`, then
    /// `floor.insert`, then `engine.add`, …), so that both see the same machine from one
    /// moment to the next: the steadiest ratio this noisy machine gives.
    /// - Returns: The wall-clock and CPU times of each operation, in the order named.
    func profile(_ names: [String]) throws -> [ProfileResult] {
        let scratch = try Self.makeScratchDirectory(in: options.directory)
        try FileManager.default.createDirectory(
            atPath: scratch + "/config/keychain", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let workload = Workload(count: options.sizes[0], accountsPerService: accountsPerService)
        let configuration = KeychainConfiguration.testing(deviceKey: .file(at: scratch + "/config/keychain/device-key"))
        let (keychainPath, floorPath, indexedFloorPath) = (
            scratch + "/bench.keychain-db", scratch + "/floor.sqlite", scratch + "/floor-indexed.sqlite"
        )
        let keychain = try KeychainDatabase.create(at: keychainPath, password: nil, configuration: configuration)
        _ = try seed(keychain, workload)
        let floor = try SQLiteBaseline(path: floorPath, workload: workload)
        let indexedFloor = try SQLiteBaseline(path: indexedFloorPath, workload: workload, indexes: .keychain)
        try Self.settle(keychain, path: keychainPath)
        try Self.settle(floor, path: floorPath)
        try Self.settle(indexedFloor, path: indexedFloorPath)
        let count = options.warmup + options.iterations
        let suite = OperationSuite(
            keychain: keychain, floor: floor, indexedFloor: indexedFloor, workload: workload, count: count,
            seed: 0x6B63_6265)
        var operations = try suite.operations()
        // `agent.find`: the engine's find served by a keychaind of its own on this keychain.
        var agent: BenchAgent?
        defer { withExtendedLifetime(agent) {} }
        if names.contains("agent.find") {
            let lifecycle = Lifecycle(
                options: options, deviceKeyFile: scratch + "/config/keychain/device-key", scratch: scratch,
                progress: { _ in })
            let socket = scratch + "/agent.sock"
            agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: socket,
                environment: lifecycle.childEnvironment(keychain: keychainPath))
            operations.append(try suite.agentFind(AgentConnection(socketPath: socket).keychain(at: keychainPath)))
        }
        let chosen = try names.map { name in
            guard let operation = operations.first(where: { $0.name == name }) else {
                throw BenchmarkFailure(
                    "unknown operation \(name); one of " + operations.map(\.name).joined(separator: ", "))
            }
            return operation
        }
        // A delete needs the items its add counterpart (or the floor's insert) creates first.
        let producers = names.compactMap { name in
            name.hasSuffix(".delete")
                ? operations.first { $0.name == name.replacingOccurrences(of: ".delete", with: ".add") }
                    ?? operations.first { $0.name == "floor.insert" } : nil
        }
        return try KeychainDatabase.withDefault(keychain) {
            for producer in producers { for index in 0..<count { try producer.body(index) } }
            for index in 0..<options.warmup { for operation in chosen { try operation.body(index) } }
            guard chosen.count == 2 else {
                return [ProfileResult(try Self.profiledLoop(chosen[0], range: options.warmup..<count))]
            }
            var samples: [Timings] = [Timings(), Timings()]
            for index in options.warmup..<count {
                for (slot, operation) in chosen.enumerated() {
                    samples[slot].append(try Clock.timeAndCPU { try operation.body(index) })
                }
            }
            return samples.map(ProfileResult.init)
        }
    }

    /// The loop a profiler collects (`--toggle-collect='*profiledLoop*'`).
    @inline(never)
    static func profiledLoop(_ operation: BenchmarkOperation, range: Range<Int>) throws -> Timings {
        var samples = Timings()
        samples.reserveCapacity(range.count)
        for index in range { samples.append(try Clock.timeAndCPU { try operation.body(index) }) }
        return samples
    }

    /// Creates `keychain-bench-<pid>-<uuid>` (mode 0700) in `parent` (default: the temporary
    /// directory), first removing the directories that runs killed before their cleanup
    /// left behind (their process no longer exists).
    static func makeScratchDirectory(in parent: String?) throws -> String {
        let parent = parent ?? FileManager.default.temporaryDirectory.path
        let prefix = "keychain-bench-"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? [] where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), pid > 0,
                kill(pid, 0) != 0 && errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(atPath: parent + "/" + name)
        }
        let scratch = parent + "/\(prefix)\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: scratch, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return scratch
    }

    private func progress(_ message: String) {
        guard options.progress else { return }
        FileHandle.standardError.write(Data("keychain-bench: \(message)\n".utf8))
    }

    /// Seeds the keychain and the floor of one size, then times the operations.
    /// A keychain of `size` items, seeded as ``measureOperations(size:directory:lifecycle:)``
    /// seeds its own, with nothing timed on it: for the agent's rows alone (`--only agent`) and
    /// its resident memory on 100,000 items when no size of the run has them.
    private func seededKeychain(size: Int, scratch: String, lifecycle: Lifecycle) throws -> String {
        let directory = scratch + "/seeded-\(size)"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory + "/bench.keychain-db"
        let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: lifecycle.configuration)
        _ = try seed(keychain, Workload(count: size, accountsPerService: accountsPerService))
        try Self.settle(keychain, path: path)
        return path
    }

    private func measureOperations(size: Int, directory: String, lifecycle: Lifecycle) throws
        -> (size: SizeResult, path: String)
    {
        let workload = Workload(count: size, accountsPerService: accountsPerService)
        let path = directory + "/bench.keychain-db"
        var keychain: KeychainDatabase? = try KeychainDatabase.create(
            at: path, password: nil, configuration: lifecycle.configuration)
        let seeding = try seed(keychain!, workload)
        let floorPath = directory + "/floor.sqlite"
        var floor: SQLiteBaseline? = try SQLiteBaseline(path: floorPath, workload: workload)
        let indexedFloorPath = directory + "/floor-indexed.sqlite"
        var indexedFloor: SQLiteBaseline? = try SQLiteBaseline(
            path: indexedFloorPath, workload: workload, indexes: .keychain)
        try verify(keychain!, workload)
        progress("bringing the write-ahead logs to their steady size")
        try Self.settle(keychain!, path: path)
        try Self.settle(floor!, path: floorPath)
        try Self.settle(indexedFloor!, path: indexedFloorPath)

        progress("timing \(options.iterations) iterations of each operation, interleaved")
        let count = options.warmup + options.iterations
        var samples: [String: [UInt64]] = [:]
        do {
            let suite = OperationSuite(
                keychain: keychain!, floor: floor!, indexedFloor: indexedFloor!, workload: workload, count: count,
                seed: 0x6B63_6265 &+ UInt64(size))
            let operations = try suite.operations()
            samples = try KeychainDatabase.withDefault(keychain!) {
                try InterleavedRunner.run(operations, warmup: options.warmup, iterations: options.iterations)
            }
        }
        keychain = nil
        floor = nil
        indexedFloor = nil

        var floorResults: [FloorResult] = []
        for operation in FloorOperation.allCases {
            guard let values = samples[OperationSuite.key("floor", operation.rawValue)] else { continue }
            floorResults.append(
                FloorResult(operation: operation, title: operation.title, summary: Summary(nanoseconds: values)))
        }
        var operationResults: [OperationResult] = []
        for operation in KeychainOperation.allCases {
            guard let engine = samples[OperationSuite.key("engine", operation.rawValue)],
                let secItem = samples[OperationSuite.key("secitem", operation.rawValue)]
            else { continue }
            let floorMedian = operation.floor(accountsPerService: accountsPerService).reduce(0.0) { sum, part in
                let median = floorResults.first { $0.operation == part.0 }?.summary.medianMicroseconds ?? 0
                return sum + median * part.1
            }
            let engineSummary = Summary(nanoseconds: engine)
            let secItemSummary = Summary(nanoseconds: secItem)
            operationResults.append(
                OperationResult(
                    operation: operation, engine: engineSummary, secItem: secItemSummary,
                    floorMedianMicroseconds: floorMedian,
                    floorDescription: operation.floorDescription(accountsPerService: accountsPerService),
                    engineRatio: engineSummary.medianMicroseconds / floorMedian,
                    secItemRatio: secItemSummary.medianMicroseconds / floorMedian,
                    secItemOverEngine: secItemSummary.medianMicroseconds / engineSummary.medianMicroseconds))
        }
        var keyResults: [KeyOperationResult] = []
        let passwordFloor = operationResults.first { $0.operation == .find }?.floorMedianMicroseconds
        for operation in KeyOperation.allCases {
            guard let values = samples[OperationSuite.key("key", operation.rawValue)] else { continue }
            let reference: Double?
            switch operation {
            case .sign, .tokenSign:
                reference = samples[OperationSuite.key("key", KeyReference.cryptoSign.rawValue)].map {
                    Summary(nanoseconds: $0).medianMicroseconds
                }
            case .verify:
                reference = samples[OperationSuite.key("key", KeyReference.cryptoVerify.rawValue)].map {
                    Summary(nanoseconds: $0).medianMicroseconds
                }
            case .findRef:
                reference = passwordFloor
            case .pkcs12Import, .pkcs12ImportLegacy, .trustEvaluate:
                let floors: [KeyOperation: KeyReference] = [
                    .pkcs12Import: .pkcs12Floor, .pkcs12ImportLegacy: .pkcs12LegacyFloor, .trustEvaluate: .chainFloor,
                ]
                let floor = floors[operation] ?? .chainFloor
                reference = samples[OperationSuite.key("key", floor.rawValue)].map {
                    Summary(nanoseconds: $0).medianMicroseconds
                }
            }
            guard let reference else { continue }
            let summary = Summary(nanoseconds: values)
            keyResults.append(
                KeyOperationResult(
                    operation: operation, summary: summary, referenceMedianMicroseconds: reference,
                    referenceDescription: operation.referenceDescription,
                    ratio: summary.medianMicroseconds / reference))
        }
        for file in [floorPath, indexedFloorPath] {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        }
        progress("opening the keychain \(options.openRepetitions) times")
        let open = try lifecycle.openWithoutKeyDerivation(path: path)
        let crashed = try lifecycle.openAfterCrash(path: path, directory: directory)
        return (
            SizeResult(
                items: size, seeding: seeding, operations: operationResults, floor: floorResults,
                openWithoutKeyDerivation: open, openAfterCrash: crashed, keyOperations: keyResults),
            path
        )
    }

    /// Times engine lookups and adds on every size's keychain in one interleaved loop, so that
    /// the growth from the smallest to the largest keychain is not skewed by the load of
    /// other processes changing between the phases of different sizes.
    private func measureGrowth(_ keychains: [(size: Int, path: String)], configuration: KeychainConfiguration)
        throws -> GrowthResult
    {
        let count = options.warmup + options.iterations
        var operations: [BenchmarkOperation] = []
        var handles: [KeychainDatabase] = []
        for (size, path) in keychains {
            let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
            handles.append(keychain)
            try Self.settle(keychain, path: path)
            let workload = Workload(count: size, accountsPerService: accountsPerService)
            let lookups = workload.randomItems(count, seed: 0x6772_6F77 &+ UInt64(size)).map(workload.name(of:))
            let added = (0..<count).map { workload.addedName(.growth, $0) }
            let secrets = (0..<count).map { Workload.secret($0, version: 2) }
            operations.append(
                BenchmarkOperation(name: "find.\(size)") { i in
                    let query = ItemQuery(
                        class: .genericPassword,
                        attributes: [.service: .string(lookups[i].service), .account: .string(lookups[i].account)])
                    guard try keychain.findFirst(query, includeData: true)?.data?.count == Workload.secretLength else {
                        throw BenchmarkFailure("growth: no secret for \(lookups[i]) at \(size) items")
                    }
                })
            operations.append(
                BenchmarkOperation(name: "add.\(size)") { i in
                    try keychain.add(
                        Workload.item(service: added[i].service, account: added[i].account, secret: secrets[i]))
                })
        }
        let samples = try InterleavedRunner.run(operations, warmup: options.warmup, iterations: options.iterations)
        return GrowthResult(
            sizes: keychains.map(\.size),
            find: keychains.map { Summary(nanoseconds: samples["find.\($0.size)"] ?? []) },
            add: keychains.map { Summary(nanoseconds: samples["add.\($0.size)"] ?? []) })
    }

    /// Adds and deletes throwaway items until the keychain's write-ahead log has reached its
    /// steady size (``WriteAheadLog``).
    static func settle(_ keychain: KeychainDatabase, path: String) throws {
        try WriteAheadLog.settle(path) { i in
            let (service, account) = ("settle.bench.example.net", "settle-\(i)@example.net")
            try keychain.add(Workload.item(service: service, account: account, secret: Workload.secret(i)))
            let query = ItemQuery(
                class: .genericPassword, attributes: [.service: .string(service), .account: .string(account)])
            guard try keychain.delete(query) == 1 else { throw BenchmarkFailure("settling: a throwaway item stayed") }
        }
    }

    /// Inserts and deletes throwaway rows until the floor's write-ahead log has reached its
    /// steady size (``WriteAheadLog``).
    static func settle(_ floor: SQLiteBaseline, path: String) throws {
        try WriteAheadLog.settle(path) { i in
            let (service, account) = ("settle.bench.example.net", "settle-\(i)@example.net")
            try floor.insert(service: service, account: account, data: Workload.secret(i))
            guard try floor.delete(service: service, account: account) == 1 else {
                throw BenchmarkFailure("settling: a throwaway row stayed")
            }
        }
    }

    /// Adds the workload's items in transactions of `seedBatch` items
    /// (`KeychainDatabase.add(contentsOf:)`); seeding is not part of any timing.
    private func seed(_ keychain: KeychainDatabase, _ workload: Workload) throws -> SizeResult.Seeding {
        let start = Clock.now()
        var reported = start
        for batchStart in stride(from: 0, to: workload.count, by: Self.seedBatch) {
            let batch = (batchStart..<min(batchStart + Self.seedBatch, workload.count)).map { k in
                let (service, account) = workload.name(of: k)
                return Workload.item(service: service, account: account, secret: Workload.secret(k))
            }
            try keychain.add(contentsOf: batch)
            let now = Clock.now()
            if now - reported > 10_000_000_000 {
                reported = now
                let done = batchStart + batch.count
                let elapsed = Double(now - start) / 1e9
                // A linear estimate; an engine whose adds slow down as the file grows takes longer.
                let left = elapsed * Double(workload.count - done) / Double(done)
                progress(
                    "seeding: \(Format.count(done)) of \(Format.count(workload.count)) items, "
                        + String(format: "%.0f s, at least %.0f s left", elapsed, left))
            }
        }
        let seconds = Double(Clock.now() - start) / 1e9
        progress(String(format: "seeded %@ items in %.1f s", Format.count(workload.count), seconds))
        return .init(
            seconds: seconds, microsecondsPerItem: seconds * 1e6 / Double(workload.count),
            method: "KeychainDatabase.add(contentsOf:), \(Self.seedBatch) items per transaction")
    }

    static let seedBatch = 1_000

    /// Checks that the seeded keychain returns what was stored before anything is timed.
    private func verify(_ keychain: KeychainDatabase, _ workload: Workload) throws {
        for k in [0, workload.count / 2, workload.count - 1] {
            let (service, account) = workload.name(of: k)
            let item = try keychain.findFirst(
                ItemQuery(
                    class: .genericPassword, attributes: [.service: .string(service), .account: .string(account)]),
                includeData: true)
            guard item?.data == Workload.secret(k) else {
                throw BenchmarkFailure("the seeded keychain does not return item \(k)'s secret")
            }
        }
    }

    /// Engine add ÷ the floor measurement `floor` at every size ("1.27× @1,000, …"), or `nil`
    /// when the report has none.
    static func addRatios(_ report: BenchmarkReport, over floor: FloorOperation) -> String? {
        let ratios = report.sizes.compactMap { size -> String? in
            guard let add = size.operation(.add), let insert = size.floor.first(where: { $0.operation == floor })
            else { return nil }
            return "\(Format.ratio(add.engine.medianMicroseconds / insert.summary.medianMicroseconds)) "
                + "@\(Format.count(size.items))"
        }
        return ratios.isEmpty ? nil : ratios.joined(separator: ", ")
    }

    /// The note that compares the add with a plain insert into a table with the keychain's
    /// indexes, at every size: the share of the add's gap to the floor that is indexing.
    static func addOverIndexedInsert(_ report: BenchmarkReport) -> String? {
        guard let ratios = addRatios(report, over: .insertIndexed) else { return nil }
        return "The add is compared with a plain insert under a unique (service, account) index. The keychain "
            + "finds items by service, or service and account, through its primary-key index, which begins with "
            + "their keyed tags, and by label alone through keyed-tag rows, so each add writes one more index "
            + "entry; an unencrypted insert into a table with those indexes (unique (service, account), label), "
            + "same durability, is the row \"\(FloorOperation.insertIndexed.title)\". "
            + "Engine add ÷ that insert: " + ratios + "."
    }

    /// The note that compares the add with the floor's insert of clustered names, at every
    /// size: what the floor would gain if real names sorted together.
    static func addOverClusteredInsert(_ report: BenchmarkReport) -> String? {
        guard let ratios = addRatios(report, over: .insertClustered) else { return nil }
        return "Added items are new services named like the seeded ones, whose names fall anywhere among the "
            + "seeded names in key order, as real new names do; so every insert also lands on a random page of "
            + "the floor's index. The row \"\(FloorOperation.insertClustered.title)\" inserts names that all sort "
            + "together after the seeded ones instead (as this benchmark's added names did before 2026-11-24), "
            + "which a plaintext index appends to the same few cached pages and keyed hashes never do. "
            + "Engine add ÷ that insert: " + ratios + "."
    }

    private func notes(_ report: BenchmarkReport) -> [String] {
        var notes = [
            "Floors are measured in the same run, interleaved with the operations in rounds of 25 iterations: "
                + "plain SQLite through GRDB with the engine's configuration (DatabasePool/WAL, synchronous=FULL, "
                + "secure_delete=ON, one immediate transaction per write; each read one statement on a read-only "
                + "connection of its own, as the engine's) on unencrypted rows with a unique (service, account) index, "
                + "and AES-256-GCM on the 100-byte secret.",
            "Reads are compared with select + one AES open; writes with the plain SQLite write alone. "
                + "The floor's writer connection is checked to run synchronous=FULL (GRDB's DatabasePool sets NORMAL "
                + "on its writer after prepareDatabase, so the floor sets FULL again after opening).",
            "Keychains are password-less with a device key file in a scratch directory; they are seeded with "
                + "add(contentsOf:) in transactions of \(Self.seedBatch) items, which no timing includes.",
            "Before timing, throwaway writes bring every database's write-ahead log to its steady size "
                + "(\(WriteAheadLog.checkpointPages) pages, when SQLite checkpoints and starts the file again), "
                + "as in a keychain in use: a commit that makes the log longer also syncs the file system's "
                + "journal, and seeding leaves the keychain's and the floor's logs at different sizes.",
        ]
        if let indexed = Self.addOverIndexedInsert(report) { notes.append(indexed) }
        if let clustered = Self.addOverClusteredInsert(report) { notes.append(clustered) }
        if options.testKeyDerivation {
            notes.append(
                "--test-kdf: key-derivation rows use \(KeyDerivation.unsafeTestingOnly), not the production one.")
        }
        if Machine.buildConfiguration == "debug" {
            notes.append("Debug build: timings are not representative; use swift run -c release keychain-bench.")
        }
        return notes
    }
}
