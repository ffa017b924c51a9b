import DBusWire
import NIOCore

/// Frames D-Bus messages: waits for the 16-byte fixed header, computes the message's length
/// from it (refusing oversized messages before buffering them), then decodes the whole message.
public struct DBusMessageDecoder: ByteToMessageDecoder {
    /// Decoded messages: the header, and the body still in wire form.
    public typealias InboundOut = DBusReceivedMessage

    /// The largest message accepted; larger ones fail the decoder, which closes the connection.
    public let maximumMessageSize: Int
    /// How long a message may take once its first bytes arrived (`nil`: no limit); past it the
    /// connection is closed.
    public let partialMessageTimeout: TimeAmount?
    /// Shared by a server's connections: a message's length is taken from it when its fixed
    /// header arrives and given back when it is decoded or dropped (`nil`: no budget).
    public let budget: PendingMessageBudget?

    /// Where the descriptors received with the bytes wait (a connection that receives them),
    /// claimed by each message as its `UNIX_FDS` says; `nil`: descriptors are not received.
    let descriptors: DBusDescriptorQueue?

    private var partialDeadline: Scheduled<Void>?
    private var reserved = 0

    /// A decoder that refuses messages longer than `maximumMessageSize` bytes, with optionally
    /// a time limit for each message to arrive and a budget shared with other connections.
    public init(
        maximumMessageSize: Int = DBusLimits.maximumMessageLength, partialMessageTimeout: TimeAmount? = nil,
        budget: PendingMessageBudget? = nil
    ) {
        self.maximumMessageSize = maximumMessageSize
        self.partialMessageTimeout = partialMessageTimeout
        self.budget = budget
        self.descriptors = nil
    }

    /// A decoder for a connection whose descriptors arrive in `descriptors`.
    init(maximumMessageSize: Int, descriptors: DBusDescriptorQueue) {
        self.maximumMessageSize = maximumMessageSize
        self.partialMessageTimeout = nil
        self.budget = nil
        self.descriptors = descriptors
    }

    /// Decodes one message if a whole one is buffered.
    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes >= DBusMessage.fixedHeaderLength else { return waiting(context, buffer) }
        let length = try buffer.withUnsafeReadableBytes { [maximumMessageSize] header in
            try DBusMessage.frameLength(fixedHeader: header, maximumLength: maximumMessageSize)
        }
        try reserve(length)
        guard buffer.readableBytes >= length, let bytes = buffer.readBytes(length: length) else {
            return waiting(context, buffer)
        }
        settle()
        let (header, body) = try DBusMessage.decodeHeader(bytes, maximumLength: maximumMessageSize)
        var received = DBusReceivedMessage(header: header, body: body)
        if let descriptors, let count = header.unixFDs, count > 0 {
            guard let taken = descriptors.take(Int(count)) else {
                throw DBusError(.malformedMessage, "UNIX_FDS says \(count) descriptors, fewer arrived")
            }
            received.descriptors = DBusReceivedDescriptors(taken)
        }
        context.fireChannelRead(Self.wrapInboundOut(received))
        return .continue
    }

    /// Takes the message's length from the budget, once per message.
    private mutating func reserve(_ length: Int) throws {
        guard let budget, reserved == 0 else { return }
        guard budget.reserve(length) else {
            throw DBusError(.limitExceeded, "the server holds too many bytes of messages still arriving")
        }
        reserved = length
    }

    /// The message is whole (or dropped): its budget goes back and its deadline is off.
    private mutating func settle() {
        if reserved > 0 { budget?.release(reserved) }
        reserved = 0
        partialDeadline?.cancel()
        partialDeadline = nil
    }

    /// Waits for more bytes; a message begun starts its deadline.
    private mutating func waiting(_ context: ChannelHandlerContext, _ buffer: ByteBuffer) -> DecodingState {
        if buffer.readableBytes > 0, partialDeadline == nil, let partialMessageTimeout {
            let channel = context.channel
            partialDeadline = context.eventLoop.scheduleTask(in: partialMessageTimeout) { channel.close(promise: nil) }
        }
        return .needMoreData
    }

    /// Gives back what a partial message held when the connection goes.
    public mutating func decoderRemoved(context: ChannelHandlerContext) { settle() }

    /// Discards a partial message left when the connection closes.
    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.clear()
        settle()
        return .needMoreData
    }
}

/// A message as ``DBusMessageDecoder`` frames it: its header decoded and checked, its body in
/// wire form, read by whoever takes it (``DBusBodyReader/readAll()`` for its values).
public struct DBusReceivedMessage: Sendable {
    /// The message, with an empty ``DBusMessage/body``.
    public var header: DBusMessage
    /// The body, unread.
    public var body: DBusBodyReader
    /// The descriptors it carried, on a connection that receives them.
    public var descriptors: DBusReceivedDescriptors?
}

/// Encodes D-Bus messages in the machine's byte order.
public struct DBusMessageEncoder: MessageToByteEncoder {
    /// The messages to encode.
    public typealias OutboundIn = DBusMessage

    /// An encoder.
    public init() {}

    /// Appends the message's wire form to `out`.
    public func encode(data: DBusMessage, out: inout ByteBuffer) throws {
        out.writeBytes(try data.encoded())
    }
}

/// Splits the SASL phase's bytes into lines and enforces the line-length limit.
struct SASLLineReader {
    static let maximumLineLength = 16_384
    var buffer = ByteBuffer()

    enum Line {
        case line(String)
        case needMore
        case invalid
    }

    mutating func append(_ bytes: inout ByteBuffer) { buffer.writeBuffer(&bytes) }

    mutating func next() -> Line {
        let view = buffer.readableBytesView
        guard let cr = view.firstIndex(of: UInt8(ascii: "\r")) else {
            return buffer.readableBytes > Self.maximumLineLength ? .invalid : .needMore
        }
        let length = cr - view.startIndex
        guard length <= Self.maximumLineLength else { return .invalid }
        guard buffer.readableBytes >= length + 2 else { return .needMore }
        guard let bytes = buffer.readBytes(length: length), buffer.readInteger(as: UInt16.self) == 0x0D0A else {
            return .invalid
        }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), let line = String(validating: bytes, as: UTF8.self),
            !line.isEmpty
        else { return .invalid }
        return .line(line)
    }
}

/// Runs the server side of the SASL handshake, then passes bytes through to the message decoder.
final class SASLServerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var machine: SASLServer
    private var lines = SASLLineReader()
    private var sawNul = false
    private var authenticated = false
    private let timeout: TimeAmount
    private var timeoutTask: Scheduled<Void>?

    init(machine: SASLServer, timeout: TimeAmount) {
        self.machine = machine
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timeoutTask = context.eventLoop.scheduleTask(in: timeout) { loopBound.value.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { timeoutTask?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !authenticated else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        lines.append(&bytes)
        processLines(context: context)
    }

    private func processLines(context: ChannelHandlerContext) {
        defer { context.flush() }
        if !sawNul {
            guard let first = lines.buffer.readInteger(as: UInt8.self) else { return }
            guard first == 0 else { return context.close(promise: nil) }
            sawNul = true
        }
        while !authenticated {
            switch lines.next() {
            case .needMore: return
            case .invalid: return context.close(promise: nil)
            case .line(let line): if !handle(line, context: context) { return }
            }
        }
    }

    /// Handles one line; returns false when the connection is being closed.
    private func handle(_ line: String, context: ChannelHandlerContext) -> Bool {
        switch machine.receive(line: line) {
        case .reply(let reply):
            context.write(wrapOutboundOut(ByteBuffer(string: reply + "\r\n")), promise: nil)
            return true
        case .close:
            context.close(promise: nil)
            return false
        case .begin:
            authenticated = true
            timeoutTask?.cancel()
            let rest = lines.buffer
            lines = SASLLineReader()
            if rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
            return true
        }
    }
}

/// Runs the client side of the SASL handshake, then passes bytes through.
final class SASLClientHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let machine: SASLClient
    private let done: EventLoopPromise<String>
    private var lines = SASLLineReader()
    private var authenticated = false

    init(machine: SASLClient, done: EventLoopPromise<String>) {
        self.machine = machine
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: machine.initialBytes)), promise: nil)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        done.fail(DBusError(.connectionClosed, "connection closed during authentication"))
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !authenticated else { return context.fireChannelRead(data) }
        var bytes = unwrapInboundIn(data)
        lines.append(&bytes)
        while !authenticated {
            switch lines.next() {
            case .needMore: return
            case .invalid: return fail("malformed SASL line", context: context)
            case .line(let line): handle(line, context: context)
            }
        }
    }

    private func handle(_ line: String, context: ChannelHandlerContext) {
        switch machine.receive(line: line) {
        case .send(let reply):
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: reply + "\r\n")), promise: nil)
        case .fail(let reason):
            fail(reason, context: context)
        case .authenticated(let guid):
            authenticated = true
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "BEGIN\r\n")), promise: nil)
            done.succeed(guid)
            let rest = lines.buffer
            lines = SASLLineReader()
            if rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
        }
    }

    private func fail(_ reason: String, context: ChannelHandlerContext) {
        authenticated = true
        done.fail(DBusError(.authenticationFailed, reason))
        context.close(promise: nil)
    }
}
