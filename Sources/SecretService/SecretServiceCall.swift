import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore

/// A Secret Service call as its method's one body sees it: who made it, the collections it
/// sees, and where the body runs: on the event loop that read it (a quick answer, declared by
/// ``DBusWire/DBusMethodDescription/answersOnEventLoop``) or on the agent's work queue.
struct SecretCall: Sendable {
    /// The caller's unique bus name (the owner of its sessions).
    let sender: String?
    /// The caller's access groups, or why they could not be known (thrown at the first
    /// keychain the body reads, as each read did before).
    let groups: Result<AccessGroups, any Error>
    /// Who the caller is to an item's access list (nobody a list names when it is not known).
    var application = AgentService.busClient
    /// The items whose access lists do not name the caller that the person allowed it while it
    /// stays on the bus (``SecretServiceProvider/applicationGrants``).
    var allowedItems: Set<UUID> = []
    /// The collections, read once for the call.
    let list: SecretCollectionList
    /// Whether the body runs on the event loop that read the call: it must not wait, and
    /// declines (``Declined``) what might (a keychain not open or locked, many items).
    let onEventLoop: Bool

    /// Thrown by a body on the event loop for what it cannot do there: the call is then
    /// served in a task, the same body on the agent's work queue.
    struct Declined: Error {}

    /// Declines the call when it runs on the event loop and `isQuick` is false.
    func require(quick isQuick: Bool) throws {
        if onEventLoop && !isQuick { throw Declined() }
    }
}

/// Serving a method with one body, answered on the event loop when its declaration says so and
/// the call is quick, as the agent answers its own quick lookups: no hand-off to the cooperative
/// pool, the engine's queue and back. A call is answered there only when nothing in it can wait:
/// the caller is known, the collections were read recently, every keychain it touches is open
/// and unlocked, and at most ``quickLimit`` items are involved; anything else is declined and
/// runs as every other call does.
extension SecretServiceProvider {
    /// The most items a call answered on the event loop reads.
    static let quickLimit = 16

    /// `declaration` served by `body`, which runs on the agent's work queue, or first on the
    /// event loop that read the call when the declaration ``DBusWire/DBusMethodDescription/answersOnEventLoop``
    /// and the caller and the collections are known already; there `body` may decline
    /// (``SecretCall/Declined``), and the call goes to the work queue.
    func serve<A: DBusArguments, R: DBusArguments>(
        _ declaration: DBusMethodDeclaration<A, R>, _ body: @escaping @Sendable (SecretCall, A) throws -> R
    ) -> DBusMethod {
        var onEventLoop: (@Sendable (DBusMethodCall, inout DBusBodyReader) throws -> [DBusValue]?)?
        if declaration.description.answersOnEventLoop {
            onEventLoop = { [self] call, wire in
                let arguments = try A(reading: &wire)
                guard let known = knownCaller(call.message), let list = recentCollections() else { return nil }
                var quick = SecretCall(
                    sender: call.message.sender, groups: .success(known.groups), application: known.application,
                    list: list, onEventLoop: true)
                quick.allowedItems = grants(of: call.message.sender)
                do {
                    return try body(quick, arguments).values
                } catch is SecretCall.Declined {
                    return nil
                }
            }
        }
        return DBusMethod(
            declaration.name, inputs: declaration.inputs, outputs: declaration.outputs, wireHandler: onEventLoop
        ) { [self] call in
            let arguments = try A(decoding: call.arguments)
            return try await onWorkQueue(call.message, call.connection) { try body($0, arguments).values }
        }
    }

    /// Runs `body` for the caller of `message` on the agent's work queue.
    func onWorkQueue<T: Sendable>(
        _ message: DBusMessage?, _ connection: DBusConnection, _ body: @escaping @Sendable (SecretCall) throws -> T
    ) async throws -> T {
        let groups: Result<AccessGroups, any Error>
        var application = AgentService.busClient
        do {
            let known = try await caller(message, connection)
            groups = .success(known.groups)
            application = known.application
        } catch {
            groups = .failure(error)
        }
        var call = SecretCall(
            sender: message?.sender, groups: groups, application: application, list: collections(), onEventLoop: false)
        call.allowedItems = grants(of: message?.sender)
        let made = call
        return try await agent.onWorkQueue { try body(made) }
    }

    /// The caller when it is known already (no bus round trip), else `nil`.
    func knownCaller(_ message: DBusMessage) -> KnownCaller? {
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

    /// Runs `body` on `collection`'s keychain for the caller of `call`, where `call` runs: on
    /// the event loop only a keychain that is open (or the session's, in memory) and unlocked,
    /// else the call is declined; on the work queue any, opened when it must be. Engine errors
    /// become D-Bus errors without secrets.
    func withKeychain<T>(
        _ collection: SecretCollection, _ call: SecretCall, _ body: (any KeychainHandle) throws -> T
    ) throws -> T {
        guard call.onEventLoop else {
            return try withKeychainHere(
                collection, for: try call.groups.get(), as: call.application, allowing: call.allowedItems, body)
        }
        do {
            guard let name = collection.keychainName else {
                guard let session = sessionKeychain.withLock({ $0 }) else { throw SecretCall.Declined() }
                let handle = session.acting(for: try call.groups.get())
                return try Self.acting(as: call.application, allowing: call.allowedItems) { try body(handle) }
            }
            guard
                let result = try KeychainDatabase.$allowedItems.withValue(
                    call.allowedItems,
                    operation: {
                        try agent.withOpenKeychain(named: name, for: try call.groups.get(), as: call.application, body)
                    })
            else {
                throw SecretCall.Declined()
            }
            return result
        } catch let error as KeychainError where error.code == .interactionNotAllowed {
            throw SecretCall.Declined()
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
    }
}
