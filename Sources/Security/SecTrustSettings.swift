// Trust settings (`SecTrustSettings.h`, macOS): per-certificate decisions, in the user's and the
// administrator's domains, that make a certificate an anchor (trustRoot, trustAsRoot) or make every
// chain through it fail (deny), for all policies or for the policies listed.
//
// Where they are kept (Linux decision; macOS keeps them in property lists only `trustd` writes):
// - user domain: `${XDG_CONFIG_HOME:-$HOME/.config}/keychain/trust-settings.json`, beside the keychain
//   preferences, mode 0600, owned by the user;
// - admin domain: `/etc/keychain/trust-settings.json` (or the path in `KEYCHAIN_ADMIN_TRUST_SETTINGS`),
//   mode 0644, honoured only when owned by root (or by the user running) and writable by its owner only;
//   only root can change it;
// - system domain: read only, the roots of `/etc/ssl/certs/ca-certificates.crt`.
//
// The file is JSON, replaced atomically (a temporary file, fsync, rename) under an exclusive lock on
// `<file>.lock`:
//
//     {
//       "certificates" : {
//         "<SHA-256 of the DER, lowercase hex>" : {
//           "certificate" : "<DER, base64>",
//           "modDate" : "2026-11-27T04:00:00Z",
//           "trustSettings" : [ { "policy" : "ssl", "result" : 3 } ]
//         }
//       },
//       "version" : 1
//     }
//
// An empty `trustSettings` array means "trust as a root for every policy" (Apple's empty array).
// `policy` is one of the names `security add-trusted-cert -p` takes (basic, ssl, smime, codeSign, …);
// `result` is a `SecTrustSettingsResult` (absent means trustRoot). `modDate` (ISO 8601, optional:
// files written before it was kept have none) is when the entry last changed, Apple's `modDate`,
// exported by `SecTrustSettingsCreateExternalRepresentation` (SecTrustSettingsExternal.swift). A file
// that cannot be read or parsed, or whose keys do not match its certificates, is corrupt: evaluations
// that consult user trust settings then fail with errSecInvalidTrustSettings (nothing is trusted, or
// silently not denied, through it), and changes are refused until it is fixed or removed.

internal import Crypto
public import _SecurityFoundation
internal import KeychainModel
internal import KeychainPKI
internal import KeychainLibc

/// A trust settings domain: whose decisions they are.
public enum SecTrustSettingsDomain: UInt32, Sendable {
    /// The user's own settings.
    case user = 0
    /// The administrator's settings, for every user of the machine.
    case admin = 1
    /// The system's roots (read only).
    case system = 2
}

/// What a trust setting decides for a certificate.
public enum SecTrustSettingsResult: UInt32, Sendable {
    /// Not a valid setting.
    case invalid = 0
    /// A root (self-signed) certificate is trusted as an anchor.
    case trustRoot = 1
    /// A non-root certificate is trusted as an anchor.
    case trustAsRoot = 2
    /// The certificate is distrusted: every chain through it fails.
    case deny = 3
    /// No decision: the certificate is evaluated as if it had no setting.
    case unspecified = 4
}

/// The key of a trust setting's policy (a ``SecPolicy``); absent means every policy.
nonisolated(unsafe) public let kSecTrustSettingsPolicy: CFString = SecConstantString("kSecTrustSettingsPolicy")
/// The key of a trust setting's application (not supported on Linux).
nonisolated(unsafe) public let kSecTrustSettingsApplication: CFString = SecConstantString(
    "kSecTrustSettingsApplication")
/// The key of a trust setting's policy string (not supported on Linux).
nonisolated(unsafe) public let kSecTrustSettingsPolicyString: CFString = SecConstantString(
    "kSecTrustSettingsPolicyString")
/// The key of a trust setting's key usage (not supported on Linux).
nonisolated(unsafe) public let kSecTrustSettingsKeyUsage: CFString = SecConstantString("kSecTrustSettingsKeyUsage")
/// The key of a trust setting's allowed error (not supported on Linux).
nonisolated(unsafe) public let kSecTrustSettingsAllowedError: CFString = SecConstantString(
    "kSecTrustSettingsAllowedError")
/// The key of a trust setting's result (a ``SecTrustSettingsResult`` raw value); absent means trustRoot.
nonisolated(unsafe) public let kSecTrustSettingsResult: CFString = SecConstantString("kSecTrustSettingsResult")

/// The contents of a trust settings file (see the comment at the top of `SecTrustSettings.swift`).
struct TrustSettingsFile: Codable, Equatable {
    struct Constraint: Codable, Equatable {
        var policy: String?
        var result: UInt32?
    }

    struct Entry: Codable, Equatable {
        var certificate: String
        var modDate: String?
        var trustSettings: [Constraint]
    }

    var version = 1
    var certificates: [String: Entry] = [:]
}

/// A trust settings file read and checked: its entries with their parsed certificates.
struct TrustSettingsSnapshot {
    var file = TrustSettingsFile()
    var parsed: [String: SecCertificate] = [:]

    /// What the settings decide for `certificate` under the policies evaluated: the first constraint
    /// whose policy is absent or among `policies` (its result, trustRoot when absent), or `nil`.
    func decision(for certificate: SecCertificate, policies: Set<String>) -> SecTrustSettingsResult? {
        guard let entry = file.certificates[TrustSettingsStore.key(certificate)] else { return nil }
        if entry.trustSettings.isEmpty { return .trustRoot }
        for constraint in entry.trustSettings {
            if let policy = constraint.policy, !policies.contains(policy) { continue }
            return SecTrustSettingsResult(rawValue: constraint.result ?? 1) ?? .invalid
        }
        return nil
    }
}

/// A failure to read or write a trust settings file, with the status the API returns.
package struct TrustSettingsError: Error {
    /// The status the API returns.
    package var status: OSStatus
    /// Why, for the user.
    package var message: String

    /// Runs `body`: the one place trust settings failures become the API's `OSStatus`, a
    /// ``TrustSettingsError`` its own status and anything else `otherwise`.
    static func status(otherwise: OSStatus = errSecInvalidTrustSettings, _ body: () throws -> OSStatus) -> OSStatus {
        do {
            return try body()
        } catch let error as TrustSettingsError {
            return error.status
        } catch {
            return otherwise
        }
    }
}

/// Reads and writes the trust settings files of the user and admin domains.
package enum TrustSettingsStore {
    /// The admin domain's file unless `KEYCHAIN_ADMIN_TRUST_SETTINGS` names another.
    package static let defaultAdminPath = "/etc/keychain/trust-settings.json"

    /// The policy names trust settings may be restricted to (`security add-trusted-cert -p`).
    package static let policyNames: Set<String> = [
        "basic", "ssl", "smime", "codeSign", "IPSec", "swUpdate", "pkgSign", "eap", "macappstore", "appleID",
        "timestamping",
    ]

    /// The file of a domain (`nil` for the system domain, which has none).
    package static func path(_ domain: SecTrustSettingsDomain) -> String? {
        switch domain {
        case .user: KeychainPaths().configurationDirectory + "/trust-settings.json"
        case .admin:
            ProcessInfo.processInfo.environment["KEYCHAIN_ADMIN_TRUST_SETTINGS"].flatMap {
                $0.hasPrefix("/") ? $0 : nil
            } ?? defaultAdminPath
        case .system: nil
        }
    }

    /// The key of a certificate: the SHA-256 of its DER, in lowercase hexadecimal.
    static func key(_ certificate: SecCertificate) -> String {
        SHA256.hash(data: certificate.certificate.derBytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Reads a domain's settings; a missing file gives empty settings.
    /// - Throws: ``TrustSettingsError`` (errSecInvalidTrustSettings) when the file is not a regular file
    ///   of its expected owner, is writable by others, or is not a valid trust settings file.
    static func load(_ domain: SecTrustSettingsDomain) throws -> TrustSettingsSnapshot {
        guard let path = path(domain) else { return TrustSettingsSnapshot() }
        let corrupt = { (why: String) in
            TrustSettingsError(
                status: errSecInvalidTrustSettings,
                message: "the trust settings file \(path) \(why); fix or remove it")
        }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return TrustSettingsSnapshot() }
            throw corrupt("cannot be read (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw corrupt("is not a regular file") }
        let owners: Set<uid_t> = domain == .user ? [geteuid()] : [0, geteuid()]
        guard owners.contains(info.st_uid), info.st_mode & 0o022 == 0 else {
            throw corrupt("is not owned by \(domain == .user ? "you" : "root") or can be written by others")
        }
        guard info.st_size <= 16 << 20 else { throw corrupt("is too large") }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw corrupt("cannot be read") }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        guard let file = try? JSONDecoder().decode(TrustSettingsFile.self, from: data), file.version == 1 else {
            throw corrupt("is not valid")
        }
        var snapshot = TrustSettingsSnapshot(file: file)
        for (key, entry) in file.certificates {
            guard let der = Data(base64Encoded: entry.certificate),
                let certificate = SecCertificateCreateWithData(nil, der as CFData),
                Self.key(certificate) == key,
                entry.modDate.map({ modDate(from: $0) != nil }) ?? true,
                entry.trustSettings.allSatisfy({
                    ($0.policy.map(policyNames.contains) ?? true) && ($0.result.map { (1...4).contains($0) } ?? true)
                })
            else { throw corrupt("is not valid") }
            snapshot.parsed[key] = certificate
        }
        return snapshot
    }

    /// Reads a domain's settings, lets `change` edit them and writes them back when changed, under an
    /// exclusive lock on `<file>.lock`. With `replacing`, the current file is not read (a corrupt one
    /// is replaced too): `change` starts from empty settings and its result is written.
    /// - Throws: ``TrustSettingsError``: errSecInvalidTrustSettings for a corrupt file (left as it is),
    ///   errSecWrPerm when the file cannot be written (the admin domain by anyone but root),
    ///   errSecDataNotModifiable for the system domain, or what `change` throws.
    static func update<T>(
        _ domain: SecTrustSettingsDomain, replacing: Bool = false, _ change: (inout TrustSettingsFile) throws -> T
    ) throws -> T {
        guard let path = path(domain) else {
            throw TrustSettingsError(
                status: errSecDataNotModifiable, message: "the system trust settings are read only")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let writeError = { (what: String) in
            TrustSettingsError(
                status: errSecWrPerm,
                message: "cannot \(what) \(path): \(String(cString: strerror(errno)))"
                    + (domain == .admin && geteuid() != 0 ? " (only root can change the admin trust settings)" : ""))
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: domain == .user ? 0o700 : 0o755])
        } catch {
            throw TrustSettingsError(status: errSecWrPerm, message: "cannot create the directory of \(path): \(error)")
        }
        let lock = open(path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, domain == .user ? 0o600 : 0o644)
        guard lock >= 0 else { throw writeError("lock") }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else { throw writeError("lock") }
        }
        var file = replacing ? TrustSettingsFile() : try load(domain).file
        let before = file
        let result = try change(&file)
        guard file != before || replacing else { return result }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(file) ?? Data()) ?? Data()
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0 ... .max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, domain == .user ? 0o600 : 0o644)
        guard fd >= 0 else { throw writeError("write") }
        let bytes = [UInt8](data) + [0x0A]
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(fd)
                unlink(temporary)
                throw writeError("write")
            }
            written += count
        }
        _ = fchmod(fd, domain == .user ? 0o600 : 0o644)
        guard fsync(fd) == 0, close(fd) == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw writeError("write")
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
        return result
    }

    /// The user and admin settings an evaluation consults, in that order.
    static func loadForEvaluation() throws -> [TrustSettingsSnapshot] {
        [try load(.user), try load(.admin)]
    }

    /// A description of why a domain's settings cannot be used, or `nil` when they can.
    package static func problem(_ domain: SecTrustSettingsDomain) -> String? {
        do {
            _ = try load(domain)
            return nil
        } catch let error as TrustSettingsError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}

extension SecPolicy {
    /// The trust settings policy name of the policy (`basic`, `ssl`, …).
    package var trustSettingsName: String {
        switch kind {
        case .basicX509: "basic"
        case .ssl: "ssl"
        case .named(let name): name
        case .revocation: "revocation"
        }
    }

    /// The policy a trust setting restricted to `name` (one of `security add-trusted-cert -p`'s names)
    /// applies to, or `nil` for an unknown name. `basic` and `ssl` are ``SecPolicyCreateBasicX509()`` and
    /// ``SecPolicyCreateSSL(_:_:)``; the others are checked as basic X.509 when evaluated.
    package static func trustSettingsPolicy(named name: String) -> SecPolicy? {
        switch name {
        case "basic": SecPolicyCreateBasicX509()
        case "ssl": SecPolicyCreateSSL(true, nil)
        default: TrustSettingsStore.policyNames.contains(name) ? SecPolicy(.named(name)) : nil
        }
    }
}

/// Whether a certificate is self-signed: its issuer is its subject and its signature verifies with its
/// own key.
func isSelfSigned(_ certificate: SecCertificate) -> Bool {
    certificate.certificate.isSelfIssued
        && (try? certificate.certificate.isSignatureValid(issuedBy: certificate.certificate)) == true
}

/// Returns the trust settings of a certificate in a domain.
///
/// - Parameters:
///   - certRef: The certificate.
///   - domain: The domain; in ``SecTrustSettingsDomain/system``, a system root has an empty array.
///   - trustSettings: Receives an array of dictionaries (``kSecTrustSettingsPolicy``,
///     ``kSecTrustSettingsResult``); an empty array means "trusted as a root for every policy".
/// - Returns: `errSecSuccess`, errSecItemNotFound when the certificate has no settings in the domain, or
///   errSecInvalidTrustSettings when the domain's file is corrupt.
@discardableResult
public func SecTrustSettingsCopyTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain, _ trustSettings: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    if domain == .system {
        guard systemAnchors.contains(where: { $0 == certRef }) else { return errSecItemNotFound }
        trustSettings.pointee = NSArray()
        return errSecSuccess
    }
    return TrustSettingsError.status {
        let snapshot = try TrustSettingsStore.load(domain)
        guard let entry = snapshot.file.certificates[TrustSettingsStore.key(certRef)] else {
            return errSecItemNotFound
        }
        let dictionaries = entry.trustSettings.map { constraint -> NSDictionary in
            let dictionary = NSMutableDictionary()
            if let name = constraint.policy, let policy = SecPolicy.trustSettingsPolicy(named: name) {
                dictionary[kSecTrustSettingsPolicy] = policy
            }
            if let result = constraint.result { dictionary[kSecTrustSettingsResult] = NSNumber(value: result) }
            return dictionary
        }
        trustSettings.pointee = NSArray(array: dictionaries)
        return errSecSuccess
    }
}

/// Sets (replaces) the trust settings of a certificate in a domain.
///
/// ```swift
/// SecTrustSettingsSetTrustSettings(root, .user, nil)  // trust `root` as an anchor for every policy
/// SecTrustSettingsSetTrustSettings(
///     intermediate, .user, [kSecTrustSettingsResult: SecTrustSettingsResult.deny.rawValue] as CFDictionary)
/// ```
///
/// - Parameters:
///   - certRef: The certificate; it is kept in the settings, so it need not be in a keychain.
///   - domain: ``SecTrustSettingsDomain/user``, or ``SecTrustSettingsDomain/admin`` (root only).
///   - trustSettingsDictOrArray: `nil` (trust as a root for every policy), a dictionary or an array of
///     dictionaries with ``kSecTrustSettingsPolicy`` (a ``SecPolicy``) and ``kSecTrustSettingsResult``
///     (absent means trustRoot).
/// - Returns: `errSecSuccess`; errSecParam for a malformed setting or trustRoot on a certificate that is
///   not self-signed; errSecUnimplemented for the application, policy string, key usage and allowed
///   error keys (not supported on Linux); errSecInvalidTrustSettings when the domain's file is corrupt;
///   errSecWrPerm when it cannot be written; errSecDataNotModifiable for the system domain.
@discardableResult
public func SecTrustSettingsSetTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain, _ trustSettingsDictOrArray: CFTypeRef?
) -> OSStatus {
    var dictionaries: [NSDictionary] = []
    if let value = trustSettingsDictOrArray {
        if let dictionary = value as? NSDictionary {
            dictionaries = [dictionary]
        } else if let array = value as? NSArray {
            for element in array {
                guard let dictionary = element as? NSDictionary else { return errSecParam }
                dictionaries.append(dictionary)
            }
        } else {
            return errSecParam
        }
    }
    var constraints: [TrustSettingsFile.Constraint] = []
    for dictionary in dictionaries {
        var constraint = TrustSettingsFile.Constraint()
        for case let key as NSString in dictionary.allKeys {
            let value = dictionary[key]
            let name = String(describing: key)
            if name == String(describing: kSecTrustSettingsPolicy) {
                guard let policy = value as? SecPolicy else { return errSecParam }
                constraint.policy = policy.trustSettingsName
            } else if name == String(describing: kSecTrustSettingsResult) {
                guard let number = value as? NSNumber, (1...4).contains(number.intValue) else { return errSecParam }
                constraint.result = number.uint32Value
            } else if [
                kSecTrustSettingsApplication, kSecTrustSettingsPolicyString, kSecTrustSettingsKeyUsage,
                kSecTrustSettingsAllowedError,
            ].contains(where: { String(describing: $0) == name }) {
                return errSecUnimplemented
            } else {
                return errSecParam
            }
        }
        constraints.append(constraint)
    }
    let trustsAsRoot = constraints.isEmpty || constraints.contains { ($0.result ?? 1) == 1 }
    if trustsAsRoot && !isSelfSigned(certRef) { return errSecParam }
    return TrustSettingsError.status {
        try TrustSettingsStore.update(domain) { file in
            file.certificates[TrustSettingsStore.key(certRef)] = TrustSettingsFile.Entry(
                certificate: Data(certRef.certificate.derBytes).base64EncodedString(),
                modDate: TrustSettingsStore.modDateString(Date()), trustSettings: constraints)
        }
        return errSecSuccess
    }
}

/// Removes the trust settings of a certificate from a domain.
///
/// - Returns: `errSecSuccess`, errSecItemNotFound when it has none there, or the statuses of
///   ``SecTrustSettingsSetTrustSettings(_:_:_:)`` for a corrupt or unwritable file.
@discardableResult
public func SecTrustSettingsRemoveTrustSettings(_ certRef: SecCertificate, _ domain: SecTrustSettingsDomain)
    -> OSStatus
{
    TrustSettingsError.status {
        try TrustSettingsStore.update(domain) { file in
            file.certificates.removeValue(forKey: TrustSettingsStore.key(certRef)) == nil
                ? errSecItemNotFound : errSecSuccess
        }
    }
}

/// Returns the certificates that have trust settings in a domain, sorted by subject summary.
///
/// - Parameters:
///   - domain: The domain; ``SecTrustSettingsDomain/system`` gives the system's roots.
///   - certArray: Receives an array of ``SecCertificate``.
/// - Returns: `errSecSuccess`, errSecNoTrustSettings when the domain has none, or
///   errSecInvalidTrustSettings when its file is corrupt.
@discardableResult
public func SecTrustSettingsCopyCertificates(
    _ domain: SecTrustSettingsDomain, _ certArray: UnsafeMutablePointer<CFArray?>?
) -> OSStatus {
    TrustSettingsError.status {
        var certificates: [SecCertificate]
        if domain == .system {
            certificates = systemAnchors
        } else {
            let snapshot = try TrustSettingsStore.load(domain)
            certificates = snapshot.file.certificates.keys.sorted().compactMap { snapshot.parsed[$0] }
            let summaries = certificates.map { $0.certificate.subjectSummary ?? "" }
            certificates = zip(summaries, certificates).sorted { $0.0 < $1.0 }.map(\.1)
        }
        guard !certificates.isEmpty else { return errSecNoTrustSettings }
        certArray?.pointee = NSArray(array: certificates)
        return errSecSuccess
    }
}
