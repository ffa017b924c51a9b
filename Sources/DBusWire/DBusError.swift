/// The one error type of `DBusWire`.
///
/// An error names what went wrong (`code`), says so in words (`message`) and, for an error
/// that came from or goes to the other side of a connection, carries the D-Bus error name
/// (`org.freedesktop.DBus.Error.UnknownMethod`, …).
///
/// Descriptions never contain payload bytes: string values travelling over D-Bus can be
/// secrets, so messages produced by this module only name types, lengths and offsets.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. An open set: new codes can be added without breaking callers.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public var rawValue: String

        /// A code with the given name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code's name.
        public var description: String { rawValue }

        /// A type signature is malformed or exceeds the nesting limits.
        public static let invalidSignature = Code(rawValue: "invalidSignature")
        /// An object path, interface, member, error or bus name is malformed.
        public static let invalidName = Code(rawValue: "invalidName")
        /// A value does not have the type its signature requires.
        public static let typeMismatch = Code(rawValue: "typeMismatch")
        /// Bytes on the wire do not form a valid D-Bus message.
        public static let malformedMessage = Code(rawValue: "malformedMessage")
        /// A length exceeds a limit of the specification or of the configuration.
        public static let limitExceeded = Code(rawValue: "limitExceeded")
        /// A bus address could not be parsed or names an unsupported transport.
        public static let invalidAddress = Code(rawValue: "invalidAddress")
        /// The SASL handshake failed.
        public static let authenticationFailed = Code(rawValue: "authenticationFailed")
        /// The server refused the connection during its handshake (an `ERROR` line, such as a
        /// limit on connections); the message is its reason.
        public static let connectionRefused = Code(rawValue: "connectionRefused")
        /// The connection was closed before the operation completed.
        public static let connectionClosed = Code(rawValue: "connectionClosed")
        /// No reply arrived within the allowed time.
        public static let timedOut = Code(rawValue: "timedOut")
        /// The other side answered with a D-Bus error message; see ``DBusError/errorName``.
        public static let remoteError = Code(rawValue: "remoteError")
        /// A method handler failed; the error is sent to the caller under ``DBusError/errorName``.
        public static let methodFailed = Code(rawValue: "methodFailed")
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable explanation that never contains payload bytes.
    public var message: String
    /// The D-Bus error name, for errors received from or to be sent to a peer.
    public var errorName: String?
    /// The arguments of an error reply after its message (received, or to be sent): typed
    /// details a program reads, such as a status code. Never secrets.
    public var details: [DBusValue] = []

    /// An error with the given code and explanation.
    public init(_ code: Code, _ message: String, errorName: String? = nil) {
        self.code = code
        self.message = message
        self.errorName = errorName
    }

    /// An error that a method handler throws to send the D-Bus error `name` to its caller.
    ///
    /// ```swift
    /// throw DBusError.method("org.example.Error.NotFound", "no such item")
    /// ```
    /// - Parameters:
    ///   - name: a valid D-Bus error name.
    ///   - message: the text sent as the error reply's body; it must not contain secrets.
    ///   - details: arguments sent after the message (see ``details``).
    public static func method(_ name: String, _ message: String, details: [DBusValue] = []) -> DBusError {
        var error = DBusError(.methodFailed, message, errorName: name)
        error.details = details
        return error
    }

    /// The code, the D-Bus error name if any, and the explanation.
    public var description: String {
        if let errorName { return "DBusError.\(code) \(errorName): \(message)" }
        return "DBusError.\(code): \(message)"
    }
}

/// Well-known D-Bus error names used by this module.
public enum DBusErrorName {
    /// The generic failure.
    public static let failed = "org.freedesktop.DBus.Error.Failed"
    /// The method does not exist on the interface, or the object has no such member.
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    /// No object is registered at the path.
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    /// The object does not implement the interface.
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    /// The interface has no such property.
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    /// The property cannot be written.
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    /// The arguments do not match the method's signature.
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    /// A limit was exceeded (too many calls in flight).
    public static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
    /// The requested operation is not supported.
    public static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    /// No connection owns the name a message was sent to, and none can be activated.
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
}
