import Foundation
import KeychainModel

/// The text macOS's `security` prints for keychain items (`keychain_utilities.c`), byte for
/// byte: the `keychain:` / `version:` / `class:` / `attributes:` block, `print_buffer`'s
/// quoting and hex, and the password forms of `-g` and `-w`.
enum ItemFormat {
    /// The keychain version macOS prints for `.keychain-db` files. The value is printed
    /// unchanged so that scripts that parse the block keep working; it is not this engine's
    /// file-format version.
    static let keychainVersion = 512

    /// How an attribute's value is shown, after macOS's CSSM attribute formats.
    enum Format: String {
        case blob, uint32, sint32, timedate
    }

    /// One line of the attribute block: the tag macOS prints and the engine attribute it shows.
    struct Row {
        /// The tag as macOS prints it: a four-character code or a number (7 = label, 8 = alias).
        var tag: UInt32
        var format: Format
        var attribute: AttributeName
    }

    private static func code(_ name: String) -> UInt32 {
        name.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func rows(_ list: [(String, Format)]) -> [Row] {
        [Row(tag: 7, format: .blob, attribute: .label), Row(tag: 8, format: .blob, attribute: "alis")]
            + list.map { Row(tag: code($0.0), format: $0.1, attribute: AttributeName(rawValue: $0.0)) }
    }

    /// The attributes of generic password items, in macOS's order.
    static let genericPasswordRows = rows([
        ("acct", .blob), ("cdat", .timedate), ("crtr", .uint32), ("cusi", .sint32), ("desc", .blob),
        ("gena", .blob), ("icmt", .blob), ("invi", .sint32), ("mdat", .timedate), ("nega", .sint32),
        ("prot", .blob), ("scrp", .sint32), ("svce", .blob), ("type", .uint32),
    ])

    /// The attributes of internet password items, in macOS's order.
    static let internetPasswordRows = rows([
        ("acct", .blob), ("atyp", .blob), ("cdat", .timedate), ("crtr", .uint32), ("cusi", .sint32),
        ("desc", .blob), ("icmt", .blob), ("invi", .sint32), ("mdat", .timedate), ("nega", .sint32),
        ("path", .blob), ("port", .uint32), ("prot", .blob), ("ptcl", .uint32), ("scrp", .sint32),
        ("sdmn", .blob), ("srvr", .blob), ("type", .uint32),
    ])

    /// The rows for a class, or `nil` for classes the tool does not print.
    static func rows(for itemClass: ItemClass) -> [Row]? {
        switch itemClass {
        case .genericPassword: genericPasswordRows
        case .internetPassword: internetPasswordRows
        default: nil
        }
    }

    // MARK: Blocks

    /// The attribute block of an item (`print_keychain_item_attributes`), without its data.
    static func attributeBlock(_ item: Item, keychainPath: String) -> [UInt8] {
        var out: [UInt8] = []
        out += Array("keychain: ".utf8) + buffer(Array(keychainPath.utf8)) + [0x0A]
        out += Array("version: \(keychainVersion)\n".utf8)
        out += Array("class: ".utf8) + buffer(Array(item.itemClass.rawValue.utf8)) + Array("\nattributes:\n".utf8)
        for row in rows(for: item.itemClass) ?? [] {
            out += Array("    ".utf8) + uint32(row.tag) + Array("<\(row.format.rawValue)>=".utf8)
            out += value(item.attributes[row.attribute], format: row.format)
            out.append(0x0A)
        }
        return out
    }

    /// The `data:` section that `dump-keychain -d` adds after the attributes.
    static func dataSection(_ data: Data?) -> [UInt8] {
        Array("data:\n".utf8) + buffer([UInt8](data ?? Data())) + [0x0A]
    }

    /// The `data:` section of an item whose secret asks for its owner's authentication, which
    /// a dump does not ask for.
    static let withheldDataSection = Array("data:\n<withheld: the item asks for its owner's authentication>\n".utf8)

    /// What `dump-keychain -a` says of an item's access control: what reading it asks for.
    static func accessControlLine(_ item: Item) -> [UInt8] {
        accessFlagsLine(item) + accessListLines(item)
    }

    /// The item's access list: `access list: trusts no application`, or `access list:` and a
    /// line for each trusted application; nothing for an item without one.
    static func accessListLines(_ item: Item) -> [UInt8] {
        guard let stored = item.attributes[.access]?.dataValue else { return [] }
        let applications = AccessList(serialized: stored).applications
        guard !applications.isEmpty else { return Array("access list: trusts no application\n".utf8) }
        return Array(("access list:\n" + applications.map { "    trusted: \($0)\n" }.joined()).utf8)
    }

    private static func accessFlagsLine(_ item: Item) -> [UInt8] {
        guard let control = item.attributes[.accessControl]?.dataValue.flatMap(StoredAccessControl.init(serialized:))
        else { return Array("no access control for this item\n".utf8) }
        let names = accessControlFlagNames.filter { control.flags & $0.flag != 0 }.map(\.name)
        let unknown = control.flags & ~accessControlFlagNames.reduce(0) { $0 | $1.flag }
        let flags = names + (unknown == 0 ? [] : ["0x" + String(unknown, radix: 16)])
        return Array("access control: \(control.protection.printable) [\(flags.joined(separator: ", "))]\n".utf8)
    }

    /// `SecAccessControlCreateFlags`' names, as Apple spells them.
    private static let accessControlFlagNames: [(flag: UInt64, name: String)] = [
        (1 << 0, "userPresence"), (1 << 1, "biometryAny"), (1 << 3, "biometryCurrentSet"),
        (1 << 4, "devicePasscode"), (1 << 5, "companion"), (1 << 14, "or"), (1 << 15, "and"),
        (1 << 30, "privateKeyUsage"), (1 << 31, "applicationPassword"),
    ]

    /// What `-g` prints on standard error: `password: "…"` (or hex for binary secrets).
    static func passwordLine(_ data: Data?) -> [UInt8] {
        Array("password: ".utf8) + buffer([UInt8](data ?? Data())) + [0x0A]
    }

    /// What `-w` prints on standard output: the secret and a newline, or, as macOS does when
    /// any byte is not printable ASCII (UTF-8 text included), the secret in lowercase hex.
    static func passwordOnly(_ data: Data?) -> [UInt8] {
        let bytes = [UInt8](data ?? Data())
        if bytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) { return bytes + [0x0A] }
        return Array((bytes.map { hex($0, uppercase: false) }.joined() + "\n").utf8)
    }

    // MARK: print_buffer

    /// macOS's `print_buffer`: printable ASCII in quotes with `\ooo` escapes for the rest;
    /// if any byte is not printable, `0x` and the bytes in uppercase hex come first, followed
    /// by two spaces and the quoted form when some byte is printable.
    static func buffer(_ bytes: [UInt8]) -> [UInt8] {
        let isPlain: (UInt8) -> Bool = { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x5C }
        let hasPlain = bytes.contains(where: isPlain)
        let hasOther = bytes.contains { !isPlain($0) }
        var out: [UInt8] = []
        if hasOther {
            out += Array(("0x" + bytes.map { hex($0, uppercase: true) }.joined()).utf8)
            if hasPlain { out.append(0x20) }
            out.append(0x20)
        }
        if hasPlain {
            out.append(0x22)
            for byte in bytes {
                if isPlain(byte) {
                    out.append(byte)
                } else {
                    out += [0x5C, 0x30 + (byte >> 6 & 7), 0x30 + (byte >> 3 & 7), 0x30 + (byte & 7)]
                }
            }
            out.append(0x22)
        }
        return out
    }

    /// macOS's `print_uint32`: the number's big-endian bytes through ``buffer(_:)``.
    static func uint32(_ value: UInt32) -> [UInt8] {
        buffer([UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
    }

    private static func hex(_ byte: UInt8, uppercase: Bool) -> String {
        let digits = Array(uppercase ? "0123456789ABCDEF" : "0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    // MARK: Values

    private static let null = Array("<NULL>".utf8)

    static func value(_ value: AttributeValue?, format: Format) -> [UInt8] {
        guard let value else { return null }
        switch (format, value) {
        case (.uint32, .number(let n)), (.sint32, .number(let n)):
            return uint32(UInt32(truncatingIfNeeded: n))
        case (.timedate, .date(let date)):
            return buffer(Array(timeDate(date).utf8) + [0])
        case (_, .date(let date)):
            return buffer(Array(timeDate(date).utf8) + [0])
        case (_, .number(let n)):
            return buffer(Array(String(n).utf8))
        case (_, .string(let s)):
            return s.isEmpty ? null : buffer(Array(s.utf8))
        case (_, .data(let d)):
            return d.isEmpty ? null : buffer([UInt8](d))
        }
    }

    /// A date as CSSM's `TIME_DATE` text: `YYYYMMDDhhmmssZ` in UTC.
    static func timeDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ n: Int?) -> String {
            let n = n ?? 0
            return n < 10 ? "0\(n)" : "\(n)"
        }
        return "\(c.year ?? 0)\(two(c.month))\(two(c.day))\(two(c.hour))\(two(c.minute))\(two(c.second))Z"
    }
}
