import Foundation

/// A keychain item: a class, attribute values and an optional secret.
///
/// ```swift
/// let item = Item(
///     class: .genericPassword,
///     attributes: [.service: .string("api.example.com"), .account: .string("alice")],
///     data: Data("s3cret".utf8))
/// try keychain.add(item)
/// ```
///
/// An item's `description` never shows its secret or its attribute values.
public struct Item: Sendable, CustomStringConvertible {
    /// The item's class.
    public var itemClass: ItemClass
    /// The item's attributes, keyed by Apple's raw attribute names.
    public var attributes: Attributes
    /// The secret (`kSecValueData`), if the item has one.
    public var data: Data?
    /// The item's stable identity, assigned when it is added and kept across updates.
    public package(set) var persistentID: UUID?

    /// Creates an item to add.
    /// - Parameters:
    ///   - itemClass: The item's class.
    ///   - attributes: Attribute values; omitted primary-key attributes get their defaults.
    ///   - data: The secret, or `nil` for an item without data.
    public init(class itemClass: ItemClass, attributes: Attributes = [:], data: Data? = nil) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.data = data
    }

    /// The item's accessibility, `nil` if not set.
    public var accessibility: Accessibility? {
        attributes[.accessible]?.stringValue.flatMap(Accessibility.init(rawValue:))
    }

    /// The item's access group, `nil` if not set.
    public var accessGroup: String? { attributes[.accessGroup]?.stringValue }

    /// Whether the item is synchronizable.
    public var isSynchronizable: Bool { (attributes[.synchronizable]?.numberValue ?? 0) != 0 }

    /// The class and attribute names; never a secret or an attribute value.
    public var description: String {
        let names = attributes.keys.sorted().map(\.rawValue).joined(separator: ",")
        return "Item(\(itemClass), attributes: [\(names)], data: \(data.map { "\($0.count) bytes" } ?? "none"))"
    }
}

/// Which items a search, update or delete addresses.
///
/// Every attribute is an exact-equality test; all tests must hold (as Apple's
/// `keychain/securityd/SecDbQuery.c` matches).
public struct ItemQuery: Sendable {
    /// How a query treats the synchronizable flag when it does not name one.
    public enum Synchronizable: Sendable, Hashable {
        /// Only items that are not synchronizable: Apple's default.
        case no
        /// Only synchronizable items.
        case yes
        /// Both (`kSecAttrSynchronizableAny`).
        case any
    }

    /// The class to search, or `nil` when ``persistentID`` names the item.
    public var itemClass: ItemClass?
    /// Attribute values that matching items must have. An `agrp` value restricts the search
    /// to that access group, which the caller must be allowed to use.
    public var attributes: Attributes
    /// Which synchronizable state to match (ignored when `attributes` contains `sync`).
    public var synchronizable: Synchronizable
    /// One item's persistent identity.
    public var persistentID: UUID?
    /// The largest number of items to return; `nil` for all.
    public var limit: Int?
    /// Whether to match tombstones of deleted synchronizable items.
    public var includesTombstones: Bool
    /// What the search does with an item whose access control asks for user authentication.
    public var authenticationUI: AuthenticationUI = .ignore
    /// Whether the caller opens the application-password seal of the secrets it reads
    /// (``StoredAccessControl/needsApplicationPassword``) itself: items that ask for nothing else
    /// are then returned, their secrets still sealed. `Security` sets it when the query's
    /// `kSecUseAuthenticationContext` holds an application password.
    public var opensApplicationPassword = false
    /// A proof that the person answered for the caller (an evaluated `LAContext` given as
    /// `kSecUseAuthenticationContext`), which a read that may ask
    /// (``AuthenticationUI-swift.enum/allow``) offers before anyone asks: where it was made
    /// (keychaind, or this process) and for this caller, within its lifetime, it answers for the
    /// read. It is worth nothing to any other process.
    public var ownerProof: Data?
    /// Only internet passwords whose server is this host or one of its subdomains
    /// (`kSecMatchHostOrSubdomainOfHost`); checked after decryption, before any secret is.
    public var hostOrSubdomain: String?

    /// What a search does with an item whose access control asks for its owner's
    /// authentication (user presence, a passcode, biometry, a companion). The check is made by
    /// the keychain, so such an item's secret never reaches a caller the person has not
    /// answered for.
    public enum AuthenticationUI: Sendable, Hashable {
        /// The engine's default, for listings: the item's attributes are returned like any
        /// other's, but never its secret. A search for secrets that matches such an item fails
        /// with `.interactionNotAllowed` (``KeychainError/Reason/userAuthenticationNeeded``);
        /// ``KeychainCore/KeychainDatabase/findReadable(_:includeData:)`` reports the item
        /// among the unreadable ones instead.
        case ignore
        /// The search fails with `.interactionNotAllowed`
        /// (``KeychainError/Reason/userAuthenticationNeeded``): Apple's answer when no
        /// interface may be shown (`kSecUseAuthenticationUIFail`).
        case fail
        /// The item is left out (`kSecUseAuthenticationUISkip`).
        case skip
        /// The person is asked (`kSecUseAuthenticationUIAllow`): by keychaind for the calling
        /// process, or by this process when it hosts the engine itself. Cancelling is
        /// `.userCanceled`, failing `.authFailed`, nobody to ask with `.interactionNotAllowed`.
        case allow
    }

    /// Creates a query.
    public init(
        class itemClass: ItemClass?, attributes: Attributes = [:],
        synchronizable: Synchronizable = .no, persistentID: UUID? = nil, limit: Int? = nil,
        includesTombstones: Bool = false
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.synchronizable = synchronizable
        self.persistentID = persistentID
        self.limit = limit
        self.includesTombstones = includesTombstones
    }
}

/// The stored form of an item's access control (`accc`): Apple's `SecAccessControlCreateFlags`
/// as 8 big-endian bytes, then the protection value (`ak`, `cku`, …), then what the item is bound
/// to when it was made. Items without a companion keep the first form: for
/// `.biometryCurrentSet`, a zero byte and the fingerprint reader's domain state. Items bound to
/// companions have a one byte, the number of records, then the records, each a tag byte, a
/// 2-byte big-endian length and the value: 1, the reader's domain state; 2, a companion
/// (``CompanionKey/serialized``).
/// `Security` writes it; the keychain reads it to tell whether an item needs user authentication.
public struct StoredAccessControl: Sendable, Hashable {
    /// `SecAccessControlCreateFlags`' raw value.
    public var flags: UInt64
    /// The protection value (`kSecAttrAccessible…`).
    public var protection: String
    /// The reader's domain state (its enrolled fingers) when a `.biometryCurrentSet` item was
    /// made: only a finger matched in that state answers it.
    public var biometryState: Data?
    /// The security keys paired when a `.companion` item was made: only a touch of one of them
    /// answers it (a key paired later does not).
    public var companions: [CompanionKey]

    /// An access control of `flags` for items of `protection`.
    public init(flags: UInt64, protection: String, biometryState: Data? = nil, companions: [CompanionKey] = []) {
        self.flags = flags
        self.protection = protection
        self.biometryState = biometryState
        self.companions = companions
    }

    /// Reads the stored form; `nil` when it is too short or its records are malformed.
    public init?(serialized data: Data) {
        guard data.count > 8 else { return nil }
        flags = data.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let rest = data.dropFirst(8)
        companions = []
        guard let end = rest.firstIndex(where: { $0 < 2 }) else {
            protection = String(decoding: rest, as: UTF8.self)
            return
        }
        protection = String(decoding: rest[..<end], as: UTF8.self)
        guard rest[end] == 1 else {
            biometryState = Data(rest[(end + 1)...])
            return
        }
        var records = rest[(end + 1)...]
        guard let count = records.first else { return nil }
        records = records.dropFirst()
        for _ in 0..<count {
            guard records.count >= 3 else { return nil }
            let tag = records[records.startIndex]
            let length = Int(records[records.startIndex + 1]) << 8 | Int(records[records.startIndex + 2])
            let value = records.dropFirst(3).prefix(length)
            guard value.count == length else { return nil }
            switch tag {
            case 1: biometryState = Data(value)
            case 2:
                guard let key = CompanionKey(serialized: Data(value)) else { return nil }
                companions.append(key)
            default: return nil
            }
            records = records.dropFirst(3 + length)
        }
        guard records.isEmpty else { return nil }
    }

    /// The stored form.
    public var serialized: Data {
        var data = withUnsafeBytes(of: flags.bigEndian) { Data($0) }
        data.append(Data(protection.utf8))
        guard !companions.isEmpty else {
            if let biometryState {
                data.append(0)
                data.append(biometryState)
            }
            return data
        }
        data.append(1)
        // At most 254 keys (the registry pairs far fewer, ``CompanionKey/mostPaired``).
        let kept = companions.prefix(254)
        data.append(UInt8(kept.count + (biometryState == nil ? 0 : 1)))
        func record(_ tag: UInt8, _ value: Data) {
            data.append(contentsOf: [tag, UInt8(value.count >> 8), UInt8(truncatingIfNeeded: value.count)])
            data.append(value)
        }
        if let biometryState { record(1, biometryState) }
        for companion in kept { record(2, companion.serialized) }
        return data
    }

    /// `SecAccessControlCreateFlags.applicationPassword`: the secret is sealed under a key derived
    /// from a password the app gives (`LAContext.setCredential(_:type:)`), by `Security`.
    public static let applicationPasswordFlag: UInt64 = 1 << 31
    /// `.or` and `.and`, which combine the other constraints and ask for nothing themselves.
    static let conjunctionFlags: UInt64 = 1 << 14 | 1 << 15

    /// Whether reading the item needs user authentication: any flag does but
    /// `privateKeyUsage` (1 << 30), which only says a token key may be used.
    public var requiresAuthentication: Bool { requiresAuthentication(openingApplicationPassword: false) }

    /// Whether the item's secret is sealed under an application password.
    public var needsApplicationPassword: Bool { flags & Self.applicationPasswordFlag != 0 }

    /// Whether reading the item needs what its reader does not bring: a constraint on the user
    /// (presence, passcode, biometry, companion, or any flag this version does not know), or an
    /// application password when the reader does not open that seal itself
    /// (`openingApplicationPassword`). `.or` and `.and` alone, and `privateKeyUsage`, ask for
    /// nothing; an application password is asked for in addition to the other constraints, as
    /// Apple documents it.
    public func requiresAuthentication(openingApplicationPassword: Bool) -> Bool {
        constraints != 0 || (needsApplicationPassword && !openingApplicationPassword)
    }

    /// Whether the owner's own authentication (polkit's, with the PAM stack the administrator
    /// chose for it) answers every constraint on the person: `userPresence` and `devicePasscode`
    /// do. Biometry and a companion need their own device, so an item asking for one of them is
    /// answered by it alone only when `.or` offers `userPresence` or `devicePasscode` beside it.
    /// A flag this version does not know is never answered.
    public var isAnsweredByOwnerAuthentication: Bool {
        let owner = Self.ownerFlags & constraints
        guard flags & Self.orFlag != 0 else { return constraints & ~Self.ownerFlags == 0 }
        return owner != 0
    }

    /// The constraints on the person: every flag but `privateKeyUsage`, `applicationPassword`,
    /// `.or` and `.and`.
    private var constraints: UInt64 {
        flags & ~(TokenKeys.privateKeyUsageFlag | Self.applicationPasswordFlag | Self.conjunctionFlags)
    }

    /// Whether what the person answered meets every constraint on them (any of them, with
    /// `.or`): the owner's authentication answers `userPresence` and `devicePasscode`; a matched
    /// finger answers `userPresence` (Apple's "biometry or passcode"), `biometryAny`, and
    /// `biometryCurrentSet` when it matched in the state the item was made in; a touch of a
    /// security key (`companion`, the public key that signed) answers `companion` when the key
    /// was paired as the item was made. A flag this version does not know is never answered.
    public func isAnswered(owner: Bool, finger: FingerAnswer?, companion: Data? = nil) -> Bool {
        var matched: Data?
        if case .matched(let state)? = finger { matched = state }
        var met: [Bool] = []
        for bit in 0..<64 where constraints & (1 << bit) != 0 {
            switch UInt64(1) << bit {
            case Self.userPresenceFlag: met.append(owner || matched != nil)
            case Self.devicePasscodeFlag: met.append(owner)
            case Self.biometryAnyFlag: met.append(matched != nil)
            case Self.biometryCurrentSetFlag: met.append(matched != nil && matched == biometryState)
            case Self.companionFlag:
                met.append(companion.map { key in companions.contains { $0.publicKey == key } } ?? false)
            default: met.append(false)
            }
        }
        return flags & Self.orFlag != 0 ? met.contains(true) : !met.contains(false)
    }

    /// What the person is to answer next for this item, given what they answered (`owner`, their
    /// password; `finger`, the reader; `companion`, a security key): of the questions not asked
    /// yet, the fewest that would complete it, the first of them in the order owner (whose
    /// polkit question may itself take a finger), finger, companion; `nil` when nothing asked
    /// here completes it (a companion item made before any key was paired).
    public func nextQuestion(owner: Bool, finger: FingerAnswer?, companion: Data? = nil) -> Question? {
        var matched: FingerAnswer?
        if case .matched? = finger { matched = finger }
        // What a match would be: in the reader's state when read, else in the item's; a touch,
        // of a key paired with the item.
        let match = FingerAnswer.matched(state: finger?.state ?? biometryState ?? Data("any finger".utf8))
        var pending: [Question] = []
        if !owner { pending.append(.owner) }
        if matched == nil { pending.append(.finger) }
        if companion == nil, !companions.isEmpty { pending.append(.companion) }
        func completes(_ asked: [Question]) -> Bool {
            isAnswered(
                owner: owner || asked.contains(.owner), finger: asked.contains(.finger) ? match : matched,
                companion: asked.contains(.companion) ? companions[0].publicKey : companion)
        }
        // Each set of pending questions as a mask over them, the fewest first; the first asked of
        // the set is its lowest bit.
        let masks = (1..<(1 << pending.count)).sorted { ($0.nonzeroBitCount, $0) < ($1.nonzeroBitCount, $1) }
        let mask = masks.first { mask in completes(pending.indices.filter { mask & 1 << $0 != 0 }.map { pending[$0] }) }
        return mask.map { pending[$0.trailingZeroBitCount] }
    }

    /// Whom ``nextQuestion(owner:finger:companion:)`` asks.
    public enum Question: Sendable, Hashable {
        /// The owner, through polkit.
        case owner
        /// A finger on the reader.
        case finger
        /// A touch of a paired security key.
        case companion
    }

    /// Whether the reader's enrolled fingers, now in `state`, have changed since the item was
    /// made so that nothing can answer it any more: a `.biometryCurrentSet` item, as iOS
    /// invalidates such items when a finger is added or removed.
    public func isInvalidated(byFingersIn state: Data) -> Bool {
        flags & Self.biometryCurrentSetFlag != 0 && biometryState != state && !isAnsweredByOwnerAuthentication
            && !isAnswered(owner: false, finger: .matched(state: state))
            && !isAnswered(owner: false, finger: nil, companion: companions.first?.publicKey)
    }

    /// `userPresence` (1 << 0) and `devicePasscode` (1 << 4).
    static let ownerFlags: UInt64 = 1 << 0 | 1 << 4
    static let userPresenceFlag: UInt64 = 1 << 0
    static let biometryAnyFlag: UInt64 = 1 << 1
    /// `biometryCurrentSet` (1 << 3).
    public static let biometryCurrentSetFlag: UInt64 = 1 << 3
    static let devicePasscodeFlag: UInt64 = 1 << 4
    /// `companion` (1 << 5).
    public static let companionFlag: UInt64 = 1 << 5
    /// `.or` (1 << 14).
    static let orFlag: UInt64 = 1 << 14
}

/// The access groups a caller may use, with iOS's rules (`SecServerAccessGroupsAllows`,
/// `keychain/securityd/SecItemServer.c` in apple-oss-distributions/Security).
///
/// The first group is where items are added when the caller names none. The entry `"*"`
/// allows every group. On Linux the list comes from ``fromEnvironment(_:)``: the
/// `KEYCHAIN_ACCESS_GROUPS` variable (comma-separated), or ``standard`` when it is unset.
public struct AccessGroups: Sendable, Hashable {
    /// The groups, in order of preference.
    public var groups: [String]

    /// Whether the caller may create, delete, choose, rename, re-key and lock all of the user's
    /// keychains: the user's own programs. True when the groups include `*`, and for every
    /// program of the user the agent cannot tell apart from the `security` tool (an unidentified
    /// caller), whatever groups it was given: `KEYCHAIN_ACCESS_GROUPS=default` narrows what such
    /// programs read, not who manages the keychains. Never for a sandboxed app or a
    /// manifest-bound executable without `*`.
    public var managesKeychains: Bool

    /// Creates a list of groups.
    /// - Parameters:
    ///   - groups: The groups, in order of preference.
    ///   - managesKeychains: Whether the caller manages keychains; by default, when `groups`
    ///     include `*`.
    public init(_ groups: [String], managesKeychains: Bool? = nil) {
        self.groups = groups
        self.managesKeychains = managesKeychains ?? groups.contains("*")
    }

    /// The group that items go to when none is named, on an unconfigured process.
    public static let defaultGroupName = "default"

    /// The list used when nothing is configured: add to `"default"`, see every group.
    public static let standard = AccessGroups([defaultGroupName, "*"])

    /// The name of the environment variable that configures a process's groups.
    public static let environmentVariable = "KEYCHAIN_ACCESS_GROUPS"

    /// The groups configured for this process by `KEYCHAIN_ACCESS_GROUPS`, else ``standard``.
    public static func fromEnvironment(
        _ environment: [String: String]? = nil
    ) -> AccessGroups {
        guard let value = (environment ?? ProcessEnvironment.current())[environmentVariable] else {
            return .standard
        }
        let groups = value.split(separator: ",").map(trimmingBlanks).filter { !$0.isEmpty }
        return AccessGroups(groups)
    }

    /// `text` without the blanks at either end: what Foundation's
    /// `trimmingCharacters(in: .whitespaces)` removes (tab, the space separators of Unicode's
    /// category Zs, and the zero-width space Foundation's set still counts), without loading
    /// Foundation's character sets in every short process.
    package static func trimmingBlanks(_ text: Substring) -> String {
        func isBlank(_ scalar: Unicode.Scalar) -> Bool {
            if scalar.isASCII { return scalar == " " || scalar == "\t" }
            return scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
            let last = scalars.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    package static let token = "com.apple.token"

    package var allowsAll: Bool { groups.contains("*") }
    package var writable: [String] { groups.filter { $0 != Self.token } }

    /// The group of an item added without an explicit group: the first group that is
    /// neither `"*"` nor the read-only token group.
    public var defaultGroup: String? { groups.first { $0 != "*" && $0 != Self.token } }

    package func canRead(_ group: String) -> Bool { allowsAll || groups.contains(group) }
    package func canWrite(_ group: String) -> Bool {
        group != Self.token && (allowsAll || groups.contains(group))
    }
}
