import Foundation
import KeychainClient
import KeychainCore

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
            var random = SystemRandomNumberGenerator()
            var inProcess: [UInt64] = []
            var throughAgent: [UInt64] = []
            for round in 0..<(options.warmup + options.iterations) {
                let wanted = query(Int.random(in: 0..<items, using: &random))
                let here = try Clock.time { _ = try local.findFirst(wanted, includeData: true) }
                let there = try Clock.time { _ = try served.findFirst(wanted, includeData: true) }
                if round >= options.warmup {
                    inProcess.append(here)
                    throughAgent.append(there)
                }
            }
            result.inProcess = Summary(nanoseconds: inProcess)
            result.agent = Summary(nanoseconds: throughAgent)
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
    var oneClientPerSecond: Double?
    var fourClientsPerSecond: Double?
    /// Why the figures are missing.
    var note: String?

    init(items: Int) { self.items = items }

    /// A lookup through the agent ÷ the same lookup in this process (medians).
    var agentOverInProcess: Double? {
        guard let agent, let inProcess else { return nil }
        return agent.medianMicroseconds / inProcess.medianMicroseconds
    }

    /// Four clients' lookups per second ÷ one client's.
    var fourOverOne: Double? {
        guard let one = oneClientPerSecond, let four = fourClientsPerSecond, one > 0 else { return nil }
        return four / one
    }
}
