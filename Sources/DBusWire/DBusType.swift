/// A single complete D-Bus type.
///
/// `DBusType` is the parsed form of one type in a signature: `a{sv}` is
/// `.dictionary(key: .string, value: .variant)`.
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible {
    /// `y`, an unsigned 8-bit integer.
    case byte
    /// `b`, a boolean (a 32-bit 0 or 1 on the wire).
    case boolean
    /// `n`, a signed 16-bit integer.
    case int16
    /// `q`, an unsigned 16-bit integer.
    case uint16
    /// `i`, a signed 32-bit integer.
    case int32
    /// `u`, an unsigned 32-bit integer.
    case uint32
    /// `x`, a signed 64-bit integer.
    case int64
    /// `t`, an unsigned 64-bit integer.
    case uint64
    /// `d`, an IEEE 754 double.
    case double
    /// `s`, a UTF-8 string.
    case string
    /// `o`, an object path.
    case objectPath
    /// `g`, a type signature.
    case signature
    /// `h`, an index into the message's file descriptors (no descriptors are passed by this module).
    case unixFD
    /// `v`, a value carrying its own type.
    case variant
    /// `a…`, an array of elements of one type.
    case array(DBusType)
    /// `a{kv}`, an array of dictionary entries; the key is a basic type.
    case dictionary(key: DBusType, value: DBusType)
    /// `(…)`, a structure of one or more fields.
    case structure([DBusType])

    /// The type's signature, e.g. `a{sv}`.
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// The signature, as in `a{sv}`.
    public var description: String { signature }

    /// Appends the type's signature to `bytes` (``signature`` without building strings).
    func appendSignature(to bytes: inout [UInt8]) {
        switch self {
        case .array(let element):
            bytes.append(UInt8(ascii: "a"))
            element.appendSignature(to: &bytes)
        case .dictionary(let key, let value):
            bytes.append(UInt8(ascii: "a"))
            bytes.append(UInt8(ascii: "{"))
            key.appendSignature(to: &bytes)
            value.appendSignature(to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        case .structure(let fields):
            bytes.append(UInt8(ascii: "("))
            for field in fields { field.appendSignature(to: &bytes) }
            bytes.append(UInt8(ascii: ")"))
        default:
            bytes.append(signature.utf8.first!)
        }
    }

    /// Whether the type's signature is certainly valid: containers nested at most 32 deep in
    /// all (`depth` enclosing this one), no empty structure, basic dictionary keys. `false`
    /// means only "not certainly": ``DBusSignature/init(_:)`` decides.
    func isPlainlyValid(depth: Int) -> Bool {
        switch self {
        case .array(let element):
            return depth < DBusSignature.maximumContainerDepth && element.isPlainlyValid(depth: depth + 1)
        case .dictionary(let key, let value):
            return depth < DBusSignature.maximumContainerDepth && key.isBasic && value.isPlainlyValid(depth: depth + 1)
        case .structure(let fields):
            return depth < DBusSignature.maximumContainerDepth && !fields.isEmpty
                && fields.allSatisfy { $0.isPlainlyValid(depth: depth + 1) }
        default:
            return true
        }
    }

    /// Whether the type is basic (may be a dictionary key): every type but `v`, arrays and structures.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// The alignment of the type's values on the wire, in bytes.
    public var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .string, .objectPath, .unixFD, .array, .dictionary: 4
        case .int64, .uint64, .double, .structure: 8
        }
    }

    /// Parses a signature that holds exactly one complete type.
    ///
    /// - Throws: ``DBusError`` `.invalidSignature` if the signature is malformed, holds zero or
    ///   several types, or exceeds the nesting limits.
    public init(parsing signature: String) throws {
        let types = try DBusSignature(signature).types
        guard types.count == 1 else {
            throw DBusError(.invalidSignature, "expected a single complete type, found \(types.count)")
        }
        self = types[0]
    }
}

/// A validated D-Bus type signature: zero or more complete types, at most 255 bytes.
///
/// ```swift
/// let signature = try DBusSignature("a{sv}as")
/// signature.types  // [.dictionary(key: .string, value: .variant), .array(.string)]
/// ```
public struct DBusSignature: Hashable, Sendable, CustomStringConvertible, ExpressibleByArrayLiteral {
    /// The maximum length of a signature in bytes.
    public static let maximumLength = 255
    /// The maximum nesting of arrays, and separately of structures, in one signature.
    public static let maximumContainerDepth = 32

    /// The complete types, in order.
    public let types: [DBusType]

    /// The signature string.
    public var rawValue: String { types.map(\.signature).joined() }

    /// The signature string.
    public var description: String { rawValue }

    /// The empty signature.
    public static let empty = DBusSignature(types: [])

    /// A signature made of the given types.
    public init(types: [DBusType]) { self.types = types }

    /// A signature made of the given types.
    public init(arrayLiteral elements: DBusType...) { self.types = elements }

    /// Parses and validates a signature string.
    ///
    /// - Throws: ``DBusError`` `.invalidSignature` when the string is longer than 255 bytes,
    ///   holds an unknown type code or an incomplete type, or nests more than 32 arrays or
    ///   32 structures.
    public init(_ string: String) throws {
        let bytes = Array(string.utf8)
        guard bytes.count <= Self.maximumLength else {
            throw DBusError(.invalidSignature, "signature longer than \(Self.maximumLength) bytes")
        }
        var parser = SignatureParser(bytes: bytes)
        var types: [DBusType] = []
        while !parser.atEnd { types.append(try parser.parseCompleteType(arrays: 0, structs: 0)) }
        self.types = types
    }
}

/// Parses signature bytes one complete type at a time, counting nesting.
private struct SignatureParser {
    let bytes: [UInt8]
    var index = 0

    var atEnd: Bool { index >= bytes.count }

    mutating func next() throws -> UInt8 {
        guard index < bytes.count else { throw DBusError(.invalidSignature, "incomplete type in signature") }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func parseCompleteType(arrays: Int, structs: Int) throws -> DBusType {
        let code = try next()
        if let basic = DBusType.simpleType(code) { return basic }
        switch code {
        case UInt8(ascii: "a"): return try parseArray(arrays: arrays + 1, structs: structs)
        case UInt8(ascii: "("): return try parseStruct(arrays: arrays, structs: structs + 1)
        default: throw DBusError(.invalidSignature, "unexpected type code 0x\(String(code, radix: 16))")
        }
    }

    mutating func parseArray(arrays: Int, structs: Int) throws -> DBusType {
        guard arrays <= DBusSignature.maximumContainerDepth else {
            throw DBusError(.invalidSignature, "arrays nested deeper than 32")
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else {
            return .array(try parseCompleteType(arrays: arrays, structs: structs))
        }
        index += 1
        let key = try parseCompleteType(arrays: arrays, structs: structs + 1)
        guard key.isBasic else { throw DBusError(.invalidSignature, "dictionary key is not a basic type") }
        let value = try parseCompleteType(arrays: arrays, structs: structs + 1)
        guard try next() == UInt8(ascii: "}") else {
            throw DBusError(.invalidSignature, "dictionary entry must hold exactly two types")
        }
        guard structs + 1 <= DBusSignature.maximumContainerDepth else {
            throw DBusError(.invalidSignature, "structures nested deeper than 32")
        }
        return .dictionary(key: key, value: value)
    }

    mutating func parseStruct(arrays: Int, structs: Int) throws -> DBusType {
        guard structs <= DBusSignature.maximumContainerDepth else {
            throw DBusError(.invalidSignature, "structures nested deeper than 32")
        }
        var fields: [DBusType] = []
        while true {
            guard index < bytes.count else { throw DBusError(.invalidSignature, "unterminated structure") }
            if bytes[index] == UInt8(ascii: ")") {
                index += 1
                break
            }
            fields.append(try parseCompleteType(arrays: arrays, structs: structs))
        }
        guard !fields.isEmpty else { throw DBusError(.invalidSignature, "empty structure") }
        return .structure(fields)
    }

}

extension DBusType {
    /// The type of a one-character signature code that is a complete type by itself (a basic
    /// type or `v`), or `nil` (a container, or not a type code).
    static func simpleType(_ code: UInt8) -> DBusType? {
        switch code {
        case UInt8(ascii: "y"): .byte
        case UInt8(ascii: "b"): .boolean
        case UInt8(ascii: "n"): .int16
        case UInt8(ascii: "q"): .uint16
        case UInt8(ascii: "i"): .int32
        case UInt8(ascii: "u"): .uint32
        case UInt8(ascii: "x"): .int64
        case UInt8(ascii: "t"): .uint64
        case UInt8(ascii: "d"): .double
        case UInt8(ascii: "s"): .string
        case UInt8(ascii: "o"): .objectPath
        case UInt8(ascii: "g"): .signature
        case UInt8(ascii: "h"): .unixFD
        case UInt8(ascii: "v"): .variant
        default: nil
        }
    }
}
