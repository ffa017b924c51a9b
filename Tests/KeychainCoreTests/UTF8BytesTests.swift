import Foundation
import SeededRandom
import Testing

@testable import KeychainCore

/// `UTF8Bytes` compares and validates strings on their storage; it must answer exactly as
/// the byte-by-byte definitions do.
@Suite("UTF-8 bytes")
struct UTF8BytesTests {
    /// Random byte strings of 0 to 12 bytes, mostly UTF-8 fragments so that valid text,
    /// truncated sequences, stray continuation bytes and equal strings all occur.
    static func randomBytes(seed: UInt64, count: Int) -> [[UInt8]] {
        var generator = SplitMix64(seed: seed)
        let pieces: [[UInt8]] = [
            Array("a".utf8), Array("K".utf8), [0], Array("é".utf8), Array("e\u{301}".utf8), Array("日".utf8),
            Array("🔑".utf8), [0xFF], [0x80], [0xC3], [0xE6, 0x97], [0xF0, 0x90, 0x80], [0xED, 0xA0, 0x80],
            [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80],
        ]
        return (0..<count).map { _ in
            (0..<Int.random(in: 0...6, using: &generator)).flatMap { _ in pieces.randomElement(using: &generator)! }
        }
    }

    @Test(
        "decoding accepts exactly the valid UTF-8 byte strings, as the standard library does",
        arguments: [UInt64(1), 2])
    func validationMatchesStandardLibrary(seed: UInt64) {
        for bytes in Self.randomBytes(seed: seed, count: 3_000) {
            let decoded = bytes.withUnsafeBytes { UTF8Bytes.string(validating: $0) }
            let reference = String(validating: bytes, as: UTF8.self)
            #expect(decoded == reference, "\(bytes)")
            if let decoded { #expect(Array(decoded.utf8) == bytes) }
        }
    }

    @Test("a truncated sequence that decodes to a replacement of the same length is refused")
    func sameLengthRepairIsRefused() {
        // F0 90 80 lacks its last byte; decoding repairs it to U+FFFD, also three bytes.
        let bytes: [UInt8] = [0xF0, 0x90, 0x80]
        #expect(String(decoding: bytes, as: UTF8.self).utf8.count == bytes.count)
        #expect(bytes.withUnsafeBytes { UTF8Bytes.string(validating: $0) } == nil)
    }

    @Test("strings are equal when their UTF-8 bytes are, not when they are canonically equivalent")
    func equalityFollowsBytes() {
        let texts =
            Self.randomBytes(seed: 3, count: 300).map { String(decoding: $0, as: UTF8.self) }
            + ["é", "e\u{301}", "\u{212A}", "K", String(repeating: "long text ", count: 20)]
        for a in texts {
            for b in texts {
                #expect(UTF8Bytes.equal(a, b) == (Array(a.utf8) == Array(b.utf8)))
            }
        }
    }

    @Test("string attribute values compare by their bytes")
    func attributeValuesCompareBytes() {
        let spec = AttributeSpec(name: "svce", kind: .blob, comparesBytes: true, defaultValue: nil)
        #expect(spec.equal(.string("é"), .string("é")))
        #expect(!spec.equal(.string("é"), .string("e\u{301}")))
        #expect(!spec.equal(.string("svc"), .string("svc ")))
        #expect(spec.equal(.string(""), .string("")))
    }
}
