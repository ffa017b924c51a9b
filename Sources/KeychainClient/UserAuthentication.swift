import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainModel
import UserPresence

// How a read that may ask for the owner (`ItemQuery.AuthenticationUI.allow`) reaches the person,
// whichever way this process reaches its keychain: one place for both.

extension AgentKeychain {
    /// Runs `call` with `query`. A query that may ask runs first as one that may not, so that a
    /// read of items that ask for nothing costs nothing more; only when a matched item asks for
    /// its owner does it run again, asking: keychaind asks polkit for this process, and polkit's
    /// text agent is started on this process's terminal (when it has one) to ask there.
    func askingUser<T>(_ query: ItemQuery, _ call: (ItemQuery) throws -> T) throws -> T {
        guard query.authenticationUI == .allow else { return try call(query) }
        var first = query
        first.authenticationUI = .fail
        do {
            return try call(first)
        } catch let error as KeychainError where error.reason == .applicationNotTrusted {
            return try call(query)  // keychaind asks about this application itself
        } catch let error as KeychainError where error.reason == .userAuthenticationNeeded {
            return try withTerminalAgent { try call(query) }
        }
    }
}

/// Runs `body` with polkit's text agent on this process's terminal (when it has one), so that
/// keychaind's question for this process can be asked there.
func withTerminalAgent<T>(_ body: () throws -> T) rethrows -> T {
    let agent = (try? ProcessSubject.current()).flatMap { TerminalAgent.start(for: $0) }
    defer { agent?.stop() }
    return try body()
}

extension KeychainConfiguration {
    /// This configuration, for a keychain this process opens itself: a read that may ask for the
    /// owner asks through polkit for this process, unless the configuration names another way.
    var askingTheUser: KeychainConfiguration {
        var configuration = self
        if configuration.userVerifier == nil { configuration.userVerifier = PolkitUserVerifier() }
        return configuration
    }
}

extension Keychains {
    /// Has the person authenticate as this process's user, as an `LAContext`'s `evaluatePolicy`
    /// does, and returns a proof that this process's reads offer (``KeychainModel/ItemQuery/ownerProof``)
    /// so that they do not ask again for `lifetime` (300 seconds at most). The proof is made where
    /// this process's keychains are kept, which is where it is checked: by keychaind
    /// (`AuthenticateOwner`), or, with the keychains in this process, here. polkit's text agent
    /// is started on this process's terminal for the question.
    /// - Throws: ``KeychainModel/KeychainError`` as a read that asks: `.userCanceled`,
    ///   `.authFailed`, `.interactionNotAllowed` (with
    ///   ``KeychainModel/KeychainError/Reason/ownerAuthenticationUnavailable`` when no polkit answers).
    package static func authenticateOwner(lifetime: Duration) throws -> Data {
        let subject = try thisProcess()
        let agent = TerminalAgent.start(for: subject)
        defer { agent?.stop() }
        if let connection = try taskAgent() {
            return try connection.call(AgentInterface.authenticateOwner, .init(seconds: proofSeconds(lifetime))).proof
        }
        try PolkitUserVerifier.verify(subject, environment: ProcessInfo.processInfo.environment)
        return OwnerProofs.thisProcess.make(for: subject, lifetime: lifetime)
    }
}

extension Keychains {
    /// Has the person touch fprintd's reader for this process, as a biometric `LAContext`
    /// evaluation does, and returns a proof that this process's reads of items a finger answers
    /// offer, for `lifetime` (300 seconds at most): made where this process's keychains are kept,
    /// by keychaind (`AuthenticateWithFinger`, which claims the reader for this process's user),
    /// or, with the keychains in this process, here. `touchRequested` is called when the reader
    /// is to be touched.
    /// - Returns: The proof, and the reader's domain state the finger matched in.
    /// - Throws: ``KeychainModel/KeychainError`` as a read that asks for a finger: `.authFailed`,
    ///   `.userCanceled`, `.interactionNotAllowed`.
    package static func authenticateWithFinger(lifetime: Duration, touchRequested: () -> Void) throws -> (
        proof: Data, state: Data
    ) {
        try deviceProof(
            AgentInterface.authenticateWithFinger, lifetime: lifetime, touchRequested: touchRequested,
            served: { ($0.proof, $0.state) }
        ) { environment in
            let state = try PolkitUserVerifier.verifyFinger(environment: environment) { _ in touchRequested() }
            return (.finger(state: state), state)
        }
    }

    /// Has the person touch one of the security keys paired with this process's user, as a
    /// companion `LAContext` evaluation does, and returns a proof that this process's reads of
    /// `.companion` items bound to that key offer, for `lifetime` (300 seconds at most): made by
    /// keychaind (`AuthenticateWithCompanion`) or, with the keychains in this process, here.
    /// `touchRequested` is called before the key is to be touched.
    /// - Returns: The proof, and the public key of the key that signed.
    /// - Throws: ``KeychainModel/KeychainError`` as a read that asks for a companion:
    ///   `.userCanceled`, `.authFailed`, `.interactionNotAllowed`.
    package static func authenticateWithCompanion(lifetime: Duration, touchRequested: () -> Void) throws -> (
        proof: Data, publicKey: Data
    ) {
        try deviceProof(
            AgentInterface.authenticateWithCompanion, lifetime: lifetime, touchRequested: touchRequested,
            served: { ($0.proof, $0.publicKey) }
        ) { environment in
            let key = try PolkitUserVerifier.verifyCompanion(
                environment: environment, touchRequested: touchRequested, pin: TerminalPrompt.securityKeyPIN)
            return (.companion(publicKey: key), key)
        }
    }

    /// A proof that the person answered with a device (the reader, a security key), and what it
    /// was made with: asked of keychaind with `method` (`touchRequested` called first), or, with
    /// the keychains in this process, by `here`, which asks and says what the person answered.
    private static func deviceProof<R: DBusArguments>(
        _ method: AgentInterface.Method<AgentInterface.AuthenticateOwnerArguments, R>, lifetime: Duration,
        touchRequested: () -> Void, served: (R) -> (Data, Data),
        here: ([String: String]) throws -> (ProofAnswer, Data)
    ) throws -> (Data, Data) {
        if let connection = try taskAgent() {
            touchRequested()
            return served(try connection.call(method, .init(seconds: proofSeconds(lifetime))))
        }
        let subject = try thisProcess()
        let (answer, madeWith) = try here(ProcessInfo.processInfo.environment)
        return (OwnerProofs.thisProcess.make(for: subject, answer: answer, lifetime: lifetime), madeWith)
    }

    /// This process, as proofs and polkit name it.
    /// - Throws: ``KeychainModel/KeychainError`` `.interactionNotAllowed` when it cannot be named.
    private static func thisProcess() throws -> ProcessSubject {
        do {
            return try ProcessSubject.current()
        } catch {
            throw KeychainError(.interactionNotAllowed, "this process cannot be named: \(error)")
        }
    }

    /// The whole seconds of a proof's `lifetime` that keychaind is asked for (at least one).
    private static func proofSeconds(_ lifetime: Duration) -> UInt32 {
        max(UInt32(clamping: lifetime.components.seconds), 1)
    }
}

extension Keychains {
    /// The domain state of fprintd's reader for this process's user, which a new
    /// `.biometryCurrentSet` item is bound to (``KeychainModel/StoredAccessControl/biometryState``):
    /// only a finger matched while the same fingers are enrolled reads it.
    /// - Throws: ``KeychainModel/KeychainError`` `.authFailed` when there is no reader or no
    ///   finger enrolled: such an item could never be read. (Decided here: Apple does not
    ///   document the case.)
    package static func fingerStateForNewItem() throws -> Data {
        let environment = ProcessInfo.processInfo.environment
        do {
            guard let enrolment = try FingerprintReader.enrolment(environment: environment) else {
                throw KeychainError(.authFailed, "there is no fingerprint reader to bind the item to")
            }
            guard !enrolment.fingers.isEmpty else {
                throw KeychainError(.authFailed, "no finger is enrolled to bind the item to")
            }
            return enrolment.state
        } catch let error as UserPresenceError {
            throw KeychainError(.authFailed, "the fingerprint reader cannot be used: \(error)")
        }
    }
}

extension Keychains {
    /// The security keys paired with this process's user (``UserPresence/SecurityKeyRegistry``),
    /// which a new `.companion` item is bound to (``KeychainModel/StoredAccessControl/companions``):
    /// only a touch of one of them reads it.
    /// - Throws: ``KeychainModel/KeychainError`` `.decode` when the list is malformed.
    package static func companionsForNewItem() throws -> [CompanionKey] {
        try SecurityKeyRegistry().keys().map(\.key)
    }
}
