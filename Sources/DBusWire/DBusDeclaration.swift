/// How one Swift type travels as one D-Bus argument: its type, its value, and its two
/// decodings (from a ``DBusValue``, or straight from the wire).
///
/// ```swift
/// try fields.field("keychain", &keychain, .string)
/// ```
public struct DBusCodec<Value>: Sendable {
    /// The argument's D-Bus type.
    public let type: DBusType
    /// The value of `Value` as D-Bus holds it (of ``type``).
    public let encode: @Sendable (Value) -> DBusValue
    /// `Value` from a ``DBusValue`` of ``type`` (its type is checked before).
    public let decode: @Sendable (DBusValue) throws -> Value
    /// `Value` read straight from a body, where a value of ``type`` is next.
    public let read: @Sendable (inout DBusBodyReader) throws -> Value

    /// A codec from its parts.
    /// - Parameters:
    ///   - type: The D-Bus type.
    ///   - encode: The value as D-Bus holds it.
    ///   - decode: The Swift value from a D-Bus value of `type`; throws for one it refuses.
    ///   - read: The Swift value from the wire; by default, the D-Bus value read and decoded.
    @inlinable
    public init(
        _ type: DBusType, encode: @escaping @Sendable (Value) -> DBusValue,
        decode: @escaping @Sendable (DBusValue) throws -> Value,
        read: (@Sendable (inout DBusBodyReader) throws -> Value)? = nil
    ) {
        self.type = type
        self.encode = encode
        self.decode = decode
        self.read = read ?? { body in try decode(try body.read(type)) }
    }

    /// An array of values of `element`'s type (`aX`).
    @inlinable
    public static func array<Element>(of element: DBusCodec<Element>) -> DBusCodec<[Element]>
    where Value == [Element] {
        DBusCodec<[Element]>(
            .array(element.type),
            encode: { .array(element.type, $0.map(element.encode)) },
            decode: { value in
                guard case .array(_, let values) = value else { throw DBusCodecFailure.wrongType(element.type) }
                return try values.map(element.decode)
            },
            read: { body in
                var elements: [Element] = []
                try body.readArray(elementAlignment: element.type.alignment) { elements.append(try element.read(&$0)) }
                return elements
            })
    }
}

/// The reason a codec refuses a value of the wrong shape (the caller names the argument).
@usableFromInline
enum DBusCodecFailure: Error {
    case wrongType(DBusType)
}

extension DBusCodec where Value == String {
    /// A string (`s`).
    @inlinable
    public static var string: Self {
        Self(
            .string, encode: { .string($0) },
            decode: { value in
                guard case .string(let string) = value else { throw DBusCodecFailure.wrongType(.string) }
                return string
            }, read: { try $0.readString() })
    }
}

extension DBusCodec where Value == Bool {
    /// A boolean (`b`).
    @inlinable
    public static var boolean: Self {
        Self(
            .boolean, encode: { .boolean($0) },
            decode: { value in
                guard case .boolean(let flag) = value else { throw DBusCodecFailure.wrongType(.boolean) }
                return flag
            }, read: { try $0.readBoolean() })
    }
}

extension DBusCodec where Value == UInt8 {
    /// A byte (`y`).
    @inlinable
    public static var byte: Self {
        Self(
            .byte, encode: { .byte($0) },
            decode: { value in
                guard case .byte(let byte) = value else { throw DBusCodecFailure.wrongType(.byte) }
                return byte
            })
    }
}

extension DBusCodec where Value == UInt32 {
    /// An unsigned 32-bit integer (`u`).
    @inlinable
    public static var uint32: Self {
        Self(
            .uint32, encode: { .uint32($0) },
            decode: { value in
                guard case .uint32(let number) = value else { throw DBusCodecFailure.wrongType(.uint32) }
                return number
            })
    }
}

extension DBusCodec where Value == [UInt8] {
    /// Bytes (`ay`).
    @inlinable
    public static var bytes: Self {
        Self(
            .array(.byte), encode: { .bytes($0) },
            decode: { value in
                switch value {
                case .bytes(let bytes): return bytes
                case .array(.byte, let values):
                    return try values.map {
                        guard case .byte(let byte) = $0 else { throw DBusCodecFailure.wrongType(.byte) }
                        return byte
                    }
                default: throw DBusCodecFailure.wrongType(.array(.byte))
                }
            })
    }
}

extension DBusCodec where Value == [String] {
    /// Strings (`as`).
    @inlinable
    public static var strings: Self { .array(of: .string) }
}

extension DBusCodec where Value == DBusValue {
    /// A value of `type` as it is, for a type no Swift type stands for (its type is checked
    /// before it is decoded).
    @inlinable
    public static func value(of type: DBusType) -> Self {
        Self(type, encode: { $0 }, decode: { $0 }, read: { try $0.read(type) })
    }

    /// A variant (`v`): the value inside it.
    @inlinable
    public static var variant: Self {
        Self(
            .variant, encode: { .variant($0) },
            decode: { value in
                guard case .variant(let inner) = value else { throw DBusCodecFailure.wrongType(.variant) }
                return inner
            })
    }
}

extension DBusCodec where Value == String {
    /// An object path (`o`), its validity checked by the wire layer.
    @inlinable
    public static var objectPath: Self {
        Self(
            .objectPath, encode: { .objectPath($0) },
            decode: { value in
                guard case .objectPath(let path) = value else { throw DBusCodecFailure.wrongType(.objectPath) }
                return path
            })
    }
}

extension DBusCodec where Value == [String] {
    /// Object paths (`ao`).
    @inlinable
    public static var objectPaths: Self { .array(of: .objectPath) }
}

extension DBusCodec where Value == [String: String] {
    /// A dictionary of strings (`a{ss}`), written in the order of its keys; a key given twice
    /// keeps its last value.
    @inlinable
    public static var stringDictionary: Self {
        Self(
            .dictionary(key: .string, value: .string),
            encode: { map in
                .dictionary(
                    key: .string, value: .string,
                    map.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .string($0.value)) })
            },
            decode: { value in
                guard case .dictionary(.string, .string, let entries) = value else {
                    throw DBusCodecFailure.wrongType(.dictionary(key: .string, value: .string))
                }
                var map: [String: String] = [:]
                for entry in entries {
                    guard let key = entry.key.stringValue, let value = entry.value.stringValue else {
                        throw DBusCodecFailure.wrongType(.dictionary(key: .string, value: .string))
                    }
                    map[key] = value
                }
                return map
            })
    }
}

extension DBusCodec where Value == [String: DBusValue] {
    /// A dictionary of strings to variants (`a{sv}`), the variants unwrapped; written in the
    /// order of its keys.
    @inlinable
    public static var stringVariantDictionary: Self {
        Self(
            .dictionary(key: .string, value: .variant), encode: { .stringVariantDictionary($0) },
            decode: { value in
                guard case .dictionary(.string, .variant, let entries) = value else {
                    throw DBusCodecFailure.wrongType(.dictionary(key: .string, value: .variant))
                }
                var dictionary: [String: DBusValue] = [:]
                for entry in entries {
                    guard let key = entry.key.stringValue, case .variant(let inner) = entry.value else {
                        throw DBusCodecFailure.wrongType(.dictionary(key: .string, value: .variant))
                    }
                    dictionary[key] = inner
                }
                return dictionary
            })
    }
}

/// What a ``DBusArguments`` type shows its fields to: each visitor writes them out, reads them
/// in, or lists their names and types.
public protocol DBusFieldVisitor {
    /// One argument: its name, its value (read, or replaced), and how it travels.
    mutating func field<Value>(_ name: String, _ value: inout Value, _ codec: DBusCodec<Value>) throws

    /// An optional value travelling as two arguments: a flag `flag` saying whether it is there,
    /// then `name`, `absent` in its place when it is not (passwords, so that a password is
    /// never text). What follows a false flag is not decoded.
    mutating func field<Value>(
        _ flag: String, _ name: String, _ value: inout Value?, _ codec: DBusCodec<Value>, absent: Value
    ) throws
}

extension DBusFieldVisitor {
    /// The flag, then the value or `absent` (how values are written and listed).
    @inlinable
    public mutating func field<Value>(
        _ flag: String, _ name: String, _ value: inout Value?, _ codec: DBusCodec<Value>, absent: Value
    ) throws {
        var present = value != nil
        var inner = value ?? absent
        try field(flag, &present, .boolean)
        try field(name, &inner, codec)
        value = present ? inner : nil
    }
}

/// The typed arguments of a D-Bus method call or reply: one list of named fields, from which
/// their signature (and introspection), their values and both decodings follow, so that a
/// method's layout is written once.
///
/// ```swift
/// struct Rename: DBusArguments {
///     var path = ""
///     var name = ""
///     init() {}
///     mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
///         try fields.field("path", &path, .string)
///         try fields.field("name", &name, .string)
///     }
/// }
/// ```
///
/// Decoding checks the count and type of every argument: a malformed list is refused with a
/// ``DBusError`` `.typeMismatch` naming the argument, never read by position.
public protocol DBusArguments: Sendable {
    /// Arguments at placeholder values, which decoding replaces.
    init()
    /// Shows each field, in order, to `fields`.
    mutating func fields(_ fields: inout some DBusFieldVisitor) throws
}

extension DBusArguments {
    /// The arguments' names and types, in order.
    @inlinable
    public static var arguments: [DBusArgument] {
        var lister = ArgumentLister()
        var placeholder = Self()
        try? placeholder.fields(&lister)
        return lister.arguments
    }

    /// The arguments as D-Bus values, in order.
    @inlinable
    public var values: [DBusValue] {
        var writer = ValueWriter()
        var copy = self
        try? copy.fields(&writer)
        return writer.values
    }

    /// Arguments from `values`, which must have the types of ``arguments``.
    /// - Throws: ``DBusError`` `.typeMismatch` for a wrong count or type (naming the argument,
    ///   never its value), or what a codec throws for a value it refuses.
    @inlinable
    public init(decoding values: [DBusValue]) throws {
        self.init()
        // Every type first: no value is decoded from a list that is not what it should be.
        var checker = TypeChecker(count: values.count) { index, type in values[index].hasType(type) }
        try fields(&checker)
        try checker.finish()
        var reader = ValueReader(values: values)
        try fields(&reader)
    }

    /// Arguments read straight from a body of their signature, which is read to its end.
    /// - Throws: ``DBusError`` `.typeMismatch` for a body of another signature;
    ///   `.malformedMessage` for bytes that do not form it; what a codec throws.
    @inlinable
    public init(reading body: inout DBusBodyReader) throws {
        self.init()
        let types = body.signature.types
        var checker = TypeChecker(count: types.count) { index, type in types[index] == type }
        try fields(&checker)
        try checker.finish()
        var reader = WireReader(body: body)
        try fields(&reader)
        try reader.body.finish()
        body = reader.body
    }
}

/// No arguments: a call or reply with an empty body.
public struct DBusNoArguments: DBusArguments, Hashable {
    /// No arguments.
    public init() {}
    /// Shows no field.
    public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {}
}

/// Lists names and types.
@usableFromInline
struct ArgumentLister: DBusFieldVisitor {
    @usableFromInline var arguments: [DBusArgument] = []
    @inlinable init() {}
    @inlinable mutating func field<Value>(_ name: String, _ value: inout Value, _ codec: DBusCodec<Value>) {
        arguments.append(DBusArgument(name, codec.type))
    }
}

/// Writes values.
@usableFromInline
struct ValueWriter: DBusFieldVisitor {
    @usableFromInline var values: [DBusValue] = []
    @inlinable init() {}
    @inlinable mutating func field<Value>(_ name: String, _ value: inout Value, _ codec: DBusCodec<Value>) {
        values.append(codec.encode(value))
    }
}

/// Checks the count and the type of every argument, decoding nothing.
@usableFromInline
struct TypeChecker: DBusFieldVisitor {
    /// How many arguments there are.
    @usableFromInline let count: Int
    /// Whether the argument at an index has a type.
    @usableFromInline let matches: (Int, DBusType) -> Bool
    @usableFromInline var index = 0

    @inlinable init(count: Int, matches: @escaping (Int, DBusType) -> Bool) {
        self.count = count
        self.matches = matches
    }

    @inlinable mutating func field<Value>(_ name: String, _ value: inout Value, _ codec: DBusCodec<Value>) throws {
        defer { index += 1 }
        guard index < count else { throw DBusError(.typeMismatch, "argument \(index + 1) (\(name)) is missing") }
        guard matches(index, codec.type) else {
            throw DBusError(.typeMismatch, "argument \(index + 1) (\(name)) must be \(codec.type.signature)")
        }
    }

    /// Refuses arguments beyond the fields.
    @inlinable func finish() throws {
        guard index == count else { throw DBusError(.typeMismatch, "\(count) arguments where \(index) are expected") }
    }
}

/// Reads values whose types are checked.
@usableFromInline
struct ValueReader: DBusFieldVisitor {
    @usableFromInline let values: [DBusValue]
    @usableFromInline var index = 0

    @inlinable init(values: [DBusValue]) { self.values = values }

    @inlinable mutating func field<Value>(
        _ flag: String, _ name: String, _ value: inout Value?, _ codec: DBusCodec<Value>, absent: Value
    ) throws {
        var present = false
        try field(flag, &present, .boolean)
        guard present else {
            index += 1  // its type is checked; it is not decoded
            value = nil
            return
        }
        var inner = absent
        try field(name, &inner, codec)
        value = inner
    }

    @inlinable mutating func field<Value>(_ name: String, _ value: inout Value, _ codec: DBusCodec<Value>) throws {
        defer { index += 1 }
        do {
            value = try codec.decode(values[index])
        } catch DBusCodecFailure.wrongType(let type) {
            throw DBusError(
                .typeMismatch, "argument \(index + 1) (\(name)) holds a value that is not \(type.signature)")
        }
    }
}

/// Reads from the wire, the body's signature checked.
@usableFromInline
struct WireReader: DBusFieldVisitor {
    @usableFromInline var body: DBusBodyReader
    @usableFromInline var index = 0

    @inlinable init(body: DBusBodyReader) { self.body = body }

    @inlinable mutating func field<Value>(
        _ flag: String, _ name: String, _ value: inout Value?, _ codec: DBusCodec<Value>, absent: Value
    ) throws {
        var present = false
        try field(flag, &present, .boolean)
        guard present else {
            _ = try body.read(codec.type)  // well-formed, not decoded
            index += 1
            value = nil
            return
        }
        var inner = absent
        try field(name, &inner, codec)
        value = inner
    }

    @inlinable mutating func field<Value>(_ name: String, _ value: inout Value, _ codec: DBusCodec<Value>) throws {
        defer { index += 1 }
        do {
            value = try codec.read(&body)
        } catch DBusCodecFailure.wrongType(let type) {
            throw DBusError(
                .typeMismatch, "argument \(index + 1) (\(name)) holds a value that is not \(type.signature)")
        }
    }
}

/// A method as introspection and dispatch see it, whatever its Swift types.
public struct DBusMethodDescription: Hashable, Sendable {
    /// The interface it belongs to.
    public var interface: String
    /// The member name.
    public var name: String
    /// The arguments a call carries.
    public var inputs: [DBusArgument]
    /// The arguments its reply carries.
    public var outputs: [DBusArgument]
    /// Whether a server may answer it on the event loop that read it (a quick read), declining
    /// to a task when it cannot; a property of the method, not a second handler.
    public var answersOnEventLoop: Bool
}

/// One D-Bus method, declared once, as zbus declares an interface: its name, its typed
/// arguments and reply, and whether it may be answered on the event loop. A client encodes
/// its calls and decodes its replies from it; a server decodes its calls, serves it with one
/// handler, and introspects it from it.
///
/// ```swift
/// static let rename = DBusMethodDeclaration<Rename, DBusNoArguments>("Rename", interface: "org.example.Files1")
/// let message = rename.call(Rename(path: "/a", name: "b"), path: "/org/example/Files")
/// ```
public struct DBusMethodDeclaration<Arguments: DBusArguments, Reply: DBusArguments>: Sendable {
    /// The method as introspection and dispatch see it.
    public let description: DBusMethodDescription

    /// The member name.
    public var name: String { description.name }
    /// The interface it belongs to.
    public var interface: String { description.interface }
    /// The arguments a call carries.
    public var inputs: [DBusArgument] { description.inputs }
    /// The arguments its reply carries.
    public var outputs: [DBusArgument] { description.outputs }

    /// A method `name` of `interface`.
    /// - Parameters:
    ///   - name: The member name.
    ///   - interface: The interface name.
    ///   - answersOnEventLoop: Whether a server may answer it where it was read (a quick read),
    ///     declining to a task when it cannot.
    public init(_ name: String, interface: String, answersOnEventLoop: Bool = false) {
        description = DBusMethodDescription(
            interface: interface, name: name, inputs: Arguments.arguments, outputs: Reply.arguments,
            answersOnEventLoop: answersOnEventLoop)
    }

    /// The call message carrying `arguments` to the object at `path`.
    @inlinable
    public func call(_ arguments: Arguments, path: String, destination: String? = nil) -> DBusMessage {
        .methodCall(path: path, interface: interface, member: name, destination: destination, body: arguments.values)
    }

    /// A reply read from its body (a method return's).
    /// - Throws: ``DBusError`` for a body of another signature or malformed bytes; what a
    ///   codec throws for a value it refuses.
    @inlinable
    public func reply(reading body: inout DBusBodyReader) throws -> Reply {
        try Reply(reading: &body)
    }

    /// A reply from its values (a method return's body, decoded).
    /// - Throws: ``DBusError`` `.typeMismatch` for values of another count or type; what a
    ///   codec throws for a value it refuses.
    @inlinable
    public func reply(decoding values: [DBusValue]) throws -> Reply {
        try Reply(decoding: values)
    }
}
