import Foundation
import SeededRandom
import Testing

@testable import KeychainCore

/// An unreadable row's description, as the session agent sends it, reads back into the same row,
/// class, persistent reference and message (dump-keychain names the row through the agent too).
@Suite struct ReadableItemsParsingTests {
    @Test(arguments: 0..<200)
    func aDescriptionReadsBackIntoTheSameRow(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed))
        let row = UnreadableItem(
            rowID: Bool.random(using: &random) ? Int64.random(in: 0...Int64.max, using: &random) : nil,
            persistentID: Bool.random(using: &random) ? UUID() : nil,
            itemClass: Bool.random(using: &random) ? ItemClass.allCases.randomElement(using: &random) : nil,
            error: KeychainError(
                .decode, ["stored data failed authentication", "a: b (c)", ""].randomElement(using: &random)!))
        let parsed = UnreadableItem(parsing: row.description)
        #expect(parsed.description == row.description)
        #expect(
            parsed.rowID == row.rowID && parsed.persistentID == row.persistentID && parsed.itemClass == row.itemClass)
        #expect(parsed.error.message == row.error.message && parsed.error.code == .decode)
    }

    @Test(arguments: ["unreadable item", "row x: y", "", "something (genp): else"])
    func otherTextIsKeptWholeAsTheMessage(text: String) {
        let parsed = UnreadableItem(parsing: text)
        #expect(parsed.rowID == nil && parsed.persistentID == nil && parsed.itemClass == nil)
        #expect(parsed.error.message == text)
    }
}
