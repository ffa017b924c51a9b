import ArgumentParser
import Foundation
import KeychainModel

/// The attributes that make an internet password unique.
private let internetPrimaryKey: [AttributeName] = [
    .account, .securityDomain, .server, .protocol, .authenticationType, .port, .path,
]

// MARK: - Shared option group

/// The options that select internet password items (`find-`, `delete-` and
/// `set-internet-password-partition-list`).
struct InternetPasswordMatch: ParsableArguments {
    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the account name.", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the server name, such as example.com.", valueName: "server"))
    var server: String?

    @Option(
        name: .customShort("d", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the security domain (an HTTP realm, say).", valueName: "securityDomain"))
    var securityDomain: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the path on the server.", valueName: "path"))
    var path: String?

    @Option(
        name: .customShort("P", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the port number.", valueName: "port"))
    var port: String?

    @Option(
        name: .customShort("r", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "Match the protocol, a four-character code such as 'http', 'htps' or 'ftp ' (note the space).",
            valueName: "protocol"))
    var networkProtocol: String?

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "Match the authentication type, a four-character code such as 'dflt', 'http' or 'ntlm'.",
            valueName: "authenticationType"))
    var authenticationType: String?

    @Option(
        name: .customShort("l", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the label.", valueName: "label"))
    var label: String?

    @Option(
        name: .customShort("D", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the kind (the item's description).", valueName: "kind"))
    var kind: String?

    @Option(
        name: .customShort("j", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the comment.", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the creator, a four-character code.", valueName: "creator"))
    var creator: String?

    @Option(
        name: .customShort("C", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the type, a four-character code.", valueName: "type"))
    var type: String?

    /// Whether any matching option was given (macOS treats a port of 0 as not given).
    var isEmpty: Bool {
        [
            account, server, securityDomain, path, networkProtocol, authenticationType, label, kind, comment, creator,
            type,
        ]
        .allSatisfy { $0 == nil } && (port.map(leadingInteger) ?? 0) == 0
    }

    /// The query macOS would build (`find_first_internet_password`).
    /// - Parameter authenticationTypeInHostOrder: Whether `-t` is read as macOS's
    ///   `delete-internet-password` reads it: `add-` and `find-internet-password` store and
    ///   match the code's bytes as written (they convert it to big-endian), but `delete-` passes
    ///   the code in host byte order, which on every current Mac (little-endian) is the written
    ///   bytes reversed; so `delete-internet-password -t tlfd` deletes an item added with `-t dflt`.
    func query(authenticationTypeInHostOrder: Bool = false) throws -> ItemQuery {
        var given: Attributes = [:]
        given.set(.account, account)
        given.set(.server, server)
        given.set(.securityDomain, securityDomain)
        given.set(.path, path)
        if let port {
            let number = Int64(UInt16(truncatingIfNeeded: leadingInteger(port)))
            if number != 0 { given[.port] = .number(number) }
        }
        if let networkProtocol {
            _ = try fourCharCode(networkProtocol)
            given.set(.protocol, networkProtocol)
        }
        if let authenticationType {
            _ = try fourCharCode(authenticationType)
            given.set(
                .authenticationType,
                authenticationTypeInHostOrder
                    ? ArgumentBytes.string(from: ArgumentBytes.bytes(of: authenticationType).reversed())
                    : authenticationType)
        }
        given.set(.label, label)
        given.set(.description, kind)
        given.set(.comment, comment)
        try given.setCode("crtr", creator)
        try given.setCode("type", type)
        return ItemQuery(class: .internetPassword, attributes: matchAttributes(given, primaryKey: internetPrimaryKey))
    }
}

// MARK: - add-internet-password

/// `security add-internet-password`: adds (or with `-U` updates) an internet password item.
struct AddInternetPassword: ToolCommand {
    static let name = "add-internet-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Add an internet password item.",
        usage: """
            security add-internet-password -a <account> -s <server> [-w <password>] [options...] [keychain]
            security add-internet-password -a <account> -s <server> [options...] -w
            """,
        discussion: HelpText.wrapped(
            """
            An internet password is a secret for an account on a server, optionally narrowed by \
            protocol, port, path, security domain and authentication type; together these must be \
            unique in a keychain. Adding an existing item fails with exit 45 unless -U is given, which \
            updates it.

            Where the secret comes from:
              -w <password>   the argument itself. \(HelpText.secretOnCommandLine)
              -w (last)       when -w is the last argument, the password is asked for on the terminal \
            without echo (typed twice), or read as one line from standard input when standard input is \
            not a terminal. Every byte of the line except the newline is stored.
              -X <hex>        the secret's bytes in hexadecimal.
              (none)          the item is stored with an empty secret.

            Without a keychain argument the item goes to the default keychain, which is created on \
            first use. \(HelpText.keychainArgument)

            \(HelpText.accessControl)

            Examples:
              security add-internet-password -a alice -s git.example.com -r htps -w
              security add-internet-password -a alice -s proxy.example.com -P 3128 -r http -U -w
            """))

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The account name (required).", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The server name, such as example.com (required).", valueName: "server"))
    var server: String?

    @Option(
        name: .customShort("w", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The password to store. Put -w last, with no value, to be asked for it instead (recommended).",
            valueName: "password"))
    var password: String?

    @Option(
        name: .customShort("X", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The secret as hexadecimal bytes.", valueName: "hex"))
    var hexPassword: String?

    @Option(
        name: .customShort("d", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The security domain (an HTTP realm, say).", valueName: "securityDomain"))
    var securityDomain: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The path on the server.", valueName: "path"))
    var path: String?

    @Option(
        name: .customShort("P", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The port number.", valueName: "port"))
    var port: String?

    @Option(
        name: .customShort("r", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The protocol, a four-character code such as 'http', 'htps', 'ftp ' or 'ssh '.", valueName: "protocol"))
    var networkProtocol: String?

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The authentication type, a four-character code (default 'dflt').", valueName: "authenticationType"))
    var authenticationType: String?

    @Option(
        name: .customShort("l", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("A label for people (default: the server name).", valueName: "label"))
    var label: String?

    @Option(
        name: .customShort("D", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The kind of item, a free description.", valueName: "kind"))
    var kind: String?

    @OptionGroup var options: AddItemOptions

    func validate() throws {
        guard account != nil, server != nil else {
            throw ValidationError("add-internet-password needs both -a <account> and -s <server>.")
        }
    }

    func execute(in session: Session) throws -> Int32 {
        var attributes: Attributes = [:]
        attributes.set(.account, account)
        attributes.set(.server, server)
        attributes.set(.securityDomain, securityDomain)
        attributes.set(.path, path)
        if let port {
            let number = Int64(UInt16(truncatingIfNeeded: leadingInteger(port)))
            if number != 0 { attributes[.port] = .number(number) }
        }
        if let networkProtocol {
            _ = try fourCharCode(networkProtocol)
            attributes.set(.protocol, networkProtocol)
        }
        let authentication = authenticationType ?? "dflt"
        _ = try fourCharCode(authentication)
        attributes.set(.authenticationType, authentication)
        attributes.set(.label, label ?? server)
        attributes.set(.description, kind)
        return try options.store(
            Item(class: .internetPassword, attributes: attributes), primaryKey: internetPrimaryKey,
            text: password, hex: hexPassword, function: { "SecKeychainAddInternetPassword \($0 ?? "<NULL>")" },
            session: session)
    }
}

// MARK: - find-internet-password

/// `security find-internet-password`: finds an internet password item and prints it.
struct FindInternetPassword: ToolCommand {
    static let name = "find-internet-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Find an internet password item.",
        usage: "security find-internet-password [-a <account>] [-s <server>] [options...] [-g | -w] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Prints the first item that matches every option given, searching the keychains named on the \
            command line, or else the search list (see `security list-keychains`).

            Output:
              (default)  the item's attributes on standard output, in macOS's format. The secret is \
            not shown.
              -g         also prints `password: "<secret>"` on standard error.
              -w         prints only the secret and a newline on standard output (in hexadecimal when \
            it is not all printable ASCII, as on macOS).

            When no item matches, the command exits 44 with "The specified item could not be found in \
            the keychain."

            \(HelpText.lockedKeychains) \(HelpText.keychainArgument)

            Example:
              security find-internet-password -s git.example.com -a alice -w
            """))

    @OptionGroup var match: InternetPasswordMatch

    @Flag(name: .customShort("g"), help: "Also print the password, on standard error.")
    var showPassword = false

    @Flag(name: .customShort("w"), help: "Print only the password, on standard output.")
    var passwordOnly = false

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        try printFirstMatch(
            match.query(), showPassword: showPassword, passwordOnly: passwordOnly, keychains: keychains,
            session: session)
    }
}

// MARK: - delete-internet-password

/// `security delete-internet-password`: deletes the first matching internet password item.
struct DeleteInternetPassword: ToolCommand {
    static let name = "delete-internet-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Delete an internet password item.",
        usage: "security delete-internet-password [-a <account>] [-s <server>] [options...] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Deletes the first item that matches every option given (at least one is required), searching \
            the keychains named on the command line or else the search list. The deleted item's \
            attributes are printed on standard output, then "password has been deleted." on standard \
            error. When nothing matches, the command exits 44.

            As on macOS, -t takes the authentication type's four characters in reverse order (macOS \
            reads this one option in the Mac's little-endian byte order): an item added with `-t dflt` \
            is deleted with `-t tlfd`, and `-t dflt` does not match it. add- and find-internet-password \
            take the code as written.

            \(HelpText.lockedKeychains)

            Example:
              security delete-internet-password -s git.example.com -a alice -t tlfd
            """))

    @OptionGroup var match: InternetPasswordMatch

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if match.isEmpty { throw ValidationError("Say which item to delete: give at least one of the match options.") }
    }

    func execute(in session: Session) throws -> Int32 {
        try deleteFirstMatch(match.query(authenticationTypeInHostOrder: true), keychains: keychains, session: session)
    }
}
