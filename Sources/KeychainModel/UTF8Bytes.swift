import Foundation

/// Byte-level UTF-8 operations on strings, done on whole blocks of memory.
///
/// Keychain values compare by their UTF-8 bytes (as `CFEqual` compares `CFString`s: no
/// Unicode normalization). Walking a `String.UTF8View` byte by byte costs tens of
/// instructions per byte; every lookup compares and decodes a dozen strings, so these work
/// on the strings' contiguous storage instead and fall back to the views only when a string
/// has none (a bridged string).
package enum UTF8Bytes {
    /// Whether two strings have the same UTF-8 bytes.
    package static func equal(_ a: String, _ b: String) -> Bool {
        let compared = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in same(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) }
        }
        if case let result?? = compared { return result }
        return a.utf8.elementsEqual(b.utf8)
    }

    /// The text whose UTF-8 encoding is `bytes`, or `nil` when the bytes are not valid UTF-8.
    ///
    /// Invalid bytes are refused, never repaired: decoding replaces each invalid sequence
    /// with U+FFFD, so the text is returned only when its encoding is the input, byte for
    /// byte (a count alone would not do: a truncated 3-byte sequence becomes one 3-byte
    /// U+FFFD).
    package static func string(validating bytes: UnsafeRawBufferPointer) -> String? {
        let text = bytes.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
        let compared = text.utf8.withContiguousStorageIfAvailable { same(UnsafeRawBufferPointer($0), bytes) }
        if let result = compared { return result ? text : nil }
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    private static func same(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Bool {
        guard x.count == y.count else { return false }
        guard let a = x.baseAddress, let b = y.baseAddress else { return true }
        return memcmp(a, b, x.count) == 0
    }
}
