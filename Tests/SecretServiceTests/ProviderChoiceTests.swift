import Foundation
import KeychainLibc
import KeychainTestSupport
import Testing

/// `security secret-service enable|disable|status` on a session bus that reads activation files
/// where a user's does: the system's gnome-keyring file (Debian's, copied into a private
/// `XDG_DATA_DIRS`) against ours in the user's `XDG_DATA_HOME`, each provider really started by
/// the bus and identified by its executable.
@Suite struct ProviderChoiceTests {
    /// Debian's gnome-keyring activation file, as the system has it.
    static let gnomeKeyringFile = "/usr/share/dbus-1/services/org.freedesktop.secrets.service"

    /// Asks the bus to start the provider (a call to it) and returns the executable of the process
    /// that owns the name then.
    static func activatedProvider(_ bus: PrivateSessionBus) throws -> (pid: Int32, executable: String) {
        // The bus notices a new activation file by inotify; a reload makes this test not depend on
        // which of two ready descriptors it serves first.
        _ = try runTool(
            try requireTool("/usr/bin/dbus-send"),
            [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.ReloadConfig",
            ], environment: bus.environment)
        _ = try runTool(
            try requireTool("/usr/bin/dbus-send"),
            [
                "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.DBus.Peer.Ping",
            ], environment: bus.environment, deadline: 60)
        let pid = try #require(try bus.ownerPID(of: "org.freedesktop.secrets"), "a provider was started")
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        return (pid, executable)
    }

    static func stopProvider(_ pid: Int32) {
        kill(pid, SIGTERM)
        if !waitUntilGone(pid) { kill(pid, SIGKILL) }
    }

    @Test("enable makes the bus start keychaind instead of the system's gnome-keyring, and disable gives the name back")
    func enableAndDisable() throws {
        let gnome = try String(contentsOfFile: try Self.requireFile(Self.gnomeKeyringFile), encoding: .utf8)
        let system = FileManager.default.temporaryDirectory.path + "/system-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: system + "/dbus-1/services", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: system) }
        try gnome.write(
            toFile: system + "/dbus-1/services/org.freedesktop.secrets.service", atomically: true, encoding: .utf8)
        let keychaind = try requireTool(productsDirectory + "/keychaind")
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: keychaind, environment: ["XDG_DATA_DIRS": system], standardDirectories: true)
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        func tool(_ action: String) throws -> ToolResult {
            try runTool(security, ["secret-service", action], environment: bus.environment)
        }

        // The system's provider, as on a desktop with gnome-keyring installed.
        #expect(try tool("status").out.contains("gnome-keyring-daemon"))
        let before = try Self.activatedProvider(bus)
        #expect(before.executable.hasSuffix("/gnome-keyring-daemon"), "\(before.executable)")
        Self.stopProvider(before.pid)

        let enabled = try tool("enable")
        #expect(enabled.status == 0, "\(enabled)")
        #expect(try tool("status").out.contains(keychaind + " --secret-service"))
        let ours = try Self.activatedProvider(bus)
        #expect(ours.executable == keychaind, "\(ours.executable)")
        Self.stopProvider(ours.pid)

        let disabled = try tool("disable")
        #expect(disabled.status == 0 && disabled.out.contains("gnome-keyring-daemon"), "\(disabled)")
        let after = try Self.activatedProvider(bus)
        #expect(after.executable.hasSuffix("/gnome-keyring-daemon"), "\(after.executable)")
        Self.stopProvider(after.pid)
        // Nothing left of ours; a second disable has nothing to do.
        #expect(
            !FileManager.default.fileExists(atPath: bus.root + "/data/dbus-1/services/org.freedesktop.secrets.service"))
        #expect(try tool("disable").out.contains("nothing to do"))
    }

    /// A GNOME session starts GNOME Keyring's Secret Service at login from an XDG autostart entry
    /// (`/etc/xdg/autostart/gnome-keyring-secrets.desktop`, run by gnome-session), before any client
    /// could activate the chosen provider. `dex` runs a session's autostart entries as the
    /// specification says, in the test's place of gnome-session (which needs logind and systemd).
    @Test(
        "at a GNOME login, GNOME Keyring's autostarted Secret Service takes the name until enable turns its entry off for the user; disable turns it on again"
    )
    func enableTurnsOffGnomeKeyringsAutostart() throws {
        let dex = try requireTool("/usr/bin/dex")
        let entry = "gnome-keyring-secrets.desktop"
        let system = FileManager.default.temporaryDirectory.path + "/system-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: system) }
        for directory in ["/dbus-1/services", "/xdg/autostart"] {
            try FileManager.default.createDirectory(atPath: system + directory, withIntermediateDirectories: true)
        }
        // Debian's gnome-keyring files, as the system has them: its activation file, and its one
        // autostart entry that takes the name (its SSH and PKCS#11 entries are left out).
        try FileManager.default.copyItem(
            atPath: try Self.requireFile(Self.gnomeKeyringFile),
            toPath: system + "/dbus-1/services/org.freedesktop.secrets.service")
        try FileManager.default.copyItem(
            atPath: try Self.requireFile("/etc/xdg/autostart/" + entry), toPath: system + "/xdg/autostart/" + entry)
        let keychaind = try requireTool(productsDirectory + "/keychaind")
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: keychaind,
            environment: ["XDG_DATA_DIRS": system, "XDG_CONFIG_DIRS": system + "/xdg", "XDG_CURRENT_DESKTOP": "GNOME"],
            standardDirectories: true)
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        func tool(_ action: String) throws -> ToolResult {
            try runTool(security, ["secret-service", action], environment: bus.environment)
        }
        /// What a GNOME login starts: the commands dex runs (first listed, then run).
        func login() throws -> String {
            let listed = try runTool(
                dex, ["--autostart", "--environment", "GNOME", "--dry-run"], environment: bus.environment)
            let ran = try runTool(
                dex, ["--autostart", "--environment", "GNOME"], environment: bus.environment, deadline: 60)
            #expect(listed.status == 0 && ran.status == 0, "\(listed) \(ran)")
            return listed.out + String(decoding: listed.stderr, as: UTF8.self)
        }
        func owner() throws -> (pid: Int32, executable: String)? {
            for _ in 0..<200 {
                if let pid = try bus.ownerPID(of: "org.freedesktop.secrets") {
                    return (pid, try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"))
                }
                usleep(50_000)
            }
            return nil
        }

        // Chosen, but without the entry turned off, a login hands the name to GNOME Keyring.
        let enabled = try tool("enable")
        #expect(enabled.status == 0 && enabled.out.contains(entry), "\(enabled)")
        let userEntry = bus.root + "/config/autostart/" + entry
        let made = try String(contentsOfFile: userEntry, encoding: .utf8)
        try FileManager.default.removeItem(atPath: userEntry)
        #expect(try login().contains("--components=secrets"))
        let taken = try #require(try owner(), "GNOME Keyring took the name at login")
        #expect(taken.executable.hasSuffix("/gnome-keyring-daemon"), "\(taken)")
        Self.stopProvider(taken.pid)

        // With the entry enable writes, the login starts no Secret Service, and the first client
        // gets keychaind.
        try made.write(toFile: userEntry, atomically: true, encoding: .utf8)
        #expect(try tool("status").out.contains("\(entry): not started at login"))
        #expect(!(try login().contains("--components=secrets")))
        let ours = try Self.activatedProvider(bus)
        #expect(ours.executable == keychaind, "\(ours.executable)")
        Self.stopProvider(ours.pid)

        // Disabled: the entry is the system's again, and a login starts GNOME Keyring.
        let disabled = try tool("disable")
        #expect(disabled.status == 0 && disabled.out.contains("\(entry): started at login again"), "\(disabled)")
        #expect(!FileManager.default.fileExists(atPath: userEntry))
        #expect(try login().contains("--components=secrets"))
        let again = try #require(try owner(), "GNOME Keyring took the name at login")
        #expect(again.executable.hasSuffix("/gnome-keyring-daemon"), "\(again)")
        Self.stopProvider(again.pid)

        // A user's own entry of that name is never replaced nor removed.
        let mine = "[Desktop Entry]\nType=Application\nName=mine\nExec=/bin/true\n"
        try mine.write(toFile: userEntry, atomically: true, encoding: .utf8)
        #expect(try tool("enable").out.contains("is yours"))
        _ = try tool("disable")
        #expect(try String(contentsOfFile: userEntry, encoding: .utf8) == mine)
    }

    @Test(
        "with no activation file and no provider running, a client is refused by the bus at once, not after a timeout")
    func noProviderFailsFast() throws {
        // A bus that reads only its private directory (this machine's /usr/share has
        // gnome-keyring's file, which a standard session bus always reads), emptied.
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        try FileManager.default.removeItem(atPath: bus.root + "/services/org.freedesktop.secrets.service")
        _ = try runTool(
            try requireTool("/usr/bin/dbus-send"),
            [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.ReloadConfig",
            ], environment: bus.environment)
        // The bus answers that nothing provides the name: no activation is started, so there is
        // no activation timeout to wait out, and secret-tool reports it.
        let lookup = try runTool(
            try requireTool("/usr/bin/secret-tool"), ["lookup", "service", "mail"], environment: bus.environment,
            deadline: 60)
        let said = String(decoding: lookup.stderr, as: UTF8.self)
        #expect(lookup.status != 0 && said.contains("not provided by any .service files"), "\(lookup)")
        #expect(try bus.ownerPID(of: "org.freedesktop.secrets") == nil)
    }

    @Test("enable never overwrites an activation file it did not make")
    func enableKeepsAForeignFile() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let directory = bus.root + "/data/dbus-1/services"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let mine = "[D-BUS Service]\nName=org.freedesktop.secrets\nExec=/usr/bin/oo7-daemon\n"
        try mine.write(toFile: directory + "/org.freedesktop.secrets.service", atomically: true, encoding: .utf8)
        let security = try requireTool(productsDirectory + "/security")
        let refused = try runTool(security, ["secret-service", "enable"], environment: bus.environment)
        #expect(refused.status != 0, "\(refused)")
        let disabled = try runTool(security, ["secret-service", "disable"], environment: bus.environment)
        #expect(disabled.status == 0)
        #expect(try String(contentsOfFile: directory + "/org.freedesktop.secrets.service", encoding: .utf8) == mine)
    }

    static func requireFile(_ path: String) throws -> String {
        guard FileManager.default.fileExists(atPath: path) else { throw ToolMissing(description: "\(path) is missing") }
        return path
    }
}
