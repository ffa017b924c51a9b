import Foundation

/// What gives an application password to keychain operations: an `LAContext` (LocalAuthentication)
/// given as `kSecUseAuthenticationContext`, after `setCredential(_:type: .applicationPassword)`.
/// `Security` reads it through this protocol, since Apple's `Security` takes the context as an
/// untyped value and does not depend on LocalAuthentication.
package protocol ApplicationPasswordSource: AnyObject {
    /// A copy of the application password, if the context holds one and is still valid (the
    /// caller wipes it after use).
    func applicationPasswordCopy() -> Data?
}
