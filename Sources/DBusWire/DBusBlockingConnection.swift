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
/// var bus = try DBusBlockingConnection(addresses: try DBusAddress.sessionBus(environment: environment))
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
    public init(addresses: [DBusAddress]) throws {
        var lastError = DBusError(.invalidAddress, "no unix:path= address to connect to")
        for path in addresses.compactMap(\.unixPath) {
            do {
                socket = try DBusSocket.connect(unixPath: path, timeout: Self.timeout, receivesDescriptors: true)
            } catch let error as DBusError {
                lastError = error
                continue
            }
            do {
                try socket.authenticate(uid: geteuid(), negotiatingDescriptors: true)
                _ = try callBus("Hello", [])
                return
            } catch {
                socket.close()
                throw error
            }
        }
        throw lastError
    }

    /// Closes the connection and every descriptor received and not handed out.
    public mutating func close() {
        for call in queued { DBusSocket.closeAll(call.descriptors) }
        queued = []
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

    /// Calls the bus driver's `member` and waits for its answer; calls that arrive meanwhile are
    /// kept for ``nextCall()``.
    /// - Throws: ``DBusError`` `.remoteError` for an error answer; the transport's errors.
    public mutating func callBus(_ member: String, _ body: [DBusValue]) throws -> DBusMessage {
        var call = DBusMessage.methodCall(
            path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: member,
            destination: DBusMessage.busDriverName, body: body)
        let sent = try send(call)
        call.serial = sent
        while true {
            var received = try socket.receiveMessage()
            if received.message.type == .methodCall {
                queued.append(received)
                continue
            }
            DBusSocket.closeAll(received.descriptors)
            guard received.message.replySerial == sent else { continue }
            received.message.body = try received.body.readAll()
            guard received.message.type == .methodReturn else {
                throw DBusError(
                    .remoteError, received.message.errorMessage ?? "", errorName: received.message.errorName)
            }
            return received.message
        }
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
