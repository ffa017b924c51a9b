/// A bus match rule: which broadcast messages a connection asks the bus to route to it
/// (`org.freedesktop.DBus.AddMatch`), and the same test applied to a received message.
///
/// ```swift
/// let sleep = DBusMatchRule(
///     sender: "org.freedesktop.login1", interface: "org.freedesktop.login1.Manager",
///     member: "PrepareForSleep", path: "/org/freedesktop/login1")
/// try await bus.addMatch(sleep)
/// for await signal in bus.signals where sleep.matches(signal) { … }
/// ```
///
/// A rule names a sender by the name the bus knows it by. The bus matches a well-known sender
/// name against whichever connection owns that name when the message is sent; ``matches(_:)``
/// cannot (a message carries only its sender's unique name), so it compares a well-known sender
/// with nothing; ``matches(_:senderOwner:)`` compares it with the name's owner, which the caller
/// follows (`DBusConnection.nameOwner(of:)` in DBusNIO). Only broadcasts are filtered by the bus: a signal
/// addressed to a connection reaches it whatever its rules say, from any sender.
public struct DBusMatchRule: Hashable, Sendable, CustomStringConvertible {
    /// The message type (`type=`); `.signal` by default.
    public var type: DBusMessage.MessageType?
    /// The sender (`sender=`): a unique or well-known bus name.
    public var sender: String?
    /// The interface (`interface=`).
    public var interface: String?
    /// The member (`member=`).
    public var member: String?
    /// The object path (`path=`).
    public var path: String?
    /// String arguments the message must carry, by index (`argN=`, N from 0 to 63).
    public var arguments: [Int: String]

    /// A rule from its keys; `nil` keys match anything.
    public init(
        type: DBusMessage.MessageType? = .signal,
        sender: String? = nil,
        interface: String? = nil,
        member: String? = nil,
        path: String? = nil,
        arguments: [Int: String] = [:]
    ) {
        self.type = type
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.arguments = arguments
    }

    /// The bus driver's `NameOwnerChanged(s name, s old_owner, s new_owner)` for one name: how a
    /// connection learns that a service it trusts has a new owner, or none.
    public static func nameOwnerChanged(of name: String) -> DBusMatchRule {
        DBusMatchRule(
            sender: DBusMessage.busDriverName, interface: DBusMessage.busDriverName,
            member: "NameOwnerChanged", path: DBusMessage.busDriverPath, arguments: [0: name])
    }

    /// The rule in the bus's syntax, e.g. `type='signal',member='Lock'`; an apostrophe in a
    /// value is written `'\''`, as the specification asks.
    public var description: String {
        var pairs: [(String, String)] = []
        if let type { pairs.append(("type", Self.typeName(type))) }
        if let sender { pairs.append(("sender", sender)) }
        if let interface { pairs.append(("interface", interface)) }
        if let member { pairs.append(("member", member)) }
        if let path { pairs.append(("path", path)) }
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { pairs.append(("arg\(index)", value)) }
        return pairs.map { "\($0.0)=\(Self.quote($0.1))" }.joined(separator: ",")
    }

    /// Whether `message` satisfies every key of the rule. A unique ``sender``, or the bus
    /// driver's name, must equal the message's sender; another well-known name never matches
    /// (see the type's discussion).
    public func matches(_ message: DBusMessage) -> Bool {
        if let type, message.type != type { return false }
        if let sender {
            // The bus driver's messages carry its well-known name; others carry a unique name.
            let comparable = sender.hasPrefix(":") || sender == DBusMessage.busDriverName
            guard comparable, message.sender == sender else { return false }
        }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let path, message.path != path { return false }
        for (index, value) in arguments {
            guard index < message.body.count, case .string(let argument) = message.body[index], argument == value
            else { return false }
        }
        return true
    }

    /// Whether `message` satisfies the rule, a well-known ``sender`` standing for `owner`: the
    /// unique name that owns that name now, as the caller follows it
    /// (`DBusConnection.nameOwner(of:)` in DBusNIO, then ``nameOwnerChanged(of:)``). With `owner` `nil`
    /// (nobody owns the name) nothing matches. A unique sender, or none, is compared as by
    /// ``matches(_:)``.
    public func matches(_ message: DBusMessage, senderOwner owner: String?) -> Bool {
        guard let sender, !sender.hasPrefix(":"), sender != DBusMessage.busDriverName else {
            return matches(message)
        }
        guard let owner, message.sender == owner else { return false }
        var anySender = self
        anySender.sender = nil
        return anySender.matches(message)
    }

    /// Checks the rule before it is sent to the bus.
    package func validate() throws {
        let namesValid =
            (sender.map(DBusNames.isValidBusName) ?? true)
            && (interface.map(DBusNames.isValidInterfaceName) ?? true)
            && (member.map(DBusNames.isValidMemberName) ?? true) && (path.map(DBusNames.isValidObjectPath) ?? true)
        guard namesValid else { throw DBusError(.invalidName, "invalid name in match rule") }
        guard arguments.keys.allSatisfy({ (0...63).contains($0) }) else {
            throw DBusError(.invalidName, "match rule argument index out of 0...63")
        }
    }

    private static func typeName(_ type: DBusMessage.MessageType) -> String {
        switch type {
        case .methodCall: "method_call"
        case .methodReturn: "method_return"
        case .error: "error"
        case .signal: "signal"
        }
    }

    private static func quote(_ value: String) -> String {
        "'" + value.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}

extension DBusAddress {
    /// The system bus's socket when the environment names none.
    public static let defaultSystemBus = DBusAddress.unixPath("/run/dbus/system_bus_socket")

    /// The system bus's addresses: `DBUS_SYSTEM_BUS_ADDRESS`, else
    /// `unix:path=/run/dbus/system_bus_socket`.
    ///
    /// - Parameter environment: the environment to read (pass `ProcessInfo`'s in production).
    /// - Throws: ``DBusError`` `.invalidAddress` when the variable is malformed.
    public static func systemBus(environment: [String: String]) throws -> [DBusAddress] {
        if let value = environment["DBUS_SYSTEM_BUS_ADDRESS"], !value.isEmpty { return try parseList(value) }
        return [defaultSystemBus]
    }
}
