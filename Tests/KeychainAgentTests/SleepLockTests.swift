import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainCore
import KeychainLibc
import Synchronization
import Testing

@testable import KeychainAgent

/// `keychaind` on a system bus: logind's `PrepareForSleep(true)` and `Session.Lock` of the
/// agent's session lock the keychains whose settings say lock-on-sleep, and no other; signals
/// from any connection but the owner of `org.freedesktop.login1` lock nothing.
///
/// logind itself cannot run here (it needs systemd as PID 1), so a stand-in plays it: a
/// connection that owns `org.freedesktop.login1` on a real `dbus-daemon` started with the
/// system bus's default policy (anyone may send signals; only root may own logind's name),
/// answers `GetSessionByPID` with a session object and emits logind's signals. The agent is
/// the real `keychaind`, pointed at that bus by `DBUS_SYSTEM_BUS_ADDRESS`. Signals that must
/// lock nothing are checked once the agent has provably handled them, never after a delay.
@Suite("keychaind locks on sleep and session lock", .timeLimit(.minutes(10)))
struct SleepLockTests {
    static let sessionPath = "/org/freedesktop/login1/session/_31"

    /// A private `dbus-daemon` with a system-bus-like configuration, stopped by pid.
    final class SystemBus {
        let directory: TemporaryDirectory
        private(set) var daemon: Child
        let address: String
        let configuration: String

        init() throws {
            directory = try TemporaryDirectory(mode: 0o755)
            let config = try directory.write(
                "system.conf",
                """
                <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
                <busconfig>
                  <type>system</type>
                  <listen>unix:path=\(directory.path)/system_bus_socket</listen>
                  <auth>EXTERNAL</auth>
                  <!-- A system bus gives a connection 30 s to authenticate (and a few
                       seconds in some builds); a machine whose cores a build keeps busy can
                       take longer, and dbus-daemon would close it: connectionClosed. -->
                  <limit name="auth_timeout">3600000</limit>
                  <policy context="default">
                    <allow user="*"/>
                    <deny own="*"/>
                    <deny send_type="method_call"/>
                    <allow send_type="signal"/>
                    <allow send_requested_reply="true" send_type="method_return"/>
                    <allow send_requested_reply="true" send_type="error"/>
                    <allow receive_type="method_call"/>
                    <allow receive_type="method_return"/>
                    <allow receive_type="error"/>
                    <allow receive_type="signal"/>
                    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
                    <allow send_destination="org.freedesktop.login1"/>
                  </policy>
                  <policy user="root">
                    <allow own="org.freedesktop.login1"/>
                  </policy>
                </busconfig>
                """)
            configuration = config
            daemon = try Child(
                try requiredTool("dbus-daemon"), ["--config-file=\(config)", "--nofork", "--print-address=1"])
            // The daemon prints its address once it listens.
            // Without its `guid=`, as the real system bus's address is: a restarted bus has another.
            address = (daemon.readLine() ?? "").split(separator: ",").first.map(String.init) ?? ""
            #expect(address.hasPrefix("unix:path="), "dbus-daemon printed its address: \(address)")
        }

        private var stopped = false

        /// Kills the daemon and starts another on the same socket: a system bus restart.
        func restart() throws {
            kill(daemon.pid, SIGKILL)
            daemon.wait()
            unlink(directory.path + "/system_bus_socket")
            daemon = try Child(
                try requiredTool("dbus-daemon"), ["--config-file=\(configuration)", "--nofork", "--print-address=1"])
            let printed = daemon.readLine() ?? ""
            #expect(printed.hasPrefix(address + ","), "the new daemon listens where the old one did: \(printed)")
        }

        /// Kills the daemon (once) and reaps it.
        func stop() {
            guard !stopped else { return }
            stopped = true
            kill(daemon.pid, SIGKILL)
            daemon.wait()
        }
    }

    /// A connection owning (or about to own) `org.freedesktop.login1`, serving the manager's
    /// session lookups and emitting logind's signals.
    final class Login1: Sendable {
        let connection: DBusConnection
        let uniqueName: String
        /// The sender and pid argument of each `GetSessionByPID` received.
        let lookups: Lookups

        final class Lookups: Sendable {
            let calls = Mutex<[(sender: String, pid: UInt32)]>([])
        }

        init(bus: SystemBus, owns: Bool = true) async throws {
            let objects = DBusObjectTree()
            let lookups = Lookups()
            self.lookups = lookups
            try objects.register(
                DBusInterface(
                    "org.freedesktop.login1.Manager",
                    methods: [
                        DBusMethod(
                            "GetSessionByPID", inputs: [.init("pid", .uint32)], outputs: [.init("o", .objectPath)]
                        ) {
                            call in
                            let pid = call.arguments.first?.uint32Value ?? 0
                            lookups.calls.withLock { $0.append((call.message.sender ?? "", pid)) }
                            return [.objectPath(SleepLockTests.sessionPath)]
                        }
                    ],
                    signals: [DBusSignalDescription("PrepareForSleep", arguments: [.init("start", .boolean)])]),
                at: "/org/freedesktop/login1")
            connection = try await DBusConnection.connect(to: try DBusAddress.parseList(bus.address), objects: objects)
            uniqueName = try await connection.hello()
            if owns { try await own() }
        }

        /// Takes `org.freedesktop.login1` (DO_NOT_QUEUE): it must be free.
        func own() async throws {
            let reply = try await connection.callBus("RequestName", [.string("org.freedesktop.login1"), .uint32(4)])
            #expect(reply.body == [.uint32(1)], "the stand-in is logind's primary owner")
        }

        func release() async throws {
            _ = try await connection.callBus("ReleaseName", [.string("org.freedesktop.login1")])
        }

        /// The unique name of the connection that last looked its session up (the agent).
        var lastCaller: String? { lookups.calls.withLock { $0.last?.sender } }
    }

    /// Sends logind's signals from `connection` (broadcast, or to `destination`), then waits for
    /// a reply from the bus: the bus has routed them before anything sent after this returns.
    static func emit(
        _ connection: DBusConnection, sleep: Bool? = nil, lockSession path: String? = nil, to destination: String? = nil
    ) async throws {
        if let sleep {
            try await connection.send(
                .signal(
                    path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                    member: "PrepareForSleep", destination: destination, body: [.boolean(sleep)]))
        }
        if let path {
            try await connection.send(
                .signal(
                    path: path, interface: "org.freedesktop.login1.Session", member: "Lock", destination: destination))
        }
        _ = try await connection.callBus("GetId")
    }

    /// Two password keychains made in `daemon`'s agent, the first set to lock on sleep, both
    /// unlocked, and their password.
    static func twoKeychains(in daemon: KeychaindTests.Daemon) throws
        -> (locksOnSleep: AgentKeychain, doesNot: AgentKeychain, password: Data)
    {
        let agent = try daemon.connect()
        let password = Data("pw".utf8)
        let sleepy = daemon.home + "/sleepy.keychain-db"
        let awake = daemon.home + "/awake.keychain-db"
        for path in [sleepy, awake] {
            _ = try agent.call(AgentInterface.create, .init(keychain: path, password: Data(password)))
        }
        try agent.keychain(at: sleepy).setSettings(KeychainSettings(lockInterval: nil, locksOnSleep: true))
        return (agent.keychain(at: sleepy), agent.keychain(at: awake), password)
    }

    /// Waits (polling, for up to a minute: a wait for the agent, not a limit on its speed) until
    /// `condition` holds; whether it did.
    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<600 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try condition()
    }

    @Test("PrepareForSleep(true) and Session.Lock lock lock-on-sleep keychains only, from logind's owner only")
    func locksOnSleepAndSessionLock() async throws {
        let bus = try SystemBus()
        defer { bus.stop() }
        let login1 = try await Login1(bus: bus)
        let forger = try await DBusConnection.connect(to: try DBusAddress.parseList(bus.address))
        try await forger.hello()
        let daemon = try KeychaindTests.Daemon(environment: [
            "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "KEYCHAIND_DEBUG=1",
        ])
        defer { daemon.stop() }

        let (lockOnSleep, noLockOnSleep, password) = try Self.twoKeychains(in: daemon)
        #expect(!lockOnSleep.isLocked && !noLockOnSleep.isLocked)

        // The agent has subscribed to PrepareForSleep once it asks for its session.
        #expect(try await Self.eventually { login1.lastCaller != nil }, "the agent looked up its session")
        let agentName = try #require(login1.lastCaller)
        #expect(login1.lookups.calls.withLock { $0.last?.pid } == UInt32(daemon.child.pid), "by the agent's own pid")

        // Forged: a NameOwnerChanged naming the forger logind's owner, then PrepareForSleep(true)
        // and Session.Lock, from a connection that does not own org.freedesktop.login1,
        // broadcast and addressed to the agent; from logind's owner,
        // PrepareForSleep(false) (the resume) and the Lock of another session, addressed to the
        // agent. None of them may lock anything.
        let forgerName = try #require(forger.uniqueName)
        try await forger.send(
            .signal(
                path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                destination: agentName,
                body: [.string("org.freedesktop.login1"), .string(login1.uniqueName), .string(forgerName)]))
        try await Self.emit(forger, sleep: true, lockSession: Self.sessionPath)
        try await Self.emit(forger, sleep: true, lockSession: Self.sessionPath, to: agentName)
        try await Self.emit(login1.connection, sleep: false)
        try await Self.emit(login1.connection, lockSession: "/org/freedesktop/login1/session/_32", to: agentName)
        // Then logind's name changes hands: the agent asks the new owner for its session only
        // after it has handled every signal above (the bus routed them first, and the agent
        // handles one connection's signals in order).
        let successor = try await Login1(bus: bus, owns: false)
        try await login1.release()
        try await successor.own()
        #expect(try await Self.eventually { successor.lastCaller == agentName }, "the agent followed the new owner")
        #expect(!lockOnSleep.isLocked, "forged signals, the resume and another session's Lock locked nothing")
        #expect(!noLockOnSleep.isLocked)

        // The new owner is logind: its PrepareForSleep(true) locks the one keychain.
        try await Self.emit(successor.connection, sleep: true)
        #expect(try await Self.eventually { lockOnSleep.isLocked }, "PrepareForSleep(true) locked it")
        #expect(!noLockOnSleep.isLocked, "a keychain without lock-on-sleep stays unlocked")

        // Session.Lock of the agent's session locks it too (emitted until the agent follows
        // the session: it subscribes after the lookup above is answered).
        try lockOnSleep.unlock(password: password)
        #expect(!lockOnSleep.isLocked)
        var sessionLocked = false
        for _ in 0..<600 where !sessionLocked {
            try await Self.emit(successor.connection, lockSession: Self.sessionPath)
            try await Task.sleep(for: .milliseconds(100))
            sessionLocked = lockOnSleep.isLocked
        }
        #expect(sessionLocked, "Session.Lock locked it")
        #expect(!noLockOnSleep.isLocked, "a keychain without lock-on-sleep stays unlocked")

        // The system bus goes away: the agent serves on.
        bus.stop()
        #expect(AgentConnection.isAnswering(at: daemon.socket), "the agent outlives its system bus connection")
        #expect(!noLockOnSleep.isLocked)
        try noLockOnSleep.unlock(password: password)
        await forger.close()
        await login1.connection.close()
        await successor.connection.close()
    }

    @Test("A restarted system bus is connected to again: logind's PrepareForSleep locks after the restart")
    func reconnectsAfterSystemBusRestart() async throws {
        let bus = try SystemBus()
        defer { bus.stop() }
        let login1 = try await Login1(bus: bus)
        let daemon = try KeychaindTests.Daemon(environment: [
            "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)", "KEYCHAIND_DEBUG=1",
        ])
        defer { daemon.stop() }
        let agent = try daemon.connect()
        let sleepy = daemon.home + "/sleepy.keychain-db"
        _ = try agent.call(AgentInterface.create, .init(keychain: sleepy, password: Data("pw".utf8)))
        try agent.keychain(at: sleepy).setSettings(KeychainSettings(lockInterval: nil, locksOnSleep: true))
        let keychain = agent.keychain(at: sleepy)
        #expect(try await Self.eventually { login1.lastCaller != nil }, "the agent looked up its session")

        await login1.connection.close()
        try bus.restart()
        let reborn = try await Login1(bus: bus)
        #expect(try await Self.eventually { reborn.lastCaller != nil }, "the agent came back to the new bus")
        #expect(!keychain.isLocked)
        try await Self.emit(reborn.connection, sleep: true)
        #expect(try await Self.eventually { keychain.isLocked }, "PrepareForSleep(true) on the new bus locked it")
        await reborn.connection.close()
    }

    @Test("without a system bus the agent starts and serves as before")
    func noSystemBus() throws {
        let directory = try TemporaryDirectory()
        let daemon = try KeychaindTests.Daemon(environment: [
            "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(directory.path)/no-such-socket"
        ])
        defer { daemon.stop() }
        let agent = try daemon.connect()
        let path = daemon.home + "/sleepy.keychain-db"
        _ = try agent.call(AgentInterface.create, .init(keychain: path, password: Data("pw".utf8)))
        try agent.keychain(at: path).setSettings(KeychainSettings(lockInterval: nil, locksOnSleep: true))
        #expect(!agent.keychain(at: path).isLocked)
        #expect(AgentConnection.isAnswering(at: daemon.socket))
    }

    /// A logind stand-in that knows no session for any pid: session `c7` by id, and the user's
    /// display session `c9`.
    static func fallbackLogin1(_ bus: SystemBus) async throws -> DBusConnection {
        let objects = DBusObjectTree()
        let manager = "/org/freedesktop/login1"
        try objects.register(
            DBusInterface(
                "org.freedesktop.login1.Manager",
                methods: [
                    DBusMethod("GetSessionByPID", inputs: [.init("pid", .uint32)], outputs: [.init("o", .objectPath)]) {
                        _ in
                        throw DBusError.method("org.freedesktop.login1.NoSessionForPID", "not in a session")
                    },
                    DBusMethod("GetSession", inputs: [.init("id", .string)], outputs: [.init("o", .objectPath)]) {
                        call in
                        guard call.arguments == [.string("c7")] else {
                            throw DBusError.method("org.freedesktop.login1.NoSuchSession", "no such session")
                        }
                        return [.objectPath(manager + "/session/c7")]
                    },
                    DBusMethod("GetUser", inputs: [.init("uid", .uint32)], outputs: [.init("o", .objectPath)]) {
                        call in
                        guard call.arguments == [.uint32(getuid())] else {
                            throw DBusError.method("org.freedesktop.login1.NoSuchUser", "no such user")
                        }
                        return [.objectPath(manager + "/user/_\(getuid())")]
                    },
                ]),
            at: manager)
        try objects.register(
            DBusInterface(
                "org.freedesktop.login1.User",
                properties: [
                    DBusProperty("Display", type: .structure([.string, .objectPath])) { _ in
                        .structure([.string("c9"), .objectPath(manager + "/session/c9")])
                    }
                ]),
            at: manager + "/user/_\(getuid())")
        let connection = try await DBusConnection.connect(to: try DBusAddress.parseList(bus.address), objects: objects)
        try await connection.hello()
        let reply = try await connection.callBus("RequestName", [.string("org.freedesktop.login1"), .uint32(4)])
        #expect(reply.body == [.uint32(1)])
        return connection
    }

    /// The session's `PropertiesChanged`, as logind emits it when a lock screen calls `SetLockedHint`.
    static func emitLockedHint(_ connection: DBusConnection, _ locked: Bool, path: String) async throws {
        try await connection.send(
            .signal(
                path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                body: [
                    .string("org.freedesktop.login1.Session"),
                    .dictionary(
                        key: .string, value: .variant,
                        [DBusDictEntry(.string("LockedHint"), .variant(.boolean(locked)))]),
                    .array(.string, []),
                ]))
        _ = try await connection.callBus("GetId")
    }

    @Test(
        "a lock screen's LockedHint (GNOME's and KDE's, which send no Lock) locks as Session.Lock does, from logind only"
    )
    func lockedHintLocks() async throws {
        let bus = try SystemBus()
        defer { bus.stop() }
        let login1 = try await Self.fallbackLogin1(bus)
        let expected = "/org/freedesktop/login1/session/c7"
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "XDG_SESSION_ID": "c7"]
        let (lines, events, watching) = LogLines.watching(environment)
        #expect(try await Self.eventually { lines.contains("following Session.Lock of \(expected)") })
        // Unlocked, another session's, and a forger's: nothing. Then the session's own: a lock.
        let forger = try await DBusConnection.connect(to: try DBusAddress.parseList(bus.address))
        try await forger.hello()
        try await Self.emitLockedHint(login1, false, path: expected)
        try await Self.emitLockedHint(login1, true, path: "/org/freedesktop/login1/session/other")
        try await Self.emitLockedHint(forger, true, path: expected)
        try await Self.emitLockedHint(login1, true, path: expected)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == .sessionLock, "only logind's LockedHint=true of the agent's session")
        try await Self.emit(login1, sleep: true)
        #expect(await iterator.next() == .sleep, "and nothing came between")
        bus.stop()
        await watching.value
        await forger.close()
        await login1.close()
    }

    @Test(
        "outside a session by pid, the agent follows $XDG_SESSION_ID's session, else its user's display session",
        arguments: [("c7", "/org/freedesktop/login1/session/c7"), (nil, "/org/freedesktop/login1/session/c9")])
    func sessionFallbacks(sessionID: String?, expected: String) async throws {
        let bus = try SystemBus()
        defer { bus.stop() }
        let login1 = try await Self.fallbackLogin1(bus)
        var environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        environment["XDG_SESSION_ID"] = sessionID
        let (lines, events, watching) = LogLines.watching(environment)
        let following = "following Session.Lock of \(expected)"
        #expect(try await Self.eventually { lines.contains(following) }, "\(lines.all)")
        try await Self.emit(login1, lockSession: "/org/freedesktop/login1/session/other")
        try await Self.emit(login1, lockSession: expected)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == .sessionLock, "the followed session's Lock, and only it")
        try await Self.emit(login1, sleep: true)
        #expect(await iterator.next() == .sleep)
        bus.stop()
        await watching.value
        #expect(await iterator.next() == nil)
        await login1.close()
    }
}

/// The log lines of a `SleepLock.watch` run in this process.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    func contains(_ line: String) -> Bool { lines.withLock { $0.contains(line) } }
    var all: [String] { lines.withLock { $0 } }

    /// `SleepLock.watch` run in this process: its log lines, its events, and its task.
    static func watching(_ environment: [String: String]) -> (LogLines, AsyncStream<SleepLock.Event>, Task<Void, Never>)
    {
        let lines = LogLines()
        let (events, received) = AsyncStream.makeStream(of: SleepLock.Event.self)
        let task = Task {
            await SleepLock.watch(environment: environment, log: { lines.append($0) }) { received.yield($0) }
            received.finish()
        }
        return (lines, events, task)
    }
}
