import Foundation
import Security
import Synchronization

/// A grouping of the person's authorization under a requirement, as Apple's
/// ([`LARight`](https://developer.apple.com/documentation/localauthentication/laright)): an app
/// authorizes it before reaching what it guards, and deauthorizes it when done.
///
/// ```swift
/// let loginRight = LARight()
/// try await loginRight.authorize(localizedReason: "Access your vault")
/// ```
///
/// On Linux ``authorize(localizedReason:)`` evaluates an ``LAContext`` with the policy the
/// requirement names (``LAAuthenticationRequirement``); a right kept in ``LARightStore`` then
/// reads its key and secret with that context, so an authorization spares their reads the
/// question for as long as an evaluated context does (300 seconds at most).
open class LARight: NSObject, @unchecked Sendable {
    /// Where a right stands.
    public enum State: Int, Sendable {
        /// Not authorized or refused yet.
        case unknown = 0
        /// Being authorized.
        case authorizing = 1
        /// Authorized.
        case authorized = 2
        /// Refused, or deauthorized.
        case notAuthorized = 3
    }

    /// What authorizing the right asks for.
    public let requirement: LAAuthenticationRequirement

    private struct Mutable {
        var state = State.unknown
        var tag = 0
        /// The context the last authorization evaluated.
        var context: LAContext?
    }

    private let mutable = Mutex(Mutable())

    /// A right with the default requirement: the device owner's authentication.
    public override convenience init() { self.init(requirement: .default) }

    /// A right whose authorization asks for `requirement`.
    public init(requirement: LAAuthenticationRequirement) {
        self.requirement = requirement
        super.init()
    }

    /// Where the right stands.
    open var state: State { mutable.withLock { $0.state } }

    /// A number the app may use to tell rights apart.
    open var tag: Int {
        get { mutable.withLock { $0.tag } }
        set { mutable.withLock { $0.tag = newValue } }
    }

    /// Asks the person what the requirement asks for, and authorizes the right when they answer.
    /// - Throws: ``LAError`` as ``LAContext/evaluatePolicy(_:localizedReason:)`` does.
    open func authorize(localizedReason: String) async throws {
        let context = LAContext()
        mutable.withLock {
            $0.context?.invalidate()
            $0.context = nil
            $0.state = .authorizing
        }
        do {
            try await context.evaluatePolicy(requirement.policy(for: context), localizedReason: localizedReason)
        } catch {
            mutable.withLock { $0.state = .notAuthorized }
            throw error
        }
        mutable.withLock {
            $0.context = context
            $0.state = .authorized
        }
    }

    /// ``authorize(localizedReason:)``, calling `handler` with its error (`nil` on success) on a
    /// thread of its own.
    open func authorize(localizedReason: String, completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Task.detached { [self] in
            do {
                try await authorize(localizedReason: localizedReason)
                handler(nil)
            } catch {
                handler(error)
            }
        }
    }

    /// Checks that the right could be authorized here, asking nobody.
    /// - Throws: ``LAError``: why it could not.
    open func checkCanAuthorize() async throws {
        let context = LAContext()
        var error: NSError?
        guard context.canEvaluatePolicy(requirement.policy(for: context), error: &error) else {
            throw error ?? LAError(.passcodeNotSet, "the right cannot be authorized here") as NSError
        }
    }

    /// ``checkCanAuthorize()``, calling `handler` with its error (`nil` when the right can be
    /// authorized).
    open func checkCanAuthorize(completion handler: @escaping @Sendable ((any Error)?) -> Void) {
        Task.detached { [self] in
            do {
                try await checkCanAuthorize()
                handler(nil)
            } catch {
                handler(error)
            }
        }
    }

    /// Ends the authorization: what the right guards asks again.
    open func deauthorize() async {
        mutable.withLock {
            $0.context?.invalidate()
            $0.context = nil
            $0.state = .notAuthorized
        }
    }

    /// ``deauthorize()``, calling `handler` once done.
    open func deauthorize(completion handler: @escaping @Sendable () -> Void) {
        Task.detached { [self] in
            await deauthorize()
            handler()
        }
    }

    /// The context the right was authorized with, while it is.
    var authorizedContext: LAContext? {
        mutable.withLock { $0.state == .authorized ? $0.context : nil }
    }

    /// Takes `other`'s authorization (a right saved to the store keeps the one it had).
    func adoptAuthorization(of other: LARight) {
        let taken = other.mutable.withLock { ($0.state, $0.context, $0.tag) }
        mutable.withLock {
            $0.state = taken.0
            $0.context = taken.1
            $0.tag = taken.2
        }
    }
}

/// What authorizing an ``LARight`` asks for, as Apple's
/// ([`LAAuthenticationRequirement`](https://developer.apple.com/documentation/localauthentication/laauthenticationrequirement)),
/// and what it means on Linux: the owner's password through polkit for ``default``, a finger on
/// fprintd's reader for biometry (docs/local-authentication.md).
public final class LAAuthenticationRequirement: NSObject, Sendable {
    enum Kind: UInt8, Sendable {
        case owner = 0
        case biometry = 1
        case biometryCurrentSet = 2
        case biometryOrPasscode = 3
    }

    let kind: Kind

    init(_ kind: Kind) {
        self.kind = kind
        super.init()
    }

    /// The device owner's authentication (`.deviceOwnerAuthentication`): on Linux, their
    /// password through polkit.
    public static var `default`: LAAuthenticationRequirement { LAAuthenticationRequirement(.owner) }

    /// A finger enrolled on the reader; fails without a reader or an enrolled finger.
    public static var biometry: LAAuthenticationRequirement { LAAuthenticationRequirement(.biometry) }

    /// A finger enrolled on the reader, while the same fingers are enrolled as when the right was
    /// saved: adding or removing one invalidates the right.
    public static var biometryCurrentSet: LAAuthenticationRequirement {
        LAAuthenticationRequirement(.biometryCurrentSet)
    }

    /// A finger, or `fallback`: with ``LABiometryFallbackRequirement/devicePasscode``, the owner's
    /// password where no finger can be used.
    public static func biometry(fallback: LABiometryFallbackRequirement) -> Self {
        Self(fallback.allowsPasscode ? .biometryOrPasscode : .biometry)
    }

    /// The policy an authorization evaluates with `context`: for a finger with the passcode as
    /// fallback, biometry when a finger can be used here, else the owner's authentication.
    func policy(for context: LAContext) -> LAPolicy {
        switch kind {
        case .owner: return .deviceOwnerAuthentication
        case .biometry, .biometryCurrentSet: return .deviceOwnerAuthenticationWithBiometrics
        case .biometryOrPasscode:
            return context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
                ? .deviceOwnerAuthenticationWithBiometrics : .deviceOwnerAuthentication
        }
    }

    /// The access control flags of what a right of this requirement guards in the keychain.
    var accessControlFlags: SecAccessControlCreateFlags {
        switch kind {
        case .owner: [.userPresence]
        case .biometry: [.biometryAny]
        case .biometryCurrentSet: [.biometryCurrentSet]
        case .biometryOrPasscode: [.biometryAny, .or, .devicePasscode]
        }
    }
}

/// What a biometric ``LAAuthenticationRequirement`` falls back to, as Apple's
/// ([`LABiometryFallbackRequirement`](https://developer.apple.com/documentation/localauthentication/labiometryfallbackrequirement)).
public final class LABiometryFallbackRequirement: NSObject, Sendable {
    let allowsPasscode: Bool

    init(allowsPasscode: Bool) {
        self.allowsPasscode = allowsPasscode
        super.init()
    }

    /// The default: no fallback.
    public static var `default`: LABiometryFallbackRequirement { LABiometryFallbackRequirement(allowsPasscode: false) }

    /// The device passcode: on Linux, the owner's password through polkit.
    public static var devicePasscode: LABiometryFallbackRequirement {
        LABiometryFallbackRequirement(allowsPasscode: true)
    }
}
