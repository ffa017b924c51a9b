import DBusNIO
import DBusWire
import Foundation

/// The agent's screen-saver lock: on the session bus, a screen saver's `ActiveChanged(true)`
/// locks every keychain whose settings say
/// ``KeychainModel/KeychainSettings/locksOnSleep`` (`security set-keychain-settings -l`), as
/// logind's `Session.Lock` does (``SleepLock``).
///
/// logind's `LockedHint` covers GNOME's and KDE's lock screens; MATE's, Cinnamon's and Xfce's
/// screen savers, and a GNOME or KDE session without logind, say it only on the session bus,
/// each under its own name: ``screenSavers``. Each sends `ActiveChanged(b)` on the interface of
/// its bus name when it starts (`true`) or stops (`false`); `true` locks, `false` unlocks
/// nothing (unlocking a keychain takes its password, which the screen saver does not give: a
/// screen locker whose PAM stack has `pam_keychain.so` unlocks it through `setcred`).
///
/// A screen saver that blanks without locking also says `ActiveChanged(true)`, and locks the
/// keychains all the same: its user has stepped away from the machine, and locking is the safe
/// side (a keychain locked once too often costs a password).
///
/// Signals count only when their sender owns the screen saver's name now (`GetNameOwner`, then
/// `NameOwnerChanged`): any client of the session bus may send signals, even addressed to the
/// agent alone. The session bus is `DBUS_SESSION_BUS_ADDRESS` of the agent's own environment
/// (a systemd user unit has it), else `$XDG_RUNTIME_DIR/bus`; without one nothing happens, and
/// a session bus that restarts, or appears later, is connected to again (retried after 1 s,
/// doubling to 30 s).
public enum ScreenSaverLock {
    /// The screen savers followed: each bus name, whose interface of the same name sends
    /// `ActiveChanged(b)`. KDE's lock screen and Xfce's screen saver use the first; GNOME Shell,
    /// MATE and Cinnamon their own.
    public static let screenSavers = [
        "org.freedesktop.ScreenSaver", "org.gnome.ScreenSaver", "org.mate.ScreenSaver", "org.cinnamon.ScreenSaver",
        "org.xfce.ScreenSaver",
    ]

    /// The signal every screen saver sends.
    static let activeChanged = "ActiveChanged"

    /// Connects to the session bus and locks `service`'s keychains with `locksOnSleep` whenever
    /// a screen saver starts; when the connection closes, or there is no session bus, tries
    /// again later, until the task is cancelled; never throws.
    ///
    /// - Parameters:
    ///   - service: Whose keychains to lock.
    ///   - environment: Where `DBUS_SESSION_BUS_ADDRESS` and `XDG_RUNTIME_DIR` come from.
    ///   - log: Receives one line per notable step (never a secret: none is handled here).
    public static func run(
        service: AgentService, environment: [String: String], log: @escaping @Sendable (String) -> Void = { _ in }
    ) async {
        await BusRetry.repeatedly {
            await watch(environment: environment, log: log) { name in
                let locked = await service.lockKeychainsThatLockOnSleep()
                log("\(name).ActiveChanged(true): locked \(locked) keychain(s)")
            }
        }
    }

    /// The signal loop of ``run(service:environment:log:)``: `onStart` is called with the
    /// screen saver's name on each `ActiveChanged(true)` from that name's owner.
    /// - Returns: Whether it subscribed (and then watched until the connection closed).
    @discardableResult
    static func watch(
        environment: [String: String],
        log: @escaping @Sendable (String) -> Void,
        onSubscribed: @escaping @Sendable () async -> Void = {},
        onStart: @escaping @Sendable (String) async -> Void
    ) async -> Bool {
        guard
            let connection = await BusRetry.connect(
                to: try DBusAddress.sessionBus(environment: environment),
                unavailable: "no session bus: no locking when the screen saver starts until it appears", log: log)
        else { return false }
        var watcher = Watcher()
        do {
            try await connection.hello()
            try await watcher.start(on: connection)
        } catch {
            log("the session bus refused the screen-saver subscription: \(error)")
            await connection.close()
            return false
        }
        await onSubscribed()
        for await signal in connection.signals {
            switch watcher.handle(signal) {
            case .started(let name): await onStart(name)
            case .ignored(let reason): log(reason)
            case nil: break
            }
        }
        log("the session bus connection closed: reconnecting")
        return true
    }

    /// The subscription's state: who owns each screen saver's name.
    struct Watcher {
        /// The unique name owning each screen saver's name, whose signals alone count.
        var owners: [String: String] = [:]

        /// What a signal means.
        enum Outcome: Equatable {
            /// The screen saver of this name started.
            case started(String)
            /// A signal that looked like one but does not count, and why (for the log).
            case ignored(String)
        }

        static func activeChanged(_ name: String) -> DBusMatchRule {
            DBusMatchRule(sender: name, interface: name, member: ScreenSaverLock.activeChanged)
        }

        /// Subscribes to owner changes first (so none is missed between the two), then to the
        /// screen savers' signals, then asks who owns each name.
        mutating func start(on connection: DBusConnection) async throws {
            for name in ScreenSaverLock.screenSavers {
                try await connection.addMatch(.nameOwnerChanged(of: name))
                try await connection.addMatch(Self.activeChanged(name))
            }
            for name in ScreenSaverLock.screenSavers {
                if let owner = try await connection.nameOwner(of: name) { owners[name] = owner }
            }
        }

        /// What `signal` means, or `nil` for a signal of no interest.
        mutating func handle(_ signal: DBusMessage) -> Outcome? {
            for name in ScreenSaverLock.screenSavers {
                if DBusMatchRule.nameOwnerChanged(of: name).matches(signal) {
                    guard signal.body.count == 3, case .string(let owner) = signal.body[2] else { return nil }
                    owners[name] = owner.isEmpty ? nil : owner
                    return nil
                }
                guard signal.interface == name, signal.member == ScreenSaverLock.activeChanged else { continue }
                guard Self.activeChanged(name).matches(signal, senderOwner: owners[name]) else {
                    return .ignored("ignored \(name).ActiveChanged from \(signal.sender ?? "no sender"): not its owner")
                }
                return signal.body == [.boolean(true)] ? .started(name) : nil
            }
            return nil
        }
    }
}
