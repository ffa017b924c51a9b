import Foundation

/// What `KeychainDatabase.findReadable(_:includeData:)` found: the items that could be read
/// and the matching rows that could not.
public struct ReadableItems: Sendable {
    /// The items that decrypted and authenticated, in the order they were added.
    public var items: [Item] = []
    /// The rows that are malformed or failed authentication, in row order.
    public var unreadable: [UnreadableItem] = []

    /// Creates an empty result.
    public init() {}
}

/// A stored row that could not be read: which row, and why. It holds no attribute value and
/// no secret (the row could not be decrypted, and nothing of it is shown).
public struct UnreadableItem: Sendable, CustomStringConvertible {
    /// The row's id in the `items` table, when it could be read.
    public var rowID: Int64?
    /// The item's persistent identity (its `kSecValuePersistentRef`), when the row has a
    /// well-formed one.
    public var persistentID: UUID?
    /// The item's class, when the row names a known one.
    public var itemClass: ItemClass?
    /// Why it failed: `.decode`, or `.interactionNotAllowed` for a secret that asks for its
    /// owner's authentication (``KeychainError/Reason/userAuthenticationNeeded``) or whose access
    /// list does not name the caller (``KeychainError/Reason/applicationNotTrusted``).
    public var error: KeychainError

    /// Describes a row that could not be read.
    public init(rowID: Int64?, persistentID: UUID?, itemClass: ItemClass?, error: KeychainError) {
        self.rowID = rowID
        self.persistentID = persistentID
        self.itemClass = itemClass
        self.error = error
    }

    /// For example `row 7 (genp, persistent reference 00000000-0007-8…): stored data failed
    /// authentication`.
    public var description: String {
        var details: [String] = []
        if let itemClass { details.append(itemClass.rawValue) }
        if let persistentID { details.append("persistent reference \(persistentID.uuidString)") }
        let row = rowID.map { "row \($0)" } ?? "a row"
        return row + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))") + ": " + error.message
    }
}

extension UnreadableItem {
    /// Reads back a ``description`` (as the session agent sends an unreadable row): its row,
    /// class and persistent reference where the text names them; any other text is kept whole as
    /// the error's message, so nothing the agent said is lost.
    public init(parsing text: String) {
        self.init(rowID: nil, persistentID: nil, itemClass: nil, error: KeychainError(.decode, text))
        guard let colon = text.range(of: ": ") else { return }
        var head = Substring(text[..<colon.lowerBound])
        let message = String(text[colon.upperBound...])
        var details: [Substring] = []
        if let open = head.firstIndex(of: "("), head.hasSuffix(")") {
            details = head[head.index(after: open)..<head.index(before: head.endIndex)].split(separator: ", ")
            head = head[..<open].dropLast(head[..<open].hasSuffix(" ") ? 1 : 0)
        }
        if head.hasPrefix("row "), let row = Int64(head.dropFirst(4)) {
            rowID = row
        } else if head != "a row" {
            return
        }
        for detail in details {
            if let itemClass = ItemClass(rawValue: String(detail)) {
                self.itemClass = itemClass
            } else if detail.hasPrefix("persistent reference "),
                let id = UUID(uuidString: String(detail.dropFirst("persistent reference ".count)))
            {
                persistentID = id
            }
        }
        let known = [KeychainError.userAuthenticationNeeded, .applicationNotTrusted]
        error = known.first { $0.message == message } ?? KeychainError(.decode, message)
    }
}
