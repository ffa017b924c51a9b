import Foundation
import KeychainAgent
import KeychainLibc
import Testing

@Suite("Peer credentials from the kernel")
struct PeerCredentialsTests {
    @Test(
        "a socketpair peer is this process: uid, gid, pid, start time, executable",
        arguments: [
            PeerCredentials.PidfdSource.peerPidfd, .pidfdOpen,
        ])
    func socketpairPeerIsSelf(source: PeerCredentials.PidfdSource) throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let peer = try PeerCredentials(socket: pair[0], preferring: source)
        #expect(peer.uid == getuid() && peer.gid == getgid() && peer.pid == getpid())
        #expect(peer.pidfdSource == source)
        #expect(peer.process.isAlive)
        let ownExe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(peer.executable?.path == ownExe)
        #expect(peer.isStillTheSameProcess())
        try peer.authorize(agentUID: getuid())
    }

    @Test("a child connected to a bound socket is identified by its own pid and executable")
    func childOverBoundSocket() throws {
        let agent = try TestAgent()
        let child = try Child.worker(["connect", agent.socketPath])
        #expect(child.readLine() == "connected")
        let (fd, peer) = try agent.acceptPeer()
        defer { close(fd) }
        #expect(peer.pid == child.pid)
        #expect(peer.pidfdSource == .peerPidfd)
        #expect(peer.executable?.path == workerPath)
        #expect(peer.isStillTheSameProcess())
        #expect(child.finish() == 0)
        #expect(!peer.isStillTheSameProcess(), "identity must die with the process")
        #expect(!peer.process.isAlive)
    }

    @Test("a peer that exec-s another program keeps its pid and socket but loses its identity")
    func execReplacesIdentity() throws {
        let agent = try TestAgent()
        let child = try Child.worker(["connect", agent.socketPath])
        #expect(child.readLine() == "connected")
        let (fd, peer) = try agent.acceptPeer()
        defer { close(fd) }
        #expect(peer.isStillTheSameProcess())
        child.send("exec /bin/sleep 30")
        // Wait until the kernel shows the new executable (bounded).
        var exe = ""
        for _ in 0..<300 {
            exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.pid)/exe")) ?? ""
            if exe != workerPath { break }
            usleep(10_000)
        }
        #expect(exe.hasSuffix("/sleep"), "same pid, now running sleep")
        #expect(peer.process.isAlive, "the pidfd still names the running process")
        #expect(!peer.isStillTheSameProcess(), "the exe changed: identity must be refused")
    }

    @Test(
        "a reused pid never inherits the identity of the process that connected",
        arguments: [
            PeerCredentials.PidfdSource.peerPidfd, .pidfdOpen,
        ])
    func pidReuse(source: PeerCredentials.PidfdSource) throws {
        let agent = try TestAgent()
        let first = try Child.worker(["connect", agent.socketPath])
        #expect(first.readLine() == "connected")
        let fd = try agent.listener.accept()
        defer { close(fd) }
        let peer = try PeerCredentials(socket: fd, preferring: source)
        let reusedPid = first.pid
        #expect(first.finish() == 0)
        // A new process under the same pid number (the kernel asked for it: clone3's set_tid).
        let reused = try Child(workerPath, ["connect", agent.socketPath], reusing: reusedPid)
        #expect(reused.pid == reusedPid)
        #expect(reused.readLine() == "connected")
        let newFD = try agent.listener.accept()
        defer { close(newFD) }
        #expect(kill(reusedPid, 0) == 0, "the pid number is alive again, in another process")
        #expect(!peer.isStillTheSameProcess(), "the old identity must stay dead")
        let newcomer = try PeerCredentials(socket: newFD, preferring: source)
        #expect(newcomer.pid == peer.pid)
        #expect(newcomer.startTime != peer.startTime || newcomer.process.fileDescriptor != peer.process.fileDescriptor)
        #expect(newcomer.isStillTheSameProcess())
        reused.finish()
    }

    @Test(
        "a peer that exited before it was examined is refused",
        arguments: [
            PeerCredentials.PidfdSource.peerPidfd, .pidfdOpen,
        ])
    func exitedPeerIsRefused(source: PeerCredentials.PidfdSource) throws {
        let agent = try TestAgent()
        let child = try Child.worker(["connect", agent.socketPath])
        #expect(child.readLine() == "connected")
        #expect(child.finish() == 0)
        let fd = try agent.listener.accept()
        defer { close(fd) }
        #expect {
            try PeerCredentials(socket: fd, preferring: source)
        } throws: { ($0 as? AgentError)?.code == .peerGone }
    }

    @Test("a client running as another uid (setpriv 65534) is refused")
    func otherUIDRefused() throws {
        // A socket that anyone may connect to, so the uid check itself is what refuses.
        let directory = try TemporaryDirectory()
        let worker = try directory.copyWorker(to: "worker")
        let path = directory.path + "/open.sock"
        let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(server) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0 && chmod(path, 0o666) == 0 && listen(server, 4) == 0)
        let child = try Child.worker(["connect", path], asNobody: true, executable: worker)
        #expect(child.readLine() == "connected")
        let fd = accept(server, nil, nil)
        defer { close(fd) }
        let peer = try PeerCredentials(socket: fd)
        #expect(peer.uid == 65534 && peer.gid == 65534)
        for allowingRoot in [false, true] {
            #expect {
                try peer.authorize(agentUID: getuid(), allowingRoot: allowingRoot)
            } throws: { error in
                let agentError = error as? AgentError
                return agentError?.code == .peerRefused && agentError?.message.contains("uid 65534") == true
            }
        }
        child.finish()
    }

    @Test("another uid cannot even reach the agent's socket in its 0700 directory")
    func otherUIDCannotConnectToPrivateDirectory() throws {
        let agent = try TestAgent()
        let worker = try agent.directory.copyWorker(to: "worker")
        let child = try Child.worker(["connect", agent.socketPath], asNobody: true, executable: worker)
        #expect(child.readLine() == "connect-failed \(EACCES)")
        #expect(child.wait() == 3)
    }

    @Test("uid 0 is accepted only where the caller allows root")
    func rootOnlyWhenAllowed() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let peer = try PeerCredentials(socket: pair[0])
        try #require(peer.uid == 0, "the suite runs as root")
        #expect(throws: AgentError.self) { try peer.authorize(agentUID: 1000) }
        try peer.authorize(agentUID: 1000, allowingRoot: true)
    }
}

@Suite("Executable identity")
struct ExecutableIdentityTests {
    @Test(
        "replacing or changing the running executable's file voids the identity",
        arguments: ["rename a new file over it", "move it to another name", "chmod it (new ctime)"])
    func executableChanged(change: String) throws {
        let agent = try TestAgent()
        let worker = try agent.directory.copyWorker(to: "app")
        let child = try Child(worker, ["connect", agent.socketPath])
        defer { child.finish() }
        #expect(child.readLine() == "connected")
        let (fd, peer) = try agent.acceptPeer()
        defer { close(fd) }
        #expect(peer.executable?.path == worker && peer.isStillTheSameProcess())
        if change.hasPrefix("rename") {
            let replacement = try agent.directory.copyWorker(to: "app.new")
            #expect(rename(replacement, worker) == 0)
        } else if change.hasPrefix("move") {
            // The same file under a new path: what readlink would show changes, and the
            // rename gives the inode a new status-change time.
            usleep(20_000)
            #expect(rename(worker, worker + ".moved") == 0)
        } else {
            usleep(20_000)  // a ctime the clock can tell apart
            #expect(chmod(worker, 0o711) == 0)
        }
        #expect(!peer.isStillTheSameProcess(), "identity bound to the file as it was at accept")
        #expect(peer.process.isAlive, "while the process itself still runs")
    }
}
