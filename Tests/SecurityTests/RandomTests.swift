// SecRandomCopyBytes: bytes from the kernel's CSPRNG, Apple's signature and return convention.

import Foundation
import KeychainLibc
import Security
import Testing

@Suite("SecRandomCopyBytes")
struct RandomTests {
    @Test("Fills exactly the requested bytes", arguments: [1, 16, 32, 255, 256, 257, 1000, 4096])
    func fillsRequestedBytes(_ count: Int) {
        // A canary after the requested range must survive; the range must change.
        let canary: UInt8 = 0xA5
        var buffer = [UInt8](repeating: canary, count: count + 8)
        let status = buffer.withUnsafeMutableBytes {
            SecRandomCopyBytes(kSecRandomDefault, count, $0.baseAddress!)
        }
        #expect(status == errSecSuccess)
        #expect(buffer[count...].allSatisfy { $0 == canary })
        // Any 8-byte window left all-canary would mean bytes were skipped (chance 2^-64 each).
        if count >= 8 {
            for start in stride(from: 0, to: count - 7, by: 8) {
                #expect(
                    !buffer[start..<start + 8].allSatisfy { $0 == canary }, "window at \(start)")
            }
        }
    }

    @Test("Two draws differ, and nil selects the default generator")
    func drawsDiffer() {
        var first = [UInt8](repeating: 0, count: 32)
        var second = [UInt8](repeating: 0, count: 32)
        #expect(SecRandomCopyBytes(kSecRandomDefault, first.count, &first) == 0)
        #expect(SecRandomCopyBytes(nil, second.count, &second) == 0)
        #expect(first != second)
        #expect(first != [UInt8](repeating: 0, count: 32))
    }

    @Test("A zero count succeeds and writes nothing")
    func zeroCount() {
        var byte: UInt8 = 0x5A
        #expect(SecRandomCopyBytes(kSecRandomDefault, 0, &byte) == errSecSuccess)
        #expect(byte == 0x5A)
    }

    @Test("A negative count fails with -1 and EINVAL")
    func negativeCount() {
        var byte: UInt8 = 0
        errno = 0
        #expect(SecRandomCopyBytes(kSecRandomDefault, -1, &byte) == -1)
        #expect(errno == EINVAL)
    }

    @Test("Bytes look uniform: each value appears in a large sample")
    func coversAllByteValues() {
        var sample = [UInt8](repeating: 0, count: 65_536)
        #expect(SecRandomCopyBytes(kSecRandomDefault, sample.count, &sample) == 0)
        var seen = Set<UInt8>()
        for byte in sample { seen.insert(byte) }
        // Each of the 256 values is missing from 65,536 uniform bytes with probability ~e^-256.
        #expect(seen.count == 256)
    }
}
