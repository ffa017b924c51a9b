import Crypto
import DBusWire
import Foundation

/// The fingerprint reader fprintd (<https://fprint.freedesktop.org/fprintd-dev/>) offers on the
/// system bus: what biometry is on Linux. A reader is claimed for the calling process's own user
/// (fprintd checks `net.reactivated.fprint.device.verify` with polkit, which the desktop grants an
/// active session), and matching is fprintd's and libfprint's: the prints never leave fprintd.
///
/// ```swift
/// let environment = ProcessInfo.processInfo.environment
/// if let enrolment = try FingerprintReader.enrolment(environment: environment), !enrolment.fingers.isEmpty {
///     let outcome = try enrolment.reader.verify(environment: environment)
/// }
/// ```
public struct FingerprintReader: Sendable, Hashable {
    /// fprintd's object for the reader.
    public var path: String
    /// The reader's name, as fprintd gives it.
    public var name: String

    static let busName = "net.reactivated.Fprint"
    static let managerPath = "/net/reactivated/Fprint/Manager"
    static let managerInterface = "net.reactivated.Fprint.Manager"
    static let deviceInterface = "net.reactivated.Fprint.Device"

    /// What a verification came to.
    public enum Outcome: Sendable, Equatable {
        /// An enrolled finger matched.
        case matched
        /// No enrolled finger matched, as many times as allowed.
        case failed
        /// Nobody touched the reader in time.
        case timedOut
        /// The reader went away, or fprintd failed while matching.
        case disconnected
    }

    /// A reader and the fingers enrolled on it for this process's user.
    public struct Enrolment: Sendable, Hashable {
        /// The reader.
        public var reader: FingerprintReader
        /// The enrolled fingers' names, sorted; empty when none is.
        public var fingers: [String]

        /// The reader's domain state with these fingers (``domainState(reader:fingers:)``).
        public var state: Data { FingerprintReader.domainState(reader: reader, fingers: fingers) }
    }

    /// The reader fprintd offers by default, or `nil` when there is none: fprintd runs (or is
    /// started by the bus) and has no reader, or the system bus has no fprintd at all.
    /// - Throws: ``UserPresenceError`` when the system bus cannot be reached, or fprintd answers
    ///   what it should not.
    public static func defaultReader(environment: [String: String]) throws -> FingerprintReader? {
        var bus = try connect(environment, timeout: .seconds(25))
        defer { bus.close() }
        return try defaultReader(on: &bus)
    }

    /// The default reader and the fingers enrolled on it for this process's user, asked on one
    /// connection; `nil` when there is no reader (``defaultReader(environment:)``).
    /// - Throws: ``UserPresenceError`` when fprintd refuses (polkit denies this session) or
    ///   cannot be reached.
    public static func enrolment(environment: [String: String]) throws -> Enrolment? {
        var bus = try connect(environment, timeout: .seconds(25))
        defer { bus.close() }
        guard let reader = try defaultReader(on: &bus) else { return nil }
        return Enrolment(reader: reader, fingers: try reader.enrolledFingers(on: &bus))
    }

    /// The default reader, asked on `bus`.
    private static func defaultReader(on bus: inout DBusBlockingConnection) throws -> FingerprintReader? {
        var signals: [DBusMessage] = []
        let path: String
        do {
            let body = try bus.call(
                .methodCall(
                    path: managerPath, interface: managerInterface, member: "GetDefaultDevice", destination: busName),
                keepingSignals: &signals)
            guard case .objectPath(let object)? = body.first else {
                throw UserPresenceError.malformed("fprintd's GetDefaultDevice answered no object")
            }
            path = object
        } catch let error as DBusError where error.code == .remoteError {
            // No such device, or no fprintd on this bus (nothing to activate): no reader.
            guard let name = error.errorName,
                name.hasSuffix(".NoSuchDevice") || name.hasSuffix(".ServiceUnknown")
                    || name.hasSuffix(".NameHasNoOwner")
            else { throw UserPresenceError.unavailable("fprintd refused: \(error.errorName ?? "")") }
            return nil
        } catch let error as DBusError {
            throw UserPresenceError.unavailable("fprintd cannot be reached: \(error.code)")
        }
        let name = try property("name", of: path, on: &bus)
        guard case .string(let text) = name else {
            throw UserPresenceError.malformed("fprintd's reader has no name")
        }
        return FingerprintReader(path: path, name: text)
    }

    /// The fingers enrolled on the reader for this process's user, sorted, asked on `bus`.
    private func enrolledFingers(on bus: inout DBusBlockingConnection) throws -> [String] {
        var signals: [DBusMessage] = []
        do {
            let body = try bus.call(device("ListEnrolledFingers", [.string("")]), keepingSignals: &signals)
            guard case .array(_, let values)? = body.first else {
                throw UserPresenceError.malformed("fprintd's ListEnrolledFingers answered no list")
            }
            return values.compactMap { if case .string(let finger) = $0 { finger } else { nil } }.sorted()
        } catch let error as DBusError where error.errorName?.hasSuffix(".NoEnrolledPrints") == true {
            return []
        } catch let error as DBusError {
            throw UserPresenceError.unavailable(
                "fprintd refused the list of fingers: \(error.errorName ?? "\(error.code)")")
        }
    }

    /// A value that changes when the reader or its set of enrolled fingers does: SHA-256 over
    /// the reader's name and the sorted finger names. fprintd shows no one the prints themselves,
    /// so a finger deleted and enrolled again under the same name leaves it unchanged.
    public static func domainState(reader: FingerprintReader, fingers: [String]) -> Data {
        var hash = SHA256()
        hash.update(data: Data("fprintd\u{0}\(reader.name)".utf8))
        for finger in fingers.sorted() { hash.update(data: Data("\u{0}\(finger)".utf8)) }
        return Data(hash.finalize())
    }

    /// How long a verification waits for another program's claim of the reader to end: a
    /// person touches a reader in less than that.
    public static let longestWaitForReader: Duration = .seconds(90)

    /// Claims the reader for this process's user and waits until an enrolled finger matches, or
    /// `attempts` fingers did not, or nobody touched it within `timeout`; the reader is released
    /// whatever the outcome. `touchRequested` is called once the reader waits for a finger.
    ///
    /// A reader reads one finger at a time, for the one program that claimed it: while another
    /// holds it (another read of the keychain's, a screen locker, `sudo`), the claim is tried
    /// again until it is free, for ``longestWaitForReader`` at most, so that two programs
    /// reading at once take turns rather than one failing.
    /// - Throws: ``UserPresenceError`` when fprintd refuses the claim (the reader stays held
    ///   longer than that; polkit denies this session) or cannot be reached.
    public func verify(
        environment: [String: String], attempts: Int = 3, timeout: Duration = .seconds(60),
        touchRequested: () -> Void = {}
    ) throws -> Outcome {
        var bus = try Self.connect(environment, timeout: timeout)
        defer { bus.close() }
        var signals: [DBusMessage] = []
        let match = "type='signal',sender='\(Self.busName)',path='\(path)',interface='\(Self.deviceInterface)'"
        do {
            _ = try bus.call(
                .methodCall(
                    path: DBusMessage.busDriverPath, interface: DBusMessage.busDriverName, member: "AddMatch",
                    destination: DBusMessage.busDriverName, body: [.string(match)]),
                keepingSignals: &signals)
            try claim(on: &bus, &signals)
        } catch let error as DBusError {
            throw UserPresenceError.unavailable("fprintd refused the reader: \(error.errorName ?? "\(error.code)")")
        }
        defer { _ = try? bus.call(device("Release"), keepingSignals: &signals) }
        var failures = 0
        while true {
            do {
                _ = try bus.call(device("VerifyStart", [.string("any")]), keepingSignals: &signals)
            } catch let error as DBusError {
                throw UserPresenceError.unavailable("fprintd refused to verify: \(error.errorName ?? "\(error.code)")")
            }
            touchRequested()
            let result: String
            do {
                result = try finalStatus(on: &bus, &signals)
            } catch let error as DBusError where error.code == .timedOut {
                _ = try? bus.call(device("VerifyStop"), keepingSignals: &signals)
                return .timedOut
            }
            _ = try? bus.call(device("VerifyStop"), keepingSignals: &signals)
            switch result {
            case "verify-match": return .matched
            case "verify-no-match":
                failures += 1
                if failures >= attempts { return .failed }
            default: return .disconnected
            }
        }
    }

    /// Claims the reader, waiting while another program holds it (fprintd's `AlreadyInUse`).
    /// The reader's signals received meanwhile were the holder's, and are dropped.
    private func claim(on bus: inout DBusBlockingConnection, _ signals: inout [DBusMessage]) throws {
        let deadline = ContinuousClock.now + Self.longestWaitForReader
        while true {
            do {
                _ = try bus.call(device("Claim", [.string("")]), keepingSignals: &signals)
                signals.removeAll()
                return
            } catch let error as DBusError
                where error.errorName == "net.reactivated.Fprint.Error.AlreadyInUse" && ContinuousClock.now < deadline
            {
                signals.removeAll()
                usleep(200_000)
            }
        }
    }

    /// The result of the `VerifyStatus` signal that ends a verification (`done` true), taking
    /// those already received first.
    private func finalStatus(on bus: inout DBusBlockingConnection, _ signals: inout [DBusMessage]) throws -> String {
        while true {
            let message = signals.isEmpty ? try bus.receive() : signals.removeFirst()
            guard message.type == .signal, message.path == path, message.interface == Self.deviceInterface,
                message.member == "VerifyStatus", message.body.count == 2,
                case .string(let result) = message.body[0], case .boolean(let done) = message.body[1]
            else { continue }
            if done { return result }
        }
    }

    /// A call of the reader's method `member`.
    private func device(_ member: String, _ body: [DBusValue] = []) -> DBusMessage {
        .methodCall(path: path, interface: Self.deviceInterface, member: member, destination: Self.busName, body: body)
    }

    /// The reader's property `name`.
    private static func property(_ name: String, of path: String, on bus: inout DBusBlockingConnection) throws
        -> DBusValue
    {
        var signals: [DBusMessage] = []
        do {
            let body = try bus.call(
                .methodCall(
                    path: path, interface: "org.freedesktop.DBus.Properties", member: "Get", destination: busName,
                    body: [.string(deviceInterface), .string(name)]),
                keepingSignals: &signals)
            guard case .variant(let value)? = body.first else {
                throw UserPresenceError.malformed("fprintd's property \(name) is not a variant")
            }
            return value
        } catch let error as DBusError {
            throw UserPresenceError.unavailable("fprintd did not give its reader's \(name): \(error.code)")
        }
    }

    /// A connection to the system bus.
    private static func connect(_ environment: [String: String], timeout: Duration) throws -> DBusBlockingConnection {
        do {
            return try DBusBlockingConnection.connect(
                to: DBusAddress.systemBus(environment: environment), timeout: timeout)
        } catch {
            throw UserPresenceError.unavailable("the system bus cannot be reached")
        }
    }
}
