import KeychainLibc

/// A blocking connection to a message bus that serves method calls which carry descriptors:
/// a ``DBusSocket`` receiving them, `Hello`, a well-known name, calls to the bus driver, and the
/// calls addressed to it one after the other. It blocks its thread: serve it from a thread of
/// its own, never from the Swift concurrency pool.
///
/// SwiftNIO's stream channels read with `read(2)`, so the kernel drops every descriptor a peer
/// sends (see ``DBusFDCall``); a service whose callers pass descriptors (the Secret portal's
/// backend) serves them here.
///
/// ```swift
/// var bus = try DBusBlockingConnection.connect(to: try DBusAddress.sessionBus(environment: environment))
/// try bus.requestName("org.example.Service")
/// while true {
///     let call = try bus.nextCall()
///     defer { DBusSocket.closeAll(call.descriptors) }
///     try bus.send(.methodReturn(to: call.message))
/// }
/// ```
public struct DBusBlockingConnection: Sendable {
    private var socket: DBusSocket
    private var serial: UInt32 = 0
    /// Calls received while waiting for the bus driver's answer, in order.
    private var queued: [DBusSocket.Received] = []

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

    /// Whether descriptors arrived that no message has claimed.
    public var hasUnclaimedDescriptors: Bool { socket.hasUnclaimedDescriptors }

    /// Closes every descriptor received and not handed out, keeping the connection.
    public mutating func closeUnclaimedDescriptors() {
        for call in queued { DBusSocket.closeAll(call.descriptors) }
        queued = []
        socket.closePendingDescriptors()
    }

    /// Closes the connection and every descriptor received and not handed out.
    public mutating func close() {
        closeUnclaimedDescriptors()
        socket.close()
    }

    /// Takes `name` (`DO_NOT_QUEUE`).
    /// - Throws: ``DBusError`` `.remoteError` when another connection owns it.
    public mutating func requestName(_ name: String) throws {
        let reply = try callBus("RequestName", [.string(name), .uint32(4)])
        // 1: now the primary owner; 4: already it.
        guard let code = reply.body.first?.uint32Value, code == 1 || code == 4 else {
            throw DBusError(.remoteError, "\(name) is owned by another connection")
        }
    }

    /// The unique name that owns `name` now, or `nil` when none does.
    public mutating func owner(of name: String) throws -> String? {
        do {
            return try callBus("GetNameOwner", [.string(name)]).body.first?.stringValue
        } catch let error as DBusError where error.code == .remoteError {
            return nil
        }
    }

    /// Sends the method call `message` and waits for its answer (a return or an error), its body
    /// unread, with the descriptors it carries (the caller closes them); calls that arrive
    /// meanwhile are kept for ``nextCall()``, and other messages' descriptors are closed.
    public mutating func call(_ message: DBusMessage) throws -> DBusSocket.Received {
        let sent = try send(message)
        while true {
            let received = try socket.receiveMessage()
            if received.message.type == .methodCall {
                queued.append(received)
                continue
            }
            guard received.message.replySerial == sent,
                received.message.type == .methodReturn || received.message.type == .error
            else {
                DBusSocket.closeAll(received.descriptors)
                continue
            }
            return received
        }
    }

    /// Calls the bus driver's `member` and returns its answer, its body read.
    /// - Throws: ``DBusError`` `.remoteError` for an error answer; the transport's errors.
    public mutating func callBus(_ member: String, _ body: [DBusValue]) throws -> DBusMessage {
        var received = try call(
            .methodCall(
                path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: member,
                destination: DBusMessage.busDriverName, body: body))
        DBusSocket.closeAll(received.descriptors)
        received.message.body = try received.body.readAll()
        guard received.message.type == .methodReturn else {
            throw DBusError(.remoteError, received.message.errorMessage ?? "", errorName: received.message.errorName)
        }
        return received.message
    }

    /// The next method call addressed to this connection, with the descriptors it carries
    /// (the caller closes them); signals and stray replies are dropped. It waits as long as it
    /// takes.
    /// - Throws: ``DBusError`` `.connectionClosed` when the bus goes; `.malformedMessage`.
    public mutating func nextCall() throws -> DBusSocket.Received {
        if !queued.isEmpty { return queued.removeFirst() }
        while true {
            let received: DBusSocket.Received
            do {
                received = try socket.receiveMessage()
            } catch let error as DBusError where error.code == .timedOut {
                continue  // idle; what was read of a message so far is kept
            }
            guard received.message.type == .methodCall else {
                DBusSocket.closeAll(received.descriptors)
                continue
            }
            return received
        }
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
