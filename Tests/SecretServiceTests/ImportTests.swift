import Foundation
import KeychainLibc
import SecretService
import Testing

/// `security import-secret-service` moving a populated GNOME Keyring (the real
/// `gnome-keyring-daemon`, on a private bus) into the keychain; then keychaind, activated once
/// GNOME Keyring is gone, serves the same items to `secret-tool`.
@Suite("Secret Service import from GNOME Keyring")
struct ImportTests {
    @Test("GNOME Keyring's items arrive with their labels, attributes and secrets; a second run adds nothing")
    func importFromGnomeKeyring() throws {
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let gnome = try LaunchedTool(
            try requireTool("/usr/bin/gnome-keyring-daemon"), ["--foreground", "--unlock", "--components=secrets"],
            stdin: Data("gnome-password".utf8), environment: bus.environment, deadline: 300)
        defer { gnome.stop() }
        var owner: Int32?
        for _ in 0..<600 where owner != gnome.process.processIdentifier {
            owner = try bus.ownerPID(of: SecretServiceProvider.busName)
            usleep(50_000)
        }
        #expect(owner == gnome.process.processIdentifier, "GNOME Keyring owns the name")
        try waitForDefaultCollection(environment: bus.environment)

        let tool = try requireTool("/usr/bin/secret-tool")
        let items: [(label: String, attributes: [String], secret: String)] = [
            ("Mail", ["service", "mail", "account", "alice"], "mail-secret"),
            (
                "Wi-Fi «home»", ["xdg:schema", "org.gnome.keyring.NetworkPassword", "server", "ap", "user", "bob"],
                "wifi"
            ),
            ("Note", ["service", "notes", "account", "carol", "extra", "x y"], "note\nwith lines"),
        ]
        for item in items {
            let stored = try runTool(
                tool, ["store", "--label=\(item.label)"] + item.attributes, stdin: Data(item.secret.utf8),
                environment: bus.environment)
            #expect(stored.status == 0, "\(stored)")
        }
        let security = try requireTool(productsDirectory + "/security")
        let imported = try runTool(security, ["import-secret-service"], environment: bus.environment)
        #expect(
            imported.status == 0 && imported.out.hasPrefix("3 imported, 0 updated, 0 already present"),
            "\(imported) \(imported.out)")
        let again = try runTool(security, ["import-secret-service"], environment: bus.environment)
        #expect(
            again.status == 0 && again.out.hasPrefix("0 imported, 0 updated, 3 already present"),
            "\(again) \(again.out)")

        // The other door: security reads them by service and account.
        let mail = try runTool(
            security, ["find-generic-password", "-s", "mail", "-a", "alice", "-w"], environment: bus.environment)
        #expect(mail.out == "mail-secret\n", "\(mail)")
        // libsecret's network schema (a server, a user) arrives as an internet password.
        let wifi = try runTool(
            security, ["find-internet-password", "-s", "ap", "-a", "bob", "-w"], environment: bus.environment)
        #expect(wifi.status == 0 && wifi.out == "wifi\n", "\(wifi) \(wifi.out)")

        // GNOME Keyring leaves; secret-tool activates keychaind, which hands the name to the agent
        // the security tool started, and finds the items with their attributes and labels.
        gnome.stop()  // SIGKILL: it ignores SIGTERM
        let note = try runTool(tool, ["lookup", "extra", "x y"], environment: bus.environment)
        #expect(note.status == 0 && note.out == "note\nwith lines", "\(note)")
        let search = try runTool(
            tool, ["search", "--all", "xdg:schema", "org.gnome.keyring.NetworkPassword"], environment: bus.environment)
        let listed = search.out + String(decoding: search.stderr, as: UTF8.self)
        #expect(
            listed.contains("label = Wi-Fi «home»") && listed.contains("attribute.server = ap")
                && listed.contains("attribute.user = bob") && listed.contains("secret = wifi"), "\(listed)")
    }
}
