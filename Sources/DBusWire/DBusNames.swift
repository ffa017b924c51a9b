/// Validation of the names that D-Bus messages carry, as the specification defines them.
public enum DBusNames {
    /// The maximum length of an interface, member, error or bus name.
    public static let maximumNameLength = 255

    /// Whether `path` is a valid object path: `/`, or `/`-separated non-empty elements of
    /// `[A-Za-z0-9_]`, with no trailing `/`.
    public static func isValidObjectPath(_ path: String) -> Bool {
        // Over the UTF-8 view directly: every message checks several names, so no copies.
        let bytes = path.utf8
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
        let bytes = name.utf8
        guard bytes.count <= maximumNameLength else { return false }
        return isDottedName(bytes) { byte, startsElement in
            isNameCharacter(byte) && !(startsElement && isDigit(byte))
        }
    }

    /// Whether `bytes` are two or more `.`-separated elements, none empty (no leading, trailing
    /// or doubled dot), each byte of which `allows` (told whether the byte starts its element).
    private static func isDottedName<Bytes: Collection<UInt8>>(
        _ bytes: Bytes, allows: (UInt8, Bool) -> Bool
    ) -> Bool {
        var elements = 1
        var elementStart = true
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if elementStart { return false }
                elements += 1
                elementStart = true
            } else {
                guard allows(byte, elementStart) else { return false }
                elementStart = false
            }
        }
        return elements >= 2 && !elementStart
    }

    /// Whether `name` is a valid error name (the same rule as interface names).
    public static func isValidErrorName(_ name: String) -> Bool { isValidInterfaceName(name) }

    /// Whether `name` is a valid member (method or signal) name: `[A-Za-z_][A-Za-z0-9_]*`, at most 255 bytes.
    public static func isValidMemberName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= maximumNameLength, !isDigit(first) else { return false }
        return bytes.allSatisfy(isNameCharacter)
    }

    /// Whether `name` is a valid bus name: a unique name (`:1.42`) or a well-known name
    /// (`org.example.Service`), at most 255 bytes.
    public static func isValidBusName(_ name: String) -> Bool {
        let all = name.utf8
        guard !all.isEmpty, all.count <= maximumNameLength else { return false }
        let unique = all.first == UInt8(ascii: ":")
        let bytes = unique ? all.dropFirst() : all[...]
        return isDottedName(bytes) { byte, startsElement in
            // Only a unique name's elements may start with a digit.
            (isNameCharacter(byte) || byte == UInt8(ascii: "-")) && (unique || !startsElement || !isDigit(byte))
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isNameCharacter(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || isDigit(byte) || byte == 0x5F
    }
}
