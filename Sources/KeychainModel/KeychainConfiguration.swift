import Foundation

/// How a keychain handle is opened and behaves.
///
/// ```swift
/// var configuration = KeychainConfiguration()
/// configuration.accessGroups = AccessGroups(["com.example.app"])
/// let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
/// ```
public struct KeychainConfiguration: Sendable {
    /// Where the device key comes from.
    public var deviceKey: DeviceKeySource
    /// The key derivation used when a password is set (creation or password change).
    public var keyDerivation: KeyDerivation
    /// Whether keychains whose key derivation is weaker than the production floor may be
    /// created and opened. For tests only, with ``KeyDerivation/unsafeTestingOnly``.
    public var allowsUnsafeKeyDerivation: Bool
    /// The access groups this handle may use (iOS's rules: `SecServerAccessGroupsAllows`,
    /// `keychain/securityd/SecItemServer.c`).
    public var accessGroups: AccessGroups
    /// How long a write waits for another process's transaction before failing.
    public var busyTimeout: TimeInterval
    /// The largest secret accepted, in bytes (larger ones are `.parameter`).
    public var maximumDataSize: Int
    /// The largest attribute value accepted, in bytes.
    public var maximumAttributeSize: Int
    /// Whether reads run in parallel, each on a connection of its own (a pool, the default).
    /// `false` opens the keychain on a single connection that reads and writes in turn: what a
    /// short-lived process that makes a few calls on one thread wants, since it opens in
    /// about half the time.
    public var concurrentReads: Bool = true
    /// The keychains whose passwords are entangled with this machine's hardware (a TPM), and
    /// how; `nil` (the default) seals none, and a keychain sealed before then does not open.
    public var hardwareSealing: HardwareSealing?
    /// The hardware that makes and uses Secure Enclave keys (`kSecAttrTokenIDSecureEnclave`),
    /// a TPM; `nil` (the default) keeps them in this process's memory. Keys made in hardware
    /// need it to be used.
    package var tokenKeyHardware: (any TokenKeyHardware)?
    /// Who asks the person for a call that may ask and matches an item whose access control asks
    /// for its owner's authentication; `nil` (the default): nobody, and such a call fails with
    /// ``KeychainError/Reason/authenticateUser`` for its host to ask.
    package var userVerifier: (any UserVerifier)?

    /// Creates a configuration; every argument has a production default.
    public init(
        deviceKey: DeviceKeySource = .standard,
        keyDerivation: KeyDerivation = .default,
        allowsUnsafeKeyDerivation: Bool = false,
        accessGroups: AccessGroups = .fromEnvironment(),
        busyTimeout: TimeInterval = 30,
        maximumDataSize: Int = defaultMaximumDataSize,
        maximumAttributeSize: Int = defaultMaximumAttributeSize
    ) {
        self.deviceKey = deviceKey
        self.keyDerivation = keyDerivation
        self.allowsUnsafeKeyDerivation = allowsUnsafeKeyDerivation
        self.accessGroups = accessGroups
        self.busyTimeout = busyTimeout
        self.maximumDataSize = maximumDataSize
        self.maximumAttributeSize = maximumAttributeSize
    }

    /// The default largest secret: 4 MiB.
    public static let defaultMaximumDataSize = 4 << 20
    /// The default largest attribute value: 64 KiB.
    public static let defaultMaximumAttributeSize = 64 << 10

    /// A configuration for tests: the cheap test-only key derivation is allowed and used,
    /// every access group is allowed, and the device key is `deviceKey`.
    public static func testing(deviceKey: DeviceKeySource = .ephemeral()) -> KeychainConfiguration {
        KeychainConfiguration(
            deviceKey: deviceKey, keyDerivation: .unsafeTestingOnly,
            allowsUnsafeKeyDerivation: true, accessGroups: .standard)
    }
}
