import DBusWire
import Foundation
import KeychainLibc

/// Asks polkit (<https://www.freedesktop.org/software/polkit/docs/latest/>) whether the person
/// at a process is its owner: `CheckAuthorization` of ``authenticateAction`` on the system bus,
/// with interaction allowed, so that polkit has the session's authentication agent ask for the
/// user's password (or fingerprint, or security key: whatever the administrator's PAM stack for
/// `polkit-1` asks) — the desktop's dialog, or ``TerminalAgent`` on a terminal.
///
/// The action is installed with the package (`dist/polkit-1/actions`) as `auth_self` for every
/// kind of session: the user proves they are themselves, never an administrator, and no answer
/// is kept (each check asks again).
public enum PolkitAuthority {
    /// The action the user authenticates for.
    public static let authenticateAction = "org.keychainlinux.authenticate"
    static let busName = "org.freedesktop.PolicyKit1"
    static let path = "/org/freedesktop/PolicyKit1/Authority"
    static let interface = "org.freedesktop.PolicyKit1.Authority"

    /// What a check came to.
    public enum Outcome: Sendable, Equatable {
        /// The person authenticated.
        case authorized
        /// The person cancelled (the dialog was dismissed).
        case cancelled
        /// The authentication failed (a wrong password, too many times).
        case failed
        /// Nobody could be asked: no authentication agent for the process's session.
        case noAgent
    }

    /// Checks ``authenticateAction`` for `process`, asking the person when `interactive`.
    /// - Parameters:
    ///   - process: The process whose person is asked about (its pid, with its start time and uid
    ///     so that a later process with the same pid is not mistaken for it).
    ///   - environment: Where the system bus is (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard
    ///     socket).
    ///   - timeout: The longest wait, the person's typing included.
    ///   - answering: Who answers when polkit has no agent to ask with for the process: this
    ///     process then registers an agent of its own for it (``PolkitQuestion``), and each of
    ///     PAM's questions goes to `answering`; `nil` leaves such a check ``Outcome/noAgent``.
    /// - Throws: ``UserPresenceError`` when polkit cannot be reached or answers what it should not.
    ///
    /// No details go with the check: polkit takes them from trusted callers only (root, or the
    /// action's owner), so the dialog says the action's own message, not the app's reason.
    public static func check(
        _ process: ProcessSubject, interactive: Bool, environment: [String: String],
        timeout: Duration = .seconds(600), answering: PolkitAnswering? = nil
    ) throws -> Outcome {
        let addresses: [DBusAddress]
        do {
            addresses = try DBusAddress.systemBus(environment: environment)
        } catch {
            throw UserPresenceError.unavailable("no system bus address")
        }
        let subject = subjectValue(process)
        let reply: DBusFDReply
        do {
            reply = try DBusFDCall.call(
                checkCall(subject, interactive: interactive), addresses: addresses, timeout: timeout)
        } catch let error as DBusError where error.code == .remoteError {
            throw UserPresenceError.unavailable("polkit refused the check: \(error.errorName ?? ""): \(error.message)")
        } catch {
            throw UserPresenceError.unavailable("polkit cannot be reached: \(error)")
        }
        for descriptor in reply.fileDescriptors where descriptor >= 0 { close(descriptor) }
        let outcome = try outcome(of: reply.message.body)
        guard outcome == .noAgent, interactive, let answering else { return outcome }
        do {
            // Each wait for polkit is bounded, not the whole exchange: the person may take their
            // time in the dialogs between two waits, and a right answer must still be sent.
            var connection = try DBusBlockingConnection.connect(to: addresses, timeout: timeout)
            defer { connection.close() }
            return try PolkitFallbackAgent.check(subject, process, on: &connection, answering: answering)
        } catch let error as UserPresenceError {
            throw error
        } catch {
            throw UserPresenceError.unavailable("polkit cannot be reached: \(error)")
        }
    }

    /// `process` as polkit names a subject: `("unix-process", {pid, start-time, uid})`.
    static func subjectValue(_ process: ProcessSubject) -> DBusValue {
        .structure([
            .string("unix-process"),
            .dictionary(
                key: .string, value: .variant,
                [
                    DBusDictEntry(.string("pid"), .variant(.uint32(UInt32(bitPattern: process.pid)))),
                    DBusDictEntry(.string("start-time"), .variant(.uint64(process.startTime))),
                    DBusDictEntry(.string("uid"), .variant(.int32(Int32(bitPattern: process.uid)))),
                ]),
        ])
    }

    /// `CheckAuthorization` of ``authenticateAction`` for `subject`, with no details.
    static func checkCall(_ subject: DBusValue, interactive: Bool) -> DBusMessage {
        .methodCall(
            path: path, interface: interface, member: "CheckAuthorization", destination: busName,
            body: [
                subject, .string(authenticateAction), .dictionary(key: .string, value: .string, []),
                .uint32(interactive ? 1 : 0), .string(""),
            ])
    }

    /// Whether polkit answers for this process on the system bus: a check that asks nobody.
    public static func isAvailable(environment: [String: String]) -> Bool {
        guard let subject = try? ProcessSubject.current() else { return false }
        return (try? check(subject, interactive: false, environment: environment, timeout: .seconds(5))) != nil
    }

    /// The outcome a `CheckAuthorization` reply, `((bba{ss}))`, says.
    static func outcome(of body: [DBusValue]) throws -> Outcome {
        guard body.count == 1, case .structure(let fields) = body[0], fields.count == 3,
            case .boolean(let authorized) = fields[0], case .boolean(let challenge) = fields[1]
        else { throw UserPresenceError.malformed("CheckAuthorization answered \(body.count) values") }
        if authorized { return .authorized }
        var details: [String: String] = [:]
        if case .dictionary(_, _, let entries) = fields[2] {
            for entry in entries {
                if case .string(let key) = entry.key, case .string(let value) = entry.value { details[key] = value }
            }
        }
        if details["polkit.dismissed"] == "true" { return .cancelled }
        // Not authorized with a challenge still open: polkit found no agent to ask with.
        return challenge ? .noAgent : .failed
    }
}

/// A process polkit is asked about: its pid, the time it started (in clock ticks since boot,
/// field 22 of `/proc/PID/stat`) and its real uid.
public struct ProcessSubject: Sendable, Hashable {
    /// The process's number.
    public var pid: Int32
    /// When it started, in clock ticks since boot.
    public var startTime: UInt64
    /// Its real user.
    public var uid: UInt32

    /// A subject from its parts.
    public init(pid: Int32, startTime: UInt64, uid: UInt32) {
        self.pid = pid
        self.startTime = startTime
        self.uid = uid
    }

    /// This process.
    public static func current() throws -> ProcessSubject {
        try of(pid: getpid(), uid: getuid())
    }

    /// Process `pid`, run by `uid`, with its start time read now.
    /// - Throws: ``UserPresenceError`` when the process is gone.
    public static func of(pid: Int32, uid: UInt32) throws -> ProcessSubject {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            throw UserPresenceError.unavailable("process \(pid) is gone")
        }
        guard let start = processStartTime(procStat: stat) else {
            throw UserPresenceError.malformed("/proc/\(pid)/stat has no start time")
        }
        return ProcessSubject(pid: pid, startTime: start, uid: uid)
    }
}

/// Why the person could not be asked (never with a secret in it).
public enum UserPresenceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No way to ask here: no polkit, no system bus, no agent program.
    case unavailable(String)
    /// An answer that does not follow the protocol.
    case malformed(String)

    /// What went wrong, in words.
    public var description: String {
        switch self {
        case .unavailable(let text), .malformed(let text): text
        }
    }
}
