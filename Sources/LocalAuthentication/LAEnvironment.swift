import Foundation
import Synchronization
import UserPresence

/// The ways the current user can authenticate, and their changes, as Apple's
/// ([`LAEnvironment`](https://developer.apple.com/documentation/localauthentication/laenvironment)).
///
/// On Linux: the owner's password through polkit (``MechanismUserPassword``) and fprintd's
/// fingerprint reader (``MechanismBiometry``); no companion yet. fprintd announces no change of
/// the enrolled fingers, so while an observer is registered the environment reads the state
/// every ``pollInterval`` on a thread of its own, and tells each observer of a change there.
open class LAEnvironment: NSObject, @unchecked Sendable {
    /// How often the state is read while an observer is registered.
    public static let pollInterval: Duration = .seconds(2)

    private struct Observers {
        var entries: [(id: ObjectIdentifier, observer: WeakObserver)] = []
        var polling = false
        var last: State?
    }

    private struct WeakObserver: @unchecked Sendable {
        weak var value: AnyObject?
    }

    private let observers = Mutex(Observers())

    override init() { super.init() }

    /// The environment of the user this process runs as.
    public static let currentUser = LAEnvironment()

    /// The state now, read when asked.
    open var state: State { State.read() }

    /// Registers `observer`, held weakly, to be told of each change of ``state``.
    open func addObserver(_ observer: any Observer) {
        let start = observers.withLock { observers in
            observers.entries.removeAll { $0.observer.value == nil || $0.id == ObjectIdentifier(observer) }
            observers.entries.append((ObjectIdentifier(observer), WeakObserver(value: observer)))
            defer { observers.polling = true }
            return !observers.polling
        }
        if start { Thread.detachNewThread { [self] in poll() } }
    }

    /// Stops telling `observer` of changes.
    open func removeObserver(_ observer: any Observer) {
        observers.withLock { $0.entries.removeAll { $0.id == ObjectIdentifier(observer) || $0.observer.value == nil } }
    }

    /// Reads the state every ``pollInterval`` while observers remain, and tells them of changes.
    private func poll() {
        var previous = State.read()
        while true {
            Thread.sleep(forTimeInterval: Double(Self.pollInterval.components.seconds))
            let watching = observers.withLock { observers -> [any Observer]? in
                observers.entries.removeAll { $0.observer.value == nil }
                guard !observers.entries.isEmpty else {
                    observers.polling = false
                    return nil
                }
                return observers.entries.compactMap { $0.observer.value as? any Observer }
            }
            guard let watching else { return }
            let now = State.read()
            guard now != previous else { continue }
            for observer in watching { observer.environment(self, stateDidChangeFromOldState: previous) }
            previous = now
        }
    }
}

extension LAEnvironment {
    /// Told of changes of an ``LAEnvironment`` (`LAEnvironmentObserver`).
    public protocol Observer: NSObjectProtocol {
        /// Called on the environment's own thread after its state changed; ``LAEnvironment/state``
        /// is the new state by then.
        func environment(_ environment: LAEnvironment, stateDidChangeFromOldState oldState: LAEnvironment.State)
    }

    /// The ways the user can authenticate at one time (`LAEnvironmentState`).
    public final class State: NSObject, NSCopying, Sendable {
        /// The fingerprint reader, when fprintd has one.
        public let biometry: MechanismBiometry?
        /// The owner's password, when polkit can ask for it.
        public let userPassword: MechanismUserPassword?
        /// The companions: none on Linux yet.
        public let companions: [MechanismCompanion]

        init(biometry: MechanismBiometry?, userPassword: MechanismUserPassword?) {
            self.biometry = biometry
            self.userPassword = userPassword
            companions = []
        }

        /// Every mechanism: the password, the reader, the companions.
        public var allMechanisms: [Mechanism] {
            [userPassword as Mechanism?, biometry].compactMap { $0 } + companions
        }

        /// This state (it never changes).
        public func copy(with zone: NSZone? = nil) -> Any { self }

        /// Whether `object` is a state with the same mechanisms.
        public override func isEqual(_ object: Any?) -> Bool {
            guard let other = object as? State else { return false }
            return biometry == other.biometry && userPassword == other.userPassword
        }

        public override var hash: Int { biometry?.stateHash.hashValue ?? 0 }

        /// The state now: fprintd's reader and its enrolled fingers for this user, and whether
        /// polkit answers on the system bus.
        static func read() -> State {
            let environment = ProcessInfo.processInfo.environment
            let enrolment = (try? FingerprintReader.enrolment(environment: environment)) ?? nil
            let biometry = enrolment.map { enrolment in
                MechanismBiometry(
                    name: enrolment.reader.name, isEnrolled: !enrolment.fingers.isEmpty,
                    stateHash: enrolment.fingers.isEmpty ? nil : enrolment.state)
            }
            let polkit = PolkitAuthority.isAvailable(environment: environment)
            return State(biometry: biometry, userPassword: polkit ? MechanismUserPassword() : nil)
        }
    }

    /// A way to authenticate (`LAEnvironmentMechanism`).
    open class Mechanism: NSObject, @unchecked Sendable {
        /// Whether it can authenticate the user now.
        public let isUsable: Bool
        /// Its name, to show.
        public let localizedName: String
        /// The SF Symbol Apple shows for it (the same names, for apps that map them to icons).
        public let iconSystemName: String

        init(isUsable: Bool, localizedName: String, iconSystemName: String) {
            self.isUsable = isUsable
            self.localizedName = localizedName
            self.iconSystemName = iconSystemName
        }
    }

    /// fprintd's fingerprint reader (`LAEnvironmentMechanismBiometry`).
    public final class MechanismBiometry: Mechanism, @unchecked Sendable {
        /// ``LABiometryType/touchID``: a fingerprint reader.
        public let biometryType = LABiometryType.touchID
        /// Whether a finger is enrolled for the user.
        public let isEnrolled: Bool
        /// Whether too many failures locked it (fprintd keeps no such lock).
        public let isLockedOut = false
        /// The enrolled fingers' domain state (``LADomainStateBiometry/stateHash``); empty with
        /// none enrolled.
        public let stateHash: Data
        /// Whether the built-in reader is out of reach (a closed lid): never known here.
        public let builtInSensorInaccessible = false

        init(name: String, isEnrolled: Bool, stateHash: Data?) {
            self.isEnrolled = isEnrolled
            self.stateHash = stateHash ?? Data()
            super.init(isUsable: isEnrolled, localizedName: name, iconSystemName: "touchid")
        }

        public override func isEqual(_ object: Any?) -> Bool {
            guard let other = object as? MechanismBiometry else { return false }
            return localizedName == other.localizedName && isEnrolled == other.isEnrolled
                && stateHash == other.stateHash
        }

        public override var hash: Int { stateHash.hashValue }
    }

    /// The owner's password, asked through polkit (`LAEnvironmentMechanismUserPassword`).
    public final class MechanismUserPassword: Mechanism, @unchecked Sendable {
        /// Whether the user has a password: on Linux, whether polkit can ask for it (a user cannot
        /// read whether their account has one).
        public let isSet = true

        init() { super.init(isUsable: true, localizedName: "Password", iconSystemName: "key.fill") }

        public override func isEqual(_ object: Any?) -> Bool { object is MechanismUserPassword }
        public override var hash: Int { 1 }
    }

    /// A companion device (`LAEnvironmentMechanismCompanion`): none on Linux yet.
    public final class MechanismCompanion: Mechanism, @unchecked Sendable {
        /// Its kind.
        public let type: LACompanionType
        /// A hash that changes when the paired companions change.
        public let stateHash: Data?

        init(type: LACompanionType, stateHash: Data?) {
            self.type = type
            self.stateHash = stateHash
            super.init(isUsable: false, localizedName: "Companion", iconSystemName: "applewatch")
        }
    }
}
