import DBusWire
import Foundation
import KeychainLibc
import NIOCore
import NIOPosix
import Synchronization

/// The descriptors one incoming message carried (as many as its `UNIX_FDS` header field says),
/// owned until a handler takes one: those not taken are closed when the message is done with.
///
/// ```swift
/// guard case .unixFD = arguments.fd, let descriptor = call.descriptors?.take(arguments.fd) else { … }
/// defer { close(descriptor) }
/// ```
public final class DBusReceivedDescriptors: Sendable {
    private let slots: Mutex<[Int32]>

    init(_ descriptors: [Int32]) { slots = Mutex(descriptors) }

    deinit { DBusSocket.closeAll(slots.withLock { $0 }) }

    /// How many descriptors the message carried.
    public var count: Int { slots.withLock { $0.count } }

    /// The descriptor an `h` value names; the caller owns it from then on (and closes it).
    /// `nil` for another value, an index past the message's descriptors, or one taken already.
    public func take(_ value: DBusValue) -> Int32? {
        guard case .unixFD(let index) = value else { return nil }
        return slots.withLock { slots in
            guard Int(index) < slots.count, slots[Int(index)] >= 0 else { return nil }
            defer { slots[Int(index)] = -1 }
            return slots[Int(index)]
        }
    }
}

/// Descriptors received from the bus in the order they arrived, until the decoder claims them
/// for the message whose `UNIX_FDS` counts them.
package final class DBusDescriptorQueue: Sendable {
    private let state = Mutex<(descriptors: [Int32], closed: Bool)>(([], false))

    package init() {}

    deinit { close() }

    /// Queues `descriptors`; once the queue is closed, they are closed instead.
    func append(_ descriptors: [Int32]) {
        guard !descriptors.isEmpty else { return }
        let refused: [Int32] = state.withLock { state in
            guard !state.closed else { return descriptors }
            state.descriptors += descriptors
            return []
        }
        DBusSocket.closeAll(refused)
    }

    /// The first `count` descriptors, or `nil` when fewer arrived (a peer that claims
    /// descriptors it did not send).
    func take(_ count: Int) -> [Int32]? {
        state.withLock { state in
            guard state.descriptors.count >= count else { return nil }
            defer { state.descriptors.removeFirst(count) }
            return Array(state.descriptors.prefix(count))
        }
    }

    /// Closes every queued descriptor and every one that arrives later.
    func close() {
        DBusSocket.closeAll(
            state.withLock { state in
                state.closed = true
                defer { state.descriptors = [] }
                return state.descriptors
            })
    }
}

/// Reading a bus connection whose messages carry descriptors under SwiftNIO, which reads with
/// `read(2)` and so loses them: a thread of its own receives from the bus socket with `recvmsg`,
/// queues the descriptors (``DBusDescriptorQueue``) and then passes the bytes on through a
/// socket pair, which the channel reads; the channel writes to the bus socket itself. A message's
/// descriptors are queued before its bytes are passed on, so the decoder always finds them.
///
/// The relay ends when the bus closes the connection (the pair's end is closed, so the channel
/// reads its end and closes) or when the channel closes (the pair hangs up, and the relay closes
/// the bus socket).
enum DBusDescriptorRelay {
    /// Starts relaying `bus`, an authenticated connection with descriptor passing agreed, which
    /// the relay now owns.
    /// - Returns: The descriptor the channel reads and the one it writes, both the caller's.
    /// - Throws: ``DBusWire/DBusError`` when no socket pair can be made (`bus` is closed then).
    static func start(bus: Int32, queue: DBusDescriptorQueue) throws -> (input: Int32, output: Int32) {
        var pair: [Int32] = [-1, -1]
        let output = fcntl(bus, F_DUPFD_CLOEXEC, 0)
        guard output >= 0,
            socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0
        else {
            let code = errno
            DBusSocket.closeAll([bus, output])
            throw DBusError(.connectionClosed, "cannot relay the bus connection: errno \(code)")
        }
        let relayEnd = pair[0]
        let thread = Thread { run(bus: bus, to: relayEnd, queue: queue) }
        thread.name = "dbus-descriptors"
        thread.start()
        return (pair[1], output)
    }

    /// Relays until either side ends.
    private static func run(bus: Int32, to channel: Int32, queue: DBusDescriptorQueue) {
        defer {
            DBusSocket.closeAll([bus, channel])
            queue.close()
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var watched = [
                pollfd(fd: bus, events: Int16(POLLIN), revents: 0),
                pollfd(fd: channel, events: 0, revents: 0),
            ]
            guard poll(&watched, 2, -1) >= 0 || errno == EINTR else { return }
            // The channel closed its end: nothing reads any more.
            if watched[1].revents & Int16(POLLHUP | POLLERR) != 0 { return }
            guard watched[0].revents != 0 else { continue }
            var descriptors: [Int32] = []
            let received: Int
            do {
                received = try buffer.withUnsafeMutableBytes { try FDControl.receive(bus, $0, into: &descriptors) }
            } catch {
                // Control data that is not descriptors, or too many: the connection is not trusted.
                DBusSocket.closeAll(descriptors)
                return
            }
            queue.append(descriptors)
            if received < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return
            }
            guard received > 0,
                buffer.withUnsafeBytes({ sendAll(UnsafeRawBufferPointer(rebasing: $0[..<received]), to: channel) })
            else { return }
        }
    }
}
