import Crypto
import CryptoExtras
import Foundation
import SecretService

/// A GNOME Keyring file (`~/.local/share/keyrings/NAME.keyring`), read from disk without
/// `gnome-keyring-daemon`.
///
/// GNOME Keyring keeps a keyring with a password in its binary format: a clear header with the
/// keyring's label, dates and key-derivation salt and rounds, then the items' labels, secrets,
/// dates and attributes encrypted together with AES-128-CBC under a key derived from the password
/// by iterated SHA-256, behind an MD5 check of the decrypted bytes. A keyring with an empty
/// password is kept in a textual key file instead. Both are read here; the layouts are those of
/// GNOME/gnome-keyring `pkcs11/secret-store/gkm-secret-binary.c` and `gkm-secret-textual.c`.
///
/// Nothing from the clear part of an encrypted file is trusted for an item: the items come
/// from the decrypted part alone, and their count must account for every decrypted byte, so an
/// altered header either fails to open or changes nothing that is imported.
///
/// ```swift
/// let file = try GnomeKeyringFile(contentsOf: Data(contentsOf: url))
/// let items = try file.items(password: Data("login password".utf8))
/// ```
public struct GnomeKeyringFile: Sendable {
    /// The two forms GNOME Keyring writes.
    public enum Form: Sendable, Equatable {
        /// The binary format, encrypted under the keyring's password.
        case encrypted
        /// The textual key file of a keyring whose password is empty.
        case plain
    }

    /// Which form the file has.
    public let form: Form
    /// The keyring's label (from the clear header of an encrypted file: not authenticated).
    public let label: String

    /// The file's bytes (what ``MoveInStamps`` hashes).
    let contents: Data
    private let header: BinaryHeader?
    private let plain: KeyFile?

    /// Recognizes `contents` as a GNOME Keyring file and reads its clear header.
    /// - Throws: ``KeyringFileError/unrecognized(_:)`` for anything else,
    ///   ``KeyringFileError/damaged(_:)`` when its header (or a textual file) is truncated or
    ///   malformed.
    public init(contentsOf contents: Data) throws {
        self.contents = contents
        if contents.starts(with: BinaryHeader.magic) {
            let header = try BinaryHeader(contents)
            self.header = header
            plain = nil
            form = .encrypted
            label = header.label
        } else if let text = String(data: contents, encoding: .utf8), KeyFile.firstGroup(text) == "keyring" {
            let plain = try KeyFile(text)
            self.plain = plain
            header = nil
            form = .plain
            label = plain.value("display-name", in: "keyring") ?? ""
        } else {
            throw KeyringFileError.unrecognized("no GNOME Keyring header")
        }
    }

    /// The keyring's items, decrypted with `password` (ignored for a plain keyring).
    ///
    /// Each item carries its label, its attributes (with `xdg:schema` from GNOME Keyring's item
    /// type when the attributes have none), its secret and its creation and modification dates.
    /// - Throws: ``KeyringFileError/wrongPassword`` when `password` does not open it (or its
    ///   encrypted part was altered), ``KeyringFileError/damaged(_:)`` when it is truncated or
    ///   malformed. Either way, no item is returned.
    public func items(password: Data) throws -> [ForeignSecretItem] {
        if let header { try header.items(in: contents, password: password) } else { try PlainKeyring.items(plain!) }
    }

    /// The schema GNOME Keyring gives an item of an old item type that has no `xdg:schema`
    /// (`gkm_secret_compat_format_item_type`); `nil` for generic secrets and unknown types. The
    /// type is kept in the file's clear part, which the format does not authenticate: of an
    /// altered file, it is the one thing an import cannot check.
    package static func schema(forItemType type: UInt32) -> String? {
        switch type & 0xffff {
        case 1: "org.gnome.keyring.NetworkPassword"
        case 2: "org.gnome.keyring.Note"
        case 3: "org.gnome.keyring.ChainedKeyring"
        case 4: "org.gnome.keyring.EncryptionKey"
        case 0x100: "org.gnome.keyring.PkStorage"
        default: nil
        }
    }

    /// `attributes` with the schema of `type` added when they name none.
    static func withSchema(_ attributes: [String: String], itemType type: UInt32) -> [String: String] {
        guard attributes["xdg:schema"] == nil, let schema = schema(forItemType: type) else { return attributes }
        var completed = attributes
        completed["xdg:schema"] = schema
        return completed
    }
}

// MARK: The binary format

/// The clear part of an encrypted keyring file.
private struct BinaryHeader: Sendable {
    static let magic = Data("GnomeKeyring\n\r\0\n".utf8)
    /// The most key-derivation rounds accepted (GNOME Keyring writes fewer than 4,096).
    static let maximumIterations: UInt32 = 100_000

    var label: String
    var iterations: UInt32
    var salt: Data
    /// The item count and types the clear part lists (only the count is used, and only as a
    /// claim the encrypted part must bear out).
    var itemTypes: [UInt32]
    /// Where the encrypted part starts, and its length.
    var encrypted: Range<Int>

    init(_ contents: Data) throws {
        var reader = BigEndianReader(contents, from: Self.magic.count)
        let version = try reader.bytes(4)
        guard version == Data([0, 0, 0, 0]) else {
            throw KeyringFileError.unrecognized("GNOME Keyring file version or cipher \(Array(version)) is unknown")
        }
        label = try reader.string() ?? ""
        _ = try reader.time()  // the keyring's creation and modification times
        _ = try reader.time()
        _ = try reader.uint32()  // flags
        _ = try reader.uint32()  // lock timeout
        iterations = try reader.uint32()
        // GNOME Keyring writes 1,000 to 4,095 rounds; a count far above that is damage, and would
        // otherwise hold the reader for hours (2³² hashes).
        guard (1...Self.maximumIterations).contains(iterations) else {
            throw KeyringFileError.damaged("its key derivation's round count (\(iterations)) is not GNOME Keyring's")
        }
        salt = try reader.bytes(8)
        for _ in 0..<4 { _ = try reader.uint32() }  // reserved
        let count = try reader.uint32()
        // Each listed item takes at least twelve bytes: an upper bound before allocating.
        guard Int(count) <= reader.remaining / 12 else {
            throw KeyringFileError.damaged("it lists more items than it has room for")
        }
        itemTypes = []
        for _ in 0..<count {
            _ = try reader.uint32()  // the item's id
            itemTypes.append(try reader.uint32())
            try reader.skipAttributes()  // hashed attributes, for finding items while locked
        }
        let size = Int(try reader.uint32())
        guard size % 16 == 0, size >= 16 else {
            throw KeyringFileError.damaged("its encrypted part is not whole AES blocks")
        }
        guard reader.remaining >= size else { throw KeyringFileError.damaged("it is truncated") }
        encrypted = reader.offset..<(reader.offset + size)
    }

    func items(in contents: Data, password: Data) throws -> [ForeignSecretItem] {
        let (key, iv) = deriveKey(password: password)
        let decrypted: Data
        do {
            decrypted = try AES._CBC.decrypt(
                contents[encrypted], using: key, iv: try AES._CBC.IV(ivBytes: iv), noPadding: true)
        } catch {
            throw KeyringFileError.damaged("its encrypted part cannot be decrypted")
        }
        guard Data(Insecure.MD5.hash(data: decrypted.dropFirst(16))) == decrypted.prefix(16) else {
            throw KeyringFileError.wrongPassword
        }
        var reader = BigEndianReader(decrypted, from: 16)
        var items: [ForeignSecretItem] = []
        for type in itemTypes {
            items.append(try Self.item(&reader, itemType: type))
        }
        // What is left is the zero padding to a whole block, and nothing else: a count altered in
        // the clear part cannot drop or invent an item.
        guard reader.remaining < 16, decrypted.suffix(reader.remaining).allSatisfy({ $0 == 0 }) else {
            throw KeyringFileError.damaged("its item count does not match its encrypted items")
        }
        return items
    }

    /// One item of the decrypted part: label, secret, dates, reserved fields, attributes, access list.
    private static func item(_ reader: inout BigEndianReader, itemType: UInt32) throws -> ForeignSecretItem {
        let label = try reader.string() ?? ""
        let secret = try reader.byteArray() ?? Data()
        let created = try reader.time()
        let modified = try reader.time()
        _ = try reader.string()  // reserved
        for _ in 0..<4 { _ = try reader.uint32() }
        let attributes = try reader.attributes()
        try reader.skipAccessList()
        return ForeignSecretItem(
            label: label, attributes: GnomeKeyringFile.withSchema(attributes, itemType: itemType), secret: secret,
            collection: "", created: created, modified: modified)
    }

    /// GNOME Keyring's key and IV: SHA-256 over the password and salt, hashed again `iterations - 1`
    /// times; the first sixteen bytes are the AES-128 key, the next sixteen the IV
    /// (`egg_symkey_generate_simple`, one pass being enough for both).
    private func deriveKey(password: Data) -> (SymmetricKey, Data) {
        var digest = Data(SHA256.hash(data: password + salt))
        for _ in 1..<iterations {
            digest = Data(SHA256.hash(data: digest))
        }
        return (SymmetricKey(data: digest.prefix(16)), digest.suffix(16))
    }
}

/// GNOME Keyring's serialization: big-endian 32-bit integers; strings and byte arrays as a
/// length then the bytes, the length `0xffffffff` standing for none (`egg/egg-buffer.c`).
struct BigEndianReader {
    private let data: Data
    private(set) var offset: Int

    init(_ data: Data, from offset: Int) {
        self.data = data
        self.offset = data.startIndex + offset
    }

    var remaining: Int { data.endIndex - offset }

    mutating func bytes(_ count: Int) throws -> Data {
        Data(try slice(count))
    }

    /// The next `count` bytes, not copied.
    private mutating func slice(_ count: Int) throws -> Data.SubSequence {
        guard count >= 0, remaining >= count else { throw KeyringFileError.damaged("it is truncated") }
        defer { offset += count }
        return data[offset..<(offset + count)]
    }

    mutating func uint32() throws -> UInt32 {
        guard remaining >= 4 else { throw KeyringFileError.damaged("it is truncated") }
        defer { offset += 4 }
        return (offset..<(offset + 4)).reduce(0) { $0 << 8 | UInt32(data[$1]) }
    }

    /// A time in seconds since 1970, as two 32-bit halves.
    mutating func time() throws -> Date {
        let seconds = UInt64(try uint32()) << 32 | UInt64(try uint32())
        return Date(timeIntervalSince1970: TimeInterval(Int64(bitPattern: seconds)))
    }

    mutating func byteArray() throws -> Data? {
        let length = try uint32()
        return length == 0xffff_ffff ? nil : try bytes(Int(length))
    }

    mutating func string() throws -> String? {
        let length = try uint32()
        guard length != 0xffff_ffff else { return nil }
        let bytes = try slice(Int(length))
        guard !bytes.contains(0), let string = String(validating: bytes, as: UTF8.self) else {
            throw KeyringFileError.damaged("a text field is not UTF-8")
        }
        return string
    }

    /// Reads past a string or byte array.
    mutating func skipString() throws {
        let length = try uint32()
        if length != 0xffff_ffff { _ = try slice(Int(length)) }
    }

    /// An attribute list: a count, then each name with a type (0: string, 1: unsigned 32-bit).
    mutating func attributes() throws -> [String: String] {
        let count = try uint32()
        var attributes: [String: String] = [:]
        for _ in 0..<count {
            guard let name = try string() else { throw KeyringFileError.damaged("an attribute has no name") }
            switch try uint32() {
            case 0: attributes[name] = try string() ?? ""
            case 1: attributes[name] = String(try uint32())
            default: throw KeyringFileError.damaged("an attribute has an unknown type")
            }
        }
        return attributes
    }

    /// Reads past an attribute list (the clear part's hashed attributes, which nothing uses).
    mutating func skipAttributes() throws {
        let count = try uint32()
        for _ in 0..<count {
            try skipString()
            switch try uint32() {
            case 0: try skipString()
            case 1: _ = try uint32()
            default: throw KeyringFileError.damaged("an attribute has an unknown type")
            }
        }
    }

    /// An item's access list (applications GNOME Keyring once asked about): read past.
    mutating func skipAccessList() throws {
        let count = try uint32()
        for _ in 0..<count {
            _ = try uint32()  // allowed operations
            _ = try string()  // display name
            _ = try string()  // path
            _ = try string()  // reserved
            _ = try uint32()
        }
    }
}

// MARK: The textual format

/// A keyring with an empty password: a GLib key file with a `[keyring]` group, a group per item
/// (`[ID]`) and a group per attribute (`[ID:attributeN]`).
private enum PlainKeyring {
    static func items(_ file: KeyFile) throws -> [ForeignSecretItem] {
        guard file.groups.first == "keyring" else {
            throw KeyringFileError.damaged("its first group is not [keyring]")
        }
        return try file.groups.filter { $0 != "keyring" && !$0.contains(":") }.map { id in
            let itemType = file.value("item-type", in: id).flatMap { UInt32($0) } ?? 0
            let secret: Data
            if let text = file.value("secret", in: id) {
                secret = Data(text.utf8)
            } else if let hex = file.value("binary-secret", in: id) {
                guard let bytes = Data(hexadecimal: hex) else {
                    throw KeyringFileError.damaged("an item's binary secret is not hexadecimal")
                }
                secret = bytes
            } else {
                secret = Data()
            }
            var attributes: [String: String] = [:]
            for group in file.groups where group.hasPrefix(id + ":attribute") {
                guard let name = file.value("name", in: group) else { continue }
                attributes[name] = file.value("value", in: group) ?? ""
            }
            return ForeignSecretItem(
                label: file.value("display-name", in: id) ?? "",
                attributes: GnomeKeyringFile.withSchema(attributes, itemType: itemType), secret: secret,
                collection: "", created: file.date("ctime", in: id), modified: file.date("mtime", in: id))
        }
    }
}

/// The subset of GLib's key-file syntax GNOME Keyring writes: `[group]` lines, `key=value` lines
/// with GLib's escapes, `#` comments.
///
/// One departure, for GNOME Keyring's own files: it writes an item's textual secret raw
/// (`g_key_file_set_value`, no escapes), so a secret with line breaks spans lines, and GLib
/// cannot read the file back. Here a `secret=` value runs, verbatim, up to the `mtime=` line
/// GNOME Keyring always writes next, so such a secret arrives whole.
struct KeyFile {
    private(set) var groups: [String] = []
    private var values: [String: [String: String]] = [:]

    init(_ text: String) throws {
        var current: String?
        var secret: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if let group = current, let open = secret {
                if line.hasPrefix("mtime=") {
                    values[group]?["secret"] = open
                    secret = nil
                } else {
                    secret = open + "\n" + line
                    continue
                }
            }
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]") else { throw KeyringFileError.damaged("a group header is not closed") }
                let name = String(trimmed.dropFirst().dropLast())
                if values[name] == nil {
                    groups.append(name)
                    values[name] = [:]
                }
                current = name
                continue
            }
            guard let group = current, let equals = trimmed.firstIndex(of: "=") else {
                throw KeyringFileError.damaged("a line is neither a group nor a key")
            }
            let key = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            let raw = trimmed[trimmed.index(after: equals)...]
            if key == "secret" {
                secret = String(raw)
            } else {
                values[group]?[key] = Self.unescape(raw.drop(while: { $0 == " " }))
            }
        }
        if let group = current, let secret { values[group]?["secret"] = secret }
    }

    /// The first group of `text`, for recognizing a key file.
    static func firstGroup(_ text: String) -> String? {
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard trimmed.hasPrefix("[") && trimmed.hasSuffix("]") else { return nil }
            return String(trimmed.dropFirst().dropLast())
        }
        return nil
    }

    func value(_ key: String, in group: String) -> String? { values[group]?[key] }

    func date(_ key: String, in group: String) -> Date? {
        value(key, in: group).flatMap(UInt64.init).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }

    /// GLib's escapes: `\s`, `\n`, `\t`, `\r` and `\\`.
    private static func unescape(_ raw: Substring) -> String {
        var result = ""
        var escaped = false
        for character in raw {
            if escaped {
                switch character {
                case "s": result.append(" ")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                default: result.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        return result
    }
}

extension Data {
    /// The bytes of a hexadecimal string, or `nil` when it is not one.
    init?(hexadecimal: String) {
        let digits = Array(hexadecimal.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes = Data(capacity: digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self = bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
