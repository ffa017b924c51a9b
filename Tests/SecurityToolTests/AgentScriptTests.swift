import DBusNIO
import DBusWire
import Foundation
import KeychainTestSupport
import KeychainClient
import KeychainLibc
import Testing

/// The session agent as scripts meet it: each command below is a process of its own, the
/// first one starts `keychaind` (found beside `security`), and an unlock serves the commands
/// after it. Each test stops its agent by pid.
@Suite struct AgentScriptTests {
    /// A sandbox whose processes use an agent on a socket of its own.
    private func agentSandbox() throws -> Sandbox {
        let sandbox = try Sandbox()
        sandbox.agentMode = "auto"
        return sandbox
    }

    /// In a directory the agent makes private (the sandbox root is open to others).
    private func socketPath(_ sandbox: Sandbox) -> String { sandbox.root + "/agent/agent.sock" }

    private func run(_ sandbox: Sandbox, _ arguments: [String], stdin: Data? = nil) throws -> RunResult {
        try sandbox.run(arguments, stdin: stdin, environment: ["KEYCHAIN_AGENT_SOCK": socketPath(sandbox)])
    }

    @Test("create, unlock, add and find in four processes: the unlock serves the later ones")
    func ciScriptPatternInFourProcesses() throws {
        let sandbox = try agentSandbox()
        defer { stopAgent(at: socketPath(sandbox)) }
        let create = try run(sandbox, ["create-keychain", "-p", "P4ss", "build.keychain"])
        #expect(create.status == 0, "\(create)")
        let agent = agentPid(at: socketPath(sandbox))
        #expect(agent != nil, "the first command started the agent")
        // Started again with the wiping allocator, it is still named keychaind (for ps and pkill).
        let name = agent.flatMap { try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8) }
        #expect(name == "keychaind\n", "\(name ?? "no /proc entry")")
        let unlock = try run(sandbox, ["unlock-keychain", "-p", "P4ss", "build.keychain"])
        #expect(unlock.status == 0, "\(unlock)")
        let add = try run(
            sandbox, ["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "deploy token", "build.keychain"])
        #expect(add.status == 0, "\(add)")
        let find = try run(sandbox, ["find-generic-password", "-a", "ci", "-s", "deploy", "-w", "build.keychain"])
        #expect(find.status == 0, "\(find)")
        #expect(find.out == "deploy token\n")
    }

    @Test("a keychain just made with create-keychain -p is unlocked for the next command, as on macOS")
    func createdKeychainIsUnlocked() throws {
        let sandbox = try agentSandbox()
        defer { stopAgent(at: socketPath(sandbox)) }
        #expect(try run(sandbox, ["create-keychain", "-p", "P4ss", "fresh.keychain"]).status == 0)
        let add = try run(sandbox, ["add-generic-password", "-a", "a", "-s", "s", "-w", "v", "fresh.keychain"])
        #expect(add.status == 0, "\(add)")
    }

    @Test("lock-keychain in one process locks the keychain for the next; lock-keychain -a locks them all")
    func lockingIsSharedToo() throws {
        let sandbox = try agentSandbox()
        defer { stopAgent(at: socketPath(sandbox)) }
        for name in ["one.keychain", "two.keychain"] {
            #expect(try run(sandbox, ["create-keychain", "-p", "P4ss", name]).status == 0)
            #expect(try run(sandbox, ["add-generic-password", "-a", "a", "-s", "s", "-w", "v", name]).status == 0)
        }
        #expect(try run(sandbox, ["lock-keychain", "one.keychain"]).status == 0)
        let locked = try run(sandbox, ["find-generic-password", "-a", "a", "-s", "s", "-w", "one.keychain"])
        #expect(locked.status == 36, "\(locked)")
        let other = try run(sandbox, ["find-generic-password", "-a", "a", "-s", "s", "-w", "two.keychain"])
        #expect(other.out == "v\n", "\(other)")
        #expect(try run(sandbox, ["lock-keychain", "-a"]).status == 0)
        let all = try run(sandbox, ["find-generic-password", "-a", "a", "-s", "s", "-w", "two.keychain"])
        #expect(all.status == 36, "\(all)")
        #expect(try run(sandbox, ["unlock-keychain", "-p", "wrong", "two.keychain"]).status == 51)
        #expect(try run(sandbox, ["unlock-keychain", "-p", "P4ss", "two.keychain"]).status == 0)
        let back = try run(sandbox, ["find-generic-password", "-a", "a", "-s", "s", "-w", "two.keychain"])
        #expect(back.out == "v\n", "\(back)")
    }

    @Test("a killed agent is started again and its keychains come back locked, items intact")
    func killedAgentComesBackLocked() throws {
        let sandbox = try agentSandbox()
        defer { stopAgent(at: socketPath(sandbox)) }
        #expect(try run(sandbox, ["create-keychain", "-p", "P4ss", "k.keychain"]).status == 0)
        #expect(
            try run(sandbox, ["add-generic-password", "-a", "a", "-s", "s", "-w", "kept", "k.keychain"]).status == 0)
        let first = try #require(agentPid(at: socketPath(sandbox)))
        kill(first, SIGKILL)
        #expect(waitUntilGone(first))
        let locked = try run(sandbox, ["find-generic-password", "-a", "a", "-s", "s", "-w", "k.keychain"])
        #expect(locked.status == 36, "\(locked)")
        let second = try #require(agentPid(at: socketPath(sandbox)))
        #expect(second != first)
        #expect(try run(sandbox, ["unlock-keychain", "-p", "P4ss", "k.keychain"]).status == 0)
        let found = try run(sandbox, ["find-generic-password", "-a", "a", "-s", "s", "-w", "k.keychain"])
        #expect(found.out == "kept\n", "\(found)")
    }

    @Test("KEYCHAIN_AGENT=off keeps the lock state in each process")
    func offKeepsTheLockInTheProcess() throws {
        let sandbox = try agentSandbox()
        defer { stopAgent(at: socketPath(sandbox)) }
        sandbox.agentMode = "off"
        #expect(try run(sandbox, ["create-keychain", "-p", "P4ss", "k.keychain"]).status == 0)
        #expect(try run(sandbox, ["unlock-keychain", "-p", "P4ss", "k.keychain"]).status == 0)
        let locked = try run(sandbox, ["add-generic-password", "-a", "a", "-s", "s", "-w", "v", "k.keychain"])
        #expect(locked.status == 36, "\(locked)")
        #expect(agentPid(at: socketPath(sandbox)) == nil, "no agent was started")
    }

    @Test("KEYCHAIN_AGENT=required fails when the agent cannot be started, and says why")
    func requiredFailsWithoutAnAgent() throws {
        let sandbox = try agentSandbox()
        sandbox.agentMode = "required"
        let result = try sandbox.run(
            ["find-generic-password", "-s", "s", "build.keychain"],
            environment: [
                "KEYCHAIN_AGENT_SOCK": socketPath(sandbox),
                "KEYCHAIN_AGENT_PROGRAM": sandbox.root + "/no-such-keychaind",
            ])
        #expect(result.status != 0 && result.status != 44, "\(result)")
        #expect(result.err.contains("keychaind"), "\(result)")
    }

    @Test("KEYCHAIN_DEFAULT_PATH points one process elsewhere, whichever process started the agent")
    func defaultPathIsEachProcesssOwn() throws {
        let sandbox = try agentSandbox()
        defer { stopAgent(at: socketPath(sandbox)) }
        let elsewhere = sandbox.keychainsDirectory + "/elsewhere.keychain-db"
        func security(_ arguments: [String], defaultPath: String? = nil) throws -> RunResult {
            var environment = ["KEYCHAIN_AGENT_SOCK": socketPath(sandbox)]
            environment["KEYCHAIN_DEFAULT_PATH"] = defaultPath
            return try sandbox.run(arguments, environment: environment)
        }
        // The agent is started by a process pointed elsewhere.
        let first = try security(
            ["add-generic-password", "-s", "pointed", "-a", "a", "-w", "one"], defaultPath: elsewhere)
        #expect(first.status == 0, "\(first)")
        let second = try security(["add-generic-password", "-s", "plain", "-a", "a", "-w", "two"])
        #expect(second.status == 0, "\(second)")
        // Each finds its own item in its own default keychain, and only there.
        #expect(try security(["find-generic-password", "-s", "plain", "-w"]).out == "two\n")
        #expect(try security(["find-generic-password", "-s", "pointed", "-w"]).status == 44)
        #expect(try security(["find-generic-password", "-s", "pointed", "-w"], defaultPath: elsewhere).out == "one\n")
        #expect(try security(["find-generic-password", "-s", "plain", "-w", sandbox.loginKeychain]).out == "two\n")
        #expect(try security(["find-generic-password", "-s", "plain", "-w", elsewhere]).status == 44)
    }
}
