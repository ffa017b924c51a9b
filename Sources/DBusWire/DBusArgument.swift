/// A named, typed argument of a method or signal.
public struct DBusArgument: Hashable, Sendable {
    /// The argument's name, shown by introspection.
    public var name: String?
    /// The argument's type.
    public var type: DBusType

    /// An argument with a name and a type.
    public init(_ name: String?, _ type: DBusType) {
        self.name = name
        self.type = type
    }
}
