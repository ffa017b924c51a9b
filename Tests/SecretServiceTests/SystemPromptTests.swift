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
