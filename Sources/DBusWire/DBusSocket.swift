import KeychainLibc

/// A blocking D-Bus connection on a Unix stream socket, for clients without an event loop: the
/// SASL `EXTERNAL` handshake (``SASLClient``), message framing, optional descriptor passing
/// (`SCM_RIGHTS`), and a timeout on every wait. It blocks its thread: use it from a Dispatch
/// queue or a thread of its own, never from the Swift concurrency pool.
///
/// The session agent's client (`AgentConnection`) and logind's `Inhibit` (``DBusFDCall``) both
/// talk through it; SwiftNIO's connections (`DBusNIO`) serve everything else.
///
/// It waits for input in `poll`, not in a blocking `recv`: a thread blocked in `recv` on a Unix
/// stream socket is woken each time the peer reads from it (the kernel wakes every sleeper on
/// the socket when its send buffer drains), and goes back to sleep; `poll` waits for input only.
///
/// ```swift
/// var socket = try DBusSocket.connect(unixPath: path, timeout: .seconds(10))
/// defer { socket.close() }
/// try socket.authenticate(uid: geteuid(), negotiatingDescriptors: false)
/// try socket.send(try message.encoded())
/// let reply = try socket.receiveMessage()
/// ```
public struct DBusSocket: Sendable {
    /// The connected socket; `-1` once closed.
    public private(set) var descriptor: Int32
    /// The longest wait for input (or for the peer to take output).
    public var timeout: Duration
    /// When the whole exchange must be over, if it must.
    public var deadline: ContinuousClock.Instant?
    /// Whether descriptors the peer sends are received (every read is a `recvmsg` that keeps
    /// them); otherwise the kernel closes any that arrive.
    public let receivesDescriptors: Bool
    /// Bytes received and not yet taken.
    private var buffer: [UInt8] = []
    /// Descriptors received and not yet claimed by a message, in arrival order.
    private var pending: [Int32] = []

    /// The most descriptors held at once (dbus-daemon's default per-message limit is 16).
    public static let maximumDescriptors = 64
    /// The most one read takes: a typical message fits in one.
    static let receiveSize = 64 * 1024

    /// A connection on `descriptor`, a connected stream socket it now owns.
    /// - Parameters:
    ///   - descriptor: The socket.
    ///   - timeout: The longest wait for input; also set as the socket's `SO_RCVTIMEO` and
    ///     `SO_SNDTIMEO`, so that no write waits longer.
    ///   - deadline: When the whole exchange must be over, if it must.
    ///   - receivesDescriptors: Whether to receive descriptors the peer sends.
    public init(
        adopting descriptor: Int32, timeout: Duration, deadline: ContinuousClock.Instant? = nil,
        receivesDescriptors: Bool = false
    ) {
        self.descriptor = descriptor
        self.timeout = timeout
        self.deadline = deadline
        self.receivesDescriptors = receivesDescriptors
        Self.setTimeouts(descriptor, timeout)
    }

    /// A connection to the Unix socket at `path`, close-on-exec.
    /// - Throws: ``DBusError`` `.invalidAddress` for a path too long; `.connectionClosed`
    ///   (its message `errno N`) when nothing accepts a connection there.
    public static func connect(
        unixPath path: String, timeout: Duration, deadline: ContinuousClock.Instant? = nil,
        receivesDescriptors: Bool = false
    ) throws -> DBusSocket {
        DBusSocket(
            adopting: try connectUnix(path), timeout: timeout, deadline: deadline,
            receivesDescriptors: receivesDescriptors)
    }

    /// Closes the socket and every descriptor received and not claimed.
    public mutating func close() {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
        closePendingDescriptors()
        buffer = []
    }

    /// Closes every descriptor received and not claimed by a message.
    public mutating func closePendingDescriptors() {
        Self.closeAll(pending)
        pending = []
    }

    /// Whether descriptors arrived that no message has claimed.
    public var hasUnclaimedDescriptors: Bool { !pending.isEmpty }

    // MARK: Authentication

    /// The whole handshake, pipelined: `\0AUTH EXTERNAL <uid>` and `BEGIN`, to send together
    /// with the first message, so that connecting and calling take one round trip; then
    /// ``awaitAuthentication()``.
    public static func pipelinedAuthentication(uid: UInt32) -> [UInt8] {
        SASLClient(uid: uid, expectedGUID: nil).initialBytes + Array("BEGIN\r\n".utf8)
    }

    /// Reads the server's answer to a pipelined handshake (``pipelinedAuthentication(uid:)``).
    /// - Throws: ``DBusError`` `.connectionRefused` when the server says `ERROR` (its reason
    ///   as the message, e.g. a limit on connections), `.authenticationFailed` when it rejects
    ///   the uid; `.connectionClosed` or `.timedOut` without an answer.
    public mutating func awaitAuthentication() throws {
        let client = SASLClient(uid: 0, expectedGUID: nil)
        while true {
            switch client.receive(line: try readAuthenticationLine()) {
            case .authenticated: return
            case .send, .fail: throw DBusError(.authenticationFailed, "the server rejected EXTERNAL authentication")
            }
        }
    }

    /// The handshake, one step after the other: `EXTERNAL` as `uid`, then, when asked,
    /// `NEGOTIATE_UNIX_FD` (which must be agreed), then `BEGIN`.
    /// - Returns: The server's GUID.
    /// - Throws: ``DBusError`` as ``awaitAuthentication()`` does; `.authenticationFailed` when
    ///   descriptor passing is not agreed.
    @discardableResult
    public mutating func authenticate(uid: UInt32, negotiatingDescriptors: Bool) throws -> String {
        let client = SASLClient(uid: uid, expectedGUID: nil)
        try send(client.initialBytes)
        var guid: String?
        while guid == nil {
            switch client.receive(line: try readAuthenticationLine()) {
            case .send(let line): try send(Array((line + "\r\n").utf8))
            case .authenticated(let serverGUID): guid = serverGUID
            case .fail(let reason): throw DBusError(.authenticationFailed, reason)
            }
        }
        if negotiatingDescriptors {
            try send(Array("NEGOTIATE_UNIX_FD\r\n".utf8))
            let answer = try readLine()
            guard answer == "AGREE_UNIX_FD" else {
                throw DBusError(.authenticationFailed, "the bus does not pass file descriptors: \(answer.prefix(80))")
            }
        }
        try send(Array("BEGIN\r\n".utf8))
        return guid ?? ""
    }

    /// Whether bytes were read past the handshake and not yet taken by a message.
    public var hasBufferedBytes: Bool { !buffer.isEmpty }

    /// A line of the handshake; an `ERROR` line is the server refusing the connection.
    private mutating func readAuthenticationLine() throws -> String {
        let line = try readLine()
        guard !line.hasPrefix("ERROR") else {
            let reason = line.dropFirst(5).filter { $0 != "\"" }.prefix(120)
            throw DBusError(.connectionRefused, String(reason.drop { $0 == " " }))
        }
        return line
    }

    /// One SASL line, without its `\r\n`.
    /// - Throws: ``DBusError`` `.authenticationFailed` for a line past 1,024 bytes.
    public mutating func readLine() throws -> String {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = buffer[..<end]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                let text = String(decoding: line, as: UTF8.self)
                buffer.removeSubrange(...end)
                return text
            }
            guard buffer.count < 1024 else { throw DBusError(.authenticationFailed, "malformed SASL line") }
            try fill()
        }
    }

    // MARK: Messages

    /// A message received: its header, its body unread, and the descriptors it carries.
    public struct Received: Sendable {
        /// The message, its body not decoded (``body`` reads it).
        public var message: DBusMessage
        /// The message's body.
        public var body: DBusBodyReader
        /// The descriptors its `UNIX_FDS` field claims, in order; the caller owns them.
        public var descriptors: [Int32]
    }

    /// Sends all of `bytes`.
    /// - Throws: ``DBusError`` `.connectionClosed` (its message `send: errno N`), `.timedOut`.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            try checkDeadline()
            let sent = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && errno == EINTR {
                continue
            } else {
                throw Self.ioError("send")
            }
        }
    }

    /// The next message, and the descriptors its `UNIX_FDS` field claims.
    /// - Throws: ``DBusError`` `.malformedMessage` for bytes that are not a message, or fewer
    ///   descriptors than it claims; `.connectionClosed`, `.timedOut`, `.limitExceeded`.
    public mutating func receiveMessage() throws -> Received {
        while true {
            if buffer.count >= DBusMessage.fixedHeaderLength,
                let length = try DBusMessage.frameLength(header: buffer[..<DBusMessage.fixedHeaderLength]),
                buffer.count >= length
            {
                return try takeMessage(length)
            }
            try fill()
        }
    }

    /// The first `length` bytes of the buffer as a message.
    private mutating func takeMessage(_ length: Int) throws -> Received {
        let frame: [UInt8]
        if buffer.count == length {
            // The usual case, one message and nothing after it: no copy.
            frame = buffer
            buffer = []
        } else {
            frame = Array(buffer[..<length])
            buffer.removeSubrange(..<length)
        }
        let (message, body) = try DBusMessage.decodeHeader(frame)
        let count = Int(message.unixFDs ?? 0)
        guard count <= pending.count else {
            throw DBusError(.malformedMessage, "UNIX_FDS says \(count) descriptors, \(pending.count) arrived")
        }
        let claimed = Array(pending.prefix(count))
        pending.removeFirst(count)
        return Received(message: message, body: body, descriptors: claimed)
    }

    /// Reads what the socket has into the buffer, waiting for it in `poll`.
    private mutating func fill() throws {
        while true {
            try waitUntilReadable()
            var received = 0
            let chunk = try [UInt8](unsafeUninitializedCapacity: Self.receiveSize) { raw, initialized in
                received = try receive(into: UnsafeMutableRawBufferPointer(raw))
                initialized = max(0, received)
            }
            if received > 0 {
                if buffer.isEmpty { buffer = chunk } else { buffer += chunk }
                return
            }
            if received < 0 { continue }  // interrupted, or nothing after all
            throw DBusError(.connectionClosed, "closed")
        }
    }

    /// One read into `raw`: the bytes read, 0 at the end of the stream, -1 to try again.
    private mutating func receive(into raw: UnsafeMutableRawBufferPointer) throws(DBusError) -> Int {
        let count: Int
        if receivesDescriptors {
            count = try FDControl.receive(descriptor, raw, into: &pending)
            guard pending.count <= Self.maximumDescriptors else {
                throw DBusError(.limitExceeded, "more than \(Self.maximumDescriptors) descriptors")
            }
        } else {
            count = recv(descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT))
        }
        if count >= 0 { return count }
        if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { return -1 }
        throw Self.ioError("recv")
    }

    /// Waits until the socket has input (or has been closed), at most ``timeout`` and never
    /// past ``deadline``.
    private func waitUntilReadable() throws {
        var wait = timeout
        if let deadline {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw DBusError(.timedOut, "no answer within \(timeout)") }
            wait = min(wait, left)
        }
        let (seconds, attoseconds) = wait.components
        let milliseconds = min(seconds * 1000 + attoseconds / 1_000_000_000_000_000, Int64(Int32.max))
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&entry, 1, Int32(milliseconds))
            if ready > 0 { return }
            if ready < 0 && errno == EINTR { continue }
            throw ready == 0
                ? DBusError(.timedOut, "no answer within \(timeout)")
                : DBusError(.connectionClosed, "poll: errno \(errno)")
        }
    }

    private func checkDeadline() throws {
        guard let deadline, ContinuousClock.now >= deadline else { return }
        throw DBusError(.timedOut, "no answer within \(timeout)")
    }

    // MARK: The socket

    /// The error for a failed `operation`, from `errno`: a socket timeout is `.timedOut`.
    static func ioError(_ operation: String) -> DBusError {
        let code = errno
        guard code != EAGAIN, code != EWOULDBLOCK else { return DBusError(.timedOut, "\(operation) timed out") }
        return DBusError(.connectionClosed, "\(operation): errno \(code)")
    }

    /// `SO_RCVTIMEO` and `SO_SNDTIMEO`: no single read or write waits longer than `timeout`.
    private static func setTimeouts(_ descriptor: Int32, _ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        if value.tv_sec == 0, value.tv_usec == 0 { value.tv_usec = 1 }
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            _ = setsockopt(descriptor, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// A close-on-exec stream socket connected to `path`.
    /// - Throws: ``DBusError`` `.invalidAddress` for a path too long (or holding a NUL);
    ///   `.connectionClosed`, its message `errno N`, when the connection is refused.
    public static func connectUnix(_ path: String) throws -> Int32 {
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path), !path.utf8.contains(0) else {
            throw DBusError(.invalidAddress, "the socket path is too long")
        }
        guard let socket = connectUnixSocket(path, type: SOCK_STREAM) else {
            throw DBusError(.connectionClosed, "errno \(errno)")
        }
        return socket
    }

    /// Closes every descriptor of `descriptors` (`-1` entries are skipped).
    public static func closeAll(_ descriptors: [Int32]) {
        for descriptor in descriptors where descriptor >= 0 { _ = Glibc.close(descriptor) }
    }
}

/// `sendmsg` and `recvmsg` with `SCM_RIGHTS`, the `CMSG_*` macros spelt out (Swift imports no
/// function-like C macro): a `cmsghdr`, then its data, each padded to `size_t`'s alignment.
package enum FDControl {
    static let alignment = MemoryLayout<Int>.size
    static func align(_ length: Int) -> Int { (length + alignment - 1) & ~(alignment - 1) }
    static let headerLength = align(MemoryLayout<cmsghdr>.size)

    /// `CMSG_SPACE` for the most descriptors one read accepts.
    static let receiveSpace = headerLength + align(DBusSocket.maximumDescriptors * 4)

    /// `sendmsg` of `bytes` with `descriptors` attached; the bytes sent, or -1 with `errno`.
    static func send(_ socket: Int32, _ bytes: UnsafeRawBufferPointer, descriptors: [Int32]) -> Int {
        var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        var control = [UInt8](
            repeating: 0, count: descriptors.isEmpty ? 0 : headerLength + align(descriptors.count * 4))
        return control.withUnsafeMutableBytes { raw in
            var header = msghdr()
            header.msg_iovlen = 1
            if !descriptors.isEmpty {
                var cmsg = cmsghdr()
                cmsg.cmsg_len = headerLength + descriptors.count * 4
                cmsg.cmsg_level = SOL_SOCKET
                cmsg.cmsg_type = Int32(SCM_RIGHTS)
                withUnsafeBytes(of: &cmsg) { raw.copyMemory(from: $0) }
                descriptors.withUnsafeBytes {
                    UnsafeMutableRawBufferPointer(rebasing: raw[headerLength...]).copyMemory(from: $0)
                }
                header.msg_control = raw.baseAddress
                header.msg_controllen = raw.count
            }
            return withUnsafeMutablePointer(to: &iov) { iovPointer in
                header.msg_iov = iovPointer
                return sendmsg(socket, &header, Int32(MSG_NOSIGNAL))
            }
        }
    }

    /// One `recvmsg` into `buffer` with `MSG_CMSG_CLOEXEC` (not waiting); the descriptors
    /// received are appended to `descriptors` (and stay there, to be closed by the caller, even
    /// when this throws).
    /// - Returns: The bytes read (0 at the end of the stream), or -1 with `errno`.
    package static func receive(
        _ socket: Int32, _ buffer: UnsafeMutableRawBufferPointer, into descriptors: inout [Int32]
    )
        throws(DBusError) -> Int
    {
        var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var control = [UInt8](repeating: 0, count: receiveSpace)
        let (received, flags, length) = control.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &iov) { iovPointer in
                var header = msghdr()
                header.msg_iov = iovPointer
                header.msg_iovlen = 1
                header.msg_control = raw.baseAddress
                header.msg_controllen = raw.count
                let received = recvmsg(socket, &header, Int32(MSG_CMSG_CLOEXEC) | Int32(MSG_DONTWAIT))
                return (received, header.msg_flags, received < 0 ? 0 : Int(header.msg_controllen))
            }
        }
        guard received >= 0 else { return received }
        try parse(control, length: min(length, control.count), into: &descriptors)
        guard flags & Int32(MSG_CTRUNC) == 0 else {
            throw DBusError(.limitExceeded, "control data truncated: too many descriptors")
        }
        return received
    }

    /// The descriptors of `control`'s `SCM_RIGHTS` messages; anything else is refused (after
    /// the descriptors found so far are appended, for the caller to close).
    static func parse(_ control: [UInt8], length: Int, into descriptors: inout [Int32]) throws(DBusError) {
        var offset = 0
        while offset + MemoryLayout<cmsghdr>.size <= length {
            let cmsg = control.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self) }
            let size = Int(cmsg.cmsg_len)
            guard size >= headerLength, size <= length - offset else {
                throw DBusError(.malformedMessage, "malformed control message")
            }
            guard cmsg.cmsg_level == SOL_SOCKET, cmsg.cmsg_type == Int32(SCM_RIGHTS) else {
                throw DBusError(.malformedMessage, "unexpected control message")
            }
            let payload = size - headerLength
            for index in 0..<payload / 4 {
                descriptors.append(
                    control.withUnsafeBytes {
                        $0.loadUnaligned(fromByteOffset: offset + headerLength + index * 4, as: Int32.self)
                    })
            }
            guard payload % 4 == 0 else { throw DBusError(.malformedMessage, "partial descriptor in control data") }
            offset += align(size)
        }
    }
}
