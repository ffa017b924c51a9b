import ArgumentParser
import Foundation
import KeychainModel

/// `security revoke-access` (Linux only): takes a program off the access lists of the password
/// items that match, whatever digest "Always Allow" pinned it by, so it is asked about again.
/// macOS has no command for this (Keychain Access's Access Control tab does it); `dump-keychain
/// -a` lists the lists.
struct RevokeAccess: ToolCommand {
    static let name = "revoke-access"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Take a program off items' access lists, so that it is asked again (Linux only).",
        usage: "security revoke-access [-s <service>] [-a <account>] [-l <label>] <program> [keychain...]",
        discussion: HelpText.wrapped(
            """
            Takes <program> (a path, flatpak:<app.id> or systemd:<unit>.service) off the access list of every generic and \
            internet password that matches the options given (-s is an internet password's server), \
            or of every item without options, \
            however it was added (by -T, or pinned by its digest through "Always Allow"). Its next \
            read of such an item asks you again (Deny / Allow / Always Allow). Prints a line for \
            each item changed, and exits 44 when no matching item's list names the program.

            Taking programs off a list asks nothing, as deleting an item asks nothing: it gives no \
            program anything. Adding one is a change that asks (see add-generic-password -U -T). \
            See each item's list with `security dump-keychain -a`. \(HelpText.keychainArgument)
            """))

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Only items with this service (an internet password's server).", valueName: "service"))
    var service: String?

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Only items with this account.", valueName: "account"))
    var account: String?

    @Option(
        name: .customShort("l", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Only items with this label.", valueName: "label"))
    var label: String?

    @Argument(
        help: ArgumentHelp("The program: a path, flatpak:<app.id> or systemd:<unit>.service.", valueName: "program"))
    var program: String

    @Argument(help: ArgumentHelp("The keychains to change (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        let revoked = try revokedApplication()
        var changed = 0
        for target in try searchTargets(keychains, in: session) {
            // -s is a generic password's service and an internet password's server, as in
            // find-generic-password and find-internet-password.
            for (itemClass, named) in [
                (ItemClass.genericPassword, AttributeName.service), (.internetPassword, .server),
            ] {
                var filters: Attributes = [:]
                filters.set(named, service)
                filters.set(.account, account)
                filters.set(.label, label)
                changed += try revoke(
                    revoked, from: ItemQuery(class: itemClass, attributes: filters), in: target, session)
            }
        }
        guard changed > 0 else {
            // errSecItemNotFound, whose low byte (44) is the exit status, as find-* exit.
            throw CommandFailure.failure(
                "revoke-access: no matching item's access list names \(revoked)",
                result: KeychainError.Code.itemNotFound.rawValue)
        }
        return 0
    }

    /// The program as the lists name it: a Flatpak app id, a system service, or a path's real file (as `-T`
    /// stores it), which need not exist any more.
    private func revokedApplication() throws -> TrustedApplication {
        let named =
            TrustedApplication.isIdentifier(program) || program.isEmpty
            ? TrustedApplication(argument: program) : TrustedApplication(programAt: program, mustExist: false)
        guard let application = named else {
            throw CommandFailure.usage(
                "\(program.printable) names no program (a path, flatpak:org.example.App or systemd:backup.service)")
        }
        return application
    }

    /// Takes `application` off the lists of the items `query` matches in `target`.
    /// - Returns: How many items changed.
    private func revoke(
        _ application: TrustedApplication, from query: ItemQuery, in target: OpenKeychain, _ session: Session
    ) throws -> Int {
        var query = query
        query.synchronizable = .any
        do {
            let items = try session.withAccess(to: target) { try target.database.find(query, includeData: false) }
            var changed = 0
            for item in items {
                guard let stored = item.attributes[.access]?.dataValue else { continue }
                let list = AccessList(serialized: stored)
                let narrowed = list.removing(application)
                guard narrowed != list, let persistentID = item.persistentID else { continue }
                var itemQuery = ItemQuery(class: item.itemClass, persistentID: persistentID)
                itemQuery.synchronizable = .any
                // An item that asks for its owner asks for a change too.
                itemQuery.authenticationUI = .allow
                try session.withAccess(to: target) {
                    _ = try target.database.update(itemQuery, attributes: [.access: .data(narrowed.serialized)])
                }
                let name = ApplicationConfirmation(item: persistentID, attributes: item.attributes).itemName
                Console.out("\(name.printable): \(application) taken off its access list\n")
                changed += 1
            }
            return changed
        } catch {
            throw searchFailure(error, function: "SecKeychainItemSetAccess")
        }
    }
}
