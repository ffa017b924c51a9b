import Foundation
import KeychainModel

/// Asks the person through polkit (`org.keychainlinux.authenticate`, `auth_self`), for the
/// keychain: the one place that says what each polkit outcome is to a keychain caller.
///
/// In a process that hosts the engine itself (``KeychainModel/KeychainConfiguration/userVerifier``)
/// it asks for that process, with polkit's text agent on its terminal when it has one; keychaind
/// asks for each caller with ``verify(_:environment:)``, the caller having started its own agent
/// (``TerminalAgent``) when it has a terminal.
public struct PolkitUserVerifier: UserVerifier {
    /// A verifier for this process.
    public init() {}

    package func verifyUser(proof: Data?) throws {
        let subject: ProcessSubject
        do {
            subject = try ProcessSubject.current()
        } catch {
            throw KeychainError(.interactionNotAllowed, "this process cannot be named to polkit: \(error)")
        }
        if let proof, OwnerProofs.thisProcess.accepts(proof, for: subject) { return }
        let agent = TerminalAgent.start(for: subject)
        defer { agent?.stop() }
        try Self.verify(subject, environment: ProcessInfo.processInfo.environment)
    }

    /// Asks polkit to have the person authenticate as `subject`'s user, and waits for the answer.
    /// - Throws: `KeychainError`: `.userCanceled` when the person dismisses the dialog,
    ///   `.authFailed` when they fail, `.interactionNotAllowed` when polkit has nobody to ask
    ///   with or cannot be reached.
    public static func verify(_ subject: ProcessSubject, environment: [String: String]) throws {
        let outcome: PolkitAuthority.Outcome
        do {
            outcome = try PolkitAuthority.check(subject, interactive: true, environment: environment)
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
                .interactionNotAllowed, "no authentication agent can ask the person (no desktop agent, no terminal)")
        }
    }
}
