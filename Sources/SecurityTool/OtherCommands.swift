import ArgumentParser
import Foundation
import KeychainModel

// MARK: - Partition lists

/// What the partition-list commands say about Linux.
private let partitionListNote = """
    Partition lists exist on macOS to say which code-signing teams may use an item without a \
    prompt. Linux keychains have none: any process running as you can use the items of a keychain \
    it can unlock. The command is accepted so that macOS scripts keep working: it checks the \
    keychain password, prints the items that match, and changes nothing.
    """

/// Unlocks the keychain a partition-list command names (or the default keychain) with `-k`,
/// or with a password asked for as macOS does.
private func unlockForPartitionList(_ name: String?, password: String?, session: Session) throws {
    let keychain: OpenKeychain
    do {
        keychain = try session.open(name, createDefault: name == nil)
    } catch {
        throw CommandFailure.status(of: error, "SecKeychainUnlock").withResult(1)
    }
    // Only a locked keychain's password is checked, as securityd checks it (see
    // unlock-keychain): electron-builder passes the .p12's password as -k to a keychain its
    // script has already unlocked.
    guard keychain.database.hasPassword, keychain.database.isLocked else { return }
    let secret: Data
    if let password {
        secret = Data(ArgumentBytes.bytes(of: password))
    } else if let typed = try session.secrets.readSecret(prompt: "password to unlock \(name ?? "default"): ") {
        secret = Data(typed)
    } else {
        throw CommandFailure.failure("no password was entered")
    }
    do {
        try keychain.database.unlock(password: secret)
    } catch {
        throw CommandFailure.status(of: error, "SecKeychainUnlock").withResult(1)
    }
}

/// Prints every item that matches (the body of the password partition-list commands).
private func printAllMatches(_ query: ItemQuery, keychains: [String], session: Session) throws -> Int32 {
    var query = query
    query.synchronizable = .any
    var printed = 0
    do {
        for target in try searchTargets(keychains, in: session) {
            let items = try session.withAccess(to: target) { try target.database.find(query) }
            for item in items { Console.out(ItemFormat.attributeBlock(item, keychainPath: target.path)) }
            printed += items.count
        }
    } catch {
        throw (searchFailure(error, function: "SecItemCopyMatching") as? CommandFailure)?.withResult(1) ?? error
    }
    guard printed > 0 else {
        throw CommandFailure.status(KeychainError.Code.itemNotFound.rawValue, "SecItemCopyMatching").withResult(1)
    }
    return 0
}

/// The options every `set-…-partition-list` command shares: the (unused) partition list, the
/// keychain password and the keychain.
struct PartitionListOptions: ParsableArguments {
    @Option(
        name: .customShort("S", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("A comma-separated list of partition IDs (required; not used).", valueName: "partition-list")
    )
    var partitionList: String?

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain's password (asked for when omitted; insecure).", valueName: "password"))
    var password: String?

    @Argument(
        help: ArgumentHelp(
            "The keychain (default: the search list; for keys, the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if partitionList == nil { throw ValidationError("-S <partition-list> is required.") }
        if keychains.count > 1 { throw ValidationError("Give at most one keychain.") }
    }

    /// Checks the keychain password (there is no partition list to change on Linux).
    func unlock(in session: Session) throws {
        try unlockForPartitionList(keychains.first, password: password, session: session)
    }
}

/// `security set-generic-password-partition-list`: accepted for macOS scripts.
struct SetGenericPasswordPartitionList: ToolCommand {
    static let name = "set-generic-password-partition-list"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Set the partition list of a generic password item (accepted; no effect on Linux).",
        usage:
            "security set-generic-password-partition-list -S <partition-list> [-k <password>] [options...] [keychain]",
        discussion: HelpText.wrapped(partitionListNote))

    @OptionGroup var match: GenericPasswordMatch

    @OptionGroup var partition: PartitionListOptions

    func execute(in session: Session) throws -> Int32 {
        try partition.unlock(in: session)
        return try printAllMatches(match.query(), keychains: partition.keychains, session: session)
    }
}

/// `security set-internet-password-partition-list`: accepted for macOS scripts.
struct SetInternetPasswordPartitionList: ToolCommand {
    static let name = "set-internet-password-partition-list"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Set the partition list of an internet password item (accepted; no effect on Linux).",
        usage:
            "security set-internet-password-partition-list -S <partition-list> [-k <password>] [options...] [keychain]",
        discussion: HelpText.wrapped(partitionListNote))

    @OptionGroup var match: InternetPasswordMatch

    @OptionGroup var partition: PartitionListOptions

    func execute(in session: Session) throws -> Int32 {
        try partition.unlock(in: session)
        return try printAllMatches(match.query(), keychains: partition.keychains, session: session)
    }
}

/// `security set-key-partition-list`: accepted for macOS scripts.
struct SetKeyPartitionList: ToolCommand {
    static let name = "set-key-partition-list"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Set the partition list of a key (accepted; no effect on Linux).",
        usage: "security set-key-partition-list -S <partition-list> [-k <password>] [options...] [keychain]",
        discussion: HelpText.wrapped(
            """
            On macOS, CI scripts run `security set-key-partition-list -S apple-tool:,apple: -s -k "$PW" \
            build.keychain` so that codesign may use an imported key without a prompt. Linux keychains \
            have no partition lists. The command checks the keychain password and changes nothing; the \
            key-matching options are accepted and not used.
            """))

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: "Match the application label (not used).")
    var applicationLabel: String?
    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional, help: "Match the creator (not used).")
    var creator: String?
    @Flag(name: .customShort("d"), help: "Match keys that can decrypt (not used).")
    var decrypt = false
    @Option(
        name: .customShort("D", allowingJoined: true), parsing: .unconditional,
        help: "Match the description (not used).")
    var kind: String?
    @Flag(name: .customShort("e"), help: "Match keys that can encrypt (not used).")
    var encrypt = false
    @Option(
        name: .customShort("j", allowingJoined: true), parsing: .unconditional, help: "Match the comment (not used).")
    var comment: String?
    @Option(name: .customShort("l", allowingJoined: true), parsing: .unconditional, help: "Match the label (not used).")
    var label: String?
    @Flag(name: .customShort("r"), help: "Match keys that can derive (not used).")
    var derive = false
    @Flag(name: .customShort("s"), help: "Match keys that can sign (not used).")
    var sign = false
    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: "The type of key: symmetric, public or private (not used).")
    var keyType: String?
    @Flag(name: .customShort("u"), help: "Match keys that can unwrap (not used).")
    var unwrap = false
    @Flag(name: .customShort("v"), help: "Match keys that can verify (not used).")
    var verify = false
    @Flag(name: .customShort("w"), help: "Match keys that can wrap (not used).")
    var wrap = false

    @OptionGroup var partition: PartitionListOptions

    func execute(in session: Session) throws -> Int32 {
        try partition.unlock(in: session)
        return 0
    }
}

// MARK: - error

/// `security error`: prints the message for status codes.
struct ErrorCommand: ToolCommand {
    static let name = "error"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Display a descriptive message for the given error code(s).",
        usage: "security error <code>...",
        discussion: HelpText.wrapped(
            """
            Prints `Error: <hex> <decimal> <message>` for each code, which may be decimal (-25300), \
            hexadecimal (0xFFFF9D2C) or octal (0…). As on macOS, the command always exits with status 1.

            A failing `security` command exits with the low byte of its status code: 44 for \
            errSecItemNotFound (-25300), 45 for errSecDuplicateItem (-25299), 36 for \
            errSecInteractionNotAllowed (-25308), 51 for errSecAuthFailed (-25293). The full code is \
            in the command's message.

            Example:
              security error -25300
            """))

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("Status codes, such as -25300.", valueName: "code"))
    var codes: [String] = []

    func execute(in session: Session) throws -> Int32 {
        for text in codes where text != "error" {
            let status = Int32(truncatingIfNeeded: Self.strtoul(text))
            let hex = String(UInt32(bitPattern: status), radix: 16, uppercase: true)
            let padded = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
            Console.out("Error: 0x\(padded) \(status) \(statusMessage(status))\n")
        }
        return 1
    }

    /// `strtoul(text, NULL, 0)`: optional blanks and sign, then `0x` hex, `0` octal or decimal
    /// digits; parsing stops at the first other character; overflow gives `ULONG_MAX`.
    static func strtoul(_ text: String) -> UInt64 {
        var chars = Substring(text).drop { " \t\n\r\u{0B}\u{0C}".contains($0) }
        var negative = false
        if let sign = chars.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            chars = chars.dropFirst()
        }
        var radix: UInt64 = 10
        if chars.hasPrefix("0x") || chars.hasPrefix("0X"), let next = chars.dropFirst(2).first, next.isHexDigit {
            radix = 16
            chars = chars.dropFirst(2)
        } else if chars.hasPrefix("0") {
            radix = 8
        }
        var value: UInt64 = 0
        var overflow = false
        for character in chars {
            guard let digit = character.hexDigitValue, UInt64(digit) < radix else { break }
            let (multiplied, o1) = value.multipliedReportingOverflow(by: radix)
            let (added, o2) = multiplied.addingReportingOverflow(UInt64(digit))
            overflow = overflow || o1 || o2
            value = added
        }
        if overflow { return .max }
        return negative ? 0 &- value : value
    }
}
