import Foundation
import KeychainClient
import KeychainCore
import KeychainLibc

/// A lookup through a `keychaind` that a hostile client of the same user is trying to exhaust,
/// interleaved with the same lookup through an idle `keychaind` on the same keychain (the floor):
/// the agent's limits (`DBusServerLimits`) are what keep the first near the second.
///
/// The load, from this process: ``idleConnections`` authenticated connections that never send
/// a message, and ``halfSentMessages`` connections that each announce a 16 MiB message and
/// send half of it, more than the agent's budget for messages still arriving (256 MiB).
struct AgentSaturation {
    let options: BenchmarkOptions
    let lifecycle: Lifecycle
    let scratch: String
    let accountsPerService: Int

    static let idleConnections = 1_000
    static let halfSentMessages = 24

    func run(path: String, items: Int) -> AgentSaturationResult {
        var result = AgentSaturationResult(items: items)
        var hostile: [Int32] = []
        defer { for fd in hostile { close(fd) } }
        do {
            let idleAgent = try agent("saturation-idle", path: path)
            let busyAgent = try agent("saturation-busy", path: path)
            defer { withExtendedLifetime((idleAgent, busyAgent)) {} }
            let idle = try AgentConnection(socketPath: idleAgent.socket).keychain(at: path)
            let busy = try AgentConnection(socketPath: busyAgent.socket).keychain(at: path)
            let workload = Workload(count: items, accountsPerService: accountsPerService)
            func query(_ index: Int) -> ItemQuery {
                let (service, account) = workload.name(of: index)
                return ItemQuery(
                    class: .genericPassword, attributes: [.service: .string(service), .account: .string(account)])
            }
            // Both connections are made (and authenticated) before the load.
            for keychain in [idle, busy] {
                guard try keychain.findFirst(query(items / 2), includeData: true)?.data != nil else {
                    throw BenchmarkFailure("keychaind did not return the item")
                }
            }
            hostile = try load(busyAgent.socket, &result)
            result.agentResidentBytes = ResidentMemory.of(pid: busyAgent.agent.pid)
            var samples: ([UInt64], [UInt64]) = ([], [])
            var random = SystemRandomNumberGenerator()
            for round in 0..<(options.warmup + options.iterations) {
                let wanted = query(Int.random(in: 0..<items, using: &random))
                let a = try Clock.time { _ = try idle.findFirst(wanted, includeData: true) }
                let b = try Clock.time { _ = try busy.findFirst(wanted, includeData: true) }
                if round >= options.warmup {
                    samples.0.append(a)
                    samples.1.append(b)
                }
            }
            result.idle = Summary(nanoseconds: samples.0)
            result.saturated = Summary(nanoseconds: samples.1)
        } catch {
            result.note = "not available: \(error)"
        }
        return result
    }

    private func agent(_ name: String, path: String) throws -> (agent: BenchAgent, socket: String) {
        let directory = scratch + "/" + name
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let socket = directory + "/agent.sock"
        let agent = try BenchAgent.start(
            lifecycle.agentExecutable, socket: socket, environment: lifecycle.childEnvironment(keychain: path))
        return (agent, socket)
    }

    /// Opens the hostile connections; returns their descriptors (kept open while measuring).
    private func load(_ socket: String, _ result: inout AgentSaturationResult) throws -> [Int32] {
        var fds: [Int32] = []
        let authenticate = [0] + Array("AUTH EXTERNAL \(hexUID())\r\nBEGIN\r\n".utf8)
        for _ in 0..<(Self.idleConnections + Self.halfSentMessages) {
            let fd = try AgentConnection.connect(socket, timeout: .seconds(10))
            fds.append(fd)
            guard Self.send(fd, authenticate) else { throw BenchmarkFailure("the agent closed a new connection") }
        }
        result.idleConnections = Self.idleConnections
        // A method call's fixed header announcing a 16 MiB body, then half of it.
        let announced: UInt32 = (16 << 20) - 256
        let header: [UInt8] =
            [0x6C, 1, 0, 1] + withUnsafeBytes(of: announced.littleEndian, Array.init) + [1, 0, 0, 0, 0, 0, 0, 0]
        let half = [UInt8](repeating: 0, count: 8 << 20)
        var cutOff = 0
        for fd in fds.suffix(Self.halfSentMessages) {
            _ = Self.send(fd, header)
            if !Self.send(fd, half) { cutOff += 1 }
        }
        result.halfSentMessages = Self.halfSentMessages
        result.halfSentCutOff = cutOff
        return fds
    }

    private func hexUID() -> String { String(getuid()).utf8.map { String(format: "%02x", $0) }.joined() }

    /// Sends everything; `false` once the agent has closed the connection.
    private static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }
}

/// ``AgentSaturation``'s figures.
struct AgentSaturationResult: Codable, Sendable {
    var items: Int
    /// The lookup through an idle `keychaind` (the floor).
    var idle: Summary?
    /// The same lookup, interleaved, through the `keychaind` under load.
    var saturated: Summary?
    var idleConnections: Int?
    var halfSentMessages: Int?
    /// How many half-sent messages the agent cut off while they were sent (its budget).
    var halfSentCutOff: Int?
    /// The loaded agent's resident memory once the load is in place.
    var agentResidentBytes: Int64?
    /// Why the figures are missing.
    var note: String?

    init(items: Int) { self.items = items }

    /// The loaded agent's lookup ÷ the idle one's (medians).
    var ratio: Double? {
        guard let idle, let saturated else { return nil }
        return saturated.medianMicroseconds / idle.medianMicroseconds
    }
}
