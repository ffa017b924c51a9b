import Crypto
import Foundation
import SeededRandom
import Security
import Testing

/// The reading of `SecTrustSettingsImportExternalRepresentation`'s property list, in the process: a table
/// of wrong types with Apple's statuses, and seeded mutations of a valid file that never crash. (Nothing
/// here writes trust settings: the domain is the system's, or the data is only parsed.)
@Suite struct SecTrustSettingsExternalTests {
    /// A valid representation of one entry for `der` (whose SHA-1 is `sha1`), changed by `change`.
    static func representation(
        der: Data, sha1: String, _ change: (inout [String: Any], inout [String: Any]) -> Void = { _, _ in }
    ) throws -> Data {
        var entry: [String: Any] = [
            "issuerName": Data([0x30, 0x00]), "serialNumber": Data([0x01]), "modDate": Date(timeIntervalSince1970: 0),
            "certificate": der,
            "trustSettings": [
                [
                    "kSecTrustSettingsPolicy": Data([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x01, 0x03]),
                    "kSecTrustSettingsPolicyName": "sslServer", "kSecTrustSettingsResult": 3,
                ]
            ],
        ]
        var top: [String: Any] = ["trustVersion": 1]
        change(&top, &entry)
        if top["trustList"] == nil { top["trustList"] = [sha1: entry] }
        return try PropertyListSerialization.data(fromPropertyList: top, format: .xml, options: 0)
    }

    /// The status `parse` fails with, or errSecSuccess.
    static func status(_ data: Data) -> OSStatus {
        do {
            _ = try TrustSettingsImporter.parse(data)
            return errSecSuccess
        } catch let error as TrustSettingsError {
            return error.status
        } catch {
            Issue.record("an error that is not a TrustSettingsError: \(error)")
            return errSecInternalComponent
        }
    }

    /// Apple's key of a certificate: the SHA-1 of its DER, uppercase hex.
    static func sha1(_ der: Data) -> String {
        Insecure.SHA1.hash(data: der).map { String(format: "%02X", $0) }.joined()
    }

    @Test func theValidRepresentationParses() throws {
        let der = try CertificateFixtures.get().ca.der
        let entries = try TrustSettingsImporter.parse(try Self.representation(der: der, sha1: Self.sha1(der)))
        #expect(entries.count == 1)
        #expect(entries.first?.certificate != nil)
        #expect(entries.first?.modDate == Date(timeIntervalSince1970: 0))
        // A lowercase key is Apple's SHA-1 too.
        let lower = try Self.representation(der: der, sha1: Self.sha1(der).lowercased())
        #expect(Self.status(lower) == errSecSuccess)
    }

    /// Each wrong type or value, with the status Apple's `validatePropList` gives (errSecInvalidTrustSettings,
    /// which its errSecInvalidTrustedRootRecord is) or errSecUnimplemented for what Linux cannot keep.
    @Test func wrongTypesGiveApplesStatus() throws {
        let fixtures = try CertificateFixtures.get()
        let der = fixtures.ca.der
        let sha1 = Self.sha1(der)
        typealias Change = (inout [String: Any], inout [String: Any]) -> Void
        let table: [(String, Change, OSStatus)] = [
            ("trustVersion missing", { top, _ in top["trustVersion"] = nil }, errSecInvalidTrustSettings),
            ("trustVersion 0", { top, _ in top["trustVersion"] = 0 }, errSecInvalidTrustSettings),
            ("trustVersion a string", { top, _ in top["trustVersion"] = "1" }, errSecInvalidTrustSettings),
            ("trustList an array", { top, _ in top["trustList"] = [1] }, errSecInvalidTrustSettings),
            ("an entry a string", { top, _ in top["trustList"] = [sha1: "x"] }, errSecInvalidTrustSettings),
            ("a key not a SHA-1", { top, e in top["trustList"] = ["XYZ": e] }, errSecInvalidTrustSettings),
            ("issuerName missing", { _, e in e["issuerName"] = nil }, errSecInvalidTrustSettings),
            ("serialNumber a number", { _, e in e["serialNumber"] = 1 }, errSecInvalidTrustSettings),
            ("modDate data", { _, e in e["modDate"] = Data() }, errSecInvalidTrustSettings),
            ("certificate garbage", { _, e in e["certificate"] = Data([1, 2, 3]) }, errSecInvalidTrustSettings),
            ("certificate another's", { _, e in e["certificate"] = fixtures.leaf.der }, errSecInvalidTrustSettings),
            ("trustSettings a string", { _, e in e["trustSettings"] = "all" }, errSecInvalidTrustSettings),
            ("a setting an array", { _, e in e["trustSettings"] = [[1]] }, errSecInvalidTrustSettings),
            (
                "policy a number", { _, e in e["trustSettings"] = [["kSecTrustSettingsPolicy": 3]] },
                errSecInvalidTrustSettings
            ),
            ("result 9", { _, e in e["trustSettings"] = [["kSecTrustSettingsResult": 9]] }, errSecInvalidTrustSettings),
            (
                "result 1.5", { _, e in e["trustSettings"] = [["kSecTrustSettingsResult": 1.5]] },
                errSecInvalidTrustSettings
            ),
            (
                "another policy", { _, e in e["trustSettings"] = [["kSecTrustSettingsPolicy": Data([0x2A, 3])]] },
                errSecUnimplemented
            ),
            (
                "an application", { _, e in e["trustSettings"] = [["kSecTrustSettingsApplication": Data()]] },
                errSecUnimplemented
            ),
            ("a key usage", { _, e in e["trustSettings"] = [["kSecTrustSettingsKeyUsage": 1]] }, errSecUnimplemented),
            (
                "the default root", { top, e in top["trustList"] = ["kSecTrustRecordDefaultRootCert": e] },
                errSecUnimplemented
            ),
            ("an unknown key", { _, e in e["comment"] = "ignored, as Apple ignores it" }, errSecSuccess),
            ("no certificate (a Mac's export)", { _, e in e["certificate"] = nil }, errSecSuccess),
            ("no trustSettings (trust as a root)", { _, e in e["trustSettings"] = nil }, errSecSuccess),
        ]
        for (name, change, expected) in table {
            #expect(Self.status(try Self.representation(der: der, sha1: sha1, change)) == expected, "\(name)")
        }
    }

    /// Seeded mutations (byte flips, truncations, random bytes) of a valid file: each parses or is refused
    /// with one of the import's statuses, never a crash; random bytes and truncations are always refused.
    @Test func seededMutationsNeverCrash() throws {
        let der = try CertificateFixtures.get().ca.der
        let valid = try Self.representation(der: der, sha1: Self.sha1(der))
        var random = SplitMix64(seed: 0x7255_5354)
        for round in 0..<300 {
            var data = valid
            switch round % 3 {
            case 0:
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    data[Int.random(in: 0..<data.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                #expect([errSecSuccess, errSecInvalidTrustSettings, errSecUnimplemented].contains(Self.status(data)))
            case 1:
                data = data.prefix(Int.random(in: 0..<(data.count - 10), using: &random))
                #expect(Self.status(data) == errSecInvalidTrustSettings, "truncated to \(data.count)")
            default:
                data = Data(
                    (0..<Int.random(in: 0...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                )
                if data.first != UInt8(ascii: "<") && data.first != UInt8(ascii: "b") {
                    #expect(Self.status(data) == errSecInvalidTrustSettings)
                }
            }
        }
    }

    /// The system roots export as Apple's property list that the importer reads back whole.
    @Test func theSystemRootsExportAndParseBack() throws {
        var data: CFData?
        #expect(SecTrustSettingsCreateExternalRepresentation(.system, &data) == errSecSuccess)
        let exported = try #require(data as Data?)
        var roots: CFArray?
        #expect(SecTrustSettingsCopyCertificates(.system, &roots) == errSecSuccess)
        let entries = try TrustSettingsImporter.parse(exported)
        #expect(
            entries.count
                == Set((roots as? [SecCertificate] ?? []).map { Self.sha1(SecCertificateCopyData($0) as Data) })
                .count)
        #expect(entries.allSatisfy { $0.certificate != nil })
        #expect(entries.map(\.sha1) == entries.map(\.sha1).sorted())
    }

    @Test func theSystemDomainIsReadOnly() throws {
        let der = try CertificateFixtures.get().ca.der
        let data = try Self.representation(der: der, sha1: Self.sha1(der))
        #expect(SecTrustSettingsImportExternalRepresentation(.system, data as CFData) == errSecDataNotModifiable)
        #expect(
            SecTrustSettingsImportExternalRepresentation(.system, Data("garbage".utf8) as CFData)
                == errSecDataNotModifiable)
    }
}
