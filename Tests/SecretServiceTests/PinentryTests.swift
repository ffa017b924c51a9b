import Foundation
import SecretService
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An unlock prompt answered by a real pinentry (`pinentry-curses`) on the caller's own
/// terminal, typed into by a stand-in for a person (`Clients/terminal.py`, a pseudo-terminal).
@Suite("Secret Service unlock through pinentry")
struct PinentryTests {
    static let clients = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/"

    @Test(
        "Unlock asks on the caller's terminal through pinentry: a wrong password is refused and asked again, the right one unlocks for every process"
    )
    func pinentryOnTheCallersTerminal() throws {
        let python = try requireTool(PythonClientTests.python)
        let pinentry = try requireTool("/usr/bin/pinentry-curses")
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"),
            environment: ["KEYCHAIN_PINENTRY": pinentry, "TERM": "xterm"])
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        let password = "pin-\(UUID().uuidString.prefix(8))"
        let secret = "kept-\(UUID().uuidString.prefix(8))"
        #expect(
            try runTool(security, ["create-keychain", "-p", password, keychain], environment: bus.environment).status
                == 0)
        #expect(
            try runTool(
                security, ["add-generic-password", "-s", "pin", "-a", "x", "-w", secret, keychain],
                environment: bus.environment
            )
            .status == 0)
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        // The person sees the dialog, types a wrong password, sees it refused, types the right one.
        let typed = "keychain\twrong-password\nWrong password\t\(password)\n"
        let run = try runTool(
            python, [Self.clients + "terminal.py", python, Self.clients + "pinentry_client.py"],
            stdin: Data(typed.utf8), environment: bus.environment, deadline: 180)
        let screen = run.out
        #expect(run.status == 0, "\(run)\n\(screen)")
        #expect(screen.contains("unlocked") && screen.contains("secret=" + secret), "\(screen)")
        #expect(screen.contains("python3"), "the dialog names the program that asks: \(screen)")

        // Unlocked in the agent: another process reads without a password.
        let found = try runTool(
            security, ["find-generic-password", "-s", "pin", "-a", "x", "-w", keychain], environment: bus.environment)
        #expect(found.out == secret + "\n", "\(found)")
    }

    @Test(
        "secret-tool lookup of a locked keychain's item finds it among the locked results, asks on its terminal, prints the secret"
    )
    func secretToolUnlocksThroughPinentry() throws {
        let python = try requireTool(PythonClientTests.python)
        let pinentry = try requireTool("/usr/bin/pinentry-curses")
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"),
            environment: ["KEYCHAIN_PINENTRY": pinentry, "TERM": "xterm"])
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        let password = "pin-\(UUID().uuidString.prefix(8))"
        let secret = "kept-\(UUID().uuidString.prefix(8))"
        #expect(
            try runTool(security, ["create-keychain", "-p", password, keychain], environment: bus.environment).status
                == 0)
        let stored = try runTool(
            secretTool, ["store", "--label=Locked later", "service", "pin", "account", "x"], stdin: Data(secret.utf8),
            environment: bus.environment)
        #expect(stored.status == 0, "\(stored)")
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        // Locked: the item is listed as a locked result (by the index), never as an unlocked one.
        let search = try runTool(
            try requireTool("/usr/bin/gdbus"),
            [
                "call", "--session", "--dest", SecretServiceProvider.busName, "--object-path",
                "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.SearchItems", "{'service': 'pin', 'account': 'x'}",
            ], environment: bus.environment)
        #expect(
            search.out.hasPrefix("(@ao [], [objectpath '/org/freedesktop/secrets/collection/login/"), "\(search.out)")
        let other = try runTool(
            try requireTool("/usr/bin/gdbus"),
            [
                "call", "--session", "--dest", SecretServiceProvider.busName, "--object-path",
                "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.SearchItems", "{'service': 'nothing', 'account': 'x'}",
            ], environment: bus.environment)
        #expect(other.out.contains("(@ao [], @ao [])"), "\(other.out)")

        // secret-tool unlocks what it found: the dialog on its terminal, then the secret.
        let run = try runTool(
            python, [Self.clients + "terminal.py", secretTool, "lookup", "service", "pin", "account", "x"],
            stdin: Data("keychain\t\(password)\n".utf8), environment: bus.environment, deadline: 180)
        #expect(run.status == 0 && run.out.contains(secret), "\(run)\n\(run.out)")
        #expect(run.out.contains("secret-tool"), "the dialog names the program: \(run.out)")
    }

    @Test("Cancelling the pinentry dialog dismisses the prompt; the keychain stays locked")
    func cancelDismisses() throws {
        let python = try requireTool(PythonClientTests.python)
        let pinentry = try requireTool("/usr/bin/pinentry-curses")
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"),
            environment: ["KEYCHAIN_PINENTRY": pinentry, "TERM": "xterm"])
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        #expect(
            try runTool(security, ["create-keychain", "-p", "pw", keychain], environment: bus.environment).status == 0)
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        // Escape cancels pinentry-curses.
        let run = try runTool(
            python, [Self.clients + "terminal.py", python, Self.clients + "pinentry_client.py"],
            stdin: Data("keychain\t\u{1b}\n".utf8), environment: bus.environment, deadline: 180)
        #expect(run.status == 0 && run.out.contains("dismissed"), "\(run)\n\(run.out)")
        let status = try runTool(security, ["show-keychain-info", keychain], environment: bus.environment)
        let locked = try runTool(
            security, ["find-generic-password", "-s", "pin", keychain], environment: bus.environment)
        #expect(locked.status != 0, "still locked: \(locked) \(status)")
    }
}
