// The external representation of a trust settings domain (`SecTrustSettingsCreateExternalRepresentation`,
// `SecTrustSettingsImportExternalRepresentation`; `security trust-settings-export` and
// `trust-settings-import`): Apple's property list (TrustSettingsSchema.h), as XML:
//
//     trustVersion  1
//     trustList     { "<SHA-1 of the DER, uppercase hex>" : {
//                       issuerName    <the issuer Name's DER, as in the certificate (Apple's "non-normalized")>
//                       serialNumber  <the serial number INTEGER's content bytes>
//                       modDate       <date>
//                       trustSettings [ { kSecTrustSettingsPolicy <the policy OID's content bytes>,
//                                         kSecTrustSettingsPolicyName <Apple's name, when it has one>,
//                                         kSecTrustSettingsResult <integer> } ]   (absent: trust as a root)
//                       certificate   <the certificate's DER>   (this implementation only)
//                   } }
//
// Decisions:
// - `certificate` is ours: Apple keeps certificates in keychains and its settings refer to them by hash,
//   but the settings here keep the certificate itself. Apple's importer ignores a key it does not know
//   (TrustSettings::validatePropList looks up issuerName, serialNumber, modDate and trustSettings in each
//   entry and never enumerates the others), so a file exported here imports on a Mac, and a Linux export
//   round-trips completely.
// - An entry without `certificate` (a file exported on a Mac) is matched by SHA-1 against the
//   certificates of the keychain search list and the system roots; when any cannot be found, the import
//   fails (errSecItemNotFound) naming them, and nothing changes.
// - An entry with `certificate` whose SHA-1 is not its key is refused (errSecInvalidTrustSettings).
// - Import replaces the domain's settings as a whole, as Apple's does (it builds the settings from the
//   data alone and writes them); a file that is not a property list or has the wrong types is
//   errSecInvalidTrustSettings (Apple's errSecInvalidTrustedRootRecord is the same code); the system
//   domain is errSecDataNotModifiable. Constraints this implementation cannot keep (application, policy
//   string, key usage, allowed error, a policy OID that is not one of `add-trusted-cert -p`'s, the default
//   root setting) are refused with errSecUnimplemented rather than dropped, since dropping one would
//   change what is trusted.
// - Export of a domain without settings is errSecNoTrustSettings (Apple: no settings file, and Apple
//   deletes the file when the last entry goes).

internal import Crypto
public import _SecurityFoundation
internal import KeychainModel
internal import KeychainPKI

/// The keys of Apple's external representation (TrustSettingsSchema.h, SecTrustSettingsPriv.h).
enum TrustSettingsPlistKey {
    static let version = "trustVersion"
    static let trustList = "trustList"
    static let issuer = "issuerName"
    static let serialNumber = "serialNumber"
    static let modDate = "modDate"
    static let trustSettings = "trustSettings"
    /// This implementation's key: the certificate's DER.
    static let certificate = "certificate"
    static let policyName = "kSecTrustSettingsPolicyName"
}

/// The Apple trust policy OIDs (`1.2.840.113635.100.1.n`, oidsalg.c) of the policy names trust settings
/// take, as the OID's content bytes (Apple's CSSM_OID, written as `kSecTrustSettingsPolicy`).
enum TrustSettingsPolicyOID {
    /// The content bytes of `1.2.840.113635.100.1`.
    static let applePolicyArc: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x63, 0x64, 0x01]

    /// The last arc of each policy's OID.
    static let lastArcs: [String: UInt8] = [
        "basic": 2, "ssl": 3, "smime": 8, "eap": 9, "swUpdate": 10, "IPSec": 11, "codeSign": 16, "pkgSign": 17,
        "appleID": 18, "macappstore": 19, "timestamping": 20,
    ]

    /// `SecPolicyGetName` of the policies that have a name on macOS (SecPolicy.c), written as
    /// `kSecTrustSettingsPolicyName`.
    static let appleNames: [String: String] = ["ssl": "sslServer", "eap": "eapServer", "IPSec": "ipsecServer"]

    /// The OID of a policy name.
    static func oid(of name: String) -> Data? {
        lastArcs[name].map { Data(applePolicyArc + [$0]) }
    }

    /// The policy name of an OID given as content bytes or as a dotted string, or `nil`.
    static func name(of value: Any) -> String? {
        if let data = value as? Data {
            return lastArcs.first { Data(applePolicyArc + [$0.value]) == data }?.key
        }
        if let dotted = value as? String {
            return lastArcs.first { "1.2.840.113635.100.1.\($0.value)" == dotted }?.key
        }
        return nil
    }
}

extension TrustSettingsStore {
    /// Apple's key of a certificate: the SHA-1 of its DER, in uppercase hexadecimal.
    static func sha1Key(_ certificate: SecCertificate) -> String {
        Insecure.SHA1.hash(data: certificate.certificate.derBytes).map { String(format: "%02X", $0) }.joined()
    }

    /// A modification date as the settings file keeps it (ISO 8601, UTC, whole seconds).
    static func modDateString(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    /// The date of ``modDateString(_:)``'s text, or `nil`.
    static func modDate(from text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

// MARK: - Export

/// Writes a domain's settings as Apple's property list.
enum TrustSettingsExporter {
    /// The XML property list of a domain's settings.
    /// - Throws: ``TrustSettingsError``: errSecNoTrustSettings for a domain without settings,
    ///   errSecInvalidTrustSettings for a corrupt file.
    static func export(_ domain: SecTrustSettingsDomain) throws -> Data {
        var trustList: [String: Any] = [:]
        if domain == .system {
            for certificate in systemAnchors {
                trustList[TrustSettingsStore.sha1Key(certificate)] = entry(certificate, modDate: nil, constraints: [])
            }
        } else {
            let snapshot = try TrustSettingsStore.load(domain)
            for (key, stored) in snapshot.file.certificates {
                guard let certificate = snapshot.parsed[key] else { continue }
                trustList[TrustSettingsStore.sha1Key(certificate)] = entry(
                    certificate, modDate: stored.modDate, constraints: stored.trustSettings)
            }
        }
        guard !trustList.isEmpty else {
            throw TrustSettingsError(status: errSecNoTrustSettings, message: "the domain has no trust settings")
        }
        let plist: [String: Any] = [TrustSettingsPlistKey.version: 1, TrustSettingsPlistKey.trustList: trustList]
        do {
            return try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        } catch {
            throw TrustSettingsError(status: errSecInternalComponent, message: "cannot write the property list")
        }
    }

    /// One certificate's entry; `trustSettings` is left out when empty, as Apple's `setTrustSettings` does.
    static func entry(_ certificate: SecCertificate, modDate: String?, constraints: [TrustSettingsFile.Constraint])
        -> [String: Any]
    {
        var entry: [String: Any] = [
            TrustSettingsPlistKey.issuer: Data(certificate.certificate.issuer.derBytes),
            TrustSettingsPlistKey.serialNumber: Data(certificate.certificate.serialNumber),
            TrustSettingsPlistKey.modDate: modDate.flatMap(TrustSettingsStore.modDate(from:)) ?? Date(),
            TrustSettingsPlistKey.certificate: Data(certificate.certificate.derBytes),
        ]
        if !constraints.isEmpty { entry[TrustSettingsPlistKey.trustSettings] = constraints.map(dictionary) }
        return entry
    }

    /// A constraint as Apple writes it: the policy's OID (and name), the result when set.
    static func dictionary(_ constraint: TrustSettingsFile.Constraint) -> [String: Any] {
        var dictionary: [String: Any] = [:]
        if let name = constraint.policy, let oid = TrustSettingsPolicyOID.oid(of: name) {
            dictionary[String(describing: kSecTrustSettingsPolicy)] = oid
            if let appleName = TrustSettingsPolicyOID.appleNames[name] {
                dictionary[TrustSettingsPlistKey.policyName] = appleName
            }
        }
        if let result = constraint.result { dictionary[String(describing: kSecTrustSettingsResult)] = Int(result) }
        return dictionary
    }
}

// MARK: - Import

/// One entry of an external representation, checked.
package struct ExternalTrustEntry {
    /// Apple's key: the certificate's SHA-1, uppercase hex.
    package var sha1: String
    /// The certificate the entry carries (files exported here), or `nil` (files exported on a Mac).
    package var certificate: SecCertificate?
    /// When the entry last changed (Apple's `modDate`).
    package var modDate: Date
    /// The usage constraints, as the settings file keeps them.
    var constraints: [TrustSettingsFile.Constraint]
}

/// Reads and checks an external representation, and imports it into a domain.
package enum TrustSettingsImporter {
    /// Replaces a domain's settings with those of an external representation, all or nothing.
    /// - Throws: ``TrustSettingsError``: errSecDataNotModifiable for the system domain,
    ///   errSecInvalidTrustSettings for data that is not a valid representation (or whose certificate
    ///   does not match its key), errSecUnimplemented for a constraint this implementation cannot keep,
    ///   errSecItemNotFound when a certificate without its DER is in no keychain of the search list and is
    ///   no system root, or the statuses of writing the domain's file.
    package static func importRepresentation(_ data: Data, into domain: SecTrustSettingsDomain) throws {
        guard domain != .system else {
            throw TrustSettingsError(
                status: errSecDataNotModifiable, message: "the system trust settings are read only")
        }
        let entries = try parse(data)
        let certificates = try resolve(entries)
        var replacement: [String: TrustSettingsFile.Entry] = [:]
        for entry in entries {
            guard let certificate = certificates[entry.sha1] else { continue }
            replacement[TrustSettingsStore.key(certificate)] = TrustSettingsFile.Entry(
                certificate: Data(certificate.certificate.derBytes).base64EncodedString(),
                modDate: TrustSettingsStore.modDateString(entry.modDate), trustSettings: entry.constraints)
        }
        try TrustSettingsStore.update(domain, replacing: true) { file in file.certificates = replacement }
    }

    /// An invalid representation (errSecInvalidTrustSettings), for `why`.
    static func invalid(_ why: String) -> TrustSettingsError {
        TrustSettingsError(status: errSecInvalidTrustSettings, message: "the trust settings file \(why)")
    }

    /// An unsupported constraint (errSecUnimplemented) of the entry `sha1`.
    static func unsupported(_ sha1: String, _ what: String) -> TrustSettingsError {
        TrustSettingsError(
            status: errSecUnimplemented,
            message: "the trust settings of \(sha1) use \(what), which is not supported on Linux")
    }

    /// The entries of a representation, checked as Apple's `validatePropList` does and against what the
    /// settings here can keep.
    package static func parse(_ data: Data) throws -> [ExternalTrustEntry] {
        guard let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) else {
            throw invalid("is not a property list")
        }
        guard let top = plist as? [String: Any] else { throw invalid("is not a dictionary") }
        guard let version = int32(top[TrustSettingsPlistKey.version]), version == 1 else {
            throw invalid("has no trustVersion 1")
        }
        guard let trustList = top[TrustSettingsPlistKey.trustList] as? [String: Any] else {
            throw invalid("has no trustList dictionary")
        }
        return try trustList.sorted { $0.key < $1.key }.map { try parseEntry($0.key, $0.value) }
    }

    /// One entry of the trust list.
    static func parseEntry(_ key: String, _ value: Any) throws -> ExternalTrustEntry {
        guard key.utf8.count == 40, key.allSatisfy(\.isHexDigit) else {
            if key == "kSecTrustRecordDefaultRootCert" { throw unsupported(key, "the default root setting") }
            throw invalid("has an entry whose key \"\(key)\" is not a SHA-1")
        }
        let sha1 = key.uppercased()
        guard let entry = value as? [String: Any] else {
            throw invalid("has an entry \(sha1) that is not a dictionary")
        }
        guard entry[TrustSettingsPlistKey.issuer] is Data, entry[TrustSettingsPlistKey.serialNumber] is Data,
            let modDate = entry[TrustSettingsPlistKey.modDate] as? Date
        else { throw invalid("has an entry \(sha1) without issuerName, serialNumber or modDate") }
        var certificate: SecCertificate?
        if let value = entry[TrustSettingsPlistKey.certificate] {
            guard let der = value as? Data, let parsed = SecCertificateCreateWithData(nil, der as CFData) else {
                throw invalid("has an entry \(sha1) whose certificate is not a certificate")
            }
            guard TrustSettingsStore.sha1Key(parsed) == sha1 else {
                throw invalid("has an entry \(sha1) whose certificate has another SHA-1 (the file was changed)")
            }
            certificate = parsed
        }
        var constraints: [TrustSettingsFile.Constraint] = []
        if let value = entry[TrustSettingsPlistKey.trustSettings] {
            guard let array = value as? [Any] else {
                throw invalid("has an entry \(sha1) whose trustSettings is not an array")
            }
            constraints = try array.map { try parseConstraint($0, of: sha1) }
        }
        return ExternalTrustEntry(sha1: sha1, certificate: certificate, modDate: modDate, constraints: constraints)
    }

    /// One usage constraint: its policy (an OID this implementation knows) and result.
    static func parseConstraint(_ value: Any, of sha1: String) throws -> TrustSettingsFile.Constraint {
        guard let dictionary = value as? [String: Any] else {
            throw invalid("has an entry \(sha1) with a trust setting that is not a dictionary")
        }
        let unsupportedKeys: [(CFString, String)] = [
            (kSecTrustSettingsApplication, "an application"), (kSecTrustSettingsPolicyString, "a policy string"),
            (kSecTrustSettingsKeyUsage, "a key usage"), (kSecTrustSettingsAllowedError, "an allowed error"),
        ]
        for (key, what) in unsupportedKeys where dictionary[String(describing: key)] != nil {
            throw unsupported(sha1, what)
        }
        var constraint = TrustSettingsFile.Constraint()
        if let policy = dictionary[String(describing: kSecTrustSettingsPolicy)] {
            guard policy is Data || policy is String else {
                throw invalid("has an entry \(sha1) whose policy is neither data nor a string")
            }
            guard let name = TrustSettingsPolicyOID.name(of: policy) else { throw unsupported(sha1, "another policy") }
            constraint.policy = name
        }
        if let result = dictionary[String(describing: kSecTrustSettingsResult)] {
            guard let number = int32(result), (1...4).contains(number) else {
                throw invalid("has an entry \(sha1) whose result is not a SecTrustSettingsResult")
            }
            constraint.result = UInt32(number)
        }
        return constraint
    }

    /// A property list number that is a 32-bit integer exactly (Apple's `tsIsGoodCfNum`), or `nil`.
    static func int32(_ value: Any?) -> Int32? {
        guard let number = value as? NSNumber else { return nil }
        let integer = number.int32Value
        return Double(integer) == number.doubleValue ? integer : nil
    }

    /// The certificate of each entry: its own, or the one of the keychain search list or the system roots
    /// with its SHA-1.
    /// - Throws: ``TrustSettingsError`` (errSecItemNotFound) naming the SHA-1s that were found nowhere.
    static func resolve(_ entries: [ExternalTrustEntry]) throws -> [String: SecCertificate] {
        var found: [String: SecCertificate] = [:]
        for entry in entries { found[entry.sha1] = entry.certificate }
        let wanted = Set(entries.map(\.sha1)).subtracting(found.keys)
        guard !wanted.isEmpty else { return found }
        for certificate in searchListCertificates() + systemAnchors {
            let sha1 = TrustSettingsStore.sha1Key(certificate)
            if wanted.contains(sha1) { found[sha1] = certificate }
        }
        let missing = wanted.subtracting(found.keys).sorted()
        guard missing.isEmpty else {
            throw TrustSettingsError(
                status: errSecItemNotFound,
                message: "\(missing.count) certificate\(missing.count == 1 ? "" : "s") of the trust settings "
                    + "\(missing.count == 1 ? "is" : "are") in no keychain of the search list and among no system "
                    + "roots: \(missing.joined(separator: ", ")); add \(missing.count == 1 ? "it" : "them") to a "
                    + "keychain (security add-certificates) and import again; nothing was imported")
        }
        return found
    }

    /// The certificates of the keychains of the search list (the default keychain when none is set) that
    /// exist and can be read; a locked keychain is skipped.
    static func searchListCertificates() -> [SecCertificate] {
        let preferences = try? KeychainPreferences.load(from: KeychainPaths().preferencesFile)
        let paths = preferences?.searchList ?? [KeychainRegistry.shared.defaultKeychainPath]
        var certificates: [SecCertificate] = []
        for path in paths where FileManager.default.fileExists(atPath: path) {
            var keychain: SecKeychain?
            guard SecKeychainOpen(path, &keychain) == errSecSuccess, let keychain else { continue }
            let query: [CFString: Any] = [
                kSecClass: kSecClassCertificate, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true,
                kSecMatchSearchList: [keychain],
            ]
            var result: CFTypeRef?
            guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { continue }
            certificates += (result as? [Any] ?? []).compactMap { $0 as? SecCertificate }
        }
        return certificates
    }
}

// MARK: - API

/// Returns the external representation of a domain's trust settings: Apple's XML property list
/// (`trustVersion`, `trustList` keyed by each certificate's SHA-1), each entry also carrying the
/// certificate's DER under `certificate` so that the settings import completely on another machine.
///
/// ```swift
/// var data: CFData?
/// if SecTrustSettingsCreateExternalRepresentation(.user, &data) == errSecSuccess, let data {
///     try (data as Data).write(to: URL(fileURLWithPath: "trust.plist"))
/// }
/// ```
///
/// - Parameters:
///   - domain: The domain; ``SecTrustSettingsDomain/system`` gives the system's roots, each trusted as a
///     root for every policy.
///   - trustSettings: Receives the property list.
/// - Returns: `errSecSuccess`, errSecNoTrustSettings when the domain has no settings, or
///   errSecInvalidTrustSettings when its file is corrupt.
@discardableResult
public func SecTrustSettingsCreateExternalRepresentation(
    _ domain: SecTrustSettingsDomain, _ trustSettings: UnsafeMutablePointer<CFData?>
) -> OSStatus {
    TrustSettingsError.status(otherwise: errSecInternalComponent) {
        trustSettings.pointee = try TrustSettingsExporter.export(domain) as NSData
        return errSecSuccess
    }
}

/// Replaces a domain's trust settings with those of an external representation (from
/// ``SecTrustSettingsCreateExternalRepresentation(_:_:)``, here or on a Mac), all or nothing.
///
/// An entry that carries its certificate must match its SHA-1 key; an entry that does not (a Mac's
/// export) is matched by SHA-1 against the certificates of the keychain search list and the system roots.
///
/// - Parameters:
///   - domain: ``SecTrustSettingsDomain/user``, or ``SecTrustSettingsDomain/admin`` (root only).
///   - trustSettings: The property list.
/// - Returns: `errSecSuccess`; errSecInvalidTrustSettings when the data is not a valid representation or
///   a certificate does not match its key; errSecItemNotFound when a certificate is in no keychain of the
///   search list and is no system root; errSecUnimplemented for a constraint not supported on Linux
///   (application, policy string, key usage, allowed error, another policy); errSecWrPerm when the
///   domain's file cannot be written; errSecDataNotModifiable for the system domain.
@discardableResult
public func SecTrustSettingsImportExternalRepresentation(_ domain: SecTrustSettingsDomain, _ trustSettings: CFData)
    -> OSStatus
{
    TrustSettingsError.status {
        try TrustSettingsImporter.importRepresentation(trustSettings as Data, into: domain)
        return errSecSuccess
    }
}
