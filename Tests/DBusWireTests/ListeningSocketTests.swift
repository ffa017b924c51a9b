import Foundation
import KeychainLibc
import Synchronization
import Testing

@testable import DBusNIO
@testable import DBusWire

/// A Unix stream socket bound at `path`, listening unless told otherwise.
func unixSocket(at path: String, listening: Bool = true) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard bound == 0, !listening || listen(fd, 16) == 0 else {
        close(fd)
        throw SupportError(description: "bind/listen \(path): errno \(errno)")
    }
    return fd
}

@Suite("A server on a socket bound elsewhere; SO_PEERCRED")
struct ListeningSocketTests {
    @Test(
        "serve(listeningSocket:) answers calls on a socket bound and listened on beforehand, and leaves it to its owner"
    )
    func servesBoundSocket() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/bound.sock"
        let fd = try unixSocket(at: path)
        defer { close(fd) }
        let server = try await DBusServer.serve(listeningSocket: fd, unixPath: path, objects: try TestObjects.make())
        #expect(server.address.unixPath == path && server.address.guid?.count == 32)
        let connection = try await DBusConnection.connect(to: .unixPath(path))
        let reply = try await connection.call(
            .methodCall(path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping"))
        #expect(reply.type == .methodReturn)
        await connection.close()
        try await server.close()
        // The server closed its duplicate; the caller's descriptor is still the listening socket.
        #expect(DBusServer.isListeningUnixStreamSocket(fd))
    }

    @Test("serve(listeningSocket:) refuses a descriptor that is not a listening Unix stream socket")
    func refusesOtherDescriptors() async throws {
        let directory = try TemporaryDirectory()
        let bound = try unixSocket(at: directory.path + "/quiet.sock", listening: false)
        defer { close(bound) }
        await #expect(throws: DBusError.self) {
            _ = try await DBusServer.serve(
                listeningSocket: bound, unixPath: directory.path + "/quiet.sock", objects: try TestObjects.make())
        }
    }

    @Test("isListeningUnixStreamSocket: only a listening AF_UNIX SOCK_STREAM socket")
    func listeningCheck() throws {
        let directory = try TemporaryDirectory()
        let listening = try unixSocket(at: directory.path + "/a.sock")
        let quiet = try unixSocket(at: directory.path + "/b.sock", listening: false)
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let tcp = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var loopback = sockaddr_in()
        loopback.sin_family = sa_family_t(AF_INET)
        loopback.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let tcpListening =
            withUnsafePointer(to: &loopback) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(tcp, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            } == 0 && listen(tcp, 1) == 0
        defer { ([listening, quiet, datagram, tcp] + pair + pipeEnds).forEach { close($0) } }
        #expect(DBusServer.isListeningUnixStreamSocket(listening))
        #expect(tcpListening && !DBusServer.isListeningUnixStreamSocket(tcp), "another family")
        for fd in [quiet, pair[0], pipeEnds[0], datagram, -1, 100_000] {
            #expect(!DBusServer.isListeningUnixStreamSocket(fd), "descriptor \(fd)")
        }
    }

    @Test("a call still being handled after its peer hung up finds the connection's pidfd open, naming the peer")
    func pidfdOutlivesHangUp() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/pidfd.sock"
        let seen = Mutex<String?>(nil)
        let tree = DBusObjectTree()
        try tree.register(
            DBusInterface(
                "org.example.Slow",
                methods: [
                    DBusMethod("Wait") { call in
                        // Long enough for the client to have closed and the server to have seen it.
                        try await Task.sleep(for: .milliseconds(300))
                        let pidFD = call.peerCredentials?.pidFD ?? -1
                        let fdinfo = try? String(contentsOfFile: "/proc/self/fdinfo/\(pidFD)", encoding: .utf8)
                        seen.withLock { $0 = fdinfo ?? "closed" }
                        return []
                    }
                ]),
            at: "/")
        let server = try await DBusServer.bind(unixPath: path, objects: tree)
        let client = try RawSocket(path: path)
        var call = DBusMessage.methodCall(path: "/", interface: "org.example.Slow", member: "Wait")
        call.serial = 1
        #expect(client.send(RawSocket.authenticate + (try call.encoded())))
        _ = client.receive(timeout: 2000)  // the SASL OK: the call is in
        client.close()
        var fdinfo: String?
        for _ in 0..<200 where fdinfo == nil {
            try await Task.sleep(for: .milliseconds(25))
            fdinfo = seen.withLock { $0 }
        }
        #expect(fdinfo?.contains("Pid:\t\(getpid())") == true, "\(fdinfo ?? "no answer")")
        try await server.close()
    }

    @Test("DBusPeerCredentials(socket:) reads this process for a socketpair, and refuses a pipe")
    func peerCredentials() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        var pipeEnds: [Int32] = [0, 0]
        #expect(pipe(&pipeEnds) == 0)
        defer { (pair + pipeEnds).forEach { close($0) } }
        let credentials = try DBusPeerCredentials(socket: pair[0])
        #expect(credentials == DBusPeerCredentials(uid: getuid(), gid: getgid(), pid: getpid()))
        #expect(throws: DBusError.self) { try DBusPeerCredentials(socket: pipeEnds[0]) }
    }
}
