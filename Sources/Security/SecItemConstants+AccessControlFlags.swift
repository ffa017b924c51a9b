// `SecAccessControlCreateFlags`: the conditions an access control object places on the use of an
// item, with Apple's bit positions. The `kSec…` constants are in SecItemConstants.swift, which
// scripts/generate-security-tables writes from scripts/tables/SecItemConstants.jsonl.

// MARK: - 1.10 Access control flags

/// Conditions an access control object places on the use of an item.
///
/// Combine them when calling ``SecAccessControlCreateWithFlags(_:_:_:_:)``. Raw values are
/// Apple's bit positions.
public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    /// The flags' bit field.
    public let rawValue: CFOptionFlags

    /// Creates flags from a bit field.
    ///
    /// - Parameter rawValue: The bits, with Apple's meanings.
    public init(rawValue: CFOptionFlags) {
        self.rawValue = rawValue
    }

    /// Requires the device owner to authenticate with biometry or the passcode.
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)

    /// Requires biometry, with any enrolled finger or face.
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)

    /// The former name of ``biometryAny``.
    @available(*, deprecated, renamed: "biometryAny")
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)

    /// Requires biometry, with a finger or face enrolled when the item was added.
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)

    /// The former name of ``biometryCurrentSet``.
    @available(*, deprecated, renamed: "biometryCurrentSet")
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)

    /// Requires the device passcode.
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)

    /// Requires a paired companion device to be nearby.
    public static let companion = SecAccessControlCreateFlags(rawValue: 1 << 5)

    /// The former name of ``companion``.
    @available(*, deprecated, renamed: "companion")
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)

    /// Satisfying any one of the other constraints is enough.
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)

    /// Every other constraint must be satisfied.
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)

    /// Applies the constraints to private-key operations (signing, key exchange).
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)

    /// Requires an application-provided password in addition to the other constraints.
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)
}
