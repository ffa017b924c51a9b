import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore

/// Searches and secrets answered on the event loop that read the call, as the agent answers its
/// own quick lookups: no hand-off to the cooperative pool, the engine's queue and back. A call is
/// answered here only when nothing in it can wait: the caller is known, the collections were read
/// recently, every keychain it touches is open and unlocked, and at most ``quickLimit`` items are
/// involved. Anything else is declined (`nil`) and runs as every other call does.
extension SecretServiceProvider {
    /// The most items a call answered on the event loop reads.
    static let quickLimit = 16

    /// The caller's access groups when they are known already (no bus round trip), else `nil`.
    func knownGroups(_ message: DBusMessage) -> AccessGroups? {
        guard watching.load(ordering: .relaxed), let sender = message.sender else { return nil }
        return callers.withLock { $0[sender] }
    }

    /// The collections when they were read less than ``collectionListLifetime`` ago, else `nil`.
    func recentCollections() -> SecretCollectionList? {
        guard let list = collectionList.withLock({ $0 }),
            ContinuousClock.now - list.read < Self.collectionListLifetime
        else { return nil }
        return list
    }

    /// Runs `body` here on `collection`'s keychain when it is open (or the session's, in
    /// memory); `nil` to decline: not open, or locked.
    func withOpenKeychain<T>(
        _ collection: SecretCollection, _ groups: AccessGroups, _ body: (any KeychainHandle) throws -> T
    ) throws -> T? {
        do {
            guard let name = collection.keychainName else {
                guard let session = sessionKeychain.withLock({ $0 }) else { return nil }
                return try body(session.acting(for: groups))
            }
            return try agent.withOpenKeychain(named: name, for: groups, body)
        } catch let error as KeychainError where error.code == .interactionNotAllowed {
            return nil
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
    }

    /// `SearchItems` on `collections` here, or `nil` to decline (the unlocked results only: a
    /// locked keychain declines).
    func searchImmediately(
        _ call: DBusMethodCall, _ query: [String: String], in collections: (SecretCollectionList) -> [SecretCollection]
    ) throws -> [String]? {
        guard let groups = knownGroups(call.message), let list = recentCollections() else { return nil }
        let engineQueries = SecretAttributes.engineQueries(for: query).map { engineQuery in
            var limited = engineQuery
            limited.limit = Self.quickLimit + 1
            return limited
        }
        var paths: [String] = []
        for collection in searched(collections(list)) {
            guard
                let found = try withOpenKeychain(
                    collection, groups,
                    { keychain -> [Item]? in
                        // A keychain not yet upgraded is searched where the upgrade may run.
                        guard hasSearchTerms(keychain) else { return nil }
                        return try engineQueries.flatMap { try keychain.find($0, includeData: false) }
                    }) ?? nil,
                found.count <= Self.quickLimit
            else { return nil }
            paths += Self.matchingPaths(found, query, in: collection)
        }
        for path in paths { try registerItem(at: path) }
        return paths
    }

    /// `GetSecrets` here, or `nil` to decline. As in the task, items that are missing or not
    /// the caller's are left out.
    func getSecretsImmediately(_ call: DBusMethodCall, _ arguments: SecretServiceInterface.GetSecretsArguments)
        throws -> SecretServiceInterface.Secrets?
    {
        guard let groups = knownGroups(call.message), let list = recentCollections() else { return nil }
        let paths = arguments.items
        guard paths.count <= Self.quickLimit else { return nil }
        let sessionPath: String? = arguments.session
        let session = try checkSession(sessionPath, caller: call.message.sender)
        var entries: [DBusDictEntry] = []
        for path in paths {
            guard let (collection, id) = resolve(path, in: list), let id else { continue }
            let found: Item??
            do {
                found = try withOpenKeychain(collection, groups) {
                    try Self.findPassword(id, in: $0, includeData: true)
                }
            } catch {
                continue
            }
            guard let found else { return nil }  // not open here, or locked
            guard let item = found else { continue }
            entries.append(
                DBusDictEntry(.objectPath(path), try secretValue(item, session: sessionPath ?? "/", session)))
        }
        return SecretServiceInterface.Secrets(secrets: .dictionary(key: .objectPath, value: Self.secretType, entries))
    }
}
