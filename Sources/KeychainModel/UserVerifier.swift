import Foundation

/// Who asks the person, when a call that may ask (``ItemQuery/AuthenticationUI-swift.enum/allow``)
/// matches an item whose access control asks for its owner's authentication, in a process that
/// hosts the engine itself (``KeychainConfiguration/userVerifier``). keychaind asks for each of
/// its callers instead, outside the engine's queue, and runs the call again
/// (``KeychainError/Reason/authenticateUser``).
package protocol UserVerifier: Sendable {
    /// Returns at once when `proof` (``ItemQuery/ownerProof``) answers for this process; else
    /// asks the person to authenticate as this process's user, and returns once they have.
    /// - Throws: `KeychainError` `.userCanceled` when they cancel, `.authFailed` when they fail,
    ///   `.interactionNotAllowed` when nobody can ask them here.
    func verifyUser(proof: Data?) throws
}
