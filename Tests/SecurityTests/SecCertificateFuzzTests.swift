// Randomized and mutated input to every certificate and PKCS#12 entry point: nothing traps, and
// every status is one of the documented ones.

import Foundation
import SeededRandom
import Security
import Testing

@Suite("Certificates and PKCS#12: randomized input")
struct SecCertificateFuzzTests {
    private static var seed: UInt64 {
        UInt64(ProcessInfo.processInfo.environment["KEYCHAIN_FUZZ_SEED"] ?? "") ?? 20_261_125
    }

    /// `data` with a few bytes changed, inserted or removed, or cut short.
    private static func mutate(_ data: Data, _ random: inout SplitMix64) -> Data {
        var bytes = [UInt8](data)
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            guard !bytes.isEmpty else { break }
            let index = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
            case 2: bytes.remove(at: index)
            default: bytes = Array(bytes.prefix(index))
            }
        }
        return Data(bytes)
    }

    @Test("20,000 mutated and random certificates: CreateWithData, every Copy, SecTrust and SecItemAdd never trap")
    func certificates() throws {
        let fixtures = try CertificateFixtures.get()
        var random = SplitMix64(seed: Self.seed)
        let originals = [fixtures.leaf.der, fixtures.rsa.der, fixtures.ca.der]
        var parsed = 0
        let anchor = try certificate(fixtures.ca.der)
        try withKeychain { _ in
            for index in 0..<20_000 {
                let data =
                    index % 10 == 0
                    ? Data(
                        (0..<Int.random(in: 0..<300, using: &random)).map { _ in
                            UInt8.random(in: 0...255, using: &random)
                        })
                    : Self.mutate(originals[index % originals.count], &random)
                if let certificate = SecCertificateCreateWithData(nil, data as CFData) {
                    parsed += 1
                    _ = SecCertificateCopySubjectSummary(certificate)
                    var name: CFString?
                    _ = SecCertificateCopyCommonName(certificate, &name)
                    var emails: CFArray?
                    _ = SecCertificateCopyEmailAddresses(certificate, &emails)
                    _ = SecCertificateCopySerialNumberData(certificate, nil)
                    _ = SecCertificateCopyNormalizedIssuerSequence(certificate)
                    _ = SecCertificateCopyNormalizedSubjectSequence(certificate)
                    _ = SecCertificateCopyKey(certificate)
                    var trust: SecTrust?
                    SecTrustCreateWithCertificates(
                        certificate, SecPolicyCreateSSL(true, "leaf.example.com" as CFString), &trust)
                    if let trust {
                        SecTrustSetAnchorCertificates(trust, [anchor] as CFArray)
                        _ = SecTrustEvaluateWithError(trust, nil)
                    }
                }
                if index % 20 == 0 {
                    let status = add([kSecClass: kSecClassCertificate, kSecValueData: data])
                    #expect([errSecSuccess, errSecDuplicateItem, errSecDecode].contains(status))
                }
            }
        }
        // Some mutations leave a certificate that still parses (a changed signature byte, say).
        #expect(parsed > 0)
    }

    @Test("400 mutated and random .p12 files: SecPKCS12Import gives 0, -25293 or -26275 and never traps")
    func pkcs12() throws {
        let fixtures = try CertificateFixtures.get()
        var random = SplitMix64(seed: Self.seed)
        var statuses: [OSStatus: Int] = [:]
        for index in 0..<400 {
            let data =
                index % 8 == 0
                ? Data(
                    (0..<Int.random(in: 0..<400, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                )
                : Self.mutate(index % 2 == 0 ? fixtures.leafP12 : fixtures.emptyPassphraseP12, &random)
            let options: [CFString: Any] = index % 2 == 0 ? [kSecImportExportPassphrase: "secret"] : [:]
            let status = importPKCS12(data, options).0
            statuses[status, default: 0] += 1
            #expect(
                [errSecSuccess, errSecAuthFailed, errSecDecode].contains(status), "file \(index), seed \(Self.seed)")
        }
        #expect(statuses[errSecDecode, default: 0] > 0)
    }
}
