import ArgumentParser
import Foundation
import KeychainModel
import KeychainLibc
import Security

/// Where the trust settings of each domain are kept, for the commands' help.
private let trustSettingsLocations = """
    User trust settings are kept in ${XDG_CONFIG_HOME:-$HOME/.config}/keychain/trust-settings.json \
    (mode 0600); admin trust settings (-d) in /etc/keychain/trust-settings.json (or the file \
    KEYCHAIN_ADMIN_TRUST_SETTINGS names), which only root can change. SecTrust (verify-cert, \
    find-identity -v) honours both unless only the caller's anchors are used (verify-cert -r).
    """

/// The failure of a trust settings function, as macOS's `cssmPerror` prints it, and the reason a
/// domain's file cannot be used when it is corrupt or cannot be written.
private func trustSettingsFailure(_ function: String, _ status: OSStatus, domain: SecTrustSettingsDomain)
    -> CommandFailure
{
    var lines = ["\(function): \(statusMessage(status))"]
    if status == errSecInvalidTrustSettings, let problem = TrustSettingsStore.problem(domain) {
        lines.append("security: \(problem)")
    }
    if status == errSecWrPerm, domain == .admin {
        lines.append(
            "security: the admin trust settings (\(TrustSettingsStore.path(.admin) ?? "")) can be changed only by root")
    }
    return CommandFailure(result: 1, messages: [], rawLines: lines)
}

/// Reads the certificate file of a trust settings command, printing macOS's two lines when it cannot.
private func readTrustedCertificateFile(_ path: String) throws -> SecCertificate {
    do {
        return try readCertificateFile(path)
    } catch let failure as CommandFailure {
        throw CommandFailure(
            result: 1, messages: failure.messages, rawLines: failure.rawLines + ["Error reading file \(path)"])
    }
}

// MARK: - add-trusted-cert

/// `security add-trusted-cert`: adds a certificate to the user's (or the admin's) trust settings.
struct AddTrustedCert: ToolCommand {
    static let name = "add-trusted-cert"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Add trusted certificate(s).",
        usage: """
            security add-trusted-cert [-d] [-r resultType] [-p policy] [-k keychain] certFile
            """,
        discussion: HelpText.wrapped(
            """
            Adds the certificate (DER or PEM) to the trust settings: by default, as a root trusted for \
            every policy (the certificate must be self-signed). -r sets the result: trustRoot (the \
            default), trustAsRoot (for a certificate that is not self-signed), deny (every chain \
            through it fails), unspecified. -p restricts the setting to a policy (may be repeated): \
            basic, ssl, smime, codeSign, IPSec, swUpdate, pkgSign, eap, macappstore, appleID, \
            timestamping. -k also adds the certificate to that keychain. -d changes the admin trust \
            settings instead of the user's. -a, -s, -e, -u, -i and -o are not supported on Linux.

            \(trustSettingsLocations)

            Example (a code-signing CI job):
              security import signing.p12 -k build.keychain -P "$P12_PASSWORD" -T /usr/bin/codesign
              security add-trusted-cert -r trustRoot -k build.keychain ca.pem
              security find-identity -v -p codesigning build.keychain
            """))

    @Flag(name: .customShort("d"), help: "Change the admin trust settings (root only).")
    var admin = false

    @Option(
        name: .customShort("r", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The result: trustRoot (default), trustAsRoot, deny, unspecified.", valueName: "resultType"))
    var resultType: String?

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("Restrict the setting to a policy (may be repeated).", valueName: "policy"))
    var policies: [String] = []

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Also add the certificate to this keychain.", valueName: "keychain"))
    var keychain: String?

    @Option(
        name: .customShort("a", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Not supported on Linux.", valueName: "application"))
    var application: String?
    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Not supported on Linux.", valueName: "policyString"))
    var policyString: String?
    @Option(
        name: .customShort("e", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Not supported on Linux.", valueName: "allowedError"))
    var allowedError: String?
    @Option(
        name: .customShort("u", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Not supported on Linux.", valueName: "keyUsage"))
    var keyUsage: String?
    @Option(
        name: .customShort("i", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Not supported on Linux.", valueName: "settingsFileIn"))
    var settingsFileIn: String?
    @Option(
        name: .customShort("o", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Not supported on Linux.", valueName: "settingsFileOut"))
    var settingsFileOut: String?

    @Argument(help: ArgumentHelp("The certificate file, DER or PEM.", valueName: "certFile"))
    var files: [String] = []

    static let results: [String: SecTrustSettingsResult] = [
        "trustRoot": .trustRoot, "trustAsRoot": .trustAsRoot, "deny": .deny, "unspecified": .unspecified,
    ]

    func execute(in session: Session) throws -> Int32 {
        let unsupported = [
            ("a", application), ("s", policyString), ("e", allowedError), ("u", keyUsage), ("i", settingsFileIn),
            ("o", settingsFileOut),
        ].filter { $0.1 != nil }.map(\.0)
        if let option = unsupported.first {
            throw CommandFailure.failure("add-trusted-cert: -\(option) is not supported on Linux", result: 2)
        }
        var result = SecTrustSettingsResult.trustRoot
        if let resultType {
            guard let chosen = Self.results[resultType] else { throw CommandFailure.usage("unknown result type") }
            result = chosen
        }
        var secPolicies: [SecPolicy] = []
        for name in policies {
            guard let policy = SecPolicy.trustSettingsPolicy(named: name) else {
                throw CommandFailure.usage("unknown policy \"\(name)\"")
            }
            secPolicies.append(policy)
        }
        guard files.count <= 1 else { throw CommandFailure(result: 2, messages: [], showsUsage: true) }
        guard let file = files.first else {
            throw CommandFailure(result: 2, messages: [], rawLines: ["No cert file specified."], showsUsage: true)
        }
        let certificate = try readTrustedCertificateFile(file)
        if let keychain {
            let target: OpenKeychain
            do {
                target = try session.open(keychain, createDefault: false)
            } catch {
                throw CommandFailure.status(of: error, "SecKeychainOpen \(keychain)").withResult(1)
            }
            let status = try withSecurityKeychain(target, session: session) {
                SecItemAdd([kSecValueRef: certificate] as CFDictionary, nil)
            }
            guard status == errSecSuccess || status == errSecDuplicateItem else {
                throw CommandFailure(
                    result: 1, messages: [], rawLines: ["SecCertificateAddToKeychain: \(statusMessage(status))"])
            }
        }
        // As macOS: no -r and no -p stores no constraints (an empty array: trust as a root for every
        // policy); otherwise one dictionary per policy, its result only when not trustRoot.
        var settings: [NSDictionary]?
        if resultType != nil || !secPolicies.isEmpty {
            let policyList: [SecPolicy?] = secPolicies.isEmpty ? [nil] : secPolicies
            settings = policyList.map { policy in
                let dictionary = NSMutableDictionary()
                if let policy { dictionary[kSecTrustSettingsPolicy] = policy }
                if result != .trustRoot { dictionary[kSecTrustSettingsResult] = NSNumber(value: result.rawValue) }
                return dictionary
            }
        }
        let domain: SecTrustSettingsDomain = admin ? .admin : .user
        let status = SecTrustSettingsSetTrustSettings(certificate, domain, settings.map { $0 as NSArray })
        guard status == errSecSuccess else {
            throw trustSettingsFailure("SecTrustSettingsSetTrustSettings", status, domain: domain)
        }
        return 0
    }
}

// MARK: - remove-trusted-cert

/// `security remove-trusted-cert`: removes a certificate's trust settings.
struct RemoveTrustedCert: ToolCommand {
    static let name = "remove-trusted-cert"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Remove trusted certificate(s).",
        usage: "security remove-trusted-cert [-d] certFile",
        discussion: HelpText.wrapped(
            """
            Removes the trust settings of the certificate (DER or PEM) from the user's trust settings, \
            or with -d from the admin's. A certificate without settings there is reported \
            ("SecTrustSettingsRemoveTrustSettings: The specified item could not be found in the \
            keychain.") and the command exits 1. The certificate stays in any keychain.

            \(trustSettingsLocations)
            """))

    @Flag(name: .customShort("d"), help: "Change the admin trust settings (root only).")
    var admin = false

    @Argument(help: ArgumentHelp("The certificate file, DER or PEM.", valueName: "certFile"))
    var files: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard files.count <= 1 else { throw CommandFailure(result: 2, messages: [], showsUsage: true) }
        guard let file = files.first else {
            throw CommandFailure(result: 2, messages: [], rawLines: ["No cert file specified."], showsUsage: true)
        }
        let certificate = try readTrustedCertificateFile(file)
        let domain: SecTrustSettingsDomain = admin ? .admin : .user
        let status = SecTrustSettingsRemoveTrustSettings(certificate, domain)
        guard status == errSecSuccess else {
            throw trustSettingsFailure("SecTrustSettingsRemoveTrustSettings", status, domain: domain)
        }
        return 0
    }
}

// MARK: - dump-trust-settings

/// `security dump-trust-settings`: prints the trust settings of a domain.
struct DumpTrustSettings: ToolCommand {
    static let name = "dump-trust-settings"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Display contents of trust settings.",
        usage: "security dump-trust-settings [-s] [-d]",
        discussion: HelpText.wrapped(
            """
            Prints the certificates of the user's trust settings, of the admin's with -d, or the \
            system's roots (/etc/ssl/certs/ca-certificates.crt) with -s, each with its settings, as \
            macOS does:
                Number of trusted certs = 1
                Cert 0: Build CA
                   Number of trust settings : 0
            With no settings in the domain it prints "SecTrustSettingsCopyCertificates: No Trust \
            Settings were found." and exits 1.

            \(trustSettingsLocations)
            """))

    @Flag(name: .customShort("s"), help: "Display the system's trusted roots.")
    var system = false

    @Flag(name: .customShort("d"), help: "Display the admin trust settings.")
    var admin = false

    /// `oidToOidString`'s names of the policies.
    static let policyTitles: [String: String] = [
        "basic": "Apple X509 Basic", "ssl": "SSL", "smime": "SMIME", "codeSign": "Code Signing", "IPSec": "IPSec",
        "swUpdate": "SW Update Signing", "pkgSign": "Package Signing", "eap": "EAP", "macappstore": "Mac App Store",
        "appleID": "AppleID Sharing", "timestamping": "Timestamping",
    ]

    static let resultNames: [UInt32: String] = [
        0: "kSecTrustSettingsResultInvalid", 1: "kSecTrustSettingsResultTrustRoot",
        2: "kSecTrustSettingsResultTrustAsRoot", 3: "kSecTrustSettingsResultDeny",
        4: "kSecTrustSettingsResultUnspecified",
    ]

    func execute(in session: Session) throws -> Int32 {
        let domain: SecTrustSettingsDomain = admin ? .admin : system ? .system : .user
        var array: CFArray?
        let status = SecTrustSettingsCopyCertificates(domain, &array)
        guard status == errSecSuccess, let certificates = array?.compactMap({ $0 as? SecCertificate }) else {
            throw trustSettingsFailure("SecTrustSettingsCopyCertificates", status, domain: domain)
        }
        var out = "Number of trusted certs = \(certificates.count)\n"
        for (index, certificate) in certificates.enumerated() {
            let label = SecCertificateCopySubjectSummary(certificate).map { String(describing: $0) } ?? ""
            out += "Cert \(index): \(label)\n"
            var settings: CFArray?
            let copied = SecTrustSettingsCopyTrustSettings(certificate, domain, &settings)
            guard copied == errSecSuccess, let settings else {
                out += "SecTrustSettingsCopyTrustSettings: \(statusMessage(copied))\n"
                continue
            }
            out += "   Number of trust settings : \(settings.count)\n"
            for (settingIndex, element) in settings.enumerated() {
                out += "   Trust Setting \(settingIndex):\n"
                guard let dictionary = element as? NSDictionary else { continue }
                if let policy = dictionary[kSecTrustSettingsPolicy] as? SecPolicy {
                    let name = policy.trustSettingsName
                    out += "      Policy OID            : \(Self.policyTitles[name] ?? name)\n"
                }
                if let result = dictionary[kSecTrustSettingsResult] as? NSNumber {
                    let value = result.uint32Value
                    out +=
                        "      Result Type           : "
                        + (Self.resultNames[value] ?? "Unknown SecTrustSettingsResult (\(value))") + "\n"
                }
            }
        }
        Console.out(out)
        return 0
    }
}

// MARK: - trust-settings-export / trust-settings-import

/// Writes `data` to `path` as macOS's `writeFile` does (created 0600, truncated).
/// - Returns: 0, or the `errno` of the failure (macOS's result for the command).
private func writeSettingsFile(_ path: String, _ data: Data) -> Int32 {
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return errno }
    defer { close(fd) }
    var written = 0
    while written < data.count {
        let count = data[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return count < 0 ? errno : EIO }
        written += count
    }
    return 0
}

/// Reads the whole file at `path` (at most 64 MiB), as macOS's `readFileSizet` does.
/// - Returns: The bytes, or `nil` and the `errno` of the failure.
private func readSettingsFile(_ path: String) -> (data: Data?, error: Int32) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return (nil, errno) }
    defer { close(fd) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { return (nil, errno) }
        if count == 0 { return (data, 0) }
        data.append(contentsOf: buffer[..<count])
        guard data.count <= 64 << 20 else { return (nil, EFBIG) }
    }
}

/// `security trust-settings-export`: writes a domain's trust settings to a file.
struct TrustSettingsExport: ToolCommand {
    static let name = "trust-settings-export"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Export trust settings.",
        usage: "security trust-settings-export [-s] [-d] settings_file",
        discussion: HelpText.wrapped(
            """
            Writes the user's trust settings, the admin's with -d, or the system's roots with -s, to \
            settings_file (mode 0600) as macOS's property list (trustVersion, trustList keyed by each \
            certificate's SHA-1), each entry also carrying its certificate so that \
            trust-settings-import restores it on another machine; prints "...Trust Settings exported \
            successfully." (not with security -q). A domain without settings prints \
            "SecTrustSettingsCreateExternalRepresentation: No Trust Settings were found." and exits 1.

            Example (copy one machine's trust settings to another):
              security trust-settings-export trust.plist
              security trust-settings-import trust.plist      (on the other machine)

            \(trustSettingsLocations)
            """))

    @Flag(name: .customShort("s"), help: "Export the system's trusted roots (default is user).")
    var system = false

    @Flag(name: .customShort("d"), help: "Export the admin trust settings (default is user).")
    var admin = false

    @Argument(help: ArgumentHelp("The file to write.", valueName: "settings_file"))
    var files: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard files.count == 1, let file = files.first else {
            throw CommandFailure(result: 2, messages: [], showsUsage: true)
        }
        let domain: SecTrustSettingsDomain = admin ? .admin : system ? .system : .user
        var data: CFData?
        let status = SecTrustSettingsCreateExternalRepresentation(domain, &data)
        guard status == errSecSuccess, let data else {
            throw trustSettingsFailure("SecTrustSettingsCreateExternalRepresentation", status, domain: domain)
        }
        let result = writeSettingsFile(file, data as Data)
        guard result == 0 else {
            throw CommandFailure(result: result, messages: [], rawLines: ["Error (\(result)) writing \(file)."])
        }
        if !session.quiet { Console.out("...Trust Settings exported successfully.\n") }
        return 0
    }
}

/// `security trust-settings-import`: replaces a domain's trust settings with those of a file.
struct TrustSettingsImport: ToolCommand {
    static let name = "trust-settings-import"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Import trust settings.",
        usage: "security trust-settings-import [-d] settings_file",
        discussion: HelpText.wrapped(
            """
            Replaces the user's trust settings, or with -d the admin's (root only), with those of \
            settings_file, written by trust-settings-export here or on a Mac; prints "...Trust \
            Settings imported successfully." (not with security -q). An entry without its \
            certificate (a Mac's export) is matched by SHA-1 against the certificates of the \
            keychain search list and the system roots. Nothing changes when the file is not valid, \
            an entry's certificate does not match its SHA-1, a certificate is found nowhere (each \
            is named), or a setting uses what Linux does not support (application, policy string, \
            key usage, allowed error, another policy); the command then exits 1.

            \(trustSettingsLocations)
            """))

    @Flag(name: .customShort("d"), help: "Import the admin trust settings (root only; default is user).")
    var admin = false

    @Argument(help: ArgumentHelp("The file to read.", valueName: "settings_file"))
    var files: [String] = []

    func execute(in session: Session) throws -> Int32 {
        guard files.count == 1, let file = files.first else {
            throw CommandFailure(result: 2, messages: [], showsUsage: true)
        }
        let (contents, error) = readSettingsFile(file)
        guard let data = contents else {
            throw CommandFailure(result: 1, messages: [], rawLines: ["Error (\(error)) reading \(file)."])
        }
        let domain: SecTrustSettingsDomain = admin ? .admin : .user
        do {
            try TrustSettingsImporter.importRepresentation(data, into: domain)
        } catch let error as TrustSettingsError {
            throw importFailure(error, domain: domain)
        }
        if !session.quiet { Console.out("...Trust Settings imported successfully.\n") }
        return 0
    }

    /// macOS's `cssmPerror` line, then why (which certificates are missing, what is not valid, that only
    /// root can change the admin trust settings).
    private func importFailure(_ error: TrustSettingsError, domain: SecTrustSettingsDomain) -> CommandFailure {
        CommandFailure(
            result: 1, messages: [],
            rawLines: [
                "SecTrustSettingsImportExternalRepresentation: \(statusMessage(error.status))",
                "security: \(error.message)",
            ])
    }
}
