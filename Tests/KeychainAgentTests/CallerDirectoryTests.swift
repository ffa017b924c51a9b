import CKeychainAgent
import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import KeychainLibc
import Testing

@testable import KeychainAgent

/// Accepts one client of `agent` and reads its credentials as `DBusServer` does at accept:
/// `SO_PEERCRED` and `SO_PEERPIDFD`. The caller closes both descriptors (`close(_:)`).
func acceptDBusCredentials(_ agent: TestAgent) throws -> (fd: Int32, credentials: DBusPeerCredentials) {
    let fd = try agent.listener.accept()
    var credentials = try DBusPeerCredentials(socket: fd)
    var pidFD: Int32 = -1
    var length = socklen_t(MemoryLayout<Int32>.size)
    if getsockopt(fd, SOL_SOCKET, ck_so_peerpidfd(), &pidFD, &length) == 0, pidFD >= 0 {
        credentials.pidFD = pidFD
    }
    return (fd, credentials)
}

/// Closes an accepted connection and its pidfd.
func closeAccepted(_ accepted: (fd: Int32, credentials: DBusPeerCredentials)) {
    close(accepted.fd)
    if let pidFD = accepted.credentials.pidFD { close(pidFD) }
}

@Suite("Caller directory: D-Bus credentials to identities")
struct CallerDirectoryTests {
    @Test("a child process gets the default groups; its next calls come from the cache")
    func childGetsDefaults() throws {
        let fixture = try ManifestFixture()
        let callers = CallerDirectory(resolver: fixture.resolver)
        let child = try Child.worker(["connect", fixture.agent.socketPath])
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let accepted = try acceptDBusCredentials(fixture.agent)
        defer { closeAccepted(accepted) }
        #expect(accepted.credentials.pid == child.pid && accepted.credentials.uid == getuid())
        #expect(try callers.accessGroups(for: accepted.credentials).groups == ManifestFixture.defaults.groups)
        let identity = try callers.identity(for: accepted.credentials)
        #expect(identity.tier == .unidentified && identity.pid == child.pid)
        // Without a pidfd (kernels before 6.5) the same process is found through pidfd_open.
        var withoutPidfd = accepted.credentials
        withoutPidfd.pidFD = nil
        #expect(try callers.accessGroups(for: withoutPidfd).groups == ManifestFixture.defaults.groups)
        #expect(callers.identifications == 1, "one identification, then the cache")
        #expect(callers.count == 1)
    }

    @Test("a manifest-bound executable gets its manifest's groups")
    func manifestBound() throws {
        let fixture = try ManifestFixture()
        let app = try fixture.install("app-a")
        try fixture.manifest(
            "a.toml", appID: "com.example.a", groups: ["com.example.a", "shared"], executables: [(app, nil)])
        let callers = CallerDirectory(resolver: fixture.resolver)
        let child = try Child(app, ["connect", fixture.agent.socketPath])
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let accepted = try acceptDBusCredentials(fixture.agent)
        defer { closeAccepted(accepted) }
        let identity = try callers.identity(for: accepted.credentials)
        #expect(identity.tier == .manifestBound(appID: "com.example.a", executable: app))
        #expect(try callers.accessGroups(for: accepted.credentials).groups == ["com.example.a", "shared"])
    }

    @Test("no credentials, or another uid (a setpriv 65534 client), is refused")
    func otherUIDRefused() throws {
        let callers = CallerDirectory(resolver: IdentityResolver(defaultGroups: AccessGroups(["user"])))
        #expect {
            try callers.accessGroups(for: nil)
        } throws: { ($0 as? AgentError)?.code == .peerRefused }

        // A socket anyone may connect to, so that the directory's own uid check is what refuses.
        let directory = try TemporaryDirectory()
        let worker = try directory.copyWorker(to: "worker")
        let path = directory.path + "/open.sock"
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(server) }
        var address = try AgentListener.socketAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0 && chmod(path, 0o666) == 0 && listen(server, 4) == 0)
        let child = try Child.worker(["connect", path], asNobody: true, executable: worker)
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let fd = accept(server, nil, nil)
        defer { close(fd) }
        let credentials = try DBusPeerCredentials(socket: fd)
        #expect(credentials.uid == 65534 && credentials.gid == 65534)
        #expect {
            try callers.accessGroups(for: credentials)
        } throws: { error in
            let agentError = error as? AgentError
            return agentError?.code == .peerRefused && agentError?.message.contains("uid 65534") == true
        }
        #expect(callers.identifications == 0 && callers.count == 0)
    }

    @Test("a dead pid is not served from the cache, and a reused pid gets its own identity")
    func deadAndReusedPid() throws {
        let fixture = try ManifestFixture()
        let app = try fixture.install("app-a")
        let other = try fixture.install("other")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["com.example.a"], executables: [(app, nil)])
        let callers = CallerDirectory(resolver: fixture.resolver)

        let first = try Child(app, ["connect", fixture.agent.socketPath])
        try #require(first.readLine() == "connected")
        let accepted = try acceptDBusCredentials(fixture.agent)
        defer { closeAccepted(accepted) }
        #expect(try callers.accessGroups(for: accepted.credentials).groups == ["com.example.a"])
        // What the connection keeps after its first call (as DBusConnection.attachment does).
        let kept = try #require(try callers.entry(for: accepted.credentials, known: nil, resolving: true))
        #expect(first.finish() == 0)
        // The process is gone: its cached identity must not answer, with or without its pidfd,
        // nor what its connection kept.
        var withoutPidfd = accepted.credentials
        withoutPidfd.pidFD = nil
        for credentials in [accepted.credentials, withoutPidfd] {
            #expect {
                try callers.accessGroups(for: credentials)
            } throws: { ($0 as? AgentError)?.code == .peerGone }
            #expect {
                try callers.entry(for: credentials, known: kept, resolving: true)
            } throws: { ($0 as? AgentError)?.code == .peerGone }
        }

        // Another executable under the same pid number.
        let reused = try Child(other, ["connect", fixture.agent.socketPath], reusing: first.pid)
        defer { reused.finish() }
        try #require(reused.readLine() == "connected")
        let newcomer = try acceptDBusCredentials(fixture.agent)
        defer { closeAccepted(newcomer) }
        #expect(newcomer.credentials.pid == accepted.credentials.pid)
        let identity = try callers.identity(for: newcomer.credentials)
        #expect(identity.tier == .unidentified && identity.accessGroups.groups == ManifestFixture.defaults.groups)
        // The old connection's pidfd names the dead process: the newcomer's cached identity is
        // not handed to whoever still holds that connection.
        #expect {
            try callers.accessGroups(for: accepted.credentials)
        } throws: { ($0 as? AgentError)?.code == .peerGone }
        // Nor does what the old connection kept: its pidfd names the dead process.
        #expect {
            try callers.entry(for: accepted.credentials, known: kept, resolving: true)
        } throws: { ($0 as? AgentError)?.code == .peerGone }
        #expect(callers.identifications == 2 && callers.connectionHits == 0)
    }

    @Test("a connection's caller is checked once; after an exec what the connection kept is not used")
    func connectionKeepsItsCaller() throws {
        let fixture = try ManifestFixture()
        let app = try fixture.install("app-a")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["com.example.a"], executables: [(app, nil)])
        let callers = CallerDirectory(resolver: fixture.resolver)
        let child = try Child(app, ["connect", fixture.agent.socketPath])
        defer {
            kill(child.pid, SIGKILL)  // by then it runs sleep 30
            child.finish()
        }
        try #require(child.readLine() == "connected")
        let accepted = try acceptDBusCredentials(fixture.agent)
        defer { closeAccepted(accepted) }
        // Not identified yet: an event loop's question (no resolving) gets no answer.
        #expect(try callers.entry(for: accepted.credentials, known: nil, resolving: false) == nil)
        #expect(callers.identifications == 0)
        let kept = try #require(try callers.entry(for: accepted.credentials, known: nil, resolving: true))
        #expect(kept.identity.accessGroups.groups == ["com.example.a"])
        // Later calls on the connection: what it kept, without identifying or the directory's cache.
        for _ in 0..<3 {
            let again = try #require(try callers.entry(for: accepted.credentials, known: kept, resolving: false))
            #expect(again.peer.process === kept.peer.process && again.identity == kept.identity)
        }
        #expect(callers.connectionHits == 3 && callers.identifications == 1)

        child.send("exec /bin/sleep 30")
        var exe = ""
        for _ in 0..<300 {
            exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/exe")) ?? ""
            if exe != app { break }
            usleep(10_000)
        }
        try #require(exe.hasSuffix("/sleep"))
        // Neither what the connection kept nor the directory's cache answers for the new program.
        #expect(try callers.entry(for: accepted.credentials, known: kept, resolving: false) == nil)
        let anew = try #require(try callers.entry(for: accepted.credentials, known: kept, resolving: true))
        #expect(
            anew.identity.tier == .unidentified && anew.identity.accessGroups.groups == ManifestFixture.defaults.groups)
        #expect(callers.identifications == 2 && callers.connectionHits == 3)
    }

    @Test("a caller that exec-s another program is identified anew")
    func execReidentifies() throws {
        let fixture = try ManifestFixture()
        let app = try fixture.install("app-a")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["com.example.a"], executables: [(app, nil)])
        let callers = CallerDirectory(resolver: fixture.resolver)
        let child = try Child(app, ["connect", fixture.agent.socketPath])
        defer {
            kill(child.pid, SIGKILL)  // by then it runs sleep 30
            child.finish()
        }
        try #require(child.readLine() == "connected")
        let accepted = try acceptDBusCredentials(fixture.agent)
        defer { closeAccepted(accepted) }
        #expect(try callers.accessGroups(for: accepted.credentials).groups == ["com.example.a"])
        child.send("exec /bin/sleep 30")
        var exe = ""
        for _ in 0..<300 {
            exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/exe")) ?? ""
            if exe != app { break }
            usleep(10_000)
        }
        try #require(exe.hasSuffix("/sleep"))
        let identity = try callers.identity(for: accepted.credentials)
        #expect(identity.tier == .unidentified && identity.accessGroups.groups == ManifestFixture.defaults.groups)
        #expect(callers.identifications == 2)
    }

    @Test("the cache keeps at most its capacity, dropping the least recently used")
    func capacity() throws {
        let fixture = try ManifestFixture()
        let callers = CallerDirectory(resolver: fixture.resolver, capacity: 2)
        var children: [Child] = []
        var connections: [(fd: Int32, credentials: DBusPeerCredentials)] = []
        defer {
            children.forEach { $0.finish() }
            connections.forEach { closeAccepted($0) }
        }
        for _ in 0..<3 {
            let child = try Child.worker(["connect", fixture.agent.socketPath])
            children.append(child)
            try #require(child.readLine() == "connected")
            connections.append(try acceptDBusCredentials(fixture.agent))
            _ = try callers.accessGroups(for: connections.last!.credentials)
            #expect(callers.count <= 2)
        }
        #expect(callers.identifications == 3)
        _ = try callers.accessGroups(for: connections[2].credentials)
        #expect(callers.identifications == 3, "the newest is cached")
        _ = try callers.accessGroups(for: connections[0].credentials)
        #expect(callers.identifications == 4, "the oldest was dropped")
    }
}

@Suite("keychaind in small: an AgentListener's socket served by DBusServer.serve, callers identified")
struct IdentifiedServiceTests {
    /// The worker's `serve-identified` (a process of its own: an in-process server starves under
    /// the parallel tests), started directly or through `systemd-socket-activate`.
    final class Server {
        let child: Child
        let socket: String

        init(directory: String, manifests: String, activated: Bool) throws {
            socket = directory + "/run/keychain/agent.sock"
            #expect(mkdir(directory + "/config", 0o700) == 0)
            let arguments = ["serve-identified", directory, manifests, "user"]
            if activated {
                #expect(mkdir(directory + "/run", 0o700) == 0 && mkdir(directory + "/run/keychain", 0o700) == 0)
                let activate = try requiredTool("systemd-socket-activate")
                child = try Child(activate, ["-l", socket, workerPath] + arguments)
            } else {
                // Variables naming another process: not activated, and cleared all the same.
                let env = try requiredTool("env")
                child = try Child(
                    env, ["LISTEN_PID=1", "LISTEN_FDS=1", "LISTEN_FDNAMES=agent", workerPath] + arguments)
            }
            // A wait for the socket to appear, not a time limit on anything measured.
            for _ in 0..<2_400 where access(socket, F_OK) != 0 { usleep(50_000) }
        }

        /// Runs `executable status <socket>` and returns its line.
        func status(_ executable: String = workerPath) throws -> String {
            try run(executable, ["status", socket])
        }

        deinit {
            kill(child.pid, SIGTERM)  // also a systemd-socket-activate that never started the worker
            child.finish()
        }
    }

    @Test(
        "the test's own D-Bus connection, a worker and a manifest-bound worker each get their groups; LISTEN_* naming another process are cleared"
    )
    func listenerServed() async throws {
        let fixture = try ManifestFixture()
        let app = try fixture.install("app-a")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["com.example.a"], executables: [(app, nil)])
        let server = try Server(
            directory: try fixture.root.make("agent", mode: 0o700), manifests: fixture.apps, activated: false)
        #expect(server.child.readLine() == "ready listener unset")

        let connection = try await DBusConnection.connect(to: .unixPath(server.socket))
        let reply = try await AgentServiceTests.call(connection, AgentInterface.status.name, [.string("")])
        let groups = reply.first?.stringKeyedEntries?["accessGroups"]
        #expect(groups == .variant(.array(.string, [.string("user")])) || groups == .array(.string, [.string("user")]))
        await connection.close()

        #expect(try server.status() == "groups user")
        #expect(try server.status(app) == "groups com.example.a")
    }

    @Test("under systemd-socket-activate the worker serves the passed socket and clears LISTEN_*")
    func socketActivation() throws {
        let fixture = try ManifestFixture()
        let server = try Server(
            directory: try fixture.root.make("agent", mode: 0o700), manifests: fixture.apps, activated: true)
        // The first connection starts the worker.
        #expect(try server.status() == "groups user")
        #expect(server.child.readLine() == "ready activated unset")
    }
}

@Suite("systemd socket activation")
struct SystemdActivationTests {
    @Test(
        "no socket unless LISTEN_PID is this process and LISTEN_FDS is at least 1",
        arguments: [
            [:], ["LISTEN_FDS": "1"], ["LISTEN_PID": "\(getpid())"], ["LISTEN_PID": "1", "LISTEN_FDS": "1"],
            ["LISTEN_PID": "\(getpid())", "LISTEN_FDS": "0"], ["LISTEN_PID": "\(getpid())", "LISTEN_FDS": "x"],
            ["LISTEN_PID": "x\(getpid())", "LISTEN_FDS": "1"],
        ])
    func notActivated(environment: [String: String]) {
        #expect(SystemdActivation.listeningSocket(environment: environment, unsettingVariables: false) == nil)
    }

    // That the variables leave the environment after reading, activated or not, is checked in
    // a process of its own (IdentifiedServiceTests): setenv here would race the parallel tests'
    // spawns, which read `environ` (posix_spawn failed with EFAULT in a full run).
}

@Suite("SO_PEERCRED: one reading for the D-Bus server and the agent")
struct PeerCredentialAgreementTests {
    @Test("DBusPeerCredentials(socket:) and PeerCredentials(socket:) agree, and with the child's /proc status")
    func agree() throws {
        let agent = try TestAgent()
        let child = try Child.worker(["connect", agent.socketPath])
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let fd = try agent.listener.accept()
        defer { close(fd) }
        let dbus = try DBusPeerCredentials(socket: fd)
        let peer = try PeerCredentials(socket: fd)
        #expect(dbus.pid == child.pid && peer.pid == child.pid)
        #expect(dbus.uid == peer.uid && dbus.gid == peer.gid)
        let status = try String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8)
        let uid = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(separator: "\t")
        let gid = status.split(separator: "\n").first { $0.hasPrefix("Gid:") }?.split(separator: "\t")
        #expect(uid.map { String($0[1]) } == String(dbus.uid) && gid.map { String($0[1]) } == String(dbus.gid))
        // Built from the D-Bus credentials with the connection's pidfd, the same process.
        var pidFD: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(fd, SOL_SOCKET, ck_so_peerpidfd(), &pidFD, &length) == 0)
        defer { close(pidFD) }
        let fromDBus = try PeerCredentials(uid: dbus.uid, gid: dbus.gid, pid: dbus.pid, pidFD: pidFD)
        #expect(fromDBus.pidfdSource == .peerPidfd && fromDBus.startTime == peer.startTime)
        #expect(fromDBus.executable == peer.executable && fromDBus.isStillTheSameProcess())
        #expect(fromDBus.process.fileDescriptor != pidFD, "a duplicate of its own")
        // A descriptor that is not a pidfd for the pid is refused, not trusted.
        #expect {
            try PeerCredentials(uid: dbus.uid, gid: dbus.gid, pid: dbus.pid, pidFD: fd)
        } throws: { ($0 as? AgentError)?.code == .peerGone }
    }
}
