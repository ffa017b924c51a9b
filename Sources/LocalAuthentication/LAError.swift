import Foundation

/// An error of ``LAContext``, in Apple's domain and with Apple's codes
/// (<https://developer.apple.com/documentation/localauthentication/laerror>).
public struct LAError: Error, Sendable, Equatable, CustomNSError, LocalizedError {
    /// Apple's codes.
    public enum Code: Int, Sendable {
        /// The person did not authenticate (a wrong password, too many times).
        case authenticationFailed = -1
        /// The person cancelled.
        case userCancel = -2
        /// The person chose the fallback.
        case userFallback = -3
        /// The system cancelled (another authentication took over).
        case systemCancel = -4
        /// The device has no way to authenticate its owner: on Linux, no polkit to ask through.
        case passcodeNotSet = -5
        /// No biometry on this device.
        case biometryNotAvailable = -6
        /// Biometry with nothing enrolled.
        case biometryNotEnrolled = -7
        /// Biometry locked after too many failures.
        case biometryLockout = -8
        /// The app cancelled (``LAContext/invalidate()``).
        case appCancel = -9
        /// The context was invalidated before the call.
        case invalidContext = -10
        /// No companion device (a FIDO2 security key on Linux).
        case companionNotAvailable = -11
        /// A paired biometric accessory is not paired.
        case biometryNotPaired = -12
        /// A paired biometric accessory is not connected.
        case biometryDisconnected = -13
        /// Invalid dimensions for the UI.
        case invalidDimensions = -14
        /// The context may not show UI (``LAContext/interactionNotAllowed``), or nobody can be
        /// asked.
        case notInteractive = -1004
    }

    /// Apple's error domain.
    public static let errorDomain = "com.apple.LocalAuthentication"

    /// Which error.
    public let code: Code
    /// What went wrong, in words (never a secret).
    public let message: String

    /// An error of `code`, saying `message`.
    public init(_ code: Code, _ message: String = "") {
        self.code = code
        self.message = message
    }

    // Apple's codes as `LAError.userCancel` names them.
    /// ``Code/authenticationFailed``.
    public static let authenticationFailed = Code.authenticationFailed
    /// ``Code/userCancel``.
    public static let userCancel = Code.userCancel
    /// ``Code/userFallback``.
    public static let userFallback = Code.userFallback
    /// ``Code/systemCancel``.
    public static let systemCancel = Code.systemCancel
    /// ``Code/passcodeNotSet``.
    public static let passcodeNotSet = Code.passcodeNotSet
    /// ``Code/biometryNotAvailable``.
    public static let biometryNotAvailable = Code.biometryNotAvailable
    /// ``Code/biometryNotEnrolled``.
    public static let biometryNotEnrolled = Code.biometryNotEnrolled
    /// ``Code/biometryLockout``.
    public static let biometryLockout = Code.biometryLockout
    /// ``Code/appCancel``.
    public static let appCancel = Code.appCancel
    /// ``Code/invalidContext``.
    public static let invalidContext = Code.invalidContext
    /// ``Code/companionNotAvailable``.
    public static let companionNotAvailable = Code.companionNotAvailable
    /// ``Code/notInteractive``.
    public static let notInteractive = Code.notInteractive

    /// Apple's code, as `NSError.code`.
    public var errorCode: Int { code.rawValue }
    /// The description, as `NSError.userInfo`.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: errorDescription ?? ""] }
    /// What went wrong.
    public var errorDescription: String? { message.isEmpty ? "\(code)" : message }

}

/// Matches an error against a code, as `catch LAError.userCancel` does on Apple platforms.
public func ~= (code: LAError.Code, error: any Error) -> Bool {
    (error as? LAError)?.code == code
}
