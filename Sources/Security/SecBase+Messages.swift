// What `SecCopyErrorMessageString` says of a status code: the message of a known code, from
// `secBaseStatusTable` (SecBase.swift, which scripts/generate-security-tables writes from
// scripts/tables/SecBase.jsonl), the C library's text for an `errno` code, or the number.

public import _SecurityFoundation

internal import KeychainLibc

/// A status code of `SecBase.h` with its identifier and the message of its header comment.
package struct SecStatusDescription: Sendable {
    /// The status code.
    package let status: OSStatus
    /// The code's identifier, such as `"errSecItemNotFound"`.
    package let name: String
    /// The comment that follows the code in `SecBase.h`, or `nil` if it has none.
    package let message: String?

    init(_ status: OSStatus, _ name: String, _ message: String?) {
        self.status = status
        self.name = name
        self.message = message
    }
}

/// ``secBaseStatusTable`` indexed by status code.
private let secBaseStatusIndex: [OSStatus: SecStatusDescription] = Dictionary(
    uniqueKeysWithValues: secBaseStatusTable.map { ($0.status, $0) })

/// The first status code that carries a POSIX `errno` value (`errSecErrnoBase` + errno).
private let errnoStatusBase: OSStatus = 100_000

/// The last status code that carries a POSIX `errno` value (`errSecErrnoLimit`).
private let errnoStatusLimit: OSStatus = 100_255

/// Returns the message `SecCopyErrorMessageString` gives for a status code.
///
/// - Parameter status: Any status code.
/// - Returns: The header message of a known code; the identifier of a known code without a
///   message; `UNIX[<strerror>]` for 100000…100255; otherwise `OSStatus <n>`.
package func secErrorMessage(_ status: OSStatus) -> String {
    if let known = secBaseStatusIndex[status] {
        return known.message ?? known.name
    }
    if (errnoStatusBase...errnoStatusLimit).contains(status) {
        return "UNIX[\(String(cString: strerror(status - errnoStatusBase)))]"
    }
    return "OSStatus \(status)"
}

/// Returns a string that describes a status code.
///
/// ```swift
/// let status = SecItemCopyMatching(query as CFDictionary, &result)
/// if status != errSecSuccess, let message = SecCopyErrorMessageString(status, nil) {
///     print(message)  // "The specified item could not be found in the keychain."
/// }
/// ```
///
/// Known codes give the message of Apple's `SecBase.h` (a code without one gives its name, such
/// as `errSecInternalComponent`); 100000…100255 give `UNIX[<strerror(status - 100000)>]` with the
/// C library's text; any other value gives `OSStatus <n>`.
///
/// - Parameters:
///   - status: A status code returned by a Security function.
///   - reserved: Reserved; pass `nil`.
/// - Returns: A new string; never `nil` on Linux.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?)
    -> CFString?
{
    NSString(string: secErrorMessage(status))
}
