import Foundation
import KeychainCore
import SeededRandom
import Testing

/// `AttributeName` compares, orders and hashes its raw key's bytes (one packed word for keys
/// of up to seven bytes, the bytes themselves for longer ones).
@Suite("Attribute names")
struct AttributeNameTests {
    /// Random keys of 0 to 12 bytes from a small alphabet (so that equal keys, shared
    /// prefixes and the seven-byte boundary all occur), including non-ASCII and NUL.
    static func randomKeys(seed: UInt64, count: Int) -> [String] {
        var generator = SplitMix64(seed: seed)
        let alphabet: [String] = ["a", "b", "z", "A", "\u{0}", "é", "e\u{301}", "\u{212A}", "K", "\u{7F}"]
        return (0..<count).map { _ in
            let length = Int.random(in: 0...12, using: &generator)
            return (0..<length).map { _ in alphabet.randomElement(using: &generator)! }.joined()
        }
    }

    @Test("equality, order and hash follow the raw key's bytes", arguments: [UInt64(1), 2, 3])
    func equalityOrderAndHashFollowBytes(seed: UInt64) {
        let keys = Self.randomKeys(seed: seed, count: 120)
        for a in keys {
            for b in keys {
                let (x, y) = (AttributeName(rawValue: a), AttributeName(rawValue: b))
                let sameBytes = Array(a.utf8) == Array(b.utf8)
                #expect((x == y) == sameBytes, "\(Array(a.utf8)) vs \(Array(b.utf8))")
                #expect((x < y) == Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)))
                if sameBytes { #expect(x.hashValue == y.hashValue) }
            }
        }
    }

    @Test("canonically equivalent keys with different bytes are different names")
    func canonicallyEquivalentKeysDiffer() {
        // Swift's `String` equality would call these equal; CFEqual on the CFString keys of a
        // SecItem dictionary does not.
        #expect(AttributeName(rawValue: "\u{212A}") != AttributeName(rawValue: "K"))
        #expect(AttributeName(rawValue: "é") != AttributeName(rawValue: "e\u{301}"))
        var table: [AttributeName: Int] = [AttributeName(rawValue: "é"): 1]
        table[AttributeName(rawValue: "e\u{301}")] = 2
        #expect(table.count == 2)
    }

    @Test("a dictionary keyed by names finds every key and only those")
    func dictionaryFindsEveryKey() {
        let keys = Set(Self.randomKeys(seed: 7, count: 400).map { Array($0.utf8) })
        var table: [AttributeName: [UInt8]] = [:]
        for bytes in keys { table[AttributeName(rawValue: String(decoding: bytes, as: UTF8.self))] = bytes }
        #expect(table.count == keys.count)
        for (name, bytes) in table { #expect(Array(name.rawValue.utf8) == bytes) }
        #expect(table[AttributeName(rawValue: "not-a-generated-key")] == nil)
    }

    @Test("four-character keys sort alphabetically, and longer keys after their prefixes")
    func sortOrder() {
        let names: [AttributeName] = ["svce", "acct", "labl", "agrp", "acctx", "a", "", "abcdefgh", "abcdefg"]
        #expect(
            names.sorted().map(\.rawValue) == ["", "a", "abcdefg", "abcdefgh", "acct", "acctx", "agrp", "labl", "svce"])
    }
}
