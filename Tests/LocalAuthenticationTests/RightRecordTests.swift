import Foundation
@testable import LocalAuthentication
import Security
import Testing

/// The record a saved right keeps readable: what it holds comes back, and bytes that are not a
/// record are refused, never trusted.
@Suite("LARightStore's record of a right")
struct RightRecordTests {
    /// A P-256 public key in X9.63 form.
    static func publicKey() throws -> Data {
        let parameters: [CFString: Any] = [
            kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
        ]
        let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, nil))
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        return try #require(SecKeyCopyExternalRepresentation(publicKey, nil) as Data?)
    }

    static let requirements: [LAAuthenticationRequirement] = [
        .default, .biometry, .biometryCurrentSet, .biometry(fallback: .devicePasscode), .biometry(fallback: .default),
    ]

    @Test("each requirement comes back with its key, and its access control flags", arguments: requirements.indices)
    func roundTrip(index: Int) throws {
        let requirement = Self.requirements[index]
        let key = try Self.publicKey()
        let record = try #require(
            PersistedRecord(serialized: PersistedRecord(requirement: requirement, publicKey: key).serialized))
        #expect(record.requirement.kind == requirement.kind && record.publicKey == key)
        let expected: [UInt] = [1 << 0, 1 << 1, 1 << 3, 1 << 1 | 1 << 14 | 1 << 4, 1 << 1]
        #expect(requirement.accessControlFlags.rawValue == expected[index])
    }

    @Test(
        "bytes that are not a record are refused: empty, cut, too long, another version or requirement, a point off the curve"
    )
    func malformed() throws {
        let valid = PersistedRecord(requirement: .default, publicKey: try Self.publicKey()).serialized
        var offCurve = valid
        offCurve[40] ^= 0x01
        var compressed = valid
        compressed[2] = 0x02
        let cases: [Data] = [
            Data(), valid.prefix(1), valid.dropLast(), valid + Data([0]), Data([2]) + valid.dropFirst(),
            Data([1, 9]) + valid.dropFirst(2), offCurve, compressed,
        ]
        for bytes in cases { #expect(PersistedRecord(serialized: bytes) == nil, "\(bytes.count) bytes") }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let random = Data(
                (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator)
                })
            // Random bytes make a record only by landing on the layout and the curve.
            if let record = PersistedRecord(serialized: random) { #expect(record.serialized == random) }
        }
    }
}
