import Foundation
import KeychainClient
import KeychainCore
import UserPresence

/// Lookups served by the session agent, `keychaind`, on the reference keychain: one item at a
/// time over one connection, interleaved with the same lookups in this process (the floor the
/// agent adds its socket round trip to), then the lookups per second of one client and of four
/// clients at once, each on a connection and a thread of its own (the agent reads in parallel).
struct AgentLookups {
    let options: BenchmarkOptions
    let lifecycle: Lifecycle
    let scratch: String
    let accountsPerService: Int
    let progress: (String) -> Void

    /// How many lookups each client makes in the throughput rounds.
    static let throughputLookups = 2_000

    func run(path: String, items: Int) -> AgentLookupResult {
        var result = AgentLookupResult(items: items)
        do {
            let agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: scratch + "/lookups/agent.sock",
                environment: lifecycle.childEnvironment(keychain: path))
            defer { withExtendedLifetime(agent) {} }
            let socket = scratch + "/lookups/agent.sock"
            let local = try KeychainDatabase.open(at: path, configuration: lifecycle.configuration)
            let served = try AgentConnection(socketPath: socket).keychain(at: path)
            let workload = Workload(count: items, accountsPerService: accountsPerService)
            @Sendable func query(_ index: Int) -> ItemQuery {
                let (service, account) = workload.name(of: index)
                return ItemQuery(
                    class: .genericPassword, attributes: [.service: .string(service), .account: .string(account)])
            }
            guard try served.findFirst(query(items / 2), includeData: true)?.data == Workload.secret(items / 2) else {
                throw BenchmarkFailure("keychaind did not return the item's secret")
            }
            guard let bench = lifecycle.probeExecutable else {
                throw BenchmarkFailure("no keychain-bench executable for the socket floor")
            }
            let echo = try SocketEcho(executable: bench)
            let message = [UInt8](repeating: 0x6c, count: SocketEcho.messageSize)
            let timed = try interleaved(
                items: items, query: query,
                [
                    { _ = try local.findFirst($0, includeData: true) },
                    { _ = try served.findFirst($0, includeData: true) },
                    { _ in try echo.roundTrip(message) },
                ])
            (result.inProcess, result.agent, result.roundTrip) = (timed[0], timed[1], timed[2])
            progress("  a new connection's first lookup, as a process makes it, with and without its access groups")
            let first = try interleaved(
                items: items, query: query,
                [
                    { try Self.firstLookup($0, socket: socket, path: path, accessGroups: nil) },
                    {
                        try Self.firstLookup($0, socket: socket, path: path, accessGroups: AccessGroups.standard.groups)
                    },
                ])
            (result.firstLookup, result.firstLookupNarrowed) = (first[0], first[1])
            progress(
                "  an item whose access list names this program, pinned by its file's digest, and its twin without")
            (result.plainTwin, result.listedLookup) = try listedLookups(served)
            progress("  a .userPresence item read in this process with an evaluated context's proof, and its twin")
            (result.plainHere, result.provenLookup) = try provenLookups(path: path)
            progress("  the same lookups with this process and a keychaind of its own on one CPU")
            (result.inProcessOneCore, result.agentOneCore) = try lookupsOnOneCore(
                path: path, items: items, local: local, query: query)
            progress("  lookups per second through keychaind: one client, then four")
            result.oneClientPerSecond = try Self.throughput(
                clients: 1, socket: socket, path: path, items: items, query: query)
            result.fourClientsPerSecond = try Self.throughput(
                clients: 4, socket: socket, path: path, items: items, query: query)
        } catch {
            result.note = "not available: \(error)"
        }
        return result
    }

    /// The lookup of an item whose access list names this program pinned by its executable's
    /// SHA-256 (what "Always Allow" stores; keychaind checks the running file's digest on each
    /// read), interleaved with the same lookup of a twin item without a list. Both items are
    /// removed afterwards.
    private func listedLookups(_ served: AgentKeychain) throws -> (plain: Summary, listed: Summary) {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let hashed = Process()
        hashed.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        hashed.arguments = [executable]
        let output = Pipe()
        hashed.standardOutput = output
        try hashed.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        hashed.waitUntilExit()
        guard let digest = printed.split(separator: " ").first.map(String.init), digest.count == 64 else {
            throw BenchmarkFailure("sha256sum printed no digest for \(executable)")
        }
        let list = AccessList(applications: [TrustedApplication(.executable(path: executable, sha256: digest))])
        func item(_ account: String, listed: Bool) -> Item {
            var item = Item(
                class: .genericPassword,
                attributes: [.service: .string("bench.access-list"), .account: .string(account)])
            if listed { item.attributes[.access] = .data(list.serialized) }
            item.data = Data("secret".utf8)
            return item
        }
        let twins = ItemQuery(class: .genericPassword, attributes: [.service: .string("bench.access-list")])
        _ = try? served.delete(twins)
        _ = try served.add(item("plain", listed: false))
        _ = try served.add(item("listed", listed: true))
        defer { _ = try? served.delete(twins) }
        func lookup(_ account: String) -> ItemQuery {
            ItemQuery(
                class: .genericPassword,
                attributes: [.service: .string("bench.access-list"), .account: .string(account)])
        }
        guard try served.findFirst(lookup("listed"), includeData: true)?.data == Data("secret".utf8) else {
            throw BenchmarkFailure("keychaind did not give this program the item its access list names")
        }
        let timed = try interleaved(
            items: 1, query: { _ in lookup("plain") },
            [
                { _ = try served.findFirst($0, includeData: true) },
                { _ in _ = try served.findFirst(lookup("listed"), includeData: true) },
            ])
        return (timed[0], timed[1])
    }

    /// The lookup, in this process, of an item whose access control asks for user presence,
    /// offering the proof an evaluated `LAContext` carries (the engine refuses the first pass,
    /// takes the proof, and reads again: ``KeychainModel/CallAuthentication``), interleaved with
    /// the same lookup of a twin item without one. Nobody is asked: the proof is made here, as
    /// an evaluation in this process makes it. Both items are removed afterwards.
    private func provenLookups(path: String) throws -> (plain: Summary, proven: Summary) {
        var configuration = lifecycle.configuration
        configuration.userVerifier = PolkitUserVerifier()
        let local = try KeychainDatabase.open(at: path, configuration: configuration)
        func item(_ account: String, asking: Bool) -> Item {
            var item = Item(
                class: .genericPassword, attributes: [.service: .string("bench.presence"), .account: .string(account)])
            if asking {
                // SecAccessControlCreateFlags.userPresence.
                item.attributes[.accessControl] = .data(StoredAccessControl(flags: 1 << 0, protection: "ak").serialized)
            }
            item.data = Data("secret".utf8)
            return item
        }
        let twins = ItemQuery(class: .genericPassword, attributes: [.service: .string("bench.presence")])
        _ = try? local.delete(twins)
        _ = try local.add(item("plain", asking: false))
        _ = try local.add(item("guarded", asking: true))
        defer { _ = try? local.delete(twins) }
        let proof = OwnerProofs.thisProcess.make(for: try ProcessSubject.current(), lifetime: OwnerProofs.longestLifetime)
        func lookup(_ account: String) -> ItemQuery {
            var query = ItemQuery(
                class: .genericPassword, attributes: [.service: .string("bench.presence"), .account: .string(account)])
            query.authenticationUI = .allow
            query.ownerProof = proof
            return query
        }
        guard try local.findFirst(lookup("guarded"), includeData: true)?.data == Data("secret".utf8) else {
            throw BenchmarkFailure("the engine did not take the proof for the guarded item")
        }
        // The proof lasts 300 s; a run that outlasts it would ask polkit, and fail.
        let timed = try interleaved(
            items: 1, query: { _ in lookup("plain") },
            [
                { _ = try local.findFirst($0, includeData: true) },
                { _ in _ = try local.findFirst(lookup("guarded"), includeData: true) },
            ])
        return (timed[0], timed[1])
    }

    /// What a short process pays for its first lookup: a new connection (authenticated with its
    /// first call), narrowed to `accessGroups` first when given (a process that sets
    /// `KEYCHAIN_ACCESS_GROUPS`: one `UseAccessGroups` round trip more), then closed.
    static func firstLookup(_ query: ItemQuery, socket: String, path: String, accessGroups: [String]?) throws {
        let connection = try AgentConnection(socketPath: socket, accessGroups: accessGroups)
        defer { connection.close() }
        _ = try connection.keychain(at: path).findFirst(query, includeData: true)
    }

    /// The interleaved lookups again, with this thread and a `keychaind` of its own held on the
    /// one CPU this thread is on (``OneCore``): what a lookup through the agent costs when neither
    /// side has to wake another core.
    private func lookupsOnOneCore(
        path: String, items: Int, local: KeychainDatabase, query: (Int) -> ItemQuery
    ) throws -> (inProcess: Summary, agent: Summary) {
        try OneCore.run { _ in
            let directory = scratch + "/lookups-one-core"
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: directory + "/agent.sock",
                environment: lifecycle.childEnvironment(keychain: path))
            defer { withExtendedLifetime(agent) {} }
            let served = try AgentConnection(socketPath: directory + "/agent.sock").keychain(at: path)
            let timed = try interleaved(
                items: items, query: query,
                [
                    { _ = try local.findFirst($0, includeData: true) },
                    { _ = try served.findFirst($0, includeData: true) },
                ])
            return (timed[0], timed[1])
        }
    }

    /// Times `steps` one after the other in each round, all on the same random item: the warm-up
    /// rounds, then ``BenchmarkOptions/iterations`` measured ones. One summary per step, in order.
    private func interleaved(
        items: Int, query: (Int) -> ItemQuery, _ steps: [(ItemQuery) throws -> Void]
    ) throws -> [Summary] {
        var random = SystemRandomNumberGenerator()
        var samples = [[UInt64]](repeating: [], count: steps.count)
        for round in 0..<(options.warmup + options.iterations) {
            let wanted = query(Int.random(in: 0..<items, using: &random))
            for (index, step) in steps.enumerated() {
                let time = try Clock.time { try step(wanted) }
                if round >= options.warmup { samples[index].append(time) }
            }
        }
        return samples.map { Summary(nanoseconds: $0) }
    }

    /// How many lookups fill the agent's caches before its resident memory is read.
    static let memoryLookups = 2_000

    /// The agent's resident memory (`VmRSS` of its `/proc/PID/status`) after it has served
    /// ``memoryLookups`` lookups with their secrets, of random items of the keychain at `path`
    /// (``BenchmarkOptions/agentMemoryItems``, 100,000), on an agent of its own.
    func memory(path: String, items: Int) -> (bytes: Int64?, note: String?) {
        do {
            let socket = scratch + "/agent-memory/agent.sock"
            try FileManager.default.createDirectory(
                atPath: scratch + "/agent-memory", withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: socket, environment: lifecycle.childEnvironment(keychain: path))
            defer { withExtendedLifetime(agent) {} }
            let served = try AgentConnection(socketPath: socket).keychain(at: path)
            let workload = Workload(count: items, accountsPerService: accountsPerService)
            var random = SystemRandomNumberGenerator()
            for _ in 0..<min(Self.memoryLookups, items * 4) {
                let index = Int.random(in: 0..<items, using: &random)
                let (service, account) = workload.name(of: index)
                let query = ItemQuery(
                    class: .genericPassword, attributes: [.service: .string(service), .account: .string(account)])
                // The engine's timed operations may have changed a secret, never removed the item.
                guard try served.findFirst(query, includeData: true)?.data != nil else {
                    throw BenchmarkFailure("keychaind did not return item \(index)")
                }
            }
            guard let bytes = ResidentMemory.of(pid: agent.pid) else {
                throw BenchmarkFailure("no VmRSS in /proc/\(agent.pid)/status")
            }
            return (bytes, nil)
        } catch {
            return (nil, "not available: \(error)")
        }
    }

    /// ``BenchmarkOptions/agentConnections`` (1,000) connections to one agent, all open at once, each making a
    /// lookup from one of 16 threads while every other connection stays open; then a second
    /// round on the same connections. Returns how many lookups failed (an error, or no item):
    /// the target is none.
    func concurrentConnections(path: String, items: Int) -> (errors: Int?, note: String?) {
        do {
            let socket = scratch + "/agent-connections/agent.sock"
            try FileManager.default.createDirectory(
                atPath: scratch + "/agent-connections", withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            let agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: socket, environment: lifecycle.childEnvironment(keychain: path))
            defer { withExtendedLifetime(agent) {} }
            let workload = Workload(count: items, accountsPerService: accountsPerService)
            let failures = FailureCount()
            var keychains: [AgentKeychain] = []
            for _ in 0..<options.agentConnections {
                // A connection that cannot be made counts as an error, not as the end of the row.
                if let connection = try? AgentConnection(socketPath: socket) {
                    keychains.append(connection.keychain(at: path))
                } else {
                    failures.add()
                }
            }
            let all = keychains
            let threads = 16
            let group = DispatchGroup()
            for thread in 0..<threads {
                group.enter()
                Thread.detachNewThread {
                    for _ in 0..<2 {
                        for number in stride(from: thread, to: all.count, by: threads) {
                            let index = (number * 7919) % items
                            let (service, account) = workload.name(of: index)
                            let query = ItemQuery(
                                class: .genericPassword,
                                attributes: [.service: .string(service), .account: .string(account)])
                            // An error, or no item: the timed operations change secrets, never remove items.
                            if (try? all[number].findFirst(query, includeData: true))?.data == nil {
                                failures.add()
                            }
                        }
                    }
                    group.leave()
                }
            }
            group.wait()
            withExtendedLifetime(all) {}
            return (failures.value, nil)
        } catch {
            return (nil, "not available: \(error)")
        }
    }

    /// Lookups per second of `clients` clients, each on its own thread and connection.
    static func throughput(
        clients: Int, socket: String, path: String, items: Int, query: @escaping @Sendable (Int) -> ItemQuery
    ) throws -> Double {
        let keychains = try (0..<clients).map { _ in try AgentConnection(socketPath: socket).keychain(at: path) }
        let failures = FailureCount()
        let group = DispatchGroup()
        let start = Clock.now()
        for (number, keychain) in keychains.enumerated() {
            group.enter()
            Thread.detachNewThread {
                for index in 0..<throughputLookups
                where (try? keychain.findFirst(query((index * 7 + number) % items))) == nil {
                    failures.add()
                }
                group.leave()
            }
        }
        group.wait()
        let seconds = Double(Clock.now() - start) / 1e9
        guard failures.value == 0 else { throw BenchmarkFailure("\(failures.value) lookups through keychaind failed") }
        return Double(clients * throughputLookups) / seconds
    }
}

/// A count several threads add to.
private final class FailureCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}

/// ``AgentLookups``' figures.
struct AgentLookupResult: Codable, Sendable {
    var items: Int
    /// One lookup (with its secret) in this process's engine.
    var inProcess: Summary?
    /// The same lookup served by `keychaind` over its socket.
    var agent: Summary?
    /// A request-sized message to another process and back (``SocketEcho``), interleaved with them.
    var roundTrip: Summary?
    /// The lookup in this process, and through a `keychaind` of its own, with both held on one
    /// CPU (``OneCore``), interleaved.
    var inProcessOneCore: Summary?
    var agentOneCore: Summary?
    /// A new connection's first lookup (``AgentLookups/firstLookup(_:socket:path:accessGroups:)``),
    /// and the same with the connection narrowed to the standard groups first, interleaved.
    var firstLookup: Summary?
    var firstLookupNarrowed: Summary?
    /// A lookup through keychaind of an item without an access list, interleaved with its twin
    /// whose list names this program pinned by digest (``AgentLookups/listedLookups(_:)``).
    var plainTwin: Summary?
    var listedLookup: Summary?
    /// A lookup in this process of an item without access control, interleaved with its twin
    /// that asks for user presence, read offering an evaluated context's proof
    /// (``AgentLookups/provenLookups(path:)``).
    var plainHere: Summary?
    var provenLookup: Summary?
    var oneClientPerSecond: Double?
    var fourClientsPerSecond: Double?
    /// Why the figures are missing.
    var note: String?
    /// The agent's resident memory after serving lookups on a keychain of ``memoryItems``
    /// items, in bytes.
    var memoryBytes: Int64?
    var memoryItems: Int?
    /// Why the memory row is missing.
    var memoryNote: String?
    /// Client connections open at once, and how many of their lookups failed.
    var concurrentConnections: Int?
    var concurrentErrors: Int?
    /// Why the concurrency row is missing.
    var concurrentNote: String?

    init(items: Int) { self.items = items }

    /// A lookup through the agent ÷ the same lookup in this process (medians).
    var agentOverInProcess: Double? {
        guard let agent, let inProcess else { return nil }
        return agent.medianMicroseconds / inProcess.medianMicroseconds
    }

    /// The same ratio with this process and the agent on one CPU (medians).
    var agentOverInProcessOneCore: Double? {
        guard let agentOneCore, let inProcessOneCore else { return nil }
        return agentOneCore.medianMicroseconds / inProcessOneCore.medianMicroseconds
    }

    /// What the agent adds to the lookup beyond the bare socket round trip, in microseconds
    /// (medians): the agent's work and its client's.
    var agentOverhead: Double? {
        guard let agent, let inProcess, let roundTrip else { return nil }
        return agent.medianMicroseconds - inProcess.medianMicroseconds - roundTrip.medianMicroseconds
    }

    /// Four clients' lookups per second ÷ one client's.
    var fourOverOne: Double? {
        guard let one = oneClientPerSecond, let four = fourClientsPerSecond, one > 0 else { return nil }
        return four / one
    }
}
