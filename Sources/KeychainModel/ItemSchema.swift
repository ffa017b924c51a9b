import Foundation

/// How an attribute's values are converted, stored and compared (Apple's `SecDbAttrKind`,
/// `keychain/securityd/SecDbItem.h` in apple-oss-distributions/Security).
public enum AttributeKind: Sendable, Hashable {
    /// Data, string or number kept as given.
    case blob
    /// Bytes; a string becomes its UTF-8 bytes, a number its 4-byte native-endian form.
    case data
    /// A string; data is decoded as UTF-8.
    case string
    /// An accessibility value (`pdmn`).
    case access
    /// A number; a string that is exactly a decimal integer becomes that number.
    case number
    /// The synchronizable flag, 0 or 1.
    case sync
    /// A date.
    case date
    /// A 0- or 16-byte identifier (`musr`).
    case uuid
    /// A serialized access-control object (`accc`) or access list (`acls`): kept as given,
    /// never indexed.
    case accessControl
    /// A set of search terms (``SearchTerms``, stored encoded as data), each indexed on its own:
    /// a filter on it matches the items that have every term it lists.
    case terms
}

/// The description of one attribute of one item class.
public struct AttributeSpec: Sendable, Hashable {
    /// The attribute's name.
    public var name: AttributeName
    /// How its values are converted and compared.
    public var kind: AttributeKind
    /// Whether equality is on the value's bytes, so that a string and data with the same
    /// UTF-8 bytes are the same value (Apple's hashed attributes).
    public var comparesBytes: Bool
    /// The value a primary-key attribute has when an item omits it.
    public var defaultValue: AttributeValue?
    /// Whether ``defaultValue`` is stored on add (`false` for `vwht`, `tkid` and `ggrp`, which
    /// count as `""` for uniqueness but are returned only when set).
    public var storesDefault: Bool = true
    /// Whether this primary-key attribute counts only when an item has a non-empty value for it
    /// (``AttributeName/primaryKeyDiscriminator``): without one, the item's primary key is
    /// exactly Apple's, and so is its tag in files written before the attribute existed.
    public var countsOnlyWhenSet: Bool = false

    /// Describes an attribute (the schema's tables and the engine's column tags).
    package init(
        name: AttributeName, kind: AttributeKind, comparesBytes: Bool, defaultValue: AttributeValue?,
        storesDefault: Bool = true, countsOnlyWhenSet: Bool = false
    ) {
        self.name = name
        self.kind = kind
        self.comparesBytes = comparesBytes
        self.defaultValue = defaultValue
        self.storesDefault = storesDefault
        self.countsOnlyWhenSet = countsOnlyWhenSet
    }

    /// Whether `value` leaves this attribute out of the primary key.
    package func isLeftOutOfPrimaryKey(_ value: AttributeValue?) -> Bool {
        guard countsOnlyWhenSet else { return false }
        switch value {
        case nil: return true
        case .data(let data)?: return data.isEmpty
        case .string(let string)?: return string.isEmpty
        default: return false
        }
    }
}

/// The attributes, primary keys and defaults of each item class (Apple's
/// `keychain/securityd/SecItemSchema.c` in apple-oss-distributions/Security).
public struct ItemSchema: Sendable {
    /// The class described.
    public let itemClass: ItemClass
    /// Every attribute the class accepts, by name.
    public let attributes: [AttributeName: AttributeSpec]
    /// The attributes whose values together identify an item, in a fixed order.
    public let primaryKey: [AttributeName]
    /// The specifications of ``primaryKey``'s attributes, in the same order.
    package let primaryKeySpecs: [AttributeSpec]
    /// The specifications of the attributes whose values are indexed (tag rows, or the
    /// primary-key prefix).
    package let indexedAttributes: [AttributeName: AttributeSpec]
    /// The two primary-key attributes whose tags begin the class's primary-key tags in the
    /// engine's `lookupKeys` index layout, or `nil` for the first indexed ones of ``primaryKey``
    /// (as in its `primaryKeyPrefix` layout).
    package let lookupKeys: [AttributeName]?

    /// The schema of a class.
    public static func of(_ itemClass: ItemClass) -> ItemSchema {
        switch itemClass {
        case .genericPassword: genericPassword
        case .internetPassword: internetPassword
        case .certificate: certificate
        case .key: key
        default: identity
        }
    }

    /// The specification of an attribute, or `nil` when the class has no such attribute.
    public func spec(for name: AttributeName) -> AttributeSpec? { attributes[name] }

    /// Whether two attribute sets have the same primary key: equal values (or defaults) for
    /// every primary-key attribute, as the primary-key tag compares them.
    package func hasSamePrimaryKey(_ a: Attributes, _ b: Attributes) -> Bool { agree(a, b, on: primaryKey) }

    /// The class's own primary-key attributes, as Apple defines them: without the ones every
    /// class shares (access group, synchronizable, …) and without Linux's discriminator `pkdx`.
    package var ownPrimaryKey: [AttributeName] {
        primaryKey.filter { !Self.commonPrimaryKey.contains($0) && $0 != .primaryKeyDiscriminator }
    }

    /// Whether `a` and `b` have equal values (or defaults) for each of `names`, as the
    /// primary-key tag compares them.
    package func agree(_ a: Attributes, _ b: Attributes, on names: [AttributeName]) -> Bool {
        names.allSatisfy { name in
            guard let spec = spec(for: name) else { return true }
            if spec.isLeftOutOfPrimaryKey(a[name]) && spec.isLeftOutOfPrimaryKey(b[name]) { return true }
            switch (a[name] ?? spec.defaultValue, b[name] ?? spec.defaultValue) {
            case (nil, nil): return true
            case (let x?, let y?): return spec.equal(x, y)
            default: return false
            }
        }
    }

    // MARK: Tables

    private static let commonPrimaryKey: [AttributeName] = [
        "agrp", "sync", "vwht", "tkid", "musr", "ggrp",
    ]

    private static func a(
        _ name: AttributeName, _ kind: AttributeKind, bytes: Bool = false,
        default value: AttributeValue? = nil
    ) -> AttributeSpec {
        AttributeSpec(name: name, kind: kind, comparesBytes: bytes, defaultValue: value)
    }

    private static func countedOnlyWhenSet(_ spec: AttributeSpec) -> AttributeSpec {
        var spec = spec
        spec.countsOnlyWhenSet = true
        return spec
    }

    private static func unstored(_ spec: AttributeSpec) -> AttributeSpec {
        var spec = spec
        spec.storesDefault = false
        return spec
    }

    private static let common: [AttributeSpec] = [
        a("cdat", .date), a("mdat", .date), a("labl", .blob, bytes: true),
        a("agrp", .string), a("pdmn", .access), a("sync", .sync, default: .number(0)),
        a("tomb", .number), a("musr", .uuid, default: .data(Data())),
        unstored(a("vwht", .string, default: .string(""))), unstored(a("tkid", .string, default: .string(""))),
        unstored(a("ggrp", .string, default: .string(""))), a("accc", .accessControl), a("acls", .accessControl),
    ]

    private static let passwordCommon: [AttributeSpec] = [
        a("desc", .blob, bytes: true), a("icmt", .blob, bytes: true), a("crtr", .number),
        a("type", .number), a("scrp", .number), a("alis", .blob, bytes: true),
        a("invi", .number), a("nega", .number), a("cusi", .number),
        a("prot", .blob, bytes: true),
    ]

    /// The schema of a class; `lookupKeys` are the two primary-key attributes whose tags begin
    /// its primary-key tags in the engine's `lookupKeys` index layout (by default, as in its
    /// `primaryKeyPrefix` layout).
    private static func make(
        _ itemClass: ItemClass, _ specs: [AttributeSpec], primaryKey: [AttributeName],
        lookupKeys: [AttributeName]? = nil
    ) -> ItemSchema {
        var table: [AttributeName: AttributeSpec] = [:]
        for spec in common + specs where table[spec.name] == nil { table[spec.name] = spec }
        let primaryKey = primaryKey + commonPrimaryKey
        return ItemSchema(
            itemClass: itemClass, attributes: table, primaryKey: primaryKey,
            primaryKeySpecs: primaryKey.compactMap { table[$0] },
            indexedAttributes: table.filter { $0.value.isIndexed }, lookupKeys: lookupKeys)
    }

    package static let genericPassword = make(
        .genericPassword,
        passwordCommon + [
            a("acct", .blob, bytes: true, default: .string("")),
            a("svce", .blob, bytes: true, default: .string("")),
            a("gena", .blob, bytes: true),
            countedOnlyWhenSet(a("pkdx", .blob, bytes: true)),
            a("trms", .terms),
        ],
        primaryKey: ["acct", "svce", "pkdx"], lookupKeys: ["svce", "acct"])

    package static let internetPassword = make(
        .internetPassword,
        passwordCommon + [
            a("acct", .blob, bytes: true, default: .string("")),
            a("sdmn", .blob, bytes: true, default: .string("")),
            a("srvr", .blob, bytes: true, default: .string("")),
            a("ptcl", .number, default: .number(0)),
            a("atyp", .blob, bytes: true, default: .string("")),
            a("port", .number, default: .number(0)),
            a("path", .blob, bytes: true, default: .string("")),
            // A Secret Service item's attribute map and its digest (see the generic password's).
            a("gena", .blob, bytes: true),
            countedOnlyWhenSet(a("pkdx", .blob, bytes: true)),
            a("trms", .terms),
        ],
        primaryKey: ["acct", "sdmn", "srvr", "ptcl", "atyp", "port", "path", "pkdx"], lookupKeys: ["srvr", "acct"])

    private static let certificateSpecs: [AttributeSpec] = [
        a("ctyp", .number, default: .number(0)), a("cenc", .number),
        a("alis", .blob, bytes: true), a("subj", .data, bytes: true),
        a("issr", .data, bytes: true, default: .data(Data())),
        a("slnr", .data, bytes: true, default: .data(Data())),
        a("skid", .data, bytes: true), a("pkhh", .data),
    ]

    package static let certificate = make(
        .certificate, certificateSpecs, primaryKey: ["ctyp", "issr", "slnr"])

    private static let referenceDate = AttributeValue.date(Date(timeIntervalSinceReferenceDate: 0))

    private static let keySpecs: [AttributeSpec] =
        [
            a("kcls", .number, bytes: true, default: .number(0)),
            a("alis", .blob, bytes: true),
            a("klbl", .data, default: .data(Data())),
            a("atag", .blob, bytes: true, default: .string("")),
            a("crtr", .number, default: .number(0)), a("type", .number, default: .number(0)),
            a("bsiz", .number, default: .number(0)), a("esiz", .number, default: .number(0)),
            a("sdat", .date, default: referenceDate), a("edat", .date, default: referenceDate),
        ]
        + [
            "perm", "priv", "modi", "sens", "asen", "extr", "next", "encr", "decr", "drve",
            "sign", "vrfy", "snrc", "vyrc", "wrap", "unwp",
        ].map { a(AttributeName(rawValue: $0), .number) }

    package static let key = make(
        .key, keySpecs,
        primaryKey: ["kcls", "klbl", "atag", "crtr", "type", "bsiz", "esiz", "sdat", "edat"])

    /// Identities accept any certificate or key attribute (certificate attributes first).
    package static let identity = make(.identity, certificateSpecs + keySpecs, primaryKey: [])
}

// MARK: - Value conversion

extension AttributeSpec {
    /// Whether the engine indexes the attribute's values (by keyed hashes): every attribute
    /// but the synchronizable flag, identities, access control, accessibility, dates, the
    /// access group and the tombstone flag.
    package var isIndexed: Bool {
        switch kind {
        case .sync, .uuid, .accessControl, .access, .date: false
        default: name != .accessGroup && name != .tombstone
        }
    }

    /// Converts a caller's value to the stored form for this attribute (as Apple's
    /// `keychain/securityd/SecDbItem.c` does for its kind).
    /// - Throws: ``KeychainError/Code/parameter`` when the value's type does not fit.
    public func normalize(_ value: AttributeValue) throws -> AttributeValue {
        switch (kind, value) {
        case (.blob, .date):
            throw KeychainError.parameter("attribute \(name) does not take a date")
        case (.blob, _):
            return value
        case (.data, .data):
            return value
        case (.data, .string(let s)):
            return .data(Data(s.utf8))
        case (.data, .number(let n)):
            return .data(Self.int32Bytes(n))
        case (.string, .string), (.access, .string):
            return value
        case (.string, .data(let d)), (.access, .data(let d)):
            guard let s = String(data: d, encoding: .utf8) else {
                throw KeychainError.parameter("attribute \(name) needs UTF-8 text")
            }
            return .string(s)
        case (.number, .number):
            return value
        case (.number, .string(let s)):
            if let n = Int64(s), String(n) == s { return .number(n) }
            return value
        case (.sync, .number(let n)):
            return .number(n == 0 ? 0 : 1)
        case (.sync, .string(let s)):
            if let n = Int64(s), String(n) == s { return .number(n == 0 ? 0 : 1) }
        case (.date, .date):
            return value
        case (.uuid, .data(let d)) where d.isEmpty || d.count == 16:
            return value
        case (.accessControl, .data):
            return value
        case (.terms, .data(let d)):
            guard let terms = SearchTerms(encoded: d) else {
                throw KeychainError.parameter("attribute \(name) needs encoded search terms")
            }
            return .data(terms.encoded)
        default:
            break
        }
        throw KeychainError.parameter("attribute \(name) does not take a value of that type")
    }

    package static func int32Bytes(_ n: Int64) -> Data {
        withUnsafeBytes(of: Int32(truncatingIfNeeded: n)) { Data($0) }
    }

    /// The bytes that identify a value for equality, uniqueness and the keyed index.
    ///
    /// Byte-compared attributes use the value's bytes alone, so a string and data with
    /// the same UTF-8 bytes are equal; other attributes include the value's type.
    package func canonicalBytes(_ value: AttributeValue) -> Data {
        if comparesBytes {
            switch value {
            case .string(let s): return Data(s.utf8)
            case .data(let d): return d
            case .number(let n): return Self.int32Bytes(n)
            case .date(let d): return Self.dateBytes(d)
            }
        }
        switch value {
        case .string(let s): return Data([value.typeByte]) + Data(s.utf8)
        case .data(let d): return Data([value.typeByte]) + d
        case .number(let n): return Data([value.typeByte]) + withUnsafeBytes(of: n.bigEndian) { Data($0) }
        case .date(let d): return Data([value.typeByte]) + Self.dateBytes(d)
        }
    }

    /// Whether two values are equal for this attribute: the same answer as comparing their
    /// ``canonicalBytes(_:)``, without building them when both values have the same type.
    /// Whether a stored value meets a query's filter on this attribute: equal, or, for
    /// ``AttributeKind/terms``, holding every term of the filter.
    /// (A filter of no terms is met by every item, with terms or without.)
    package func satisfies(_ stored: AttributeValue?, _ filter: AttributeValue) -> Bool {
        guard kind == .terms else { return stored.map { equal($0, filter) } ?? false }
        guard let wanted = filter.dataValue.flatMap(SearchTerms.init(encoded:)) else { return false }
        let have = stored?.dataValue.flatMap(SearchTerms.init(encoded:))?.terms ?? []
        return wanted.terms.isSubset(of: have)
    }

    /// The values the keyed index holds for `value`: the value itself, or each of its terms.
    package func indexedValues(_ value: AttributeValue) -> [AttributeValue] {
        guard kind == .terms else { return [value] }
        return value.dataValue.flatMap(SearchTerms.init(encoded:)).map { $0.sorted.map(AttributeValue.string) } ?? []
    }

    package func equal(_ a: AttributeValue, _ b: AttributeValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return UTF8Bytes.equal(x, y)
        case (.data(let x), .data(let y)): return x == y
        case (.number(let x), .number(let y)):
            return comparesBytes ? Int32(truncatingIfNeeded: x) == Int32(truncatingIfNeeded: y) : x == y
        case (.date(let x), .date(let y)):
            return x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        default: return canonicalBytes(a) == canonicalBytes(b)
        }
    }

    /// Appends ``canonicalBytes(_:)`` of `value` to `out`, optionally after their 32-bit
    /// big-endian length, without building them separately (keyed hashes are computed over
    /// these bytes on every add and lookup).
    package func appendCanonicalBytes(of value: AttributeValue, to out: inout [UInt8], lengthPrefixed: Bool) {
        let typeByte: UInt8? = comparesBytes ? nil : value.typeByte
        func emit(_ payload: UnsafeRawBufferPointer) {
            if lengthPrefixed {
                let count = UInt32(payload.count + (typeByte == nil ? 0 : 1))
                Swift.withUnsafeBytes(of: count.bigEndian) { out.append(contentsOf: $0) }
            }
            if let typeByte { out.append(typeByte) }
            out.append(contentsOf: payload)
        }
        switch value {
        case .string(var text): text.withUTF8 { emit(UnsafeRawBufferPointer($0)) }
        case .data(let bytes): bytes.withUnsafeBytes(emit)
        case .number(let n) where comparesBytes: Swift.withUnsafeBytes(of: Int32(truncatingIfNeeded: n), emit)
        case .number(let n): Swift.withUnsafeBytes(of: n.bigEndian, emit)
        case .date(let date): Swift.withUnsafeBytes(of: date.timeIntervalSinceReferenceDate.bitPattern.bigEndian, emit)
        }
    }

    private static func dateBytes(_ date: Date) -> Data {
        withUnsafeBytes(of: date.timeIntervalSinceReferenceDate.bitPattern.bigEndian) { Data($0) }
    }
}

extension AttributeValue {
    /// The byte that tags the value's type in canonical forms: `s`, `d`, `n` or `t`.
    package var typeByte: UInt8 {
        switch self {
        case .string: 0x73
        case .data: 0x64
        case .number: 0x6E
        case .date: 0x74
        }
    }
}
