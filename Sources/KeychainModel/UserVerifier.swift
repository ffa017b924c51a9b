import Foundation

/// Who asks the person, when a call that may ask (``ItemQuery/AuthenticationUI-swift.enum/allow``)
/// matches an item whose access control asks for its owner's authentication, in a process that
/// hosts the engine itself (``KeychainConfiguration/userVerifier``). keychaind asks for each of
/// its callers instead, outside the engine's queue, and runs the call again
/// (``KeychainError/Reason/authenticateUser``). What is asked when is ``CallAuthentication``'s.
package protocol UserVerifier: Sendable {
    /// What `proof` (``ItemQuery/ownerProof``) answers for this process, if it was made here
    /// for it and has not expired.
    func answer(to proof: Data) -> ProofAnswer?

    /// Asks the person to authenticate as this process's user, and returns once they have.
    /// - Throws: `KeychainError` `.userCanceled` when they cancel, `.authFailed` when they fail,
    ///   `.interactionNotAllowed` when nobody can ask them here.
    func verifyUser() throws

    /// The fingerprint reader's domain state now (``FingerAnswer``), asking nobody.
    /// - Throws: `KeychainError` `.interactionNotAllowed` when there is no reader here.
    func fingerState() throws -> Data

    /// Has the person touch the reader, and returns once an enrolled finger matched.
    /// - Throws: `KeychainError` `.authFailed` when none did, `.userCanceled` when nobody touched
    ///   it, `.interactionNotAllowed` when there is no reader or nothing enrolled.
    func verifyFinger() throws

    /// Has the person touch one of the security keys paired with this user, and returns the
    /// public key of the one that signed.
    /// - Throws: `KeychainError` `.userCanceled` when nobody touched it or the key refused,
    ///   `.authFailed` when its signature does not verify, `.interactionNotAllowed` when no key is
    ///   paired or none is attached.
    func verifyCompanion() throws -> Data
}

extension UserVerifier {
    /// No proofs: a verifier that always asks.
    package func answer(to proof: Data) -> ProofAnswer? { nil }

    /// No reader: a verifier that asks only for the owner's authentication.
    package func fingerState() throws -> Data {
        throw KeychainError(.interactionNotAllowed, "no fingerprint reader can be asked here")
    }

    /// No reader: a verifier that asks only for the owner's authentication.
    package func verifyFinger() throws {
        throw KeychainError(.interactionNotAllowed, "no fingerprint reader can be asked here")
    }

    /// No security key: a verifier that asks only for the owner's authentication.
    package func verifyCompanion() throws -> Data {
        throw KeychainError(.interactionNotAllowed, "no security key can be asked here")
    }
}
