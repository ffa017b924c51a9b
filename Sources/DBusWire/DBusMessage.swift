/// A D-Bus message: a header (type, flags, serial, header fields) and a body of typed values.
///
/// ```swift
/// let call = DBusMessage.methodCall(
///     path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "ListNames",
///     destination: "org.freedesktop.DBus")
/// ```
public struct DBusMessage: Hashable, Sendable {
    /// The four kinds of message.
    public enum MessageType: UInt8, Sendable, Hashable {
        /// A method call (1).
        case methodCall = 1
        /// A successful reply (2).
        case methodReturn = 2
        /// An error reply (3).
        case error = 3
        /// A signal (4).
        case signal = 4
    }

    /// Header flags.
    public struct Flags: OptionSet, Hashable, Sendable {
        /// The flags' bits.
        public var rawValue: UInt8
        /// Flags from their bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The caller expects no reply (1).
        public static let noReplyExpected = Flags(rawValue: 1)
        /// The bus must not start a service to deliver the message (2).
        public static let noAutoStart = Flags(rawValue: 2)
        /// The caller is prepared to wait for interactive authorization (4).
        public static let allowInteractiveAuthorization = Flags(rawValue: 4)
    }

    /// The message's kind.
    public var type: MessageType
    /// Header flags.
    public var flags: Flags
    /// The sender's serial number; the connection assigns it when 0.
    public var serial: UInt32
    /// Field 1, PATH.
    public var path: String?
    /// Field 2, INTERFACE.
    public var interface: String?
    /// Field 3, MEMBER.
    public var member: String?
    /// Field 4, ERROR_NAME.
    public var errorName: String?
    /// Field 5, REPLY_SERIAL.
    public var replySerial: UInt32?
    /// Field 6, DESTINATION.
    public var destination: String?
    /// Field 7, SENDER (set by a bus).
    public var sender: String?
    /// Field 9, UNIX_FDS (no descriptors are passed by this module).
    public var unixFDs: UInt32?
    /// The body's values; field 8, SIGNATURE, is derived from them.
    public var body: [DBusValue]

    /// A message with every field given.
    public init(
        type: MessageType,
        flags: Flags = [],
        serial: UInt32 = 0,
        path: String? = nil,
        interface: String? = nil,
        member: String? = nil,
        errorName: String? = nil,
        replySerial: UInt32? = nil,
        destination: String? = nil,
        sender: String? = nil,
        unixFDs: UInt32? = nil,
        body: [DBusValue] = []
    ) {
        self.type = type
        self.flags = flags
        self.serial = serial
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.replySerial = replySerial
        self.destination = destination
        self.sender = sender
        self.unixFDs = unixFDs
        self.body = body
    }

    /// The body's signature.
    public var signature: DBusSignature { DBusSignature(types: body.map(\.type)) }

    /// A method call.
    public static func methodCall(
        path: String,
        interface: String?,
        member: String,
        destination: String? = nil,
        body: [DBusValue] = [],
        flags: Flags = []
    ) -> DBusMessage {
        DBusMessage(
            type: .methodCall, flags: flags, path: path, interface: interface, member: member,
            destination: destination, body: body)
    }

    /// A successful reply to `call`.
    public static func methodReturn(to call: DBusMessage, body: [DBusValue] = []) -> DBusMessage {
        DBusMessage(
            type: .methodReturn, flags: .noReplyExpected, replySerial: call.serial, destination: call.sender,
            body: body)
    }

    /// An error reply to `call` with the D-Bus error `name` and an explanatory `message`.
    public static func error(to call: DBusMessage, name: String, message: String?) -> DBusMessage {
        DBusMessage(
            type: .error, flags: .noReplyExpected, errorName: name, replySerial: call.serial,
            destination: call.sender, body: message.map { [.string($0)] } ?? [])
    }

    /// A signal.
    public static func signal(
        path: String,
        interface: String,
        member: String,
        destination: String? = nil,
        body: [DBusValue] = []
    ) -> DBusMessage {
        DBusMessage(
            type: .signal, flags: .noReplyExpected, path: path, interface: interface, member: member,
            destination: destination, body: body)
    }

    /// `org.freedesktop.DBus.Properties.PropertiesChanged` for the object at `path`.
    ///
    /// - Parameters:
    ///   - path: the object whose properties changed.
    ///   - interface: the interface the properties belong to.
    ///   - changed: the new values, sent as `a{sv}`.
    ///   - invalidated: names of properties that changed without their value being sent.
    public static func propertiesChanged(
        path: String,
        interface: String,
        changed: [String: DBusValue],
        invalidated: [String] = []
    ) -> DBusMessage {
        signal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            body: [
                .string(interface), .stringVariantDictionary(changed),
                .array(.string, invalidated.map(DBusValue.string)),
            ])
    }

    /// The error reply's first string argument, if any.
    public var errorMessage: String? {
        guard type == .error, case .string(let message)? = body.first else { return nil }
        return message
    }
}

// MARK: - Wire form

extension DBusMessage {
    /// The length of the fixed part of the header.
    public static let fixedHeaderLength = 16

    /// The total length of the message whose first 16 bytes are `header`, or `nil` if fewer
    /// than 16 bytes are given.
    ///
    /// - Throws: ``DBusError`` if the fixed header is invalid or the message would exceed
    ///   `maximumLength` (at most the specification's 128 MiB).
    public static func frameLength(
        header: some Collection<UInt8>,
        maximumLength: Int = DBusLimits.maximumMessageLength
    ) throws -> Int? {
        guard header.count >= fixedHeaderLength else { return nil }
        // Contiguous bytes (an array or a slice of one, as nearly every caller has) are read in place.
        if let framed = try header.withContiguousStorageIfAvailable({
            try frameLength(fixedHeader: UnsafeRawBufferPointer($0), maximumLength: maximumLength)
        }) {
            return framed
        }
        // The 16 bytes on the stack, not in an array: every message received is framed here.
        var fixed: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &fixed) { raw in
            for (index, byte) in header.prefix(fixedHeaderLength).enumerated() { raw[index] = byte }
        }
        return try withUnsafeBytes(of: fixed) { try frameLength(fixedHeader: $0, maximumLength: maximumLength) }
    }

    /// ``frameLength(header:maximumLength:)`` of the first 16 bytes of `header` (at least 16).
    package static func frameLength(fixedHeader header: UnsafeRawBufferPointer, maximumLength: Int) throws -> Int {
        guard let order = DBusByteOrder(rawValue: header[0]) else {
            throw DBusError(.malformedMessage, "unknown byte order mark")
        }
        guard header[3] == 1 else { throw DBusError(.malformedMessage, "unsupported protocol version") }
        func integer(at offset: Int) -> Int {
            let raw = header.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            return Int(order == .littleEndian ? UInt32(littleEndian: raw) : UInt32(bigEndian: raw))
        }
        let bodyLength = integer(at: 4)
        let fieldsLength = integer(at: 12)
        guard fieldsLength <= DBusLimits.maximumArrayLength else {
            throw DBusError(.limitExceeded, "header field array exceeds the array limit")
        }
        let headerLength = (fixedHeaderLength + fieldsLength + 7) & ~7
        let total = headerLength + bodyLength
        let limit = min(maximumLength, DBusLimits.maximumMessageLength)
        guard total <= limit else {
            throw DBusError(.limitExceeded, "message of \(total) bytes exceeds the limit of \(limit)")
        }
        return total
    }

    /// The message's wire form.
    ///
    /// - Throws: ``DBusError`` if a field is invalid, a body value does not match its type, or
    ///   the message exceeds 128 MiB.
    public func encoded(byteOrder: DBusByteOrder = .native) throws -> [UInt8] {
        try validateFields()
        var body = DBusWriter(byteOrder: byteOrder)
        var signature: [UInt8] = []
        var plainSignature = true
        for value in self.body {
            let type = value.type
            try body.write(value, as: type)
            type.appendSignature(to: &signature)
            plainSignature = plainSignature && type.isPlainlyValid(depth: 0)
        }
        guard body.bytes.count <= DBusLimits.maximumMessageLength else {
            throw DBusError(.limitExceeded, "body of \(body.bytes.count) bytes exceeds the message limit")
        }
        // A signature this module built is taken as it is when plainly within the limits;
        // anything else is parsed, which throws `.invalidSignature` as it always did.
        if !plainSignature || signature.count > DBusSignature.maximumLength {
            _ = try DBusSignature(String(decoding: signature, as: UTF8.self))
        }
        // The header fields are written as they are, not built as `(yv)` values first, and the
        // body is appended to the header's own buffer: one array for the whole message.
        var header = DBusWriter(byteOrder: byteOrder)
        let names =
            (path?.utf8.count ?? 0) + (interface?.utf8.count ?? 0) + (member?.utf8.count ?? 0)
            + (errorName?.utf8.count ?? 0) + (destination?.utf8.count ?? 0) + (sender?.utf8.count ?? 0)
        header.bytes.reserveCapacity(96 + names + signature.count + body.bytes.count)
        header.bytes.append(byteOrder.rawValue)
        header.bytes.append(type.rawValue)
        header.bytes.append(flags.rawValue)
        header.bytes.append(1)
        header.write(UInt32(body.bytes.count))
        header.write(serial)
        try header.writeArray(elementAlignment: 8) { writer in
            // Each field is a `(yv)` structure: its code, then a variant of one basic type.
            func field(_ code: UInt8, _ type: Character) {
                writer.pad(to: 8)
                writer.bytes.append(code)
                writer.bytes.append(1)
                writer.bytes.append(type.asciiValue!)
                writer.bytes.append(0)
            }
            func stringField(_ code: UInt8, _ type: Character, _ value: String?) throws {
                guard let value else { return }
                field(code, type)
                try writer.writeString(value)
            }
            // The names were checked by validateFields().
            try stringField(1, "o", path)
            try stringField(2, "s", interface)
            try stringField(3, "s", member)
            try stringField(4, "s", errorName)
            if let replySerial {
                field(5, "u")
                writer.write(replySerial)
            }
            try stringField(6, "s", destination)
            try stringField(7, "s", sender)
            if !self.body.isEmpty {
                field(8, "g")
                writer.bytes.append(UInt8(signature.count))
                writer.bytes.append(contentsOf: signature)
                writer.bytes.append(0)
            }
            if let unixFDs {
                field(9, "u")
                writer.write(unixFDs)
            }
        }
        header.pad(to: 8)
        let total = header.bytes.count + body.bytes.count
        guard total <= DBusLimits.maximumMessageLength else {
            throw DBusError(.limitExceeded, "message of \(total) bytes exceeds the limit")
        }
        header.bytes.append(contentsOf: body.bytes)
        return header.bytes
    }

    /// Checks the fields the message type requires and the validity of each name.
    package func validateFields() throws {
        switch type {
        case .methodCall:
            guard path != nil, member != nil else {
                throw DBusError(.malformedMessage, "method call without PATH or MEMBER")
            }
        case .methodReturn:
            guard replySerial != nil else { throw DBusError(.malformedMessage, "method return without REPLY_SERIAL") }
        case .error:
            guard errorName != nil, replySerial != nil else {
                throw DBusError(.malformedMessage, "error without ERROR_NAME or REPLY_SERIAL")
            }
        case .signal:
            guard path != nil, interface != nil, member != nil else {
                throw DBusError(.malformedMessage, "signal without PATH, INTERFACE or MEMBER")
            }
        }
        try validateNames()
    }

    private func validateNames() throws {
        if let path, !DBusNames.isValidObjectPath(path) { throw DBusError(.invalidName, "invalid PATH") }
        if let interface, !DBusNames.isValidInterfaceName(interface) {
            throw DBusError(.invalidName, "invalid INTERFACE")
        }
        if let member, !DBusNames.isValidMemberName(member) { throw DBusError(.invalidName, "invalid MEMBER") }
        if let errorName, !DBusNames.isValidErrorName(errorName) { throw DBusError(.invalidName, "invalid ERROR_NAME") }
        if let destination, !DBusNames.isValidBusName(destination) {
            throw DBusError(.invalidName, "invalid DESTINATION")
        }
        if let sender, !DBusNames.isValidBusName(sender) { throw DBusError(.invalidName, "invalid SENDER") }
        if replySerial == 0 { throw DBusError(.malformedMessage, "REPLY_SERIAL is 0") }
    }

    /// Decodes one complete message.
    ///
    /// - Parameters:
    ///   - bytes: exactly one message (see ``frameLength(header:maximumLength:)``).
    ///   - maximumLength: the largest message accepted.
    /// - Throws: ``DBusError`` for any malformed, truncated or oversized input; never traps and
    ///   never allocates more than a constant multiple of `bytes.count`.
    public init(decoding bytes: [UInt8], maximumLength: Int = DBusLimits.maximumMessageLength) throws {
        var body: DBusBodyReader
        (self, body) = try Self.decodeHeader(bytes, maximumLength: maximumLength)
        self.body = try body.readAll()
    }

    /// Decodes one message's header and leaves its body in wire form, for a reader that knows
    /// the types it expects (``DBusBodyReader``): no ``DBusValue`` is built for what it reads.
    ///
    /// - Parameters:
    ///   - bytes: exactly one message (see ``frameLength(header:maximumLength:)``).
    ///   - maximumLength: The largest message accepted.
    /// - Returns: The message with an empty ``body``, and a reader of its body.
    /// - Throws: ``DBusError`` `.malformedMessage` or `.limitExceeded` on an invalid header, as
    ///   ``init(decoding:maximumLength:)``; the body is checked as it is read.
    public static func decodeHeader(
        _ bytes: [UInt8], maximumLength: Int = DBusLimits.maximumMessageLength
    ) throws -> (message: DBusMessage, body: DBusBodyReader) {
        guard bytes.count >= Self.fixedHeaderLength else {
            throw DBusError(.malformedMessage, "shorter than the fixed header")
        }
        let total = try bytes.withUnsafeBytes { try Self.frameLength(fixedHeader: $0, maximumLength: maximumLength) }
        guard total == bytes.count else {
            throw DBusError(.malformedMessage, "length \(bytes.count), header says \(total)")
        }
        let order = DBusByteOrder(rawValue: bytes[0])!
        guard let type = MessageType(rawValue: bytes[1]) else {
            throw DBusError(.malformedMessage, "unknown message type")
        }
        var reader = DBusReader(bytes: bytes, byteOrder: order)
        reader.offset = 4
        let bodyLength = Int(try reader.read(UInt32.self))
        let serial = try reader.read(UInt32.self)
        guard serial != 0 else { throw DBusError(.malformedMessage, "serial is 0") }
        var message = DBusMessage(type: type, flags: Flags(rawValue: bytes[2]), serial: serial)
        let signature = try message.readHeaderFields(&reader)
        try reader.align(to: 8)
        guard reader.remaining == bodyLength else { throw DBusError(.malformedMessage, "body length mismatch") }
        try message.validateFields()
        if signature.types.isEmpty, reader.remaining > 0 {
            throw DBusError(.malformedMessage, "body present without SIGNATURE")
        }
        // The same array from the body's start (8-aligned, so alignment is unchanged): no copy.
        return (message, DBusBodyReader(reader: reader, signature: signature))
    }

    /// Reads the `a(yv)` header fields; returns the body signature (empty when absent).
    private mutating func readHeaderFields(_ reader: inout DBusReader) throws -> DBusSignature {
        let end = try reader.readArrayBounds(elementAlignment: 8)
        var signature = DBusSignature.empty
        while reader.offset < end {
            try reader.align(to: 8)
            let code = try reader.readByte()
            if code == 8, reader.skipVariantSignature(of: UInt8(ascii: "g")) {
                // The body's signature, parsed once (not read as text, rebuilt and parsed again).
                signature = try reader.readSignature()
            } else {
                let value = try reader.readVariantContents(depth: 1)
                if let parsed = try apply(field: code, value: value) { signature = parsed }
            }
            guard reader.offset <= end else { throw DBusError(.malformedMessage, "header field overruns array") }
        }
        return signature
    }

    /// Stores one header field; unknown codes are ignored. Returns the signature for field 8.
    private mutating func apply(field code: UInt8, value: DBusValue) throws -> DBusSignature? {
        switch (code, value) {
        case (1, .objectPath(let v)): path = v
        case (2, .string(let v)): interface = v
        case (3, .string(let v)): member = v
        case (4, .string(let v)): errorName = v
        case (5, .uint32(let v)): replySerial = v
        case (6, .string(let v)): destination = v
        case (7, .string(let v)): sender = v
        case (8, .signature(let v)): return try DBusSignature(v)
        case (9, .uint32(let v)): unixFDs = v
        case (0, _): throw DBusError(.malformedMessage, "header field code 0")
        case (1...9, _): throw DBusError(.malformedMessage, "header field \(code) has the wrong type")
        default: break
        }
        return nil
    }
}

extension DBusMessage {
    /// The bus driver's name, `org.freedesktop.DBus`: the destination of calls to the bus itself
    /// and the sender of the bus's own signals, which no other connection can own.
    public static let busDriverName = "org.freedesktop.DBus"
    /// The bus driver's object path, `/org/freedesktop/DBus`.
    public static let busDriverPath = "/org/freedesktop/DBus"
}

extension DBusMessage: CustomStringConvertible, CustomDebugStringConvertible {
    /// The message's kind, names and body types, never the body's contents (see
    /// ``DBusValue/description``).
    public var description: String {
        let name = member ?? errorName ?? ""
        return "DBusMessage(\(type) \(interface.map { $0 + "." } ?? "")\(name), serial \(serial), body \(body))"
    }

    /// The same as ``description``.
    public var debugDescription: String { description }
}
