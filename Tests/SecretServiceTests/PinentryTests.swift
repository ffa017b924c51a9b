import Foundation
import KeychainLibc
import KeychainTestSupport
import SecretService
import Testing

/// An unlock prompt answered by a real pinentry (`pinentry-curses`) on the caller's own
/// terminal, typed into by a stand-in for a person (`Clients/terminal.py`, a pseudo-terminal).
/// A bus whose keychaind asks through `pinentry-curses`, with a password keychain, just made
/// (so unlocked), as the default; stopped when released.
final class PinentryFixture {
    let bus: PrivateSessionBus
    let python: String
    let securityTool: String
    let keychain: String
    let password = "pin-\(UUID().uuidString.prefix(8))"

    /// keychaind, when the test starts it itself (a client starts it with only the user's
    /// directories and locale of its environment).
    private var agent: TestDaemon?

    /// - Parameter agentEnvironment: When given, keychaind is started first with it added to
    ///   the bus's environment, as a user's service manager would start it.
    init(agentEnvironment: [String: String]? = nil) throws {
        python = try requireTool(PythonClientTests.python)
        bus = try PrivateSessionBus.activatingKeychaind(environment: [
            "KEYCHAIN_PINENTRY": try requireTool("/usr/bin/pinentry-curses"), "TERM": "xterm",
        ])
        if let agentEnvironment, let socket = bus.environment["KEYCHAIN_AGENT_SOCK"] {
            agent = try TestDaemon(
                try requireTool(productsDirectory + "/keychaind"), ["--socket", socket],
                environment: bus.environment.merging(agentEnvironment) { $1 })
            for _ in 0..<600 where agentPid(at: socket) == nil { usleep(50_000) }
        }
        securityTool = try requireTool(productsDirectory + "/security")
        keychain = bus.root + "/data/keychains/login.keychain-db"
        let created = try security(["create-keychain", "-p", password, keychain])
        guard created.status == 0 else { throw ToolMissing(description: "create-keychain: \(created)") }
    }

    deinit {
        agent?.stop()
        bus.stop()
    }

    func security(_ arguments: [String]) throws -> ToolResult {
        try runTool(securityTool, arguments, environment: bus.environment)
    }

    /// Runs `arguments` on a pseudo-terminal where `Clients/terminal.py` types `typed`.
    func onTerminal(_ arguments: [String], typing typed: String) throws -> ToolResult {
        try runTool(
            python, [PinentryTests.clients + "terminal.py"] + arguments, stdin: Data(typed.utf8),
            environment: bus.environment, deadline: 180)
    }
}

@Suite("Secret Service unlock through pinentry")
struct PinentryTests {
    static let clients = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/"

    @Test(
        "Unlock asks on the caller's terminal through pinentry: a wrong password is refused and asked again, the right one unlocks for every process"
    )
    func pinentryOnTheCallersTerminal() throws {
        let fixture = try PinentryFixture()
        let secret = "kept-\(UUID().uuidString.prefix(8))"
        let keychain = fixture.keychain
        #expect(
            try fixture.security(["add-generic-password", "-s", "pin", "-a", "x", "-w", secret, keychain]).status == 0)
        #expect(try fixture.security(["lock-keychain", keychain]).status == 0)

        // The person sees the dialog, types a wrong password, sees it refused, types the right one.
        let run = try fixture.onTerminal(
            [fixture.python, Self.clients + "pinentry_client.py"],
            typing: "keychain\twrong-password\nWrong password\t\(fixture.password)\n")
        let screen = run.out
        #expect(run.status == 0, "\(run)\n\(screen)")
        #expect(screen.contains("unlocked") && screen.contains("secret=" + secret), "\(screen)")
        #expect(screen.contains("python3"), "the dialog names the program that asks: \(screen)")

        // Unlocked in the agent: another process reads without a password.
        let found = try fixture.security(["find-generic-password", "-s", "pin", "-a", "x", "-w", keychain])
        #expect(found.out == secret + "\n", "\(found)")
    }

    /// The defect: the dialog named the caller by `/proc/PID/comm`, which any process sets: a
    /// Python script that called itself "Firefox" was shown as Firefox.
    @Test func theDialogNamesTheCallersExecutableNotTheNameItGaveItself() throws {
        let fixture = try PinentryFixture()
        #expect(
            try fixture.security(["add-generic-password", "-s", "pin", "-a", "x", "-w", "kept", fixture.keychain])
                .status == 0)
        #expect(try fixture.security(["lock-keychain", fixture.keychain]).status == 0)
        let run = try fixture.onTerminal(
            [fixture.python, Self.clients + "pinentry_client.py", "Firefox"],
            typing: "keychain\t\(fixture.password)\n")
        #expect(run.status == 0 && run.out.contains("unlocked"), "\(run)\n\(run.out)")
        let executable = URL(fileURLWithPath: fixture.python).resolvingSymlinksInPath().path
        #expect(run.out.contains("wants to use it") && !run.out.contains("Firefox"), "\(run.out)")
        #expect(run.out.contains(executable), "the dialog names \(executable): \(run.out)")
    }

    @Test(
        "secret-tool lookup of a locked keychain's item finds it among the locked results, asks on its terminal, prints the secret"
    )
    func secretToolUnlocksThroughPinentry() throws {
        let fixture = try PinentryFixture()
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let gdbus = try requireTool("/usr/bin/gdbus")
        let environment = fixture.bus.environment
        let secret = "kept-\(UUID().uuidString.prefix(8))"
        let stored = try runTool(
            secretTool, ["store", "--label=Locked later", "service", "pin", "account", "x"], stdin: Data(secret.utf8),
            environment: environment)
        #expect(stored.status == 0, "\(stored)")
        #expect(try fixture.security(["lock-keychain", fixture.keychain]).status == 0)

        // Locked: the item is listed as a locked result (by the index), never as an unlocked one.
        func search(_ query: String) throws -> String {
            try runTool(
                gdbus,
                [
                    "call", "--session", "--dest", SecretServiceProvider.busName, "--object-path",
                    "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.SearchItems", query,
                ], environment: environment
            ).out
        }
        let found = try search("{'service': 'pin', 'account': 'x'}")
        #expect(found.hasPrefix("(@ao [], [objectpath '/org/freedesktop/secrets/collection/login/"), "\(found)")
        let other = try search("{'service': 'nothing', 'account': 'x'}")
        #expect(other.contains("(@ao [], @ao [])"), "\(other)")

        // secret-tool unlocks what it found: the dialog on its terminal, then the secret.
        let run = try fixture.onTerminal(
            [secretTool, "lookup", "service", "pin", "account", "x"], typing: "keychain\t\(fixture.password)\n")
        #expect(run.status == 0 && run.out.contains(secret), "\(run)\n\(run.out)")
        #expect(run.out.contains("secret-tool"), "the dialog names the program: \(run.out)")
    }

    @Test(
        "One Unlock of a locked keychain's item whose access list does not name the caller asks for the password, then about the program, in one prompt"
    )
    func unlockThenAccessListInOnePrompt() throws {
        let fixture = try PinentryFixture()
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let secret = "held-\(UUID().uuidString.prefix(8))"
        let added = try fixture.security([
            "add-generic-password", "-s", "pin", "-a", "x", "-w", secret, "-T", "/usr/bin/true", fixture.keychain,
        ])
        try #require(added.status == 0, "\(added)")
        #expect(try fixture.security(["lock-keychain", fixture.keychain]).status == 0)
        // The password, then Allow (Enter) when the dialog names secret-tool and the access list.
        let run = try fixture.onTerminal(
            [secretTool, "lookup", "service", "pin", "account", "x"],
            typing: "keychain\t\(fixture.password)\nwants to read\t\n")
        #expect(run.status == 0 && run.out.contains(secret), "\(run)\n\(run.out)")
        #expect(run.out.contains("access list does not name"), "\(run.out)")
    }

    @Test("Cancelling the pinentry dialog dismisses the prompt; the keychain stays locked")
    func cancelDismisses() throws {
        let fixture = try PinentryFixture()
        #expect(
            try fixture.security(["add-generic-password", "-s", "pin", "-a", "x", "-w", "s", fixture.keychain]).status
                == 0)
        #expect(try fixture.security(["lock-keychain", fixture.keychain]).status == 0)

        // Escape cancels pinentry-curses.
        let run = try fixture.onTerminal(
            [fixture.python, Self.clients + "pinentry_client.py"], typing: "keychain\t\u{1b}\n")
        #expect(run.status == 0 && run.out.contains("dismissed"), "\(run)\n\(run.out)")
        let locked = try fixture.security(["find-generic-password", "-s", "pin", "-w", fixture.keychain])
        #expect(locked.status != 0, "still locked: \(locked)")
    }

    @Test(
        "A dialog nobody answers is taken away after KEYCHAIN_PINENTRY_TIMEOUT and the prompt is dismissed; the next asks again"
    )
    func unansweredDialogTimesOut() throws {
        let fixture = try PinentryFixture(agentEnvironment: ["KEYCHAIN_PINENTRY_TIMEOUT": "2"])
        #expect(
            try fixture.security(["add-generic-password", "-s", "pin", "-a", "x", "-w", "s", fixture.keychain]).status
                == 0)
        #expect(try fixture.security(["lock-keychain", fixture.keychain]).status == 0)

        // Nobody types: without the time-out, the client would wait for ever (and the test's
        // terminal with it, until its deadline).
        let unanswered = try fixture.onTerminal([fixture.python, Self.clients + "pinentry_client.py"], typing: "")
        #expect(unanswered.out.contains("keychain"), "the dialog was shown: \(unanswered.out)")
        #expect(unanswered.status == 0 && unanswered.out.contains("dismissed"), "\(unanswered)\n\(unanswered.out)")
        // keychaind asks again for the next caller, who answers.
        let answered = try fixture.onTerminal(
            [fixture.python, Self.clients + "pinentry_client.py"], typing: "keychain\t\(fixture.password)\n")
        #expect(answered.status == 0 && answered.out.contains("unlocked"), "\(answered)\n\(answered.out)")
    }
}
