import CKeychainAgent
import Foundation
import KeychainAgentProtocol
import KeychainCore
import KeychainLibc

/// Starts `keychaind` when no agent answers, as gpg-agent is started by the first program that
/// needs it (the `security` tool or a library, in `KEYCHAIN_AGENT=auto` mode): in its own
/// session, with only the environment variables it needs (``agentVariables``: never a secret).
/// The agent takes an exclusive lock beside its socket before it listens, so when two processes
/// start one at once, one agent serves and the other exits.
enum AgentLauncher {
    /// How long a client waits for the agent it started to answer, while that agent runs (one
    /// that ends is not waited for). Long: a client that gave up on a slow start would go on with
    /// its keychains in its own process, and the agent, once up, would serve every later process
    /// without what this one unlocked or created: a keychain made by `create-keychain -p` would
    /// be locked for the next command (a CI failure on a loaded 2-core machine looked like this;
    /// it was 10 s).
    static let patience: Duration = .seconds(45)

    /// Starts the agent for `socketPath` and connects to it.
    /// - Throws: ``KeychainModel/KeychainError`` `.notAvailable` naming what is missing.
    static func start(socketPath: String, environment: [String: String]) throws -> AgentConnection {
        guard let program = program(environment: environment) else {
            throw KeychainError(
                .notAvailable,
                "keychaind was not found beside this program or on PATH; fix: install it, or set \(AgentEndpoint.programVariable)",
                isSetupProblem: true)
        }
        let (pid, errors) = try spawn(program, socketPath: socketPath, environment: agentEnvironment(environment))
        defer { close(errors) }
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while clock.now < deadline {
            if let connection = try? AgentConnection(socketPath: socketPath) { return connection }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                // It ended before it listened: another agent won the race, or it says why not.
                if let connection = try? AgentConnection(socketPath: socketPath) { return connection }
                let reason = readAvailable(errors)
                throw KeychainError(
                    .notAvailable, "keychaind did not start" + (reason.isEmpty ? "" : ": " + reason),
                    isSetupProblem: true)
            }
            usleep(2_000)
        }
        throw KeychainError(
            .notAvailable, "keychaind was started but does not answer at \(socketPath)", isSetupProblem: true)
    }

    /// `KEYCHAIN_AGENT_PROGRAM`, else `keychaind` beside the running executable, else on `PATH`.
    static func program(environment: [String: String]) -> String? {
        if let explicit = environment[AgentEndpoint.programVariable], !explicit.isEmpty {
            return access(explicit, X_OK) == 0 ? explicit : nil
        }
        var candidates = Executables.besideThisOne("keychaind").map { [$0] } ?? []
        for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            candidates.append(directory + "/keychaind")
        }
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// The variables of the client's environment that the agent is given: where the user's
    /// files are, and the locale. Nothing that decides what the agent does for its other
    /// clients: the agent started by one process serves every later process of the user, so a
    /// process's `KEYCHAIN_DEFAULT_PATH` and `KEYCHAIN_ACCESS_GROUPS` travel with its requests
    /// (``Keychains``, ``AgentConnection``), and `KEYCHAIN_UNSAFE_TEST_KDF` is never handed
    /// down. An application's environment also often holds secrets (tokens,
    /// `KEYCHAIN_PASSWORD`), and an agent started by it outlives it: nothing else is passed.
    static let agentVariables: Set<String> = [
        "HOME", "PATH", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
        "XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
    ]

    /// The client's environment reduced to ``agentVariables`` (and the `LC_*` locale variables).
    static func agentEnvironment(_ environment: [String: String]) -> [String: String] {
        environment.filter { key, _ in agentVariables.contains(key) || key.hasPrefix("LC_") }
    }

    /// Starts `program` (which puts itself in a session of its own) with standard input and
    /// output on `/dev/null` and standard error on a pipe, read only if it ends before it
    /// listens. When this process ends first, the agent becomes init's child.
    /// - Returns: The agent's pid and the pipe's read end.
    private static func spawn(_ program: String, socketPath: String, environment: [String: String]) throws
        -> (pid: pid_t, errors: Int32)
    {
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else {
            throw KeychainError(.notAvailable, "keychaind cannot be started (pipe: errno \(errno))")
        }
        _ = fcntl(pipe[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipe[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipe[0], F_SETFL, O_NONBLOCK)
        let arguments = [program, "--socket", socketPath]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 2)
        // Nothing else this process has open, close-on-exec or not: a pipe another program
        // reads to its end must not stay open in an agent that outlives us.
        _ = ck_spawn_add_closefrom(&actions, 3)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, nil, argv, envp)
        close(pipe[1])
        guard spawned == 0 else {
            close(pipe[0])
            throw KeychainError(.notAvailable, "keychaind cannot be started (errno \(spawned))", isSetupProblem: true)
        }
        return (pid, pipe[0])
    }

    /// What the pipe holds now (at most 4 KiB), without its `keychaind: ` prefix and newline.
    private static func readAvailable(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return "" }
        var text = String(decoding: buffer[..<count], as: UTF8.self)
        while text.hasSuffix("\n") { text.removeLast() }
        if text.hasPrefix("keychaind: ") { text.removeFirst("keychaind: ".count) }
        return text
    }
}
