import Crypto
import Foundation
import KeychainLibc

/// An SSH signature through keychaind's agent against the same signature through OpenSSH's own
/// `ssh-agent` (issue 55: at most 1.5×), the same Ed25519 key added to both with `ssh-add`, each
/// asked by the same client over its socket in interleaved rounds; the floor is swift-crypto's
/// own Ed25519 signature in this process.
struct SSHAgentComparison {
    let options: BenchmarkOptions
    let lifecycle: Lifecycle
    let scratch: String
    let progress: (String) -> Void

    func run() -> SSHAgentResult {
        var result = SSHAgentResult()
        let directory = scratch + "/ssh"
        var openSSH: pid_t?
        var agent: BenchAgent?
        defer {
            if let openSSH { ChildProcess.stop(openSSH) }
            agent = nil
        }
        do {
            guard let sshAgent = Self.tool("ssh-agent"), let sshAdd = Self.tool("ssh-add"),
                let sshKeygen = Self.tool("ssh-keygen")
            else { throw BenchmarkFailure("not available: OpenSSH's client tools are not installed") }
            try FileManager.default.createDirectory(
                atPath: directory + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var environment = lifecycle.childEnvironment(keychain: directory + "/ssh.keychain-db")
            environment["KEYCHAIN_DEFAULT_PATH"] = nil
            environment["HOME"] = directory
            environment["XDG_DATA_HOME"] = directory + "/data"
            agent = try BenchAgent.start(
                lifecycle.agentExecutable, socket: directory + "/run/agent.sock", environment: environment)
            let ours = directory + "/run/ssh-agent.sock"
            let theirs = directory + "/openssh.sock"
            openSSH = try ChildProcess.start(sshAgent, ["-D", "-a", theirs], environment: environment).pid
            for socket in [ours, theirs] { try Self.waitUntilListening(socket) }

            let key = directory + "/id_ed25519"
            let made = try ChildProcess.run(
                sshKeygen, ["-q", "-t", "ed25519", "-N", "", "-C", "bench", "-f", key], environment: environment)
            guard made.status == 0 else { throw BenchmarkFailure("ssh-keygen failed") }
            for socket in [ours, theirs] {
                var added = environment
                added["SSH_AUTH_SOCK"] = socket
                let outcome = try ChildProcess.run(sshAdd, ["-q", key], environment: added)
                guard outcome.status == 0 else {
                    throw BenchmarkFailure(
                        "ssh-add to \(socket) failed: \(String(decoding: outcome.standardError, as: UTF8.self))")
                }
            }
            let line = try String(contentsOfFile: key + ".pub", encoding: .utf8).split(separator: " ")
            guard line.count >= 2, let blob = Data(base64Encoded: String(line[1])) else {
                throw BenchmarkFailure("unreadable public key")
            }
            progress(
                "  SSH: \(options.iterations) Ed25519 signatures through keychaind's agent and OpenSSH's ssh-agent")
            let request = Self.signRequest(blob: [UInt8](blob), data: [UInt8](repeating: 0x5a, count: 64))
            let clients = (ours: try AgentSocket(ours), theirs: try AgentSocket(theirs))
            let floorKey = Curve25519.Signing.PrivateKey()
            var samples = (ours: [UInt64](), theirs: [UInt64](), floor: [UInt64]())
            for round in 0..<(options.warmup + options.iterations) {
                let timedOurs = try clients.ours.time(request)
                let timedTheirs = try clients.theirs.time(request)
                let start = Clock.now()
                _ = try floorKey.signature(for: request)
                let floor = Clock.now() - start
                guard round >= options.warmup else { continue }
                samples.ours.append(timedOurs)
                samples.theirs.append(timedTheirs)
                samples.floor.append(floor)
            }
            result.ours = Summary(nanoseconds: samples.ours)
            result.openSSH = Summary(nanoseconds: samples.theirs)
            result.floor = Summary(nanoseconds: samples.floor)
        } catch {
            result.note = "\(error)"
        }
        return result
    }

    static func tool(_ name: String) -> String? {
        let path = "/usr/bin/" + name
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// Waits (at most ten seconds, not timed) until something accepts at `path`.
    static func waitUntilListening(_ path: String) throws {
        for _ in 0..<1_000 {
            if (try? AgentSocket(path)) != nil { return }
            usleep(10_000)
        }
        throw BenchmarkFailure("nothing listens at \(path)")
    }

    /// `SSH_AGENTC_SIGN_REQUEST` for `blob` over `data`, framed.
    static func signRequest(blob: [UInt8], data: [UInt8]) -> [UInt8] {
        func string(_ bytes: [UInt8]) -> [UInt8] { length(bytes.count) + bytes }
        let body: [UInt8] = [13] + string(blob) + string(data) + length(0)
        return length(body.count) + body
    }

    static func length(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
}

/// One connection to an SSH agent, timing a request until its whole answer has arrived.
final class AgentSocket {
    let socket: Int32

    init(_ path: String) throws {
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            throw BenchmarkFailure("cannot connect to \(path)")
        }
    }

    deinit { close(socket) }

    /// Sends `request` and reads the answer; nanoseconds from the send to the answer's last byte.
    /// - Throws: When the agent answers anything but a signature.
    func time(_ request: [UInt8]) throws -> UInt64 {
        let start = Clock.now()
        guard send(socket, request, request.count, Int32(MSG_NOSIGNAL)) == request.count,
            let header = read(4)
        else { throw BenchmarkFailure("the agent hung up") }
        let answer = read(header.reduce(0) { $0 << 8 | Int($1) })
        let elapsed = Clock.now() - start
        guard answer?.first == 14 else { throw BenchmarkFailure("the agent did not sign") }
        return elapsed
    }

    private func read(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + offset, count - offset, 0) }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }
}

/// An Ed25519 signature through each agent, and swift-crypto's own.
struct SSHAgentResult: Codable, Sendable {
    /// Through keychaind's agent socket.
    var ours: Summary?
    /// Through OpenSSH's `ssh-agent`.
    var openSSH: Summary?
    /// swift-crypto's Ed25519 signature in this process.
    var floor: Summary?
    /// Why the rows are missing.
    var note: String?

    /// Ours ÷ OpenSSH's: the target is ≤ 1.5×.
    var oursOverOpenSSH: Double? {
        guard let ours, let openSSH else { return nil }
        return ours.medianMicroseconds / openSSH.medianMicroseconds
    }

    /// Ours ÷ the floor.
    var oursOverFloor: Double? {
        guard let ours, let floor else { return nil }
        return ours.medianMicroseconds / floor.medianMicroseconds
    }
}
