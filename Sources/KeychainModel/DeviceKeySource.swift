import Foundation

/// Where the device key comes from: the random key that protects password-less keychains,
/// the "always" class and the "this device only" classes.
///
/// The standard source is a file outside the data directory
/// (``KeychainPaths/deviceKeyFile``), created with mode 0600 on first use.
public struct DeviceKeySource: Sendable {
    /// Where the key is: a file (`nil`: the standard one), or the key's bytes.
    package enum Storage: Sendable {
        case file(String?)
        case fixed(KeyBytes)
    }

    /// Where the key is.
    package let storage: Storage

    /// The device key file of the process's environment (see ``KeychainPaths``).
    public static let standard = DeviceKeySource(storage: .file(nil))

    /// A device key kept in a file at `path`, created on first use.
    public static func file(at path: String) -> DeviceKeySource {
        DeviceKeySource(storage: .file(path))
    }

    /// A given 32-byte device key (for tests and for keychains kept only in memory).
    public static func fixed(_ bytes: Data) -> DeviceKeySource {
        DeviceKeySource(storage: .fixed(KeyBytes(bytes)))
    }

    /// A new random device key, remembered only by the returned value.
    public static func ephemeral() -> DeviceKeySource {
        DeviceKeySource(storage: .fixed(KeyBytes(randomCount: 32)))
    }

    /// A key's bytes, zeroed when the last value that holds them is released (as swift-crypto's
    /// `SymmetricKey` keeps them; this module does not link swift-crypto).
    package final class KeyBytes: @unchecked Sendable {
        // Written once, in an initializer; only read after.
        private let buffer: UnsafeMutableRawBufferPointer

        /// A copy of `bytes`.
        init(_ bytes: Data) {
            buffer = .allocate(byteCount: bytes.count, alignment: 1)
            buffer.copyBytes(from: bytes)
        }

        /// `count` bytes from the system's cryptographically secure generator (`getrandom(2)`
        /// on Linux).
        init(randomCount count: Int) {
            buffer = .allocate(byteCount: count, alignment: 8)
            var generator = SystemRandomNumberGenerator()
            for offset in stride(from: 0, to: count, by: 8) {
                Swift.withUnsafeBytes(of: generator.next() as UInt64) { random in
                    for index in 0..<min(8, count - offset) { buffer[offset + index] = random[index] }
                }
            }
        }

        /// Runs `body` with the bytes.
        package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try body(UnsafeRawBufferPointer(buffer))
        }

        deinit {
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            buffer.deallocate()
        }
    }
}
