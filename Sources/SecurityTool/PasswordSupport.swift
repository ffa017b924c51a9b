import ArgumentParser
import Foundation
import KeychainModel

/// A `security` command: parsed by ArgumentParser, run against the process's ``Session``.
package protocol ToolCommand: ParsableCommand {
    /// The command's name, as macOS spells it (also its configuration's `commandName`, read
    /// without building the configuration and its help).
    static var name: String { get }
    /// Runs the command and returns its result (0 for success; an `OSStatus`, 1 or 2 on failure).
    /// - Throws: ``CommandFailure`` (or an engine error, reported as a status).
    func execute(in session: Session) throws -> Int32
}

extension [String] {
    /// The strings, one a line: `joined(separator: "\n")` without its generic join, whose
    /// first use costs every `security` process one scan of all conformance records (every
    /// command's help is wrapped when its type is first used).
    fileprivate func joinedAsLines() -> String {
        var result = ""
        result.reserveCapacity(reduce(count) { $0 + $1.utf8.count })
        var first = true
        for line in self {
            if !first { result += "\n" }
            result += line
            first = false
        }
        return result
    }
}

/// Text shared by the help of several commands.
enum HelpText {
    /// Wraps help text to 79 columns so that ArgumentParser prints it as written: each line
    /// longer than that is broken at spaces, and its continuation lines are indented under the
    /// text of a list item (`- item`, or `term   description`).
    static func wrapped(_ text: String, width: Int = 79) -> String {
        let lines = Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        return lines.map { wrap($0, width: width) }.joinedAsLines()
    }

    /// One line of ``wrapped(_:width:)``, worked on as UTF-8 and measured in code points:
    /// every command's help is built when its type is first used, so this runs in each
    /// short-lived `security` process.
    private static func wrap(_ line: ArraySlice<UInt8>, width: Int) -> String {
        guard columns(line) > width else { return String(decoding: line, as: UTF8.self) }
        let space = UInt8(ascii: " ")
        let leading = line.prefix { $0 == space }.count
        let body = line.dropFirst(leading)
        var indent = leading
        if body.starts(with: [UInt8(ascii: "-"), space]) {
            indent = leading + 2
        } else if let gap = firstGap(in: body), columns(body[..<gap]) <= 24 {
            indent = leading + columns(body[..<gap]) + 3 + line[(gap + 3)...].prefix { $0 == space }.count
        }
        var lines: [String] = []
        var current = [UInt8](repeating: space, count: leading)
        var length = leading
        var hasWords = false
        for word in body.split(separator: space, omittingEmptySubsequences: false) {
            let candidateLength = length + (hasWords ? 1 : 0) + columns(word)
            if candidateLength > width, hasWords, !word.isEmpty {
                lines.append(String(decoding: current, as: UTF8.self))
                current = [UInt8](repeating: space, count: indent) + word
                length = indent + columns(word)
            } else {
                if hasWords { current.append(space) }
                current += word
                length = candidateLength
            }
            hasWords = true
        }
        lines.append(String(decoding: current, as: UTF8.self))
        return lines.joinedAsLines()
    }

    /// The number of code points in UTF-8 `bytes` (the bytes that do not continue one).
    private static func columns(_ bytes: ArraySlice<UInt8>) -> Int {
        bytes.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
    }

    /// The index of the first run of three spaces in `body`, which separates a term from its
    /// description.
    private static func firstGap(in body: ArraySlice<UInt8>) -> Int? {
        let space = UInt8(ascii: " ")
        var index = body.startIndex
        while index + 3 <= body.endIndex {
            if body[index] == space, body[index + 1] == space, body[index + 2] == space { return index }
            index += 1
        }
        return nil
    }

    static let secretOnCommandLine =
        "A secret given on the command line can be seen by other users of this machine (in `ps`) and lands in your shell history."

    static let accessControl = """
        Which programs may read the secret without being asked (an access list, as on macOS):
          -T <app>        trust this program: an executable's path (symbolic links are followed, as \
        the kernel names a running program by its file), flatpak:<app.id> for a Flatpak app, or \
        systemd:<unit>.service for a service of the system's service manager (named by its cgroup; \
        not a unit of your own systemctl --user). May be repeated; -T "" trusts no program, so every read asks. A program this machine does not have (a \
        macOS script's /usr/bin/codesign) is left off, with a warning.
          -A              no access list: the item's access group alone decides (also the default, and \
        it wins over -T, as on macOS).
        With an access list, keychaind asks you about any other program that reads or changes the item, \
        on its terminal or your desktop: Allow (this once), Always Allow (adds the program, pinned by its \
        file's SHA-256, to the list) or Deny. An interpreter such as python3 can be allowed only once. \
        `security dump-keychain -a` shows each item's list; -U with -T replaces it, after asking you. \
        A program that opens the keychain file itself (KEYCHAIN_AGENT=off) is not bound by a list.
        """

    static let keychainArgument =
        "A keychain is a path (anything containing `/`) or a name in ~/.local/share/keychains "
        + "(`build` and `build.keychain` both mean build.keychain-db there)."

    static let lockedKeychains = """
        A keychain protected by a password starts locked in every `security` process. When a command needs \
        its items, the password is taken from the KEYCHAIN_PASSWORD environment variable, or asked for on \
        the terminal; without either the command fails with "User interaction is not allowed." (exit 36).
        """
}

/// Parses a four-character code the way macOS does (`parse_fourcharcode`).
/// - Throws: ``CommandFailure`` with result 1 and macOS's message when the code is not
///   exactly four bytes long.
func fourCharCode(_ text: String) throws -> UInt32 {
    let bytes = ArgumentBytes.bytes(of: text)
    guard bytes.count == 4 else {
        var lines = ["Error: four-character types must be exactly 4 characters long."]
        if bytes.count == 3 { lines.append("(Try \"\(text) \" instead of \"\(text)\")") }
        throw CommandFailure(result: 1, messages: [], rawLines: lines)
    }
    return bytes.reduce(0) { $0 << 8 | UInt32($1) }
}

/// `atoi(3)` as macOS and glibc define it, `(int)strtol(text, NULL, 10)`: leading blanks, an
/// optional sign, then digits; anything else stops the number. A number past the range of a
/// `long` is clamped to it (as `strtol` does), then truncated to 32 bits; no input traps.
func leadingInteger(_ text: String) -> Int32 {
    var scalars = Substring(text).drop { " \t\n\r\u{0B}\u{0C}".contains($0) }
    var negative = false
    if let first = scalars.first, first == "-" || first == "+" {
        negative = first == "-"
        scalars = scalars.dropFirst()
    }
    // The magnitude, saturated at 2^63 (the magnitude of Int64.min).
    let limit = UInt64(1) << 63
    var magnitude: UInt64 = 0
    for character in scalars {
        guard character.isASCII, let digit = character.wholeNumberValue else { break }
        let (multiplied, o1) = magnitude.multipliedReportingOverflow(by: 10)
        let (added, o2) = multiplied.addingReportingOverflow(UInt64(digit))
        magnitude = o1 || o2 ? limit : min(added, limit)
    }
    let long: Int64 =
        negative
        ? (magnitude == limit ? .min : -Int64(magnitude))
        : Int64(min(magnitude, limit - 1))
    return Int32(truncatingIfNeeded: long)
}

/// Decodes `-X` hex the way macOS does (`convertHex`): an odd number of digits is padded
/// with a leading zero; any other character fails.
func decodeHex(_ text: String) -> [UInt8]? {
    var digits = Array(text.utf8)
    if digits.count % 2 == 1 { digits.insert(0x30, at: 0) }
    func value(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }
    var bytes: [UInt8] = []
    var index = 0
    while index < digits.count {
        guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
        bytes.append(high << 4 | low)
        index += 2
    }
    return bytes
}

/// The keychains a search covers: those named on the command line (each must open), or the
/// search list (keychains that do not exist are skipped).
func searchTargets(_ names: [String], in session: Session) throws -> [OpenKeychain] {
    if names.isEmpty {
        var targets: [OpenKeychain] = []
        for path in try session.searchList() where session.fileExists(path) {
            do {
                targets.append(OpenKeychain(name: nil, path: path, database: try session.database(at: path)))
            } catch {
                throw CommandFailure.status(of: error, "SecKeychainOpen \(path)")
            }
        }
        return targets
    }
    return try names.map { name in
        guard !name.isEmpty else { throw CommandFailure.usage("a keychain name cannot be empty") }
        do {
            return try session.open(name)
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainOpen \(name)")
        }
    }
}

/// A failure of a keychain search, with the locked-keychain hint when it applies.
func searchFailure(_ error: any Error, function: String = "SecKeychainSearchCopyNext") -> any Error {
    if error is CommandFailure { return error }
    if let error = error as? KeychainError, error.isSetupProblem { return CommandFailure.status(of: error, function) }
    let status = CommandFailure.osStatus(of: error)
    if let error = error as? KeychainError, error.reason == .applicationNotTrusted {
        return CommandFailure.status(
            status, function,
            hint: "the item's access list does not name this program, and there is nobody to ask: run it on a "
                + "terminal or in your desktop session to be asked, or trust it with `-U -T`")
    }
    let locked = status == KeychainError.Code.interactionNotAllowed.rawValue
    return CommandFailure.status(status, function, hint: locked ? Session.lockedHint() : nil)
}

/// Finds the first item that matches, searching keychains in order. A secret whose item asks
/// for its owner's authentication has the person asked, on this terminal or by the desktop's
/// polkit agent, as macOS's `security` has its dialog ask.
/// - Returns: The item and the keychain it is in, or `nil` when nothing matches.
func findFirst(
    _ query: ItemQuery, includeData: Bool, in targets: [OpenKeychain], session: Session
) throws -> (Item, OpenKeychain)? {
    var query = query
    query.synchronizable = .any
    query.limit = 1
    if includeData { query.authenticationUI = .allow }
    for target in targets {
        let found = try session.withAccess(to: target) {
            try target.database.find(query, includeData: includeData).first
        }
        if let found { return (found, target) }
    }
    return nil
}

/// Chooses the attributes a macOS search uses (`find_first_generic_password` and
/// `find_first_internet_password`): when the whole primary key is given, only the primary
/// key, so that `-U` can change the other attributes; otherwise everything given.
func matchAttributes(_ given: Attributes, primaryKey: [AttributeName]) -> Attributes {
    let hasPrimaryKey = primaryKey.allSatisfy { given[$0] != nil }
    return hasPrimaryKey ? given.filter { primaryKey.contains($0.key) } : given
}

extension Attributes {
    /// Sets an attribute to an argument's bytes when the value is present (a string when they
    /// are UTF-8, data otherwise; see ``ArgumentBytes/attributeValue(_:)``).
    mutating func set(_ name: AttributeName, _ value: String?) {
        if let value { self[name] = ArgumentBytes.attributeValue(value) }
    }

    /// Sets a four-character-code attribute (stored as its 32-bit number, as Apple does)
    /// when the value is present and not zero.
    mutating func setCode(_ name: AttributeName, _ value: String?) throws {
        guard let value else { return }
        let code = try fourCharCode(value)
        if code != 0 { self[name] = .number(Int64(code)) }
    }
}
