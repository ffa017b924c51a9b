import ArgumentParser
import Foundation
import KeychainModel
import UserPresence

/// `security security-key` (Linux only): pairs FIDO2 security keys with the user's keychains,
/// lists and removes them (``UserPresence/SecurityKeyRegistry``). A paired key is the companion
/// that `SecAccessControlCreateFlags.companion` items ask for. macOS pairs its companion, an Apple
/// Watch, in System Settings; it has no command for it.
struct SecurityKeyCommand: ToolCommand {
    static let name = "security-key"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Pair, list and remove the security keys that .companion items ask for (Linux only).",
        usage: """
            security security-key add [-n <name>] [-d <device>]
                   security security-key list
                   security security-key remove -n <name>
            """,
        discussion: HelpText.wrapped(
            """
            add has the FIDO2 security key at <device> (by default the first one attached) make a \
            credential for the keychain, which asks you to touch it, and keeps its public key \
            (~/.config/keychain/security-keys.json). Items made with the .companion access control \
            from then on are bound to the keys paired when they are made: reading one asks you to \
            touch one of them, and a key paired later, by you or anyone, opens none of them. list \
            prints each key's name, when it was paired and its device; remove forgets a key, so \
            items made afterwards are not bound to it (items already bound to it still are). A \
            key that asks for its PIN before it signs is not supported yet. A <device> of the \
            form unix:PATH is a key behind a Unix socket that carries its HID reports.
            """))

    @Argument(help: ArgumentHelp("add, list or remove.", valueName: "action"))
    var action: String

    @Option(
        name: .customShort("n", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The key's name (default: security-key-N).", valueName: "name"))
    var name: String?

    @Option(
        name: .customShort("d", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The key's device (default: the first attached).", valueName: "device"))
    var device: String?

    func execute(in session: Session) throws -> Int32 {
        let registry = SecurityKeyRegistry(paths: session.paths)
        do {
            switch action {
            case "add": try add(to: registry)
            case "list":
                for key in try registry.keys() {
                    let date = ISO8601DateFormatter().string(from: key.paired)
                    Console.out("\(key.name)\tpaired \(date)\t\(key.device ?? "-")\n")
                }
            case "remove":
                guard let name else { throw CommandFailure.usage("remove needs -n <name>") }
                try registry.remove(named: name)
                Console.out("removed \(name)\n")
            default: throw CommandFailure.usage("unknown action \(action): add, list or remove")
            }
        } catch let error as KeychainError {
            throw CommandFailure.failure("security-key \(action): \(error.message)", result: error.code.rawValue)
        }
        return 0
    }

    /// Pairs the key at ``device`` (or the first attached) under ``name``.
    private func add(to registry: SecurityKeyRegistry) throws {
        guard let path = device ?? SecurityKey.attachedPaths().first else {
            throw KeychainError(.interactionNotAllowed, "no security key is attached")
        }
        let existing = try registry.keys()
        let chosen = name ?? "security-key-\(existing.count + 1)"
        guard !existing.contains(where: { $0.name == chosen }) else {
            throw KeychainError(.duplicateItem, "a security key named \(chosen) is paired already")
        }
        let user = ProcessInfo.processInfo.environment["USER"] ?? NSUserName()
        let key = try registry.inTurn {
            try SecurityKey.pair(
                at: path, userName: user, touchRequested: { Console.err("Touch the security key to pair it.\n") },
                pin: TerminalPrompt.securityKeyPIN)
        }
        try registry.add(PairedSecurityKey(name: chosen, key: key, device: path))
        Console.out("paired \(chosen)\n")
    }
}
