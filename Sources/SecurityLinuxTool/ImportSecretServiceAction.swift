import DBusNIO
import DBusWire
import Foundation
import KeychainCore
import SecretService
import SecurityTool

extension ImportSecretService {
    /// What `security import-secret-service` does.
    func run(in session: Session) throws -> Int32 {
        let environment = session.environment
        let connection: DBusConnection
        do {
            connection = try waitFor { try await DBusConnection.connectToSessionBus(environment: environment) }
        } catch {
            throw Self.noSessionBus(environment)
        }
        defer { connection.closeSoon() }
        let contents: SecretServiceImport.Contents
        do {
            contents = try waitFor { try await SecretServiceImport.read(from: connection) }
        } catch let error as DBusError where error.errorName == DBusErrorName.serviceUnknown {
            throw CommandFailure.failure(
                "import-secret-service: no Secret Service provider runs on the session bus",
                then: "start the one to move from (gnome-keyring-daemon, KWallet's ksecretd, KeePassXC) in this "
                    + "session, then run it again")
        } catch let error as DBusError {
            throw CommandFailure.failure(
                "import-secret-service: the Secret Service provider could not be read: \(error.message)")
        } catch {
            throw CommandFailure.failure("import-secret-service: the Secret Service provider could not be read")
        }
        let target = try session.open(keychain, createDefault: keychain == nil)
        let outcomes = try session.withAccess(to: target) {
            try SecretServiceImport.store(contents.items, in: target.database)
        }
        let tally = SecretServiceImport.Tally(outcomes, of: contents.items)
        for label in tally.leftOut {
            Console.err(
                "security: import-secret-service: \"\(label)\" left out: another item has its service and account\n")
        }
        for label in contents.lockedCollections {
            Console.err("security: import-secret-service: the collection \"\(label)\" is locked: skipped\n")
        }
        Console.out(tally.summary + "\n")
        return tally.leftOut.isEmpty && contents.lockedCollections.isEmpty ? 0 : 1
    }
}

extension ImportSecretService {
    /// What to say when the session bus cannot be reached: the command reads the old provider
    /// over it, so it runs in the desktop session that has one.
    static func noSessionBus(_ environment: [String: String]) -> CommandFailure {
        let address = environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        let reason =
            if let address {
                "nothing answers at DBUS_SESSION_BUS_ADDRESS (\(address))"
            } else if let runtime {
                "DBUS_SESSION_BUS_ADDRESS is not set and nothing answers at \(runtime)/bus"
            } else {
                "neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set"
            }
        return CommandFailure.failure(
            "import-secret-service: no session bus: \(reason)",
            then: "run it in the desktop session whose keyring you move from (over ssh: `dbus-run-session -- "
                + "security import-secret-service` after starting that keyring in it)")
    }
}
