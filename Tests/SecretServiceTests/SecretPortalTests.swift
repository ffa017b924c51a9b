import Foundation
import KeychainTestSupport
import Testing

/// The Secret portal's backend with the real xdg-desktop-portal, reached the way a Flatpak app
/// reaches it: from a bwrap sandbox with a `/.flatpak-info`, through libsecret itself
/// (`secret-tool`, whose file backend asks the portal) and through a Gio client.
@Suite("The Secret portal: a Flatpak app's secret through xdg-desktop-portal")
struct SecretPortalTests {
    /// A private bus that activates the built keychaind, and xdg-desktop-portal on it with the
    /// repository's `.portal` file as its only backend.
    final class Fixture {
        let bus: PrivateSessionBus
        let portal: TestDaemon
        /// Whether the fixture made the bus, and stops it.
        private let ownsBus: Bool

        /// The repository's `.portal` file.
        static let ourPortalFile = SecretToolTests.repository + "/dist/xdg-desktop-portal/keychain.portal"
        /// GNOME Keyring's, as Debian installs it: the backend is whoever owns `org.freedesktop.secrets`.
        static let gnomeKeyringPortalFile = "/usr/share/xdg-desktop-portal/portals/gnome-keyring.portal"

        /// - Parameters:
        ///   - existing: A bus to use (kept when the fixture ends), else a new one.
        ///   - portalFile: The portal's only backend file.
        ///   - environment: Added to the bus's (a display, say).
        ///   - prompter: A program the bus starts for GNOME's system prompter's name.
        init(
            on existing: PrivateSessionBus? = nil, portalFile: String = ourPortalFile,
            environment extra: [String: String] = [:], prompter: String? = nil
        ) throws {
            bus = try existing ?? PrivateSessionBus.activatingKeychaind(environment: extra)
            ownsBus = existing == nil
            if let prompter {
                try "[D-BUS Service]\nName=org.gnome.keyring.SystemPrompter\nExec=\(prompter)\n".write(
                    toFile: bus.root + "/services/org.gnome.keyring.SystemPrompter.service", atomically: true,
                    encoding: .utf8)
            }
            let portals = bus.root + "/portals-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: portals, withIntermediateDirectories: true)
            guard FileManager.default.fileExists(atPath: portalFile) else {
                throw ToolMissing(description: "\(portalFile) is missing")
            }
            try FileManager.default.copyItem(
                atPath: portalFile,
                toPath: portals + "/" + URL(fileURLWithPath: portalFile).lastPathComponent)
            var environment = bus.environment
            environment["XDG_DESKTOP_PORTAL_DIR"] = portals
            environment["XDG_CURRENT_DESKTOP"] = "X-Test"
            do {
                portal = try TestDaemon(
                    try requireTool("/usr/libexec/xdg-desktop-portal"), ["--verbose"], environment: environment)
            } catch {
                if existing == nil { bus.stop() }
                throw error
            }
            let end = Date().addingTimeInterval(60)
            while (try? bus.ownerPID(of: "org.freedesktop.portal.Desktop")) != portal.pid, Date() < end {
                usleep(50_000)
            }
        }

        deinit {
            portal.stop()
            if ownsBus { bus.stop() }
        }

        /// Runs `arguments` in a sandbox of app `appID` with a home of its own (`home`), the bus
        /// and the test clients bound in.
        func sandboxed(
            _ appID: String, home: String, _ arguments: [String], stdin: Data? = nil, deadline: TimeInterval = 60
        ) throws -> ToolResult {
            let (arguments, environment) = try sandbox(appID, home: home, arguments)
            do {
                return try runTool(
                    try requireTool("/usr/bin/bwrap"), arguments, stdin: stdin, environment: environment,
                    deadline: deadline)
            } catch {
                throw ToolMissing(description: "\(error); \(logs)")
            }
        }

        /// bwrap's arguments and environment for `arguments` in a sandbox of app `appID`.
        func sandbox(_ appID: String, home: String, _ arguments: [String]) throws -> ([String], [String: String]) {
            let info = bus.root + "/flatpak-info-\(appID)"
            try "[Application]\nname=\(appID)\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n"
                .write(toFile: info, atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let clients = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients"
            let sandbox = [
                "--unshare-pid", "--die-with-parent", "--tmpfs", "/", "--ro-bind", "/usr", "/usr",
                "--ro-bind", "/etc", "/etc", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev",
                "--bind", bus.root + "/bus", bus.root + "/bus", "--ro-bind", clients, clients,
                "--bind", home, home, "--ro-bind", info, "/.flatpak-info",
            ]
            var environment = bus.environment
            environment["HOME"] = home
            environment["XDG_DATA_HOME"] = home + "/data"
            environment["XDG_CONFIG_HOME"] = home + "/config"
            environment["XDG_RUNTIME_DIR"] = home
            return (sandbox + arguments, environment)
        }

        /// The last of what xdg-desktop-portal and the bus (with the keychaind it started) said.
        var logs: String {
            "xdg-desktop-portal: \(portal.errors.suffix(1500))\nbus and keychaind: \(bus.daemon.errors.suffix(1500))"
        }

        /// `secret-tool` (libsecret) in the sandbox of `appID`, tried up to four times, 15 s each.
        ///
        /// Debian 12's libsecret (0.20.5) subscribes to the portal request's `Response` signal only
        /// once `RetrieveSecret` has returned (it passes no `handle_token`, so it cannot know the
        /// request's path before): when the backend answers first, the signal is dropped and
        /// libsecret waits for ever. Later libsecret, which Flatpak runtimes ship, subscribes first.
        /// A run that hangs so is killed and tried again; the Gio client above is never retried.
        func libsecret(_ appID: String, home: String, _ arguments: [String], stdin: Data? = nil) throws -> ToolResult {
            var failure: any Error = ToolMissing(description: "not run")
            for _ in 0..<4 {
                do {
                    return try sandboxed(
                        appID, home: home, ["/usr/bin/secret-tool"] + arguments, stdin: stdin, deadline: 15)
                } catch {
                    failure = error
                }
            }
            throw failure
        }

        /// What `portal_client.py` printed.
        func client(_ result: ToolResult) throws -> [String: Any] {
            let line = try #require(result.out.split(separator: "\n").last, "\(result)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(result)")
        }

        var clientScript: String { SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/portal_client.py" }

        /// `secret-tool` on the host, as the user's own programs run it.
        func hostSecretTool(_ arguments: [String]) throws -> ToolResult {
            try runTool(try requireTool("/usr/bin/secret-tool"), arguments, environment: bus.environment)
        }
    }

    @Test(
        "each sandboxed app gets a 64-byte secret of its own, the same on every request, kept in the keychain, through keychaind's portal file and through GNOME Keyring's (xdg-desktop-portal 1.16's choice)",
        arguments: [Fixture.ourPortalFile, Fixture.gnomeKeyringPortalFile])
    func eachAppGetsItsOwnSecret(portalFile: String) throws {
        let fixture = try Fixture(portalFile: portalFile)
        let home = fixture.bus.root + "/apps"
        var secrets: [String] = []
        for appID in ["org.example.Notes", "org.example.Notes", "org.example.Mail"] {
            let run = try fixture.sandboxed(
                appID, home: home + "/" + appID, ["/usr/bin/python3", fixture.clientScript, "frontend"])
            let answer = try fixture.client(run)
            #expect(answer["response"] as? Int == 0, "\(answer) \(run) \(fixture.logs)")
            let secret = answer["secret"] as? String ?? ""
            #expect(secret.count == 128, "64 bytes: \(secret.count / 2)")
            secrets.append(secret)
        }
        #expect(secrets[0] == secrets[1], "the same app gets the same secret again")
        #expect(secrets[0] != secrets[2], "another app gets another secret")
        // Stored as GNOME Keyring stores it: a Secret Service item with the attribute app_id,
        // which the user's own programs see.
        // (secret-tool prints the attributes to standard error, the label and secret to output.)
        let search = try fixture.hostSecretTool(["search", "--all", "app_id", "org.example.Notes"])
        let attributes = String(decoding: search.stderr, as: UTF8.self)
        #expect(attributes.contains("attribute.app_id = org.example.Notes"), "\(search)")
        #expect(search.out.contains("label = Secret portal: org.example.Notes"), "\(search)")
        #expect(!attributes.contains("org.example.Mail"), "\(search)")
        // In the app's own access group: the app, talking to the Secret Service itself, finds
        // it; another app does not.
        for (appID, count) in [("org.example.Notes", 1), ("org.example.Mail", 0)] {
            let run = try fixture.sandboxed(
                appID, home: home + "/" + appID,
                ["/usr/bin/python3", fixture.clientScript, "search", "org.example.Notes"])
            #expect(try fixture.client(run)["found"] as? Int == count, "\(appID): \(run)")
        }
    }

    @Test(
        "an app that used GNOME Keyring's portal gets the same secret once its keyring is moved in, and the secret moves into the app's group"
    )
    func gnomeKeyringPortalSecretCarriesOver() async throws {
        // Before: GNOME Keyring is the Secret Service, and Debian's gnome-keyring.portal sends
        // the app's request to it; it makes the app's secret in its login keyring.
        let gnome = try await KeyringFileTests.GnomeKeyring(password: "gnome-password")
        defer { gnome.stop() }
        let home = gnome.bus.root + "/apps"
        func secret(of appID: String, _ fixture: Fixture) throws -> String {
            let run = try fixture.sandboxed(
                appID, home: home + "/" + appID, ["/usr/bin/python3", fixture.clientScript, "frontend"])
            let answer = try fixture.client(run)
            #expect(answer["response"] as? Int == 0, "\(appID): \(answer) \(run) \(fixture.logs)")
            return answer["secret"] as? String ?? ""
        }
        var before: String
        do {
            let fixture = try Fixture(on: gnome.bus, portalFile: Fixture.gnomeKeyringPortalFile)
            before = try secret(of: "org.example.Notes", fixture)
        }
        #expect(before.count == 128, "GNOME Keyring made a 64-byte secret")
        gnome.gnome.stop()

        // Moving in: from the file, with GNOME Keyring stopped; the app's secret is one more item.
        let security = try requireTool(productsDirectory + "/security")
        let imported = try runTool(
            security, ["import-keyring", "-p", "gnome-password", gnome.file], environment: gnome.bus.environment)
        #expect(imported.out.hasSuffix(": 4 imported, 0 updated, 0 already present, 0 left out\n"), "\(imported)")

        // After: keychaind is the Secret Service, so the same portal file (Debian 12's
        // xdg-desktop-portal keeps choosing it) reaches keychaind. The app gets the same secret,
        // so the keyring file it sealed with it still opens; another app gets its own.
        let fixture = try Fixture(on: gnome.bus, portalFile: Fixture.gnomeKeyringPortalFile)
        #expect(try secret(of: "org.example.Notes", fixture) == before, "\(fixture.logs)")
        #expect(try secret(of: "org.example.Notes", fixture) == before, "and again")
        #expect(try secret(of: "org.example.Mail", fixture) != before)
        // Now in the app's own group: the app, asking the Secret Service itself, finds it (its
        // group is all it sees), and there is one such item, not a copy left behind.
        let search = try fixture.sandboxed(
            "org.example.Notes", home: home + "/org.example.Notes",
            ["/usr/bin/python3", fixture.clientScript, "search", "org.example.Notes"])
        #expect(try fixture.client(search)["found"] as? Int == 1, "\(search)")
        let host = try fixture.hostSecretTool(["search", "--all", "app_id", "org.example.Notes"])
        let listed = String(decoding: host.stderr, as: UTF8.self).components(separatedBy: "attribute.app_id =")
        #expect(listed.count == 2, "one item: \(host)")
    }

    @Test("a program that is not xdg-desktop-portal is refused, and nothing is written to its descriptor")
    func onlyThePortalIsAnswered() throws {
        let fixture = try Fixture()
        // Started by a first request through the portal, so the backend runs.
        let first = try fixture.sandboxed(
            "org.example.Notes", home: fixture.bus.root + "/apps/notes",
            ["/usr/bin/python3", fixture.clientScript, "frontend"])
        #expect(try fixture.client(first)["response"] as? Int == 0, "\(first)")
        let direct = try runTool(
            "/usr/bin/python3", [fixture.clientScript, "backend", "org.example.Notes"],
            environment: fixture.bus.environment)
        let answer = try fixture.client(direct)
        #expect(answer["error"] as? String == "org.freedesktop.DBus.Error.AccessDenied", "\(answer)")
        #expect(answer["secret"] as? String == "", "no byte of the secret was written")
    }

    @Test("libsecret in a sandbox keeps its items in its own file, sealed with the portal's secret")
    func libsecretInASandboxUsesThePortal() throws {
        let fixture = try Fixture()
        let home = fixture.bus.root + "/apps/notes"
        let store = try fixture.libsecret(
            "org.example.Notes", home: home,
            ["store", "--label=Notes sync", "service", "notes.example.org", "user", "me"],
            stdin: Data("hunter2-in-a-sandbox".utf8))
        #expect(store.status == 0, "\(store) \(fixture.logs)")
        let lookup = try fixture.libsecret(
            "org.example.Notes", home: home, ["lookup", "service", "notes.example.org", "user", "me"])
        #expect(lookup.status == 0 && lookup.out == "hunter2-in-a-sandbox", "\(lookup) \(lookup.out)")
        // The item is in the app's own file, encrypted; the keychain holds only the app's secret.
        let file = try #require(FileManager.default.contents(atPath: home + "/data/keyrings/default.keyring"))
        #expect(file.range(of: Data("hunter2-in-a-sandbox".utf8)) == nil, "the file is encrypted")
        let host = try fixture.hostSecretTool(["search", "--all", "service", "notes.example.org"])
        #expect(!host.out.contains("notes.example.org"), "the app's item is not in the keychain: \(host.out)")
        // Another app cannot open the first one's file: its secret is another.
        let mail = fixture.bus.root + "/apps/mail"
        try FileManager.default.createDirectory(atPath: mail + "/data/keyrings", withIntermediateDirectories: true)
        try file.write(to: URL(fileURLWithPath: mail + "/data/keyrings/default.keyring"))
        let other = try fixture.libsecret(
            "org.example.Mail", home: mail, ["lookup", "service", "notes.example.org", "user", "me"])
        #expect(other.out != "hunter2-in-a-sandbox", "\(other) \(other.out)")
    }

    @Test(
        "while the keychain is locked, the app's request asks for its password in the desktop's prompter, naming the app; cancelled is response 1, the right password unlocks it"
    )
    func lockedKeychainAsksThroughThePrompter() throws {
        let xdotool = try requireTool("/usr/bin/xdotool")
        _ = try requireTool("/usr/bin/Xvfb")
        let (server, display) = try TestDaemon.xServer(environment: ["PATH": "/usr/bin:/bin"])
        defer { server.stop() }
        let fixture = try Fixture(
            environment: [
                "DISPLAY": display, "GDK_BACKEND": "x11", "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1",
            ], prompter: try requireTool("/usr/libexec/gcr-prompter"))
        let environment = fixture.bus.environment
        let security = try requireTool(productsDirectory + "/security")
        // The default (login) keychain, which keychaind made, gets a password and is locked.
        let password = "portal-\(UUID().uuidString.prefix(8))"
        let keychain = fixture.bus.root + "/data/keychains/login.keychain-db"
        for arguments in [
            ["set-keychain-password", "-o", "", "-p", password, keychain], ["lock-keychain", keychain],
        ] {
            let done = try runTool(security, arguments, environment: environment)
            try #require(done.status == 0, "security \(arguments[0]): \(done)")
        }

        let (arguments, sandboxed) = try fixture.sandbox(
            "org.example.Notes", home: fixture.bus.root + "/apps/notes",
            ["/usr/bin/python3", fixture.clientScript, "frontend"])
        /// The dialog the app's request brings up, once it names the app (read by OCR).
        func dialog(_ name: String) throws -> String {
            let window = try runTool(
                xdotool, ["search", "--sync", "--onlyvisible", "--name", "Unlock Keychain"], environment: environment,
                deadline: 120)
            try #require(
                window.status == 0 && !window.out.isEmpty, "the prompter's dialog is shown: \(window) \(fixture.logs)")
            let windowID = String(window.out.split(separator: "\n").first ?? "")
            var shown = ""
            for attempt in 0..<60 where !shown.contains("org.example.notes") {
                if attempt > 0 { usleep(1_000_000) }
                shown = try SystemPromptTests.read(window: windowID, as: name, environment).lowercased()
            }
            return shown
        }
        func press(_ keys: [[String]]) throws {
            for keys in keys {
                let pressed = try runTool(xdotool, keys, environment: environment, deadline: 60)
                #expect(pressed.status == 0, "\(pressed)")
            }
        }

        // Cancelled: the app gets response 1 and nothing on its pipe; the keychain stays locked.
        let cancelled = try LaunchedTool(
            try requireTool("/usr/bin/bwrap"), arguments, stdin: nil, environment: sandboxed, deadline: 180)
        defer { cancelled.stop() }
        #expect(try dialog("gcr-prompter-portal-cancel").contains("org.example.notes"))
        try press([["key", "Escape"]])
        while try cancelled.running() { usleep(50_000) }
        let refused = try fixture.client(cancelled.result)
        #expect(refused["response"] as? Int == 1 && refused["secret"] as? String == "", "\(refused)")

        // The right password: the app gets its secret.
        let client = try LaunchedTool(
            try requireTool("/usr/bin/bwrap"), arguments, stdin: nil, environment: sandboxed, deadline: 180)
        defer { client.stop() }
        let shown = try dialog("gcr-prompter-portal")
        #expect(shown.contains("org.example.notes"), "the dialog names the app: \(shown)")
        #expect(try client.running(), "the app waits for the unlock")
        try press([["type", "--delay", "20", password], ["key", "Return"]])
        while try client.running() { usleep(50_000) }
        let answer = try fixture.client(client.result)
        #expect(answer["response"] as? Int == 0, "\(answer) \(fixture.logs)")
        #expect((answer["secret"] as? String)?.count == 128, "64 bytes")
        // Unlocked in the agent, for every process.
        let info = try runTool(security, ["show-keychain-info", keychain], environment: environment)
        #expect(info.status == 0, "\(info)")
    }
}
