import Crypto
import Foundation
import KeychainCore

/// How a Secret Service item and a keychain generic password are one item (one item, two
/// doors):
///
/// | D-Bus | Keychain |
/// |---|---|
/// | attribute `service` | `svce` |
/// | attribute `account`, else `username`, else `user` | `acct` |
/// | `Label` | `labl` |
/// | the whole attribute map | `gena`, as JSON with sorted keys |
/// | a map beyond service and account | `pkdx`: its SHA-256, part of the primary key |
/// | each other attribute | one search term of `trms`, `name` NUL `value` |
///
/// An item without that `gena` (made through SecItem or `security`) shows the attributes
/// `service` and `account` from `svce` and `acct`, and the `xdg:schema` libsecret gives such an
/// item (``schemaName(of:)``), so that clients searching with a schema find it.
public enum SecretAttributes {
    /// The one key of the JSON object kept in `gena`.
    static let marker = "org.freedesktop.Secret.Attributes"

    /// The attribute in which libsecret names an item's schema.
    public static let schemaKey = "xdg:schema"

    /// The schema libsecret clients use for what a keychain class holds, shown on the items made
    /// through SecItem or `security`: `org.freedesktop.Secret.Generic` for a generic password
    /// (GNOME Keyring's generic secret, Python keyring's libsecret schema), and
    /// `org.gnome.keyring.NetworkPassword` (`SECRET_SCHEMA_COMPAT_NETWORK`, git's credential
    /// helper) for an internet password.
    public static func schemaName(of itemClass: ItemClass) -> String {
        itemClass == .internetPassword ? "org.gnome.keyring.NetworkPassword" : "org.freedesktop.Secret.Generic"
    }

    /// The D-Bus attributes of a generic password.
    public static func attributes(of item: Item) -> [String: String] {
        if let data = item.attributes[.generic]?.dataValue, let map = decode(data) { return current(map, of: item) }
        var attributes: [String: String] = [:]
        func put(_ key: String, _ name: AttributeName) {
            if let value = item.attributes[name]?.stringValue, !value.isEmpty { attributes[key] = value }
        }
        attributes[schemaKey] = schemaName(of: item.itemClass)
        guard item.itemClass == .internetPassword else {
            put("service", .service)
            put("account", .account)
            return attributes
        }
        // An internet password made through SecItem or `security`: libsecret's network schema.
        put("server", .server)
        put("user", .account)
        put("object", .path)
        put("domain", .securityDomain)
        if let code = item.attributes[.protocol]?.stringValue, let name = protocolNames[code] {
            attributes["protocol"] = name
        }
        if let port = item.attributes[.port]?.numberValue, port > 0 { attributes["port"] = String(port) }
        return attributes
    }

    /// The keychain class of a D-Bus item: an internet password when its map names a `server`
    /// and no `service` (libsecret's network schema, git's credential helper: what Apple's
    /// clients keep as internet passwords), else a generic password.
    public static func itemClass(for attributes: [String: String]) -> ItemClass {
        attributes["server"] != nil && attributes["service"] == nil ? .internetPassword : .genericPassword
    }

    /// libsecret's protocol names and Apple's four-character codes (`kSecAttrProtocolHTTPS` is
    /// `htps`, …), for the protocols both know.
    static let protocolCodes: [String: String] = [
        "http": "http", "https": "htps", "ftp": "ftp ", "ftps": "ftps", "ssh": "ssh ", "smtp": "smtp",
        "imap": "imap", "imaps": "imps", "pop3": "pop3", "pop3s": "pops", "ldap": "ldap", "ldaps": "ldps",
        "smb": "smb ", "afp": "afp ", "telnet": "teln", "irc": "irc ", "nntp": "nntp", "socks": "sox ",
    ]
    static let protocolNames = Dictionary(uniqueKeysWithValues: protocolCodes.map { ($0.value, $0.key) })

    /// The keychain attributes an internet password takes from a network-schema map, with the
    /// keys they use up; a protocol or port Apple has no value for stays in the map only.
    static func internetAttributes(_ attributes: [String: String]) -> (Attributes, used: Set<String>) {
        var stored: Attributes = [:]
        var used: Set<String> = ["server"]
        stored[.server] = .string(attributes["server"] ?? "")
        if let name = attributes["protocol"], let code = protocolCodes[name] {
            stored[.protocol] = .string(code)
            used.insert("protocol")
        }
        if let port = attributes["port"], let number = Int64(port), String(number) == port,
            (1...65_535).contains(number)
        {
            stored[.port] = .number(number)
            used.insert("port")
        }
        if let object = attributes["object"] {
            stored[.path] = .string(object)
            used.insert("object")
        }
        if let domain = attributes["domain"] {
            stored[.securityDomain] = .string(domain)
            used.insert("domain")
        }
        return (stored, used)
    }

    /// The attributes a search on a class finds through Apple's attributes, never through
    /// search terms: SecItem may change those attributes after the map was stored (the map
    /// then shows their new values), and an item made through SecItem has them without a map.
    /// A generic password's are its service and account; an internet password's its server,
    /// account and the other attributes of libsecret's network schema.
    static func applesKeys(_ itemClass: ItemClass) -> Set<String> {
        itemClass == .internetPassword ? internetKeys : genericKeys
    }
    private static let genericKeys: Set<String> = ["service", "account", "username", "user"]
    private static let internetKeys: Set<String> = [
        "server", "account", "username", "user", "protocol", "port", "object", "domain",
    ]

    /// The search terms of a map for an item of `itemClass` (``KeychainModel/SearchTerms``): one
    /// per attribute outside ``applesKeys(_:)``, its name, a NUL and its value (D-Bus strings
    /// hold no NUL, so no two pairs give one term).
    static func searchTerms(_ attributes: [String: String], for itemClass: ItemClass) -> SearchTerms {
        let keys = applesKeys(itemClass)
        return SearchTerms(attributes.lazy.filter { !keys.contains($0.key) }.map { $0.key + "\u{0}" + $0.value })
    }

    /// The changes that give an item stored before the provider kept search terms the terms
    /// of its map (`nil` when it has no map, or its terms already).
    static func missingSearchTerms(_ item: Item) -> Attributes? {
        guard let data = item.attributes[.generic]?.dataValue, let map = decode(data) else { return nil }
        let terms = AttributeValue.data(searchTerms(map, for: item.itemClass).encoded)
        return item.attributes[.searchTerms] == terms ? nil : [.searchTerms: terms]
    }

    /// The keychain attributes of a D-Bus item: `svce`, `acct`, `labl`, `gena`, `trms` and, unless the
    /// map is only a service and an account (``isPlain(_:)``), `pkdx`: a digest of the whole
    /// map, so that items with the same service and account but other attributes (another
    /// schema) are different items on Apple's primary key. With `clearing`, a plain map's
    /// `pkdx` is set empty (which leaves it out of the primary key), for an update.
    public static func keychainAttributes(
        for attributes: [String: String], label: String, clearing: Bool = false
    ) -> Attributes {
        let map = encode(attributes)
        var stored: Attributes = [
            .account: .string(attributes["account"] ?? attributes["username"] ?? attributes["user"] ?? ""),
            .label: .string(label),
            .generic: .data(map),
            .searchTerms: .data(searchTerms(attributes, for: itemClass(for: attributes)).encoded),
        ]
        if itemClass(for: attributes) == .internetPassword {
            stored.merge(internetAttributes(attributes).0) { $1 }
        } else {
            stored[.service] = .string(attributes["service"] ?? "")
        }
        if !isPlain(attributes) {
            stored[.primaryKeyDiscriminator] = .data(Data(SHA256.hash(data: map)))
        } else if clearing {
            stored[.primaryKeyDiscriminator] = .data(Data())
        }
        return stored
    }

    /// Whether a map is only a service and an account (under `account`, `username` or `user`,
    /// with one value): the item is then the keychain's item with that service and account,
    /// the one `security add-generic-password -s S -a A` makes.
    public static func isPlain(_ attributes: [String: String]) -> Bool {
        let accounts = Set(["account", "username", "user"].compactMap { attributes[$0] })
        guard accounts.count <= 1 else { return false }
        let keys: Set<String> =
            itemClass(for: attributes) == .internetPassword
            ? internetAttributes(attributes).used : ["service"]
        return attributes.keys.allSatisfy { keys.contains($0) || ["account", "username", "user"].contains($0) }
    }

    /// The engine queries that narrow a search by indexed attributes, one per class an item
    /// matching `query` can be: a query with a `service` finds generic passwords only (an
    /// internet password's map never has one). With `usingTerms`, they narrow by the search
    /// terms of the other attributes too, and so find D-Bus items only when the query has such
    /// attributes (an item made through SecItem has no map and no terms).
    public static func engineQueries(for query: [String: String], usingTerms: Bool = true) -> [ItemQuery] {
        var queries = [engineQuery(for: query, usingTerms: usingTerms)]
        if query["service"] == nil {
            var attributes: Attributes = [:]
            if let server = query["server"] { attributes[.server] = .string(server) }
            if let account = query["account"] { attributes[.account] = .string(account) }
            if usingTerms { attributes.merge(termFilter(query, for: .internetPassword, widened: true)) { $1 } }
            queries.append(ItemQuery(class: .internetPassword, attributes: attributes))
        }
        return queries
    }

    /// The filter on `trms` for `query`'s attributes outside ``applesKeys(_:)``; none when it
    /// has none. `widened` leaves out an `xdg:schema` that names the class's own schema
    /// (``schemaName(of:)``), which the items made through SecItem show without having it as a
    /// term: they are candidates too, and ``matches(_:_:)-(Item,_)`` decides.
    static func termFilter(_ query: [String: String], for itemClass: ItemClass, widened: Bool = false) -> Attributes {
        var query = query
        if widened, query[schemaKey] == schemaName(of: itemClass) { query[schemaKey] = nil }
        let terms = searchTerms(query, for: itemClass)
        return terms.terms.isEmpty ? [:] : [.searchTerms: .data(terms.encoded)]
    }

    /// The query a locked keychain answers for `query` in `itemClass` by its index alone (every
    /// filter is one the index holds: `svce`, `srvr`, `acct`, `ptcl`, `port`, `path`, `sdmn` and
    /// the search terms), as an open one would except for one case: a query with the class's own
    /// `xdg:schema` finds the D-Bus items that have it, not the items made through SecItem (the
    /// index cannot tell them from the D-Bus items of other schemas); or `nil` when it cannot: the query
    /// names `username` or `user` (which are `acct` only for an item whose map has no
    /// `account`), or a generic password's query a `server`, … of the network schema that Apple
    /// has no value for (an unknown protocol, a port that is not one).
    public static func lockedQuery(for query: [String: String], class itemClass: ItemClass) -> ItemQuery? {
        guard query["username"] == nil, query["user"] == nil else { return nil }
        var attributes = termFilter(query, for: itemClass)
        if let account = query["account"] { attributes[.account] = .string(account) }
        guard itemClass == .internetPassword else {
            if let service = query["service"] { attributes[.service] = .string(service) }
            return ItemQuery(class: .genericPassword, attributes: attributes)
        }
        guard query["service"] == nil else { return nil }
        var (network, used) = internetAttributes(query)
        // Each of the network schema's attributes must have become Apple's (a protocol with a
        // code, a port that is a number), and be non-empty (an empty path is not shown).
        guard query.keys.allSatisfy({ !internetKeys.contains($0) || used.contains($0) || $0 == "account" }),
            query.allSatisfy({ !used.contains($0.key) || !$0.value.isEmpty })
        else { return nil }
        if query["server"] == nil { network[.server] = nil }
        attributes.merge(network) { $1 }
        return ItemQuery(class: .internetPassword, attributes: attributes)
    }

    /// Whether two items of one class have the same primary key as Apple defines it (without
    /// the discriminator `pkdx`): the keychain's own item with a D-Bus item's attributes.
    static func sameApplePrimaryKey(_ a: Attributes, _ b: Attributes, class itemClass: ItemClass) -> Bool {
        let schema = ItemSchema.of(itemClass)
        return schema.agree(a, b, on: schema.ownPrimaryKey)
    }

    /// The engine query that narrows a search of generic passwords by the indexed attributes:
    /// `svce` for `service`, `acct` for `account` (never for `username` or `user`, which are
    /// `acct` only when the item has no `account`) and, with `usingTerms`, the search terms of
    /// the others.
    public static func engineQuery(for query: [String: String], usingTerms: Bool = true) -> ItemQuery {
        var attributes: Attributes = usingTerms ? termFilter(query, for: .genericPassword, widened: true) : [:]
        if let service = query["service"] { attributes[.service] = .string(service) }
        if let account = query["account"] { attributes[.account] = .string(account) }
        return ItemQuery(class: .genericPassword, attributes: attributes)
    }

    /// Whether every pair of `query` is one of `attributes` (exact; an empty query matches all).
    public static func matches(_ attributes: [String: String], _ query: [String: String]) -> Bool {
        query.allSatisfy { attributes[$0.key] == $0.value }
    }

    /// `map` with its service and account as the item has them now: SecItem or `security` may
    /// have changed `svce` or `acct` since the map was stored.
    static func current(_ map: [String: String], of item: Item) -> [String: String] {
        var map = map
        if map["service"] != nil, let service = item.attributes[.service]?.stringValue { map["service"] = service }
        if map["server"] != nil, let server = item.attributes[.server]?.stringValue { map["server"] = server }
        if let key = ["account", "username", "user"].first(where: { map[$0] != nil }),
            let account = item.attributes[.account]?.stringValue
        {
            map[key] = account
        }
        return map
    }

    /// Whether `item` matches `query`: each pair must be in the item's D-Bus attribute map, or,
    /// for a name the map does not have (or an item made through SecItem or `security`, which
    /// has no map), be `service` equal to `svce` or `account`, `username` or `user` equal to
    /// `acct`. So a client searching by `username` (Python keyring) finds what
    /// `security add-generic-password -a` stored, and `secret-tool lookup service S account A`
    /// finds what keyring stored with `username`: Apple's primary key is one item.
    public static func matches(_ item: Item, _ query: [String: String]) -> Bool {
        let map = item.attributes[.generic]?.dataValue.flatMap(decode).map { current($0, of: item) } ?? [:]
        let service = item.attributes[.service]?.stringValue ?? ""
        let server = item.attributes[.server]?.stringValue ?? ""
        let account = item.attributes[.account]?.stringValue ?? ""
        let shown = map.isEmpty ? attributes(of: item) : [:]
        return query.allSatisfy { key, value in
            if let mapped = map[key] ?? shown[key] { return mapped == value }
            switch key {
            case "service": return !service.isEmpty && value == service
            case "server": return !server.isEmpty && value == server
            case "account", "username", "user": return !account.isEmpty && value == account
            default: return false
            }
        }
    }

    /// Whether `item` was made through SecItem or `security`: it has no D-Bus attribute map.
    static func isKeychainMade(_ item: Item) -> Bool {
        guard let data = item.attributes[.generic]?.dataValue else { return true }
        return decode(data) == nil
    }

    /// The deterministic form kept in `gena`.
    static func encode(_ attributes: [String: String]) -> Data {
        (try? encoder.encode([marker: attributes])) ?? Data()
    }

    /// The encoder of ``encode(_:)``: made once (a move-in encodes a map per item), configured
    /// before it is shared and never changed after.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The map kept in `gena` by ``encode(_:)``, or `nil` when `data` is not such a map. The
    /// usual form, one object holding one object of strings, is read here without Foundation's
    /// decoder (each search reads the map of every item it finds); anything else, or anything
    /// this reader is unsure of, is left to `JSONDecoder`, which has the last word.
    static func decode(_ data: Data) -> [String: String]? {
        if let map = data.withUnsafeBytes({ AttributeMapReader.read($0) }) { return map }
        return (try? JSONDecoder().decode([String: [String: String]].self, from: data))?[marker]
    }
}

/// Reads `{"org.freedesktop.Secret.Attributes":{"k":"v",…}}` (any JSON whitespace, any JSON
/// escapes) into its inner map, or answers `nil` for anything else: another outer key, a value
/// that is not a string, a repeated key, a lone surrogate, invalid UTF-8, invalid JSON. `nil`
/// means "not sure", never "not a map": the caller then asks `JSONDecoder`.
struct AttributeMapReader {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    static func read(_ bytes: UnsafeRawBufferPointer) -> [String: String]? {
        var reader = AttributeMapReader(bytes)
        guard reader.take(UInt8(ascii: "{")), reader.string() == SecretAttributes.marker,
            reader.take(UInt8(ascii: ":")), let map = reader.object(), reader.take(UInt8(ascii: "}"))
        else { return nil }
        reader.skipSpace()
        return reader.index == bytes.count ? map : nil
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Skips whitespace, then takes `byte` if it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// An object of string values, without repeated keys.
    private mutating func object() -> [String: String]? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var map: [String: String] = [:]
        if take(UInt8(ascii: "}")) { return map }
        repeat {
            guard let key = string(), take(UInt8(ascii: ":")), let value = string(), map[key] == nil else {
                return nil
            }
            map[key] = value
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}")) ? map : nil
    }

    /// A JSON string (after whitespace), its escapes resolved.
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        // The common case: no escapes, the bytes up to the closing quote are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { return nil }
            index += 1
        }
        guard index < bytes.count,
            var text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        else { return nil }
        var run = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                guard let part = String(validating: UnsafeRawBufferPointer(rebasing: bytes[run..<index]), as: UTF8.self)
                else { return nil }
                text += part
                index += 1
                if byte == UInt8(ascii: "\"") { return text }
                guard let scalar = escape() else { return nil }
                text.unicodeScalars.append(scalar)
                run = index
            } else {
                guard byte >= 0x20 else { return nil }
                index += 1
            }
        }
        return nil
    }

    /// The character of the escape after a backslash.
    private mutating func escape() -> Unicode.Scalar? {
        guard index < bytes.count else { return nil }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(byte)
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            guard let unit = hex4() else { return nil }
            switch unit {
            case 0xD800...0xDBFF:
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { return nil }
                index += 2
                guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
            case 0xDC00...0xDFFF: return nil
            default: return Unicode.Scalar(unit)
            }
        default: return nil
        }
    }

    /// Four hex digits.
    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
