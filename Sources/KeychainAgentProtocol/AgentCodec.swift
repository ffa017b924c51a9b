import DBusWire
import Foundation
import KeychainCore

/// The keychain's values as D-Bus values, both ways: what the session agent and its clients
/// send each other.
///
/// Attributes travel as `a{sv}` keyed by Apple's raw attribute names (`svce`, `acct`, …), each
/// value typed as the attribute is: a string `s`, bytes `ay`, a number `x`, a date `d` (seconds
/// since 2001-01-01, as `Date` holds them, so that a date comes back bit for bit and a query
/// for an exact creation date matches through the agent as in process). An item adds `class` (`s`), its secret `v_Data` (`ay`) and its persistent
/// identity `uuid` (`ay`, 16 bytes). Decoding refuses anything else with `.parameter`
/// (errSecParam): a wrong type, a missing class, a malformed identity; it never traps.
public enum AgentCodec {
    // MARK: Attributes

    /// Attributes as `a{sv}`.
    public static func encode(_ attributes: Attributes) -> DBusValue {
        .dictionary(
            key: .string, value: .variant,
            attributes.sorted { $0.key.rawValue < $1.key.rawValue }.map { name, value in
                DBusDictEntry(.string(name.rawValue), .variant(encode(value)))
            })
    }

    /// Attributes from `a{sv}`.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for anything else.
    public static func decodeAttributes(_ value: DBusValue) throws -> Attributes {
        let pairs = try stringVariantPairs(value, "attributes")
        var attributes: Attributes = [:]
        attributes.reserveCapacity(pairs.count)
        for pair in pairs {
            let (name, inner) = try entry(pair, "attributes")
            try add(name, inner, to: &attributes)
        }
        return attributes
    }

    /// Adds the attribute `name` to `attributes`; a name given twice is refused.
    private static func add(_ name: String, _ value: DBusValue, to attributes: inout Attributes) throws {
        guard
            attributes.updateValue(try decodeAttributeValue(value, name), forKey: AttributeName(rawValue: name)) == nil
        else { throw parameter("\(name) appears twice") }
    }

    static func encode(_ value: AttributeValue) -> DBusValue {
        switch value {
        case .string(let string): .string(string)
        case .data(let data): .bytes(Array(data))
        case .number(let number): .int64(number)
        case .date(let date): .double(date.timeIntervalSinceReferenceDate)
        }
    }

    static func decodeAttributeValue(_ value: DBusValue, _ name: String) throws -> AttributeValue {
        switch value {
        case .string(let string): return .string(string)
        case .bytes(let bytes): return .data(Data(bytes))
        case .int64(let number): return .number(number)
        case .double(let seconds) where seconds.isFinite:
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        default: throw parameter("the attribute \(name) has a type a keychain attribute cannot have")
        }
    }

    // MARK: Items

    /// An item as `a{sv}`: its attributes, `class`, and `v_Data` and `uuid` when it has them.
    public static func encode(_ item: Item) -> DBusValue {
        var entries = item.attributes.map { name, value in
            DBusDictEntry(.string(name.rawValue), .variant(encode(value)))
        }
        entries.append(DBusDictEntry(.string(Key.itemClass), .variant(.string(item.itemClass.rawValue))))
        if let data = item.data { entries.append(DBusDictEntry(.string(Key.data), .variant(.bytes(Array(data))))) }
        if let identity = item.persistentID {
            entries.append(DBusDictEntry(.string(Key.identity), .variant(.bytes(bytes(of: identity)))))
        }
        return .dictionary(key: .string, value: .variant, entries)
    }

    /// An item from `a{sv}`.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for a missing or unknown class, a
    ///   wrong type, or an identity that is not 16 bytes.
    public static func decodeItem(_ value: DBusValue) throws -> Item {
        // Read in one pass over the entries, without a dictionary of them first.
        let pairs = try stringVariantPairs(value, "item")
        var fields = ItemFields(capacity: pairs.count)
        for pair in pairs {
            let (name, inner) = try entry(pair, "item")
            try fields.add(name, inner)
        }
        return try fields.item()
    }

    /// An item's fields as they are read, one entry at a time.
    private struct ItemFields {
        var itemClass: ItemClass?
        var data: Data?
        var identity: UUID?
        var attributes: Attributes = [:]

        init(capacity: Int) { attributes.reserveCapacity(capacity) }

        /// Takes the entry `name` (the value inside its variant); a key given twice is refused.
        mutating func add(_ name: String, _ value: DBusValue) throws {
            switch name {
            case Key.itemClass:
                guard itemClass == nil else { throw parameter("\(name) appears twice") }
                guard case .string(let raw) = value, let known = ItemClass(rawValue: raw) else {
                    throw parameter("an item needs a known class")
                }
                itemClass = known
            case Key.data:
                guard data == nil else { throw parameter("\(name) appears twice") }
                guard case .bytes(let bytes) = value else { throw parameter("an item's secret must be bytes") }
                data = Data(bytes)
            case Key.identity:
                guard identity == nil else { throw parameter("\(name) appears twice") }
                identity = try decodeIdentity(value)
            default:
                try AgentCodec.add(name, value, to: &attributes)
            }
        }

        func item() throws -> Item {
            guard let itemClass else { throw parameter("an item needs a known class") }
            var item = Item(class: itemClass, attributes: attributes, data: data)
            item.persistentID = identity
            return item
        }
    }

    /// Items from an `aa{sv}` body, read straight from the wire: the client's side of every
    /// lookup, with the same checks as ``decodeItems(_:)``.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for what ``decodeItem(_:)`` refuses,
    ///   `.decode` for a body of another signature; ``DBusWire/DBusError`` for bytes that are
    ///   not a well-formed body.
    public static func decodeItems(from body: inout DBusBodyReader) throws -> [Item] {
        guard body.signature == itemsSignature else {
            throw KeychainError(.decode, "the keychain agent's answer is not a list of items")
        }
        var items: [Item] = []
        try body.readArray(elementAlignment: 4) { items.append(try decodeItem(from: &$0)) }  // `a{sv}`s, 4-aligned
        try body.finish()
        return items
    }

    /// An item read straight from the wire (an `a{sv}` body value, as ``encode(_:)-(Item)``
    /// writes it), with the checks of ``decodeItem(_:)``.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for what ``decodeItem(_:)``
    ///   refuses; ``DBusWire/DBusError`` for bytes that are not a well-formed `a{sv}`.
    public static func decodeItem(from body: inout DBusBodyReader) throws -> Item {
        var fields = ItemFields(capacity: 16)
        try body.readStringVariantDictionary { name, value in try fields.add(name, value) }
        return try fields.item()
    }

    /// `aa{sv}`: a body of items.
    private static let itemsSignature = DBusSignature(types: [.array(.dictionary(key: .string, value: .variant))])

    /// Items as `aa{sv}`.
    public static func encode(_ items: [Item]) -> DBusValue {
        .array(.dictionary(key: .string, value: .variant), items.map(encode))
    }

    /// Items from `aa{sv}`.
    public static func decodeItems(_ value: DBusValue) throws -> [Item] {
        guard case .array(.dictionary(key: .string, value: .variant), let elements) = value else {
            throw parameter("items must be an array of dictionaries")
        }
        return try elements.map(decodeItem)
    }

    // MARK: Queries

    /// A query as `a{sv}`: `class`, `attributes` (`a{sv}`), `sync` (`no`, `yes`, `any`), `uuid`,
    /// `limit` (`x`), `tombstones` (`b`), `authUI` (`ignore`, `fail`, `skip`), `host`.
    public static func encode(_ query: ItemQuery) -> DBusValue {
        // A field at its default is left out: the agent reads it as that default.
        var entries: [DBusDictEntry] = []
        entries.reserveCapacity(8)
        func add(_ key: String, _ value: DBusValue) { entries.append(DBusDictEntry(.string(key), .variant(value))) }
        if let itemClass = query.itemClass { add(Key.itemClass, .string(itemClass.rawValue)) }
        if !query.attributes.isEmpty { add(Key.attributes, encode(query.attributes)) }
        if query.synchronizable != defaultQuery.synchronizable {
            add(Key.synchronizable, .string(name(of: query.synchronizable, in: synchronizableNames)))
        }
        if let identity = query.persistentID { add(Key.identity, .bytes(bytes(of: identity))) }
        if let limit = query.limit { add(Key.limit, .int64(Int64(limit))) }
        if query.includesTombstones != defaultQuery.includesTombstones {
            add(Key.tombstones, .boolean(query.includesTombstones))
        }
        if query.authenticationUI != defaultQuery.authenticationUI {
            add(Key.authenticationUI, .string(name(of: query.authenticationUI, in: authenticationUINames)))
        }
        if let host = query.hostOrSubdomain { add(Key.host, .string(host)) }
        if query.opensApplicationPassword { add(Key.opensApplicationPassword, .boolean(true)) }
        if let proof = query.ownerProof { add(Key.ownerProof, .bytes(Array(proof))) }
        return .dictionary(key: .string, value: .variant, entries)
    }

    /// The fields a query may have.
    private static let queryFields = [
        Key.itemClass, Key.attributes, Key.synchronizable, Key.identity, Key.limit, Key.tombstones,
        Key.authenticationUI, Key.host, Key.opensApplicationPassword, Key.ownerProof,
    ]

    /// The query every decoded query starts from: what a field left out means.
    private static let defaultQuery = ItemQuery(class: nil)

    /// A query from `a{sv}`; fields left out take ``KeychainModel/ItemQuery``'s defaults.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for an unknown field or value, or
    ///   a wrong type.
    public static func decodeQuery(_ value: DBusValue) throws -> ItemQuery {
        var query = QueryFields()
        for pair in try stringVariantPairs(value, "query") {
            let (field, inner) = try entry(pair, "query")
            try query.add(field, inner)
        }
        return query.query
    }

    /// A query read straight from the wire (an `a{sv}` body value, as ``encode(_:)-(ItemQuery)``
    /// writes it), with the checks of ``decodeQuery(_:)``: what the agent does for every lookup.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for what ``decodeQuery(_:)``
    ///   refuses; ``DBusWire/DBusError`` for bytes that are not a well-formed `a{sv}`.
    public static func decodeQuery(from body: inout DBusBodyReader) throws -> ItemQuery {
        var query = QueryFields()
        try body.readStringVariantDictionary { field, inner in try query.add(field, inner) }
        return query.query
    }

    /// A query's fields as they are read, one entry at a time.
    private struct QueryFields {
        var query = defaultQuery
        /// The known fields read so far, one bit each (``queryFields``).
        var seen: UInt16 = 0

        /// Takes the field `field` (the value inside its variant); a field given twice, an
        /// unknown one or one of the wrong type is refused.
        mutating func add(_ field: String, _ inner: DBusValue) throws {
            // A known field given twice is refused (an unknown one is refused below anyway).
            if let position = queryFields.firstIndex(of: field) {
                guard seen & (1 << position) == 0 else { throw parameter("\(field) appears twice") }
                seen |= 1 << position
            }
            switch (field, inner) {
            case (Key.itemClass, .string(let raw)):
                guard let itemClass = ItemClass(rawValue: raw) else { throw parameter("unknown class") }
                query.itemClass = itemClass
            case (Key.attributes, _): query.attributes = try decodeAttributes(inner)
            case (Key.synchronizable, .string(let raw)):
                query.synchronizable = try named(raw, in: synchronizableNames, "sync")
            case (Key.identity, _): query.persistentID = try decodeIdentity(inner)
            case (Key.limit, .int64(let limit)) where limit >= 0 && limit <= Int64(Int32.max):
                query.limit = Int(limit)
            case (Key.tombstones, .boolean(let flag)): query.includesTombstones = flag
            case (Key.authenticationUI, .string(let raw)):
                query.authenticationUI = try named(raw, in: authenticationUINames, "authUI")
            case (Key.host, .string(let host)): query.hostOrSubdomain = host
            case (Key.opensApplicationPassword, .boolean(let flag)): query.opensApplicationPassword = flag
            case (Key.ownerProof, .bytes(let proof)) where proof.count <= 64: query.ownerProof = Data(proof)
            default: throw parameter("the query field \(field) is unknown or has the wrong type")
            }
        }
    }

    /// The `limit` of a query as the agent protocol encodes it, read without decoding the
    /// rest: `nil` when it has none, or is not a query. (The agent checks it on every lookup to
    /// choose where to answer; ``decodeQuery(_:)`` then checks the whole query.)
    public static func queryLimit(_ value: DBusValue) -> Int? {
        guard case .dictionary(key: .string, value: .variant, let pairs) = value else { return nil }
        for pair in pairs {
            if case .string(Key.limit) = pair.key, case .variant(.int64(let limit)) = pair.value,
                limit >= 0, limit <= Int64(Int32.max)
            {
                return Int(limit)
            }
        }
        return nil
    }

    // MARK: Settings

    /// Lock settings as `a{sv}`: `lockInterval` (`u`, seconds; 0 for no timeout) and
    /// `locksOnSleep` (`b`).
    public static func encode(_ settings: KeychainSettings) -> DBusValue {
        .stringVariantDictionary([
            Key.lockInterval: .uint32(UInt32(clamping: settings.lockInterval ?? 0)),
            Key.locksOnSleep: .boolean(settings.locksOnSleep),
        ])
    }

    /// Lock settings from `a{sv}`; a field left out takes ``KeychainModel/KeychainSettings``'s
    /// default.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for an unknown field, a wrong type
    ///   or a lock interval out of range.
    public static func decodeSettings(_ value: DBusValue) throws -> KeychainSettings {
        var settings = KeychainSettings()
        for (field, inner) in try entries(value, "settings") {
            switch (field, inner) {
            case (Key.lockInterval, .uint32(let seconds)) where Int(seconds) <= KeychainSettings.maximumLockInterval:
                settings.lockInterval = seconds == 0 ? nil : Int(seconds)
            case (Key.locksOnSleep, .boolean(let flag)): settings.locksOnSleep = flag
            default: throw parameter("the settings field \(field) is unknown, of the wrong type or out of range")
            }
        }
        return settings
    }

    // MARK: Errors

    /// The D-Bus error name of a keychain error: ``AgentInterface/errorPrefix`` and the code's
    /// name (`…Error.ItemNotFound`), or `…Error.Status` for a code without one.
    public static func errorName(of error: KeychainError) -> String {
        let name = error.code.name.map { $0.prefix(1).uppercased() + $0.dropFirst() } ?? "Status"
        return AgentInterface.errorPrefix + name
    }

    /// A keychain error as the D-Bus error a method handler throws: named by
    /// ``errorName(of:)``, its message (which tools print) and, after it, its status (`i`),
    /// whether the message says what to fix on the machine (`b`) and, when it has one, its
    /// ``KeychainModel/KeychainError/reason`` (`s`).
    public static func dbusError(_ error: KeychainError) -> DBusError {
        var details: [DBusValue] = [.int32(error.osStatus), .boolean(error.isSetupProblem)]
        if let reason = error.reason { details.append(.string(reason.rawValue)) }
        return DBusError.method(errorName(of: error), error.message, details: details)
    }

    /// The keychain error an agent's D-Bus error carries, or `nil` when it is not one.
    public static func keychainError(_ error: DBusError) -> KeychainError? {
        guard let name = error.errorName, name.hasPrefix(AgentInterface.errorPrefix),
            case .int32(let status)? = error.details.first
        else { return nil }
        var setup = false
        if error.details.count >= 2, case .boolean(let flag) = error.details[1] { setup = flag }
        var decoded = KeychainError(KeychainError.Code(rawValue: status), error.message, isSetupProblem: setup)
        if error.details.count >= 3, case .string(let reason) = error.details[2] {
            decoded.reason = KeychainError.Reason(rawValue: reason)
        }
        return decoded
    }

    // MARK: Pieces

    enum Key {
        static let itemClass = "class"
        static let data = "v_Data"
        static let identity = "uuid"
        static let attributes = "attributes"
        static let synchronizable = "sync"
        static let limit = "limit"
        static let tombstones = "tombstones"
        static let authenticationUI = "authUI"
        static let opensApplicationPassword = "opensAppPassword"
        static let ownerProof = "ownerProof"
        static let host = "host"
        static let lockInterval = "lockInterval"
        static let locksOnSleep = "locksOnSleep"
    }

    static func parameter(_ message: String) -> KeychainError { KeychainError(.parameter, message) }

    /// The entries of an `a{sv}`, variants unwrapped; a duplicated key is refused.
    static func entries(_ value: DBusValue, _ what: String) throws -> [String: DBusValue] {
        var result: [String: DBusValue] = [:]
        for pair in try stringVariantPairs(value, what) {
            let (key, inner) = try entry(pair, what)
            guard result.updateValue(inner, forKey: key) == nil else { throw parameter("\(key) appears twice") }
        }
        return result
    }

    /// The entries of an `a{sv}` as they came, for a reader that goes through them once.
    static func stringVariantPairs(_ value: DBusValue, _ what: String) throws -> [DBusDictEntry] {
        guard case .dictionary(key: .string, value: .variant, let pairs) = value else {
            throw parameter("the \(what) must be a dictionary of strings to variants")
        }
        return pairs
    }

    /// One entry of an `a{sv}`: its key and the value inside its variant.
    static func entry(_ pair: DBusDictEntry, _ what: String) throws -> (String, DBusValue) {
        guard case .string(let key) = pair.key, case .variant(let inner) = pair.value else {
            throw parameter("the \(what) must be a dictionary of strings to variants")
        }
        return (key, inner)
    }

    static func bytes(of identity: UUID) -> [UInt8] {
        withUnsafeBytes(of: identity.uuid) { Array($0) }
    }

    static func decodeIdentity(_ value: DBusValue) throws -> UUID {
        guard case .bytes(let bytes) = value, bytes.count == 16 else {
            throw parameter("a persistent identity is 16 bytes")
        }
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// The wire names of ``KeychainModel/ItemQuery/Synchronizable``.
    static let synchronizableNames: [(ItemQuery.Synchronizable, String)] = [(.no, "no"), (.yes, "yes"), (.any, "any")]
    /// The wire names of ``KeychainModel/ItemQuery/AuthenticationUI``.
    static let authenticationUINames: [(ItemQuery.AuthenticationUI, String)] = [
        (.ignore, "ignore"), (.fail, "fail"), (.skip, "skip"), (.allow, "allow"),
    ]

    static func name<T: Equatable>(of value: T, in names: [(T, String)]) -> String {
        names.first { $0.0 == value }?.1 ?? ""
    }

    static func named<T>(_ raw: String, in names: [(T, String)], _ field: String) throws -> T {
        guard let value = names.first(where: { $0.1 == raw })?.0 else {
            throw parameter("\(field) must be " + names.map(\.1).joined(separator: ", "))
        }
        return value
    }
}
