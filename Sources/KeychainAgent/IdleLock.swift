import Dispatch
import Foundation
import KeychainCore

/// The agent's idle lock: a password keychain whose settings have a lock interval
/// (``KeychainModel/KeychainSettings/lockInterval``) is locked once that many seconds pass
/// without a request that uses it, as macOS's `securityd` locks a keychain after its timeout.
///
/// A keychain is watched from the moment it is unlocked (or its settings, password or keys
/// change while it is unlocked), with the settings read from its file then; it is forgotten
/// when it locks, whatever locked it. Every request that uses the keychain (its items, its
/// password, its settings) pushes its deadline back; `Status` and `Settings`, which only look,
/// do not, so that something polling the lock state (a panel's lock icon) never keeps a
/// keychain unlocked.
///
/// Deadlines are on the monotonic `ContinuousClock`, which on Linux counts the time the system
/// spends suspended too: a keychain whose interval passed during a suspend is locked within one
/// check after the resume. One timer, on a queue of its own, checks every
/// ``checkInterval`` while any keychain is watched, and runs not at all while none is (no
/// keychain has a timeout, or none is unlocked): a keychain locks at most one check after its
/// deadline.
///
/// `locksOnSleep` is not this type's: ``SleepLock`` locks those keychains on logind's
/// `PrepareForSleep` and `Session.Lock`, where a system bus exists.
final class IdleLock: @unchecked Sendable {
    /// How often the timer looks at the deadlines while a keychain is watched.
    static let checkInterval: DispatchTimeInterval = .milliseconds(200)

    /// What a request does to a keychain's idle timer.
    enum Effect {
        /// Looks only (`Status`, `Settings`, `Close`): the timer runs on.
        case none
        /// Uses the keychain: its deadline moves back, before and after the request.
        case use
        /// Looks for items (`Find`, `Update`, `Delete`): the deadline moves back after the
        /// request, and only when the caller found some of the keychain's items. Another app's
        /// lookups that see nothing of a keychain never keep it unlocked.
        case lookup
        /// May change whether the keychain is watched (`Unlock`, `Lock`, `SetSettings`,
        /// `ChangePassword`, `RotateKeys`): the deadline moves back before the request, and the
        /// settings and lock state are read again after it.
        case reread
    }

    private struct Watch {
        let keychain: KeychainDatabase
        let interval: Duration
        var deadline: ContinuousClock.Instant
    }

    private let clock = ContinuousClock()
    /// Guards `watched` and `timer`; `check()` locks keychains while holding it, so a request's
    /// first touch either comes before the check (and the keychain stays unlocked) or after the
    /// lock (and finds the keychain locked, as a request after the deadline should).
    private let mutex = NSLock()
    private var watched: [String: Watch] = [:]
    private var timer: (any DispatchSourceTimer)?
    private let queue = DispatchQueue(label: "keychain-agent.idle-lock")

    deinit { timer?.cancel() }

    /// Runs a request on `keychain` with its effect on the idle timer, whether it succeeds or
    /// fails.
    func around<T>(
        _ keychain: KeychainDatabase, _ effect: Effect, seen: (T) -> Bool = { _ in true }, _ body: () throws -> T
    ) rethrows -> T {
        guard let path = keychain.path, effect != .none else { return try body() }
        guard effect != .lookup else {
            let result = try body()
            if seen(result) { touch(path) }
            return result
        }
        touch(path)
        defer {
            switch effect {
            case .use: touch(path)
            case .reread: reread(keychain)
            case .none, .lookup: break
            }
        }
        return try body()
    }

    /// Whether a keychain is watched now (for tests).
    func isWatching(_ path: String) -> Bool { mutex.withLock { watched[path] != nil } }

    /// When a watched keychain locks (for tests).
    func deadline(of path: String) -> ContinuousClock.Instant? { mutex.withLock { watched[path]?.deadline } }

    /// Reads `keychain`'s settings and lock state: watches it, with a fresh deadline, when it
    /// has a password, is unlocked and has a lock interval; forgets it otherwise. Settings that
    /// cannot be read (a damaged entry) leave it unwatched; the requests that read them report
    /// the damage.
    func reread(_ keychain: KeychainDatabase) {
        guard let path = keychain.path else { return }
        var interval: Int?
        if keychain.hasPassword, !keychain.isLocked { interval = (try? keychain.settings)?.lockInterval }
        mutex.withLock {
            if let interval {
                let duration = Duration.seconds(interval)
                watched[path] = Watch(keychain: keychain, interval: duration, deadline: clock.now + duration)
            } else {
                watched[path] = nil
            }
            updateTimer()
        }
    }

    /// Stops watching the keychain at `path` (deleted, or locked by the agent).
    func forget(_ path: String) {
        mutex.withLock {
            watched[path] = nil
            updateTimer()
        }
    }

    /// Moves the deadline of the keychain at `path`, if it is watched, one interval from now.
    private func touch(_ path: String) {
        mutex.withLock {
            guard var watch = watched[path] else { return }
            watch.deadline = clock.now + watch.interval
            watched[path] = watch
        }
    }

    /// Starts the timer when a keychain is watched and stops it when none is (`mutex` held).
    private func updateTimer() {
        if watched.isEmpty {
            timer?.cancel()
            timer = nil
        } else if timer == nil {
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.schedule(
                deadline: .now() + Self.checkInterval, repeating: Self.checkInterval, leeway: .milliseconds(20))
            source.setEventHandler { [weak self] in self?.check() }
            source.resume()
            timer = source
        }
    }

    /// Locks every watched keychain whose deadline has passed, and forgets those that are
    /// locked already.
    private func check() {
        mutex.withLock {
            let now = clock.now
            for (path, watch) in watched {
                if watch.keychain.isLocked {
                    watched[path] = nil
                } else if now >= watch.deadline {
                    watch.keychain.lock()
                    watched[path] = nil
                }
            }
            updateTimer()
        }
    }
}
