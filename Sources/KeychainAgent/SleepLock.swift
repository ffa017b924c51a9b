import DBusNIO
import DBusWire
import Foundation
import KeychainLibc
import Synchronization

/// The agent's sleep and session lock: on the system bus, logind's
/// `org.freedesktop.login1.Manager.PrepareForSleep(true)` and its `Session.Lock` signal for the
/// agent's session lock every keychain whose settings say
/// ``KeychainModel/KeychainSettings/locksOnSleep`` (`security set-keychain-settings -l`).
///
/// macOS's `security(1)` describes `-l` as "Lock keychain when the system sleeps", and has no
/// setting for a screen lock. A locked session is the same situation, someone stepping away
/// from an unattended machine, so `Session.Lock` locks the same keychains: locking is the safe
/// side (a keychain locked once too often costs a password; one left unlocked exposes its
/// secrets), and a keychain without `-l` (a build machine's, say) stays unlocked through both.
/// `Session.Unlock` unlocks nothing, nor does `PrepareForSleep(false)`: unlocking a keychain
/// takes its password, which logind does not have.
///
/// So that the machine does not suspend before the keychains are locked, the agent holds a
/// logind *delay inhibitor* for sleep (``SleepInhibitor``): taken once subscribed, released
/// (its descriptor closed) right after `PrepareForSleep(true)` has locked, taken again on
/// `PrepareForSleep(false)`, and taken from the new logind when logind restarts. Without logind,
/// or when `Inhibit` fails, it carries on without one.
///
/// Signals count only when their sender is the connection that owns `org.freedesktop.login1`
/// now (`GetNameOwner`, then the bus's `NameOwnerChanged`): the bus stamps every message's
/// sender, and any client of the system bus may send signals, even addressed to the agent
/// alone. When logind's owner changes (a restart), the agent's session is looked up again.
///
/// The agent's session is `GetSessionByPID` of the agent's pid; when the agent runs outside any
/// session (a systemd user service), `GetSession($XDG_SESSION_ID)`, then the `Display` session
/// of the agent's user. Without a system bus (containers, CI) nothing happens; a system bus that
/// restarts, or appears later, is connected to again (retried after 1 s, doubling to 30 s).
public enum SleepLock {
    /// logind's bus name.
    public static let login1 = "org.freedesktop.login1"
    /// logind's manager object.
    public static let managerPath = "/org/freedesktop/login1"
    /// logind's manager interface (`PrepareForSleep`, `GetSessionByPID`).
    public static let managerInterface = "org.freedesktop.login1.Manager"
    /// logind's session interface (`Lock`).
    public static let sessionInterface = "org.freedesktop.login1.Session"
    /// logind's user interface (`Display`).
    public static let userInterface = "org.freedesktop.login1.User"

    /// What a signal from logind asks of the agent.
    enum Event: Hashable, Sendable {
        /// `PrepareForSleep(true)`: the machine is about to suspend or hibernate.
        case sleep
        /// `Session.Lock` for the agent's session: the screen is being locked.
        case sessionLock
        /// `PrepareForSleep(false)`: the machine has resumed.
        case resume
        /// Another process owns logind's name now (logind restarted), or none: an inhibitor
        /// taken from the previous one means nothing any more.
        case logindChanged(running: Bool)
    }

    /// Connects to the system bus and locks `service`'s keychains with `locksOnSleep` on each
    /// ``Event``; when the connection closes, or there is no system bus or it refuses the agent,
    /// tries again later, until the task is cancelled; never throws.
    ///
    /// - Parameters:
    ///   - service: Whose keychains to lock.
    ///   - environment: Where `DBUS_SYSTEM_BUS_ADDRESS` and `XDG_SESSION_ID` come from.
    ///   - log: Receives one line per notable step (never a secret: none is handled here).
    public static func run(
        service: AgentService, environment: [String: String], log: @escaping @Sendable (String) -> Void = { _ in }
    ) async {
        await run(environment: environment, log: log) { await service.lockKeychainsThatLockOnSleep() }
    }

    /// ``run(service:environment:log:)`` with the locking given: `lock` locks and returns how
    /// many keychains it locked. On `PrepareForSleep(true)` the inhibitor is released only once
    /// `lock` has returned.
    static func run(
        environment: [String: String], log: @escaping @Sendable (String) -> Void,
        lock: @escaping @Sendable () async -> Int
    ) async {
        let inhibitor = SleepInhibitor(environment: environment, log: log)
        await keepWatching(environment: environment, log: log, onSubscribed: { await inhibitor.take() }) { event in
            switch event {
            case .sleep, .sessionLock:
                let locked = await lock()
                log("\(event == .sleep ? "PrepareForSleep" : "Session.Lock"): locked \(locked) keychain(s)")
                // Locked: now the machine may sleep.
                if event == .sleep { inhibitor.release() }
            case .resume:
                await inhibitor.take()
            case .logindChanged(let running):
                // The old logind's inhibitor died with it: hold one of the new logind's.
                inhibitor.release()
                if running { await inhibitor.take() }
            }
        }
    }

    /// ``watch(environment:log:onEvent:)`` again whenever it ends (the system bus restarted, or
    /// was not there yet), as ``BusRetry`` retries, until the task is cancelled.
    static func keepWatching(
        environment: [String: String],
        log: @escaping @Sendable (String) -> Void,
        onSubscribed: @escaping @Sendable () async -> Void = {},
        onEvent: @escaping @Sendable (Event) async -> Void
    ) async {
        await BusRetry.repeatedly {
            await watch(environment: environment, log: log, onSubscribed: onSubscribed, onEvent: onEvent)
        }
    }

    /// The signal loop of ``run(service:environment:log:)``, with the action once subscribed
    /// and on each event.
    /// - Returns: Whether it subscribed (and then watched until the connection closed).
    @discardableResult
    static func watch(
        environment: [String: String],
        log: @escaping @Sendable (String) -> Void,
        onSubscribed: @escaping @Sendable () async -> Void = {},
        onEvent: @escaping @Sendable (Event) async -> Void
    ) async -> Bool {
        guard
            let connection = await BusRetry.connect(
                to: try DBusAddress.systemBus(environment: environment),
                unavailable: "no system bus: no locking on sleep or session lock until it appears", log: log)
        else { return false }
        var watcher = Watcher(connection: connection, environment: environment, log: log)
        do {
            try await watcher.start()
        } catch {
            log("the system bus refused the sleep and session-lock subscription: \(error)")
            await connection.close()
            return false
        }
        await onSubscribed()
        for await signal in connection.signals {
            if let event = await watcher.handle(signal) { await onEvent(event) }
        }
        log("the system bus connection closed: reconnecting")
        return true
    }

    /// The subscription's state: who owns logind's name, and which session is the agent's.
    struct Watcher {
        let connection: DBusConnection
        let environment: [String: String]
        let log: @Sendable (String) -> Void
        /// The unique name owning `org.freedesktop.login1`, whose signals alone count.
        var owner: String?
        /// The agent's session object, whose `Lock` counts.
        var sessionPath: String?

        static let ownerChanged = DBusMatchRule.nameOwnerChanged(of: login1)
        static let prepareForSleep = DBusMatchRule(
            sender: login1, interface: managerInterface, member: "PrepareForSleep", path: managerPath)

        static func sessionLock(_ path: String) -> DBusMatchRule {
            DBusMatchRule(sender: login1, interface: sessionInterface, member: "Lock", path: path)
        }

        /// The session's properties changing: `LockedHint` turns true when the desktop locks the
        /// screen by itself (GNOME's and KDE's lock screens set it through `SetLockedHint`, and
        /// send no `Lock`).
        static func sessionProperties(_ path: String) -> DBusMatchRule {
            DBusMatchRule(
                sender: login1, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", path: path,
                arguments: [0: sessionInterface])
        }

        /// Whether `signal`'s changed properties set `LockedHint` to true.
        static func setsLockedHint(_ signal: DBusMessage) -> Bool {
            guard signal.body.count >= 2, case .dictionary(_, _, let entries) = signal.body[1] else { return false }
            return entries.contains { $0.key == .string("LockedHint") && $0.value == .variant(.boolean(true)) }
        }

        init(connection: DBusConnection, environment: [String: String], log: @escaping @Sendable (String) -> Void) {
            self.connection = connection
            self.environment = environment
            self.log = log
        }

        /// Says Hello, subscribes to owner changes first (so none is missed between the two),
        /// then asks who owns logind's name and which session is the agent's.
        mutating func start() async throws {
            try await connection.hello()
            try await connection.addMatch(Self.ownerChanged)
            try await connection.addMatch(Self.prepareForSleep)
            owner = try await connection.nameOwner(of: login1)
            await findSession()
        }

        /// What `signal` asks, or `nil` for anything else: a signal of another sender than
        /// logind's owner, another session's `Lock`.
        mutating func handle(_ signal: DBusMessage) async -> Event? {
            if Self.ownerChanged.matches(signal) {
                guard signal.body.count == 3, case .string(let newOwner) = signal.body[2] else { return nil }
                let previous = owner
                owner = newOwner.isEmpty ? nil : newOwner
                log("\(login1) is now owned by \(owner ?? "nobody")")
                await findSession()
                return owner == previous ? nil : .logindChanged(running: owner != nil)
            }
            if Self.prepareForSleep.matches(signal, senderOwner: owner) {
                switch signal.body {
                case [.boolean(true)]: return .sleep
                case [.boolean(false)]: return .resume
                default: return nil
                }
            }
            if let sessionPath, Self.sessionLock(sessionPath).matches(signal, senderOwner: owner) {
                return .sessionLock
            }
            if let sessionPath, Self.sessionProperties(sessionPath).matches(signal, senderOwner: owner) {
                return Self.setsLockedHint(signal) ? .sessionLock : nil
            }
            if signal.sender != owner, signal.interface == managerInterface || signal.interface == sessionInterface {
                log("ignored \(signal.member ?? "a signal") from \(signal.sender ?? "no sender"): not \(login1)")
            }
            return nil
        }

        /// Looks up the agent's session from logind's current owner and subscribes to its
        /// `Lock` (dropping the previous session's subscription). No session, or no logind:
        /// no `Lock` to follow.
        mutating func findSession() async {
            let path = owner == nil ? nil : await lookUpSession()
            guard path != sessionPath else { return }
            if let sessionPath {
                try? await connection.removeMatch(Self.sessionLock(sessionPath))
                try? await connection.removeMatch(Self.sessionProperties(sessionPath))
            }
            sessionPath = nil
            guard let path else { return }
            do {
                try await connection.addMatch(Self.sessionLock(path))
                try await connection.addMatch(Self.sessionProperties(path))
                sessionPath = path
                log("following Session.Lock of \(path)")
            } catch {
                log("cannot follow Session.Lock of \(path): \(error)")
            }
        }

        /// The agent's session object: its process's, else `$XDG_SESSION_ID`'s, else its user's
        /// display session; `nil` when logind knows none.
        private func lookUpSession() async -> String? {
            if let path = try? await objectPath(
                managerPath, managerInterface, "GetSessionByPID", [.uint32(UInt32(getpid()))])
            {
                return path
            }
            if let id = environment["XDG_SESSION_ID"], !id.isEmpty,
                let path = try? await objectPath(managerPath, managerInterface, "GetSession", [.string(id)])
            {
                return path
            }
            guard let user = try? await objectPath(managerPath, managerInterface, "GetUser", [.uint32(getuid())]),
                let reply = try? await call(
                    user, "org.freedesktop.DBus.Properties", "Get", [.string(userInterface), .string("Display")]),
                case .variant(.structure(let display))? = reply.first, display.count == 2,
                case .objectPath(let path) = display[1], path != "/"
            else { return nil }
            return path
        }

        private func objectPath(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue])
            async throws -> String?
        {
            guard case .objectPath(let object)? = try await call(path, interface, member, arguments).first else {
                return nil
            }
            return object
        }

        private func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue])
            async throws -> [DBusValue]
        {
            try await connection.call(
                .methodCall(path: path, interface: interface, member: member, destination: login1, body: arguments)
            ).body
        }
    }
}

/// logind's delay inhibitor for sleep: while its descriptor is open, logind holds a suspend back
/// (for at most `InhibitDelayMaxSec`, 5 s by default) after announcing it with
/// `PrepareForSleep(true)`; closing the descriptor lets the machine sleep.
///
/// The descriptor comes from `org.freedesktop.login1.Manager.Inhibit("sleep", who, why,
/// "delay")` through ``DBusWire/DBusFDCall`` (a blocking call, made here on a Dispatch queue,
/// off the Swift concurrency pool), on a connection of its own that closes right after the
/// reply: logind tracks the descriptor, not the connection ("Inhibitor Locks": the lock is
/// released when the descriptor is closed).
final class SleepInhibitor: Sendable {
    /// The held descriptor, or -1.
    private let descriptor = Mutex<Int32>(-1)
    private let environment: [String: String]
    private let log: @Sendable (String) -> Void
    private static let queue = DispatchQueue(label: "keychaind.sleep-inhibitor")

    init(environment: [String: String], log: @escaping @Sendable (String) -> Void) {
        self.environment = environment
        self.log = log
    }

    deinit {
        let held = descriptor.withLock { $0 }
        if held >= 0 { close(held) }
    }

    /// Whether a descriptor is held.
    var isHeld: Bool { descriptor.withLock { $0 >= 0 } }

    /// Takes an inhibitor unless one is held; without one (no logind, `Inhibit` refused) logs a
    /// line and carries on.
    func take() async {
        guard !isHeld else { return }
        let environment = environment
        let result: Result<Int32, any Error> = await withCheckedContinuation { continuation in
            Self.queue.async { continuation.resume(returning: Result { try Self.inhibit(environment: environment) }) }
        }
        switch result {
        case .success(let taken):
            let previous = descriptor.withLock { held in
                defer { held = taken }
                return held
            }
            if previous >= 0 { close(previous) }
            log("holding logind's delay inhibitor for sleep")
        case .failure(let error):
            log("no delay inhibitor for sleep (\(error)): the machine may sleep before the keychains lock")
        }
    }

    /// Closes the held descriptor, if any: logind may now suspend.
    func release() {
        let held = descriptor.withLock { held in
            defer { held = -1 }
            return held
        }
        guard held >= 0 else { return }
        close(held)
        log("released logind's delay inhibitor for sleep")
    }

    /// `Inhibit("sleep", "keychaind", …, "delay")` on the system bus: the descriptor (blocking).
    static func inhibit(environment: [String: String]) throws -> Int32 {
        let call = DBusMessage.methodCall(
            path: SleepLock.managerPath, interface: SleepLock.managerInterface, member: "Inhibit",
            destination: SleepLock.login1,
            body: [
                .string("sleep"), .string("keychaind"), .string("Lock keychains set to lock on sleep"),
                .string("delay"),
            ])
        let reply = try DBusFDCall.call(call, addresses: try DBusAddress.systemBus(environment: environment))
        guard reply.message.body.count == 1, let taken = reply.fileDescriptor(reply.message.body[0]) else {
            for unused in reply.fileDescriptors where unused >= 0 { close(unused) }
            throw DBusError(.typeMismatch, "Inhibit did not answer with one descriptor")
        }
        return taken
    }
}
