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

/// One blocking method call that may receive file descriptors: its own connection to a bus,
/// opened for the call and closed after it.
///
/// Why not `DBusConnection` (DBusNIO): descriptors travel as `SCM_RIGHTS` control messages beside the
/// bytes, and SwiftNIO's stream channels read with plain `read(2)`, so the kernel would drop
/// (close) every descriptor a peer sends; NIO has no way to receive them on a stream socket.
/// Only logind's `Inhibit` needs a descriptor, once at start and once per resume, so this
/// small client does just that on a plain socket: SASL `EXTERNAL` plus `NEGOTIATE_UNIX_FD`,
/// `Hello`, the call, and `recvmsg` with `MSG_CMSG_CLOEXEC` until the reply, reusing the
/// message codec. It blocks its thread: call it from a Dispatch queue or thread, never from the
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
    public static let maximumDescriptors = 64

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
        var lastError = DBusError(.invalidAddress, "no unix:path= address to connect to")
        for path in addresses.compactMap(\.unixPath) {
            let socket: Int32
            do {
                socket = try connectUnix(path)
            } catch let error as DBusError {
                lastError = error
                continue
            }
            defer { close(socket) }
            return try call(message, on: socket, timeout: timeout)
        }
        throw lastError
    }

    /// The exchange on a connected stream socket (left open): handshake, `Hello`, the call.
    static func call(_ message: DBusMessage, on socket: Int32, timeout: Duration) throws -> DBusFDReply {
        var stream = FDStream(socket: socket, deadline: .now + timeout)
        defer { stream.closePending() }
        try stream.setTimeout(timeout)
        try handshake(&stream)
        var hello = DBusMessage.methodCall(
            path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: "Hello",
            destination: DBusMessage.busDriverName)
        hello.serial = 1
        var call = message
        call.serial = 2
        try stream.send(try hello.encoded() + call.encoded())
        while true {
            let (reply, descriptors) = try stream.receiveMessage()
            guard reply.replySerial == 2, reply.type == .methodReturn || reply.type == .error else {
                closeAll(descriptors)
                continue
            }
            return try adopt(reply, descriptors, leftOver: &stream.pending)
        }
    }

    /// SASL EXTERNAL, then `NEGOTIATE_UNIX_FD` (which must be agreed), then `BEGIN`.
    static func handshake(_ stream: inout FDStream) throws {
        let client = SASLClient(uid: geteuid(), expectedGUID: nil)
        try stream.send(client.initialBytes)
        var authenticated = false
        while !authenticated {
            switch client.receive(line: try stream.readLine()) {
            case .send(let line): try stream.send(Array((line + "\r\n").utf8))
            case .authenticated: authenticated = true
            case .fail(let reason): throw DBusError(.authenticationFailed, reason)
            }
        }
        try stream.send(Array("NEGOTIATE_UNIX_FD\r\n".utf8))
        let answer = try stream.readLine()
        guard answer == "AGREE_UNIX_FD" else {
            throw DBusError(.authenticationFailed, "the bus does not pass file descriptors: \(answer.prefix(80))")
        }
        try stream.send(Array("BEGIN\r\n".utf8))
    }

    /// The reply with its descriptors, after checking them; closes them all on failure.
    static func adopt(_ reply: DBusMessage, _ descriptors: [Int32], leftOver: inout [Int32]) throws -> DBusFDReply {
        guard leftOver.isEmpty else {
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

    static func closeAll(_ descriptors: [Int32]) {
        for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
    }

    /// A close-on-exec stream socket connected to `path`.
    static func connectUnix(_ path: String) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw DBusError(.invalidAddress, "socket path too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw DBusError(.connectionClosed, "socket: errno \(errno)") }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            let code = errno
            close(socket)
            throw DBusError(.connectionClosed, "cannot connect to \(path): errno \(code)")
        }
        return socket
    }
}

/// The byte stream of one ``DBusFDCall`` connection, with the descriptors received so far.
struct FDStream {
    let socket: Int32
    let deadline: ContinuousClock.Instant
    /// Descriptors received and not yet claimed by a message, in arrival order.
    var pending: [Int32] = []

    /// Closes every descriptor no message has claimed.
    mutating func closePending() {
        DBusFDCall.closeAll(pending)
        pending = []
    }

    /// `SO_RCVTIMEO` and `SO_SNDTIMEO`: no single read or write waits longer than `timeout`.
    func setTimeout(_ timeout: Duration) throws {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        if value.tv_sec == 0, value.tv_usec == 0 { value.tv_usec = 1 }
        for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
            guard setsockopt(socket, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
                throw DBusError(.connectionClosed, "setsockopt: errno \(errno)")
            }
        }
    }

    func checkDeadline() throws {
        guard ContinuousClock.now < deadline else { throw DBusError(.timedOut, "the bus did not answer in time") }
    }

    /// Writes all of `bytes`, with `descriptors` (if any) attached to the first byte.
    func send(_ bytes: [UInt8], descriptors: [Int32] = []) throws {
        var offset = 0
        var attached = descriptors
        while offset < bytes.count {
            try checkDeadline()
            let sent = bytes[offset...].withUnsafeBytes { raw in
                FDControl.send(socket, raw, descriptors: attached)
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw FDControl.ioError("write")
            }
            offset += sent
            attached = []
        }
    }

    /// One SASL line without its `\r\n` (read byte by byte: no message byte is consumed).
    mutating func readLine() throws -> String {
        var line: [UInt8] = []
        while line.count < 1024 {
            let byte = try receive(count: 1)[0]
            if byte == UInt8(ascii: "\n") {
                guard line.last == UInt8(ascii: "\r") else { break }
                return String(decoding: line.dropLast(), as: UTF8.self)
            }
            line.append(byte)
        }
        throw DBusError(.authenticationFailed, "malformed SASL line")
    }

    /// The next message and the descriptors its `UNIX_FDS` field claims.
    mutating func receiveMessage() throws -> (DBusMessage, [Int32]) {
        let header = try receive(count: DBusMessage.fixedHeaderLength)
        guard let total = try DBusMessage.frameLength(header: header) else {
            throw DBusError(.malformedMessage, "short header")
        }
        let message = try DBusMessage(decoding: header + (try receive(count: total - header.count)))
        let count = Int(message.unixFDs ?? 0)
        guard count <= pending.count else {
            throw DBusError(
                .malformedMessage, "UNIX_FDS says \(count) descriptors, \(pending.count) arrived")
        }
        let claimed = Array(pending.prefix(count))
        pending.removeFirst(count)
        return (message, claimed)
    }

    /// Exactly `count` bytes; descriptors arriving meanwhile join ``pending``.
    mutating func receive(count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            try checkDeadline()
            let received = try bytes[offset...].withUnsafeMutableBytes { raw in
                try FDControl.receive(socket, raw, into: &pending)
            }
            guard received > 0 else { throw DBusError(.connectionClosed, "the bus closed the connection") }
            offset += received
            guard pending.count <= DBusFDCall.maximumDescriptors else {
                throw DBusError(.limitExceeded, "more than \(DBusFDCall.maximumDescriptors) descriptors")
            }
        }
        return bytes
    }
}

/// `sendmsg` and `recvmsg` with `SCM_RIGHTS`, the `CMSG_*` macros spelt out (Swift imports no
/// function-like C macro): a `cmsghdr`, then its data, each padded to `size_t`'s alignment.
enum FDControl {
    static let alignment = MemoryLayout<Int>.size
    static func align(_ length: Int) -> Int { (length + alignment - 1) & ~(alignment - 1) }
    static let headerLength = align(MemoryLayout<cmsghdr>.size)
    /// The error for a failed `operation`, from `errno`: a socket timeout is `.timedOut`.
    static func ioError(_ operation: String) -> DBusError {
        let code = errno
        guard code != EAGAIN, code != EWOULDBLOCK else { return DBusError(.timedOut, "\(operation) timed out") }
        return DBusError(.connectionClosed, "\(operation): errno \(code)")
    }

    /// `CMSG_SPACE` for the most descriptors one read accepts.
    static let receiveSpace = headerLength + align(DBusFDCall.maximumDescriptors * 4)

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

    /// `recvmsg` into `buffer` with `MSG_CMSG_CLOEXEC`; the descriptors received are appended to
    /// `descriptors` (and stay there, to be closed by the caller, even when this throws).
    /// - Returns: The bytes read (0 at the end of the stream).
    static func receive(_ socket: Int32, _ buffer: UnsafeMutableRawBufferPointer, into descriptors: inout [Int32])
        throws -> Int
    {
        var iov = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var control = [UInt8](repeating: 0, count: receiveSpace)
        while true {
            let (received, flags, length) = control.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &iov) { iovPointer in
                    var header = msghdr()
                    header.msg_iov = iovPointer
                    header.msg_iovlen = 1
                    header.msg_control = raw.baseAddress
                    header.msg_controllen = raw.count
                    let received = recvmsg(socket, &header, Int32(MSG_CMSG_CLOEXEC))
                    return (received, header.msg_flags, received < 0 ? 0 : Int(header.msg_controllen))
                }
            }
            if received < 0 {
                if errno == EINTR { continue }
                throw FDControl.ioError("read")
            }
            try parse(control, length: min(length, control.count), into: &descriptors)
            guard flags & Int32(MSG_CTRUNC) == 0 else {
                throw DBusError(.limitExceeded, "control data truncated: too many descriptors")
            }
            return received
        }
    }

    /// The descriptors of `control`'s `SCM_RIGHTS` messages; anything else is refused (after
    /// the descriptors found so far are appended, for the caller to close).
    static func parse(_ control: [UInt8], length: Int, into descriptors: inout [Int32]) throws {
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
