import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainCore
import KeychainLibc
import Testing

/// The `keychaind` executable itself, started and stopped by pid: what a user's processes meet.
@Suite("keychaind")
struct KeychaindTests {
    /// `keychaind` built next to the test bundle.
    static let program: String = {
        URL(fileURLWithPath: workerPath).deletingLastPathComponent().path + "/keychaind"
    }()

    /// A running `keychaind` on a socket in a private directory, with its own home.
    final class Daemon {
        let directory: TemporaryDirectory
        let child: Child
        var socket: String { directory.path + "/run/agent.sock" }
        var home: String { directory.path + "/home" }

        /// - Parameters:
        ///   - directory: The directory of an agent that ran before (its keychains and socket).
        ///   - asNobody: Run it as uid/gid 65534 (its directory is handed over to that user).
        ///   - softFileLimit: Start it with this soft limit on open descriptors (a desktop's 1,024).
        ///   - environment: More `NAME=value` entries for its environment.
        init(
            reusing directory: TemporaryDirectory? = nil, asNobody: Bool = false, softFileLimit: Int? = nil,
            environment: [String] = []
        ) throws {
            let directory = try directory ?? Self.freshDirectory()
            self.directory = directory
            let socket = directory.path + "/run/agent.sock"
            let home = directory.path + "/home"
            var prefix = ["/usr/bin/env"]
            if let softFileLimit {
                var hard = rlimit()
                getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &hard)
                prefix = [try requiredTool("prlimit"), "--nofile=\(softFileLimit):\(hard.rlim_max)", "--"] + prefix
            }
            if asNobody {
                for path in [directory.path, directory.path + "/run", home] { chown(path, 65534, 65534) }
                prefix =
                    [try requiredTool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + prefix
            }
            child = try Child(
                prefix[0],
                Array(prefix.dropFirst()) + [
                    "-i", "HOME=\(home)", "XDG_DATA_HOME=\(home)/data", "XDG_CONFIG_HOME=\(home)/config",
                    "KEYCHAIN_UNSAFE_TEST_KDF=1", "PATH=/usr/bin:/bin",
                ] + environment + [KeychaindTests.program, "--socket", socket])
            // A wait for the agent to listen, not a time limit on anything measured.
            for _ in 0..<2_000 where !AgentConnection.isAnswering(at: socket) { usleep(5_000) }
            #expect(AgentConnection.isAnswering(at: socket), "keychaind answers on its socket")
        }

        static func freshDirectory() throws -> TemporaryDirectory {
            let directory = try TemporaryDirectory(mode: 0o700)
            _ = try directory.make("run", mode: 0o700)
            _ = try directory.make("home", mode: 0o700)
            return directory
        }

        func connect() throws -> AgentConnection { try AgentConnection(socketPath: socket) }

        func kill9() {
            kill(child.pid, SIGKILL)
            child.wait()
        }

        func stop() {
            kill(child.pid, SIGTERM)
            child.wait()
        }
    }

    @Test("an agent killed after 1,000 acknowledged writes loses none of them; its keychains come back locked")
    func killDuringWrites() throws {
        var daemon = try Daemon()
        let keychain = daemon.home + "/crash.keychain-db"
        let connection = try daemon.connect()
        _ = try connection.call(AgentInterface.create, .init(keychain: keychain, password: Data("pw".utf8)))
        // Far more writes than are waited for: the writer is still writing when the agent dies,
        // however far behind this test reads its output.
        let writer = try Child.worker(["write", daemon.socket, keychain, "20000"])
        var acknowledged: Set<Int> = []
        var killed = false
        while let line = writer.readLine() {
            let parts = line.split(separator: " ")
            if parts.first == "ok", let index = parts.last.flatMap({ Int($0) }) { acknowledged.insert(index) }
            if acknowledged.count == 1_000 && !killed {
                daemon.kill9()
                killed = true
            }
        }
        writer.finish()
        #expect(killed, "the agent was killed mid-way")
        #expect(acknowledged.count >= 1_000 && acknowledged.count < 20_000)

        daemon = try Daemon(reusing: daemon.directory)
        defer { daemon.stop() }
        let reopened = try daemon.connect().keychain(at: keychain)
        #expect(reopened.isLocked, "a restarted agent holds its keychains locked")
        try reopened.unlock(password: Data("pw".utf8))
        let found = try reopened.find(ItemQuery(class: .genericPassword), includeData: true)
        let stored = Set(
            found.compactMap { item -> Int? in
                guard case .string(let account)? = item.attributes[.account] else { return nil }
                #expect(item.data == Data("secret-\(account.dropFirst(5))".utf8))
                return Int(account.dropFirst(5))
            })
        #expect(acknowledged.isSubset(of: stored), "every acknowledged write survived")
        #expect(stored.count <= acknowledged.count + 1, "at most the write in flight was also committed")
    }

    @Test("1,000 client connections open at once are all served")
    func thousandConcurrentConnections() throws {
        // Started with a desktop's soft limit of 1,024 descriptors: each client holds a socket
        // and a pidfd in the agent, which raises its soft limit to the hard one.
        let daemon = try Daemon(softFileLimit: 1_024)
        defer { daemon.stop() }
        let clients = try Child.worker(["many", daemon.socket, "1000"])
        let answer = clients.readLine() ?? ""
        clients.finish()
        #expect(answer == "ok 2000", "every call on every connection was answered: \(answer)")
        #expect(AgentConnection.isAnswering(at: daemon.socket))
    }

    /// One process may hold 1,024 connections (DBusServerLimits); beyond that it is told so at
    /// once, and other processes are still served (issue 50, item 7).
    @Test("a process beyond its connection limit is refused at once with a clear error; others are served")
    func connectionLimitPerProcess() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let clients = try Child.worker(["many", daemon.socket, "1030"])
        let answer = clients.readLine() ?? ""
        #expect(answer.hasPrefix("ok 2048; first error: "), "1,024 connections, two calls each: \(answer)")
        #expect(answer.contains("too many connections are open"), "\(answer)")
        #expect(AgentConnection.isAnswering(at: daemon.socket), "another process is served meanwhile")
        clients.finish()
        #expect(AgentConnection.isAnswering(at: daemon.socket))
    }

    /// After `lock-keychain -a`, a root scan of the agent's memory finds neither the keychain's
    /// password nor an item's secret, which it received, decrypted and sent several times
    /// (issue 50, item 9: freed memory overwritten by the allocator, each request's stack cleared).
    @Test("after locking, a scan of the agent's memory finds neither the password nor a secret")
    func lockedAgentMemoryHoldsNoSecret() throws {
        #expect(getuid() == 0, "reading a non-dumpable process's memory needs root")
        let daemon = try Daemon()
        defer { daemon.stop() }
        func random(_ prefix: String) -> String {
            prefix + (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        }
        let password = random("pw-")
        let secret = random("sx-")
        let keychain = daemon.home + "/scan.keychain-db"
        let connection = try daemon.connect()
        _ = try connection.call(AgentInterface.create, .init(keychain: keychain, password: Data(password.utf8)))
        let handle = connection.keychain(at: keychain)
        let query = ItemQuery(class: .genericPassword, attributes: [.service: .string("scan")])
        _ = try handle.add(
            Item(class: .genericPassword, attributes: [.service: .string("scan")], data: Data(secret.utf8)))
        for _ in 0..<3 { #expect(try handle.findFirst(query, includeData: true)?.data == Data(secret.utf8)) }
        _ = try connection.call(AgentInterface.lock, .init(keychain: keychain))
        try handle.unlock(password: Data(password.utf8))
        #expect(try handle.findFirst(query, includeData: true)?.data == Data(secret.utf8))
        _ = try connection.call(AgentInterface.lockAll, DBusNoArguments())
        connection.close()
        usleep(200_000)
        let found = try MemoryScan.occurrences(of: [Array(password.utf8), Array(secret.utf8)], pid: daemon.child.pid)
        #expect(found == [0, 0], "copies of the password and of the secret left in the agent's memory")
    }

    @Test("a second agent for the same socket refuses to start while the first one runs")
    func oneAgentPerSocket() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let second = try Child(
            "/usr/bin/env",
            ["-i", "HOME=\(daemon.home)", KeychaindTests.program, "--socket", daemon.socket])
        var lines: [String] = []
        while let line = second.readLine() { lines.append(line) }
        #expect(second.finish() != 0)
        #expect(AgentConnection.isAnswering(at: daemon.socket), "the first agent still serves")
    }

    @Test("an agent leaves when its socket is removed")
    func leavesWhenTheSocketIsGone() throws {
        let daemon = try Daemon()
        unlink(daemon.socket)
        var status: Int32 = -1
        // The agent checks every two seconds; the wait is for its exit, not a limit on speed.
        for _ in 0..<3_000 {
            var raw: Int32 = 0
            if waitpid(daemon.child.pid, &raw, WNOHANG) == daemon.child.pid {
                status = (raw >> 8) & 0xff
                break
            }
            usleep(10_000)
        }
        #expect(status == 0, "keychaind exited by itself")
        if status != 0 { daemon.kill9() }
    }

    @Test("/proc/<agent>/mem is unreadable by another process of the same user")
    func memoryIsNotReadable() throws {
        // Root may read any process's memory: the agent and the reader both run as nobody.
        let daemon = try Daemon(asNobody: true)
        defer { daemon.stop() }
        let reader = try Child.worker(["readmem", String(daemon.child.pid), "0", "16"], asNobody: true)
        let answer = reader.readLine() ?? ""
        reader.finish()
        #expect(answer == "denied \(EACCES)", "\(answer)")
    }
}

/// Counts byte strings in another process's readable memory (`/proc/PID/maps` and
/// `/proc/PID/mem`; root reads a non-dumpable process's).
enum MemoryScan {
    static func occurrences(of needles: [[UInt8]], pid: Int32) throws -> [Int] {
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        let mem = open("/proc/\(pid)/mem", O_RDONLY)
        guard mem >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(mem) }
        var counts = [Int](repeating: 0, count: needles.count)
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[1].hasPrefix("r") else { continue }
            // Secrets live in anonymous memory, the heap and stacks; files mapped are the program's.
            if fields.count >= 6, !fields[5].hasPrefix("[heap") && !fields[5].hasPrefix("[stack") { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0] else { continue }
            var region = [UInt8](repeating: 0, count: Int(bounds[1] - bounds[0]))
            let read = region.withUnsafeMutableBytes { pread(mem, $0.baseAddress, $0.count, off_t(bounds[0])) }
            guard read > 0 else { continue }
            for (index, needle) in needles.enumerated() {
                counts[index] += count(needle, in: region[..<read])
            }
        }
        return counts
    }

    private static func count(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int {
        var found = 0
        haystack.withUnsafeBytes { bytes in
            needle.withUnsafeBytes { pattern in
                guard let base = bytes.baseAddress, let first = needle.first, !needle.isEmpty else { return }
                var offset = 0
                while bytes.count - offset >= pattern.count {
                    guard let hit = memchr(base + offset, Int32(first), bytes.count - offset - pattern.count + 1)
                    else { break }
                    let position = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(hit, pattern.baseAddress!, pattern.count) == 0 { found += 1 }
                    offset = position + 1
                }
            }
        }
        return found
    }
}
