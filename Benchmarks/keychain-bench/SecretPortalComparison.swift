import Foundation
import KeychainLibc

/// The Secret portal: an app's `RetrieveSecret` through the real xdg-desktop-portal, from a
/// sandboxed app (bwrap with a `/.flatpak-info`, as Flatpak makes one), with keychaind as the
/// backend against GNOME Keyring as the backend, each on the bus of its Secret Service rows. One
/// client process per backend times each call from the request to the portal's `Response`
/// signal with the secret written; its floor, in the same rounds, is a `Peer.Ping` to
/// xdg-desktop-portal (the bus and the portal's own process, before any backend).
struct SecretPortalComparison {
    let scratch: String
    let rounds: Int
    let warmup: Int

    /// The app id the sandbox claims.
    static let appID = "org.example.BenchNotes"

    struct Outcome {
        var calls: [UInt64]
        var floor: [UInt64]
    }

    /// Times `rounds` calls through an xdg-desktop-portal started on the bus of `environment`,
    /// whose only backend is the one `portalFile` declares.
    func measure(environment: [String: String], portalFile: String, name: String) throws -> Outcome {
        guard let portal = Self.portalExecutable, let bwrap = GnomeKeyring.find("bwrap"),
            let python = GnomeKeyring.find("python3")
        else {
            throw BenchmarkFailure("not measured: xdg-desktop-portal, bwrap or python3 is not installed")
        }
        let directory = scratch + "/portal-\(name)"
        try FileManager.default.createDirectory(
            atPath: directory + "/portals", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try? FileManager.default.removeItem(atPath: directory + "/portals/\(name).portal")
        try FileManager.default.copyItem(atPath: portalFile, toPath: directory + "/portals/\(name).portal")
        try "[Application]\nname=\(Self.appID)\n".write(
            toFile: directory + "/flatpak-info", atomically: true, encoding: .utf8)
        try Self.client.write(toFile: directory + "/client.py", atomically: true, encoding: .utf8)

        var portalEnvironment = environment
        portalEnvironment["XDG_DESKTOP_PORTAL_DIR"] = directory + "/portals"
        portalEnvironment["XDG_CURRENT_DESKTOP"] = "X-Bench"
        let started = try ChildProcess.start(portal, [], environment: portalEnvironment)
        close(started.output)
        defer { ChildProcess.stop(started.pid) }
        // The client calls only once this portal owns its name: before, the bus would start the
        // system's xdg-desktop-portal (its activation file), with the system's backends.
        try SecretServiceClient.waitForOwner(Self.frontendName, pid: started.pid, environment: environment)

        // The bus's socket, when it is a file (an abstract one is reached as it is).
        let socketBinds = (environment["DBUS_SESSION_BUS_ADDRESS"] ?? "").split(separator: ",").compactMap { part in
            part.split(separator: "path=", maxSplits: 1).dropFirst().first.map(String.init)
        }.flatMap { ["--bind", $0, $0] }
        let sandbox =
            [
                "--unshare-pid", "--die-with-parent", "--tmpfs", "/", "--ro-bind", "/usr", "/usr",
                "--ro-bind", "/etc", "/etc", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                "--ro-bind", directory, directory, "--ro-bind", directory + "/flatpak-info", "/.flatpak-info",
            ] + socketBinds + [python, directory + "/client.py", String(rounds)]
        let run = try ChildProcess.run(bwrap, sandbox, environment: environment)
        let printed = String(decoding: run.standardOutput, as: UTF8.self)
        guard run.status == 0, let line = printed.split(separator: "\n").last,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let calls = object["calls"] as? [NSNumber], let floor = object["floor"] as? [NSNumber]
        else {
            let errors = String(decoding: run.standardError, as: UTF8.self).suffix(300)
            throw BenchmarkFailure(
                "the sandboxed client failed (status \(run.status)): \(printed.suffix(200)) \(errors)")
        }
        return Outcome(
            calls: calls.dropFirst(warmup).map(\.uint64Value), floor: floor.dropFirst(warmup).map(\.uint64Value))
    }

    /// xdg-desktop-portal's bus name.
    static let frontendName = "org.freedesktop.portal.Desktop"

    /// xdg-desktop-portal's executable, where Debian installs it.
    static var portalExecutable: String? {
        let path = "/usr/libexec/xdg-desktop-portal"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    /// The repository's `.portal` file for keychaind.
    static var ourPortalFile: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("dist/xdg-desktop-portal/keychain.portal").path
    }

    /// GNOME Keyring's, as Debian installs it.
    static let gnomePortalFile = "/usr/share/xdg-desktop-portal/portals/gnome-keyring.portal"

    /// The sandboxed client (Python and Gio, as an app's libsecret asks): each round a
    /// `Peer.Ping` to the portal, then `RetrieveSecret` with a new pipe, timed until the request's
    /// `Response` arrives; the secret is read and checked after the timing.
    static let client = #"""
        import json, os, sys, time
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        context = GLib.MainContext.default()
        sender = bus.get_unique_name()[1:].replace(".", "_")
        calls, floor = [], []
        for round in range(int(sys.argv[1])):
            start = time.perf_counter_ns()
            bus.call_sync("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop",
                          "org.freedesktop.DBus.Peer", "Ping", None, None, Gio.DBusCallFlags.NONE, -1, None)
            floor.append(time.perf_counter_ns() - start)
            reader, writer = os.pipe()
            descriptors = Gio.UnixFDList.new()
            index = descriptors.append(writer)
            os.close(writer)
            token = "bench%d" % round
            handle = "/org/freedesktop/portal/desktop/request/%s/%s" % (sender, token)
            answers = []
            subscription = bus.signal_subscribe(
                None, "org.freedesktop.portal.Request", "Response", handle, None, Gio.DBusSignalFlags.NONE,
                lambda *signal: answers.append(signal[5].unpack()[0]))
            start = time.perf_counter_ns()
            bus.call_with_unix_fd_list_sync(
                "org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Secret",
                "RetrieveSecret", GLib.Variant("(ha{sv})", (index, {"handle_token": GLib.Variant("s", token)})),
                None, Gio.DBusCallFlags.NONE, 60000, descriptors, None)
            while not answers:
                context.iteration(True)
            calls.append(time.perf_counter_ns() - start)
            bus.signal_unsubscribe(subscription)
            del descriptors
            secret = os.read(reader, 4096)
            os.close(reader)
            if answers[0] != 0 or len(secret) < 16:
                print(json.dumps({"error": "response %d, %d bytes" % (answers[0], len(secret))}))
                sys.exit(1)
        print(json.dumps({"calls": calls, "floor": floor}))
        """#
}
