import Foundation
import KeychainTestSupport
import Testing

/// An item whose access control asks for its owner's authentication (`.userPresence`), stored by
/// an application through SecItemAdd, against every reader that cannot ask the person: each sees
/// that it exists, none gets its secret (issue 54).
@Suite("Items that ask for their owner's authentication keep their secret from readers that cannot ask")
struct GuardedItemReaderTests {
    @Test(
        "secret-tool, Python's secretstorage, security find-generic-password, dump-keychain and export-keyring list a user-presence item but never read its secret"
    )
    func readersThatCannotAskNeverGetTheSecret() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let environment = bus.environment
        let worker = try requireTool(productsDirectory + "/keychain-secitem-worker")
        let security = try requireTool(productsDirectory + "/security")
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let secret = "guarded-\(UUID().uuidString)"
        for (service, label, stored, flag) in [
            ("vault.example", "Vault", secret, ["userPresence"]), ("plain.example", "Plain", "plain-secret", []),
        ] {
            let added = try runTool(
                worker, ["add", service, "owner", label] + flag, stdin: Data(stored.utf8), environment: environment)
            try #require(added.status == 0 && added.out == "ok\n", "\(added) \(added.out)")
        }
        func neverShown(_ run: ToolResult) {
            #expect(!run.out.contains(secret) && !run.err.contains(secret), "\(run)")
        }

        // The Secret Service lists the item; its secret is refused, with a reason.
        let found = try runTool(secretTool, ["search", "--all", "account", "owner"], environment: environment)
        #expect(found.out.contains("label = Vault") && found.out.contains("label = Plain"), "\(found) \(found.out)")
        #expect(found.out.contains("secret = plain-secret"), "\(found.out)")
        neverShown(found)
        // GetSecrets leaves it out, as it leaves out a locked item: libsecret's lookup finds none.
        let lookup = try runTool(secretTool, ["lookup", "service", "vault.example"], environment: environment)
        #expect(lookup.status != 0 && lookup.out.isEmpty, "\(lookup) \(lookup.out)")
        neverShown(lookup)
        // GetSecret says why.
        let script = """
            import secretstorage, sys
            bus = secretstorage.dbus_init()
            item = next(secretstorage.search_items(bus, {"service": "vault.example"}))
            print(item.get_label())
            try:
                item.get_secret()
                print("read")
            except Exception as error:
                print("refused:", error)
            """
        let python = try runTool(
            try requireTool(PythonClientTests.python), ["-c", script], environment: environment)
        #expect(
            python.out.hasPrefix("Vault\nrefused:") && python.out.contains("owner's authentication"),
            "\(python) \(python.out)")
        neverShown(python)

        // The security tool: a search for the secret is refused; a dump shows the item without it.
        let password = try runTool(
            security, ["find-generic-password", "-s", "vault.example", "-w"], environment: environment)
        #expect(password.status != 0, "\(password)")
        neverShown(password)
        let attributes = try runTool(
            security, ["find-generic-password", "-s", "vault.example"], environment: environment)
        #expect(attributes.status == 0 && attributes.out.contains("\"svce\"<blob>=\"vault.example\""), "\(attributes)")
        let dump = try runTool(security, ["dump-keychain", "-d", "-a"], environment: environment)
        #expect(dump.status == 0, "\(dump) \(dump.err)")
        #expect(dump.out.contains("<withheld: the item asks for its owner's authentication>"), "\(dump.out)")
        #expect(dump.out.contains("access control: ak [userPresence]"), "\(dump.out)")
        #expect(dump.out.contains("plain-secret"), "\(dump.out)")
        neverShown(dump)

        // An export leaves it out, and says so.
        let output = bus.root + "/exported.kdbx"
        let exported = try runTool(
            security, ["export-keyring", "-o", output], stdin: Data("export password\n".utf8), environment: environment)
        #expect(
            exported.out.hasSuffix(
                ": 1 exported, 0 left out (not text), 1 left out (they ask for their owner's authentication)\n"),
            "\(exported) \(exported.out) \(exported.err)")
        let file = try Data(contentsOf: URL(fileURLWithPath: output))
        #expect(file.range(of: Data(secret.utf8)) == nil)

        // keychaind's access log: the plain item's secret went to secret-tool (through the Secret
        // Service) and to the security tool (through the agent's socket); the guarded one's never.
        let log = try runTool(security, ["access-log"], environment: environment)
        let lines = log.out.split(separator: "\n").map(String.init)
        #expect(log.status == 0, "\(log)")
        #expect(
            lines.contains {
                $0.contains(" read genp \"Plain\" (service \"plain.example\", account \"owner\") by pid ")
                    && $0.contains("(\(secretTool)), allowed by access group ")
            }, "\(log.out)")
        #expect(lines.contains { $0.contains("\"Plain\"") && $0.contains("(\(security)), allowed by") }, "\(log.out)")
        #expect(!lines.contains { $0.contains("vault.example") }, "\(log.out)")
        neverShown(log)
    }
}
