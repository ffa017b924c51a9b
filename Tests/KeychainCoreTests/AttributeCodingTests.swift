import Foundation
import SeededRandom
import Testing

@testable import KeychainCore

/// The binary encoding of an item's attributes inside its sealed blob: what is encoded decodes
/// to the same attributes, and text that is not valid UTF-8 is refused, never repaired.
@Suite("Attribute encoding")
struct AttributeCodingTests {
    /// One attribute as the encoding lays it out: name, type byte, payload.
    private static func blob(_ entries: [(name: [UInt8], type: UInt8, payload: [UInt8])]) -> Data {
        var bytes: [UInt8] = [1]
        Swift.withUnsafeBytes(of: UInt32(entries.count).bigEndian) { bytes.append(contentsOf: $0) }
        for entry in entries {
            bytes.appendLengthPrefixed(entry.name)
            bytes.append(entry.type)
            bytes.appendLengthPrefixed(entry.payload)
        }
        return Data(bytes)
    }

    /// Random attribute sets: strings (ASCII, accented, emoji, empty), bytes, numbers, dates.
    private static func randomAttributes(_ random: inout SplitMix64) -> Attributes {
        let names: [AttributeName] = ["acct", "svce", "labl", "desc", "gena", "crtr", "cdat", "type", "icmt"]
        let texts = ["", "alice", "é", "e\u{301}", "日本語", "🔑 key", "nul\0byte", String(repeating: "x", count: 300)]
        var attributes: Attributes = [:]
        for name in names where Bool.random(using: &random) {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: attributes[name] = .string(texts.randomElement(using: &random)!)
            case 1:
                attributes[name] = .data(
                    Data(
                        (0..<Int.random(in: 0..<40, using: &random)).map { _ in
                            UInt8.random(in: 0...255, using: &random)
                        }))
            case 2: attributes[name] = .number(Int64.random(in: .min ... .max, using: &random))
            default:
                attributes[name] = .date(
                    Date(timeIntervalSinceReferenceDate: Double(Int32.random(in: .min ... .max, using: &random))))
            }
        }
        return attributes
    }

    @Test("Encoded attributes decode to the same attributes", arguments: 0..<20)
    func roundTrip(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        for _ in 0..<50 {
            let attributes = Self.randomAttributes(&random)
            #expect(try AttributeCoding.decode(Data(AttributeCoding.encode(attributes))) == attributes)
        }
    }

    @Test(
        "Text that is not valid UTF-8 is refused, in a name or in a string value",
        arguments: [
            [0xFF], [0xC3], [0x61, 0x80], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
        ] as [[UInt8]])
    func invalidUTF8IsRefused(bytes: [UInt8]) {
        let badValue = Self.blob([(Array("acct".utf8), 0x73, bytes)])
        let badName = Self.blob([(bytes, 0x73, Array("alice".utf8))])
        for blob in [badValue, badName] {
            #expect(throws: KeychainError.self) { try AttributeCoding.decode(blob) }
        }
    }

    @Test("Valid UTF-8 of every length decodes to its text")
    func validUTF8Decodes() throws {
        let text = "a é 日 🔑"
        let decoded = try AttributeCoding.decode(Self.blob([(Array("labl".utf8), 0x73, Array(text.utf8))]))
        #expect(decoded == [AttributeName("labl"): .string(text)])
    }
}
