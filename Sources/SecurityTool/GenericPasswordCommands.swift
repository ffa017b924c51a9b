import ArgumentParser
import Foundation
import KeychainModel

// MARK: - Shared option groups

/// The options that select generic password items (`find-`, `delete-` and
/// `set-generic-password-partition-list`).
struct GenericPasswordMatch: ParsableArguments {
    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the account name.", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the service name.", valueName: "service"))
    var service: String?

    @Option(
        name: .customShort("l", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the label (what a keychain viewer shows).", valueName: "label"))
    var label: String?

    @Option(
        name: .customShort("D", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the kind (the item's description).", valueName: "kind"))
    var kind: String?

    @Option(
        name: .customShort("G", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the generic attribute.", valueName: "value"))
    var generic: String?

    @Option(
        name: .customShort("j", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the comment.", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the creator, a four-character code such as 'aapl'.", valueName: "creator"))
    var creator: String?

    @Option(
        name: .customShort("C", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the type, a four-character code such as 'note'.", valueName: "type"))
    var type: String?

    /// Whether any matching option was given.
    var isEmpty: Bool {
        [account, service, label, kind, generic, comment, creator, type].allSatisfy { $0 == nil }
    }

    /// The query macOS would build (`find_first_generic_password`).
    func query() throws -> ItemQuery {
        var given: Attributes = [:]
        given.set(.account, account)
        given.set(.service, service)
        given.set(.label, label)
        given.set(.description, kind)
        given.set(.generic, generic)
        given.set(.comment, comment)
        try given.setCode("crtr", creator)
        try given.setCode("type", type)
        return ItemQuery(
            class: .genericPassword, attributes: matchAttributes(given, primaryKey: [.account, .service]))
    }
}

// MARK: - add-generic-password

/// `security add-generic-password`: adds (or with `-U` updates) a generic password item.
struct AddGenericPassword: ToolCommand {
    static let name = "add-generic-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Add a generic password item.",
        usage: """
            security add-generic-password -a <account> -s <service> [-w <password>] [options...] [keychain]
            security add-generic-password -a <account> -s <service> [options...] -w
            """,
        discussion: HelpText.wrapped(
            """
            A generic password is a secret identified by a service and an account, such as an API token \
            for a deploy script. The service and account together must be unique in a keychain: adding \
            the same pair twice fails with "The specified item already exists in the keychain." (exit \
            45) unless -U is given, which updates the existing item instead.

            Where the secret comes from:
              -w <password>   the argument itself. \(HelpText.secretOnCommandLine)
              -w (last)       when -w is the last argument, the password is asked for on the terminal \
            without echo (typed twice), or read as one line from standard input when standard input is \
            not a terminal. Every byte of the line except the newline is stored.
              -X <hex>        the secret's bytes in hexadecimal, for binary secrets.
              (none)          the item is stored with an empty secret.

            Without a keychain argument the item goes to the default keychain (see `security \
            default-keychain`), which is created on first use. \(HelpText.keychainArgument)

            \(HelpText.accessControl)

            Examples:
              security add-generic-password -a ci -s deploy -w
              printf '%s\\n' "$TOKEN" | security add-generic-password -a ci -s deploy -U -w
              security add-generic-password -a alice -s wiki -l "Team wiki" -j "rotated monthly" -w
            """))

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The account name (required).", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The service name (required).", valueName: "service"))
    var service: String?

    @Option(
        name: .customShort("w", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The password to store. Put -w last, with no value, to be asked for it instead (recommended).",
            valueName: "password"))
    var password: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The same as -w (kept for old scripts).", valueName: "password"))
    var legacyPassword: String?

    @Option(
        name: .customShort("X", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The secret as hexadecimal bytes (for binary secrets).", valueName: "hex"))
    var hexPassword: String?

    @Option(
        name: .customShort("l", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("A label for people (default: the service name).", valueName: "label"))
    var label: String?

    @Option(
        name: .customShort("D", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The kind of item, a free description (not set by default).", valueName: "kind"))
    var kind: String?

    @Option(
        name: .customShort("G", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("A generic attribute, any text your scripts want to keep.", valueName: "value"))
    var generic: String?

    @OptionGroup var options: AddItemOptions

    func validate() throws {
        guard account != nil, service != nil else {
            throw ValidationError("add-generic-password needs both -a <account> and -s <service>.")
        }
    }

    func execute(in session: Session) throws -> Int32 {
        var attributes: Attributes = [:]
        attributes.set(.account, account)
        attributes.set(.service, service)
        attributes.set(.label, label ?? service)
        attributes.set(.description, kind)
        attributes.set(.generic, generic)
        return try options.store(
            Item(class: .genericPassword, attributes: attributes), primaryKey: [.account, .service],
            text: password ?? legacyPassword, hex: hexPassword,
            function: { "SecKeychainItemCreateFromContent (\($0 ?? "<default>"))" }, session: session)
    }
}

/// The options `add-generic-password` and `add-internet-password` share: the comment, creator
/// and type attributes, `-U`, the access options macOS scripts pass, and the keychain.
struct AddItemOptions: ParsableArguments {
    @Option(
        name: .customShort("j", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("A comment.", valueName: "comment"))
    var comment: String?

    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The creator, a four-character code such as 'aapl'.", valueName: "creator"))
    var creator: String?

    @Option(
        name: .customShort("C", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The type, a four-character code such as 'note'.", valueName: "type"))
    var type: String?

    @Flag(
        name: .customShort("U"),
        help: "Update the item if it already exists (without -U an existing item is an error).")
    var update = false

    @Flag(name: .customShort("A"), help: "No access list: any program the item's access group allows reads it.")
    var allowAnyApplication = false

    @Option(
        name: .customShort("T", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "A program trusted to read the item without being asked (a path, flatpak:<app.id> or systemd:<unit>.service; \"\" for none). May be repeated.",
            valueName: "appPath"))
    var trustedApplications: [String] = []

    @Flag(name: .customLong(PromptMarker.flag), help: .hidden)
    var promptForPassword = false

    @Argument(help: ArgumentHelp("The keychain to add to (default: the default keychain).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        guard keychains.count <= 1 else { throw ValidationError("Give at most one keychain.") }
        guard keychains.first?.isEmpty != true else { throw ValidationError("The keychain name is empty.") }
    }

    /// Reads the secret (prompt, `-X` or the given text), sets the shared attributes and
    /// stores the item, updating an existing one with `-U`.
    /// - Parameters:
    ///   - function: The macOS function a failure message names, given the keychain name.
    /// - Returns: The command's result.
    func store(
        _ item: Item, primaryKey: [AttributeName], text: String?, hex: String?,
        function: (String?) -> String, session: Session
    ) throws -> Int32 {
        var item = item
        item.attributes.set(.comment, comment)
        try item.attributes.setCode("crtr", creator)
        try item.attributes.setCode("type", type)
        if let list = try accessList() { item.attributes[.access] = .data(list.serialized) }
        guard let secret = try NewSecret.read(prompt: promptForPassword, hex: hex, text: text, session: session)
        else { return 1 }
        let keychainName = keychains.first
        return try secret.store(
            item, primaryKey: primaryKey, updating: update, keychainName: keychainName,
            function: function(keychainName), session: session)
    }
}

extension AddItemOptions {
    /// The access list `-T` gives: `nil` without `-T`, with `-A` (any program, which wins as on
    /// macOS), or when every program named is absent here and `-T ""` was not given. Each program
    /// is named as the kernel names it when it runs, by its file's real path. A program this
    /// machine does not have (a macOS script's `/usr/bin/codesign`) is left off, with a warning.
    /// - Throws: ``CommandFailure`` for a malformed Flatpak app id.
    func accessList() throws -> AccessList? {
        guard !trustedApplications.isEmpty, !allowAnyApplication else { return nil }
        var applications: [TrustedApplication] = []
        for argument in trustedApplications where !argument.isEmpty {
            if TrustedApplication.isIdentifier(argument) {
                guard let application = TrustedApplication(argument: argument) else {
                    throw CommandFailure.failure(
                        "\(argument.printable) is not a Flatpak app id (flatpak:org.example.App) or a system "
                            + "service (systemd:backup.service)")
                }
                applications.append(application)
                continue
            }
            guard let application = TrustedApplication(programAt: argument) else {
                Console.err(
                    "security: -T \(argument.printable): no such program here; it is left off the access list\n")
                continue
            }
            applications.append(application)
        }
        guard !applications.isEmpty || trustedApplications.contains("") else { return nil }
        return AccessList(applications: applications)
    }
}

/// How the hidden "prompt for the password" marker reaches the add commands: the tool
/// rewrites a trailing `-w` (which getopt reports as a missing argument) into this flag.
enum PromptMarker {
    static let flag = "read-password-from-terminal-or-stdin"
}

/// The secret of an item being added or updated.
struct NewSecret {
    /// The secret's bytes, or `nil` when none was given (an update then keeps the old secret).
    var bytes: [UInt8]?

    /// Reads the secret from the prompt, `-X` or `-w`, as macOS's add commands do.
    /// - Returns: `nil` when a prompt was needed and nothing was entered (the command fails
    ///   with result 1 after saying so).
    static func read(prompt: Bool, hex: String?, text: String?, session: Session) throws -> NewSecret? {
        if prompt {
            guard
                let typed = try session.secrets.readSecret(
                    prompt: "password data for new item: ", confirmation: "retype password for new item: ")
            else {
                Console.err("security: no password was entered\n")
                return nil
            }
            return NewSecret(bytes: typed)
        }
        if let hex {
            guard let bytes = decodeHex(hex) else {
                throw CommandFailure.usage("Unable to convert password data (-X must specify valid hex digits)")
            }
            return NewSecret(bytes: bytes)
        }
        return NewSecret(bytes: text.map(ArgumentBytes.bytes(of:)))
    }

    /// Adds an item with this secret; with `-U` (`updating`), first updates the first item that
    /// matches the new item's primary-key attributes, if there is one.
    /// - Parameters:
    ///   - function: The macOS function named in a failure message.
    /// - Returns: The command's result.
    func store(
        _ item: Item, primaryKey: [AttributeName], updating: Bool, keychainName: String?, function: String,
        session: Session
    ) throws -> Int32 {
        if updating {
            let query = ItemQuery(
                class: item.itemClass, attributes: matchAttributes(item.attributes, primaryKey: primaryKey))
            if let result = try Self.updateExisting(
                query, changes: item.attributes, secret: self, keychainName: keychainName, session: session)
            {
                return result
            }
        }
        do {
            let keychain = try session.open(keychainName, createDefault: keychainName == nil)
            var item = item
            item.data = Data(bytes ?? [])
            _ = try session.withAccess(to: keychain) { try keychain.database.add(item) }
        } catch {
            throw searchFailure(error, function: function)
        }
        return 0
    }

    /// `-U`: finds the first item that matches (in the named keychain, or the search list)
    /// and changes the given attributes, and the secret when one was given.
    /// - Returns: The result when an item was found; `nil` when none was, so the item is added.
    static func updateExisting(
        _ query: ItemQuery, changes: Attributes, secret: NewSecret, keychainName: String?, session: Session
    ) throws -> Int32? {
        let targets: [OpenKeychain]
        if let keychainName {
            guard session.fileExists(session.resolve(keychainName)) else { return nil }
            targets = try searchTargets([keychainName], in: session)
        } else {
            targets = try searchTargets([], in: session)
        }
        do {
            guard let (item, keychain) = try findFirst(query, includeData: false, in: targets, session: session)
            else { return nil }
            var itemQuery = ItemQuery(class: item.itemClass, persistentID: item.persistentID)
            itemQuery.synchronizable = .any
            // A change of an item that asks (its owner, or about this program) asks here.
            itemQuery.authenticationUI = .allow
            try session.withAccess(to: keychain) {
                _ = try keychain.database.update(
                    itemQuery, attributes: changes, data: secret.bytes.map { Data($0) })
            }
            return 0
        } catch {
            throw searchFailure(error, function: "SecKeychainItemModifyContent")
        }
    }
}

// MARK: - find-generic-password

/// `security find-generic-password`: finds a generic password item and prints it.
struct FindGenericPassword: ToolCommand {
    static let name = "find-generic-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Find a generic password item.",
        usage: "security find-generic-password [-a <account>] [-s <service>] [options...] [-g | -w] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Prints the first item that matches every option given, searching the keychains named on the \
            command line, or else the search list (see `security list-keychains`).

            Output:
              (default)  the item's attributes on standard output, in macOS's format ("keychain:", \
            "version:", "class:" and "attributes:" lines). The secret is not shown.
              -g         also prints `password: "<secret>"` on standard error.
              -w         prints only the secret and a newline on standard output; use it in scripts: \
            TOKEN=$(security find-generic-password -s deploy -a ci -w). As on macOS, a secret that is \
            not all printable ASCII (UTF-8 text included) is printed in hexadecimal instead; decode it \
            with `xxd -r -p`.

            When no item matches, the command prints "security: SecKeychainSearchCopyNext: The specified \
            item could not be found in the keychain." and exits 44.

            \(HelpText.lockedKeychains) \(HelpText.keychainArgument)
            """))

    @OptionGroup var match: GenericPasswordMatch

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

/// The body of `find-generic-password` and `find-internet-password`.
func printFirstMatch(
    _ query: ItemQuery, showPassword: Bool, passwordOnly: Bool, keychains: [String], session: Session
) throws -> Int32 {
    let targets = try searchTargets(keychains, in: session)
    let wantsData = showPassword || passwordOnly
    let found: (Item, OpenKeychain)?
    do {
        found = try findFirst(query, includeData: wantsData, in: targets, session: session)
    } catch {
        throw searchFailure(error)
    }
    guard let (item, keychain) = found else {
        throw CommandFailure.status(KeychainError.Code.itemNotFound.rawValue, "SecKeychainSearchCopyNext")
    }
    if passwordOnly {
        Console.out(ItemFormat.passwordOnly(item.data))
    } else {
        Console.out(ItemFormat.attributeBlock(item, keychainPath: keychain.path))
        if showPassword { Console.err(ItemFormat.passwordLine(item.data)) }
    }
    return 0
}

// MARK: - delete-generic-password

/// `security delete-generic-password`: deletes the first matching generic password item.
struct DeleteGenericPassword: ToolCommand {
    static let name = "delete-generic-password"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Delete a generic password item.",
        usage: "security delete-generic-password [-a <account>] [-s <service>] [options...] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Deletes the first item that matches every option given (at least one is required), searching \
            the keychains named on the command line or else the search list. The deleted item's \
            attributes are printed on standard output, then "password has been deleted." on standard \
            error. When nothing matches, the command exits 44.

            \(HelpText.lockedKeychains)

            Example:
              security delete-generic-password -s deploy -a ci
            """))

    @OptionGroup var match: GenericPasswordMatch

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if match.isEmpty { throw ValidationError("Say which item to delete: give at least one of the match options.") }
    }

    func execute(in session: Session) throws -> Int32 {
        try deleteFirstMatch(match.query(), keychains: keychains, session: session)
    }
}

/// The body of `delete-generic-password` and `delete-internet-password`.
func deleteFirstMatch(_ query: ItemQuery, keychains: [String], session: Session) throws -> Int32 {
    let targets = try searchTargets(keychains, in: session)
    let found: (Item, OpenKeychain)?
    do {
        found = try findFirst(query, includeData: false, in: targets, session: session)
    } catch {
        throw searchFailure(error)
    }
    guard let (item, keychain) = found else {
        throw CommandFailure.status(KeychainError.Code.itemNotFound.rawValue, "SecKeychainSearchCopyNext")
    }
    Console.out(ItemFormat.attributeBlock(item, keychainPath: keychain.path))
    var itemQuery = ItemQuery(class: item.itemClass, persistentID: item.persistentID)
    itemQuery.synchronizable = .any
    do {
        try session.withAccess(to: keychain) { _ = try keychain.database.delete(itemQuery) }
    } catch {
        throw searchFailure(error, function: "SecKeychainItemDelete")
    }
    Console.err("password has been deleted.\n")
    return 0
}
