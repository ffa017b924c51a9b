// Parsing SecItem dictionaries as securityd does (Apple's `keychain/securityd/SecDbQuery.c`): every
// key by its first letter, every value converted by its attribute's storage kind, wrong types
// errSecParam, unknown attributes errSecNoSuchAttr.
//
// Linux decision: before parsing, the keys that macOS removes on its data-protection path (Apple's
// `OSX/libsecurity_keychain/lib/SecItem.cpp`, `SecItemCopyTranslatedAttributes`) are removed here
// too, on every platform. That only turns iOS errSecParam cases into successes (for example
// kSecMatchLimit in SecItemDelete).

internal import _SecurityFoundation
internal import KeychainClient
internal import KeychainModel

/// The four SecItem operations, which parse dictionaries slightly differently.
enum SecOperation {
    case add, copyMatching, update, delete
}

/// How a query treats items that need user authentication (kSecUseAuthenticationUI).
enum AuthenticationUI {
    case allow, fail, skip
}

/// A parsed SecItem dictionary.
struct ParsedQuery {
    var itemClass: ItemClass?
    var attributes: Attributes = [:]
    var synchronizableAny = false
    var returnData = false
    var returnAttributes = false
    var returnRef = false
    var returnPersistentRef = false
    /// `nil` means no limit.
    var limit: Int? = 1
    var limitIsOne: Bool { limit == 1 }
    var valueData: Data?
    var persistentRef: PersistentReference?
    var accessControl: SecAccessControl?
    var authenticationUI = AuthenticationUI.allow
    /// kSecUseAuthenticationContext: an `LAContext`, kept as given.
    var authenticationContext: AnyObject?
    var hostOrSubdomain: String?
    /// kSecMatchValidOnDate: certificates (and identities) valid at this date.
    var validOnDate: Date?
    /// kSecMatchEmailAddressIfPresent: certificates without e-mail addresses, or with this one.
    var emailAddressIfPresent: String?
    /// Whether a certificate post-filter applies (the row limit then applies after filtering).
    var filtersCertificates: Bool { validOnDate != nil || emailAddressIfPresent != nil }
    var keychains: [SecKeychain]?
    var hasValueRef = false

    var returnsAnything: Bool { returnData || returnAttributes || returnRef || returnPersistentRef }
}

/// A persistent reference: 4 bytes of class name and the item's 16-byte identity (Apple's
/// `_SecItemCreateUUIDBasedPersistentRef`, `OSX/sec/Security/SecItem.m`).
struct PersistentReference {
    var itemClass: ItemClass
    var identity: UUID?

    init(itemClass: ItemClass, identity: UUID) {
        self.itemClass = itemClass
        self.identity = identity
    }

    /// Parses the bytes; the legacy 12-byte row-id form parses but names no item of ours.
    init?(_ data: Data) {
        guard data.count == 20 || data.count == 12,
            let itemClass = ItemClass(rawValue: String(decoding: data.prefix(4), as: UTF8.self))
        else { return nil }
        self.itemClass = itemClass
        if data.count == 20 { identity = UUID(bytes: data.suffix(16)) }
    }

    var data: Data {
        var bytes = Data(itemClass.rawValue.utf8)
        if let identity { withUnsafeBytes(of: identity.uuid) { bytes.append(contentsOf: $0) } }
        return bytes
    }
}

private let knownUseKeys: Set<String> = [
    "u_ItemList", "u_Keychain", "u_OpPrompt", "u_NoAuthUI", "u_AuthUI", "u_AuthCtx",
    "u_UserIndependentKeychain", "u_CredRef", "u_Tomb", "u_CallerName", "u_TokenRawItems",
    "u_SystemKeychain", "u_SystemKeychainAlways", "u_SyncBubbleKeychain", "u_CertWithIssuers",
    "u_TokenSession",
]

/// Parses SecItem dictionaries.
struct QueryParser {
    let operation: SecOperation

    /// Reads the keys of a dictionary as strings: a number key is errSecNoSuchAttr, any other
    /// non-string key errSecParam, a null value errSecParam.
    ///
    /// Values are taken as the objects the dictionary holds (`NSData`, `NSString`, `NSNumber`):
    /// swift-corelibs-foundation's bridging of `NSData` to `Data` copies byte by byte, so an
    /// oversized secret would be copied before it could be refused (see ``secretData(_:)``).
    static func entries(_ dictionary: CFDictionary) throws -> [String: Any] {
        let keys = dictionary.allKeys
        let values = dictionary.allValues
        var entries: [String: Any] = [:]
        entries.reserveCapacity(keys.count)
        let pairs: [(Any, Any)] =
            keys.count == values.count
                && (type(of: dictionary) == NSDictionary.self || type(of: dictionary) == NSMutableDictionary.self)
            ? Array(zip(keys, values)) : dictionary.map { ($0.key, $0.value) }
        for (key, value) in pairs {
            if let key = queryString(key) {
                // kCFNull is a value only for kSecMatchValidOnDate ("now").
                if type(of: value) is NSNull.Type && key != "m_ValidOnDate" { throw SecError(errSecParam) }
                entries[key] = value
            } else if key is NSNumber {
                throw SecError(errSecNoSuchAttr)
            } else {
                throw SecError(errSecParam)
            }
        }
        return entries
    }

    /// The keys macOS removes whatever the operation (`SecItemCopyTranslatedAttributes`, Apple's
    /// `OSX/libsecurity_keychain/lib/SecItem.cpp`).
    private static let alwaysStripped: Set<String> = ["acls", "mdat", "nleg", "u_Keychain", "m_SearchList"]

    /// The keys macOS removes before the data-protection keychain sees the dictionary
    /// (`SecItemCopyTranslatedAttributes`, Apple's `OSX/libsecurity_keychain/lib/SecItem.cpp`).
    private func stripped(_ entries: [String: Any]) -> [String: Any] {
        entries.filter { key, _ in
            if Self.alwaysStripped.contains(key) { return false }
            switch operation {
            case .add: return !key.hasPrefix("m_")
            case .copyMatching: return key != "v_Data" && !(key == "sync" && entries["v_PersistentRef"] != nil)
            case .update, .delete: return !key.hasPrefix("m_") && !key.hasPrefix("r_") && key != "v_Data"
            }
        }
    }

    func parse(_ dictionary: CFDictionary) throws -> ParsedQuery {
        try parse(entries: Self.entries(dictionary))
    }

    /// Parses a dictionary already read by ``entries(_:)``.
    func parse(entries all: [String: Any]) throws -> ParsedQuery {
        var query = ParsedQuery()
        if operation != .copyMatching { query.limit = nil }
        query.keychains = try keychains(all)
        let entries = stripped(all)
        // As securityd does before it looks at any key (`query_create_with_limit`,
        // `keychain/securityd/SecDbQuery.c`): the class, then the number of keys.
        if let classValue = entries["class"] {
            guard let name = queryString(classValue) else { throw SecError(errSecParam) }
            guard let itemClass = ItemClass(rawValue: name) else { throw SecError(errSecNoSuchClass) }
            query.itemClass = itemClass
        }
        if let reference = entries["v_PersistentRef"] {
            guard let data = try secretData(reference), let parsed = PersistentReference(data) else {
                throw SecError(errSecParam)
            }
            query.persistentRef = parsed
            if query.itemClass == nil { query.itemClass = parsed.itemClass }
        }
        guard let itemClass = query.itemClass else { throw SecError(errSecParam) }
        try parseAccess(all, into: &query)
        let schema = ItemSchema.of(itemClass)
        let nonAttributeKeys = entries.keys.filter { $0.utf8.count != 4 }.count
        guard schema.attributes.count + nonAttributeKeys <= 128 else { throw SecError(errSecParam) }
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
            try parseEntry(key, value, schema: schema, into: &query)
        }
        try resolveAccessibility(&query)
        return query
    }

    /// `kSecAttrAccess` on an add: the item's list of trusted applications, as macOS's
    /// file-based keychain takes it (`SecItemAdd` in `OSX/libsecurity_keychain/lib/SecItem.cpp`).
    /// A query for the data-protection keychain (`kSecUseDataProtectionKeychain`) drops it, as
    /// macOS does; other operations always drop it.
    private func parseAccess(_ entries: [String: Any], into query: inout ParsedQuery) throws {
        guard operation == .add, let value = entries["acls"],
            entries["nleg"].flatMap(cfBooleanValue) != true
        else { return }
        guard let access = value as? SecAccess else { throw SecError(errSecParam) }
        query.attributes[.access] = .data(access.accessList.serialized)
    }

    private func keychains(_ entries: [String: Any]) throws -> [SecKeychain]? {
        if let value = entries["u_Keychain"] {
            guard let keychain = value as? SecKeychain else { throw SecError(errSecParam) }
            return [keychain]
        }
        if let value = entries["m_SearchList"] {
            guard let list = value as? [Any] else { throw SecError(errSecParam) }
            return try list.map {
                guard let keychain = $0 as? SecKeychain else { throw SecError(errSecParam) }
                return keychain
            }
        }
        return nil
    }

    private func parseEntry(_ key: String, _ value: Any, schema: ItemSchema, into query: inout ParsedQuery) throws {
        guard key.utf8.count > 1 else { throw SecError(errSecParam) }
        if key.utf8.count == 4 {
            try parseAttribute(AttributeName(rawValue: key), value, schema: schema, into: &query)
            return
        }
        switch key.first {
        case "c":
            guard key == "class" else { throw SecError(errSecParam) }
        case "m":
            try parseMatch(key, value, into: &query)
        case "r":
            guard let flag = cfBooleanValue(value) else { throw SecError(errSecParam) }
            switch key {
            case "r_Data": query.returnData = flag
            case "r_Attributes": query.returnAttributes = flag
            case "r_Ref": query.returnRef = flag
            case "r_PersistentRef": query.returnPersistentRef = flag
            default: throw SecError(errSecParam)
            }
        case "u":
            try parseUse(key, value, into: &query)
        case "v":
            switch key {
            case "v_Data":
                guard let data = try secretData(value) else { throw SecError(errSecParam) }
                query.valueData = data
            case "v_PersistentRef":
                break  // read before the attributes
            case "v_Ref":
                query.hasValueRef = true
            default:
                throw SecError(errSecParam)
            }
        case "f":
            break
        default:
            throw SecError(errSecParam)
        }
    }

    private func parseAttribute(
        _ name: AttributeName, _ value: Any, schema: ItemSchema, into query: inout ParsedQuery
    ) throws {
        if name.rawValue == "nleg" { return }
        guard let spec = schema.applesSpec(for: name) else { throw SecError(errSecNoSuchAttr) }
        switch spec.kind {
        case .accessControl:
            guard let accessControl = value as? SecAccessControl else { throw SecError(errSecParam) }
            query.accessControl = accessControl
        case .sync:
            if let string = queryString(value), string == "syna" {
                query.synchronizableAny = true
            } else {
                query.attributes[name] = try spec.normalize(attributeValue(value))
            }
        case .uuid:
            break  // musr: the server sets it; a caller's value is ignored
        default:
            query.attributes[name] = try spec.normalize(attributeValue(value))
        }
    }

    private func parseMatch(_ key: String, _ value: Any, into query: inout ParsedQuery) throws {
        let itemClass = query.itemClass
        switch key {
        case "m_Limit":
            if let name = queryString(value) {
                switch name {
                case "m_LimitOne": query.limit = 1
                case "m_LimitAll": query.limit = nil
                default: throw SecError(errSecParam)
                }
            } else if cfBooleanValue(value) == nil, let number = value as? NSNumber {
                query.limit = max(0, number.intValue)
            } else {
                throw SecError(errSecParam)
            }
        case "m_HostOrSubdomainOfHost":
            guard itemClass == .internetPassword else { throw SecError(errSecUnimplemented) }
            guard let host = value as? String else { throw SecError(errSecParam) }
            query.hostOrSubdomain = host
        case "m_ValidOnDate", "m_EmailAddressIfPresent":
            guard itemClass == .certificate || itemClass == .identity else { throw SecError(errSecUnimplemented) }
            if key == "m_EmailAddressIfPresent" {
                guard let address = queryString(value) else { throw SecError(errSecParam) }
                query.emailAddressIfPresent = address
            } else if type(of: value) is NSNull.Type {
                query.validOnDate = Date()
            } else {
                guard let date = value as? Date else { throw SecError(errSecParam) }
                query.validOnDate = date
            }
        case "m_Policy", "m_Issuers", "m_TrustedOnly":
            // Trust-based matching (a policy, issuers, trusted only) is not implemented yet.
            throw SecError(errSecUnimplemented)
        default:
            break  // m_CaseInsensitive, m_ItemList and unknown match keys are ignored, as by securityd
        }
    }

    private func parseUse(_ key: String, _ value: Any, into query: inout ParsedQuery) throws {
        guard knownUseKeys.contains(key) else { throw SecError(errSecParam) }
        switch key {
        case "u_ItemList":
            if operation == .copyMatching || operation == .update { throw SecError(errSecParam) }
        case "u_AuthUI":
            let mode = queryString(value)
            if mode == "u_AuthUIS" {
                guard operation == .copyMatching else { throw SecError(errSecParam) }
                query.authenticationUI = .skip
            } else if mode == "u_AuthUIF" {
                query.authenticationUI = .fail
            }
        case "u_AuthCtx":
            query.authenticationContext = value as AnyObject
        case "u_NoAuthUI":
            if cfBooleanValue(value) == true || (value as? NSNumber)?.intValue == 1 {
                query.authenticationUI = .fail
            }
        default:
            break
        }
    }

    /// kSecAttrAccessControl supplies the accessibility; giving both is errSecParam, as securityd's
    /// `query_set_access_control` (`keychain/securityd/SecDbQuery.c`) refuses conflicting ones.
    private func resolveAccessibility(_ query: inout ParsedQuery) throws {
        guard let accessControl = query.accessControl else { return }
        if query.attributes[.accessible] != nil { throw SecError(errSecParam) }
        if operation == .add || operation == .update {
            guard accessControl.protectionValue != "f" else { throw SecError(errSecParam) }
            query.attributes[.accessible] = .string(accessControl.protectionValue)
            query.attributes[.accessControl] = .data(try accessControl.storedForItem())
        }
    }
}

/// Converts a Foundation or Swift value from a query dictionary to an engine value.
///
/// Strings, data, dates and numbers map to their kinds; a Boolean becomes 0 or 1; a UUID its
/// string form. Anything else (arrays, dictionaries, null, other objects) is errSecParam.
func attributeValue(_ value: Any) throws -> AttributeValue {
    if let string = value as? NSString, string.length > KeychainConfiguration.defaultMaximumAttributeSize {
        throw SecError(errSecParam)
    }
    if let string = value as? String { return .string(string) }
    if let data = try secretData(value, limit: KeychainConfiguration.defaultMaximumAttributeSize) {
        return .data(data)
    }
    if let date = value as? Date { return .date(date) }
    if let uuid = value as? UUID { return .string(uuid.uuidString) }
    if let boolean = cfBooleanValue(value) { return .number(boolean ? 1 : 0) }
    if let boolean = value as? Bool, type(of: value) == Bool.self { return .number(boolean ? 1 : 0) }
    if let integer = value as? any BinaryInteger, let number = Int64(exactly: integer) { return .number(number) }
    if let number = value as? NSNumber {
        let double = number.doubleValue
        guard double.isFinite, double.rounded() == double, let integer = Int64(exactly: double) else {
            throw SecError(errSecParam)
        }
        return .number(integer)
    }
    if let double = value as? Double, double.rounded() == double, let integer = Int64(exactly: double) {
        return .number(integer)
    }
    throw SecError(errSecParam)
}

extension SecAccessControl {
    /// The stored form (``KeychainModel/StoredAccessControl``) for an item being added or
    /// changed: a `.biometryCurrentSet` control is bound to the fingers enrolled now, a
    /// `.companion` control to the security keys paired now.
    /// - Throws: `errSecAuthFailed` when there is no reader or no finger enrolled, or no key is
    ///   paired and nothing else could answer the item.
    func storedForItem() throws -> Data {
        var stored = StoredAccessControl(flags: UInt64(flags.rawValue), protection: protectionValue)
        do {
            if stored.flags & StoredAccessControl.biometryCurrentSetFlag != 0 {
                stored.biometryState = try Keychains.fingerStateForNewItem()
            }
            if stored.flags & StoredAccessControl.companionFlag != 0 {
                stored.companions = try Keychains.companionsForNewItem()
                let anyFinger = FingerAnswer.matched(state: stored.biometryState ?? Data())
                guard !stored.companions.isEmpty || stored.isAnswered(owner: true, finger: anyFinger) else {
                    throw KeychainError(.authFailed, "no security key is paired to bind the item to")
                }
            }
        } catch {
            throw SecError(errSecAuthFailed)
        }
        return stored.serialized
    }

    /// Reads the stored form.
    convenience init?(serialized data: Data) {
        guard let stored = StoredAccessControl(serialized: data) else { return nil }
        self.init(
            protectionValue: stored.protection,
            flags: SecAccessControlCreateFlags(
                rawValue: SecAccessControlCreateFlags.RawValue(truncatingIfNeeded: stored.flags)))
    }
}

/// The bytes of a data value, refusing one larger than `limit` before copying anything.
///
/// `NSData` is copied with one `memcpy` (Foundation's own bridging to `Data` copies byte by
/// byte on Linux).
/// - Returns: `nil` when the value is not data.
/// - Throws: errSecParam when the value is larger than `limit`.
func secretData(_ value: Any, limit: Int = KeychainConfiguration.defaultMaximumDataSize) throws -> Data? {
    if let data = value as? NSData {
        guard data.length <= limit else { throw SecError(errSecParam) }
        return data.length == 0 ? Data() : Data(bytes: data.bytes, count: data.length)
    }
    if let data = value as? Data {
        guard data.count <= limit else { throw SecError(errSecParam) }
        return data
    }
    return nil
}

extension ItemSchema {
    /// The specification of `name` when Apple's class has that attribute. The engine keeps two
    /// of its own for the Secret Service, which `SecItem*` refuses with `errSecNoSuchAttr` as
    /// Apple's does: the discriminator `pkdx` and the search terms `trms` of every password, and
    /// the D-Bus attribute map `gena` on an internet password (Apple's have none).
    func applesSpec(for name: AttributeName) -> AttributeSpec? {
        if name == .primaryKeyDiscriminator || name == .searchTerms
            || (itemClass == .internetPassword && name == .generic)
        {
            return nil
        }
        return spec(for: name)
    }
}
