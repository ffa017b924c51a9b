// Access control objects: an accessibility class plus optional authentication constraints.
//
// Linux has no biometry, passcode or companion device; the flags are validated and kept exactly as
// on Apple platforms, and the keychain decides how to treat them (docs/libraries.md, "Security").

public import _SecurityFoundation

/// An item's accessibility and the conditions under which it can be used.
///
/// Create one with ``SecAccessControlCreateWithFlags(_:_:_:_:)`` and pass it as the value of
/// ``kSecAttrAccessControl`` instead of ``kSecAttrAccessible``.
public final class SecAccessControl: Sendable, Hashable, CustomStringConvertible {
    /// The raw value of the accessibility class, such as `"ak"`.
    package let protectionValue: String

    /// The flags the object was created with.
    package let flags: SecAccessControlCreateFlags

    /// The accessibility class, equal to one of the `kSecAttrAccessible…` constants.
    package var protection: CFString {
        NSString(string: protectionValue)
    }

    /// Creates an access control object from already validated parts.
    ///
    /// - Parameters:
    ///   - protectionValue: The raw value of a `kSecAttrAccessible…` constant.
    ///   - flags: The constraints.
    package init(protectionValue: String, flags: SecAccessControlCreateFlags) {
        self.protectionValue = protectionValue
        self.flags = flags
    }

    /// A description such as `<SecAccessControlRef: ak>`, followed by the flags' bits if any.
    public var description: String {
        if flags.isEmpty {
            return "<SecAccessControlRef: \(protectionValue)>"
        }
        return
            "<SecAccessControlRef: \(protectionValue);flags(0x\(String(flags.rawValue, radix: 16)))>"
    }

    /// Two access control objects are equal if they have the same accessibility and flags.
    public static func == (lhs: SecAccessControl, rhs: SecAccessControl) -> Bool {
        lhs.protectionValue == rhs.protectionValue && lhs.flags == rhs.flags
    }

    /// Hashes the accessibility and the flags.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(protectionValue)
        hasher.combine(flags)
    }
}

/// The accessibility values an access control object accepts, in Apple's order.
///
/// The six public values plus the SPI "until reboot" class `"f"`; `kSecAttrAccessibleAlways` and
/// `kSecAttrAccessibleAlwaysThisDeviceOnly` share the values `"dk"` and `"dku"`.
private let validProtectionValues: Set<String> = [
    "dk", "ck", "ak", "dku", "cku", "aku", "akpu", "f",
]

/// Creates an access control object with an accessibility class and authentication constraints.
///
/// ```swift
/// var error: Unmanaged<CFError>?
/// guard let access = SecAccessControlCreateWithFlags(
///     nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, &error)
/// else { throw error!.takeRetainedValue() as Error }
/// ```
///
/// The same combinations as on Apple platforms are rejected, in the same order: a protection that
/// is not a `kSecAttrAccessible…` value; ``SecAccessControlCreateFlags/or`` together with
/// ``SecAccessControlCreateFlags/and``; ``SecAccessControlCreateFlags/biometryAny`` together with
/// ``SecAccessControlCreateFlags/biometryCurrentSet``; and
/// ``SecAccessControlCreateFlags/userPresence`` with anything but
/// ``SecAccessControlCreateFlags/applicationPassword`` and
/// ``SecAccessControlCreateFlags/privateKeyUsage``.
///
/// - Parameters:
///   - allocator: Ignored; pass `nil` or ``kCFAllocatorDefault``.
///   - protection: One of the `kSecAttrAccessible…` constants (a `String` with the same value is
///     accepted too).
///   - flags: The constraints; empty for none.
///   - error: On failure, receives a retained error in ``kCFErrorDomainOSStatus`` with code
///     `errSecParam` (-50) and a description of the problem. May be `nil`.
/// - Returns: The new object, or `nil` if the arguments are not valid.
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?,
    _ protection: CFTypeRef,
    _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    func fail(_ message: String) -> SecAccessControl? {
        guard let error else { return nil }
        // Like Apple's SecError, consume an error already in the slot as the underlying error.
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: message]
        if let previous = error.pointee?.takeRetainedValue() {
            userInfo[NSUnderlyingErrorKey] = previous
        }
        error.pointee = Unmanaged.passRetained(
            NSError(domain: NSOSStatusErrorDomain, code: Int(errSecParam), userInfo: userInfo))
        return nil
    }

    guard let protectionValue = protection as? String,
        validProtectionValues.contains(protectionValue)
    else {
        return fail("SecAccessControl: invalid protection: \(protection)")
    }
    if flags.contains(.or) && flags.contains(.and) {
        return fail("only one logical operation can be set")
    }
    if flags.isSuperset(of: [.biometryAny, .biometryCurrentSet]) {
        return fail("only one bio constraint can be set")
    }
    let userPresenceCompanions: SecAccessControlCreateFlags = [
        .userPresence, .applicationPassword, .privateKeyUsage,
    ]
    if flags.contains(.userPresence) && !userPresenceCompanions.isSuperset(of: flags) {
        return fail(
            "kSecAccessControlUserPresence can be combined only with "
                + "kSecAccessControlApplicationPassword and kSecAccessControlPrivateKeyUsage")
    }
    return SecAccessControl(protectionValue: protectionValue, flags: flags)
}
