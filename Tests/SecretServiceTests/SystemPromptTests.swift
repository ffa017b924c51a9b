import Foundation
import KeychainTestSupport
import SecretService
import Testing

/// An unlock prompt shown by the desktop's own prompter: GNOME's `gcr-prompter` (Debian's `gcr`),
/// started by a private session bus on a private X server (Xvfb), answered as a person would,
/// with the keyboard (`xdotool`). The password reaches keychaind through gcr's secret exchange.
@Suite("Secret Service unlock through the desktop's prompter")
struct SystemPromptTests {
    @Test(
        "Unlock asks through GNOME's system prompter: its dialog shows the keychain's prompt, a wrong password is asked again, the right one unlocks for every process"
    )
    func gcrPrompter() throws {
        let xdotool = try requireTool("/usr/bin/xdotool")
        let prompter = try requireTool("/usr/libexec/gcr-prompter")
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let security = try requireTool(productsDirectory + "/security")
        _ = try requireTool("/usr/bin/Xvfb")
        let (server, display) = try TestDaemon.xServer(environment: ["PATH": "/usr/bin:/bin"])
        defer { server.stop() }
        let bus = try PrivateSessionBus.activatingKeychaind(environment: [
            "DISPLAY": display, "GDK_BACKEND": "x11", "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1",
        ])
        defer { bus.stop() }
        // The bus starts gcr-prompter for the prompter's name, as a desktop's session bus does.
        try "[D-BUS Service]\nName=org.gnome.keyring.SystemPrompter\nExec=\(prompter)\n".write(
            toFile: bus.root + "/services/org.gnome.keyring.SystemPrompter.service", atomically: true, encoding: .utf8)
        let reloaded = try runTool(
            try requireTool("/usr/bin/dbus-send"),
            [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.ReloadConfig",
            ], environment: bus.environment)
        try #require(reloaded.status == 0, "\(reloaded)")

        let environment = bus.environment
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        let password = "gcr-\(UUID().uuidString.prefix(8))"
        let secret = "kept-\(UUID().uuidString.prefix(8))"
        for arguments in [
            ["create-keychain", "-p", password, keychain],
            ["add-generic-password", "-s", "prompted", "-a", "x", "-w", secret, keychain], ["lock-keychain", keychain],
        ] {
            let done = try runTool(security, arguments, environment: environment)
            try #require(done.status == 0, "security \(arguments[0]): \(done)")
        }

        // A program asks for the locked item: libsecret unlocks through the Secret Service's prompt.
        let lookup = try LaunchedTool(
            secretTool, ["lookup", "service", "prompted", "account", "x"], stdin: nil, environment: environment,
            deadline: 180)
        defer { lookup.stop() }

        // The person sees the dialog (its title is the keychain's prompt), types a wrong
        // password, then, asked again with the reason, the right one.
        for typed in ["wrong-password", password] {
            let window = try runTool(
                xdotool, ["search", "--sync", "--onlyvisible", "--name", "Unlock Keychain"], environment: environment,
                deadline: 120)
            try #require(window.status == 0 && !window.out.isEmpty, "the prompter's dialog is shown: \(window)")
            let windowID = String(window.out.split(separator: "\n").first ?? "")
            // What the dialog says, once it says it (read again until then, for up to a minute).
            let awaited = typed == password ? "wrongpassword.tryagain." : "bin/secret-tool"
            var shown = ""
            for attempt in 0..<60 where !shown.contains(awaited) {
                if attempt > 0 { usleep(1_000_000) }
                shown = try Self.read(
                    window: windowID, as: "gcr-prompter-\(typed == password ? "second" : "first")", environment)
            }
            // It names the keychain and the program that asks, by its executable (OCR reads the
            // path's first slash as it likes); asked again, it says why.
            #expect(shown.contains(awaited), "\(shown)")
            #expect(shown.contains(SeahorseTests.normalized("The keychain \"Login\" is locked")), "\(shown)")
            #expect(shown.contains("bin/secret-tool(pid"), "\(shown)")
            if typed != password {
                // Another program answering in the prompter's place is refused.
                let forged = try runTool(
                    try requireTool("/usr/bin/gdbus"),
                    [
                        "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path",
                        "/org/keychain/Prompt/p1", "--method",
                        "org.gnome.keyring.internal.Prompter.Callback.PromptReady",
                        "yes", "{}",
                        "[sx-aes-1]\npublic=AAAA\nsecret=AAAAAAAAAAAAAAAAAAAAAA==\niv=AAAAAAAAAAAAAAAAAAAAAA==\n",
                    ], environment: environment)
                #expect(
                    forged.status != 0 && String(decoding: forged.stderr, as: UTF8.self).contains("NoSuchObject"),
                    "\(forged)")
                #expect(try lookup.running(), "the forged answer answered nothing")
            }
            for keys in [["type", "--delay", "20", typed], ["key", "Return"]] {
                let pressed = try runTool(xdotool, keys, environment: environment, deadline: 60)
                #expect(pressed.status == 0, "\(pressed)")
            }
            if typed != password {
                // Refused: the keychain stays locked, and the program still waits.
                usleep(1_000_000)
                let locked = try runTool(
                    security, ["find-generic-password", "-s", "prompted", "-a", "x", "-w", keychain],
                    stdin: Data(), environment: environment)
                #expect(locked.status != 0 && locked.out.isEmpty, "a wrong password unlocked nothing: \(locked)")
                #expect(try lookup.running(), "the program still waits for the unlock")
            }
        }
        while try lookup.running() { usleep(50_000) }
        #expect(lookup.result.status == 0 && lookup.result.out == secret, "\(lookup.result)")

        // Unlocked in the agent: another process reads without a password.
        let found = try runTool(
            security, ["find-generic-password", "-s", "prompted", "-a", "x", "-w", keychain], environment: environment)
        #expect(found.out == secret + "\n", "\(found)")
    }

    /// KDE Plasma's prompter, `org.kde.secretprompter`, is Plasma 6.5's `ksecretprompter`; Debian 12
    /// has Plasma 5.27, without it, so a stand-in speaking its protocol as its source does
    /// (`Clients/kde_secretprompter.py`) is started by the bus in its place, with a scripted person.
    @Test(
        "In a Plasma session, Unlock asks through KDE's secret prompter: the password comes back as a descriptor, a wrong one is asked again with the reason, Reject cancels, and only the prompter may answer"
    )
    func kdeSecretPrompter() throws {
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let security = try requireTool(productsDirectory + "/security")
        let gdbus = try requireTool("/usr/bin/gdbus")
        let python = try requireTool("/usr/bin/python3")
        let bus = try PrivateSessionBus.activatingKeychaind(environment: [
            "XDG_CURRENT_DESKTOP": "KDE", "KEYCHAIN_PINENTRY": "off",
        ])
        defer { bus.stop() }
        let password = "kde-\(UUID().uuidString.prefix(8))"
        let secret = "kept-\(UUID().uuidString.prefix(8))"
        // What the person does, prompt after prompt: a wrong password then the right one; Cancel;
        // a prompter gone wrong, passing more than any password and never its end; nothing (the
        // dialog stays up until the program goes away).
        let answers = bus.root + "/kde-answers", log = bus.root + "/kde-log"
        try "password wrong-password\npassword \(password)\nreject\nflood\nwait\n".write(
            toFile: answers, atomically: true, encoding: .utf8)
        let script = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/kde_secretprompter.py"
        // Both desktops' prompters can be started; GNOME's fails to start, so only choosing
        // KDE's in a Plasma session unlocks anything (pinentry is off).
        try "[D-BUS Service]\nName=org.kde.secretprompter\nExec=\(python) \(script) \(answers) \(log)\n".write(
            toFile: bus.root + "/services/org.kde.secretprompter.service", atomically: true, encoding: .utf8)
        try "[D-BUS Service]\nName=org.gnome.keyring.SystemPrompter\nExec=/bin/false\n".write(
            toFile: bus.root + "/services/org.gnome.keyring.SystemPrompter.service", atomically: true, encoding: .utf8)
        let reloaded = try runTool(
            gdbus,
            [
                "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                "--method", "org.freedesktop.DBus.ReloadConfig",
            ], environment: bus.environment)
        try #require(reloaded.status == 0, "\(reloaded)")
        let environment = bus.environment
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        for arguments in [
            ["create-keychain", "-p", password, keychain],
            ["add-generic-password", "-s", "prompted", "-a", "x", "-w", secret, keychain], ["lock-keychain", keychain],
        ] {
            let done = try runTool(security, arguments, environment: environment)
            try #require(done.status == 0, "security \(arguments[0]): \(done)")
        }
        func events() -> [[String: String]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?.mapValues { "\($0)" }
            }
        }
        func lookup() throws -> LaunchedTool {
            try LaunchedTool(
                secretTool, ["lookup", "service", "prompted", "account", "x"], stdin: nil, environment: environment,
                deadline: 120)
        }
        func stillLocked() throws -> Bool {
            let locked = try runTool(
                security, ["find-generic-password", "-s", "prompted", "-a", "x", "-w", keychain], stdin: Data(),
                environment: environment)
            return locked.status != 0 && locked.out.isEmpty
        }

        // A wrong password, then the right one: the program gets its secret.
        let unlocking = try lookup()
        defer { unlocking.stop() }
        while try unlocking.running() { usleep(50_000) }
        #expect(unlocking.result.status == 0 && unlocking.result.out == secret, "\(unlocking.result) \(events())")
        let first = events()
        let prompt = first.first { $0["event"] == "prompt" }
        #expect(prompt?["member"] == "UnlockCollectionPrompt", "\(first)")
        // The dialog names the keychain and the program that asks, by its executable and pid.
        #expect(prompt?["collection"]?.hasPrefix("\"Login\", for /usr/bin/secret-tool (pid ") == true, "\(first)")
        // The answers, without the prompt itself and its dismissal after the right password,
        // which may be recorded before or after the program has its secret.
        let replies = first.filter { $0["event"] != "prompt" && $0["event"] != "dismiss" }.map {
            [$0["event"], $0["member"], $0["action"], $0["reason"]]
        }
        #expect(
            replies
                == [
                    ["reply", "Accepted", "1", nil], ["retry", nil, nil, "Wrong password. Try again."],
                    ["reply", "Accepted", "0", nil],
                ]
                || replies
                    == [
                        ["retry", nil, nil, "Wrong password. Try again."], ["reply", "Accepted", "1", nil],
                        ["reply", "Accepted", "0", nil],
                    ],
            "kept after the wrong password with the reason, taken away after the right one: \(first)")

        // Cancel: the program gets nothing, and the keychain stays locked.
        let locked = try runTool(security, ["lock-keychain", keychain], environment: environment)
        try #require(locked.status == 0, "\(locked)")
        let cancelled = try lookup()
        defer { cancelled.stop() }
        while try cancelled.running() { usleep(50_000) }
        #expect(cancelled.result.out.isEmpty, "\(cancelled.result)")
        #expect(try stillLocked())
        #expect(events().dropFirst(first.count).contains { $0["member"] == "Rejected" && $0["action"] == "0" })

        // An answer that is not a password is refused at once (no waiting for an end that never
        // comes): the prompt ends as cancelled, and the keychain stays locked.
        let flooded = try lookup()
        defer { flooded.stop() }
        while try flooded.running() { usleep(50_000) }
        #expect(flooded.result.out.isEmpty, "\(flooded.result)")
        #expect(try stillLocked())
        #expect(events().contains { $0["member"] == "Accepted" && $0["error"] == "org.freedesktop.DBus.Error.Failed" })

        // A dialog left up: another program answering in the prompter's place is refused; when the
        // program that asked goes away, the dialog is taken away.
        let waiting = try lookup()
        defer { waiting.stop() }
        var request: String?
        for _ in 0..<600 where request == nil {
            usleep(50_000)
            request = events().filter { $0["event"] == "prompt" }.dropFirst(3).first?["request"]
        }
        let path = try #require(request, "a fourth prompt: \(events())")
        let forged = try runTool(
            gdbus,
            [
                "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", path, "--method",
                "org.kde.secretprompter.request.Rejected",
            ], environment: environment)
        #expect(
            forged.status != 0 && String(decoding: forged.stderr, as: UTF8.self).contains("NoSuchObject"), "\(forged)")
        #expect(try waiting.running(), "the forged answer answered nothing")
        waiting.stop()
        var dismissed = false
        for _ in 0..<600 where !dismissed {
            usleep(50_000)
            dismissed = events().last?["event"] == "dismiss"
        }
        #expect(dismissed, "\(events())")
        #expect(try stillLocked())
    }

    /// The text a window shows (its screenshot at twice its size, kept under
    /// `.build/test-artifacts`, read by tesseract), normalized as ``SeahorseTests/normalized(_:)`` does.
    static func read(window: String, as name: String, _ environment: [String: String]) throws -> String {
        try FileManager.default.createDirectory(atPath: SeahorseTests.artifacts, withIntermediateDirectories: true)
        let shot = SeahorseTests.artifacts + "/\(name).png"
        let taken = try runTool(
            try requireTool("/usr/bin/import"), ["-window", window, "-resize", "200%", shot], environment: environment,
            deadline: 30)
        try #require(taken.status == 0, "\(taken)")
        let read = try runTool(
            try requireTool("/usr/bin/tesseract"), [shot, "-"], environment: environment, deadline: 60)
        return SeahorseTests.normalized(read.out)
    }
}
