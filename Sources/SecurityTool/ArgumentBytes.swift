import Foundation
import KeychainModel
import KeychainLibc

/// Command-line arguments as bytes, carried through ArgumentParser in Swift strings.
///
/// macOS's `security` stores the bytes of an argument as given, UTF-8 or not. Swift's
/// `CommandLine.arguments` replaces invalid UTF-8 with U+FFFD, so that `\xff` and `\xfe`
/// would be the same password. Arguments are instead decoded the way Python's
/// `surrogateescape` does: each byte of an invalid UTF-8 sequence becomes one private-use
/// scalar, U+10FF00 plus the byte (U+10FF80 to U+10FFFF, since such bytes are never ASCII),
/// and a genuine scalar of that range is escaped byte by byte too, so that no two byte
/// strings decode to the same string. ``bytes(of:)`` undoes the escapes wherever an argument
/// becomes a secret, a password or an attribute value.
enum ArgumentBytes {
    /// The first scalar of the escape range; byte `b` (0x80 or more) is `escapeBase + b`.
    private static let escapeBase: UInt32 = 0x10_FF00
    /// The scalars that stand for one byte.
    private static let escapes: ClosedRange<UInt32> = (escapeBase + 0x80)...(escapeBase + 0xFF)

    /// Decodes bytes into a string that ``bytes(of:)`` turns back into the same bytes.
    static func string(from bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        var scalars = String.UnicodeScalarView()
        var index = 0
        while index < bytes.count {
            let length = validSequenceLength(bytes, at: index)
            let sequence = bytes[index..<index + max(length, 1)]
            if length > 0, let scalar = Self.scalar(sequence), !escapes.contains(scalar.value) {
                scalars.append(scalar)
            } else {
                for byte in sequence { scalars.append(Unicode.Scalar(escapeBase + UInt32(byte))!) }
            }
            index += max(length, 1)
        }
        return String(scalars)
    }

    /// The length of the valid UTF-8 sequence at `index`, or 0 when the byte there does not
    /// begin one (the ranges of the Unicode Standard's table 3-7: no overlong forms, no
    /// surrogates, nothing past U+10FFFF).
    private static func validSequenceLength(_ bytes: [UInt8], at index: Int) -> Int {
        let lead = bytes[index]
        let length: Int
        let second: ClosedRange<UInt8>
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: (length, second) = (2, 0x80...0xBF)
        case 0xE0: (length, second) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, second) = (3, 0x80...0xBF)
        case 0xED: (length, second) = (3, 0x80...0x9F)
        case 0xF0: (length, second) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, second) = (4, 0x80...0xBF)
        case 0xF4: (length, second) = (4, 0x80...0x8F)
        default: return 0
        }
        guard index + length <= bytes.count, second.contains(bytes[index + 1]) else { return 0 }
        for offset in 2..<length where !(0x80...0xBF).contains(bytes[index + offset]) { return 0 }
        return length
    }

    /// The scalar a valid UTF-8 sequence encodes.
    private static func scalar(_ sequence: ArraySlice<UInt8>) -> Unicode.Scalar? {
        var iterator = sequence.makeIterator()
        var decoder = Unicode.UTF8()
        if case .scalarValue(let scalar) = decoder.decode(&iterator) { return scalar }
        return nil
    }

    /// The bytes a string from ``string(from:)`` (or any string) stands for: its UTF-8, with
    /// each escape scalar turned back into its byte.
    static func bytes(of text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if escapes.contains(scalar.value) {
                out.append(UInt8(scalar.value - escapeBase))
            } else {
                out.append(contentsOf: UTF8.encode(scalar)!)
            }
        }
        return out
    }

    /// The process's arguments after the program name, decoded with ``string(from:)``.
    static func processArguments() -> [String] {
        (1..<Int(CommandLine.argc)).map { index in
            guard let argument = CommandLine.unsafeArgv[index] else { return "" }
            return string(
                from: UnsafeBufferPointer(start: argument, count: strlen(argument)).map { UInt8(bitPattern: $0) })
        }
    }

    /// An environment variable's bytes exactly (`getenv(3)`), or `nil` when it is not set.
    static func environmentValue(_ name: String) -> [UInt8]? {
        guard let value = getenv(name) else { return nil }
        return UnsafeBufferPointer(start: value, count: strlen(value)).map { UInt8(bitPattern: $0) }
    }

    /// The attribute value for an argument: a string when its bytes are UTF-8, otherwise
    /// data. The attributes the tool sets compare bytes, so either form matches the same
    /// bytes, and different bytes never match.
    static func attributeValue(_ text: String) -> AttributeValue {
        let bytes = bytes(of: text)
        if let string = String(validating: bytes, as: UTF8.self) { return .string(string) }
        return .data(Data(bytes))
    }
}
