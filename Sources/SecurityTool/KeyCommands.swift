import ArgumentParser
import Foundation
import KeychainModel
import Security

// MARK: - find-key

extension ItemFormat {
    /// The CSSM key record's attributes as macOS prints them (numbered tags, `KeySchema`'s
    /// order) and the engine attribute each shows; `nil` for values Linux does not keep.
    private static let keyRows: [(tag: UInt32, format: Format, attribute: String?)] = [
        (0x00, .uint32, nil),  // KeyClass: the record type (below)
        (0x01, .blob, "labl"),  // PrintName
        (0x02, .blob, "alis"),  // Alias
        (0x03, .uint32, "perm"), (0x04, .uint32, "priv"), (0x05, .uint32, "modi"),
        (0x06, .blob, "klbl"),  // Label: the application label (public key hash)
        (0x07, .blob, "atag"),  // ApplicationTag
        (0x08, .blob, "crtr"),  // KeyCreator
        (0x09, .uint32, "type"), (0x0A, .uint32, "bsiz"), (0x0B, .uint32, "esiz"),
        (0x0C, .blob, "sdat"), (0x0D, .blob, "edat"),
        (0x0E, .uint32, "sens"), (0x0F, .uint32, "asen"), (0x10, .uint32, "extr"), (0x11, .uint32, "next"),
        (0x12, .uint32, "encr"), (0x13, .uint32, "decr"), (0x14, .uint32, "drve"), (0x15, .uint32, "sign"),
        (0x16, .uint32, "vrfy"), (0x17, .uint32, "snrc"), (0x18, .uint32, "vyrc"), (0x19, .uint32, "wrap"),
        (0x1A, .uint32, "unwp"),
    ]

    /// The CSSM record type of a key item: private 0x10, public 0x0F, symmetric 0x11.
    static func keyRecordType(_ item: Item) -> UInt32 {
        switch integer(item.attributes["kcls"]) {
        case 1: 0x10
        case 0: 0x0F
        default: 0x11
        }
    }

    /// An attribute's integer value, stored as a number or as its decimal text.
    static func integer(_ value: AttributeValue?) -> Int64? {
        switch value {
        case .number(let number): number
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// The attribute block macOS prints for a key item (`print_keychain_item_attributes`).
    static func keyBlock(_ item: Item, keychainPath: String) -> [UInt8] {
        let recordType = keyRecordType(item)
        var out: [UInt8] = []
        out += Array("keychain: ".utf8) + buffer(Array(keychainPath.utf8)) + [0x0A]
        out += Array("version: \(keychainVersion)\n".utf8)
        out += Array("class: ".utf8) + uint32(recordType) + Array("\nattributes:\n".utf8)
        for row in keyRows {
            out += Array("    ".utf8) + uint32(row.tag) + Array("<\(row.format.rawValue)>=".utf8)
            guard let name = row.attribute else {
                out += uint32(recordType) + [0x0A]
                continue
            }
            var value = item.attributes[AttributeName(rawValue: name)]
            if row.format == .uint32, let number = integer(value) { value = .number(number) }
            out += self.value(value, format: row.format) + [0x0A]
        }
        return out
    }
}

/// `security find-key`: prints the keys that match.
struct FindKey: ToolCommand {
    static let name = "find-key"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Find keys in the keychain.",
        usage: "security find-key [-a label] [-c creator] [-D desc] [-j comment] [-l label] [-t type] "
            + "[-d] [-e] [-r] [-s] [-u] [-v] [-w] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Prints every key item that matches all the options given, searching the keychains named \
            on the command line or else the search list, in macOS's format: a CSSM key record \
            (class 0x00000010 private, 0x0000000F public, 0x00000011 symmetric) with its numbered \
            attributes (1 the label, 6 the application label, 9 the algorithm, 10 the size in bits, \
            0x12–0x1A what the key may be used for). Attributes Linux keys do not have print as \
            <NULL>. When no key matches, the command prints "SecItemCopyMatching: The specified item \
            could not be found in the keychain." and exits 1, as on macOS.

            Example:
              security find-key -t private build.keychain
            """))

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "Match the application label (its text, or its bytes in hexadecimal).", valueName: "label"))
    var applicationLabel: String?

    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the creator.", valueName: "creator"))
    var creator: String?

    @Option(
        name: .customShort("D", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the description.", valueName: "desc"))
    var kind: String?

    @Option(
        name: .customShort("j", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the comment.", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("l", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the label.", valueName: "label"))
    var label: String?

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The type of key: symmetric, public or private.", valueName: "type"))
    var type: String?

    @Flag(name: .customShort("d"), help: "Match keys that can decrypt.") var decrypt = false
    @Flag(name: .customShort("e"), help: "Match keys that can encrypt.") var encrypt = false
    @Flag(name: .customShort("r"), help: "Match keys that can derive.") var derive = false
    @Flag(name: .customShort("s"), help: "Match keys that can sign.") var sign = false
    @Flag(name: .customShort("u"), help: "Match keys that can unwrap.") var unwrap = false
    @Flag(name: .customShort("v"), help: "Match keys that can verify.") var verify = false
    @Flag(name: .customShort("w"), help: "Match keys that can wrap.") var wrap = false

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if let type, !["symmetric", "public", "private"].contains(type) {
            throw ValidationError("Unknown key type \"\(type)\" (give symmetric, public or private).")
        }
    }

    /// Whether a key item matches every option given.
    private func matches(_ item: Item) -> Bool {
        let attributes = item.attributes
        func text(_ name: AttributeName, _ wanted: String?) -> Bool {
            guard let wanted else { return true }
            switch attributes[name] {
            case .string(let value): return value == wanted
            case .data(let value): return value == Data(wanted.utf8)
            default: return false
            }
        }
        guard text(.label, label), text(.comment, comment), text(.description, kind), text("crtr", creator) else {
            return false
        }
        if let applicationLabel {
            guard case .data(let value) = attributes["klbl"] else { return false }
            let bytes = decodeHex(applicationLabel).map { Data($0) }
            guard value == Data(applicationLabel.utf8) || value == bytes else { return false }
        }
        if let type {
            let wanted: Int64 = type == "public" ? 0 : type == "private" ? 1 : 2
            guard ItemFormat.integer(attributes["kcls"]) == wanted else { return false }
        }
        let capabilities: [(Bool, AttributeName)] = [
            (decrypt, "decr"), (encrypt, "encr"), (derive, "drve"), (sign, "sign"), (unwrap, "unwp"),
            (verify, "vrfy"), (wrap, "wrap"),
        ]
        for (wanted, name) in capabilities where wanted {
            guard ItemFormat.integer(attributes[name]) == 1 else { return false }
        }
        return true
    }

    func execute(in session: Session) throws -> Int32 {
        let targets = try searchTargets(keychains, in: session)
        var printed = 0
        do {
            for target in targets {
                var query = ItemQuery(class: .key)
                query.synchronizable = .any
                let items = try session.withAccess(to: target) { try target.database.find(query) }
                for item in items where matches(item) {
                    Console.out(ItemFormat.keyBlock(item, keychainPath: target.path))
                    printed += 1
                }
            }
        } catch {
            throw (searchFailure(error, function: "SecItemCopyMatching") as? CommandFailure)?.withResult(1) ?? error
        }
        guard printed > 0 else {
            throw CommandFailure.status(KeychainError.Code.itemNotFound.rawValue, "SecItemCopyMatching").withResult(1)
        }
        return 0
    }
}

// MARK: - create-keypair

/// `security create-keypair`: generates a key pair in a keychain.
struct CreateKeypair: ToolCommand {
    static let name = "create-keypair"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Create an asymmetric key pair.",
        usage: "security create-keypair [-a alg] [-s size] [-f date] [-t date] [-d days] [-k keychain] [-H] "
            + "[-A|-T appPath] [description]",
        discussion: HelpText.wrapped(
            """
            Generates a key pair and adds both keys to the keychain of -k, or to the default keychain, \
            labelled with the description ("<key>" when none is given). -H prints the public key hash \
            (the keys' application label) in PEM, as macOS does.

            Linux differences: the algorithm is rsa (macOS's dh, dsa and fee are refused) or, added \
            here, ec (P-256, P-384 or P-521 by -s); the default size is 2048 bits for rsa and 256 for \
            ec (macOS's default of 512 bits is too small to generate here). -f, -t and -d are \
            checked and accepted, but keys have no validity dates on Linux; -A and -T have no \
            effect.

            Example:
              security create-keypair -a rsa -s 3072 -k build.keychain "release signing"
            """))

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The algorithm: rsa (default) or ec.", valueName: "alg"))
    var algorithm: String = "rsa"

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The key size in bits (default 2048 for rsa, 256 for ec).", valueName: "size"))
    var size: String?

    @Option(
        name: .customShort("f", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Accepted for macOS scripts (valid from a date); no effect.", valueName: "date"))
    var from: String?

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Accepted for macOS scripts (valid to a date); no effect.", valueName: "date"))
    var to: String?

    @Option(
        name: .customShort("d", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Accepted for macOS scripts (valid for days, at least 1); no effect.", valueName: "days"))
    var days: String?

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain (default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    @Flag(name: .customShort("H"), help: "Print the public key hash attribute.")
    var printHash = false

    @Flag(name: .customShort("A"), help: "Accepted for macOS scripts; no effect on Linux.")
    var allowAnyApplication = false

    @Option(
        name: .customShort("T", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("Accepted for macOS scripts; no effect on Linux.", valueName: "appPath"))
    var trustedApplications: [String] = []

    @Argument(help: ArgumentHelp("The keys' label.", valueName: "description"))
    var descriptions: [String] = []

    func validate() throws {
        guard descriptions.count <= 1, descriptions.first?.isEmpty != true else {
            throw ValidationError("Give at most one description, not empty.")
        }
        if let days, (Double(days) ?? 0) < 1 { throw ValidationError("-d needs a number of days, at least 1.") }
    }

    func execute(in session: Session) throws -> Int32 {
        let type: CFString
        let defaultSize: Int
        switch algorithm {
        case "rsa", "r", "rs":
            type = kSecAttrKeyTypeRSA
            defaultSize = 2048
        case "ec":
            type = kSecAttrKeyTypeECSECPrimeRandom
            defaultSize = 256
        case "dsa", "dh", "fee", "d", "f":
            throw CommandFailure.failure(
                "SecKeyCreatePair \(keychain ?? "<NULL>"): \(statusMessage(errSecInvalidAlgorithm))")
        default:
            throw CommandFailure(result: 2, messages: ["Invalid algorithm: \(algorithm)"], showsUsage: true)
        }
        let bits = size.map { Int(leadingInteger($0)) } ?? defaultSize
        let target: OpenKeychain
        do {
            target = try session.open(keychain, createDefault: keychain == nil)
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainOpen \(keychain ?? "<default>")").withResult(1)
        }
        let label = descriptions.first ?? "<key>"
        let privateKey: SecKey
        do {
            privateKey = try withSecurityKeychain(target, session: session) {
                var error: Unmanaged<CFError>?
                let parameters: [CFString: Any] = [
                    kSecAttrKeyType: type, kSecAttrKeySizeInBits: bits, kSecAttrIsPermanent: true,
                    kSecAttrLabel: label,
                ]
                guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else {
                    let status = OSStatus(truncatingIfNeeded: error?.takeRetainedValue().code ?? Int(errSecParam))
                    throw KeychainError(KeychainError.Code(rawValue: status))
                }
                return key
            }
        } catch {
            let status = CommandFailure.osStatus(of: error)
            throw CommandFailure.failure("SecKeyCreatePair \(keychain ?? "<NULL>"): \(statusMessage(status))")
        }
        if printHash {
            let attributes = SecKeyCopyAttributes(privateKey) as? NSDictionary
            let hash = attributes?[kSecAttrApplicationLabel as String] as? Data ?? Data()
            Console.out(PEMBlock.encode(hash, label: "PUBLIC KEY HASH"))
        }
        return 0
    }
}
