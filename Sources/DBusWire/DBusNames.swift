/// Validation of the names that D-Bus messages carry, as the specification defines them.
public enum DBusNames {
    /// The maximum length of an interface, member, error or bus name.
    public static let maximumNameLength = 255

    /// Whether `path` is a valid object path: `/`, or `/`-separated non-empty elements of
    /// `[A-Za-z0-9_]`, with no trailing `/`.
    public static func isValidObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousWasSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                guard isNameCharacter(byte) else { return false }
                previousWasSlash = false
            }
        }
        return true
    }

    /// Whether `name` is a valid interface name (also the rule for error names): at least two
    /// `.`-separated elements of `[A-Za-z0-9_]`, none starting with a digit, at most 255 bytes.
    public static func isValidInterfaceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumNameLength else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy(isValidElement)
    }

    /// Whether `name` is a valid error name (the same rule as interface names).
    public static func isValidErrorName(_ name: String) -> Bool { isValidInterfaceName(name) }

    /// Whether `name` is a valid member (method or signal) name: `[A-Za-z_][A-Za-z0-9_]*`, at most 255 bytes.
    public static func isValidMemberName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumNameLength else { return false }
        return isValidElement(bytes[...])
    }

    /// Whether `name` is a valid bus name: a unique name (`:1.42`) or a well-known name
    /// (`org.example.Service`), at most 255 bytes.
    public static func isValidBusName(_ name: String) -> Bool {
        var bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumNameLength else { return false }
        let unique = bytes.first == UInt8(ascii: ":")
        if unique { bytes.removeFirst() }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard !element.isEmpty else { return false }
            if !unique, let first = element.first, isDigit(first) { return false }
            return element.allSatisfy { isNameCharacter($0) || $0 == UInt8(ascii: "-") }
        }
    }

    private static func isValidElement(_ element: ArraySlice<UInt8>) -> Bool {
        guard let first = element.first, !isDigit(first) else { return false }
        return element.allSatisfy(isNameCharacter)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isNameCharacter(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || isDigit(byte) || byte == 0x5F
    }
}
