import Foundation
import KeychainLibc
import Synchronization

/// A loopback TCP proxy in front of the test server for one device (a proxy per device, as
/// docs/sync.md, "Measured here", describes `LinkFailureTests`): the device's sync settings name
/// the proxy's port, and the test can cut its link, stall it, and restore it.
///
/// - ``cut()`` closes every connection and refuses new ones (the listening socket is closed: a
///   connect fails at once).
/// - ``stall()`` stops forwarding bytes both ways and keeps every connection open, also the ones
///   made during the stall (the kernel still accepts them): a black-holed, half-open link, as
///   when the proxy is stopped with SIGSTOP. A stalled connection never carries a byte again: after
///   ``restore()`` its device side stays open and silent until the proxy stops (a peer that
///   vanished), and its server side is closed (the server noticed; a transaction it held ends).
/// - ``restore()`` forwards new connections again.
///
/// One thread polls every socket; the control calls are async and return once the thread has
/// applied them.
final class LoopbackProxy: Sendable {
    enum Mode: Sendable { case open, cut, stalled }

    /// The port the device connects to (127.0.0.1).
    let port: Int
    /// The server's port (127.0.0.1).
    let upstreamPort: Int
    private let control = Mutex(Control())

    private struct Control {
        var mode = Mode.open
        var generation = 0
        var applied = 0
        var stopping = false
        var stopped = false
        var accepted = 0
    }

    /// A proxy on a free loopback port forwarding to `upstreamPort`.
    init(upstreamPort: Int) throws {
        let listener = try Self.listen(port: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.upstreamPort = upstreamPort
        let thread = Thread { [self] in run(listener: listener) }
        thread.name = "loopback-proxy-\(port)"
        thread.start()
    }

    /// Connections accepted so far (forwarded or held).
    var acceptedConnections: Int { control.withLock { $0.accepted } }

    /// Closes every connection and refuses new ones.
    func cut() async { await set(.cut) }

    /// Stops forwarding bytes; connections stay open.
    func stall() async { await set(.stalled) }

    /// Forwards new connections again.
    func restore() async { await set(.open) }

    /// Closes everything and ends the thread.
    func stop() async {
        control.withLock { $0.stopping = true }
        while !control.withLock({ $0.stopped }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    private func set(_ mode: Mode) async {
        let generation = control.withLock { control in
            control.mode = mode
            control.generation += 1
            return control.generation
        }
        while control.withLock({ $0.applied < generation }) { try? await Task.sleep(for: .milliseconds(5)) }
    }

    // MARK: The thread

    private struct Link {
        var device: Int32
        var server: Int32
    }

    private func run(listener initial: Int32) {
        var listener = initial
        var links: [Link] = []
        var silent: [Int32] = []  // device sides of stalled connections
        var held: [Int32] = []  // server sides of stalled connections
        var applied = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let (mode, generation, stopping) = control.withLock { ($0.mode, $0.generation, $0.stopping) }
            if stopping {
                for fd in links.flatMap({ [$0.device, $0.server] }) + silent + held + [listener] where fd >= 0 {
                    close(fd)
                }
                control.withLock { $0.stopped = true }
                return
            }
            if generation != applied {
                switch mode {
                case .cut:
                    for fd in links.flatMap({ [$0.device, $0.server] }) + silent + held + [listener] where fd >= 0 {
                        close(fd)
                    }
                    (links, silent, held, listener) = ([], [], [], -1)
                case .stalled:
                    silent += links.map(\.device)
                    held += links.map(\.server)
                    links = []
                case .open:
                    for fd in held { close(fd) }
                    held = []
                    if listener < 0 { listener = (try? Self.listen(port: port)) ?? -1 }
                }
                applied = generation
                control.withLock { $0.applied = generation }
            }
            let polled = links
            var fds: [pollfd] = []
            if listener >= 0 { fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
            for link in polled {
                fds.append(pollfd(fd: link.device, events: Int16(POLLIN), revents: 0))
                fds.append(pollfd(fd: link.server, events: Int16(POLLIN), revents: 0))
            }
            guard poll(&fds, nfds_t(fds.count), 10) > 0 else { continue }
            var offset = 0
            if listener >= 0 {
                offset = 1
                if fds[0].revents != 0 {
                    let device = accept(listener, nil, nil)
                    if device >= 0 {
                        _ = fcntl(device, F_SETFD, FD_CLOEXEC)
                        control.withLock { $0.accepted += 1 }
                        var one: Int32 = 1
                        setsockopt(device, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                        if mode == .stalled {
                            silent.append(device)
                        } else if let server = try? Self.connect(port: upstreamPort) {
                            links.append(Link(device: device, server: server))
                        } else {
                            close(device)
                        }
                    }
                }
            }
            var ended: Set<Int32> = []
            for (index, link) in polled.enumerated() {
                for (from, to, slot) in [
                    (link.device, link.server, offset + 2 * index), (link.server, link.device, offset + 2 * index + 1),
                ]
                where fds[slot].revents != 0 && !ended.contains(link.device) {
                    if !Self.forward(from: from, to: to, buffer: &buffer) {
                        close(link.device)
                        close(link.server)
                        ended.insert(link.device)
                    }
                }
            }
            if !ended.isEmpty { links.removeAll { ended.contains($0.device) } }
        }
    }

    /// Reads what `from` has and writes it all to `to`; false when either side has ended.
    private static func forward(from: Int32, to: Int32, buffer: inout [UInt8]) -> Bool {
        buffer.withUnsafeMutableBytes { bytes in
            let count = read(from, bytes.baseAddress, bytes.count)
            guard count > 0 else { return false }
            var sent = 0
            while sent < count {
                let written = send(to, bytes.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                sent += written
            }
            return true
        }
    }

    struct SocketError: Error, CustomStringConvertible {
        var call: String
        var code: Int32
        var description: String { "\(call): errno \(code)" }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func socketFD() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError(call: "socket", code: errno) }
        return fd
    }

    private static func listen(port: Int) throws -> Int32 {
        let fd = try socketFD()
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw SocketError(call: "bind/listen", code: code)
        }
        return fd
    }

    private static func connect(port: Int) throws -> Int32 {
        let fd = try socketFD()
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw SocketError(call: "connect", code: code)
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }
}
