import KeychainLibc

/// A method reply and the UNIX file descriptors it carries (D-Bus type `h`).
///
/// The caller owns every descriptor in ``fileDescriptors`` and must close it.
public struct DBusFDReply: Sendable {
    /// The reply (a method return).
    public var message: DBusMessage
    /// The descriptors the reply's `h` values index, in the message's order; `-1` at an index
    /// no `h` value of the body names (such a descriptor was closed on arrival).
    public var fileDescriptors: [Int32]

    /// The descriptor a `.unixFD` value names, or `nil` for another value or an unused index.
    public func fileDescriptor(_ value: DBusValue) -> Int32? {
        guard case .unixFD(let index) = value, Int(index) < fileDescriptors.count,
            fileDescriptors[Int(index)] >= 0
        else { return nil }
        return fileDescriptors[Int(index)]
    }
}

/// One blocking method call that may receive file descriptors: its own connection to a bus
/// (a ``DBusSocket`` receiving descriptors), opened for the call and closed after it.
///
/// Why not `DBusConnection` (DBusNIO): descriptors travel as `SCM_RIGHTS` control messages beside the
/// bytes, and SwiftNIO's stream channels read with plain `read(2)`, so the kernel would drop
/// (close) every descriptor a peer sends; NIO has no way to receive them on a stream socket.
/// Only logind's `Inhibit` needs a descriptor, once at start and once per resume, so this
/// small client does just that on the blocking transport: SASL `EXTERNAL` plus
/// `NEGOTIATE_UNIX_FD`, `Hello`, the call, and `recvmsg` with `MSG_CMSG_CLOEXEC` until the reply. It blocks its thread: call it from a Dispatch queue or thread, never from the
/// Swift concurrency pool.
///
/// A received descriptor outlives the connection (it is the process's own once received), so
/// the connection closes at once. Received descriptors are checked: the number that arrives
/// with a message must equal its `UNIX_FDS` header field, every `h` value of the reply must
/// index one of them, and control data other than `SCM_RIGHTS` (or truncated) is refused; on
/// any failure every descriptor received is closed. Descriptors arriving with other messages
/// (the `Hello` reply, `NameAcquired`) are closed.
public enum DBusFDCall {
    /// The most descriptors one call accepts (dbus-daemon's default per-message limit is 16).
    public static let maximumDescriptors = DBusSocket.maximumDescriptors

    /// Calls `message` on the first address of `addresses` that accepts a connection and
    /// returns the reply with its descriptors.
    ///
    /// - Parameters:
    ///   - message: A method call (its serial is assigned here).
    ///   - addresses: Bus addresses; only `unix:path=` entries are tried.
    ///   - timeout: The longest wait for the whole exchange.
    /// - Throws: ``DBusError``: `.remoteError` for an error reply, `.authenticationFailed` when
    ///   the bus refuses EXTERNAL or descriptor passing, `.malformedMessage` for descriptors
    ///   that do not match the message, `.timedOut`, `.connectionClosed`.
    public static func call(
        _ message: DBusMessage, addresses: [DBusAddress], timeout: Duration = .seconds(10)
    ) throws -> DBusFDReply {
        var connection = try DBusBlockingConnection.connect(to: addresses, timeout: timeout, deadline: .now + timeout)
        defer { connection.close() }
        return try call(message, on: &connection)
    }

    /// The exchange on a connected stream socket (left open): handshake, `Hello`, the call.
    static func call(_ message: DBusMessage, on socket: Int32, timeout: Duration) throws -> DBusFDReply {
        var connection = try DBusBlockingConnection(adopting: socket, timeout: timeout, deadline: .now + timeout)
        defer { connection.closeUnclaimedDescriptors() }
        return try call(message, on: &connection)
    }

    /// The call and its reply on `connection`, the reply's descriptors checked.
    private static func call(_ message: DBusMessage, on connection: inout DBusBlockingConnection) throws
        -> DBusFDReply
    {
        var received = try connection.call(message)
        do {
            received.message.body = try received.body.readAll()
        } catch {
            closeAll(received.descriptors)
            throw error
        }
        return try adopt(received.message, received.descriptors, extra: connection.hasUnclaimedDescriptors)
    }

    /// The reply with its descriptors, after checking them; closes them all on failure.
    static func adopt(_ reply: DBusMessage, _ descriptors: [Int32], extra: Bool) throws -> DBusFDReply {
        guard !extra else {
            closeAll(descriptors)
            throw DBusError(.malformedMessage, "more descriptors arrived than the reply's UNIX_FDS says")
        }
        guard reply.type == .methodReturn else {
            closeAll(descriptors)
            var error = DBusError(.remoteError, reply.errorMessage ?? "", errorName: reply.errorName)
            if case .string? = reply.body.first { error.details = Array(reply.body.dropFirst()) }
            throw error
        }
        var used = Set<UInt32>()
        for value in reply.body { collectIndices(value, into: &used) }
        guard used.allSatisfy({ Int($0) < descriptors.count }) else {
            closeAll(descriptors)
            throw DBusError(.malformedMessage, "an h value indexes no descriptor the reply carries")
        }
        var kept = descriptors
        for index in kept.indices where !used.contains(UInt32(index)) {
            close(kept[index])
            kept[index] = -1
        }
        return DBusFDReply(message: reply, fileDescriptors: kept)
    }

    /// Every `h` index in `value`.
    static func collectIndices(_ value: DBusValue, into indices: inout Set<UInt32>) {
        switch value {
        case .unixFD(let index): indices.insert(index)
        case .array(_, let values), .structure(let values): values.forEach { collectIndices($0, into: &indices) }
        case .dictionary(_, _, let entries):
            for entry in entries {
                collectIndices(entry.key, into: &indices)
                collectIndices(entry.value, into: &indices)
            }
        case .variant(let inner): collectIndices(inner, into: &indices)
        default: break
        }
    }

    static func closeAll(_ descriptors: [Int32]) { DBusSocket.closeAll(descriptors) }
}
