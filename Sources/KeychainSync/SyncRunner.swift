import Foundation
import KeychainCore
import Logging
import Synchronization

/// Keeps one keychain in sync while it runs: what `keychaind` does for each keychain set up for
/// sync.
///
/// It pushes soon after a local change (it watches the keychain's sync journal, so writes from
/// any process count), pulls as soon as the server notifies the zone's channel (`LISTEN`), and
/// syncs every ``pollInterval`` (± 10 %) in case a notification was lost while disconnected, and
/// at once when the keychain is unlocked (records that arrived while it was locked wait for that,
/// see ``SyncEngine/pull()``). A lost connection is retried after about 1 s, doubling up to
/// ``retryLimit`` (5 s by default), each pause drawn between half and all of its step so that
/// machines cut off together do not come back in step; every (re)connection starts with a full
/// push and pull, since notifications sent meanwhile are gone. A silent link (half-open:
/// the connection stays up, no byte comes back) counts as lost once a round trip exceeds
/// ``roundLimit``; opening a connection gives up after 10 s, login included.
public final class SyncRunner: Sendable {
    /// The keychain kept in sync.
    public let keychain: KeychainDatabase
    /// How often it syncs without a notification.
    public let pollInterval: Duration
    /// How often it looks at the journal for local changes.
    public let journalInterval: Duration
    /// How long one server round trip of the runner (a sync round, the zone's state on
    /// connecting) may take before the connection is taken for dead and made again.
    public let roundLimit: Duration
    /// The longest pause between two attempts to reach the server: after a link is restored,
    /// the machine is in sync within about this much plus one round.
    public let retryLimit: Duration
    private let logger: Logger
    private let state = Mutex<State>(State())

    struct State {
        var task: Task<Void, Never>?
        var lastError: String?
        var rounds = 0
    }

    /// Creates a runner (it starts with ``start()``).
    /// - Parameters:
    ///   - keychain: A keychain set up for sync.
    ///   - pollInterval: How often to sync without a notification.
    ///   - journalInterval: How often to look for local changes.
    ///   - roundLimit: How long a round may wait for the server before the runner reconnects.
    ///   - retryLimit: The longest pause between two attempts to reach the server.
    public init(
        keychain: KeychainDatabase, pollInterval: Duration = .seconds(60),
        journalInterval: Duration = .milliseconds(200), roundLimit: Duration = .seconds(30),
        retryLimit: Duration = .seconds(5), logger: Logger = Logger(label: "keychain.sync")
    ) {
        self.keychain = keychain
        self.pollInterval = pollInterval
        self.journalInterval = journalInterval
        self.roundLimit = roundLimit
        self.retryLimit = retryLimit
        self.logger = logger
    }

    /// Whether `keychain` is set up for sync (a runner has something to do).
    public static func isSetUp(_ keychain: KeychainDatabase) -> Bool {
        (try? keychain.readSyncTables { try LocalSyncStore.tableExists($0) && LocalSyncStore.configuration($0) != nil })
            == true
    }

    /// Starts syncing in the background (again: nothing changes).
    public func start() {
        state.withLock { state in
            guard state.task == nil else { return }
            state.task = Task { [self] in await run() }
        }
    }

    /// Stops syncing and waits until the last round has ended.
    public func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
    }

    /// The last round's error (a message with no secret), or `nil` after a successful round.
    public var lastError: String? { state.withLock { $0.lastError } }

    /// How many sync rounds have run.
    public var rounds: Int { state.withLock { $0.rounds } }

    // MARK: The loop

    private func run() async {
        var backoff = min(Duration.seconds(1), retryLimit)
        while !Task.isCancelled {
            do {
                try await connected()
                backoff = min(.seconds(1), retryLimit)
            } catch {
                if Task.isCancelled || error is CancellationError { break }
                record(error)
                try? await pause(backoff * Double.random(in: 0.5...1), endingOnUnlock: keychain.isLocked)
                backoff = min(backoff * 2, retryLimit)
            }
        }
    }

    /// One connection's life: a listener, a journal watcher and a timer feed one stream of
    /// "sync now" requests, served one at a time (requests arriving meanwhile coalesce).
    private func connected() async throws {
        let context = try SyncEngine(keychain: keychain, server: NoServer()).context()
        let server = PostgresSyncServer(address: try context.serverAddress(), maximumConnections: 2, logger: logger)
        let engine = SyncEngine(keychain: keychain, server: server)
        let (requests, request) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        do {
            // A link that went silent (half-open) answers nothing: every round trip has a limit.
            let zone = context.settings.zoneID
            let channel = try await withSyncDeadline(roundLimit) { try await server.zoneState(zone).notifyChannel }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // The first round once the server listens: a commit made before then is
                    // found by that round's pull, a later one is notified.
                    try await server.listen(
                        zone: context.settings.zoneID, channel: channel, onListening: { request.yield() },
                        onNotify: { _ in request.yield() })
                }
                group.addTask { [keychain, journalInterval] in
                    var wasLocked = keychain.isLocked
                    while !Task.isCancelled {
                        let isLocked = keychain.isLocked
                        // An unlock: the records that waited for it are applied at once.
                        if (try? keychain.pendingSyncChanges()) ?? 0 > 0 || (wasLocked && !isLocked) {
                            request.yield()
                        }
                        wasLocked = isLocked
                        try await Task.sleep(for: journalInterval)
                    }
                }
                group.addTask { [pollInterval] in
                    while !Task.isCancelled {
                        let jitter = Double.random(in: 0.9...1.1)
                        try await Task.sleep(for: pollInterval * jitter)
                        request.yield()
                    }
                }
                group.addTask { [self] in
                    for await _ in requests {
                        try Task.checkCancellation()
                        do {
                            _ = try await withSyncDeadline(roundLimit) { try await engine.syncNow() }
                            state.withLock {
                                $0.lastError = nil
                                $0.rounds += 1
                            }
                        } catch let error as SyncServerError {
                            throw error  // the connection: reconnect
                        } catch let error as CancellationError {
                            throw error
                        } catch {
                            // The data (a refused server row, a locked keychain): not again at
                            // once, whatever the journal says; but at once after an unlock.
                            record(error)
                            try await pause(.seconds(5), endingOnUnlock: keychain.isLocked)
                        }
                    }
                }
                // The first task to end (the listener losing its connection) ends them all.
                try await group.next()
                group.cancelAll()
            }
        } catch {
            request.finish()
            await server.shutdown()
            throw error
        }
        request.finish()
        await server.shutdown()
    }

    /// Sleeps for `duration`, in steps of ``journalInterval``; when `locked`, it ends early once
    /// the keychain is unlocked.
    private func pause(_ duration: Duration, endingOnUnlock locked: Bool) async throws {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            try await Task.sleep(for: min(journalInterval, end - ContinuousClock.now))
            if locked && !keychain.isLocked { return }
        }
    }

    private func record(_ error: any Error) {
        let message =
            (error as? SyncError)?.description ?? (error as? SyncServerError)?.description ?? "\(type(of: error))"
        state.withLock { $0.lastError = message }
        logger.notice("sync round failed", metadata: ["error": "\(message)"])
    }
}
