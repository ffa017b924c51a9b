import CKeychainAgent
import Foundation
import KeychainLibc

/// polkit's text authentication agent, `pkttyagent`, started for one process on this process's
/// controlling terminal, as `pkexec` starts it: a program run in a terminal (over SSH, on a
/// console, in a desktop's terminal with no agent of the desktop's) is then asked for the password
/// where its user is looking. In a login session (`XDG_SESSION_ID`) it is started with
/// `--fallback`, so it stands aside when the session has an agent already (the desktop's dialog
/// asks instead); outside one (a service, a container without logind) polkit would never use a
/// fallback agent, so it is registered for this process alone.
public final class TerminalAgent: Sendable {
    /// Where Debian's `polkitd` package installs it.
    public static let program = "/usr/bin/pkttyagent"

    private let pid: pid_t

    private init(pid: pid_t) { self.pid = pid }

    /// Whether this process has a controlling terminal to ask on.
    public static var hasTerminal: Bool {
        let descriptor = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        close(descriptor)
        return true
    }

    /// Starts the agent for `subject` on this process's terminal and waits (10 s at most) until it
    /// has registered with polkit; `nil` when there is no terminal or no agent program.
    public static func start(
        for subject: ProcessSubject, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> TerminalAgent? {
        guard hasTerminal, access(program, X_OK) == 0 else { return nil }
        // Both ends close on exec: the agent gets only the copy made its descriptor 3, so the
        // end of the pipe is seen when it closes that one.
        var notify: [Int32] = [-1, -1]
        guard ck_pipe_cloexec(&notify) == 0 else { return nil }
        defer { close(notify[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, notify[1], 3)
        let inSession = !(environment["XDG_SESSION_ID"] ?? "").isEmpty
        let arguments =
            [program, "--process", "\(subject.pid),\(subject.startTime)", "--notify-fd", "3"]
            + (inSession ? ["--fallback"] : [])
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = withDefaultSignals { posix_spawn(&pid, program, &actions, &$0, argv, environ) }
        close(notify[1])
        guard spawned == 0 else { return nil }
        // The agent closes its end once registered (or exits, when another agent has the session).
        var poller = pollfd(fd: notify[0], events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let ready = poll(&poller, 1, 100)
            if ready > 0 { break }
            if ready < 0 && errno != EINTR { break }
        }
        return TerminalAgent(pid: pid)
    }

    /// Stops the agent and waits for it.
    public func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<50 {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno == ECHILD) { return }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
