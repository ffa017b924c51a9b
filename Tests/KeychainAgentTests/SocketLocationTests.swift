import Foundation
import KeychainAgent
import KeychainLibc
import Testing

@Suite("Socket directory and single instance")
struct SocketLocationTests {
    struct EnvironmentCase: Sendable, CustomTestStringConvertible {
        var environment: [String: String]
        var expected: String
        var testDescription: String { expected }
    }

    @Test(
        "the path comes from KEYCHAIN_AGENT_SOCK, else XDG_RUNTIME_DIR, else ~/.local/state with a host hash",
        arguments: [
            EnvironmentCase(
                environment: ["KEYCHAIN_AGENT_SOCK": "/x/a.sock", "XDG_RUNTIME_DIR": "/run/user/7"],
                expected: "/x/a.sock"),
            EnvironmentCase(
                environment: ["XDG_RUNTIME_DIR": "/run/user/7", "HOME": "/home/u"],
                expected: "/run/user/7/keychain/agent.sock"),
            EnvironmentCase(
                environment: ["HOME": "/home/u"],
                expected: "/home/u/.local/state/keychain/s.\(AgentSocketLocation.hostHash("build-7"))/agent.sock"),
        ])
    func resolution(_ row: EnvironmentCase) throws {
        let location = try AgentSocketLocation.resolve(environment: row.environment, hostName: "build-7")
        #expect(location.socketPath == row.expected)
        #expect(location.lockPath == PathSafetyProbe.parent(row.expected) + "/agent.lock")
    }

    @Test("a relative override or no directory at all is refused")
    func badEnvironments() {
        #expect(throws: AgentError.self) {
            try AgentSocketLocation.resolve(environment: ["KEYCHAIN_AGENT_SOCK": "a.sock"], hostName: "h")
        }
        #expect(throws: AgentError.self) { try AgentSocketLocation.resolve(environment: [:], hostName: "h") }
        // Never the abstract namespace: a name without a leading "/" (the "@name" notation) is refused.
        #expect(throws: AgentError.self) {
            try AgentSocketLocation.resolve(environment: ["KEYCHAIN_AGENT_SOCK": "@keychain"], hostName: "h")
        }
        #expect(AgentSocketLocation.hostHash("a") != AgentSocketLocation.hostHash("b"))
        #expect(AgentSocketLocation.hostHash("a").count == 16)
    }

    @Test("a new directory is created 0700 and the socket file is 0600")
    func createsPrivateDirectory() throws {
        let temporary = try TemporaryDirectory()
        let location = AgentSocketLocation(socketPath: temporary.path + "/state/keychain/s.1/agent.sock")
        let listener = try AgentListener(location: location)
        #expect(mode(of: location.directory) == 0o700)
        #expect(mode(of: location.socketPath) == 0o600)
        #expect(fileType(location.socketPath) == S_IFSOCK)
        let client = try connectClient(location.socketPath)
        close(client)
        _ = listener
    }

    @Test(
        "a directory open to group or others is refused, naming the path and the fix",
        arguments: [0o755, 0o750, 0o701, 0o777] as [mode_t])
    func openDirectoryRefused(mode: mode_t) throws {
        let temporary = try TemporaryDirectory()
        let directory = try temporary.make("keychain", mode: mode)
        let location = AgentSocketLocation(socketPath: directory + "/agent.sock")
        #expect {
            try AgentListener(location: location)
        } throws: { error in
            guard let error = error as? AgentError else { return false }
            return error.code == .unsafeLocation && error.message.contains(directory)
                && error.message.contains("chmod 700") && error.keychainError.isSetupProblem
        }
        #expect(access(location.socketPath, F_OK) != 0, "nothing was bound")
    }

    @Test("a directory of another user is refused, naming the owner and the fix")
    func foreignDirectoryRefused() throws {
        let temporary = try TemporaryDirectory()
        let directory = try temporary.make("keychain", mode: 0o700)
        #expect(chown(directory, 65534, 65534) == 0)
        #expect {
            try AgentListener(location: AgentSocketLocation(socketPath: directory + "/agent.sock"))
        } throws: { error in
            let message = (error as? AgentError)?.message ?? ""
            return message.contains(directory) && message.contains("uid 65534") && message.contains("remove it")
        }
    }

    @Test("a symbolic link in place of the directory is refused")
    func linkedDirectoryRefused() throws {
        let temporary = try TemporaryDirectory()
        let target = try temporary.make("elsewhere", mode: 0o700)
        #expect(symlink(target, temporary.path + "/keychain") == 0)
        #expect {
            try AgentListener(location: AgentSocketLocation(socketPath: temporary.path + "/keychain/agent.sock"))
        } throws: { ($0 as? AgentError)?.code == .unsafeLocation }
    }

    @Test("a second agent is refused by the lock while the first runs; it starts once the first stops")
    func singleInstance() throws {
        let temporary = try TemporaryDirectory()
        let location = AgentSocketLocation(socketPath: temporary.path + "/keychain/agent.sock")
        var first: AgentListener? = try AgentListener(location: location)
        #expect {
            try AgentListener(location: location)
        } throws: { error in
            let agentError = error as? AgentError
            return agentError?.code == .alreadyRunning && agentError?.message.contains(location.lockPath) == true
        }
        #expect(try connectClient(location.socketPath) >= 0, "the first agent still serves")
        _ = first
        first = nil
        let second = try listenerOnceReleased(location)
        #expect(second.location == location)
    }

    @Test("the lock is held against another process too (flock in a child)")
    func lockHeldByAnotherProcess() throws {
        let temporary = try TemporaryDirectory()
        let location = AgentSocketLocation(socketPath: temporary.path + "/keychain/agent.sock")
        try location.prepareDirectory()
        let flock = try requiredTool("flock")
        // flock(1) holds agent.lock while its child waits on stdin.
        let holder = try Child(flock, ["-n", location.lockPath, "/bin/sh", "-c", "echo held; read x"])
        #expect(holder.readLine() == "held")
        #expect(throws: AgentError.self) { try AgentListener(location: location) }
        holder.finish()
        _ = try listenerOnceReleased(location)
    }

    @Test("a stale socket (nobody accepting) is detected and replaced")
    func staleSocketReplaced() throws {
        let temporary = try TemporaryDirectory()
        let location = AgentSocketLocation(socketPath: temporary.path + "/keychain/agent.sock")
        try location.prepareDirectory()
        // A dead agent's leftover: a bound socket file whose socket was closed without unlink.
        let dead = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try bind(dead, location.socketPath)
        close(dead)
        #expect(fileType(location.socketPath) == S_IFSOCK)
        #expect(throws: AgentError.self, "nobody accepts on the leftover") { try connectClient(location.socketPath) }
        let listener = try AgentListener(location: location)
        let client = try connectClient(location.socketPath)
        let accepted = try listener.accept()
        close(accepted)
        close(client)
    }

    @Test("a live socket not covered by the lock is never taken over; a non-socket file is refused")
    func liveOrForeignFileNotReplaced() throws {
        let temporary = try TemporaryDirectory()
        let location = AgentSocketLocation(socketPath: temporary.path + "/keychain/agent.sock")
        try location.prepareDirectory()
        let live = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(live) }
        try bind(live, location.socketPath)
        #expect(listen(live, 4) == 0)
        #expect(throws: AgentError.self) { try AgentListener(location: location) }
        #expect(fileType(location.socketPath) == S_IFSOCK, "left in place")
        unlink(location.socketPath)
        #expect(FileManager.default.createFile(atPath: location.socketPath, contents: Data()))
        #expect {
            try AgentListener(location: location)
        } throws: { ($0 as? AgentError)?.message.contains("not a socket") == true }
    }
}

/// A listener at `location`, retried for up to 2 s: a child that a parallel test forks holds a
/// copy of the lock's open file description (and so the lock) until its exec closes it.
func listenerOnceReleased(_ location: AgentSocketLocation) throws -> AgentListener {
    var attempts = 0
    while true {
        do {
            return try AgentListener(location: location)
        } catch let error as AgentError where error.code == .alreadyRunning && attempts < 200 {
            attempts += 1
            usleep(10_000)
        }
    }
}

enum PathSafetyProbe {
    static func parent(_ path: String) -> String { (path as NSString).deletingLastPathComponent }
}

func mode(of path: String) -> mode_t {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
}

func fileType(_ path: String) -> mode_t {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : 0
}

func inode(_ path: String) -> UInt64 {
    var info = stat()
    return lstat(path, &info) == 0 ? UInt64(info.st_ino) : 0
}

func unixAddress(_ path: String) -> sockaddr_un {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        let bytes = Array(path.utf8)
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return address
}

func bind(_ fd: Int32, _ path: String) throws {
    var address = unixAddress(path)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard result == 0 else { throw AgentError.testFailure("bind \(path)") }
}

func connectClient(_ path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = unixAddress(path)
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard result == 0 else {
        close(fd)
        throw AgentError.testFailure("connect \(path)")
    }
    return fd
}
