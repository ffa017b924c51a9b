import Foundation

/// How every recovery key of this project is shown to a person once and typed back: 128 bits as
/// 26 characters of RFC 4648 base32 (A–Z, 2–7) in dash-separated groups of four, the last group of
/// two ("ABCD-EFGH-…-XY"); the last character's two low bits are zero. A login keychain's
/// recovery key (docs/login.md) and a sync zone's (docs/sync.md) look the same.
public enum RecoveryKeyText {
    /// Why typed text is not a recovery key.
    public enum Problem: Error, Sendable, Equatable {
        /// Not 26 characters, once dashes and spaces are removed.
        case length
        /// A character outside base32's alphabet.
        case character
        /// The last character's unused bits are not zero.
        case mistyped
    }

    /// The number of characters, undecorated.
    public static let characterCount = 26

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// The 26 characters of `bytes` (16 bytes), undecorated.
    public static func characters(of bytes: Data) -> String {
        var result: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                result.append(alphabet[Int((accumulator >> UInt32(bits)) & 31)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { result.append(alphabet[Int((accumulator << UInt32(5 - bits)) & 31)]) }
        return String(decoding: result, as: UTF8.self)
    }

    /// `bytes` (16 bytes) for showing once: groups of four characters separated by dashes.
    public static func display(_ bytes: Data) -> String {
        let all = Array(characters(of: bytes))
        return stride(from: 0, to: all.count, by: 4).map { String(all[$0..<min($0 + 4, all.count)]) }
            .joined(separator: "-")
    }

    /// The 16 bytes of a key as a person typed it: dashes, spaces and case ignored.
    /// - Throws: ``Problem``.
    public static func bytes(parsing text: some StringProtocol) throws(Problem) -> Data {
        try bytes(parsingUTF8: text.utf8)
    }

    /// ``bytes(parsing:)`` of text given as its UTF-8 bytes (a password field's, which need not
    /// become a `String`).
    /// - Throws: ``Problem``.
    public static func bytes(parsingUTF8 text: some Sequence<UInt8>) throws(Problem) -> Data {
        let characters = text.filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: " ") && $0 != 9 && $0 != 10 }
        guard characters.count == characterCount else { throw .length }
        var accumulator: UInt32 = 0
        var bits = 0
        var bytes = Data()
        for character in characters {
            let upper = character >= 97 && character <= 122 ? character - 32 : character
            guard let value = alphabet.firstIndex(of: upper) else { throw .character }
            accumulator = (accumulator << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        guard bytes.count == 16, accumulator == 0 else { throw .mistyped }
        return bytes
    }
}
