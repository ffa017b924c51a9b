import Foundation

/// The error thrown by ``KeychainServiceType`` implementations and ``KeychainItemType``'s
/// methods.
///
/// ``osStatus`` is Apple's `OSStatus` for the failure. As an `NSError` its domain is
/// `"swift.keychain.error"` and its code the `OSStatus`, as in the original SwiftKeychain.
/// The message never contains a secret or a stored value.
public struct SwiftKeychainError: Error, Sendable, CustomNSError, CustomStringConvertible {
    /// The Apple `OSStatus`, such as -25308 (`errSecInteractionNotAllowed`).
    public var osStatus: Int32
    /// An explanation free of secrets.
    public var message: String
    /// The lower-level failure, such as a ``KeychainModel/KeychainError``.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    /// - Parameters:
    ///   - osStatus: The Apple `OSStatus`.
    ///   - message: An explanation that contains no secret.
    ///   - underlying: The lower-level failure, if any.
    public init(osStatus: Int32, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.osStatus = osStatus
        self.message = message
        self.underlying = underlying
    }

    /// `"swift.keychain.error"`.
    public static var errorDomain: String { "swift.keychain.error" }
    /// The `OSStatus`.
    public var errorCode: Int { Int(osStatus) }
    /// The message, as the localized description.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }

    /// The status and the message; never a secret.
    public var description: String {
        var text = "SwiftKeychainError(OSStatus \(osStatus)): \(message)"
        if let underlying { text += " [\(underlying)]" }
        return text
    }

    /// errSecItemNotFound (-25300): the item to fetch or remove does not exist.
    public static let itemNotFoundStatus: Int32 = -25300
    /// errSecParam (-50): a parameter was not valid.
    public static let parameterStatus: Int32 = -50
    /// errSecDecode (-26275): stored data could not be decoded.
    public static let decodeStatus: Int32 = -26275
}
