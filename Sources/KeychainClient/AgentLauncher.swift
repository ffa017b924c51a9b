import Foundation
import KeychainAgentProtocol
import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// Starts `keychaind` when no agent answers, as gpg-agent is started by the first program that
/// needs it: in its own session, its standard streams on `/dev/null`, no secret in its
/// environment. The agent takes an exclusive lock beside its socket before it listens, so when
/// two processes start one at once, one agent serves and the other exits.
enum AgentLauncher {
    /// How long a client waits for a started agent to answer.
    static let patience: Duration = .seconds(10)

    /// Starts the agent for `socketPath` and connects to it.
    /// - Throws: ``KeychainCore/KeychainError`` `.notAvailable` naming what is missing.
    static func start(socketPath: String, environment: [String: String]) throws -> AgentConnection {
        guard let program = program(environment: environment) else {
            throw KeychainError(
                .notAvailable,
                "keychaind was not found beside this program or on PATH; fix: install it, or set \(AgentEndpoint.programVariable)",
                isSetupProblem: true)
        }
        try spawnDetached(program, socketPath: socketPath, environment: agentEnvironment(environment))
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while clock.now < deadline {
            if let connection = try? AgentConnection(socketPath: socketPath) { return connection }
            usleep(5_000)
        }
        throw KeychainError(
            .notAvailable, "keychaind was started but does not answer at \(socketPath)", isSetupProblem: true)
    }

    /// `KEYCHAIN_AGENT_PROGRAM`, else `keychaind` beside the running executable, else on `PATH`.
    static func program(environment: [String: String]) -> String? {
        if let explicit = environment[AgentEndpoint.programVariable], !explicit.isEmpty {
            return access(explicit, X_OK) == 0 ? explicit : nil
        }
        var candidates: [String] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent().path + "/keychaind")
        }
        for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            candidates.append(directory + "/keychaind")
        }
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// The client's environment without what the agent must not hold: secrets and the mode.
    static func agentEnvironment(_ environment: [String: String]) -> [String: String] {
        environment.filter { key, _ in
            key != "KEYCHAIN_PASSWORD" && key != AgentEndpoint.modeVariable && key != AgentEndpoint.programVariable
        }
    }

    /// Starts `program` so that it outlives this process and is never its zombie: through
    /// util-linux's `setsid --fork` when present (the agent becomes init's child at once),
    /// else directly (the agent calls `setsid()` itself).
    private static func spawnDetached(_ program: String, socketPath: String, environment: [String: String]) throws {
        let setsid = ["/usr/bin/setsid", "/bin/setsid"].first { (path: String) in access(path, X_OK) == 0 }
        let arguments =
            (setsid.map { [$0, "--fork"] } ?? []) + [program, "--socket", socketPath]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw KeychainError(.notAvailable, "keychaind cannot be started (errno \(spawned))", isSetupProblem: true)
        }
        if setsid != nil {
            // `setsid --fork` exits as soon as the agent is forked.
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }
}
