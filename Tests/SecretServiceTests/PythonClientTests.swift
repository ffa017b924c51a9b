import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainLibc
import SecretService
import Testing

/// The Secret Service driven by Python's `secretstorage` and `keyring` (from PyPI, in the
/// repository's `.venv`, which `.ci/run` makes) on a private bus that activates the built
/// `keychaind`; `security` checks the same items from the other door.
@Suite("Secret Service with Python clients")
struct PythonClientTests {
    static let python = SecretToolTests.repository + "/.venv/bin/python3"

    struct Client: CustomTestStringConvertible, Sendable {
        var script: String
        var keptService: String
        var keptAccount: String
        var testDescription: String { script }
    }

    /// The pid of the process accepting on the Unix socket at `path` (`SO_PEERCRED`).
    static func serverPID(_ path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return nil }
        return (try? PeerCredentials(socket: fd))?.pid
    }

    @Test(
        "A Python client stores, finds, lists, updates and deletes; security sees what it kept and it sees security's item; the agent security started serves the bus",
        arguments: [
            Client(script: "secretstorage_client.py", keptService: "py-kept", keptAccount: "dave"),
            Client(script: "keyring_client.py", keptService: "kr-kept", keptAccount: "frank"),
        ])
    func pythonClient(_ client: Client) throws {
        let python = try requireTool(Self.python)
        let imports = try runTool(python, ["-c", "import secretstorage, keyring"], environment: [:])
        #expect(imports.status == 0, "secretstorage and keyring must be installed in .venv (bash .ci/run does it)")
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let secret = "py-\(UUID().uuidString.prefix(8))"
        let added = try runTool(
            security, ["add-generic-password", "-s", "from-security", "-a", "carol", "-w", secret + "-security"],
            environment: bus.environment)
        #expect(added.status == 0, "\(added)")

        let script = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/" + client.script
        let run = try runTool(python, [script], stdin: Data(secret.utf8), environment: bus.environment)
        #expect(run.status == 0 && run.out.hasSuffix("ok\n"), "\(run) \(run.out)")

        // security started the agent; the keychaind the bus activated handed the name to it.
        let agent = try #require(Self.serverPID(bus.socket))
        #expect(try bus.ownerPID(of: SecretServiceProvider.busName) == agent)

        let kept = try runTool(
            security, ["find-generic-password", "-s", client.keptService, "-a", client.keptAccount, "-w"],
            environment: bus.environment)
        #expect(kept.status == 0 && kept.out == secret + "-kept\n", "\(kept)")
    }

    /// The defect: `CreateItem` with `replace=false` refused a second item with the same
    /// attributes (`AlreadyExists`), so 12 of SecretStorage's own tests failed on ours.
    @Test func createItemWithoutReplaceAddsASecondItemWithTheSameAttributes() throws {
        let python = try requireTool(Self.python)
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let script = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/same_attributes_client.py"
        let run = try runTool(python, [script], environment: bus.environment)
        #expect(run.status == 0 && run.out.hasSuffix("ok\n"), "\(run) \(run.out)")
        // The keychain's own door still finds the plain item by service and account.
        let security = try requireTool(productsDirectory + "/security")
        let found = try runTool(
            security, ["find-generic-password", "-s", "same-plain", "-a", "a"], environment: bus.environment)
        #expect(found.status == 0, "\(found)")
    }
}

@Suite("Secret Service with a locked keychain")
struct LockedCollectionTests {
    @Test("A locked keychain is a locked collection; Unlock's prompt completes when security unlocks it; Lock locks it")
    func lockedCollection() throws {
        let python = try requireTool(PythonClientTests.python)
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        let created = try runTool(security, ["create-keychain", "-p", "pw", keychain], environment: bus.environment)
        #expect(created.status == 0, "\(created)")
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        let secret = "locked-\(UUID().uuidString.prefix(8))"
        let client = try LaunchedTool(
            python, [SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/locked_client.py"],
            stdin: Data(secret.utf8), environment: bus.environment, deadline: 240)
        defer { client.stop() }
        var waiting = false
        for _ in 0..<1200 where !waiting {
            waiting = client.outputSoFar.contains("waiting")
            if !(try client.running()) { break }
            usleep(50_000)
        }
        #expect(waiting, "\(client.outputSoFar)")
        usleep(500_000)
        #expect(try client.running(), "the client waits for the keychain to be unlocked")

        let unlocked = try runTool(security, ["unlock-keychain", "-p", "pw", keychain], environment: bus.environment)
        #expect(unlocked.status == 0, "\(unlocked)")
        while try client.running() { usleep(20_000) }
        #expect(client.result.status == 0 && client.result.out.hasSuffix("ok\n"), "\(client.result)")

        // The client's Lock locked the keychain for every process.
        var environment = bus.environment
        environment["KEYCHAIN_PASSWORD"] = nil
        let locked = try runTool(
            security, ["find-generic-password", "-s", "locked", "-a", "x", "-w", keychain], environment: environment)
        #expect(locked.status != 0, "\(locked)")
        #expect(try runTool(security, ["unlock-keychain", "-p", "pw", keychain], environment: environment).status == 0)
        let found = try runTool(
            security, ["find-generic-password", "-s", "locked", "-a", "x", "-w", keychain], environment: environment)
        #expect(found.out == secret + "\n", "\(found)")
    }

    @Test("A prompt whose client leaves the bus is dismissed and removed")
    func promptOfDepartedClient() async throws {
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        #expect(
            try await runToolAsync(security, ["create-keychain", "-p", "pw", keychain], environment: bus.environment)
                .status == 0)
        #expect(
            try await runToolAsync(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        let connection = try await DBusConnection.connectToSessionBus(environment: bus.environment)
        let reply = try await connection.call(
            .methodCall(
                path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service", member: "Unlock",
                destination: SecretServiceProvider.busName,
                body: [.array(.objectPath, [.objectPath("/org/freedesktop/secrets/collection/login")])]))
        guard reply.body.count == 2, case .objectPath(let prompt) = reply.body[1], prompt != "/" else {
            Issue.record("Unlock of a locked keychain gave no prompt")
            return
        }
        _ = try await connection.call(
            .methodCall(
                path: prompt, interface: "org.freedesktop.Secret.Prompt", member: "Prompt",
                destination: SecretServiceProvider.busName, body: [.string("")]))
        func promptExists() async throws -> Bool {
            let introspection = try await runToolAsync(
                try requireTool("/usr/bin/gdbus"),
                ["introspect", "--session", "--dest", SecretServiceProvider.busName, "--object-path", prompt],
                environment: bus.environment)
            return introspection.out.contains("org.freedesktop.Secret.Prompt")
        }
        #expect(try await promptExists())
        await connection.close()
        var exists = true
        for _ in 0..<100 where exists {
            try await Task.sleep(for: .milliseconds(100))
            exists = try await promptExists()
        }
        #expect(!exists, "the prompt outlived its client")
    }
}
