import Foundation
import KeychainAgent
import KeychainCore
import KeychainTestSupport
import KeychainLibc
import Testing

@testable import KeychainClient

/// The libraries start `keychaind` themselves in `KEYCHAIN_AGENT=auto` mode, as the `security`
/// tool does: each process below is a library user (the worker's `library` command gets the
/// default keychain from `Keychains`), in a home of its own, with the agent on a socket there.
@Suite("Libraries start the agent")
struct LibraryStartTests {
    /// A private home and the agent's place in it, and the agent started there (stopped by pid).
    final class Home {
        let directory: TemporaryDirectory
        var socket: String { directory.path + "/run/agent.sock" }

        init() throws {
            directory = try TemporaryDirectory(mode: 0o700)
            _ = try directory.make("run", mode: 0o700)
            _ = try directory.make("home", mode: 0o700)
        }

        /// Runs `library <action> <service>` with `mode` and `program` (`KEYCHAIN_AGENT_PROGRAM`),
        /// `input` on its standard input; its output lines. With `cheapAgent`, an agent it starts
        /// is configured with the cheap test key derivation.
        func library(
            _ action: String, _ service: String, mode: String, program: String = KeychaindTests.program,
            input: String? = nil, changing changes: [String: String?] = [:], cheapAgent: Bool = true
        ) throws -> [String] {
            let home = directory.path + "/home"
            var variables: [String: String] = [
                "HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
                "PATH": "/usr/bin:/bin", "KEYCHAIN_UNSAFE_TEST_KDF": "1", "KEYCHAIN_AGENT": mode,
                "KEYCHAIN_AGENT_SOCK": socket, "KEYCHAIN_AGENT_PROGRAM": program,
                "KEYCHAIN_PASSWORD": "not-for-the-agent",
            ]
            // The agent a library starts never inherits KEYCHAIN_UNSAFE_TEST_KDF: it is
            // configured itself (CheapAgentProgram), as a user configures a systemd unit.
            if cheapAgent, program == KeychaindTests.program {
                variables["KEYCHAIN_AGENT_PROGRAM"] = try CheapAgentProgram.make(in: directory.path, agent: program)
            }
            for (name, value) in changes { variables[name] = value }
            let child = try Child(
                "/usr/bin/env",
                ["-i"] + variables.map { "\($0.key)=\($0.value)" } + [workerPath, "library", action, service])
            if let input { child.send(input) }
            var lines: [String] = []
            while let line = child.readLine() { lines.append(line) }
            child.finish()
            return lines
        }

        /// The pid of the agent answering at the socket, by `SO_PEERCRED`, or `nil`.
        var agentPid: pid_t? {
            guard let fd = try? AgentConnection.connect(socket, timeout: .seconds(5)) else { return nil }
            defer { close(fd) }
            return (try? PeerCredentials(socket: fd))?.pid
        }

        deinit {
            guard let pid = agentPid else { return }
            kill(pid, SIGTERM)
            for _ in 0..<500 where kill(pid, 0) == 0 { usleep(10_000) }
        }
    }

    @Test("in auto mode a library's first use of the default keychain starts keychaind, and a later process meets it")
    func autoStartsTheAgent() throws {
        let home = try Home()
        let first = try home.library("add", "library-start", mode: "auto", input: "served by the agent")
        let pid = try #require(home.agentPid, "an agent answers after the first process: \(first)")
        #expect(first == ["agent \(pid)", "ok"])
        let second = try home.library("find", "library-start", mode: "auto")
        #expect(second == ["agent \(pid)", "found served by the agent"], "the second process used the same agent")
    }

    @Test("with no keychaind to start, a library opens its keychain in its process, at once and without an error")
    func noAgentProgramFallsBackSilently() throws {
        let home = try Home()
        let clock = ContinuousClock()
        let started = clock.now
        let lines = try home.library(
            "add", "fallback", mode: "auto", program: home.directory.path + "/no-such-keychaind", input: "kept here")
        #expect(lines == ["agent none", "ok"])
        #expect(clock.now - started < .seconds(5), "no wait for an agent that cannot start")
        #expect(home.agentPid == nil)
        let found = try home.library(
            "find", "fallback", mode: "auto", program: home.directory.path + "/no-such-keychaind")
        #expect(found == ["agent none", "found kept here"], "the in-process keychain is the home's default")
    }

    @Test("with no place for the agent's socket (no HOME, no XDG_RUNTIME_DIR), auto opens the keychain in process")
    func noSocketPlaceFallsBack() throws {
        let home = try Home()
        let unset: [String: String?] = ["HOME": nil, "XDG_RUNTIME_DIR": nil, "KEYCHAIN_AGENT_SOCK": nil]
        let lines = try home.library("add", "placeless", mode: "auto", input: "here", changing: unset)
        #expect(lines == ["agent none", "ok"])
        let required = try home.library("add", "placeless", mode: "required", input: "x", changing: unset)
        #expect(required.count == 1 && required.first?.hasPrefix("error ") == true, "\(required)")
    }

    @Test("KEYCHAIN_AGENT=off never starts an agent; required fails rather than open the keychain itself")
    func offAndRequired() throws {
        let home = try Home()
        let off = try home.library("add", "off", mode: "off", input: "in process")
        #expect(off == ["agent none", "ok"])
        #expect(home.agentPid == nil, "no agent was started")
        let required = try home.library(
            "add", "required", mode: "required", program: home.directory.path + "/no-such-keychaind", input: "x")
        #expect(required == ["error \(KeychainError.Code.notAvailable.rawValue)"])
        #expect(home.agentPid == nil)
    }

    @Test("the agent a client starts gets only the variables it needs: no password, token or mode")
    func agentEnvironmentHasNoSecrets() {
        let client = [
            "HOME": "/home/u", "PATH": "/usr/bin", "XDG_RUNTIME_DIR": "/run/user/1", "LC_ALL": "C.UTF-8",
            "KEYCHAIN_ACCESS_GROUPS": "team.app", "KEYCHAIN_PASSWORD": "secret", "GITHUB_TOKEN": "ghp_secret",
            "AWS_SECRET_ACCESS_KEY": "secret", "KEYCHAIN_AGENT": "auto", "KEYCHAIN_AGENT_PROGRAM": "/bin/keychaind",
            "LD_PRELOAD": "/tmp/evil.so",
        ]
        #expect(
            AgentLauncher.agentEnvironment(client) == [
                "HOME": "/home/u", "PATH": "/usr/bin", "XDG_RUNTIME_DIR": "/run/user/1", "LC_ALL": "C.UTF-8",
            ])
    }

    @Test("the test process runs with KEYCHAIN_AGENT=off, set before main")
    func testProcessIsInProcessByDefault() {
        #expect(testEnvironmentIsFixed)
    }
}
