import Foundation
import DBusWire
import KeychainLibc
import NIOCore
import NIOPosix
import Synchronization

/// The credentials of the process at the other end of a server connection, from the kernel.
public struct DBusPeerCredentials: Hashable, Sendable {
    /// The peer's user id (`SO_PEERCRED`).
    public var uid: UInt32
    /// The peer's group id (`SO_PEERCRED`).
    public var gid: UInt32
    /// The peer's process id as of `connect()` (`SO_PEERCRED`); it can be reused after the process exits.
    public var pid: Int32
    /// A pidfd for the peer process (`SO_PEERPIDFD`, Linux 6.5+), or `nil` where unsupported.
    /// Owned by the connection: valid while its channel is open or any ``DBusConnection`` value
    /// of it exists (as in every call being handled, even after the peer hung up), then closed.
    /// Duplicate it to keep it longer.
    public var pidFD: Int32?

    /// Credentials with the given values.
    public init(uid: UInt32, gid: UInt32, pid: Int32, pidFD: Int32? = nil) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.pidFD = pidFD
    }

    /// Reads `SO_PEERCRED` of a connected Unix socket: the uid, gid and pid of the process that
    /// connected (or, for a socketpair, created it), as of that moment. The one reading of
    /// `SO_PEERCRED` in the package: ``DBusServer`` asks NIO for the same option with the same
    /// layout, and the agent's own credentials start here.
    ///
    /// - Parameter socket: A connected `AF_UNIX` socket.
    /// - Returns: Credentials with `pidFD` `nil` (the caller asks for `SO_PEERPIDFD` if it wants
    ///   one, and then owns it).
    /// - Throws: ``DBusError`` `.authenticationFailed` when the socket gives no credentials
    ///   (not a Unix socket, not connected), naming the `errno`.
    public init(socket: Int32) throws {
        var credentials = KernelPeerCredentials()
        var length = socklen_t(MemoryLayout<KernelPeerCredentials>.size)
        guard getsockopt(socket, SOL_SOCKET, KernelPeerCredentials.optionName, &credentials, &length) == 0,
            length == socklen_t(MemoryLayout<KernelPeerCredentials>.size)
        else { throw DBusError(.authenticationFailed, "no SO_PEERCRED on descriptor \(socket): errno \(errno)") }
        self.init(uid: credentials.uid, gid: credentials.gid, pid: credentials.pid)
    }
}

/// The layout of Linux's `struct ucred`, the value of `SO_PEERCRED` (Glibc exports the struct
/// and the option's name only with `_GNU_SOURCE`, which Swift's Glibc module does not define).
struct KernelPeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0

    /// `SO_PEERCRED`: 21 on PowerPC, 17 on the other architectures Swift runs on.
    #if arch(powerpc64le) || arch(powerpc64)
        static let optionName: Int32 = 21
    #else
        static let optionName: Int32 = 17
    #endif
}

/// How many incoming method calls a connection handles at once and lets wait, counted per
/// sender (a bus connection carries every client's calls; a peer connection has one sender).
/// A call beyond all three bounds is answered `org.freedesktop.DBus.Error.LimitsExceeded`.
public struct DBusCallLimits: Sendable, Hashable {
    /// The calls of one sender handled at once; later ones wait their turn.
    public var handledAtOnce: Int
    /// The calls of one sender that may wait. libsecret asks for every found item's
    /// properties at once, so this is set for searches of tens of thousands of items.
    public var waitingPerSender: Int
    /// The calls of all senders that may wait together.
    public var waitingInAll: Int

    /// - Parameters:
    ///   - handledAtOnce: 64 by default.
    ///   - waitingPerSender: 32,768 by default.
    ///   - waitingInAll: 131,072 by default.
    public init(handledAtOnce: Int = 64, waitingPerSender: Int = 32_768, waitingInAll: Int = 131_072) {
        self.handledAtOnce = handledAtOnce
        self.waitingPerSender = waitingPerSender
        self.waitingInAll = waitingInAll
    }
}

/// What the connection handler is asked to write.
enum DBusOutbound: Sendable {
    /// A method call whose reply completes the promise.
    case call(DBusMessage, EventLoopPromise<DBusMessage>)
    /// A message needing no reply (signal, or call with `noReplyExpected`).
    case send(DBusMessage)
    /// A dispatched call from `sender` (its unique name; empty on a peer connection) finished;
    /// its reply, if any, is to be sent.
    case completed(DBusMessage?, sender: String)
    /// A call timed out: forget its pending entry.
    case abandon(EventLoopPromise<DBusMessage>)
}

/// State shared between a connection's handler and its ``DBusConnection`` values.
final class DBusConnectionState: Sendable {
    let peerCredentials: DBusPeerCredentials?
    let signals: AsyncStream<DBusMessage>
    let signalContinuation: AsyncStream<DBusMessage>.Continuation
    /// Sees each signal on the event loop as it arrives, before any later message is handled
    /// (``DBusConnection/observeSignals(_:)``).
    let signalObserver = Mutex<(@Sendable (DBusMessage) -> Void)?>(nil)
    let uniqueName = Mutex<String?>(nil)
    let serverGUID = Mutex<String?>(nil)
    /// What the server keeps about this connection (``DBusConnection/attachment``).
    let attachment = Mutex<(any Sendable)?>(nil)
    /// What other layers keep about this connection, by type (``DBusConnection/value(of:)``).
    let values = Mutex<[ObjectIdentifier: any Sendable]>([:])
    let callTimeout: Duration

    /// - Parameters:
    ///   - peerCredentials: The peer's credentials; their pidfd, if any, now belongs to this state.
    ///   - callTimeout: How long an outgoing call waits for its reply.
    init(peerCredentials: DBusPeerCredentials?, callTimeout: Duration = .seconds(25)) {
        self.peerCredentials = peerCredentials
        self.callTimeout = callTimeout
        (signals, signalContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Closes the pidfd once nothing uses the connection any more: neither its channel's handler
    /// nor a ``DBusConnection`` value, such as the one every call being handled holds. So a
    /// handler still running after the peer hung up never finds the number closed, or reused
    /// for another file.
    deinit {
        if let pidFD = peerCredentials?.pidFD { close(pidFD) }
    }
}

/// Assigns serials, matches replies to calls, delivers signals and dispatches incoming calls.
final class DBusConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = DBusReceivedMessage
    typealias OutboundIn = DBusOutbound
    typealias OutboundOut = DBusMessage

    private let state: DBusConnectionState
    private let dispatcher: DBusDispatcher?
    private let limits: DBusCallLimits
    private var nextSerial: UInt32 = 1
    private var pending: [UInt32: EventLoopPromise<DBusMessage>] = [:]
    /// The calls being handled and waiting, by sender: on a bus connection every client's calls
    /// arrive here, so each client is counted on its own and one client never uses up another's.
    private var senders: [String: SenderCalls] = [:]
    private var waitingTotal = 0

    /// One sender's calls: how many are being handled, and those waiting their turn in order.
    private struct SenderCalls {
        var running = 0
        var waiting = CircularBuffer<DBusReceivedMessage>()
    }

    init(state: DBusConnectionState, dispatcher: DBusDispatcher?, limits: DBusCallLimits) {
        self.state = state
        self.dispatcher = dispatcher
        self.limits = limits
    }

    private func allocateSerial() -> UInt32 {
        defer { nextSerial = nextSerial == UInt32.max ? 1 : nextSerial + 1 }
        return nextSerial
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .call(var message, let reply):
            message.serial = allocateSerial()
            if !message.flags.contains(.noReplyExpected) { pending[message.serial] = reply }
            context.write(wrapOutboundOut(message), promise: promise)
        case .send(var message):
            if message.serial == 0 { message.serial = allocateSerial() }
            context.write(wrapOutboundOut(message), promise: promise)
        case .completed(let reply, let sender):
            if var reply {
                reply.serial = allocateSerial()
                context.write(wrapOutboundOut(reply), promise: promise)
            } else {
                promise?.succeed()
            }
            finished(sender, context: context)
        case .abandon(let reply):
            if let serial = pending.first(where: { $0.value == reply })?.key { pending[serial] = nil }
            promise?.succeed()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let received = unwrapInboundIn(data)
        // A call's body is read where it is handled (from the wire, or decoded there).
        guard received.header.type != .methodCall else { return dispatch(received, context: context) }
        var message = received.header
        var body = received.body
        do {
            message.body = try body.readAll()
        } catch {
            // A malformed body closes the connection, as a malformed header does.
            context.close(promise: nil)
            return
        }
        switch message.type {
        case .methodReturn, .error:
            if let serial = message.replySerial, let reply = pending.removeValue(forKey: serial) {
                reply.succeed(message)
            }
        case .signal:
            state.signalObserver.withLock { $0 }?(message)
            state.signalContinuation.yield(message)
        case .methodCall:
            break  // dispatched above
        }
    }

    private func dispatch(_ received: DBusReceivedMessage, context: ChannelHandlerContext) {
        // The header alone is enough to refuse a call.
        let header = received.header
        let wantsReply = !header.flags.contains(.noReplyExpected)
        guard dispatcher != nil else {
            if wantsReply {
                reply(.error(to: header, name: DBusErrorName.unknownMethod, message: "no objects"), context)
            }
            return
        }
        let sender = header.sender ?? ""
        // Counts only: a copy of the sender's calls kept alive here would make the append below
        // copy the whole queue, quadratic in the calls waiting (10,000 of libsecret's at once).
        let running = senders[sender]?.running ?? 0
        let waiting = senders[sender]?.waiting.count ?? 0
        guard running < limits.handledAtOnce else {
            // Beyond what is handled at once, a call waits its turn (libsecret reads every
            // found item's properties at once), up to a bound per sender and in all.
            guard waiting < limits.waitingPerSender, waitingTotal < limits.waitingInAll else {
                if wantsReply {
                    reply(.error(to: header, name: DBusErrorName.limitsExceeded, message: "too many calls"), context)
                }
                return
            }
            senders[sender, default: SenderCalls()].waiting.append(received)
            waitingTotal += 1
            return
        }
        start(received, sender: sender, context: context)
    }

    /// Handles a call the limits let through: answered at once, or counted while it runs.
    private func start(_ received: DBusReceivedMessage, sender: String, context: ChannelHandlerContext) {
        guard let dispatcher else { return }
        let connection = DBusConnection(channel: context.channel, state: state)
        let call: DBusMessage
        switch dispatcher.handleImmediately(received, connection: connection) {
        case .answered(let answer):
            // Answered here, on the event loop: no task, no hand-off to another thread and back.
            if let answer { reply(answer, context) }
            return
        case .malformed:
            context.close(promise: nil)
            return
        case .later(let decoded):
            call = decoded
        }
        senders[sender, default: SenderCalls()].running += 1
        // On the connection's event loop, not Swift's global pool: a process whose pool threads
        // are all blocked (synchronous code waiting for this very reply, say) still gets answers.
        let descriptors = received.descriptors
        Task(executorPreference: EventLoopTaskExecutor(context.eventLoop)) {
            let reply = await dispatcher.handle(call, descriptors: descriptors, connection: connection)
            connection.channel.writeAndFlush(DBusOutbound.completed(reply, sender: sender), promise: nil)
        }
    }

    /// A call of `sender` finished: its waiting calls start, in the order they came, while
    /// there is room (a call answered at once takes none).
    private func finished(_ sender: String, context: ChannelHandlerContext) {
        senders[sender]?.running -= 1
        // Taken from the queue in place, with no copy of the sender's calls alive meanwhile.
        while (senders[sender]?.running ?? limits.handledAtOnce) < limits.handledAtOnce,
            let next = senders[sender]?.waiting.popFirst()
        {
            waitingTotal -= 1
            start(next, sender: sender, context: context)
        }
        if let calls = senders[sender], calls.running == 0, calls.waiting.isEmpty { senders[sender] = nil }
    }

    private func reply(_ message: DBusMessage, _ context: ChannelHandlerContext) {
        var message = message
        message.serial = allocateSerial()
        context.writeAndFlush(wrapOutboundOut(message), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        let error = DBusError(.connectionClosed, "connection closed")
        for (_, promise) in pending { promise.fail(error) }
        pending.removeAll()
        state.signalContinuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

/// One D-Bus connection: to a bus or a peer (client side), or a peer accepted by ``DBusServer``.
///
/// ```swift
/// let bus = try await DBusConnection.connect(to: .unixPath("/run/user/1000/bus"))
/// let name = try await bus.hello()
/// let reply = try await bus.call(.methodCall(
///     path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "ListNames",
///     destination: "org.freedesktop.DBus"))
/// ```
///
/// A value type; copies refer to the same connection.
public struct DBusConnection: Sendable {
    /// Settings of a client connection.
    public struct Configuration: Sendable {
        /// The largest message accepted from the server.
        public var maximumMessageSize = DBusLimits.maximumMessageLength
        /// How many incoming method calls (for exported objects) are handled at once and
        /// may wait, counted per sender: on a bus every client has its own share.
        public var callLimits = DBusCallLimits()
        /// How long ``DBusConnection/call(_:timeout:)`` waits by default.
        public var callTimeout: Duration = .seconds(25)
        /// The uid sent in `AUTH EXTERNAL`; the process's by default.
        public var uid: UInt32 = getuid()
        /// Whether descriptors that calls carry are received (``DBusMethodCall/descriptors``):
        /// the handshake agrees to descriptor passing, and a thread of the connection's own
        /// receives from the socket with `recvmsg`, which SwiftNIO does not
        /// (``DBusDescriptorRelay``). Off by default: each message then costs a hand-over
        /// between threads.
        public var receivesDescriptors = false

        /// The default settings.
        public init() {}
    }

    let channel: Channel
    let state: DBusConnectionState

    init(channel: Channel, state: DBusConnectionState) {
        self.channel = channel
        self.state = state
    }

    /// The peer's kernel credentials, for connections accepted by a ``DBusServer``.
    public var peerCredentials: DBusPeerCredentials? { state.peerCredentials }

    /// Something the server keeps about this connection for as long as the connection is in
    /// use (the session agent: who the caller is, checked once). `nil` until ``attach(_:)``.
    public var attachment: (any Sendable)? { state.attachment.withLock { $0 } }

    /// Replaces ``attachment``.
    /// - Parameter value: What to keep, or `nil` to forget it.
    public func attach(_ value: (any Sendable)?) {
        state.attachment.withLock { $0 = value }
    }

    /// The value of type `type` kept with this connection by ``keep(_:as:)``, or `nil`: for a
    /// layer that keeps state of its own beside ``attachment`` (the agent: the access groups a
    /// client narrowed itself to).
    public func value<Value: Sendable>(of type: Value.Type) -> Value? {
        state.values.withLock { $0[ObjectIdentifier(type)] as? Value }
    }

    /// Keeps `value` with this connection as its type's value (`nil`: forgets it).
    public func keep<Value: Sendable>(_ value: Value?, as type: Value.Type = Value.self) {
        state.values.withLock { $0[ObjectIdentifier(type)] = value }
    }

    /// The unique name the bus assigned in ``hello()``.
    public var uniqueName: String? { state.uniqueName.withLock { $0 } }

    /// The server's GUID from the handshake (client connections).
    public var serverGUID: String? { state.serverGUID.withLock { $0 } }

    /// Signals received on this connection, in order; finishes when the connection closes.
    /// Only the first iterator receives them.
    public var signals: AsyncStream<DBusMessage> { state.signals }

    /// Calls `observer` with each signal received from now on, on the connection's event loop,
    /// before any message received after it is handled or delivered (``signals`` is read by a
    /// task, later): for bookkeeping a call must find done, such as when a bus name appeared.
    /// `observer` must be quick and must not block. A second observer replaces the first.
    /// - Parameter observer: What to call, or `nil` to stop.
    public func observeSignals(_ observer: (@Sendable (DBusMessage) -> Void)?) {
        state.signalObserver.withLock { $0 = observer }
    }

    /// Whether the connection is still open.
    public var isActive: Bool { channel.isActive }

    /// Connects to the first usable `unix:path=` address, authenticates, and optionally exports `objects`.
    ///
    /// - Parameters:
    ///   - addresses: candidate addresses, tried in order.
    ///   - objects: objects this connection serves to the other side, if any.
    ///   - configuration: limits and timeouts.
    ///   - group: the event loops to use.
    /// - Throws: ``DBusError`` `.invalidAddress` when no address is usable, `.authenticationFailed`
    ///   when the server refuses, or the connection error of the last address tried.
    public static func connect(
        to addresses: [DBusAddress],
        objects: DBusObjectTree? = nil,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> DBusConnection {
        var lastError: any Error = DBusError(.invalidAddress, "no unix:path= address")
        for address in addresses {
            guard let path = address.unixPath else { continue }
            do {
                return try await connect(path: path, guid: address.guid, objects: objects, configuration, group)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Connects to one address; see ``connect(to:objects:configuration:group:)-([DBusAddress],_,_,_)``.
    ///
    /// - Throws: ``DBusError`` or the socket's error.
    public static func connect(
        to address: DBusAddress,
        objects: DBusObjectTree? = nil,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> DBusConnection {
        try await connect(to: [address], objects: objects, configuration: configuration, group: group)
    }

    private static func connect(
        path: String,
        guid: String?,
        objects: DBusObjectTree?,
        _ configuration: Configuration,
        _ group: any EventLoopGroup
    ) async throws -> DBusConnection {
        try await connectFuture(path: path, guid: guid, objects: objects, configuration, group).get()
    }

    /// Connects to the Unix socket at `path` and authenticates, as a future: for callers that
    /// are not async (see ``callFuture(_:timeout:)``).
    public static func connectFuture(
        unixPath path: String,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) -> EventLoopFuture<DBusConnection> {
        connectFuture(path: path, guid: nil, objects: nil, configuration, group)
    }

    private static func connectFuture(
        path: String,
        guid: String?,
        objects: DBusObjectTree?,
        _ configuration: Configuration,
        _ group: any EventLoopGroup
    ) -> EventLoopFuture<DBusConnection> {
        if configuration.receivesDescriptors {
            return connectReceivingDescriptors(path: path, guid: guid, objects: objects, configuration, group)
        }
        let state = DBusConnectionState(peerCredentials: nil, callTimeout: configuration.callTimeout)
        let dispatcher = objects.map { DBusDispatcher(objects: $0, machineID: DBusServer.readMachineID()) }
        let sasl = SASLClient(uid: configuration.uid, expectedGUID: guid)
        let loop = group.next()
        let authenticated = loop.makePromise(of: String.self)
        return ClientBootstrap(group: loop).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandlers([
                    SASLClientHandler(machine: sasl, done: authenticated),
                    ByteToMessageHandler(DBusMessageDecoder(maximumMessageSize: configuration.maximumMessageSize)),
                    MessageToByteHandler(DBusMessageEncoder()),
                    DBusConnectionHandler(state: state, dispatcher: dispatcher, limits: configuration.callLimits),
                ])
            }
        }.connect(unixDomainSocketPath: path).flatMapError { error in
            // Never connected: nothing else completes the handshake's promise.
            authenticated.fail(error)
            return loop.makeFailedFuture(error)
        }.flatMap { channel in
            authenticated.futureResult.map { serverGUID in
                state.serverGUID.withLock { $0 = serverGUID }
                return DBusConnection(channel: channel, state: state)
            }.flatMapError { error in
                channel.close(promise: nil)
                return loop.makeFailedFuture(error)
            }
        }
    }

    /// Connects with descriptor passing agreed: the handshake on a thread (``DBusWire/DBusSocket``),
    /// then the socket read through ``DBusDescriptorRelay`` and written by the channel.
    private static func connectReceivingDescriptors(
        path: String,
        guid: String?,
        objects: DBusObjectTree?,
        _ configuration: Configuration,
        _ group: any EventLoopGroup
    ) -> EventLoopFuture<DBusConnection> {
        let state = DBusConnectionState(peerCredentials: nil, callTimeout: configuration.callTimeout)
        let dispatcher = objects.map { DBusDispatcher(objects: $0, machineID: DBusServer.readMachineID()) }
        let loop = group.next()
        let connected = loop.makePromise(of: DBusConnection.self)
        let handshake = Thread {
            do {
                var socket = try DBusSocket.connect(unixPath: path, timeout: configuration.callTimeout)
                let serverGUID: String
                do {
                    serverGUID = try socket.authenticate(uid: configuration.uid, negotiatingDescriptors: true)
                    guard guid == nil || guid == serverGUID, !socket.hasBufferedBytes else {
                        throw DBusError(.authenticationFailed, "the server is not the one the address names")
                    }
                } catch {
                    socket.close()
                    throw error
                }
                state.serverGUID.withLock { $0 = serverGUID }
                let queue = DBusDescriptorQueue()
                let (input, output) = try DBusDescriptorRelay.start(bus: socket.descriptor, queue: queue)
                NIOPipeBootstrap(group: loop).channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            ByteToMessageHandler(
                                DBusMessageDecoder(
                                    maximumMessageSize: configuration.maximumMessageSize, descriptors: queue)),
                            MessageToByteHandler(DBusMessageEncoder()),
                            DBusConnectionHandler(
                                state: state, dispatcher: dispatcher, limits: configuration.callLimits),
                        ])
                    }
                }.takingOwnershipOfDescriptors(input: input, output: output).flatMapErrorThrowing { error in
                    DBusSocket.closeAll([input, output])
                    throw error
                }.map { channel in
                    DBusConnection(channel: channel, state: state)
                }.cascade(to: connected)
            } catch {
                connected.fail(error)
            }
        }
        handshake.start()
        return connected.futureResult
    }

    /// Connects to the session bus named by the environment and says `Hello`.
    ///
    /// - Parameter environment: the environment to read the address from.
    /// - Throws: ``DBusError`` when there is no address or the bus refuses.
    public static func connectToSessionBus(
        environment: [String: String],
        configuration: Configuration = Configuration()
    ) async throws -> DBusConnection {
        let connection = try await connect(
            to: try DBusAddress.sessionBus(environment: environment), configuration: configuration)
        _ = try await connection.hello()
        return connection
    }

    /// Sends `org.freedesktop.DBus.Hello` and records the unique name the bus returns.
    ///
    /// - Returns: the connection's unique name, e.g. `:1.42`.
    /// - Throws: ``DBusError`` if the bus answers with an error or something other than a name.
    @discardableResult
    public func hello() async throws -> String {
        let reply = try await callBus("Hello")
        guard case .string(let name)? = reply.body.first else {
            throw DBusError(.typeMismatch, "Hello returned \(reply.signature), expected s")
        }
        state.uniqueName.withLock { $0 = name }
        return name
    }

    /// Calls a method of the bus driver `org.freedesktop.DBus`.
    ///
    /// - Throws: ``DBusError`` `.remoteError` when the bus answers with an error.
    public func callBus(_ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        try await call(
            .methodCall(
                path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: member,
                destination: DBusMessage.busDriverName, body: arguments))
    }

    /// Sends a method call and waits for its reply.
    ///
    /// - Parameters:
    ///   - message: the call; its serial is assigned by the connection.
    ///   - timeout: how long to wait; the configuration's default when `nil`.
    /// - Returns: the method return.
    /// - Throws: ``DBusError`` `.remoteError` (with ``DBusError/errorName``) for an error reply,
    ///   `.timedOut`, `.connectionClosed`, or an encoding error.
    public func call(_ message: DBusMessage, timeout: Duration? = nil) async throws -> DBusMessage {
        try await callFuture(message, timeout: timeout).get()
    }

    /// ``call(_:timeout:)`` as a future, for callers that are not async: a synchronous API
    /// waits for it (`wait()`) on its own thread, without needing a thread of Swift's
    /// cooperative pool, which its caller may be holding.
    public func callFuture(_ message: DBusMessage, timeout: Duration? = nil) -> EventLoopFuture<DBusMessage> {
        let channel = self.channel
        guard message.type == .methodCall else {
            return channel.eventLoop.makeFailedFuture(DBusError(.malformedMessage, "call() sends method calls only"))
        }
        do { try message.validateFields() } catch { return channel.eventLoop.makeFailedFuture(error) }
        let promise = channel.eventLoop.makePromise(of: DBusMessage.self)
        let limit = timeout ?? state.callTimeout
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(limit)) {
            promise.fail(DBusError(.timedOut, "no reply within \(limit)"))
            channel.writeAndFlush(DBusOutbound.abandon(promise), promise: nil)
        }
        channel.writeAndFlush(DBusOutbound.call(message, promise)).whenFailure { promise.fail(Self.mapWriteError($0)) }
        return promise.futureResult.flatMapThrowing { reply in
            timer.cancel()
            guard reply.type == .error else { return reply }
            var error = DBusError(.remoteError, reply.errorMessage ?? "", errorName: reply.errorName)
            if case .string? = reply.body.first { error.details = Array(reply.body.dropFirst()) }
            throw error
        }.flatMapErrorThrowing { error in
            timer.cancel()
            throw error
        }
    }

    /// Sends a message that expects no reply: a signal, or a call flagged `noReplyExpected`.
    ///
    /// - Throws: ``DBusError`` for an invalid message, or the channel's write error.
    public func send(_ message: DBusMessage) async throws {
        try message.validateFields()
        do {
            try await channel.writeAndFlush(DBusOutbound.send(message)).get()
        } catch {
            throw Self.mapWriteError(error)
        }
    }

    /// A write failure as a ``DBusError``: encoding errors as they are, channel errors as `.connectionClosed`.
    private static func mapWriteError(_ error: any Error) -> DBusError {
        if let error = error as? DBusError { return error }
        return DBusError(.connectionClosed, "the connection is closed")
    }

    /// Closes the connection; pending calls fail with `.connectionClosed`.
    public func close() async {
        try? await channel.close()
    }

    /// Starts closing the connection without waiting (for callers that are not async).
    public func closeSoon() {
        channel.close(promise: nil)
    }

    /// Waits until the connection is closed, by either side.
    public func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Runs a task's jobs on one event loop's thread: method handlers never wait for a free thread of
/// Swift's global concurrent pool, which the rest of the process may hold (a test runner's
/// synchronous tests, a program's blocking calls).
final class EventLoopTaskExecutor: TaskExecutor {
    private let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
