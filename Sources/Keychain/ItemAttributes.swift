import Foundation
import KeychainModel

extension Keychain {
    /// The attributes of one item, as listed by ``Keychain/allItems()``. It holds no secret.
    public struct ItemAttributes: Sendable, Hashable, CustomStringConvertible {
        /// The item's key (its account, `kSecAttrAccount`).
        public var key: String
        /// The label (`kSecAttrLabel`), if any.
        public var label: String?
        /// The comment (`kSecAttrComment`), if any.
        public var comment: String?
        /// When the secret is readable.
        public var accessibility: Accessibility?
        /// Whether the item is synchronizable.
        public var synchronizable: Bool
        /// The item's access group.
        public var accessGroup: String?
        /// When the item was added.
        public var creationDate: Date?
        /// When the item was last written.
        public var modificationDate: Date?
        /// The item's stable identity in its keychain.
        public var persistentID: UUID?

        init(_ item: Item) {
            key = Self.text(item.attributes[.account]) ?? ""
            label = Self.text(item.attributes[.label])
            comment = Self.text(item.attributes[.comment])
            accessibility = item.accessibility
            synchronizable = item.isSynchronizable
            accessGroup = item.accessGroup
            creationDate = item.attributes[.creationDate]?.dateValue
            modificationDate = item.attributes[.modificationDate]?.dateValue
            persistentID = item.persistentID
        }

        private static func text(_ value: AttributeValue?) -> String? {
            switch value {
            case .string(let string): string
            case .data(let data): String(validating: data, as: UTF8.self)
            default: nil
            }
        }

        /// The key and the names of the attributes that are set.
        public var description: String {
            "ItemAttributes(key: \(key), accessibility: \(accessibility.map(\.description) ?? "none")"
                + ", synchronizable: \(synchronizable), accessGroup: \(accessGroup ?? "none"))"
        }
    }
}
