import CKeychainAgent
import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainCore
import KeychainLibc
import Synchronization
import Testing

@testable import DBusWire
@testable import KeychainAgent

/// logind's delay inhibitor for sleep: ``DBusWire/DBusFDCall`` receives the descriptor that
/// `Inhibit` answers with, refuses replies whose descriptors do not match, and `keychaind`
/// holds one, locks before releasing it on `PrepareForSleep(true)` and takes another on resume.
///
/// logind cannot run here, so a Python stand-in (GDBus, the library logind's own clients use
/// for descriptors) owns `org.freedesktop.login1` on a private system bus and answers
/// `Inhibit` with the write end of a fresh pipe; end-of-file on the read end is exactly how
/// logind learns that every copy of the descriptor is closed, and the stand-in reports it with
/// the lock state the agent gives at that moment.
@Suite("Sleep inhibitor: logind's delay lock, received and released", .timeLimit(.minutes(10)))
struct SleepInhibitorTests {
    /// The Python logind stand-in, its output in a file read by polling (no pipe read holds a
    /// thread of the cooperative pool).
    final class Login1StandIn: @unchecked Sendable {
        let directory: TemporaryDirectory
        let process = Process()
        let input = Pipe()
        let outputPath: String

        init(bus address: String) throws {
            directory = try TemporaryDirectory()
            let script = try directory.write("login1_standin.py", SleepInhibitorTests.standInScript)
            outputPath = directory.path + "/out"
            FileManager.default.createFile(atPath: outputPath, contents: nil)
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            defer { try? output.close() }
            // /usr/bin/python3 first: the system's, with python3-gi.
            process.executableURL = URL(fileURLWithPath: try requiredTool("python3"))
            process.arguments = [script, address]
            process.standardOutput = output
            process.standardError = output
            process.standardInput = input
            try spawnGate.withLock { _ in try process.run() }
        }

        /// The lines printed so far.
        var lines: [String] {
            ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        /// Sends a command line.
        func send(_ line: String) throws {
            try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
        }

        /// The first line starting with `prefix`, waiting (polling, up to a minute) for it.
        func line(startingWith prefix: String) async throws -> String? {
            for _ in 0..<600 {
                if let line = lines.first(where: { $0.hasPrefix(prefix) }) { return line }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            return lines.first(where: { $0.hasPrefix(prefix) })
        }

        /// A stand-in started on `address` that owns logind's name (waited for).
        static func owningLogind(on address: String) async throws -> Login1StandIn {
            let standIn = try Login1StandIn(bus: address)
            do {
                try await standIn.waitUntilOwner()
            } catch {
                standIn.stop()
                throw error
            }
            return standIn
        }

        /// Waits until it owns logind's name; fails the test (with its output) otherwise.
        func waitUntilOwner() async throws {
            let owner = try await line(startingWith: "owner")
            #expect(owner != nil, "the stand-in owns org.freedesktop.login1: \(lines)")
            if owner == nil { throw AgentError.testFailure("no logind stand-in") }
        }

        /// Kills it once (a second call finds it ended and signals no reused pid).
        func stop() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Runs blocking `work` on a Dispatch thread, off the cooperative pool.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Whether every copy of the pipe's write end is closed (end-of-file on `readEnd`), waiting
    /// up to 5 s for a child forked meanwhile to exec (the descriptors are close-on-exec).
    static func allWriteEndsClosed(_ readEnd: Int32) async throws -> Bool {
        for _ in 0..<100 {
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 0) == 1, poller.revents & Int16(POLLHUP) != 0 { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    static let inhibit = DBusMessage.methodCall(
        path: SleepLock.managerPath, interface: SleepLock.managerInterface, member: "Inhibit",
        destination: SleepLock.login1, body: [.string("sleep"), .string("test"), .string("why"), .string("delay")])

    @Test("DBusFDCall receives a descriptor through a real dbus-daemon; closing it is seen by the sender")
    func receivesDescriptorFromRealBus() async throws {
        let bus = try SleepLockTests.SystemBus()
        defer { bus.stop() }
        let standIn = try await Login1StandIn.owningLogind(on: bus.address)
        defer { standIn.stop() }
        let addresses = try DBusAddress.parseList(bus.address)
        let reply = try await Self.offPool { try DBusFDCall.call(Self.inhibit, addresses: addresses) }
        #expect(reply.message.signature.rawValue == "h")
        let descriptor = try #require(reply.message.body.first.flatMap(reply.fileDescriptor))
        #expect(reply.fileDescriptors == [descriptor])
        var status = stat()
        let statted = fstat(descriptor, &status)
        #expect(statted == 0 && status.st_mode & S_IFMT == S_IFIFO, "a pipe's end")
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0, "received close-on-exec")
        #expect(
            try await standIn.line(startingWith: "inhibit 1 ") == "inhibit 1 what=sleep who=test mode=delay")
        // Held: the sender sees no end-of-file while the descriptor is open (the bus connection
        // that carried it is closed already).
        try await Task.sleep(for: .milliseconds(300))
        #expect(!standIn.lines.contains { $0.hasPrefix("released") }, "held while open: \(standIn.lines)")
        close(descriptor)
        #expect(try await standIn.line(startingWith: "released 1") != nil, "closing it released it")
    }

    /// A reply a peer may send: the frames (a message, how many descriptors go with it) and
    /// what ``DBusFDCall`` must make of it.
    struct Abuse: Sendable, CustomTestStringConvertible {
        var testDescription: String
        var frames: [(DBusMessage, Int)]
        /// The error's code, or `nil` for success keeping the descriptors at these indices.
        var refusal: DBusError.Code?
        var kept: [Int] = []
        var agreesToPassDescriptors = true

        static func reply(fds claimed: UInt32?, _ body: [DBusValue], replySerial: UInt32 = 2) -> DBusMessage {
            DBusMessage(type: .methodReturn, serial: 9, replySerial: replySerial, unixFDs: claimed, body: body)
        }

        static let all: [Abuse] = [
            Abuse(
                testDescription: "more descriptors than UNIX_FDS", frames: [(reply(fds: 1, [.unixFD(0)]), 2)],
                refusal: .malformedMessage),
            Abuse(
                testDescription: "fewer descriptors than UNIX_FDS", frames: [(reply(fds: 2, [.unixFD(0)]), 1)],
                refusal: .malformedMessage),
            Abuse(
                testDescription: "descriptors without UNIX_FDS", frames: [(reply(fds: nil, [.unixFD(0)]), 1)],
                refusal: .malformedMessage),
            Abuse(
                testDescription: "an h value past the descriptors", frames: [(reply(fds: 1, [.unixFD(3)]), 1)],
                refusal: .malformedMessage),
            Abuse(
                testDescription: "an error reply with a descriptor",
                frames: [
                    (
                        DBusMessage(
                            type: .error, serial: 9, errorName: "org.freedesktop.login1.Denied", replySerial: 2,
                            unixFDs: 1, body: [.string("no")]), 1
                    )
                ], refusal: .remoteError),
            Abuse(
                testDescription: "a descriptor the body does not use is closed",
                frames: [(reply(fds: 2, [.unixFD(1)]), 2)], kept: [1]),
            Abuse(
                testDescription: "a descriptor sent with another message is closed",
                frames: [(reply(fds: 1, [.string(":1.1")], replySerial: 1), 1), (reply(fds: 0, [.string("x")]), 0)]),
            Abuse(
                testDescription: "a peer refusing NEGOTIATE_UNIX_FD", frames: [], refusal: .authenticationFailed,
                agreesToPassDescriptors: false),
        ]
    }

    @Test(
        "DBusFDCall refuses descriptors that do not match the reply, and leaks none", arguments: Abuse.all)
    func refusesMismatchedDescriptors(abuse: Abuse) async throws {
        var sockets: [Int32] = [0, 0]
        let paired = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &sockets)
        try #require(paired == 0)
        defer { sockets.forEach { close($0) } }
        var pipe: [Int32] = [0, 0]
        let piped = ck_pipe_cloexec(&pipe)
        try #require(piped == 0)
        defer { close(pipe[0]) }
        // The peer's whole side, written before the client starts: it reads only what it needs.
        let sasl =
            "OK 0123456789abcdef0123456789abcdef\r\n" + (abuse.agreesToPassDescriptors ? "AGREE_UNIX_FD" : "ERROR")
        let written = Array((sasl + "\r\n").utf8)
        try #require(write(sockets[1], written, written.count) == written.count)
        for (message, count) in abuse.frames {
            let bytes = try message.encoded()
            let sent = bytes.withUnsafeBytes {
                FDControl.send(sockets[1], $0, descriptors: Array(repeating: pipe[1], count: count))
            }
            try #require(sent == bytes.count)
        }
        close(pipe[1])
        let client = sockets[0]
        let result = try await Self.offPool {
            Result { try DBusFDCall.call(Self.inhibit, on: client, timeout: .seconds(20)) }
        }
        switch (result, abuse.refusal) {
        case (.success(let reply), nil):
            let open = reply.fileDescriptors.indices.filter { reply.fileDescriptors[$0] >= 0 }
            #expect(open == abuse.kept, "the descriptors the body uses, and only they, stay open")
            for index in open { close(reply.fileDescriptors[index]) }
        case (.failure(let error as DBusError), let code?):
            #expect(error.code == code, "\(error)")
        default:
            Issue.record("expected \(abuse.refusal.map { "refusal \($0)" } ?? "success"), got \(result)")
        }
        #expect(try await Self.allWriteEndsClosed(pipe[0]), "no received descriptor is left open")
    }

    @Test("keychaind takes logind's delay inhibitor for sleep at start (what=sleep, mode=delay) and holds it")
    func takesDelayInhibitorAtStart() async throws {
        let bus = try SleepLockTests.SystemBus()
        defer { bus.stop() }
        let standIn = try await Login1StandIn.owningLogind(on: bus.address)
        defer { standIn.stop() }
        let daemon = try KeychaindTests.Daemon(environment: ["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"])
        defer { daemon.stop() }
        #expect(
            try await standIn.line(startingWith: "inhibit 1 ") == "inhibit 1 what=sleep who=keychaind mode=delay",
            "\(standIn.lines)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!standIn.lines.contains { $0.hasPrefix("released") }, "the agent holds it: \(standIn.lines)")
        #expect(AgentConnection.isAnswering(at: daemon.socket))
    }

    @Test("On PrepareForSleep(true) the inhibitor is held until locking has finished, then released")
    func holdsInhibitorUntilLockingFinishes() async throws {
        let bus = try SleepLockTests.SystemBus()
        defer { bus.stop() }
        let standIn = try await Login1StandIn.owningLogind(on: bus.address)
        defer { standIn.stop() }
        // Locking that lasts until the test lets it finish.
        let locking = Mutex<(entered: Bool, mayFinish: Bool)>((false, false))
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        let running = Task {
            await SleepLock.run(environment: environment, log: { _ in }) {
                locking.withLock { $0.entered = true }
                while !locking.withLock({ $0.mayFinish }) { try? await Task.sleep(for: .milliseconds(20)) }
                return 1
            }
        }
        #expect(try await standIn.line(startingWith: "inhibit 1 ") != nil, "\(standIn.lines)")
        try standIn.send("sleep true")
        for _ in 0..<600 where !locking.withLock({ $0.entered }) { try await Task.sleep(for: .milliseconds(100)) }
        #expect(locking.withLock { $0.entered }, "PrepareForSleep(true) started locking")
        // Released before locking finished would show within milliseconds; a second is ample.
        try await Task.sleep(for: .seconds(1))
        #expect(!standIn.lines.contains { $0.hasPrefix("released") }, "held while locking: \(standIn.lines)")
        locking.withLock { $0.mayFinish = true }
        #expect(try await standIn.line(startingWith: "released 1") != nil, "released once locked")
        running.cancel()
        bus.stop()
        await running.value
    }

    @Test(
        "keychaind: PrepareForSleep(true) locks the lock-on-sleep keychain, then releases the inhibitor; resume takes another"
    )
    func locksBeforeReleasingAndRetakesOnResume() async throws {
        let bus = try SleepLockTests.SystemBus()
        defer { bus.stop() }
        let standIn = try await Login1StandIn.owningLogind(on: bus.address)
        defer { standIn.stop() }
        let daemon = try KeychaindTests.Daemon(environment: ["DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"])
        defer { daemon.stop() }
        #expect(try await standIn.line(startingWith: "inhibit 1 ") != nil, "\(standIn.lines)")

        let agent = try daemon.connect()
        let sleepy = daemon.home + "/sleepy.keychain-db"
        _ = try agent.call(AgentInterface.create, .init(keychain: sleepy, password: Data("pw".utf8)))
        try agent.keychain(at: sleepy).setSettings(KeychainSettings(lockInterval: nil, locksOnSleep: true))
        let keychain = agent.keychain(at: sleepy)
        #expect(!keychain.isLocked)
        try standIn.send("agent \(daemon.socket) \(sleepy)")
        #expect(try await standIn.line(startingWith: "agent") != nil)

        // The stand-in asks the agent for the keychain's state the moment the descriptor closes.
        try standIn.send("sleep true")
        #expect(
            try await standIn.line(startingWith: "released 1") == "released 1 locked=True",
            "locked before the inhibitor was released: \(standIn.lines)")
        #expect(keychain.isLocked)

        try standIn.send("sleep false")
        #expect(
            try await standIn.line(startingWith: "inhibit 2 ") == "inhibit 2 what=sleep who=keychaind mode=delay",
            "a new inhibitor after the resume: \(standIn.lines)")
        #expect(!standIn.lines.contains { $0.hasPrefix("released 2") }, "and it is held")
    }

    @Test("When logind restarts (a new owner of its name), the agent takes a delay inhibitor from the new one")
    func retakesInhibitorWhenLogindRestarts() async throws {
        let bus = try SleepLockTests.SystemBus()
        defer { bus.stop() }
        let first = try await Login1StandIn.owningLogind(on: bus.address)
        defer { first.stop() }
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        let running = Task { await SleepLock.run(environment: environment, log: { _ in }) { 0 } }
        #expect(try await first.line(startingWith: "inhibit 1 ") != nil, "\(first.lines)")

        // logind dies and another takes its name: its inhibitor list starts empty.
        first.stop()
        let second = try await Login1StandIn.owningLogind(on: bus.address)
        defer { second.stop() }
        #expect(
            try await second.line(startingWith: "inhibit 1 ") == "inhibit 1 what=sleep who=keychaind mode=delay",
            "the restarted logind holds the agent's inhibitor: \(second.lines)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(!second.lines.contains { $0.hasPrefix("released") }, "and it is held: \(second.lines)")
        running.cancel()
        bus.stop()
        await running.value
    }

    /// The stand-in's source (written to a temporary file for each run).
    static let standInScript = #"""
        # A logind stand-in for keychaind's tests: owns org.freedesktop.login1 on the bus given as
        # argv[1], answers Manager.Inhibit with the write end of a fresh pipe (as logind does, a
        # descriptor whose closing releases the lock) and reports on stdout:
        #   "owner"                          once the name is owned
        #   "inhibit N what=W who=X mode=M"  for the N-th Inhibit call
        #   "released N locked=L"            when every copy of the N-th descriptor is closed (EOF on the
        #                                    read end), with the lock state the agent reports then
        # Commands on stdin: "sleep true" / "sleep false" emit PrepareForSleep; "agent SOCKET KEYCHAIN"
        # names the agent and keychain whose lock state "released" reports.
        import os
        import sys

        from gi.repository import Gio, GLib

        XML = """
        <node>
          <interface name="org.freedesktop.login1.Manager">
            <method name="Inhibit">
              <arg name="what" type="s" direction="in"/><arg name="who" type="s" direction="in"/>
              <arg name="why" type="s" direction="in"/><arg name="mode" type="s" direction="in"/>
              <arg name="fd" type="h" direction="out"/>
            </method>
            <method name="GetSessionByPID">
              <arg name="pid" type="u" direction="in"/><arg name="session" type="o" direction="out"/>
            </method>
            <signal name="PrepareForSleep"><arg name="start" type="b"/></signal>
          </interface>
        </node>
        """
        PATH = "/org/freedesktop/login1"
        IFACE = "org.freedesktop.login1.Manager"

        bus = Gio.DBusConnection.new_for_address_sync(
            sys.argv[1],
            Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None,
            None,
        )
        agent = {}
        count = [0]


        def say(line):
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


        def lock_state():
            if "socket" not in agent:
                return "unknown"
            try:
                peer = Gio.DBusConnection.new_for_address_sync(
                    "unix:path=" + agent["socket"], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT, None, None
                )
                reply = peer.call_sync(
                    None, "/org/keychainlinux/Agent", "org.keychainlinux.Agent1", "Status",
                    GLib.Variant("(s)", (agent["keychain"],)), None, Gio.DBusCallFlags.NONE, 10000, None,
                )
                peer.close_sync(None)
                return str(reply.unpack()[0].get("isLocked"))
            except GLib.Error as error:
                return "error:" + error.message.replace(" ", "_")


        def watch_release(read_end, number):
            def on_ready(fd, condition):
                if condition & GLib.IO_IN and os.read(fd, 1):
                    return True
                say("released %d locked=%s" % (number, lock_state()))
                os.close(fd)
                return False

            GLib.io_add_watch(read_end, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, on_ready)


        def on_call(connection, sender, path, interface, method, parameters, invocation):
            if method == "GetSessionByPID":
                invocation.return_value(GLib.Variant("(o)", (PATH + "/session/_1",)))
                return
            what, who, why, mode = parameters.unpack()
            count[0] += 1
            read_end, write_end = os.pipe()
            fds = Gio.UnixFDList.new()
            index = fds.append(write_end)
            os.close(write_end)
            say("inhibit %d what=%s who=%s mode=%s" % (count[0], what, who, mode))
            watch_release(read_end, count[0])
            invocation.return_value_with_unix_fd_list(GLib.Variant("(h)", (index,)), fds)


        bus.register_object(PATH, Gio.DBusNodeInfo.new_for_xml(XML).interfaces[0], on_call, None, None)
        owned = bus.call_sync(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
            GLib.Variant("(su)", ("org.freedesktop.login1", 4)), None, Gio.DBusCallFlags.NONE, 10000, None,
        )
        if owned.unpack()[0] != 1:
            say("not-owner")
            sys.exit(1)
        say("owner")

        pending = [b""]
        loop = GLib.MainLoop()


        def on_command(fd, condition):
            data = os.read(fd, 4096)
            if not data:
                loop.quit()
                return False
            pending[0] += data
            while b"\n" in pending[0]:
                line, pending[0] = pending[0].split(b"\n", 1)
                words = line.decode().split()
                if words[:1] == ["sleep"]:
                    bus.emit_signal(None, PATH, IFACE, "PrepareForSleep", GLib.Variant("(b)", (words[1] == "true",)))
                    bus.flush_sync(None)
                    say("emitted " + words[1])
                elif words[:1] == ["agent"]:
                    agent["socket"], agent["keychain"] = words[1], words[2]
                    say("agent")
            return True


        GLib.io_add_watch(0, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP, on_command)
        loop.run()
        """#
}
