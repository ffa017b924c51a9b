import ArgumentParser
import DBusWire
import Dispatch
import Foundation
import KeychainCore
import SecretService
import Synchronization

/// `security import-secret-service`: copies every item of another running Secret Service
/// provider (GNOME Keyring, KeePassXC) into a keychain, so that moving off it is one command.
struct ImportSecretService: ToolCommand {
    static let name = "import-secret-service"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Copy every item of another running Secret Service provider into a keychain (Linux only).",
        usage: "security import-secret-service [-k keychain]",
        discussion: HelpText.wrapped(
            """
            Reads every item of the program that owns org.freedesktop.secrets on the session bus \
            (GNOME Keyring, KeePassXC) as an ordinary client, through an encrypted session, and \
            stores it in the keychain (default: the default keychain) as keychaind's Secret Service \
            stores items: the label, and the attributes with service and account mapped to the \
            item's service and account. Run it while the other provider still runs, then let \
            keychaind take its place (keychaind --secret-service --replace, or its D-Bus service \
            file).

            Locked collections and the in-memory session collection are skipped (unlock them, for \
            example in Seahorse, and run the command again). Running it again adds only what is \
            new: an item with the same attributes is updated to the provider's secret and label. \
            An item whose service and account are those of another item with other attributes is \
            left out and reported.
            """))

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to import into (default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    func execute(in session: Session) throws -> Int32 {
        let environment = session.environment
        let contents: SecretServiceImport.Contents
        do {
            contents = try waitFor {
                let connection = try await DBusConnection.connectToSessionBus(environment: environment)
                defer { connection.closeSoon() }
                return try await SecretServiceImport.read(from: connection)
            }
        } catch {
            throw CommandFailure.failure("no Secret Service provider could be read: \(error)")
        }
        let target = try session.open(keychain, createDefault: keychain == nil)
        var counts: [SecretServiceImport.Outcome: Int] = [:]
        for item in contents.items {
            let outcome = try session.withAccess(to: target) {
                try SecretServiceImport.store(item, in: target.database)
            }
            counts[outcome, default: 0] += 1
            if outcome == .collides {
                Console.err(
                    "security: import-secret-service: \"\(item.label)\" left out: another item has its service "
                        + "and account\n")
            }
        }
        for label in contents.lockedCollections {
            Console.err("security: import-secret-service: the collection \"\(label)\" is locked: skipped\n")
        }
        Console.out(
            "\(counts[.added, default: 0]) imported, \(counts[.updated, default: 0]) updated, "
                + "\(counts[.unchanged, default: 0]) already present, \(counts[.collides, default: 0]) left out\n")
        return counts[.collides, default: 0] == 0 && contents.lockedCollections.isEmpty ? 0 : 1
    }
}

/// Runs `body` on Swift's concurrency pool and waits for it on this (non-pool) thread.
func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}
