import DBusWire
import Synchronization

/// An incoming method call, as a method handler sees it.
public struct DBusMethodCall: Sendable {
    /// The call message.
    public var message: DBusMessage
    /// The connection it arrived on (to send signals, or read the peer's credentials).
    public var connection: DBusConnection
    /// The descriptors the call carried (its `h` arguments index them), on a connection made
    /// with ``DBusConnection/Configuration/receivesDescriptors``; `nil` otherwise.
    public var descriptors: DBusReceivedDescriptors? = nil

    /// The call's arguments.
    public var arguments: [DBusValue] { message.body }
    /// The caller's kernel credentials, on a server connection.
    public var peerCredentials: DBusPeerCredentials? { connection.peerCredentials }
}

/// A method that an exported interface offers.
public struct DBusMethod: Sendable {
    /// The member name.
    public var name: String
    /// The input arguments; a call must match their signature.
    public var inputs: [DBusArgument]
    /// The output arguments; the handler must return values of these types.
    public var outputs: [DBusArgument]
    /// Runs the method. Throw ``DBusError/method(_:_:)`` to reply with a specific D-Bus error.
    public var handler: @Sendable (DBusMethodCall) async throws -> [DBusValue]
    /// Answers the call at once, on the connection's event-loop thread, reading its arguments
    /// straight from the wire (a ``DBusBodyReader`` of the method's input signature), or returns
    /// `nil` to leave it to ``handler``, its arguments decoded as usual
    /// (``DBusMethodCall/arguments`` is empty here): for calls that take microseconds and never
    /// wait (a lookup in memory or in a cached file), which then cost no hand-off to another
    /// thread and back. A call it answers blocks the other connections of that event loop while
    /// it runs, so it must decline anything that may take long. A body that is not what its
    /// signature says (the reader throws ``DBusError`` `.malformedMessage` or `.limitExceeded`)
    /// closes the connection, as any malformed message does. A server whose method's declaration
    /// says ``DBusWire/DBusMethodDescription/answersOnEventLoop`` makes it from the same body
    /// as ``handler``: the fast path is a property of the declaration, not a second body.
    public var wireHandler: (@Sendable (DBusMethodCall, inout DBusBodyReader) throws -> [DBusValue]?)?

    /// The signature a call must have.
    var inputSignature: DBusSignature { DBusSignature(types: inputs.map(\.type)) }

    /// Whether `signature` is the inputs' signature (without building one).
    func takes(_ signature: DBusSignature) -> Bool {
        signature.types.count == inputs.count && zip(signature.types, inputs).allSatisfy { $0 == $1.type }
    }

    /// A method with its arguments and handler.
    /// - Parameters:
    ///   - name: The member name.
    ///   - inputs: The input arguments; a call must match their signature.
    ///   - outputs: The output arguments; the handlers must return values of these types.
    ///   - wireHandler: Answers quick calls on the event loop from their arguments' wire form,
    ///     or declines them (`nil`); see ``wireHandler``.
    ///   - handler: Runs every call the wire handler declines, in a task.
    public init(
        _ name: String,
        inputs: [DBusArgument] = [],
        outputs: [DBusArgument] = [],
        wireHandler: (@Sendable (DBusMethodCall, inout DBusBodyReader) throws -> [DBusValue]?)? = nil,
        handler: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.wireHandler = wireHandler
        self.handler = handler
    }
}

extension DBusMethod {
    /// The method `declaration` declares, served by one handler of its typed arguments and
    /// reply: its name, signature and introspection come from the declaration, and a call's
    /// arguments are decoded by field (``DBusWire/DBusArguments``).
    ///
    /// ```swift
    /// DBusMethod(Files.rename) { call, arguments in
    ///     try rename(arguments.path, to: arguments.name)
    ///     return DBusNoArguments()
    /// }
    /// ```
    ///
    /// The handler runs in a task, whatever the declaration says of the event loop (a server
    /// that answers quick calls there builds ``wireHandler`` from the same body, with
    /// ``init(_:inputs:outputs:wireHandler:handler:)``).
    /// - Parameters:
    ///   - declaration: The method.
    ///   - handler: Runs every call, in a task.
    public init<Arguments, Reply>(
        _ declaration: DBusMethodDeclaration<Arguments, Reply>,
        handler: @escaping @Sendable (DBusMethodCall, Arguments) async throws -> Reply
    ) {
        self.init(declaration.name, inputs: declaration.inputs, outputs: declaration.outputs) { call in
            try await handler(call, try Arguments(decoding: call.arguments)).values
        }
    }
}

/// A property of an exported interface, served through `org.freedesktop.DBus.Properties`.
public struct DBusProperty: Sendable {
    /// The property's name.
    public var name: String
    /// The property's type.
    public var type: DBusType
    /// Reads the value; `nil` for a write-only property.
    public var get: (@Sendable (DBusConnection) async throws -> DBusValue)?
    /// Writes the value; `nil` for a read-only property. A successful `Set` emits `PropertiesChanged`.
    public var set: (@Sendable (DBusValue, DBusConnection) async throws -> Void)?

    /// A property with its accessors.
    public init(
        _ name: String,
        type: DBusType,
        get: (@Sendable (DBusConnection) async throws -> DBusValue)?,
        set: (@Sendable (DBusValue, DBusConnection) async throws -> Void)? = nil
    ) {
        self.name = name
        self.type = type
        self.get = get
        self.set = set
    }

    /// The access string of introspection: `read`, `write` or `readwrite`.
    public var access: String {
        switch (get != nil, set != nil) {
        case (true, true): "readwrite"
        case (false, true): "write"
        default: "read"
        }
    }
}

/// A signal that an exported interface declares (for introspection).
public struct DBusSignalDescription: Hashable, Sendable {
    /// The member name.
    public var name: String
    /// The signal's arguments.
    public var arguments: [DBusArgument]

    /// A signal with its arguments.
    public init(_ name: String, arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An interface implemented by an exported object.
public struct DBusInterface: Sendable {
    /// The interface name, e.g. `org.example.Demo`.
    public var name: String
    /// Its methods.
    public var methods: [DBusMethod]
    /// Its properties.
    public var properties: [DBusProperty]
    /// Its signals.
    public var signals: [DBusSignalDescription]

    /// An interface with its members.
    public init(
        _ name: String,
        methods: [DBusMethod] = [],
        properties: [DBusProperty] = [],
        signals: [DBusSignalDescription] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    func validate() throws {
        guard DBusNames.isValidInterfaceName(name) else { throw DBusError(.invalidName, "invalid interface name") }
        let members = methods.map(\.name) + properties.map(\.name) + signals.map(\.name)
        guard members.allSatisfy(DBusNames.isValidMemberName) else {
            throw DBusError(.invalidName, "invalid member name in \(name)")
        }
    }
}

/// The objects a connection or server exports, by path and interface. Thread-safe; objects can
/// be registered and removed while connections are being served.
///
/// ```swift
/// let objects = DBusObjectTree()
/// try objects.register(DBusInterface("org.example.Demo", methods: [
///     DBusMethod("Echo", inputs: [.init("text", .string)], outputs: [.init("text", .string)]) { call in
///         call.arguments
///     },
/// ]), at: "/org/example/Demo")
/// ```
public final class DBusObjectTree: Sendable {
    private let objects = Mutex<[String: [String: DBusInterface]]>([:])

    /// An empty tree.
    public init() {}

    /// Exports `interface` on the object at `path`, replacing an interface of the same name.
    ///
    /// - Throws: ``DBusError`` `.invalidName` for an invalid path, interface or member name.
    public func register(_ interface: DBusInterface, at path: String) throws {
        guard DBusNames.isValidObjectPath(path) else { throw DBusError(.invalidName, "invalid object path") }
        try interface.validate()
        objects.withLock { $0[path, default: [:]][interface.name] = interface }
    }

    /// Removes one interface from the object at `path`, or the whole object when `interface` is `nil`.
    public func unregister(path: String, interface: String? = nil) {
        objects.withLock { objects in
            guard let interface else { return objects[path] = nil }
            objects[path]?[interface] = nil
            if objects[path]?.isEmpty == true { objects[path] = nil }
        }
    }

    /// The interfaces of the object at `path`, or `nil` when none is registered there.
    public func interfaces(at path: String) -> [String: DBusInterface]? {
        objects.withLock { $0[path] }
    }

    /// The names of the nodes directly below `path` that lead to registered objects, sorted.
    public func children(of path: String) -> [String] {
        let prefix = path == "/" ? "/" : path + "/"
        let names = objects.withLock { objects in
            objects.keys.compactMap { key -> Substring? in
                guard key.hasPrefix(prefix), key.count > prefix.count else { return nil }
                return key.dropFirst(prefix.count).split(separator: "/").first
            }
        }
        return Set(names.map(String.init)).sorted()
    }
}

/// The call being served, for code that the dispatcher runs without a ``DBusMethodCall``:
/// property accessors read `DBusCurrentCall.message?.sender` to tell who is asking.
public enum DBusCurrentCall {
    /// The incoming message whose method, property `Get`, `GetAll` or `Set` is running;
    /// `nil` outside a dispatched call.
    @TaskLocal public static var message: DBusMessage?
    /// The descriptors that message carried, on a connection that receives them.
    @TaskLocal static var descriptors: DBusReceivedDescriptors?
}
