import DBusWire
/// Routes incoming method calls to an object tree and implements the standard interfaces
/// `org.freedesktop.DBus.Peer`, `Introspectable` and `Properties`.
struct DBusDispatcher: Sendable {
    static let peer = "org.freedesktop.DBus.Peer"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let properties = "org.freedesktop.DBus.Properties"

    let objects: DBusObjectTree
    let machineID: String
    /// Whether `org.freedesktop.DBus.Hello` is answered (peer-to-peer servers: `gdbus` and
    /// `busctl --address` say Hello even to a peer).
    var answersHello = false

    /// The reply to `call`, or `nil` when the caller asked for none.
    func handle(_ call: DBusMessage, descriptors: DBusReceivedDescriptors? = nil, connection: DBusConnection) async
        -> DBusMessage?
    {
        do {
            let body = try await DBusCurrentCall.$message.withValue(call) {
                try await DBusCurrentCall.$descriptors.withValue(descriptors) {
                    try await route(call, connection: connection)
                }
            }
            return Self.reply(to: call, .success(body))
        } catch {
            return Self.reply(to: call, .failure(error))
        }
    }

    /// What to do with the call `received` on the event loop, its method looked up once: its
    /// ``DBusMethod/wireHandler`` answers from the arguments' wire form (`.answered(reply)`,
    /// `reply` `nil` when the caller asked for none); `.malformed` when the body is not what its
    /// signature says (the connection is closed, as for any malformed message); otherwise
    /// `.later(call)`, the decoded call for ``handle(_:connection:)`` in a task. Only a call
    /// naming its interface, to a registered method whose signature matches, is tried on the
    /// event loop.
    func handleImmediately(_ received: DBusReceivedMessage, connection: DBusConnection) -> ImmediateOutcome {
        var call = received.header
        let method = immediateMethod(call)
        if let method, let wire = method.wireHandler, method.takes(received.body.signature) {
            var body = received.body
            let answer = Result {
                try wire(
                    DBusMethodCall(message: call, connection: connection, descriptors: received.descriptors), &body)
            }
            if case .failure(let error as DBusError) = answer, Self.isWireFailure(error) { return .malformed }
            if let outcome = Self.outcome(of: call, method, { try answer.get() }) { return outcome }
        }
        var body = received.body
        guard let values = try? body.readAll() else { return .malformed }
        call.body = values
        return .later(call)
    }

    /// The method `call` names when it may be answered on the event loop: one naming its
    /// interface, registered, outside the standard interfaces.
    private func immediateMethod(_ call: DBusMessage) -> DBusMethod? {
        guard let name = call.interface, name != Self.peer, name != Self.introspectable, name != Self.properties,
            let member = call.member, let interface = objects.interfaces(at: call.path ?? "/")?[name]
        else { return nil }
        return interface.methods.first { $0.name == member }
    }

    /// The answer of a wire handler: its values, checked against the method's outputs, or
    /// its error; `nil` when it declined.
    private static func outcome(
        of call: DBusMessage, _ method: DBusMethod, _ answer: () throws -> [DBusValue]?
    ) -> ImmediateOutcome? {
        let result: [DBusValue]
        do {
            guard let values = try answer() else { return nil }
            result = values
        } catch {
            return .answered(Self.reply(to: call, .failure(error)))
        }
        guard DBusValue.have(result, typesOf: method.outputs) else {
            let error = DBusError.method(DBusErrorName.failed, "the method returned values of the wrong types")
            return .answered(Self.reply(to: call, .failure(error)))
        }
        return .answered(Self.reply(to: call, .success(result)))
    }

    /// Whether `error` says the bytes themselves are bad (not what the method thought of them).
    static func isWireFailure(_ error: DBusError) -> Bool {
        error.code == .malformedMessage || error.code == .limitExceeded || error.code == .invalidSignature
    }

    /// A call answered on the event loop, with its reply (`nil`: none was asked for); one whose
    /// body is malformed; or one for a task, decoded.
    enum ImmediateOutcome {
        case answered(DBusMessage?)
        case malformed
        case later(DBusMessage)
    }

    /// The method return or error for `call`, or `nil` when the caller asked for no reply.
    private static func reply(to call: DBusMessage, _ result: Result<[DBusValue], any Error>) -> DBusMessage? {
        guard !call.flags.contains(.noReplyExpected) else { return nil }
        switch result {
        case .success(let body):
            return .methodReturn(to: call, body: body)
        case .failure(let error as DBusError) where error.errorName != nil:
            var message = DBusMessage.error(
                to: call, name: error.errorName ?? DBusErrorName.failed, message: error.message)
            message.body += error.details
            return message
        case .failure:
            return .error(to: call, name: DBusErrorName.failed, message: "the method failed")
        }
    }

    private func route(_ call: DBusMessage, connection: DBusConnection) async throws -> [DBusValue] {
        let path = call.path ?? "/"
        let member = call.member ?? ""
        let registered = objects.interfaces(at: path)
        if answersHello, call.interface == DBusMessage.busDriverName, member == "Hello",
            path == DBusMessage.busDriverPath
        {
            return [.string(connection.state.uniqueName.withLock { $0 } ?? ":1.0")]
        }
        switch call.interface {
        case Self.peer?: return try peerMethod(call)
        case Self.introspectable?: return try introspect(call, path: path, registered: registered)
        case Self.properties?:
            guard let registered else { throw unknownObject(path) }
            return try await propertiesMethod(call, registered: registered, connection: connection)
        case let name?:
            guard let registered else { throw unknownObject(path) }
            guard let interface = registered[name] else {
                throw DBusError.method(DBusErrorName.unknownInterface, "no interface \(name) at \(path)")
            }
            guard let method = interface.methods.first(where: { $0.name == member }) else {
                throw unknownMethod(call)
            }
            return try await invoke(method, call, connection)
        case nil:
            return try await routeByMember(call, member: member, registered: registered, connection: connection)
        }
    }

    /// Dispatches a call without INTERFACE by member name: exported interfaces first, then the standard ones.
    private func routeByMember(
        _ call: DBusMessage,
        member: String,
        registered: [String: DBusInterface]?,
        connection: DBusConnection
    ) async throws -> [DBusValue] {
        let interfaces = (registered ?? [:]).values.sorted { $0.name < $1.name }
        if let method = interfaces.lazy.compactMap({ $0.methods.first { $0.name == member } }).first {
            return try await invoke(method, call, connection)
        }
        switch member {
        case "Ping", "GetMachineId": return try peerMethod(call)
        case "Introspect": return try introspect(call, path: call.path ?? "/", registered: registered)
        case "Get", "GetAll", "Set":
            guard let registered else { throw unknownObject(call.path ?? "/") }
            return try await propertiesMethod(call, registered: registered, connection: connection)
        default:
            throw registered == nil ? unknownObject(call.path ?? "/") : unknownMethod(call)
        }
    }

    private func invoke(_ method: DBusMethod, _ call: DBusMessage, _ connection: DBusConnection) async throws
        -> [DBusValue]
    {
        guard DBusValue.have(call.body, typesOf: method.inputs) else {
            throw DBusError.method(
                DBusErrorName.invalidArgs, "expected arguments (\(method.inputSignature)), got (\(call.signature))")
        }
        let result = try await method.handler(
            DBusMethodCall(message: call, connection: connection, descriptors: DBusCurrentCall.descriptors))
        guard DBusValue.have(result, typesOf: method.outputs) else {
            throw DBusError.method(DBusErrorName.failed, "the method returned values of the wrong types")
        }
        return result
    }

    private func unknownObject(_ path: String) -> DBusError {
        DBusError.method(DBusErrorName.unknownObject, "no object at \(path)")
    }

    private func unknownMethod(_ call: DBusMessage) -> DBusError {
        DBusError.method(
            DBusErrorName.unknownMethod,
            "no method \(call.member ?? "") on interface \(call.interface ?? "(none)") with signature \(call.signature)"
        )
    }

    private func expect(_ call: DBusMessage, _ signature: String) throws {
        guard call.signature.rawValue == signature else {
            throw DBusError.method(
                DBusErrorName.invalidArgs, "expected arguments (\(signature)), got (\(call.signature))")
        }
    }

    // MARK: org.freedesktop.DBus.Peer

    private func peerMethod(_ call: DBusMessage) throws -> [DBusValue] {
        switch call.member {
        case "Ping":
            try expect(call, "")
            return []
        case "GetMachineId":
            try expect(call, "")
            return [.string(machineID)]
        default: throw unknownMethod(call)
        }
    }

    // MARK: org.freedesktop.DBus.Introspectable

    private func introspect(_ call: DBusMessage, path: String, registered: [String: DBusInterface]?) throws
        -> [DBusValue]
    {
        guard call.member == "Introspect" else { throw unknownMethod(call) }
        try expect(call, "")
        let children = objects.children(of: path)
        guard registered != nil || !children.isEmpty || path == "/" else { throw unknownObject(path) }
        return [.string(DBusIntrospection.xml(interfaces: registered.map { Array($0.values) }, children: children))]
    }

    // MARK: org.freedesktop.DBus.Properties

    private func propertiesMethod(
        _ call: DBusMessage,
        registered: [String: DBusInterface],
        connection: DBusConnection
    ) async throws -> [DBusValue] {
        switch call.member {
        case "Get":
            try expect(call, "ss")
            let property = try lookUpProperty(call, registered)
            return [.variant(try await read(property.1, connection))]
        case "GetAll":
            try expect(call, "s")
            return [try await getAll(call, registered, connection)]
        case "Set":
            try expect(call, "ssv")
            try await setProperty(call, registered, connection)
            return []
        default: throw unknownMethod(call)
        }
    }

    private func lookUpProperty(_ call: DBusMessage, _ registered: [String: DBusInterface]) throws
        -> (DBusInterface, DBusProperty)
    {
        guard let interfaceName = call.body[0].stringValue, let name = call.body[1].stringValue else {
            throw DBusError.method(DBusErrorName.invalidArgs, "expected (ss)")
        }
        guard let interface = registered[interfaceName] else {
            throw DBusError.method(DBusErrorName.unknownInterface, "no interface \(interfaceName)")
        }
        guard let property = interface.properties.first(where: { $0.name == name }) else {
            throw DBusError.method(DBusErrorName.unknownProperty, "no property \(name) on \(interfaceName)")
        }
        return (interface, property)
    }

    private func read(_ property: DBusProperty, _ connection: DBusConnection) async throws -> DBusValue {
        guard let get = property.get else {
            throw DBusError.method(DBusErrorName.invalidArgs, "property \(property.name) is write-only")
        }
        let value = try await get(connection)
        guard value.type == property.type else {
            throw DBusError.method(DBusErrorName.failed, "property \(property.name) has the wrong type")
        }
        return value
    }

    private func getAll(_ call: DBusMessage, _ registered: [String: DBusInterface], _ connection: DBusConnection)
        async throws -> DBusValue
    {
        let interfaceName = call.body[0].stringValue ?? ""
        let interfaces: [DBusInterface]
        if interfaceName.isEmpty {
            interfaces = registered.values.sorted { $0.name < $1.name }
        } else if let interface = registered[interfaceName] {
            interfaces = [interface]
        } else {
            throw DBusError.method(DBusErrorName.unknownInterface, "no interface \(interfaceName)")
        }
        var entries: [DBusDictEntry] = []
        for property in interfaces.flatMap(\.properties) where property.get != nil {
            entries.append(DBusDictEntry(.string(property.name), .variant(try await read(property, connection))))
        }
        return .dictionary(key: .string, value: .variant, entries)
    }

    private func setProperty(_ call: DBusMessage, _ registered: [String: DBusInterface], _ connection: DBusConnection)
        async throws
    {
        let (interface, property) = try lookUpProperty(call, registered)
        guard let set = property.set else {
            throw DBusError.method(DBusErrorName.propertyReadOnly, "property \(property.name) is read-only")
        }
        guard case .variant(let value) = call.body[2], value.type == property.type else {
            throw DBusError.method(DBusErrorName.invalidArgs, "property \(property.name) has type \(property.type)")
        }
        try await set(value, connection)
        let changed = DBusMessage.propertiesChanged(
            path: call.path ?? "/", interface: interface.name, changed: [property.name: value])
        try? await connection.send(changed)
    }
}
