import Foundation
import KeychainAgent
import SecretService
import Testing

#if canImport(Glibc)
    import Glibc
#endif

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
}
