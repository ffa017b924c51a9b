// Cryptographically secure random bytes from the kernel.

internal import KeychainLibc

/// A reference to a random number generator; only ``kSecRandomDefault`` exists.
public typealias SecRandomRef = OpaquePointer

/// The default, cryptographically secure random number generator (the kernel's CSPRNG).
///
/// Any generator passed to ``SecRandomCopyBytes(_:_:_:)``, including `nil`, means this one.
// Apple's value is NULL behind a non-optional type; a non-optional `OpaquePointer` cannot be null,
// so a private one-byte allocation serves as the sentinel and keeps Apple's declared type.
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef = OpaquePointer(
    UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))

/// The most bytes `getentropy(3)` returns per call.
private let maximumEntropyRequest = 256

/// Fills a buffer with cryptographically secure random bytes.
///
/// ```swift
/// var key = [UInt8](repeating: 0, count: 32)
/// let status = SecRandomCopyBytes(kSecRandomDefault, key.count, &key)
/// guard status == errSecSuccess else { throw KeyError.noRandom }
/// ```
///
/// The bytes come from the kernel's CSPRNG through `getentropy(3)` (the `getrandom(2)` system
/// call), which blocks only until the kernel's generator is first seeded.
///
/// - Parameters:
///   - rnd: The generator; ignored, pass ``kSecRandomDefault`` or `nil`.
///   - count: The number of bytes to write.
///   - bytes: A buffer of at least `count` bytes.
/// - Returns: 0 on success; -1 on failure, with `errno` set (`EINVAL` for a negative count).
///   Callers must check it.
public func SecRandomCopyBytes(
    _ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer
) -> Int32 {
    guard count >= 0 else {
        errno = EINVAL
        return -1
    }
    var offset = 0
    while offset < count {
        let chunk = min(maximumEntropyRequest, count - offset)
        guard getentropy(bytes + offset, chunk) == 0 else { return -1 }
        offset += chunk
    }
    return 0
}
