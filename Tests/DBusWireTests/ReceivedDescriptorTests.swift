import DBusNIO
import DBusWire
import Foundation
import Testing

/// A SwiftNIO connection that receives the descriptors calls carry
/// (`Configuration.receivesDescriptors`): each call gets its own, in order, among calls without
/// any; a descriptor no handler takes is closed; a peer that claims descriptors it did not send
/// is cut off.
@Suite("DBusConnection receiving descriptors", .timeLimit(.minutes(10)))
struct ReceivedDescriptorTests {
    static let path = "/org/example/Pipes"
    static let interface = "org.example.Pipes"

    /// `Read(h) → s`: the text at the descriptor's end; `Keep(h) → u`: the descriptor count,
    /// taking none; `Plain(s) → s`: its argument, with no descriptor.
    static func objects() throws -> DBusObjectTree {
        let tree = DBusObjectTree()
        try tree.register(
            DBusInterface(
                interface,
                methods: [
                    DBusMethod("Read", inputs: [DBusArgument(nil, .unixFD)], outputs: [DBusArgument(nil, .string)]) {
                        call in
                        guard let descriptor = call.arguments.first.flatMap({ call.descriptors?.take($0) }) else {
                            throw DBusError.method("org.example.NoDescriptor", "no descriptor")
                        }
                        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
                        return [.string(String(decoding: handle.readDataToEndOfFile(), as: UTF8.self))]
                    },
                    DBusMethod("Keep", inputs: [DBusArgument(nil, .unixFD)], outputs: [DBusArgument(nil, .uint32)]) {
                        call in
                        [.uint32(UInt32(call.descriptors?.count ?? 0))]
                    },
                    DBusMethod("Plain", inputs: [DBusArgument(nil, .string)], outputs: [DBusArgument(nil, .string)]) {
                        call in
                        call.arguments
                    },
                ]),
            at: path)
        return tree
    }

    /// A Gio client: calls `Read` with a pipe holding its own text and `Plain` between them,
    /// `rounds` times; then `Keep` with a pipe's write end, and reports whether the read end
    /// then ends (the server closed the descriptor it did not take).
    static let client = #"""
        import json, os, sys
        import gi
        gi.require_version("Gio", "2.0")
        from gi.repository import Gio, GLib
        bus = Gio.DBusConnection.new_for_address_sync(
            sys.argv[1], Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)
        name, path, iface = sys.argv[2], "/org/example/Pipes", "org.example.Pipes"
        def with_pipe(member, text):
            reader, writer = os.pipe()
            os.write(writer, text.encode())
            os.close(writer)
            fds = Gio.UnixFDList.new()
            index = fds.append(reader)
            os.close(reader)
            reply, _ = bus.call_with_unix_fd_list_sync(
                name, path, iface, member, GLib.Variant("(h)", (index,)), None, Gio.DBusCallFlags.NONE, 30000, fds, None)
            return reply.unpack()[0]
        read, plain = [], []
        for round in range(int(sys.argv[3])):
            read.append(with_pipe("Read", "pipe %d" % round))
            plain.append(bus.call_sync(name, path, iface, "Plain", GLib.Variant("(s)", ("plain %d" % round,)),
                                       None, Gio.DBusCallFlags.NONE, 30000, None).unpack()[0])
        reader, writer = os.pipe()
        fds = Gio.UnixFDList.new()
        index = fds.append(writer)
        os.close(writer)
        kept, _ = bus.call_with_unix_fd_list_sync(
            name, path, iface, "Keep", GLib.Variant("(h)", (index,)), None, Gio.DBusCallFlags.NONE, 30000, fds, None)
        del fds
        os.set_blocking(reader, True)
        ended = os.read(reader, 1) == b""
        print(json.dumps({"read": read, "plain": plain, "kept": kept.unpack()[0], "ended": ended}))
        """#

    @Test("on a real dbus-daemon, each call gets the descriptors it sent, in order among calls without any")
    func callsGetTheirOwnDescriptors() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        var configuration = DBusConnection.Configuration()
        configuration.receivesDescriptors = true
        let server = try await DBusConnection.connect(
            to: try DBusAddress.parseList(bus.address), objects: try Self.objects(), configuration: configuration)
        defer { Task { await server.close() } }
        let name = try await server.hello()
        let rounds = 20
        let run = try await Tools.run("/usr/bin/python3", ["-c", Self.client, bus.address, name, "\(rounds)"])
        #expect(run.status == 0, "\(run.stderr)")
        let line = try #require(run.stdout.split(separator: "\n").last, "\(run.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(answer["read"] as? [String] == (0..<rounds).map { "pipe \($0)" })
        #expect(answer["plain"] as? [String] == (0..<rounds).map { "plain \($0)" })
        #expect(answer["kept"] as? Int == 1, "the call carried one descriptor")
        #expect(answer["ended"] as? Bool == true, "the descriptor no handler took was closed")
        // The connection still serves ordinary calls of its own.
        #expect(try await server.callBus("GetNameOwner", [.string(name)]).body.first == .string(name))
    }

    @Test("a peer whose message claims descriptors it did not send is cut off")
    func missingDescriptorsCloseTheConnection() async throws {
        let directory = try TemporaryDirectory()
        let socketPath = directory.path + "/peer.sock"
        let listener = try ScriptedPeer.listen(at: socketPath)
        defer { close(listener) }
        // The peer: the handshake with descriptor passing agreed, then a call whose UNIX_FDS
        // says one descriptor, sent without any.
        var call = DBusMessage.methodCall(
            path: Self.path, interface: Self.interface, member: "Keep", body: [.unixFD(0)])
        call.serial = 1
        call.unixFDs = 1
        let bytes = try call.encoded()
        // On a thread of its own: blocked in accept and recv, the peer would hold one of the
        // cooperative pool's two threads here, and under the parallel tests the connection's
        // handshake starved (a CI run timed out after 25 s).
        async let closed = ScriptedPeer.serveOnThread(listener, then: bytes)
        var configuration = DBusConnection.Configuration()
        configuration.receivesDescriptors = true
        let connection = try await DBusConnection.connect(
            to: try DBusAddress.parseList("unix:path=\(socketPath)"), objects: try Self.objects(),
            configuration: configuration)
        #expect(try await closed, "the connection was closed, not answered")
        // The channel's own state follows its descriptors' closing on its event loop.
        for _ in 0..<500 where connection.isActive { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!connection.isActive)
    }
}

/// A peer on a Unix socket that speaks the handshake and then sends prepared bytes.
enum ScriptedPeer {
    static func listen(at path: String) throws -> Int32 {
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard socket >= 0, bound == 0, Glibc.listen(socket, 1) == 0 else {
            throw SupportError(description: "cannot listen at \(path): errno \(errno)")
        }
        return socket
    }

    /// ``serve(_:then:)`` on a thread of its own, off the cooperative pool.
    static func serveOnThread(_ listener: Int32, then bytes: [UInt8]) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try serve(listener, then: bytes) }) }
        }
    }

    /// Accepts one connection, answers its handshake, sends `bytes`, and reports whether the
    /// client then closed the connection without sending anything back.
    static func serve(_ listener: Int32, then bytes: [UInt8]) throws -> Bool {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { throw SupportError(description: "accept: errno \(errno)") }
        defer { close(connection) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var pending = [UInt8]()
        func line() throws -> String {
            while true {
                if let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    defer { pending.removeFirst(end + 1) }
                    return String(decoding: pending[..<end], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                        .replacingOccurrences(of: "\r", with: "")
                }
                var chunk = [UInt8](repeating: 0, count: 256)
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { throw SupportError(description: "the client left during the handshake") }
                pending += chunk[..<count]
            }
        }
        func send(_ text: [UInt8]) { _ = text.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, 0) } }
        guard try line().contains("AUTH EXTERNAL") else { throw SupportError(description: "no AUTH") }
        send(Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8))
        guard try line() == "NEGOTIATE_UNIX_FD" else { throw SupportError(description: "no NEGOTIATE_UNIX_FD") }
        send(Array("AGREE_UNIX_FD\r\n".utf8))
        guard try line() == "BEGIN" else { throw SupportError(description: "no BEGIN") }
        send(bytes)
        var reply = [UInt8](repeating: 0, count: 4096)
        return recv(connection, &reply, reply.count, 0) == 0
    }
}
