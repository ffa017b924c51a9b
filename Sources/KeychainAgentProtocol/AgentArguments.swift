import DBusWire
import Foundation
import KeychainCore

// The arguments and replies of ``AgentInterface``'s methods: each lists its fields once, in
// their wire order, with their introspected names.

extension AgentInterface {
    /// `s keychain`.
    public struct KeychainArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// Placeholder arguments.
        public init() {}
        /// The arguments naming `keychain`.
        public init(keychain: String) { self.keychain = keychain }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
        }
    }

    /// `s keychain, a{sv} item`.
    public struct ItemArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The item.
        public var item = Item(class: .genericPassword)
        /// Placeholder arguments.
        public init() {}
        /// The arguments for `item` in `keychain`.
        public init(keychain: String, item: Item) {
            self.keychain = keychain
            self.item = item
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("item", &item, .item)
        }
    }

    /// `s keychain, aa{sv} items`.
    public struct ItemsArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The items.
        public var items: [Item] = []
        /// Placeholder arguments.
        public init() {}
        /// The arguments for `items` in `keychain`.
        public init(keychain: String, items: [Item]) {
            self.keychain = keychain
            self.items = items
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("items", &items, .items)
        }
    }

    /// `s keychain, a{sv} query, b includeData`.
    public struct LookupArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// What to look for.
        public var query = ItemQuery(class: nil)
        /// Whether the items' secrets come back too.
        public var includeData = false
        /// Placeholder arguments.
        public init() {}
        /// The arguments of a lookup.
        public init(keychain: String, query: ItemQuery, includeData: Bool) {
            self.keychain = keychain
            self.query = query
            self.includeData = includeData
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("query", &query, .query)
            try fields.field("includeData", &includeData, .boolean)
        }
    }

    /// `s keychain, a{sv} query`.
    public struct QueryArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// Which items.
        public var query = ItemQuery(class: nil)
        /// Placeholder arguments.
        public init() {}
        /// The arguments for the items of `query` in `keychain`.
        public init(keychain: String, query: ItemQuery) {
            self.keychain = keychain
            self.query = query
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("query", &query, .query)
        }
    }

    /// `s keychain, a{sv} query, a{sv} attributes, b replacesData, ay data`.
    public struct UpdateArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// Which items.
        public var query = ItemQuery(class: nil)
        /// The attributes to change.
        public var attributes: Attributes = [:]
        /// The new secret, or `nil` to keep each item's.
        public var data: Data?
        /// Placeholder arguments.
        public init() {}
        /// The arguments of an update.
        public init(keychain: String, query: ItemQuery, attributes: Attributes, data: Data?) {
            self.keychain = keychain
            self.query = query
            self.attributes = attributes
            self.data = data
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("query", &query, .query)
            try fields.field("attributes", &attributes, .attributes)
            try fields.field("replacesData", "data", &data, .data, absent: Data())
        }
    }

    /// `s keychain, b hasPassword, ay password`.
    public struct PasswordArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The password's bytes, or `nil` for none.
        public var password: Data?
        /// Placeholder arguments.
        public init() {}
        /// The arguments for `keychain` and `password`.
        public init(keychain: String, password: Data?) {
            self.keychain = keychain
            self.password = password
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("hasPassword", "password", &password, .data, absent: Data())
        }
    }

    /// `s keychain, b hasOld, ay old, ay new`.
    public struct ChangePasswordArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The current password, or `nil` for none.
        public var old: Data?
        /// The new password.
        public var new = Data()
        /// Placeholder arguments.
        public init() {}
        /// The arguments of a password change.
        public init(keychain: String, old: Data?, new: Data) {
            self.keychain = keychain
            self.old = old
            self.new = new
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("hasOld", "old", &old, .data, absent: Data())
            try fields.field("new", &new, .data)
        }
    }

    /// `s keychain, b hasPassword, ay password, b hasNew, ay new`.
    public struct RotateKeysArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The current password, or `nil` for none.
        public var password: Data?
        /// The new password, or `nil` to keep the current one.
        public var newPassword: Data?
        /// Placeholder arguments.
        public init() {}
        /// The arguments of a re-keying.
        public init(keychain: String, password: Data?, newPassword: Data?) {
            self.keychain = keychain
            self.password = password
            self.newPassword = newPassword
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("hasPassword", "password", &password, .data, absent: Data())
            try fields.field("hasNew", "new", &newPassword, .data, absent: Data())
        }
    }

    /// `s keychain, a{sv} settings`.
    public struct SettingsArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The lock settings.
        public var settings = KeychainSettings()
        /// Placeholder arguments.
        public init() {}
        /// The arguments storing `settings` for `keychain`.
        public init(keychain: String, settings: KeychainSettings) {
            self.keychain = keychain
            self.settings = settings
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("settings", &settings, .settings)
        }
    }

    /// `s keychain, b permanent, a{sv} item`.
    public struct CreateTokenKeyArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The key item to store the new key as, or `nil` to keep it in the agent only.
        public var template: Item?
        /// Placeholder arguments.
        public init() {}
        /// The arguments generating a token key in `keychain`.
        public init(keychain: String, template: Item?) {
            self.keychain = keychain
            self.template = template
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("permanent", "item", &template, .item, absent: Item(class: .key))
        }
    }

    /// `s keychain, ay handle, y operation, ay input, u kdfHash, ay sharedInfo, u outputSize`.
    public struct UseTokenKeyArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The key's handle.
        public var handle = Data()
        /// The operation's code: 1 signs, 2 agrees on a key (ECDH).
        public var operation: UInt8 = 0
        /// The digest to sign, or the peer's public key.
        public var input = Data()
        /// The key derivation's hash (0: none).
        public var kdfHash: UInt32 = 0
        /// The key derivation's shared information.
        public var sharedInfo = Data()
        /// The key derivation's output size.
        public var outputSize: UInt32 = 0
        /// Placeholder arguments.
        public init() {}
        /// The arguments of `request` with the key `handle` in `keychain`.
        package init(keychain: String, handle: Data, request: TokenKeyRequest) {
            self.keychain = keychain
            self.handle = handle
            operation = request.operation.rawValue
            input = request.input
            kdfHash = UInt32(clamping: request.kdfHash)
            sharedInfo = request.sharedInfo
            outputSize = UInt32(clamping: request.outputSize)
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("handle", &handle, .data)
            try fields.field("operation", &operation, .byte)
            try fields.field("input", &input, .data)
            try fields.field("kdfHash", &kdfHash, .uint32)
            try fields.field("sharedInfo", &sharedInfo, .data)
            try fields.field("outputSize", &outputSize, .uint32)
        }
    }

    /// `s keychain, ay handle, a{sv} item`.
    public struct StoreTokenKeyArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// The key's handle.
        public var handle = Data()
        /// The key item to store it as.
        public var item = Item(class: .key)
        /// Placeholder arguments.
        public init() {}
        /// The arguments storing the key `handle` as `item`.
        public init(keychain: String, handle: Data, item: Item) {
            self.keychain = keychain
            self.handle = handle
            self.item = item
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("handle", &handle, .data)
            try fields.field("item", &item, .item)
        }
    }

    /// `as groups`.
    public struct AccessGroupsArguments: DBusArguments {
        /// The groups, the first where items are added.
        public var groups: [String] = []
        /// Placeholder arguments.
        public init() {}
        /// The arguments naming `groups`.
        public init(groups: [String]) { self.groups = groups }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("groups", &groups, .strings)
        }
    }

    /// `u seconds`.
    public struct AuthenticateOwnerArguments: DBusArguments {
        /// How long the proof is to last, in seconds (the agent keeps it 300 at most; 0 for
        /// the longest).
        public var seconds: UInt32 = 0
        /// Placeholder arguments.
        public init() {}
        /// The arguments asking for a proof of `seconds`.
        public init(seconds: UInt32) { self.seconds = seconds }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("seconds", &seconds, .uint32)
        }
    }

    // MARK: Replies

    /// `as entries`.
    public struct AccessLogEntries: DBusArguments {
        /// The entries, oldest first, a line each.
        public var entries: [String] = []
        /// A placeholder reply.
        public init() {}
        /// The reply for `entries`.
        public init(_ entries: [String]) { self.entries = entries }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("entries", &entries, .strings)
        }
    }

    /// `ay proof, ay state`.
    public struct FingerProof: DBusArguments {
        /// The proof (``KeychainModel/ItemQuery/ownerProof``).
        public var proof = Data()
        /// The reader's domain state the finger matched in.
        public var state = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for `proof`, made in `state`.
        public init(_ proof: Data, state: Data) { (self.proof, self.state) = (proof, state) }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("proof", &proof, .data)
            try fields.field("state", &state, .data)
        }
    }

    /// `(ay proof, ay key)`.
    public struct CompanionProof: DBusArguments {
        /// The proof (``KeychainModel/ItemQuery/ownerProof``).
        public var proof = Data()
        /// The public key of the security key that signed (X9.63).
        public var publicKey = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for `proof`, signed by the key whose public key is `publicKey`.
        public init(_ proof: Data, publicKey: Data) { (self.proof, self.publicKey) = (proof, publicKey) }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("proof", &proof, .data)
            try fields.field("key", &publicKey, .data)
        }
    }

    /// `s keychain, ay handle, y operation, ay input, u kdfHash, ay sharedInfo, u outputSize,
    /// ay proof`: ``UseTokenKeyArguments`` and the proof of an evaluated `LAContext`.
    public struct UseTokenKeyOfferingArguments: AgentKeychainArguments {
        /// The use.
        public var use = UseTokenKeyArguments()
        /// The proof (``KeychainModel/ItemQuery/ownerProof``).
        public var proof = Data()
        /// The keychain.
        public var keychain: String { use.keychain }
        /// Placeholder arguments.
        public init() {}
        /// The arguments of `request`, which carries its proof, with the key `handle` in `keychain`.
        package init(keychain: String, handle: Data, request: TokenKeyRequest) {
            use = UseTokenKeyArguments(keychain: keychain, handle: handle, request: request)
            proof = request.ownerProof ?? Data()
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try use.fields(&fields)
            try fields.field("proof", &proof, .data)
        }
    }

    /// `ay proof`.
    public struct OwnerProof: DBusArguments {
        /// The proof (``KeychainModel/ItemQuery/ownerProof``).
        public var proof = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for `proof`.
        public init(_ proof: Data) { self.proof = proof }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("proof", &proof, .data)
        }
    }

    /// `a{sv} stored`.
    public struct Stored: DBusArguments {
        /// The item as stored.
        public var stored = Item(class: .genericPassword)
        /// A placeholder reply.
        public init() {}
        /// The reply for `stored`.
        public init(_ stored: Item) { self.stored = stored }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("stored", &stored, .item)
        }
    }

    /// `aa{sv} items`.
    public struct Items: DBusArguments {
        /// The items.
        public var items: [Item] = []
        /// A placeholder reply.
        public init() {}
        /// The reply for `items`.
        public init(_ items: [Item]) { self.items = items }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("items", &items, .items)
        }
    }

    /// `a{sv} stored, b added`.
    public struct Upserted: DBusArguments {
        /// The item as stored.
        public var stored = Item(class: .genericPassword)
        /// Whether it was added (not updated).
        public var added = false
        /// A placeholder reply.
        public init() {}
        /// The reply for `stored`.
        public init(_ stored: Item, added: Bool) {
            self.stored = stored
            self.added = added
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("stored", &stored, .item)
            try fields.field("added", &added, .boolean)
        }
    }

    /// `aa{sv} items, as unreadable`.
    public struct Readable: DBusArguments {
        /// The items that could be read.
        public var items: [Item] = []
        /// What could not be read, one description each.
        public var unreadable: [String] = []
        /// A placeholder reply.
        public init() {}
        /// The reply for `items` and `unreadable`.
        public init(_ items: [Item], unreadable: [String]) {
            self.items = items
            self.unreadable = unreadable
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("items", &items, .items)
            try fields.field("unreadable", &unreadable, .strings)
        }
    }

    /// `u count`.
    public struct Count: DBusArguments {
        /// How many items.
        public var count: UInt32 = 0
        /// A placeholder reply.
        public init() {}
        /// The reply for `count` items.
        public init(_ count: Int) { self.count = UInt32(clamping: count) }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("count", &count, .uint32)
        }
    }

    /// `a{sv} status`: `path` (s), `hasPassword` (b), `isLocked` (b), `accessGroups` (as).
    public struct Status: DBusArguments {
        /// The entries, their variants unwrapped.
        public var status: [String: DBusValue] = [:]
        /// A placeholder reply.
        public init() {}
        /// The status of `keychain` as the caller sees it.
        public init(of keychain: any KeychainHandle) {
            status = [
                "path": .string(keychain.path ?? ""), "hasPassword": .boolean(keychain.hasPassword),
                "isLocked": .boolean(keychain.isLocked),
                "accessGroups": .array(.string, keychain.accessGroups.groups.map { .string($0) }),
            ]
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("status", &status, .stringVariantDictionary)
        }
    }

    /// `a{sv} settings`.
    public struct Settings: DBusArguments {
        /// The lock settings.
        public var settings = KeychainSettings()
        /// A placeholder reply.
        public init() {}
        /// The reply for `settings`.
        public init(_ settings: KeychainSettings) { self.settings = settings }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("settings", &settings, .settings)
        }
    }

    /// `ay publicKey, ay handle`.
    public struct CreatedTokenKey: DBusArguments {
        /// The public key (X9.63).
        public var publicKey = Data()
        /// The key's opaque handle.
        public var handle = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for a new key.
        public init(publicKey: Data, handle: Data) {
            self.publicKey = publicKey
            self.handle = handle
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("publicKey", &publicKey, .data)
            try fields.field("handle", &handle, .data)
        }
    }

    /// `ay output`.
    public struct TokenKeyOutput: DBusArguments {
        /// The operation's output.
        public var output = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for `output`.
        public init(_ output: Data) { self.output = output }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("output", &output, .data)
        }
    }

    /// `s keychain, b enabled, b hasPassword, ay password`.
    public struct BootStateUnlockArguments: AgentKeychainArguments {
        /// The keychain.
        public var keychain = ""
        /// On or off.
        public var enabled = false
        /// The keychain's password (to turn it on), or `nil`.
        public var password: Data?
        /// Placeholder arguments.
        public init() {}
        /// The arguments for `keychain`.
        public init(keychain: String, enabled: Bool, password: Data?) {
            self.keychain = keychain
            self.enabled = enabled
            self.password = password
        }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("keychain", &keychain, .string)
            try fields.field("enabled", &enabled, .boolean)
            try fields.field("hasPassword", "password", &password, .data, absent: Data())
        }
    }

    /// `ay key`.
    public struct RecoveryKey: DBusArguments {
        /// The recovery key's text (UTF-8), to be shown once.
        public var key = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for `key`.
        public init(_ key: Data) { self.key = key }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("key", &key, .data)
        }
    }

    /// `ay handle`.
    public struct TokenKeyHandle: DBusArguments {
        /// The stored key's handle.
        public var handle = Data()
        /// A placeholder reply.
        public init() {}
        /// The reply for `handle`.
        public init(_ handle: Data) { self.handle = handle }
        /// Shows each field to `fields`.
        @inlinable
        public mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("handle", &handle, .data)
        }
    }
}
