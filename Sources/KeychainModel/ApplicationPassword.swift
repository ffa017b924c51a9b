import Foundation

/// What gives an application password to keychain operations: an `LAContext` (LocalAuthentication)
/// given as `kSecUseAuthenticationContext`, after `setCredential(_:type: .applicationPassword)`.
/// `Security` reads it through this protocol, since Apple's `Security` takes the context as an
/// untyped value and does not depend on LocalAuthentication.
package protocol ApplicationPasswordSource: AnyObject {
    /// The application password, if the context holds one and is still valid. The value shares
    /// the context's storage, which the context wipes when it is invalidated; a caller that
    /// wiped its copy would only wipe a new copy.
    func applicationPassword() -> Data?
}

/// What an `LAContext` given as `kSecUseAuthenticationContext` says of asking the person, read by
/// `Security` through this protocol for the same reason.
package protocol AuthenticationInteractionSource: AnyObject {
    /// Whether a keychain operation given the context may ask the person: not when the app set
    /// `interactionNotAllowed`, nor once the context is invalidated.
    var allowsInteraction: Bool { get }
}

/// What an `LAContext` evaluated with success proves, read by `Security` through this protocol
/// for the same reason: the proof its keychain reads offer (``ItemQuery/ownerProof``).
package protocol OwnerProofSource: AnyObject, Sendable {
    /// The proof of the context's last successful evaluation, while it lasts and the context
    /// is valid.
    func ownerProof() -> Data?
}
