import Foundation
import Testing

@testable import SecretService

@Suite("Secret Service attribute maps and item paths, read without Foundation's decoders")
struct AttributeMapTests {
    /// What `JSONDecoder` makes of `text`, the reference the quick reader must agree with.
    static func reference(_ text: String) -> [String: String]? {
        (try? JSONDecoder().decode([String: [String: String]].self, from: Data(text.utf8)))?[SecretAttributes.marker]
    }

    @Test("the quick reader agrees with JSONDecoder, or leaves the answer to it")
    func quickReaderAgrees() {
        let marker = SecretAttributes.marker
        let texts = [
            #"{"\#(marker)":{"account":"alice","service":"mail"}}"#,
            #"{"\#(marker)":{}}"#,
            #" { "\#(marker)" : { "a" : "b" , "c" : "d" } } "#,
            "{\"\(marker)\":\n\t{\"a\":\"b\"}\r\n}",
            #"{"\#(marker)":{"quote":"a\"b","slash":"a\/b","back":"a\\b","ctl":"\b\f\n\r\t"}}"#,
            #"{"\#(marker)":{"u":"\u00e9\u4e2d\ud83d\ude00","zero":"a\u0000b"}}"#,
            "{\"\(marker)\":{\"raw\":\"é中😀\"}}",
            #"{"\#(marker)":{"lone":"\ud83d"}}"#,
            #"{"\#(marker)":{"low":"\ude00x"}}"#,
            #"{"\#(marker)":{"bad":"\x"}}"#,
            #"{"\#(marker)":{"a":"1","a":"2"}}"#,
            #"{"\#(marker)":{"n":1}}"#,
            #"{"\#(marker)":{"a":"b"},"other":{"c":"d"}}"#,
            #"{"other":{"c":"d"},"\#(marker)":{"a":"b"}}"#,
            #"{"other":{"c":"d"}}"#,
            #"{"\#(marker)":{"a":"b"}} x"#,
            #"{"\#(marker)":{"a":"b"}"#,
            #"{"\#(marker)":{"a":"b",}}"#,
            "{\"\(marker)\":{\"tab\":\"a\tb\"}}",
            "",
            "not json",
            "[]",
        ]
        for text in texts {
            let quick = Data(text.utf8).withUnsafeBytes { AttributeMapReader.read($0) }
            let expected = Self.reference(text)
            if let quick {
                #expect(quick == expected, "\(text)")
            }
            #expect(SecretAttributes.decode(Data(text.utf8)) == expected, "\(text)")
        }
        // Invalid UTF-8 is never taken by the quick reader.
        let invalid = Data(#"{"\#(marker)":{"a":""#.utf8) + Data([0xFF]) + Data(#""}}"#.utf8)
        #expect(invalid.withUnsafeBytes { AttributeMapReader.read($0) } == nil)
    }

    @Test("what encode writes, decode reads back, whatever the characters")
    func roundTrip() {
        let maps: [[String: String]] = [
            [:],
            ["service": "mail", "account": "alice"],
            ["quote\"": "back\\slash/", "control": "\u{01}\u{1F}\n", "unicode": "é中😀", "empty": ""],
        ]
        for map in maps {
            #expect(SecretAttributes.decode(SecretAttributes.encode(map)) == map)
        }
    }

    @Test("an item's path element is its id's 32 hex digits, read back in either case")
    func itemPathElements() {
        for _ in 0..<100 {
            let id = UUID()
            let element = SecretServiceProvider.hexDigits(id)
            #expect(element == id.uuidString.replacingOccurrences(of: "-", with: "").lowercased())
            #expect(SecretServiceProvider.itemID(element) == id)
            #expect(SecretServiceProvider.itemID(element.uppercased()) == id)
        }
        for bad in [
            "", "0123", String(repeating: "g", count: 32), String(repeating: "0", count: 31),
            String(repeating: "0", count: 33), String(repeating: "é", count: 16),
        ] {
            #expect(SecretServiceProvider.itemID(bad) == nil)
        }
    }
}
