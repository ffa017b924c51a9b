import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore

/// Per-app access lists through the Secret Service: an item whose list does not name the
/// client is locked to that client (its `Locked` property, and `SearchItems` lists it among the
/// locked ones), so that libsecret and every client that follows the specification unlock it:
/// `Unlock` answers with a prompt, and `Prompt.Prompt` asks the person the question keychaind asks
/// its own clients (Deny / Allow / Always Allow, through pinentry). "Allow" lasts while the
/// client stays on the bus; "Always Allow" adds it to the item's list; "Deny" dismisses the
/// prompt ([Secret Service API, Prompts](https://specifications.freedesktop.org/secret-service/latest/prompts.html)).
extension SecretServiceProvider {
    /// An item the caller may not read until the person allows it.
    struct HeldItem: Sendable {
        var path: String
        var collection: SecretCollection
        var confirmation: ApplicationConfirmation
    }

    /// Those of the item paths in `requested` that the caller of `message` may not read until the
    /// person allows it.
    func heldItems(_ requested: [String], _ message: DBusMessage?, _ connection: DBusConnection) async throws
        -> [HeldItem]
    {
        let caller = try await caller(message, connection)
        let allowed = grants(of: message?.sender)
        var held: [HeldItem] = []
        for path in requested {
            guard let (collection, id) = resolve(path), let id else { continue }
            let item = try? await withKeychain(collection, for: caller.groups) { keychain in
                try Self.findPassword(id, in: keychain, includeData: false)
            }
            guard let item: Item = item ?? nil, !caller.application.mayOpen(item.attributes, id: id, allowing: allowed)
            else { continue }
            held.append(
                HeldItem(
                    path: path, collection: collection,
                    confirmation: ApplicationConfirmation(item: id, attributes: item.attributes)))
        }
        return held
    }

    /// Whether the item at `path` is locked to the caller of `message`: its keychain is locked,
    /// or its access list keeps its secret from the caller.
    func isItemLocked(_ path: String, _ message: DBusMessage?, _ connection: DBusConnection) async throws -> Bool {
        guard let (collection, _) = resolve(path) else { throw SecretServiceError.noSuchObject }
        if try await isLocked(collection, message, connection) { return true }
        return try await !heldItems([path], message, connection).isEmpty
    }

    /// Registers a prompt that asks the person about each of `held` for `owner`: it completes
    /// with the items allowed, or is dismissed at the first "Deny" (or when nobody can be asked).
    func registerApplicationPrompt(_ held: [HeldItem], owner: String, connection: DBusConnection) throws -> String {
        try registerPrompt(kind: "a", owner: owner, result: held.map(\.path), connection: connection) {
            [self] call, state, complete in
            let (message, connection) = (call.message, call.connection)
            let task = Task {
                let allowed = await askAboutApplication(held, message, connection, state: state)
                await complete(connection, !allowed)
            }
            state.waiting.withLock { $0 = task }
        }
    }

    /// Asks about each of `held` for the caller of `message`, through keychaind's access-list
    /// dialog, and remembers each item allowed while the caller stays on the bus. The prompt
    /// `state` is of takes the dialog away when it completes another way (dismissed).
    /// - Returns: Whether the person allowed every item.
    func askAboutApplication(
        _ held: [HeldItem], _ message: DBusMessage, _ connection: DBusConnection, state: PromptState
    ) async -> Bool {
        guard let sender = message.sender, let caller = try? await caller(message, connection) else { return false }
        for item in held.prefix(AgentService.mostApplicationQuestions) {
            do {
                try await agent.confirmApplication(
                    item.confirmation, keychain: item.collection.keychainName, changing: false,
                    // The pid the caller was identified by: no second bus round trip.
                    caller: caller.application, pid: caller.application.pid, cancellation: state.question,
                    groups: { caller.groups })
            } catch {
                return false
            }
            if state.finished.load(ordering: .relaxed) { return false }
            // Only while the session watcher runs: it is what forgets the grant when the caller leaves.
            if watching.load(ordering: .relaxed) {
                applicationGrants.withLock { $0[sender, default: []].insert(item.confirmation.item) }
            }
        }
        return held.count <= AgentService.mostApplicationQuestions
    }
}
