import Foundation
import KeychainModel

/// Asks the person through polkit (`org.keychainlinux.authenticate`, `auth_self`), for the
/// keychain: the one place that says what each polkit outcome is to a keychain caller.
///
/// In a process that hosts the engine itself (``KeychainModel/KeychainConfiguration/userVerifier``)
/// it asks for that process, with polkit's text agent on its terminal when it has one; keychaind
/// asks for each caller with ``verify(_:environment:)``, the caller having started its own agent
/// (``TerminalAgent``) when it has a terminal. Items that ask for biometry are answered by a
/// finger on fprintd's reader instead (``verifyFinger(environment:)``).
public struct PolkitUserVerifier: UserVerifier {
    /// A verifier for this process.
    public init() {}

    package func answer(to proof: Data) -> ProofAnswer? {
        guard let subject = try? ProcessSubject.current() else { return nil }
        return OwnerProofs.thisProcess.answer(to: proof, for: subject)
    }

    package func verifyUser() throws {
        let subject: ProcessSubject
        do {
            subject = try ProcessSubject.current()
        } catch {
            throw KeychainError(.interactionNotAllowed, "this process cannot be named to polkit: \(error)")
        }
        let agent = TerminalAgent.start(for: subject)
        defer { agent?.stop() }
        try Self.verify(subject, environment: ProcessInfo.processInfo.environment)
    }

    package func fingerState() throws -> Data {
        try Self.fingerState(environment: ProcessInfo.processInfo.environment)
    }

    package func verifyFinger() throws {
        try Self.verifyFinger(environment: ProcessInfo.processInfo.environment) {
            TerminalHint.write(TerminalHint.touchReader($0.name))
        }
    }

    package func verifyCompanion() throws -> Data {
        try Self.verifyCompanion(
            environment: ProcessInfo.processInfo.environment,
            touchRequested: { TerminalHint.write(TerminalHint.touchSecurityKey) }, pin: TerminalPrompt.securityKeyPIN)
    }

    /// Has the person touch one of the security keys paired with the user whose keychain
    /// configuration `environment` names (``SecurityKeyRegistry``); `touchRequested` is called
    /// when a key that holds a paired credential waits.
    /// - Returns: The public key of the one that signed.
    /// - Throws: `KeychainError`, as ``SecurityKey/authenticate(_:touchRequested:pin:)``; `.decode`
    ///   when the list of paired keys is malformed.
    public static func verifyCompanion(
        environment: [String: String], touchRequested: () -> Void = {}, pin: SecurityKeyPINSource? = nil
    ) throws -> Data {
        let registry = SecurityKeyRegistry(paths: KeychainPaths(environment: environment))
        let paired = try registry.keys()
        return try registry.inTurn {
            try SecurityKey.authenticate(paired, touchRequested: touchRequested, pin: pin).publicKey
        }
    }

    /// The domain state of fprintd's reader for this process's user
    /// (``FingerprintReader/domainState(reader:fingers:)``), asking nobody; with no finger
    /// enrolled, the state of none.
    /// - Throws: `KeychainError` `.interactionNotAllowed` when there is no reader, or fprintd
    ///   cannot be reached or refuses.
    public static func fingerState(environment: [String: String]) throws -> Data {
        do {
            guard let enrolment = try FingerprintReader.enrolment(environment: environment) else {
                throw KeychainError(.interactionNotAllowed, "there is no fingerprint reader")
            }
            return enrolment.state
        } catch let error as UserPresenceError {
            throw KeychainError(.interactionNotAllowed, "the fingerprint reader cannot be used: \(error)")
        }
    }

    /// Has the person touch fprintd's reader, claimed for this process's user, and waits until an
    /// enrolled finger matches; `touchRequested` is called with the reader when it waits (to
    /// tell a terminal, which the reader gives no sign to).
    /// - Returns: The reader's domain state the finger matched in.
    /// - Throws: `KeychainError`: `.authFailed` after three fingers that did not match,
    ///   `.userCanceled` when nobody touched the reader in time, `.interactionNotAllowed` when
    ///   there is no reader, nothing is enrolled, or fprintd refuses.
    @discardableResult
    public static func verifyFinger(
        environment: [String: String], touchRequested: (FingerprintReader) -> Void = { _ in }
    ) throws -> Data {
        let outcome: FingerprintReader.Outcome
        let enrolment: FingerprintReader.Enrolment
        do {
            guard let found = try FingerprintReader.enrolment(environment: environment) else {
                throw KeychainError(.interactionNotAllowed, "there is no fingerprint reader")
            }
            guard !found.fingers.isEmpty else {
                throw KeychainError(.interactionNotAllowed, "no finger is enrolled on the reader")
            }
            enrolment = found
            outcome = try found.reader.verify(environment: environment) { touchRequested(found.reader) }
        } catch let error as UserPresenceError {
            throw KeychainError(.interactionNotAllowed, "the fingerprint reader cannot be used: \(error)")
        }
        switch outcome {
        case .matched: return enrolment.state
        case .failed: throw KeychainError(.authFailed, "no enrolled finger matched")
        case .timedOut: throw KeychainError(.userCanceled, "nobody touched the fingerprint reader")
        case .disconnected: throw KeychainError(.interactionNotAllowed, "the fingerprint reader failed")
        }
    }

    /// Asks polkit to have the person authenticate as `subject`'s user, and waits for the answer.
    /// - Throws: `KeychainError`: `.userCanceled` when the person dismisses the dialog,
    ///   `.authFailed` when they fail, `.interactionNotAllowed` when polkit has nobody to ask
    ///   with or cannot be reached.
    ///
    /// With `answering`, a process that polkit has no agent for is asked through it instead
    /// (``PolkitAuthority/check(_:interactive:environment:timeout:answering:)``).
    public static func verify(
        _ subject: ProcessSubject, environment: [String: String], answering: PolkitAnswering? = nil
    ) throws {
        let outcome: PolkitAuthority.Outcome
        do {
            outcome = try PolkitAuthority.check(
                subject, interactive: true, environment: environment, answering: answering)
        } catch {
            throw KeychainError(.interactionNotAllowed, "the owner cannot be authenticated here: \(error)")
                .because(.ownerAuthenticationUnavailable)
        }
        switch outcome {
        case .authorized: return
        case .cancelled: throw KeychainError(.userCanceled, "the person cancelled the authentication")
        case .failed: throw KeychainError(.authFailed, "the person did not authenticate")
        case .noAgent:
            throw KeychainError(
                .interactionNotAllowed, "no authentication agent can ask the person (no desktop agent, no terminal)"
            ).because(.noAuthenticationAgent)
        }
    }
}
