// The Core Foundation vocabulary that keychain code uses, for Linux.
//
// On Apple platforms these names come from CoreFoundation and are toll-free bridged to their
// Foundation counterparts. swift-corelibs-foundation keeps its CoreFoundation private, so this
// module declares each name as an alias of the Foundation class that plays the same role (a
// class type, never a Swift value type, as `CFString` is toll-free bridged with `NSString`:
// https://developer.apple.com/documentation/corefoundation/cfstring). Keychain code written for
// Apple platforms — `[kSecClass: kSecClassGenericPassword] as CFDictionary`,
// `Unmanaged<CFError>`, `status == errSecSuccess` — then compiles unchanged.

public import _SecurityFoundation

/// A status code returned by Security functions: `errSecSuccess` (0) or a negative error code.
public typealias OSStatus = Int32

/// The status code that means success; the same value as `errSecSuccess`.
public let noErr: OSStatus = 0

/// A reference to any Core Foundation object (any class instance on Linux).
public typealias CFTypeRef = AnyObject

/// An immutable string; an alias of `NSString`, so keychain constants are class instances.
public typealias CFString = NSString

/// An immutable byte buffer; an alias of `NSData`.
public typealias CFData = NSData

/// An immutable dictionary; an alias of `NSDictionary`.
public typealias CFDictionary = NSDictionary

/// A mutable dictionary; an alias of `NSMutableDictionary`.
public typealias CFMutableDictionary = NSMutableDictionary

/// An immutable array; an alias of `NSArray`.
public typealias CFArray = NSArray

/// A Boolean object such as ``kCFBooleanTrue``; an alias of `NSNumber`.
public typealias CFBoolean = NSNumber

/// A number object; an alias of `NSNumber`.
public typealias CFNumber = NSNumber

/// A point in time; an alias of `NSDate`.
public typealias CFDate = NSDate

/// An error object with a domain, a code and a user-info dictionary; an alias of `NSError`.
public typealias CFError = NSError

/// The name of an error domain, such as ``kCFErrorDomainOSStatus``.
public typealias CFErrorDomain = CFString

/// A bit field of option flags.
public typealias CFOptionFlags = UInt

/// An index or a count in Core Foundation collections.
public typealias CFIndex = Int

/// Four characters packed big-endian into 32 bits, such as a keychain item's creator or type
/// code (`kSecAttrCreator`, `kSecAttrType`).
public typealias FourCharCode = UInt32

/// A four-character type code; the same as ``FourCharCode``.
public typealias OSType = FourCharCode

/// A memory allocator; Linux ignores allocators, so pass `nil` or ``kCFAllocatorDefault``.
public final class CFAllocator: Sendable {
    private init() {}
}

/// The default allocator; `nil`, exactly as on Apple platforms.
public let kCFAllocatorDefault: CFAllocator! = nil

/// The Boolean object for `true`, for query values such as `kSecReturnData`.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)

/// The Boolean object for `false`.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

/// The null object; an alias of `NSNull`.
public typealias CFNull = NSNull

/// The null object, for query values that mean "none" or "now" (`kSecMatchValidOnDate: kCFNull`).
public let kCFNull: CFNull! = NSNull()

/// The error domain of `OSStatus` codes, the domain of every keychain error.
nonisolated(unsafe) public let kCFErrorDomainOSStatus: CFErrorDomain = NSString(
    string: NSOSStatusErrorDomain)

/// The key of a bundle's identifier in its information dictionary: `"CFBundleIdentifier"`.
///
/// Keychain libraries derive a default service name from it:
///
/// ```swift
/// let service = Bundle.main.infoDictionary?[String(kCFBundleIdentifierKey)] as? String ?? "fallback"
/// ```
nonisolated(unsafe) public let kCFBundleIdentifierKey: CFString! = SecConstantString("CFBundleIdentifier")

/// Returns the error code of an error (an `OSStatus` for errors in ``kCFErrorDomainOSStatus``).
///
/// - Parameter err: The error to examine.
/// - Returns: The error's code.
public func CFErrorGetCode(_ err: CFError!) -> CFIndex {
    err.code
}

/// Returns the domain of an error.
///
/// - Parameter err: The error to examine.
/// - Returns: The error's domain, for instance ``kCFErrorDomainOSStatus``.
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! {
    NSString(string: err.domain)
}

/// Returns a copy of the user-info dictionary of an error.
///
/// - Parameter err: The error to examine.
/// - Returns: The error's user-info dictionary, empty if it has none.
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! {
    NSDictionary(dictionary: err.userInfo)
}

/// Returns a human-readable description of an error.
///
/// - Parameter err: The error to describe.
/// - Returns: The error's localized description.
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! {
    NSString(string: err.localizedDescription)
}
