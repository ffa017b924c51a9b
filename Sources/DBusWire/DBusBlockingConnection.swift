import KeychainLibc

/// A blocking connection to a message bus for a call whose reply carries descriptors: a
/// ``DBusSocket`` receiving them, `Hello`, and calls answered one after the other. It blocks its
/// thread: use it from a thread of its own, never from the Swift concurrency pool.
///
/// SwiftNIO's stream channels read with `read(2)`, so the kernel drops every descriptor a peer
/// sends; ``DBusFDCall`` (logind's `Inhibit`) calls through this. A server whose callers pass
/// descriptors uses a SwiftNIO connection that receives them instead
/// (`DBusConnection.Configuration.receivesDescriptors` in DBusNIO).
///
/// ```swift
/// var bus = try DBusBlockingConnection.connect(to: try DBusAddress.sessionBus(environment: environment))
/// defer { bus.close() }
/// let reply = try bus.call(.methodCall(path: "/", interface: "org.example.Files", member: "Open", destination: "org.example"))
/// defer { DBusSocket.closeAll(reply.descriptors) }
/// ```
public struct DBusBlockingConnection: Sendable {
    private var socket: DBusSocket
    private var serial: UInt32 = 0

    /// How long one wait for the bus driver's answer, or one write, may last.
    public static let timeout: Duration = .seconds(30)

    /// Connects to the first of `addresses` that accepts (only `unix:path=` ones are tried),
    /// authenticates with descriptor passing agreed, and says `Hello`.
    /// - Throws: ``DBusError`` when no bus accepts, or the bus refuses the handshake.
    /// - Parameters:
    ///   - timeout: The longest wait for input or for the bus to take output.
    ///   - deadline: When the whole exchange must be over, if it must.
    public static func connect(
        to addresses: [DBusAddress], timeout: Duration = timeout, deadline: ContinuousClock.Instant? = nil
    ) throws -> DBusBlockingConnection {
        var lastError = DBusError(.invalidAddress, "no unix:path= address to connect to")
        for path in addresses.compactMap(\.unixPath) {
            let descriptor: Int32
            do {
                descriptor = try DBusSocket.connectUnix(path)
            } catch let error as DBusError {
                lastError = DBusError(error.code, "cannot connect to \(path): \(error.message)")
                continue
            }
            do {
                return try DBusBlockingConnection(adopting: descriptor, timeout: timeout, deadline: deadline)
            } catch {
                Glibc.close(descriptor)
                throw error
            }
        }
        throw lastError
    }

    /// The connection on `descriptor`, a connected stream socket to a bus: the handshake with
    /// descriptor passing agreed, then `Hello` (sent, its answer not awaited). The connection owns the socket once made (its
    /// ``close()`` closes it); when this throws, the caller still does.
    /// - Parameters:
    ///   - timeout: The longest wait for input or for the bus to take output.
    ///   - deadline: When the whole exchange must be over, if it must.
    /// - Throws: ``DBusError`` when the bus refuses the handshake or `Hello`, or does not answer.
    public init(adopting descriptor: Int32, timeout: Duration = timeout, deadline: ContinuousClock.Instant? = nil)
        throws
    {
        socket = DBusSocket(adopting: descriptor, timeout: timeout, deadline: deadline, receivesDescriptors: true)
        do {
            try socket.authenticate(uid: geteuid(), negotiatingDescriptors: true)
            // Not waited for: the bus answers in order, so the next call's answer comes after
            // `Hello`'s (a bus that refuses `Hello` closes the connection, which fails that
            // call), and a one-call client such as ``DBusFDCall`` pays one round trip.
            try send(
                .methodCall(
                    path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: "Hello",
                    destination: DBusMessage.busDriverName))
        } catch {
            closeUnclaimedDescriptors()
            throw error
        }
    }

    /// A second descriptor of the connection's socket (close-on-exec), which the caller owns
    /// and closes: shutting it down (`shutdown(2)`) from another thread ends a wait in
    /// ``receive()`` at once. `-1` when it cannot be made.
    public func duplicateSocket() -> Int32 {
        fcntl(socket.descriptor, F_DUPFD_CLOEXEC, 0)
    }

    /// Whether descriptors arrived that no message has claimed.
    public var hasUnclaimedDescriptors: Bool { socket.hasUnclaimedDescriptors }

    /// Closes every descriptor received and not handed out, keeping the connection.
    public mutating func closeUnclaimedDescriptors() {
        socket.closePendingDescriptors()
    }

    /// Closes the connection and every descriptor received and not handed out.
    public mutating func close() {
        closeUnclaimedDescriptors()
        socket.close()
    }

    /// Sends the method call `message` and waits for its answer (a return or an error), its body
    /// unread, with the descriptors it carries (the caller closes them); other messages are
    /// dropped, their descriptors closed.
    public mutating func call(_ message: DBusMessage) throws -> DBusSocket.Received {
        let sent = try send(message)
        while true {
            let received = try socket.receiveMessage()
            guard received.message.replySerial == sent,
                received.message.type == .methodReturn || received.message.type == .error
            else {
                DBusSocket.closeAll(received.descriptors)
                continue
            }
            return received
        }
    }

    /// Sends the method call `message` and returns its reply's body, decoded; signals that arrive
    /// meanwhile are kept in `signals`, in order (descriptors any message carries are closed).
    /// - Throws: ``DBusError``: `.remoteError` (with the error's name) for an error reply,
    ///   `.connectionClosed`, `.timedOut`, `.malformedMessage`.
    public mutating func call(_ message: DBusMessage, keepingSignals signals: inout [DBusMessage]) throws
        -> [DBusValue]
    {
        let sent = try send(message)
        while true {
            let received = try receive()
            if received.type == .signal {
                signals.append(received)
                continue
            }
            guard received.replySerial == sent, received.type == .methodReturn || received.type == .error else {
                continue
            }
            guard received.type == .methodReturn else {
                throw DBusError(.remoteError, received.errorMessage ?? "", errorName: received.errorName)
            }
            return received.body
        }
    }

    /// The next message, its body decoded; the descriptors it carries are closed.
    /// - Throws: ``DBusError`` `.connectionClosed`, `.timedOut`, `.malformedMessage`.
    public mutating func receive() throws -> DBusMessage {
        var received = try socket.receiveMessage()
        DBusSocket.closeAll(received.descriptors)
        received.message.body = try received.body.readAll()
        return received.message
    }

    /// Sends `message` under the next serial, which it returns.
    @discardableResult
    public mutating func send(_ message: DBusMessage) throws -> UInt32 {
        serial = serial == UInt32.max ? 1 : serial + 1
        var outgoing = message
        outgoing.serial = serial
        try socket.send(try outgoing.encoded())
        return serial
    }
}
