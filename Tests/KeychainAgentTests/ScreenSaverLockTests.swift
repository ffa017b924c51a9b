import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainCore
import KeychainLibc
import KeychainTestSupport
import Testing

@testable import KeychainAgent

/// `keychaind` on a session bus: a screen saver's `ActiveChanged(true)` locks the keychains whose
/// settings say lock-on-sleep, and no other; a signal from any connection but the owner of the
/// screen saver's name locks nothing.
///
/// The screen saver is the real one MATE ships (`mate-screensaver`, Debian's package), on a
/// private X server (Xvfb) and a private session bus (`dbus-daemon --session`), locked by its own
/// command (`mate-screensaver-command --lock`) as a person's keyboard shortcut does.
@Suite("keychaind locks when a screen saver starts", .timeLimit(.minutes(10)))
struct ScreenSaverLockTests {
    /// A private session bus, an X server and the environment a session's programs get there.
    final class Session {
        let directory: TemporaryDirectory
        let bus: TestDaemon
        let address: String
        let x: (server: TestDaemon, display: String)

        init() throws {
            directory = try TemporaryDirectory(mode: 0o700)
            let base = ["PATH": "/usr/bin:/bin", "HOME": directory.path]
            bus = try TestDaemon(
                try requiredTool("dbus-daemon"), ["--session", "--nofork", "--print-address=1"], environment: base)
            address = bus.firstLine() ?? ""
            _ = try requiredTool("Xvfb")
            x = try TestDaemon.xServer(environment: base)
        }

        /// What a program of the session runs with.
        var environment: [String: String] {
            [
                "PATH": "/usr/bin:/bin", "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path,
                "DISPLAY": x.display, "DBUS_SESSION_BUS_ADDRESS": address, "GSETTINGS_BACKEND": "memory",
            ]
        }

        func connect() async throws -> DBusConnection {
            let connection = try await DBusConnection.connect(to: try DBusAddress.parseList(address))
            _ = try await connection.hello()
            return connection
        }

        /// MATE's screen saver, once it owns its name.
        func startScreenSaver(checkingWith connection: DBusConnection) async throws -> TestDaemon {
            let saver = try TestDaemon(try requiredTool("mate-screensaver"), ["--no-daemon"], environment: environment)
            for _ in 0..<600 where try await connection.nameOwner(of: "org.mate.ScreenSaver") == nil {
                try await Task.sleep(for: .milliseconds(100))
            }
            try #require(
                try await connection.nameOwner(of: "org.mate.ScreenSaver") != nil,
                "mate-screensaver took its name: \(saver.errors)")
            return saver
        }

        /// `mate-screensaver-command --lock`, as a person's keyboard shortcut runs it.
        func lockScreen() throws {
            let command = try TestDaemon(
                try requiredTool("mate-screensaver-command"), ["--lock"], environment: environment)
            for _ in 0..<600 where command.isRunning { usleep(50_000) }
            #expect(!command.isRunning, "mate-screensaver-command --lock finished: \(command.errors)")
        }

        func stop() {
            x.server.stop()
            bus.stop()
        }
    }

    /// The unique names on the bus of the process `pid`.
    static func uniqueNames(of pid: pid_t, on connection: DBusConnection) async throws -> [String] {
        guard case .array(_, let names)? = try await connection.callBus("ListNames").body.first else { return [] }
        var found: [String] = []
        for case .string(let name) in names where name.hasPrefix(":") {
            let reply = try? await connection.callBus("GetConnectionUnixProcessID", [.string(name)])
            if reply?.body == [.uint32(UInt32(pid))] { found.append(name) }
        }
        return found
    }

    /// How many match rules the bus holds for `name` (dbus-daemon's `Debug.Stats`).
    static func matchRules(of name: String, on connection: DBusConnection) async throws -> UInt32 {
        let reply = try await connection.call(
            .methodCall(
                path: DBusMessage.busDriverPath, interface: "org.freedesktop.DBus.Debug.Stats",
                member: "GetConnectionStats", destination: DBusMessage.busDriverName, body: [.string(name)]))
        guard case .dictionary(_, _, let entries)? = reply.body.first,
            case .variant(.uint32(let count))? = entries.first(where: { $0.key == .string("MatchRules") })?.value
        else { return 0 }
        return count
    }

    static func activeChanged(_ name: String, _ active: DBusValue, to destination: String? = nil) -> DBusMessage {
        .signal(
            path: "/" + name.replacingOccurrences(of: ".", with: "/"), interface: name, member: "ActiveChanged",
            destination: destination, body: [active])
    }

    @Test(
        "Only the owner of a screen saver's name starts it: forged ActiveChanged, a forged owner change, ActiveChanged(false) and a malformed one count for nothing; MATE's lock counts"
    )
    func activeChangedCountsFromTheOwnerOnly() async throws {
        let session = try Session()
        defer { session.stop() }
        let lines = LogLines()
        let (started, received) = AsyncStream.makeStream(of: String.self)
        let (subscribed, isSubscribed) = AsyncStream.makeStream(of: Void.self)
        let environment = session.environment
        let watching = Task {
            await ScreenSaverLock.watch(
                environment: environment, log: { lines.append($0) },
                onSubscribed: { isSubscribed.finish() }
            ) { received.yield($0) }
            received.finish()
        }
        for await _ in subscribed {}

        let forger = try await session.connect()
        let forgerName = try #require(forger.uniqueName)
        let watcher = try #require(
            try await Self.uniqueNames(of: getpid(), on: forger).first { $0 != forgerName }, "the watcher's name")

        // Forged, broadcast and addressed to the watcher: every screen saver's ActiveChanged(true)
        // from a connection that owns none of their names; a NameOwnerChanged naming the forger
        // MATE's screen saver, then its ActiveChanged(true).
        for name in ScreenSaverLock.screenSavers {
            try await forger.send(Self.activeChanged(name, .boolean(true)))
            try await forger.send(Self.activeChanged(name, .boolean(true), to: watcher))
        }
        try await forger.send(
            .signal(
                path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: "NameOwnerChanged",
                destination: watcher,
                body: [.string("org.mate.ScreenSaver"), .string(""), .string(forgerName)]))
        try await forger.send(Self.activeChanged("org.mate.ScreenSaver", .boolean(true), to: watcher))
        // The owner of Xfce's name (the forger, once it takes it): ActiveChanged(false) and a
        // malformed ActiveChanged start nothing.
        let taken = try await forger.callBus("RequestName", [.string("org.xfce.ScreenSaver"), .uint32(4)])
        #expect(taken.body == [.uint32(1)])
        try await forger.send(Self.activeChanged("org.xfce.ScreenSaver", .boolean(false)))
        try await forger.send(Self.activeChanged("org.xfce.ScreenSaver", .string("true")))
        _ = try await forger.callBus("GetId")  // every signal above is routed before what follows

        // Then MATE's screen saver comes up and locks the screen: the first start counted.
        let saver = try await session.startScreenSaver(checkingWith: forger)
        defer { saver.stop() }
        try session.lockScreen()
        var iterator = started.makeAsyncIterator()
        #expect(await iterator.next() == "org.mate.ScreenSaver", "MATE's lock, and nothing forged before it")
        #expect(
            lines.contains("ignored org.mate.ScreenSaver.ActiveChanged from \(forgerName): not its owner"),
            "\(lines.all)")

        // The bus goes away: the watch ends, and nothing else was counted.
        await forger.close()
        session.stop()
        await watching.value
        #expect(await iterator.next() == nil)
    }

    @Test("keychaind locks its lock-on-sleep keychains when MATE's screen saver locks the screen, and no other")
    func agentLocksWhenTheScreenLocks() async throws {
        let session = try Session()
        defer { session.stop() }
        let daemon = try KeychaindTests.Daemon(environment: [
            "DBUS_SESSION_BUS_ADDRESS=\(session.address)", "KEYCHAIND_DEBUG=1",
        ])
        defer { daemon.stop() }
        let (locksWithScreen, staysUnlocked, password) = try SleepLockTests.twoKeychains(in: daemon)

        // The agent has subscribed once the bus holds its rules: an owner change and
        // ActiveChanged for each screen saver.
        let observer = try await session.connect()
        var subscribed = false
        for _ in 0..<600 where !subscribed {
            for name in try await Self.uniqueNames(of: daemon.child.pid, on: observer) {
                subscribed = try await Self.matchRules(of: name, on: observer) >= 2 * ScreenSaverLock.screenSavers.count
            }
            if !subscribed { try await Task.sleep(for: .milliseconds(100)) }
        }
        try #require(subscribed, "keychaind subscribed on the session bus")
        #expect(!locksWithScreen.isLocked && !staysUnlocked.isLocked)

        let saver = try await session.startScreenSaver(checkingWith: observer)
        defer { saver.stop() }
        try session.lockScreen()
        var locked = false
        for _ in 0..<600 where !locked {
            locked = locksWithScreen.isLocked
            if !locked { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(locked, "the screen saver's lock locked the lock-on-sleep keychain")
        #expect(!staysUnlocked.isLocked, "a keychain without lock-on-sleep stays unlocked")
        try locksWithScreen.unlock(password: password)
        await observer.close()
    }
}
