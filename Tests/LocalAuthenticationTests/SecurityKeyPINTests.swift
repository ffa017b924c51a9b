import Foundation
import Synchronization
import KeychainTestSupport
import Testing

/// Security keys that ask for their PIN: one with a PIN set makes a credential only with it
/// (CTAP 2.0), one with `alwaysUv` signs only with it. The software key speaks PIN protocol 1
/// (Clients/security_key.py); the person types the PIN on a pseudo-terminal: `security`'s and an
/// app's own prompt on `/dev/tty`, keychaind's pinentry-curses on the caller's terminal.
extension CompanionTests {
    /// `program arguments` on a pseudo-terminal, where a person answers each of `steps` (what to
    /// wait for on the screen, what to type then).
    static func onTerminal(
        _ program: String, _ arguments: [String], steps: [(wait: String, type: String)], environment: [String: String]
    ) throws -> PolkitFixture.Outcome {
        var environment = environment
        environment["TERM"] = "xterm"
        return try PolkitFixture.run(
            "/usr/bin/python3", [PolkitFixture.terminalDriver, program] + arguments,
            input: steps.map { "\($0.wait)\t\($0.type)\n" }.joined(), environment: environment)
    }

    /// keychaind started for `fixture` with pinentry-curses as its dialog (a client would start
    /// one with the system's default pinentry).
    static func agentWithPinentry(_ fixture: Fixture) throws -> TestDaemon {
        let pinentry = "/usr/bin/pinentry-curses"
        guard FileManager.default.isExecutableFile(atPath: pinentry) else {
            throw TestDaemonFailure(description: "\(pinentry) is missing (.ci/run installs pinentry-curses)")
        }
        let socket = fixture.root + "/home/run/keychain.sock"
        let daemon = try TestDaemon(
            buildProductsDirectory + "/keychaind", ["--socket", socket],
            environment: fixture.environment.merging(["KEYCHAIN_PINENTRY": pinentry]) { $1 })
        for _ in 0..<600 where agentPid(at: socket) == nil { usleep(50_000) }
        guard agentPid(at: socket) != nil else {
            throw TestDaemonFailure(description: "keychaind did not start: \(daemon.errors)")
        }
        return daemon
    }

    /// Pairs `key`, whose PIN is `pin`, as "first" on a terminal where a wrong PIN is typed
    /// first; requires it paired.
    static func pairWithPIN(_ fixture: Fixture, _ key: SoftwareKey, pin: String) throws {
        let paired = try onTerminal(
            buildProductsDirectory + "/security", ["security-key", "add", "-n", "first", "-d", key.device],
            steps: [("PIN of your security key", "0000"), ("wrong PIN", pin)], environment: fixture.environment)
        try #require(paired.status == 0 && paired.output.contains("paired first"), "\(paired)")
        #expect(!paired.output.contains(pin), "the PIN is never shown")
        #expect(key.events.suffix(3) == ["wrong pin", "pin accepted", "touched make-credential"], "\(key.events)")
    }

    @Test(
        "a key with a PIN set pairs only with its PIN, typed on the terminal (a wrong one is asked again); without a terminal pairing is refused; reading asks only for a touch",
        arguments: Backend.allCases)
    func keyWithAPINPairsWithIt(backend: Backend) throws {
        let fixture = try Fixture(backend)
        let key = try fixture.key("first")
        try key.setPIN("4321")
        let refused = try fixture.security(["security-key", "add", "-n", "first", "-d", key.device])
        #expect(refused.status != 0 && refused.errors.contains("PIN"), "\(refused)")
        try Self.pairWithPIN(fixture, key, pin: "4321")
        let (stored, secret) = try fixture.store("vault")
        try #require(stored == "stored\n", "\(stored)")
        #expect(try fixture.worker(["read", "vault"]) == "secret \(secret)\n")
        #expect(key.events.last == "touched get-assertion", "a touch alone: \(key.events)")
    }

    @Test(
        "a key that always asks for its PIN (alwaysUv) reads a .companion item after its PIN on the caller's terminal and a touch; with nobody to type it, errSecUserCanceled and no touch",
        arguments: Backend.allCases)
    func alwaysUVKeyAsksForItsPIN(backend: Backend) throws {
        let fixture = try Fixture(backend)
        let agent = backend == .keychaind ? try Self.agentWithPinentry(fixture) : nil
        defer { agent?.stop() }
        let key = try fixture.key("first")
        try key.setPIN("4321")
        try Self.pairWithPIN(fixture, key, pin: "4321")
        let (stored, secret) = try fixture.store("vault")
        try #require(stored == "stored\n", "\(stored)")
        try Data().write(to: URL(fileURLWithPath: key.state + "/always-uv"))

        let read = try Self.onTerminal(
            PolkitFixture.builtWorker, ["read", "vault"], steps: [("PIN", "4321")], environment: fixture.environment)
        #expect(read.output.contains("secret \(secret)"), "\(read) \(agent?.errors ?? "")")
        #expect(!read.output.contains("4321"), "the PIN is never shown")
        #expect(key.events.suffix(2) == ["pin accepted", "touched get-assertion"], "\(key.events)")

        let before = key.events.count
        #expect(try fixture.worker(["read", "vault"]) == "error -128\n")
        #expect(!key.events.dropFirst(before).contains { $0.hasPrefix("touched") }, "\(key.events)")
    }
}

extension CompanionTests.SoftwareKey {
    /// Gives the key a PIN.
    func setPIN(_ pin: String) throws {
        try Data(pin.utf8).write(to: URL(fileURLWithPath: state + "/pin"))
    }

    /// What the key logged of touches and PINs, in order.
    var events: [String] {
        let log = String(decoding: FileManager.default.contents(atPath: state + "/log") ?? Data(), as: UTF8.self)
        return log.split(separator: "\n").map(String.init).filter {
            $0.hasPrefix("touched") || $0.hasPrefix("denied") || $0.hasPrefix("timeout") || $0.hasSuffix(" pin")
                || $0 == "pin accepted"
        }
    }
}

extension CompanionTests {
    @Test(
        "two apps reading .companion items at once touch the one key in turn, as a USB key answers one command at a time: both read",
        arguments: Backend.allCases)
    func simultaneousReadsTakeTurns(backend: Backend) throws {
        let (fixture, key) = try Fixture.paired(backend)
        let (stored, secret) = try fixture.store("vault")
        try #require(stored == "stored\n", "\(stored)")
        // Each touch comes a second after the key asks, so the two reads overlap.
        try key.presence("touch after 1")
        let before = key.touches.count
        let reads = Mutex<[String]>([])
        let environment = fixture.environment
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let run = try? PolkitFixture.run(PolkitFixture.builtWorker, ["read", "vault"], environment: environment)
            reads.withLock { $0.append(run?.output ?? "failed to run") }
        }
        #expect(reads.withLock { $0 } == Array(repeating: "secret \(secret)\n", count: 2))
        #expect(Array(key.touches.dropFirst(before)) == ["touched get-assertion", "touched get-assertion"])
    }
}
