/// The byte order of a D-Bus message.
public enum DBusByteOrder: UInt8, Sendable, Hashable {
    /// `l`: little-endian.
    case littleEndian = 0x6C
    /// `B`: big-endian.
    case bigEndian = 0x42

    /// The byte order of this machine.
    public static var native: DBusByteOrder { 1.littleEndian == 1 ? .littleEndian : .bigEndian }
}

/// Limits of the D-Bus specification.
public enum DBusLimits {
    /// The maximum length of one array's contents in bytes (2^26).
    public static let maximumArrayLength = 1 << 26
    /// The maximum length of a whole message in bytes (2^27).
    public static let maximumMessageLength = 1 << 27
    /// The maximum total nesting of containers, variants included (64).
    public static let maximumTotalDepth = 64
}

/// Appends marshalled values to a byte array; offsets are counted from the array's start,
/// which must be 8-aligned within the message.
struct DBusWriter {
    var bytes: [UInt8] = []
    let byteOrder: DBusByteOrder

    init(byteOrder: DBusByteOrder) {
        self.byteOrder = byteOrder
        // Most messages are small: one allocation instead of several while the body grows.
        bytes.reserveCapacity(256)
    }

    mutating func pad(to alignment: Int) {
        var remainder = bytes.count % alignment
        guard remainder != 0 else { return }
        while remainder < alignment {
            bytes.append(0)
            remainder += 1
        }
    }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        pad(to: MemoryLayout<T>.size)
        let ordered = byteOrder == .littleEndian ? value.littleEndian : value.bigEndian
        withUnsafeBytes(of: ordered) { bytes.append(contentsOf: $0) }
    }

    mutating func writeString(_ string: String) throws {
        var string = string
        try string.withUTF8 { utf8 in
            guard utf8.count < UInt32.max else { throw DBusError(.limitExceeded, "string too long") }
            guard !utf8.contains(0) else { throw DBusError(.typeMismatch, "string contains a NUL byte") }
            write(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        bytes.append(0)
    }

    mutating func writeSignature(_ signature: String) throws {
        _ = try DBusSignature(signature)
        let utf8 = Array(signature.utf8)
        bytes.append(UInt8(utf8.count))
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    /// Marshals `value`, checking that it has type `type`.
    mutating func write(_ value: DBusValue, as type: DBusType, depth: Int = 0) throws {
        guard depth <= DBusLimits.maximumTotalDepth else {
            throw DBusError(.limitExceeded, "values nested deeper than \(DBusLimits.maximumTotalDepth)")
        }
        // On the value first, then its type: matching the pair copied both at every value.
        switch value {
        case .byte(let v):
            guard case .byte = type else { throw mismatch(value, type) }
            bytes.append(v)
        case .boolean(let v):
            guard case .boolean = type else { throw mismatch(value, type) }
            write(UInt32(v ? 1 : 0))
        case .int16(let v):
            guard case .int16 = type else { throw mismatch(value, type) }
            write(v)
        case .uint16(let v):
            guard case .uint16 = type else { throw mismatch(value, type) }
            write(v)
        case .int32(let v):
            guard case .int32 = type else { throw mismatch(value, type) }
            write(v)
        case .uint32(let v):
            guard case .uint32 = type else { throw mismatch(value, type) }
            write(v)
        case .int64(let v):
            guard case .int64 = type else { throw mismatch(value, type) }
            write(v)
        case .uint64(let v):
            guard case .uint64 = type else { throw mismatch(value, type) }
            write(v)
        case .double(let v):
            guard case .double = type else { throw mismatch(value, type) }
            write(v.bitPattern)
        case .unixFD(let v):
            guard case .unixFD = type else { throw mismatch(value, type) }
            write(v)
        case .string(let v):
            guard case .string = type else { throw mismatch(value, type) }
            try writeString(v)
        case .objectPath(let v):
            guard case .objectPath = type else { throw mismatch(value, type) }
            guard DBusNames.isValidObjectPath(v) else { throw DBusError(.invalidName, "invalid object path") }
            try writeString(v)
        case .signature(let v):
            guard case .signature = type else { throw mismatch(value, type) }
            try writeSignature(v)
        case .variant(let inner):
            guard case .variant = type else { throw mismatch(value, type) }
            // The signature of a type this module built: valid by construction, so it is not
            // parsed again (only its length, which a type nested deep enough could exceed).
            let innerType = inner.type
            let lengthOffset = bytes.count
            bytes.append(0)
            innerType.appendSignature(to: &bytes)
            let length = bytes.count - lengthOffset - 1
            guard length <= 255 else { throw DBusError(.limitExceeded, "variant signature too long") }
            bytes[lengthOffset] = UInt8(length)
            bytes.append(0)
            try write(inner, as: innerType, depth: depth + 1)
        case .structure(let fields):
            guard case .structure(let types) = type else { throw mismatch(value, type) }
            try writeStruct(fields, as: types, depth: depth + 1)
        case .bytes(let v):
            guard case .array(.byte) = type else { throw mismatch(value, type) }
            try writeArray(elementAlignment: 1) { $0.bytes.append(contentsOf: v) }
        case .array(let declared, let elements):
            guard case .array(let element) = type else { throw mismatch(value, type) }
            guard declared == element else {
                throw DBusError(.typeMismatch, "array of \(declared) where \(element) expected")
            }
            try writeArray(elementAlignment: element.alignment) { writer in
                for item in elements { try writer.write(item, as: element, depth: depth + 1) }
            }
        case .dictionary(let key, let val, let entries):
            guard case .dictionary(let k, let v) = type, k == key, v == val else {
                throw DBusError(.typeMismatch, "dictionary type mismatch")
            }
            try writeArray(elementAlignment: 8) { writer in
                for entry in entries {
                    // A dictionary entry is a two-field structure, written without building one.
                    writer.pad(to: 8)
                    try writer.write(entry.key, as: k, depth: depth + 1)
                    try writer.write(entry.value, as: v, depth: depth + 1)
                }
            }
        }
    }

    private func mismatch(_ value: DBusValue, _ type: DBusType) -> DBusError {
        DBusError(.typeMismatch, "value of type \(value.type) where \(type) expected")
    }

    mutating func writeStruct(_ fields: [DBusValue], as types: [DBusType], depth: Int) throws {
        guard fields.count == types.count, !types.isEmpty else {
            throw DBusError(.typeMismatch, "structure has \(fields.count) fields, \(types.count) expected")
        }
        pad(to: 8)
        for (field, type) in zip(fields, types) { try write(field, as: type, depth: depth) }
    }

    /// Writes an array: length, padding to the element alignment (excluded from the length and
    /// present even when empty), then the elements.
    mutating func writeArray(elementAlignment: Int, _ body: (inout DBusWriter) throws -> Void) throws {
        write(UInt32(0))
        let lengthOffset = bytes.count - 4
        pad(to: elementAlignment)
        let start = bytes.count
        try body(&self)
        let length = bytes.count - start
        guard length <= DBusLimits.maximumArrayLength else {
            throw DBusError(.limitExceeded, "array of \(length) bytes exceeds \(DBusLimits.maximumArrayLength)")
        }
        patchUInt32(UInt32(length), at: lengthOffset)
    }

    mutating func patchUInt32(_ value: UInt32, at offset: Int) {
        let ordered = byteOrder == .littleEndian ? value.littleEndian : value.bigEndian
        withUnsafeBytes(of: ordered) { raw in
            for i in 0..<4 { bytes[offset + i] = raw[i] }
        }
    }
}

/// Reads marshalled values from a byte array with every length checked before use.
struct DBusReader: Sendable {
    let bytes: [UInt8]
    var offset: Int
    let byteOrder: DBusByteOrder
    /// The position of `bytes[0]` relative to the message start, for alignment.
    let base: Int

    init(bytes: [UInt8], byteOrder: DBusByteOrder, base: Int = 0) {
        self.bytes = bytes
        self.offset = 0
        self.byteOrder = byteOrder
        self.base = base
    }

    var remaining: Int { bytes.count - offset }

    mutating func align(to alignment: Int) throws {
        let remainder = (base + offset) % alignment
        guard remainder != 0 else { return }
        let padding = alignment - remainder
        guard padding <= remaining else { throw DBusError(.malformedMessage, "truncated padding at \(offset)") }
        for i in offset..<(offset + padding) where bytes[i] != 0 {
            throw DBusError(.malformedMessage, "non-zero padding at \(i)")
        }
        offset += padding
    }

    mutating func readByte() throws -> UInt8 {
        guard remaining >= 1 else { throw DBusError(.malformedMessage, "truncated at \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func read<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        try align(to: size)
        guard remaining >= size else { throw DBusError(.malformedMessage, "truncated integer at \(offset)") }
        let raw = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
        offset += size
        return byteOrder == .littleEndian ? T(littleEndian: raw) : T(bigEndian: raw)
    }

    mutating func readUTF8(count: Int) throws -> String {
        guard count >= 0, count < remaining else { throw DBusError(.malformedMessage, "string length exceeds message") }
        guard bytes[offset + count] == 0 else { throw DBusError(.malformedMessage, "string not NUL-terminated") }
        let string = try bytes.withUnsafeBufferPointer { all in
            let utf8 = UnsafeBufferPointer(rebasing: all[offset..<(offset + count)])
            var ascii = true
            for byte in utf8 {
                guard byte != 0 else { throw DBusError(.malformedMessage, "string contains a NUL byte") }
                ascii = ascii && byte < 0x80
            }
            // ASCII, nearly every name and attribute, is valid UTF-8 as it is: no second pass.
            if ascii { return String(decoding: utf8, as: UTF8.self) }
            guard let string = String(validating: utf8, as: UTF8.self) else {
                throw DBusError(.malformedMessage, "string is not valid UTF-8")
            }
            return string
        }
        offset += count + 1
        return string
    }

    mutating func readString() throws -> String {
        let length = try read(UInt32.self)
        guard length < UInt32(DBusLimits.maximumMessageLength) else {
            throw DBusError(.limitExceeded, "string length exceeds the message limit")
        }
        return try readUTF8(count: Int(length))
    }

    mutating func readSignature() throws -> DBusSignature {
        let length = Int(try readByte())
        let string = try readUTF8(count: length)
        return try DBusSignature(string)
    }

    /// A signature's text, checked to be a valid signature: what a `g` value holds.
    mutating func readSignatureText() throws -> String {
        let length = Int(try readByte())
        let string = try readUTF8(count: length)
        _ = try DBusSignature(string)
        return string
    }

    /// Reads one value of `type`; `depth` counts enclosing containers and variants.
    mutating func read(_ type: DBusType, depth: Int = 0) throws -> DBusValue {
        guard depth <= DBusLimits.maximumTotalDepth else {
            throw DBusError(.limitExceeded, "values nested deeper than \(DBusLimits.maximumTotalDepth)")
        }
        switch type {
        case .byte: return .byte(try readByte())
        case .boolean: return .boolean(try readBoolean())
        case .int16: return .int16(try read(Int16.self))
        case .uint16: return .uint16(try read(UInt16.self))
        case .int32: return .int32(try read(Int32.self))
        case .uint32: return .uint32(try read(UInt32.self))
        case .int64: return .int64(try read(Int64.self))
        case .uint64: return .uint64(try read(UInt64.self))
        case .double: return .double(Double(bitPattern: try read(UInt64.self)))
        case .unixFD: return .unixFD(try read(UInt32.self))
        case .string: return .string(try readString())
        case .objectPath: return .objectPath(try readObjectPath())
        case .signature: return .signature(try readSignatureText())
        case .variant: return try readVariant(depth: depth)
        case .structure(let types):
            try align(to: 8)
            return .structure(try types.map { try read($0, depth: depth + 1) })
        case .array(.byte): return .bytes(try readByteArray())
        case .array(let element): return .array(element, try readArray(of: element, depth: depth + 1))
        case .dictionary(let key, let value): return try readDictionary(key: key, value: value, depth: depth + 1)
        }
    }

    mutating func readBoolean() throws -> Bool {
        switch try read(UInt32.self) {
        case 0: return false
        case 1: return true
        default: throw DBusError(.malformedMessage, "boolean neither 0 nor 1 at \(offset - 4)")
        }
    }

    mutating func readObjectPath() throws -> String {
        let path = try readString()
        guard DBusNames.isValidObjectPath(path) else { throw DBusError(.malformedMessage, "invalid object path") }
        return path
    }

    mutating func readVariant(depth: Int) throws -> DBusValue {
        .variant(try readVariantContents(depth: depth))
    }

    /// Skips a variant's signature when it is the one basic type `code`; `false`, having read
    /// nothing, when it is anything else.
    mutating func skipVariantSignature(of code: UInt8) -> Bool {
        guard remaining >= 3, bytes[offset] == 1, bytes[offset + 1] == code, bytes[offset + 2] == 0 else {
            return false
        }
        offset += 3
        return true
    }

    /// The value inside a variant (its signature, then the value).
    mutating func readVariantContents(depth: Int) throws -> DBusValue {
        // The signatures of nearly every variant (one simple type, or `ay`) without parsing a string.
        if remaining >= 3, bytes[offset] == 1, bytes[offset + 2] == 0,
            let basic = DBusType.simpleType(bytes[offset + 1])
        {
            offset += 3
            return try read(basic, depth: depth + 1)
        }
        if remaining >= 4, bytes[offset] == 2, bytes[offset + 1] == UInt8(ascii: "a"),
            bytes[offset + 2] == UInt8(ascii: "y"), bytes[offset + 3] == 0
        {
            offset += 4
            return try read(.array(.byte), depth: depth + 1)
        }
        let signature = try readSignature()
        guard signature.types.count == 1 else {
            throw DBusError(.malformedMessage, "variant signature must hold one complete type")
        }
        return try read(signature.types[0], depth: depth + 1)
    }

    /// Reads an array's length and padding; returns the offset where its contents end.
    mutating func readArrayBounds(elementAlignment: Int) throws -> Int {
        let length = try read(UInt32.self)
        guard length <= UInt32(DBusLimits.maximumArrayLength) else {
            throw DBusError(.limitExceeded, "array of \(length) bytes exceeds \(DBusLimits.maximumArrayLength)")
        }
        try align(to: elementAlignment)
        guard Int(length) <= remaining else { throw DBusError(.malformedMessage, "array length exceeds message") }
        return offset + Int(length)
    }

    mutating func readByteArray() throws -> [UInt8] {
        let end = try readArrayBounds(elementAlignment: 1)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    mutating func readArray(of element: DBusType, depth: Int) throws -> [DBusValue] {
        let end = try readArrayBounds(elementAlignment: element.alignment)
        var elements: [DBusValue] = []
        while offset < end {
            elements.append(try read(element, depth: depth))
            guard offset <= end else { throw DBusError(.malformedMessage, "array element overruns array") }
        }
        return elements
    }

    mutating func readDictionary(key: DBusType, value: DBusType, depth: Int) throws -> DBusValue {
        let end = try readArrayBounds(elementAlignment: 8)
        var entries: [DBusDictEntry] = []
        while offset < end {
            try align(to: 8)
            let k = try read(key, depth: depth + 1)
            let v = try read(value, depth: depth + 1)
            entries.append(DBusDictEntry(k, v))
            guard offset <= end else { throw DBusError(.malformedMessage, "dictionary entry overruns array") }
        }
        return .dictionary(key: key, value: value, entries)
    }
}

/// Reads a message body value by value, for a reader that knows the types it expects
/// (``DBusMessage/decodeHeader(_:maximumLength:)``): what it reads builds no ``DBusValue``
/// tree. Every length is checked before use and every string validated, as
/// ``DBusMessage/init(decoding:maximumLength:)`` does; a body that is not what the caller
/// expects throws ``DBusError`` `.malformedMessage` and never traps.
///
/// ```swift
/// var (reply, body) = try DBusMessage.decodeHeader(bytes)
/// guard body.signature == DBusSignature("a{sv}") else { … }
/// try body.readStringVariantDictionary { name, value in … }
/// try body.finish()
/// ```
public struct DBusBodyReader: Sendable {
    var reader: DBusReader
    /// The body's signature, from the header.
    public let signature: DBusSignature

    /// The whole body as values, as ``DBusMessage/body`` holds them.
    /// - Throws: ``DBusError`` for a body that does not match its signature.
    public mutating func readAll() throws -> [DBusValue] {
        var values: [DBusValue] = []
        values.reserveCapacity(signature.types.count)
        for type in signature.types { values.append(try reader.read(type)) }
        try finish()
        return values
    }

    /// Reads one value of `type`, as ``readAll()`` reads each.
    /// - Throws: ``DBusError`` for bytes that do not form a value of `type`.
    public mutating func read(_ type: DBusType) throws -> DBusValue { try reader.read(type) }

    /// Reads a string (`s`).
    /// - Throws: ``DBusError`` for a bad length, a missing NUL, a NUL inside or invalid UTF-8.
    public mutating func readString() throws -> String { try reader.readString() }

    /// Reads a boolean (`b`).
    /// - Throws: ``DBusError`` for a truncated body or a value other than 0 and 1.
    public mutating func readBoolean() throws -> Bool { try reader.readBoolean() }

    /// Reads an array whose elements have `elementAlignment` (8 for structures and dictionary
    /// entries), calling `element` until its end; `element` must read exactly one element.
    /// - Throws: ``DBusError`` for a bad length, or an element that overruns the array.
    public mutating func readArray(
        elementAlignment: Int, _ element: (inout DBusBodyReader) throws -> Void
    ) throws {
        let end = try reader.readArrayBounds(elementAlignment: elementAlignment)
        while reader.offset < end {
            try element(&self)
            guard reader.offset <= end else { throw DBusError(.malformedMessage, "array element overruns array") }
        }
    }

    /// Reads an `a{sv}`, calling `entry` with each key and the value inside its variant.
    /// - Throws: ``DBusError`` for anything malformed, or what `entry` throws.
    public mutating func readStringVariantDictionary(_ entry: (String, DBusValue) throws -> Void) throws {
        try readArray(elementAlignment: 8) { body in
            try body.reader.align(to: 8)
            let key = try body.reader.readString()
            try entry(key, try body.reader.readVariantContents(depth: 2))
        }
    }

    /// Checks that nothing is left after what was read.
    /// - Throws: ``DBusError`` `.malformedMessage` for trailing bytes.
    public func finish() throws {
        guard reader.remaining == 0 else {
            throw DBusError(.malformedMessage, "\(reader.remaining) trailing body bytes")
        }
    }
}

/// Marshals and unmarshals values outside a message (a body starting 8-aligned).
public enum DBusMarshal {
    /// The wire form of `values` with the types of `signature`, as a message body would hold them.
    ///
    /// - Throws: ``DBusError`` if a value does not match its type or exceeds a limit.
    public static func encode(
        _ values: [DBusValue],
        signature: DBusSignature,
        byteOrder: DBusByteOrder = .native
    ) throws -> [UInt8] {
        guard values.count == signature.types.count else {
            throw DBusError(.typeMismatch, "\(values.count) values for signature of \(signature.types.count) types")
        }
        var writer = DBusWriter(byteOrder: byteOrder)
        for (value, type) in zip(values, signature.types) { try writer.write(value, as: type) }
        return writer.bytes
    }

    /// The values of `signature` read from `bytes`, which must be consumed exactly.
    ///
    /// - Throws: ``DBusError`` `.malformedMessage` or `.limitExceeded` on invalid input; never traps.
    public static func decode(
        _ bytes: [UInt8],
        signature: DBusSignature,
        byteOrder: DBusByteOrder = .native
    ) throws -> [DBusValue] {
        var reader = DBusReader(bytes: bytes, byteOrder: byteOrder)
        let values = try signature.types.map { try reader.read($0) }
        guard reader.remaining == 0 else { throw DBusError(.malformedMessage, "\(reader.remaining) trailing bytes") }
        return values
    }
}
