/// A D-Bus value of any type.
///
/// Byte arrays (`ay`) have their own case, ``bytes(_:)``: the decoder always produces it, so a
/// large byte array costs one byte per byte. `.array(.byte, …)` is accepted by the encoder too.
///
/// ```swift
/// let properties: DBusValue = .dictionary(key: .string, value: .variant, [
///     DBusDictEntry(.string("Label"), .variant(.string("Work"))),
/// ])
/// ```
public enum DBusValue: Hashable, Sendable {
    /// `y`
    case byte(UInt8)
    /// `b`
    case boolean(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`
    case string(String)
    /// `o`; validated when encoded.
    case objectPath(String)
    /// `g`; validated when encoded.
    case signature(String)
    /// `h`: an index into the message's file descriptors (this module passes none).
    case unixFD(UInt32)
    /// `ay`, as raw bytes.
    case bytes([UInt8])
    /// `a…`: the element type and the elements.
    case array(DBusType, [DBusValue])
    /// `a{kv}`: the key type, the value type and the entries, in wire order.
    case dictionary(key: DBusType, value: DBusType, [DBusDictEntry])
    /// `(…)`: the fields, at least one.
    case structure([DBusValue])
    /// `v`: a value with its type.
    indirect case variant(DBusValue)

    /// The value's type.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .bytes: .array(.byte)
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }
}

extension DBusValue {
    /// Whether the value has type `type` (`self.type == type`, without building the type of
    /// a container).
    @usableFromInline
    func hasType(_ type: DBusType) -> Bool {
        switch (self, type) {
        case (.array(let element, _), .array(let expected)): element == expected
        case (.bytes, .array(.byte)): true
        case (.dictionary(let key, let value, _), .dictionary(let expectedKey, let expectedValue)):
            key == expectedKey && value == expectedValue
        case (.structure(let fields), .structure(let types)):
            fields.count == types.count && zip(fields, types).allSatisfy { $0.hasType($1) }
        case (.array, _), (.bytes, _), (.dictionary, _), (.structure, _): false
        default: self.type == type
        }
    }

    /// Whether `values` have the types of `arguments`, one for one.
    package static func have(_ values: [DBusValue], typesOf arguments: [DBusArgument]) -> Bool {
        values.count == arguments.count && zip(values, arguments).allSatisfy { $0.hasType($1.type) }
    }
}

/// One entry of a D-Bus dictionary (`{kv}`).
public struct DBusDictEntry: Hashable, Sendable {
    /// The key, of a basic type.
    public var key: DBusValue
    /// The value.
    public var value: DBusValue

    /// An entry with the given key and value.
    public init(_ key: DBusValue, _ value: DBusValue) {
        self.key = key
        self.value = value
    }
}

extension DBusValue {
    /// An `a{sv}` dictionary from string keys to variants, in key order.
    ///
    /// ```swift
    /// let props = DBusValue.stringVariantDictionary(["Label": .string("Work")])
    /// ```
    public static func stringVariantDictionary(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: .string,
            value: .variant,
            entries.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .variant($0.value)) }
        )
    }

    /// The string of an `s`, `o` or `g` value, or `nil` for other types.
    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): s
        default: nil
        }
    }

    /// The value inside a variant, or `nil` if this is not a variant.
    public var variantValue: DBusValue? {
        if case .variant(let inner) = self { return inner }
        return nil
    }

    /// The value of an unsigned 32-bit integer, or `nil` for other types.
    public var uint32Value: UInt32? {
        if case .uint32(let v) = self { return v }
        return nil
    }

    /// The entries of a dictionary whose keys are strings, or `nil` for other values.
    /// A repeated key keeps its last value.
    public var stringKeyedEntries: [String: DBusValue]? {
        guard case .dictionary(.string, _, let entries) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            if case .string(let key) = entry.key { result[key] = entry.value }
        }
        return result
    }

    /// The elements of an array value (an `ay` as `.byte` values), or `nil` for other values.
    public var arrayElements: [DBusValue]? {
        switch self {
        case .array(_, let elements): elements
        case .bytes(let bytes): bytes.map(DBusValue.byte)
        default: nil
        }
    }
}

extension DBusValue: CustomStringConvertible, CustomDebugStringConvertible {
    /// The value's type and size, never its contents (strings and byte arrays carry secrets:
    /// passwords, item data), e.g. `ay[32]`, `s[12]`, `a{sv}[3]`.
    public var description: String {
        switch self {
        case .string(let string), .objectPath(let string), .signature(let string):
            "\(type.signature)[\(string.utf8.count)]"
        case .bytes(let bytes): "ay[\(bytes.count)]"
        case .array(_, let elements): "\(type.signature)[\(elements.count)]"
        case .dictionary(_, _, let entries): "\(type.signature)[\(entries.count)]"
        case .structure(let fields): "(\(fields.map(\.description).joined(separator: ", ")))"
        case .variant(let inner): "v<\(inner.description)>"
        default: type.signature
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }
}
