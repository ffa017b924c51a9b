/// What ``LAContext`` evaluates, with Apple's raw values
/// (<https://developer.apple.com/documentation/localauthentication/lapolicy>).
///
/// On Linux: ``deviceOwnerAuthentication`` is the user's own password (or whatever the system's
/// PAM stack for polkit asks), asked by the session's polkit authentication agent: the desktop's
/// dialog, or the keychain's own agent on the program's terminal (Ctrl-D cancels). The biometric policies are a finger on
/// fprintd's reader, claimed by the program for its user (three tries). The companion is a FIDO2
/// security key paired with the user's keychains (`security security-key add`), touched through
/// libfido2; "biometry or companion" is a finger when one is enrolled, else the key.
public enum LAPolicy: Int, Sendable {
    /// Biometry only.
    case deviceOwnerAuthenticationWithBiometrics = 1
    /// Biometry, or else the device's passcode: on Linux, the user's password through polkit.
    case deviceOwnerAuthentication = 2
    /// A companion device (an Apple Watch on Apple platforms; a FIDO2 key on Linux).
    case deviceOwnerAuthenticationWithCompanion = 3
    /// Biometry, or a companion device.
    case deviceOwnerAuthenticationWithBiometricsOrCompanion = 4
    /// Wrist detection (watchOS).
    case deviceOwnerAuthenticationWithWristDetection = 5

    /// The name of ``deviceOwnerAuthenticationWithCompanion`` before macOS 15.
    @available(*, deprecated, renamed: "deviceOwnerAuthenticationWithCompanion")
    public static let deviceOwnerAuthenticationWithWatch = LAPolicy.deviceOwnerAuthenticationWithCompanion
    /// The name of ``deviceOwnerAuthenticationWithBiometricsOrCompanion`` before macOS 15.
    @available(*, deprecated, renamed: "deviceOwnerAuthenticationWithBiometricsOrCompanion")
    public static let deviceOwnerAuthenticationWithBiometricsOrWatch =
        LAPolicy.deviceOwnerAuthenticationWithBiometricsOrCompanion

    /// Whether the policy may be answered by a finger on fprintd's reader: the biometric ones.
    var usesBiometry: Bool {
        self == .deviceOwnerAuthenticationWithBiometrics || self == .deviceOwnerAuthenticationWithBiometricsOrCompanion
    }

    /// Whether the policy is answered by a touch of a security key: the companion policy, and
    /// "biometry or companion" when no finger can be used (`fingerUsable` says whether one can).
    func usesCompanion(fingerUsable: () -> Bool) -> Bool {
        switch self {
        case .deviceOwnerAuthenticationWithCompanion: true
        case .deviceOwnerAuthenticationWithBiometricsOrCompanion: !fingerUsable()
        default: false
        }
    }
}

/// The biometry a device has (<https://developer.apple.com/documentation/localauthentication/labiometrytype>).
public enum LABiometryType: Int, Sendable {
    /// None.
    case none = 0
    /// A fingerprint reader (on Linux, through fprintd).
    case touchID = 1
    /// A face camera.
    case faceID = 2
    /// An iris camera.
    case opticID = 4
}

/// A credential an app gives a context (<https://developer.apple.com/documentation/localauthentication/lacredentialtype>).
public enum LACredentialType: Int, Sendable {
    /// The app's own password for items made with `.applicationPassword`.
    case applicationPassword = 0
    /// A smart card's PIN.
    case smartCardPIN = -3
}

/// What an access-controlled item or key is about to be used for
/// (<https://developer.apple.com/documentation/localauthentication/laaccesscontroloperation>).
public enum LAAccessControlOperation: Int, Sendable {
    /// Making an item.
    case createItem = 0
    /// Reading an item.
    case useItem = 1
    /// Making a key.
    case createKey = 2
    /// Signing with a key.
    case useKeySign = 3
    /// Decrypting with a key.
    case useKeyDecrypt = 4
    /// Agreeing a key.
    case useKeyKeyExchange = 5
}
