import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainLibc
import SeededRandom
import Testing

@testable import KeychainAgent

/// Fuzzed D-Bus traffic for the agent: what one client connection sends after authenticating.
struct AgentFuzzer {
    var random: SplitMix64

    /// What the server is expected to do with a message.
    enum Kind: CaseIterable {
        /// A well-framed call the dispatcher refuses: a method of the agent with the wrong
        /// signature, an unknown member, path or interface, or a standard interface's method.
        case wrongSignature
        /// A well-framed signal, method return or error nobody asked for.
        case unsolicited
        /// A valid message with a few bytes flipped, overwritten or inserted.
        case mutated
        /// A valid header (its signature field included) over a body of random bytes.
        case garbageBody
        /// A prefix of a valid message: the stream is out of step from there on.
        case truncated
        /// A header whose body or header-field length is far past any limit.
        case oversizedLength
        /// Random bytes.
        case randomBytes
    }

    static let agentSignatures: [String: String] = Dictionary(
        uniqueKeysWithValues: AgentInterface.all.map { method in
            (method.name, method.inputs.map(\.type.signature).joined())
        })

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func byte() -> UInt8 { UInt8.random(in: 0...255, using: &random) }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in byte() } }
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    mutating func name() -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
        return String((0..<int(1...12)).map { _ in letters[int(0...letters.count - 1)] })
    }

    mutating func text() -> String {
        let pieces = ["", "a", "é", "🔑", " ", "/", "..", "%", "\\", "login.keychain-db", "\u{7F}", "x"]
        return (0..<int(0...8)).map { _ in pieces[int(0...pieces.count - 1)] }.joined()
    }

    /// A random value, `depth` levels of containers at most.
    mutating func value(depth: Int = 3) -> DBusValue {
        switch int(0...(depth > 0 ? 16 : 11)) {
        case 0: return .byte(byte())
        case 1: return .boolean(chance(50))
        case 2: return .int16(Int16.random(in: .min ... .max, using: &random))
        case 3: return .uint32(UInt32.random(in: 0 ... .max, using: &random))
        case 4: return .int64(Int64.random(in: .min ... .max, using: &random))
        case 5: return .double(Double(Int32.random(in: .min ... .max, using: &random)) / 7)
        case 6, 7: return .string(text())
        case 8: return .objectPath("/" + (0..<int(0...3)).map { _ in name() }.joined(separator: "/"))
        case 9: return .signature(["", "s", "a{sv}", "(ii)", "ay"][int(0...4)])
        case 10, 11: return .bytes(bytes(int(0...40)))
        case 12: return .array(.string, (0..<int(0...4)).map { _ in .string(text()) })
        case 13, 14:
            return .stringVariantDictionary(
                Dictionary(
                    (0..<int(0...4)).map { _ in (name(), value(depth: depth - 1)) }, uniquingKeysWith: { a, _ in a })
            )
        case 15: return .structure((0..<int(1...3)).map { _ in value(depth: depth - 1) })
        default: return .variant(value(depth: depth - 1))
        }
    }

    /// A well-framed call that no handler of the agent runs.
    mutating func refusedCall() -> DBusMessage {
        let member: String
        var path = AgentInterface.objectPath
        var interface: String? = AgentInterface.name
        switch int(0...9) {
        case 0: member = name()
        case 1:
            path = "/" + name()
            member = AgentInterface.all[int(0...AgentInterface.all.count - 1)].name
        case 2:
            interface =
                [
                    "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Introspectable",
                    "org.freedesktop.DBus.Properties", "org.freedesktop.DBus", "org." + name(),
                ][int(0...4)]
            member = ["Ping", "GetMachineId", "Introspect", "Get", "GetAll", "Set", "Hello", name()][int(0...7)]
        case 3:
            interface = nil
            member = AgentInterface.all[int(0...AgentInterface.all.count - 1)].name
        default:
            member = AgentInterface.all[int(0...AgentInterface.all.count - 1)].name
        }
        var body = (0..<int(0...4)).map { _ in value() }
        // Never the agent's own signature: a matching call would run for real.
        if interface == nil || interface == AgentInterface.name, let expected = Self.agentSignatures[member] {
            while body.map(\.type.signature).joined() == expected { body.append(value()) }
        }
        var message = DBusMessage.methodCall(path: path, interface: interface, member: member, body: body)
        if chance(20) { message.flags = .noReplyExpected }
        return message
    }

    mutating func unsolicited() -> DBusMessage {
        let body = (0..<int(0...3)).map { _ in value() }
        switch int(0...2) {
        case 0:
            return .signal(path: "/" + name(), interface: "org." + name(), member: name(), body: body)
        case 1:
            var reply = DBusMessage.methodReturn(to: refusedCall(), body: body)
            reply.replySerial = UInt32.random(in: 1 ... .max, using: &random)
            return reply
        default:
            var error = DBusMessage.error(to: refusedCall(), name: "org.example.Error", message: text())
            error.replySerial = UInt32.random(in: 1 ... .max, using: &random)
            return error
        }
    }

    /// The message's wire form in a random byte order, with a random serial (a `Peer.Ping` in its
    /// place should a random value not be encodable: the result is always well framed).
    mutating func encoded(_ message: DBusMessage) -> [UInt8] {
        var message = message
        message.serial = UInt32.random(in: 1 ... .max, using: &random)
        let order: DBusByteOrder = chance(50) ? .littleEndian : .bigEndian
        if let bytes = try? message.encoded(byteOrder: order) { return bytes }
        var ping = DBusMessage.methodCall(path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
        ping.serial = message.serial
        return (try? ping.encoded(byteOrder: order)) ?? []
    }

    /// One fuzzed message of `kind`.
    mutating func message(_ kind: Kind) -> [UInt8] {
        switch kind {
        case .wrongSignature: return encoded(refusedCall())
        case .unsolicited: return encoded(unsolicited())
        case .mutated:
            var bytes = encoded(chance(70) ? refusedCall() : unsolicited())
            for _ in 0..<int(1...3) {
                let position = int(0...bytes.count - 1)
                switch int(0...2) {
                case 0: bytes[position] ^= UInt8(1 << int(0...7))
                case 1: bytes[position] = [0, 0xFF, 0x7F, 0x80][int(0...3)]
                default: bytes.insert(contentsOf: self.bytes(int(1...4)), at: position)
                }
            }
            return bytes
        case .garbageBody:
            var message = refusedCall()
            if message.body.isEmpty { message.body = [.string(text())] }
            var bytes = encoded(message)
            let bodyLength = Int(Self.uint32(bytes, at: 4))
            guard bodyLength > 0, bodyLength <= bytes.count else { return bytes }
            for index in (bytes.count - bodyLength)..<bytes.count { bytes[index] = byte() }
            return bytes
        case .truncated:
            let bytes = encoded(chance(50) ? refusedCall() : unsolicited())
            return Array(bytes.prefix(int(1...bytes.count - 1)))
        case .oversizedLength:
            var bytes = encoded(refusedCall())
            // Body length (offset 4) or header-field array length (offset 12), in the message's
            // own byte order: past 128 MiB, past the server's limit, or just wrong.
            let offset = chance(50) ? 4 : 12
            let values: [UInt32] = [.max, 0x8000_0000, 0x0800_0001, 16 << 20 + 1, UInt32(int(0...1 << 20))]
            let value = values[int(0...4)]
            Self.setUInt32(&bytes, at: offset, value)
            return bytes
        case .randomBytes:
            var bytes = self.bytes(int(1...512))
            if chance(30) { bytes[0] = chance(50) ? UInt8(ascii: "l") : UInt8(ascii: "B") }
            return bytes
        }
    }

    /// A message's UInt32 at `offset`, in its byte order (`l` little, `B` big).
    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        let raw = (0..<4).map { UInt32(bytes[offset + $0]) }
        return bytes[0] == UInt8(ascii: "l")
            ? raw[0] | raw[1] << 8 | raw[2] << 16 | raw[3] << 24 : raw[3] | raw[2] << 8 | raw[1] << 16 | raw[0] << 24
    }

    static func setUInt32(_ bytes: inout [UInt8], at offset: Int, _ value: UInt32) {
        for index in 0..<4 {
            let shift = bytes[0] == UInt8(ascii: "l") ? 8 * index : 8 * (3 - index)
            bytes[offset + index] = UInt8(truncatingIfNeeded: value >> shift)
        }
    }

    /// The messages of one connection: a few dozen well-framed ones the server answers and
    /// keeps the connection for (`before`), then perhaps a few mutated ones and one that makes the
    /// server close the connection (`after`: any of them may leave the stream out of step).
    mutating func batch(limit: Int) -> (before: [UInt8], after: [UInt8], count: Int) {
        var before: [UInt8] = []
        var after: [UInt8] = []
        let count = min(limit, int(1...64))
        var index = 0
        while index < count {
            let remaining = count - index
            if remaining <= 4, chance(50) {
                for last in 0..<remaining {
                    let terminal = last == remaining - 1 && chance(60)
                    after += message(
                        terminal ? [.garbageBody, .truncated, .oversizedLength, .randomBytes][int(0...3)] : .mutated)
                }
                break
            }
            before += message(chance(75) ? .wrongSignature : .unsolicited)
            index += 1
        }
        return (before, after, count)
    }
}

/// A client connection that writes raw bytes: the SASL handshake, then whatever it is given.
enum RawClient {
    static let handshake: [UInt8] =
        [0]
        + Array(
            "AUTH EXTERNAL \(Array(String(getuid()).utf8).map { String($0, radix: 16) }.joined())\r\nBEGIN\r\n".utf8)

    /// How one exchange ended.
    enum Outcome {
        /// The server answered the ping that followed `before`, then closed after `after`.
        case answered(received: Int)
        /// The server closed the connection before answering the ping (a message of `before`
        /// it could not frame).
        case closedEarly(received: Int)
        /// The server sent nothing for the time limit.
        case stalled
        /// Connecting failed.
        case refused
    }

    /// A `Peer.Ping` with serial `serial`, and the bytes its reply's `REPLY_SERIAL` field has
    /// in a little-endian reply (the server's byte order on the machines this runs on).
    static func ping(serial: UInt32) -> (call: [UInt8], replyMarker: [UInt8]) {
        var call = DBusMessage.methodCall(path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")
        call.serial = serial
        let marker: [UInt8] =
            [5, 1, UInt8(ascii: "u"), 0] + (0..<4).map { UInt8(truncatingIfNeeded: serial >> (8 * $0)) }
        return ((try? call.encoded(byteOrder: .littleEndian)) ?? [], marker)
    }

    /// Connects, authenticates, writes `before` and a ping; once the ping is answered writes
    /// `after`, half-closes and reads until the server closes. Reads all along: the server's
    /// replies must never fill the socket while it waits for the rest.
    static func exchange(socket path: String, before: [UInt8], after: [UInt8], serial: UInt32) -> Outcome {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .refused }
        defer { close(fd) }
        guard var address = try? AgentListener.socketAddress(path) else { return .refused }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return .refused }
        let (pingCall, marker) = ping(serial: serial)
        var payload = handshake + before + pingCall
        var offset = 0
        var received: [UInt8] = []
        var answered = false
        var halfClosed = false
        var buffer = [UInt8](repeating: 0, count: 65536)
        var poller = pollfd(fd: fd, events: 0, revents: 0)
        while true {
            let writing = offset < payload.count
            poller.events = Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0)
            poller.revents = 0
            let ready = poll(&poller, 1, 20_000)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return .stalled }
            if poller.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    received += buffer[0..<count]
                } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                    return answered ? .answered(received: received.count) : .closedEarly(received: received.count)
                }
                if !answered, Self.contains(received, marker) {
                    answered = true
                    payload += after
                }
            }
            if writing, poller.revents & Int16(POLLOUT) != 0 {
                let sent = payload[offset...].withUnsafeBytes {
                    send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if sent > 0 { offset += sent }
                if sent < 0 && errno != EAGAIN && errno != EINTR {
                    return answered ? .answered(received: received.count) : .closedEarly(received: received.count)
                }
            }
            if answered, !halfClosed, offset == payload.count {
                halfClosed = true
                shutdown(fd, Int32(SHUT_WR))
            }
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start] == needle[0] && Array(haystack[start..<(start + needle.count)]) == needle
        }
    }
}

@Suite("Agent fuzz: hostile D-Bus traffic", .timeLimit(.minutes(10)))
struct AgentFuzzTests {
    struct Tally: Sendable {
        var messages = 0
        var connections = 0
        var answered = 0
        var closedEarly = 0
        var stalled = 0
        var refusedConnects = 0
        var received = 0

        mutating func add(_ other: Tally) {
            messages += other.messages
            connections += other.connections
            answered += other.answered
            closedEarly += other.closedEarly
            stalled += other.stalled
            refusedConnects += other.refusedConnects
            received += other.received
        }
    }

    /// One client thread's share: `messages` messages in batches, each batch a connection.
    static func client(socket: String, seed: UInt64, messages: Int) -> Tally {
        var fuzzer = AgentFuzzer(random: SplitMix64(seed: seed))
        var tally = Tally()
        while tally.messages < messages {
            let batch = fuzzer.batch(limit: messages - tally.messages)
            let serial = 0xC0DE_0000 | UInt32(truncatingIfNeeded: tally.connections & 0xFFFF)
            switch RawClient.exchange(socket: socket, before: batch.before, after: batch.after, serial: serial) {
            case .refused:
                tally.refusedConnects += 1
                if tally.refusedConnects > 100 { return tally }
                usleep(10_000)
                continue
            case .answered(let received):
                tally.answered += 1
                tally.received += received
            case .closedEarly(let received):
                tally.closedEarly += 1
                tally.received += received
            case .stalled:
                tally.stalled += 1
            }
            tally.messages += batch.count
            tally.connections += 1
        }
        return tally
    }

    /// Runs `clients` client threads (threads of their own, neither the cooperative pool nor
    /// Dispatch's global queue, which other tests may hold) and adds up their tallies.
    static func run(socket: String, clients: Int, messages: Int, seed: UInt64) async -> Tally {
        await withCheckedContinuation { continuation in
            let lock = NSLock()
            nonisolated(unsafe) var sum = Tally()
            nonisolated(unsafe) var finished = 0
            for index in 0..<clients {
                Thread.detachNewThread {
                    let tally = client(socket: socket, seed: seed &+ UInt64(index), messages: messages / clients)
                    let last = lock.withLock {
                        sum.add(tally)
                        finished += 1
                        return finished == clients
                    }
                    if last { continuation.resume(returning: lock.withLock { sum }) }
                }
            }
        }
    }

    @Test("100,000 fuzzed messages over many connections: the agent process survives and still answers Status")
    func fuzzTheAgent() async throws {
        let agent = try await AgentServiceTests.Running(groups: ["fuzz"])
        let pid = agent.process.processIdentifier
        let seed: UInt64 = 0xA6E7_F022
        let start = ContinuousClock.now
        let tally = await Self.run(socket: agent.socket, clients: 4, messages: 100_000, seed: seed)
        let elapsed = ContinuousClock.now - start

        #expect(tally.messages == 100_000, "seed \(seed): \(tally)")
        #expect(tally.refusedConnects == 0 && tally.stalled == 0, "the agent stopped serving (seed \(seed)): \(tally)")
        // The messages reached the dispatcher: most connections had their ping answered after them.
        #expect(tally.answered > tally.connections / 2, "seed \(seed): \(tally)")
        // Alive: the pid still names the worker, and it has not exited (nor been reaped).
        #expect(kill(pid, 0) == 0, "seed \(seed): the agent process is gone")
        var status: Int32 = 0
        #expect(waitpid(pid, &status, WNOHANG) == 0, "seed \(seed): the agent exited with status \(status)")
        #expect(agent.process.isRunning)

        let connection = try await agent.connection()
        let reply = try await AgentServiceTests.call(connection, AgentInterface.status.name, [.string("")])
        let entries = reply.first?.stringKeyedEntries
        #expect(
            entries?["accessGroups"] == .variant(.array(.string, [.string("fuzz")])), "\(String(describing: entries))")
        await connection.close()
        await agent.close()
        print("agent fuzz (seed \(seed)): \(tally) in \(elapsed)")
    }
}
