import DBusNIO
import DBusWire
import Dispatch
import Foundation
import KeychainCore
import SecretService
import SecurityTool
import Synchronization

extension ImportSecretService {
    /// What `security import-secret-service` does.
    func run(in session: Session) throws -> Int32 {
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
