// What the test targets of the modules above the seam (`Security`, `Keychain`,
// `KeychainStorage`, `SwiftKeychain`) share: the one `keychaind` of the test process, which keeps
// the keychains of the `agent` backend (KeychainBackend.swift).
import CKeychainAgent
import CKeychainTestSupport
import DBusNIO
import DBusWire
import Foundation
import KeychainClient
import KeychainCore
import KeychainLibc

/// Whether the test process's environment was fixed before `main` (`KEYCHAIN_AGENT=off`): a
/// test that does not give its task a keychain never reaches the user's own agent.
public var testEnvironmentIsFixed: Bool {
    ck_test_environment_applied() == 1 && ProcessInfo.processInfo.environment["KEYCHAIN_AGENT"] == "off"
}

/// The `keychaind` built next to the test bundle, serving keychains in a private temporary
/// directory (its own home, device key and socket) that is never the user's: started on first
/// use, shared by every test of the process, and stopped by its pid when the process exits (its
/// directory removed), or by the shell that started it when the process dies otherwise.
public final class TestAgent: Sendable {
    /// The agent's pid (by `SO_PEERCRED`).
    public let pid: pid_t
    /// The agent's private directory.
    public let directory: String
    /// The agent's socket.
    public var socketPath: String { directory + "/run/agent.sock" }
    /// The connection every test shares (calls from several threads are answered in turn).
    public let connection: AgentConnection

    private static let started: Result<TestAgent, KeychainError> = Result { () throws(KeychainError) in
        try TestAgent()
    }

    /// The process's agent, started on first use.
    /// - Throws: Why it cannot run (no `keychaind` beside the test bundle, or it does not
    ///   answer): the test fails, it never skips.
    public static func shared() throws -> TestAgent { try started.get() }

    /// `keychaind` beside the test bundle.
    public static var program: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path + "/keychaind"
    }

    private init() throws(KeychainError) {
        let program = Self.program
        guard access(program, X_OK) == 0 else {
            throw KeychainError(.notAvailable, "\(program) is missing: build the keychaind product (swift build)")
        }
        var template = Array("/tmp/keychain-test-agent.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw KeychainError(.notAvailable, "mkdtemp: errno \(errno)") }
        let directory = String(cString: made)
        for sub in ["/run", "/home", "/keychains"] { mkdir(directory + sub, 0o700) }
        let environment = [
            "HOME=\(directory)/home", "XDG_DATA_HOME=\(directory)/home/data",
            "XDG_CONFIG_HOME=\(directory)/home/config", "PATH=/usr/bin:/bin", "KEYCHAIN_UNSAFE_TEST_KDF=1",
        ]
        let socket = directory + "/run/agent.sock"
        // The agent is started by a small shell that keeps it on a lifeline: a pipe on the
        // shell's standard input whose write end only this process holds. When this process ends,
        // however it ends (exit, crash, SIGKILL), the pipe closes, and the shell kills the agent
        // by its pid and reaps it: no agent outlives the tests.
        var lifeline: [Int32] = [-1, -1]
        guard ck_pipe_cloexec(&lifeline) == 0 else { throw KeychainError(.notAvailable, "pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, lifeline[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        // Standard error stays the test's (keychaind says there why it stops); nothing else the
        // test process has open (another test's pipes) is held by the agent.
        _ = ck_spawn_add_closefrom(&actions, 3)
        let arguments: [String] = [
            "/bin/sh", "-c", "\"$0\" --socket \"$1\" </dev/null & read -r _; kill $! 2>/dev/null; wait", program,
            socket,
        ]
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var keeper: pid_t = 0
        let spawned = posix_spawn(&keeper, "/bin/sh", &actions, nil, argv, envp)
        close(lifeline[0])
        guard spawned == 0 else {
            close(lifeline[1])
            try? FileManager.default.removeItem(atPath: directory)
            throw KeychainError(.notAvailable, "posix_spawn /bin/sh for \(program): \(spawned)")
        }
        // A wait for the agent to listen (at most 20 s on a loaded machine), not a time limit
        // on anything measured.
        var connection: AgentConnection?
        for _ in 0..<4_000 {
            if let answering = try? AgentConnection(socketPath: socket) {
                connection = answering
                break
            }
            var status: Int32 = 0
            if waitpid(keeper, &status, WNOHANG) == keeper {
                close(lifeline[1])
                throw KeychainError(.notAvailable, "keychaind exited before it listened (status \(status))")
            }
            usleep(5_000)
        }
        let agentPid = connection.flatMap { _ in
            (try? AgentConnection.connect(socket, timeout: .seconds(5))).flatMap { fd in
                defer { Glibc.close(fd) }
                return (try? DBusPeerCredentials(socket: fd))?.pid
            }
        }
        ck_test_agent_stop_at_exit(keeper, agentPid ?? 0, lifeline[1], directory)
        guard let connection, let agentPid else {
            throw KeychainError(.notAvailable, "keychaind does not answer at \(socket)")
        }
        let pid = agentPid
        self.pid = pid
        self.directory = directory
        self.connection = connection
    }

    /// A new keychain file kept by the agent, unlocked, protected by `password` (by the
    /// agent's device key alone when `nil`).
    public func makeKeychain(password: Data? = nil) throws -> AgentKeychain {
        try connection.createKeychain(
            at: directory + "/keychains/\(UUID().uuidString).keychain-db", password: password)
    }

    /// Has the agent close and delete `keychain` (at the end of a test).
    public func remove(_ keychain: AgentKeychain) {
        try? connection.deleteKeychain(at: keychain.keychain)
    }
}
