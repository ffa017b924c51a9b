import Foundation

/// The class of a keychain item: generic password, internet password, certificate, key or
/// identity. Raw values are Apple's (`"genp"`, `"inet"`, `"cert"`, `"keys"`, `"idnt"`).
public struct ItemClass: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The four-character class name.
    public let rawValue: String

    /// Creates a class from its raw value; returns `nil` for a class the engine does not know.
    public init?(rawValue: String) {
        guard ["genp", "inet", "cert", "keys", "idnt"].contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    private init(known: String) { rawValue = known }

    /// A generic password (`kSecClassGenericPassword`).
    public static let genericPassword = ItemClass(known: "genp")
    /// An internet password (`kSecClassInternetPassword`).
    public static let internetPassword = ItemClass(known: "inet")
    /// A certificate (`kSecClassCertificate`).
    public static let certificate = ItemClass(known: "cert")
    /// A cryptographic key (`kSecClassKey`).
    public static let key = ItemClass(known: "keys")
    /// An identity: a certificate with its private key (`kSecClassIdentity`).
    public static let identity = ItemClass(known: "idnt")

    /// The five classes, in Apple's order.
    public static let allCases: [ItemClass] = [
        .genericPassword, .internetPassword, .certificate, .key, .identity,
    ]

    /// The raw class name.
    public var description: String { rawValue }
}

/// The name of an item attribute: Apple's four-character raw key (`"acct"`, `"svce"`, …).
public struct AttributeName: RawRepresentable, Hashable, Sendable, Comparable,
    ExpressibleByStringLiteral, CustomStringConvertible
{
    /// The raw attribute key.
    public let rawValue: String
    /// The key's bytes and their count in one word when there are one to seven: the bytes
    /// from the top byte down, the count in the lowest byte; otherwise 0. Comparing,
    /// ordering and hashing a four-character key is then one integer operation, which
    /// every attribute dictionary lookup and sort pays.
    private let word: UInt64

    /// Creates a name from its raw key.
    public init(rawValue: String) {
        self.rawValue = rawValue
        word = Self.pack(rawValue)
    }
    /// Creates a name from a string literal.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    private static func pack(_ key: String) -> UInt64 {
        key.utf8.withContiguousStorageIfAvailable { pack(bytes: $0) } ?? pack(bytes: key.utf8)
    }

    private static func pack(bytes: some Sequence<UInt8>) -> UInt64 {
        var word: UInt64 = 0
        var count: UInt64 = 0
        for byte in bytes {
            guard count < 7 else { return 0 }
            word |= UInt64(byte) << (56 - 8 * count)
            count += 1
        }
        return word | count
    }

    /// Orders names by the bytes of their raw keys (for ASCII keys, the alphabetical order).
    public static func < (lhs: AttributeName, rhs: AttributeName) -> Bool {
        // Zero-padded bytes, then the count: the order of the byte strings.
        if lhs.word != 0 && rhs.word != 0 { return lhs.word < rhs.word }
        return lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    /// Names are equal when their raw keys have the same bytes, as `CFEqual` compares the
    /// `CFString` keys of a SecItem dictionary (no Unicode normalization).
    public static func == (lhs: AttributeName, rhs: AttributeName) -> Bool {
        if lhs.word != 0 || rhs.word != 0 { return lhs.word == rhs.word }
        return UTF8Bytes.equal(lhs.rawValue, rhs.rawValue)
    }

    /// Hashes the key's bytes.
    public func hash(into hasher: inout Hasher) {
        guard word == 0 else { return hasher.combine(word) }
        for byte in rawValue.utf8 { hasher.combine(byte) }
    }

    /// The raw attribute key.
    public var description: String { rawValue }

    /// `kSecAttrAccessible` (`pdmn`).
    public static let accessible: AttributeName = "pdmn"
    /// `kSecAttrAccessControl` (`accc`).
    public static let accessControl: AttributeName = "accc"
    /// `kSecAttrAccess` (`acls`): the item's access list (``AccessList``), which keychaind
    /// enforces for the callers it serves.
    public static let access: AttributeName = "acls"
    /// `kSecAttrAccessGroup` (`agrp`).
    public static let accessGroup: AttributeName = "agrp"
    /// `kSecAttrSynchronizable` (`sync`).
    public static let synchronizable: AttributeName = "sync"
    /// `kSecAttrCreationDate` (`cdat`).
    public static let creationDate: AttributeName = "cdat"
    /// `kSecAttrModificationDate` (`mdat`).
    public static let modificationDate: AttributeName = "mdat"
    /// `kSecAttrLabel` (`labl`).
    public static let label: AttributeName = "labl"
    /// `kSecAttrAccount` (`acct`).
    public static let account: AttributeName = "acct"
    /// `kSecAttrService` (`svce`).
    public static let service: AttributeName = "svce"
    /// `kSecAttrServer` (`srvr`).
    public static let server: AttributeName = "srvr"
    /// `kSecAttrProtocol` (`ptcl`).
    public static let `protocol`: AttributeName = "ptcl"
    /// `kSecAttrAuthenticationType` (`atyp`).
    public static let authenticationType: AttributeName = "atyp"
    /// `kSecAttrPort` (`port`).
    public static let port: AttributeName = "port"
    /// `kSecAttrPath` (`path`).
    public static let path: AttributeName = "path"
    /// `kSecAttrSecurityDomain` (`sdmn`).
    public static let securityDomain: AttributeName = "sdmn"
    /// `kSecAttrComment` (`icmt`).
    public static let comment: AttributeName = "icmt"
    /// `kSecAttrDescription` (`desc`).
    public static let description: AttributeName = "desc"
    /// `kSecAttrGeneric` (`gena`).
    public static let generic: AttributeName = "gena"
    /// A generic password's primary-key discriminator (`pkdx`), Linux only: part of the primary
    /// key when set, so that two Secret Service items with the same service and account but
    /// other attributes are two items. SecItem never sets it and never returns it.
    public static let primaryKeyDiscriminator: AttributeName = "pkdx"
    /// A password's search terms (`trms`, ``SearchTerms``), Linux only: each term has a keyed
    /// hash of its own, so the items with given terms are found through the index (while the
    /// keychain is locked too). The Secret Service keeps a D-Bus item's attributes there. SecItem
    /// never sets it and never returns it.
    public static let searchTerms: AttributeName = "trms"
    /// The tombstone flag (`tomb`) of deleted synchronizable items.
    public static let tombstone: AttributeName = "tomb"
    /// The multi-user marker (`musr`); always empty data on Linux.
    public static let multiUser: AttributeName = "musr"
}

/// A typed attribute value, as stored in the keychain.
///
/// The engine keeps the type the caller gave (Apple returns what was stored), and compares
/// values by the rules of the attribute's ``AttributeKind``.
public enum AttributeValue: Hashable, Sendable, CustomStringConvertible {
    /// A string.
    case string(String)
    /// Raw bytes.
    case data(Data)
    /// An integer (Apple's CFNumber; booleans are stored as 0 and 1).
    case number(Int64)
    /// A point in time (Apple compares the double seconds since 2001-01-01 exactly).
    case date(Date)

    /// A redacted description: the type and size, never the value.
    public var description: String {
        switch self {
        case .string(let s): "string(\(s.utf8.count) bytes)"
        case .data(let d): "data(\(d.count) bytes)"
        case .number: "number"
        case .date: "date"
        }
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The bytes, if this is data.
    public var dataValue: Data? {
        if case .data(let d) = self { return d }
        return nil
    }

    /// The integer, if this is a number.
    public var numberValue: Int64? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The date, if this is a date.
    public var dateValue: Date? {
        if case .date(let d) = self { return d }
        return nil
    }
}

/// A set of attribute values keyed by attribute name.
public typealias Attributes = [AttributeName: AttributeValue]

/// When an item's secret may be read: Apple's accessibility values (`kSecAttrAccessible`).
public struct Accessibility: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Apple's raw value (`"ak"`, `"ck"`, `"dk"`, `"aku"`, `"cku"`, `"dku"`, `"akpu"`).
    public let rawValue: String

    /// Creates an accessibility from Apple's raw value; `nil` for an unknown value.
    public init?(rawValue: String) {
        guard Self.all.contains(where: { $0.rawValue == rawValue }) else { return nil }
        self.rawValue = rawValue
    }

    private init(known: String) { rawValue = known }

    /// Readable while the keychain is unlocked (`kSecAttrAccessibleWhenUnlocked`).
    public static let whenUnlocked = Accessibility(known: "ak")
    /// Readable after the first unlock (`kSecAttrAccessibleAfterFirstUnlock`).
    public static let afterFirstUnlock = Accessibility(known: "ck")
    /// Always readable (`kSecAttrAccessibleAlways`).
    public static let always = Accessibility(known: "dk")
    /// Unlocked and a password set; never leaves this device (`…WhenPasscodeSetThisDeviceOnly`).
    public static let whenPasscodeSetThisDeviceOnly = Accessibility(known: "akpu")
    /// Unlocked; never leaves this device (`…WhenUnlockedThisDeviceOnly`).
    public static let whenUnlockedThisDeviceOnly = Accessibility(known: "aku")
    /// After first unlock; never leaves this device (`…AfterFirstUnlockThisDeviceOnly`).
    public static let afterFirstUnlockThisDeviceOnly = Accessibility(known: "cku")
    /// Always; never leaves this device (`…AlwaysThisDeviceOnly`).
    public static let alwaysThisDeviceOnly = Accessibility(known: "dku")

    /// Every accessibility value.
    public static let all: [Accessibility] = [
        .whenUnlocked, .afterFirstUnlock, .always, .whenPasscodeSetThisDeviceOnly,
        .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
    ]

    /// The protection class whose key seals items of this accessibility.
    public var protectionClass: ProtectionClass {
        switch rawValue {
        case "ak": .whenUnlocked
        case "ck": .afterFirstUnlock
        case "dk": .always
        case "aku", "akpu": .whenUnlockedThisDeviceOnly
        case "cku": .afterFirstUnlockThisDeviceOnly
        default: .alwaysThisDeviceOnly
        }
    }

    /// Whether the item is bound to this device (a "…ThisDeviceOnly" value).
    public var isThisDeviceOnly: Bool { protectionClass.isThisDeviceOnly }

    /// The raw accessibility value.
    public var description: String { rawValue }
}

/// A protection class: one random key per class seals the items of that class.
///
/// The raw value is stored in each item's row (it selects the key to use) and is part of the
/// associated data of every sealed blob.
public enum ProtectionClass: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Available while the keychain is unlocked.
    case whenUnlocked = 1
    /// Available from the first unlock until the keychain handle is closed.
    case afterFirstUnlock = 2
    /// Always available.
    case always = 3
    /// As ``whenUnlocked``, and its key also depends on the device key.
    case whenUnlockedThisDeviceOnly = 4
    /// As ``afterFirstUnlock``, and its key also depends on the device key.
    case afterFirstUnlockThisDeviceOnly = 5
    /// As ``always``, wrapped by the device key alone.
    case alwaysThisDeviceOnly = 6

    /// Whether the class key depends on the device key.
    public var isThisDeviceOnly: Bool { rawValue >= 4 }

    /// The lock tier: when-unlocked, after-first-unlock or always.
    package var tier: Tier {
        switch self {
        case .whenUnlocked, .whenUnlockedThisDeviceOnly: .whenUnlocked
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: .afterFirstUnlock
        case .always, .alwaysThisDeviceOnly: .always
        }
    }

    package enum Tier { case whenUnlocked, afterFirstUnlock, always }

    /// The class's name.
    public var description: String {
        switch self {
        case .whenUnlocked: "whenUnlocked"
        case .afterFirstUnlock: "afterFirstUnlock"
        case .always: "always"
        case .whenUnlockedThisDeviceOnly: "whenUnlockedThisDeviceOnly"
        case .afterFirstUnlockThisDeviceOnly: "afterFirstUnlockThisDeviceOnly"
        case .alwaysThisDeviceOnly: "alwaysThisDeviceOnly"
        }
    }
}
