import DBusWire

/// `org.keychainlinux.SecretService1`, which the agent serves beside ``AgentInterface`` on its
/// object (``AgentInterface/objectPath``): how a `keychaind --secret-service` that the bus
/// activated while an agent already served the socket hands the session bus over to that agent,
/// rather than failing (docs/secret-service.md, "Starting it"). Declared once: `keychaind` serves it and calls it with
/// ``serve``.
public enum SecretServiceHandoffInterface {
    /// The interface name.
    public static let name = "org.keychainlinux.SecretService1"

    /// `Serve(s address, b replace) → b served`: serve the Secret Service on the session bus at
    /// `address` (`""`: the agent's own), taking the name from its owner when `replace`; whether
    /// the agent serves it (already, or now). For the user's own programs only
    /// (`org.freedesktop.DBus.Error.AccessDenied` for any other caller).
    public static let serve = DBusMethodDeclaration<ServeArguments, Served>("Serve", interface: name)

    /// `s address, b replace`.
    public struct ServeArguments: DBusArguments, Equatable {
        /// The session bus's address; `""` for the agent's own.
        public var address = ""
        /// Whether to take the name `org.freedesktop.secrets` from its owner.
        public var replace = false
        /// Placeholder arguments.
        public init() {}
        /// The arguments for the bus at `address`.
        public init(address: String, replace: Bool) {
            self.address = address
            self.replace = replace
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("address", &address, .string)
            try fields.field("replace", &replace, .boolean)
        }
    }

    /// `b served`.
    public struct Served: DBusArguments, Equatable {
        /// Whether the agent serves the Secret Service.
        public var served = false
        /// Placeholder arguments.
        public init() {}
        /// The reply `served`.
        public init(served: Bool) { self.served = served }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("served", &served, .boolean)
        }
    }
}
