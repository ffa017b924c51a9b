// Shared web credentials (https://developer.apple.com/documentation/security/shared-web-credentials):
// passwords Safari and apps with an associated-domains entitlement share. Linux has neither
// Safari's password store nor entitlements, so these functions answer as Apple's do on a
// platform built without shared web credentials (`OSX/sec/Security/SecSharedCredential.c`): the
// completion handler is called later, on another thread, with `errSecParam`. Generating a
// password works as it does everywhere.

public import _SecurityFoundation

/// The dictionary key of a shared credential's password (`"spwd"`).
nonisolated(unsafe) public let kSecSharedPassword: CFString = SecConstantString("spwd")

/// Stores a shared web credential: unsupported on Linux.
///
/// - Parameters:
///   - fqdn: The website's domain name.
///   - account: The account name.
///   - password: The password, or `nil` to remove the credential.
///   - completionHandler: Called asynchronously with an error of code `errSecParam`
///     ("SharedWebCredentials not supported on this platform").
public func SecAddSharedWebCredential(
    _ fqdn: CFString, _ account: CFString, _ password: CFString?,
    _ completionHandler: @escaping @Sendable (CFError?) -> Void
) {
    DispatchQueue.global().async { completionHandler(sharedWebCredentialsUnsupported()) }
}

/// Asks for shared web credentials: unsupported on Linux.
///
/// - Parameters:
///   - fqdn: The website's domain name, or `nil` for any of the app's.
///   - account: The account name, or `nil` for any.
///   - completionHandler: Called asynchronously with no credentials and an error of code
///     `errSecParam` ("SharedWebCredentials not supported on this platform").
public func SecRequestSharedWebCredential(
    _ fqdn: CFString?, _ account: CFString?, _ completionHandler: @escaping @Sendable (CFArray?, CFError?) -> Void
) {
    DispatchQueue.global().async { completionHandler(nil, sharedWebCredentialsUnsupported()) }
}

/// Returns a random password of the form `xxx-xxx-xxx-xxx`, from characters that are not easily
/// confused (no `i`, `j`, `l`, `I`, `O`, `0`, `1`), with at least one lowercase letter, one
/// uppercase letter and one digit from 3 to 9, as Apple's does.
///
/// - Returns: The password.
public func SecCreateSharedWebCredentialPassword() -> CFString? {
    let lowercase = Array("abcdefghkmnopqrstuvwxyz")
    let uppercase = Array("ABCDEFGHJKLMNPQRSTUVWXYZ")
    let allowed = lowercase + uppercase + Array("23456789")
    var generator = SystemRandomNumberGenerator()
    while true {
        let characters = (0..<12).map { _ in allowed.randomElement(using: &generator)! }
        guard characters.contains(where: lowercase.contains), characters.contains(where: uppercase.contains),
            characters.contains(where: { ("3"..."9").contains($0) })
        else { continue }
        let groups = stride(from: 0, to: 12, by: 3).map { String(characters[$0..<$0 + 3]) }
        return groups.joined(separator: "-") as NSString
    }
}

private func sharedWebCredentialsUnsupported() -> CFError {
    NSError(
        domain: NSOSStatusErrorDomain, code: Int(errSecParam),
        userInfo: [NSLocalizedDescriptionKey: "SharedWebCredentials not supported on this platform"])
}
