import Foundation
import KeychainClient
import KeychainModel
import Synchronization
import UserPresence

/// An authentication context, as Apple's
/// (<https://developer.apple.com/documentation/localauthentication/lacontext>): it asks the person
/// at the device to prove they are its owner.
///
/// ```swift
/// let context = LAContext()
/// var error: NSError?
/// if context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error) {
///     context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Log in to your account") {
///         success, error in …
///     }
/// }
/// ```
///
/// On Linux ``LAPolicy/deviceOwnerAuthentication`` asks polkit (`org.keychainlinux.authenticate`,
/// `auth_self`), so the session's authentication agent asks for the user's own password: the
/// desktop's dialog, or, for a program on a terminal with no agent of the desktop's, the
/// keychain's own polkit agent on that terminal, registered for this process as `pkexec` starts
/// `pkttyagent`. What the dialog proves and
/// what it does not: docs/local-authentication.md.
open class LAContext: NSObject, @unchecked Sendable {
    private struct State {
        var invalidated = false
        var credentials: [LACredentialType: Data] = [:]
        /// What the last successful evaluation proved, until when: what this context's keychain
        /// reads offer (``ownerProof()``).
        var proof: (proof: Data, expiry: ContinuousClock.Instant)?
        /// The biometry the last ``canEvaluatePolicy(_:error:)`` found.
        var biometryType = LABiometryType.none
        /// The biometry's domain state when a biometric policy was last checked or evaluated.
        var evaluatedDomainState: Data?
    }

    private let state = Mutex(State())

    /// Why the app asks. polkit's dialogs show their action's own message instead: polkit takes
    /// no text from a program that is not root.
    open var localizedReason: String = ""
    /// The fallback button's title (the dialogs polkit's agents show have none).
    open var localizedFallbackTitle: String?
    /// The cancel button's title (the dialogs polkit's agents show keep their own).
    open var localizedCancelTitle: String?
    /// How long an unlock of the device counts as this authentication (no such unlock on Linux).
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval = 0
    /// When true, evaluating fails with ``LAError/Code/notInteractive`` rather than asking.
    open var interactionNotAllowed = false

    public override init() { super.init() }

    /// The biometry this device has, as the last ``canEvaluatePolicy(_:error:)`` found it (as on
    /// Apple platforms, it is ``LABiometryType/none`` until then): ``LABiometryType/touchID`` when
    /// fprintd has a fingerprint reader.
    open var biometryType: LABiometryType { state.withLock { $0.biometryType } }

    /// A value that changes when the enrolled fingers change, set when a biometric policy is
    /// checked or evaluated with fingers enrolled; `nil` until then. Deprecated by Apple for
    /// ``domainState``.
    open var evaluatedPolicyDomainState: Data? { state.withLock { $0.evaluatedDomainState } }

    /// The state of the ways this context can authenticate, read now: the biometry's hash
    /// changes when the enrolled fingers change (how this is weaker than Apple's:
    /// ``LADomainState``).
    open var domainState: LADomainState {
        let enrolment = (try? Self.enrolment(environment: ProcessInfo.processInfo.environment).get()) ?? nil
        return LADomainState(
            biometry: LADomainStateBiometry(
                biometryType: enrolment == nil ? .none : .touchID, stateHash: Self.stateHash(enrolment)),
            companion: LADomainStateCompanion(
                stateHash: Self.companionStateHash(environment: ProcessInfo.processInfo.environment)))
    }

    /// The domain state `enrolment` stands for: `nil` without a reader or with no finger.
    static func stateHash(_ enrolment: FingerprintReader.Enrolment?) -> Data? {
        enrolment.flatMap { $0.fingers.isEmpty ? nil : $0.state }
    }

    /// Whether `policy` can be evaluated here; when it cannot, `error` says why.
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        let found = Self.enrolment(environment: ProcessInfo.processInfo.environment)
        let enrolment = (try? found.get()) ?? nil
        state.withLock {
            $0.biometryType = enrolment == nil ? .none : .touchID
            if policy.usesBiometry { $0.evaluatedDomainState = Self.stateHash(enrolment) }
        }
        if let failure = unavailability(for: policy, biometry: found) {
            error?.pointee = failure as NSError
            return false
        }
        return true
    }

    /// Asks the person (unless the context may not) and calls `reply` with the outcome, on a
    /// thread of its own.
    open func evaluatePolicy(
        _ policy: LAPolicy, localizedReason: String, reply: @escaping @Sendable (Bool, (any Error)?) -> Void
    ) {
        Thread.detachNewThread { [self] in
            do {
                try evaluate(policy, reason: localizedReason)
                reply(true, nil)
            } catch {
                reply(false, error)
            }
        }
    }

    /// Asks the person (unless the context may not).
    /// - Returns: `true` when they authenticated.
    /// - Throws: ``LAError`` when they did not, or could not be asked.
    @discardableResult
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            evaluatePolicy(policy, localizedReason: localizedReason) { success, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: success) }
            }
        }
    }

    /// Ends the context: an evaluation under way or to come fails with ``LAError/Code/appCancel``
    /// or ``LAError/Code/invalidContext``, and the credentials it was given are wiped.
    open func invalidate() {
        state.withLock {
            $0.invalidated = true
            // Zeroed in place (a copy taken out would be zeroed instead of what is kept).
            for key in Array($0.credentials.keys) {
                let count = $0.credentials[key]?.count ?? 0
                $0.credentials[key]?.resetBytes(in: 0..<count)
            }
            $0.credentials = [:]
            $0.proof = nil
        }
    }

    /// Gives the context an app's credential (the password of items made with
    /// `.applicationPassword`); `nil` removes it.
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        state.withLock {
            guard !$0.invalidated else { return false }
            $0.credentials[type] = credential
            return true
        }
    }

    /// Whether the context holds a credential of `type`.
    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        state.withLock { $0.credentials[type] != nil }
    }

    /// Why `policy` cannot be evaluated now, or `nil`; a biometric policy is judged by `biometry`,
    /// what fprintd was found to offer (asked for here when not given).
    func unavailability(
        for policy: LAPolicy, biometry: Result<FingerprintReader.Enrolment?, LAError>? = nil
    ) -> LAError? {
        if state.withLock({ $0.invalidated }) { return LAError(.invalidContext, "the context was invalidated") }
        switch policy {
        case .deviceOwnerAuthentication: return nil
        case .deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthenticationWithBiometricsOrCompanion:
            do throws(LAError) {
                _ = try Self.usable(biometry ?? Self.enrolment(environment: ProcessInfo.processInfo.environment))
                return nil
            } catch {
                guard policy == .deviceOwnerAuthenticationWithBiometricsOrCompanion,
                    (try? Self.pairedKeys(environment: ProcessInfo.processInfo.environment)) != nil
                else { return error }
                return nil
            }
        case .deviceOwnerAuthenticationWithCompanion:
            do throws(LAError) {
                _ = try Self.pairedKeys(environment: ProcessInfo.processInfo.environment)
                return nil
            } catch {
                return error
            }
        case .deviceOwnerAuthenticationWithWristDetection:
            return LAError(.biometryNotAvailable, "wrist detection is a watch's")
        }
    }

    /// Asks polkit, or fprintd for a biometric policy, blocking this thread.
    func evaluate(_ policy: LAPolicy, reason: String) throws {
        if state.withLock({ $0.invalidated }) { throw LAError(.invalidContext, "the context was invalidated") }
        if interactionNotAllowed {
            throw LAError(.notInteractive, "the context may not ask (interactionNotAllowed)")
        }
        let environment = ProcessInfo.processInfo.environment
        if policy.usesCompanion(fingerUsable: { (try? Self.usable(Self.enrolment(environment: environment))) != nil }) {
            // evaluateCompanion refuses with companionNotAvailable when no key is paired.
            let lifetime = reuseLifetime
            try keep(try evaluateCompanion(reason: reason, lifetime: lifetime), for: lifetime)
            return
        }
        if policy.usesBiometry {
            let lifetime = reuseLifetime
            let (proof, domainState) = try evaluateFinger(reason: reason, lifetime: lifetime)
            try keep(proof, for: lifetime) {
                $0.evaluatedDomainState = domainState
                $0.biometryType = .touchID
            }
            return
        }
        if let failure = unavailability(for: policy) { throw failure }
        // Asked where the keychain is kept (keychaind, or this process), so that the proof it
        // answers spares this context's keychain reads the question: on a terminal with no agent
        // of the desktop's, the person is asked where they look.
        let lifetime = reuseLifetime
        let proof: Data
        do {
            proof = try Keychains.authenticateOwner(lifetime: lifetime)
        } catch let error as KeychainError {
            throw Self.laError(error)
        } catch {
            throw LAError(.passcodeNotSet, "the owner cannot be authenticated here: \(error)")
        }
        try keep(proof, for: lifetime)
    }

    /// Keeps `proof` for this context's reads for `lifetime`, with what `record` adds, unless the
    /// context was invalidated while the person answered (``LAError/Code/appCancel``).
    private func keep(_ proof: Data, for lifetime: Duration, _ record: (inout State) -> Void = { _ in }) throws {
        let expiry = ContinuousClock.now + lifetime
        try state.withLock {
            guard !$0.invalidated else { throw LAError(.appCancel, "the context was invalidated") }
            record(&$0)
            $0.proof = (proof, expiry)
        }
    }

    /// How long an evaluation spares this context's keychain reads the question:
    /// ``touchIDAuthenticationAllowableReuseDuration`` when the app sets it, at most (and by
    /// default) Apple's `LATouchIDAuthenticationMaximumAllowableReuseDuration`, 300 seconds.
    var reuseLifetime: Duration {
        let longest = OwnerProofs.longestLifetime
        let asked = touchIDAuthenticationAllowableReuseDuration
        guard asked > 0, asked.isFinite else { return longest }
        return min(.milliseconds(Int64(asked * 1000)), longest)
    }

    /// The `LAError` of a keychain's answer to an authentication.
    static func laError(_ error: KeychainError) -> LAError {
        switch error.code {
        case .userCanceled: LAError(.userCancel, "the person cancelled")
        case .authFailed: LAError(.authenticationFailed, "the person did not authenticate")
        case .interactionNotAllowed where error.reason != .ownerAuthenticationUnavailable:
            LAError(.notInteractive, "no authentication agent can ask the person (no desktop agent, no terminal)")
        default: LAError(.passcodeNotSet, "the owner cannot be authenticated here: \(error.message)")
        }
    }
}

extension LAContext: AuthenticationInteractionSource {
    package var allowsInteraction: Bool { !interactionNotAllowed && !state.withLock { $0.invalidated } }
}

extension LAContext: OwnerProofSource {
    package func ownerProof() -> Data? {
        state.withLock { state in
            guard !state.invalidated, let proof = state.proof, proof.expiry > ContinuousClock.now else { return nil }
            return proof.proof
        }
    }
}

extension LAContext: ApplicationPasswordSource {
    /// The application password ``setCredential(_:type:)`` gave, unless the context was
    /// invalidated: what `Security` seals and opens `.applicationPassword` items with.
    package func applicationPassword() -> Data? {
        state.withLock { $0.invalidated ? nil : $0.credentials[.applicationPassword] }
    }
}
