/// A D-Bus server address such as `unix:path=/run/user/1000/bus,guid=…`.
///
/// Only the `unix` transport with `path=` can be connected to (NIO has no abstract-namespace
/// socket address); other entries are parsed and skipped by `DBusConnection` (DBusNIO).
public struct DBusAddress: Hashable, Sendable, CustomStringConvertible {
    /// The transport, e.g. `unix`.
    public var transport: String
    /// The key-value pairs, unescaped.
    public var parameters: [String: String]

    /// An address with a transport and its parameters.
    public init(transport: String, parameters: [String: String]) {
        self.transport = transport
        self.parameters = parameters
    }

    /// A `unix:path=` address.
    public static func unixPath(_ path: String) -> DBusAddress {
        DBusAddress(transport: "unix", parameters: ["path": path])
    }

    /// The socket path of a `unix:path=` address.
    public var unixPath: String? { transport == "unix" ? parameters["path"] : nil }

    /// The server's GUID (32 hex digits) when the address names one.
    public var guid: String? { parameters["guid"] }

    /// The address in D-Bus syntax, keys in sorted order.
    public var description: String {
        let pairs = parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.escape($0.value))" }
        return transport + ":" + pairs.joined(separator: ",")
    }

    /// Parses a `;`-separated list of addresses.
    ///
    /// - Throws: ``DBusError`` `.invalidAddress` when an entry lacks a transport or has a
    ///   malformed key-value pair or escape.
    public static func parseList(_ string: String) throws -> [DBusAddress] {
        try string.split(separator: ";").map { try parse(String($0)) }
    }

    /// Parses one address.
    ///
    /// - Throws: ``DBusError`` `.invalidAddress` on malformed input.
    public static func parse(_ string: String) throws -> DBusAddress {
        guard let colon = string.firstIndex(of: ":"), colon != string.startIndex else {
            throw DBusError(.invalidAddress, "address has no transport")
        }
        var parameters: [String: String] = [:]
        for pair in string[string.index(after: colon)...].split(separator: ",") {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw DBusError(.invalidAddress, "malformed key-value pair")
            }
            let key = String(pair[..<equals])
            guard parameters[key] == nil else { throw DBusError(.invalidAddress, "repeated key \(key)") }
            parameters[key] = try unescape(pair[pair.index(after: equals)...])
        }
        return DBusAddress(transport: String(string[..<colon]), parameters: parameters)
    }

    /// The session bus's addresses: `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`.
    ///
    /// - Parameter environment: the environment to read (pass `ProcessInfo`'s in production).
    /// - Throws: ``DBusError`` `.invalidAddress` when neither variable gives an address.
    public static func sessionBus(environment: [String: String]) throws -> [DBusAddress] {
        if let value = environment["DBUS_SESSION_BUS_ADDRESS"], !value.isEmpty { return try parseList(value) }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return [.unixPath(runtime + "/bus")] }
        throw DBusError(.invalidAddress, "no session bus address in the environment")
    }

    private static func unescape(_ value: Substring) throws -> String {
        var bytes: [UInt8] = []
        var iterator = Array(value.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw DBusError(.invalidAddress, "malformed %-escape")
            }
            bytes.append(high << 4 | low)
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw DBusError(.invalidAddress, "address value is not UTF-8")
        }
        return string
    }

    private static func escape(_ value: String) -> String {
        var result = ""
        for byte in value.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80,
                scalar.properties.isAlphabetic || ("0"..."9").contains(Character(scalar))
                    || "-_/.\\*".unicodeScalars.contains(scalar)
            {
                result.unicodeScalars.append(scalar)
            } else {
                result += "%" + String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
            }
        }
        return result
    }
}

func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
}
