import ArgumentParser
import Foundation
import KeychainModel
import Security

/// A certificate item found in a keychain: the item, its parsed certificate and where it is.
struct FoundCertificate {
    var item: Item
    var certificate: SecCertificate
    var keychain: OpenKeychain
    var der: Data { derData(certificate) }
}

/// Every certificate item of the keychains, in search-list order.
func allCertificates(in targets: [OpenKeychain], session: Session) throws -> [FoundCertificate] {
    var found: [FoundCertificate] = []
    for target in targets {
        for item in try keychainCertificateItems(target, session: session) {
            guard let data = item.data, let certificate = SecCertificateCreateWithData(nil, data as CFData) else {
                continue
            }
            found.append(FoundCertificate(item: item, certificate: certificate, keychain: target))
        }
    }
    return found
}

extension ItemFormat {
    /// The attribute block macOS prints for a certificate item (class `0x80001000`, the
    /// attributes of a CSSM certificate record in its order).
    static func certificateBlock(_ found: FoundCertificate) -> [UInt8] {
        let attributes = found.item.attributes
        let email = emailAddresses(found.certificate).first.map { AttributeValue.string($0) }
        let rows: [(String, Format, AttributeValue?)] = [
            ("alis", .blob, email),
            ("cenc", .uint32, attributes["cenc"]),
            ("ctyp", .uint32, attributes["ctyp"]),
            ("hpky", .blob, attributes["pkhh"]),
            ("issu", .blob, attributes["issr"]),
            ("labl", .blob, attributes[.label]),
            ("skid", .blob, attributes["skid"]),
            ("snbr", .blob, attributes["slnr"]),
            ("subj", .blob, attributes["subj"]),
        ]
        var out: [UInt8] = []
        out += Array("keychain: ".utf8) + buffer(Array(found.keychain.path.utf8)) + [0x0A]
        out += Array("version: \(keychainVersion)\n".utf8)
        out += Array("class: ".utf8) + uint32(0x8000_1000) + Array("\nattributes:\n".utf8)
        for (name, format, value) in rows {
            out += Array("    \"\(name)\"<\(format.rawValue)>=".utf8) + self.value(value, format: format) + [0x0A]
        }
        return out
    }
}

/// The one certificate that `-c name` or `-Z hash` names (`find_unique_certificate`): a hash
/// (SHA-1 or SHA-256) must match exactly; a name is looked for in the common name, ignoring
/// case, an exact match winning over partial ones.
/// - Throws: ``CommandFailure`` when the name matches several certificates.
func uniqueCertificate(_ certificates: [FoundCertificate], name: String?, hash: String?) throws -> FoundCertificate? {
    if let hash { return certificates.first { CertificateDigest.matches(hash, $0.der) } }
    guard let name else { return nil }
    var chosen: FoundCertificate?
    var chosenIsExact = false
    for candidate in certificates {
        guard let common = commonName(candidate.certificate), common.range(of: name, options: .caseInsensitive) != nil
        else { continue }
        let isExact = common.caseInsensitiveCompare(name) == .orderedSame
        if let previous = chosen {
            if chosenIsExact && !isExact { continue }
            if chosenIsExact == isExact {
                if previous.der == candidate.der { continue }
                throw CommandFailure.failure("\"\(name)\" is ambiguous, matches more than one certificate")
            }
        }
        chosen = candidate
        chosenIsExact = isExact
    }
    return chosen
}

// MARK: - find-certificate

/// `security find-certificate`: prints certificates of the keychains.
struct FindCertificate: ToolCommand {
    static let name = "find-certificate"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Find a certificate item.",
        usage: "security find-certificate [-a] [-c name] [-e emailAddress] [-m] [-p] [-Z] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Prints the first certificate whose common name contains -c (ignoring case) or that has \
            the email address of -e, or every one with -a, searching the keychains named on the \
            command line or else the search list.

            Output, per certificate: with -Z, "SHA-256 hash: …" and "SHA-1 hash: …" lines; with -m, \
            "email addresses: …"; then the certificate in PEM with -p, else its attributes in macOS's \
            format. Without -a, finding nothing exits 44 ("The specified item could not be found in \
            the keychain."); with -a it prints nothing and exits 0.

            Example:
              security find-certificate -c "Developer ID" -p build.keychain | openssl x509 -noout -subject
            """))

    @Flag(name: .customShort("a"), help: "Find all matching certificates, not just the first one.")
    var all = false

    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match a part of the common name (ignoring case).", valueName: "name"))
    var name: String?

    @Option(
        name: .customShort("e", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Match the email address.", valueName: "emailAddress"))
    var email: String?

    @Flag(name: .customShort("m"), help: "Show the email addresses in the certificate.")
    var showEmail = false

    @Flag(name: .customShort("p"), help: "Output the certificate in PEM format.")
    var pem = false

    @Flag(name: .customShort("Z"), help: "Print the SHA-256 and SHA-1 hashes of the certificate.")
    var hashes = false

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func execute(in session: Session) throws -> Int32 {
        let targets = try searchTargets(keychains, in: session)
        let certificates: [FoundCertificate]
        do {
            certificates = try allCertificates(in: targets, session: session)
        } catch {
            throw searchFailure(error)
        }
        let matching = certificates.filter { found in
            if let email {
                return emailAddresses(found.certificate).contains { $0.caseInsensitiveCompare(email) == .orderedSame }
            }
            if let name { return commonNameContains(found.certificate, name) }
            return true
        }
        if !all && matching.isEmpty {
            let function = email != nil ? "SecCertificateFindByEmail" : "SecKeychainSearchCopyNext"
            throw CommandFailure.status(KeychainError.Code.itemNotFound.rawValue, function)
        }
        for found in all ? matching : [matching[0]] {
            if hashes {
                Console.out(
                    "SHA-256 hash: \(CertificateDigest.sha256(found.der))\nSHA-1 hash: \(CertificateDigest.sha1(found.der))\n"
                )
            }
            if showEmail {
                Console.out("email addresses: " + emailAddresses(found.certificate).joined(separator: ", ") + "\n")
            }
            if pem {
                Console.out(PEMBlock.encode(found.der, label: "CERTIFICATE"))
            } else {
                Console.out(ItemFormat.certificateBlock(found))
            }
        }
        return 0
    }
}

// MARK: - find-identity

/// `security find-identity`: lists the identities (certificates with their private keys).
struct FindIdentity: ToolCommand {
    static let name = "find-identity"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Find an identity (certificate + private key).",
        usage: "security find-identity [-p policy] [-s string] [-v] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Lists the identities of the keychains named on the command line, or else of the search \
            list: each with the SHA-1 hash of its certificate and its name, and, in the list of all \
            identities, why its certificate is not valid under the policy (CSSMERR_TP_NOT_TRUSTED, \
            CSSMERR_TP_CERT_EXPIRED, …). -v lists only the valid ones, in macOS's format:
                1) 3A1F…C2 "Build Signing"
                   1 valid identities found

            Policies (-p, may be repeated; default basic): basic, ssl-client, ssl-server, smime, \
            eap, ipsec, ichat, codesigning, appleID, macappstore, sys-default, sys-kerberos-kdc. \
            -s gives the host name for the SSL policies, and otherwise a text looked for in the \
            certificate's name or email addresses.

            A certificate is valid when its chain ends at a trusted root and passes the checks of \
            SecTrust. Trusted roots on Linux are the system's (/etc/ssl/certs/ca-certificates.crt); \
            certificates in the keychains searched serve as intermediates, and the user's and admin's \
            trust settings (add-trusted-cert) are honoured: a self-signed identity is listed with \
            CSSMERR_TP_NOT_TRUSTED until its certificate (or its CA) is trusted with add-trusted-cert, \
            as on a Mac. The \
            ssl policies check the extended key usage and host name; the others check the chain, \
            as basic does.
            """))

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A policy to evaluate (may be repeated; default basic).", valueName: "policy"))
    var policies: [String] = []

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("A policy-specific string (a host name for SSL, an email address).", valueName: "string"))
    var string: String?

    @Flag(name: .customShort("v"), help: "Show valid identities only.")
    var validOnly = false

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    /// macOS's policy names, in the order it evaluates them (its bit order), and their titles.
    static let policyTable: [(name: String, title: String)] = [
        ("ssl-client", "SSL (client)"), ("ssl-server", "SSL (server)"), ("smime", "S/MIME"), ("eap", "EAP"),
        ("ipsec", "IPsec"), ("ichat", "iChat"), ("codesigning", "Code Signing"), ("basic", "X.509 Basic"),
        ("sys-default", ""), ("sys-kerberos-kdc", ""), ("appleID", "AppleID Sharing"),
        ("macappstore", "Mac App Store Receipt"),
    ]

    /// The trust settings' name (`add-trusted-cert -p`) of each of these policies.
    static let trustSettingsNames: [String: String] = [
        "smime": "smime", "eap": "eap", "ipsec": "IPSec", "codesigning": "codeSign", "basic": "basic",
        "appleID": "appleID", "macappstore": "macappstore",
    ]

    func validate() throws {
        for policy in policies where !Self.policyTable.contains(where: { $0.name == policy }) {
            throw ValidationError("Unknown policy \"\(policy)\".")
        }
    }

    func execute(in session: Session) throws -> Int32 {
        let targets = try searchTargets(keychains, in: session)
        var identities: [SecIdentity] = []
        var others: [SecCertificate] = []
        do {
            for target in targets { identities += try keychainIdentities(target, session: session) }
            others = try allCertificates(in: targets, session: session).map(\.certificate)
        } catch {
            throw searchFailure(error)
        }
        if let string { Console.out("Looking for identities matching \"\(string)\"\n") }
        let wanted = policies.isEmpty ? ["basic"] : policies
        for (name, title) in Self.policyTable where wanted.contains(name) {
            if name == "sys-default" || name == "sys-kerberos-kdc" {
                // Linux has no system identities.
                Console.out(
                    name == "sys-default" ? "\n  System default identity\n" : "\n  System Kerberos KDC identity\n")
                continue
            }
            let policy: SecPolicy
            var candidates = identities
            switch name {
            case "ssl-client", "ssl-server":
                let server = name == "ssl-server"
                policy = SecPolicyCreateSSL(server, server ? string.map { $0 as CFString } : nil)
            default:
                // A trust setting restricted to a policy (`add-trusted-cert -p codeSign`) counts
                // when that policy is evaluated, as on macOS.
                policy =
                    Self.trustSettingsNames[name].flatMap(SecPolicy.trustSettingsPolicy(named:))
                    ?? SecPolicyCreateBasicX509()
                if let string {
                    candidates = candidates.filter { identity in
                        let certificate = certificate(of: identity)
                        return [commonName(certificate), inferredLabel(certificate)].contains {
                            $0?.range(of: string, options: .caseInsensitive) != nil
                        } || emailAddresses(certificate).contains { $0.caseInsensitiveCompare(string) == .orderedSame }
                    }
                }
            }
            let evaluated = candidates.map { identity in
                let certificate = certificate(of: identity)
                return (certificate, trustStatus(certificate, others: others, policy: policy))
            }
            if !validOnly {
                Console.out("\nPolicy: \(title)\n  Matching identities\n")
                for (index, (certificate, status)) in evaluated.enumerated() {
                    Console.out(line(index + 1, certificate, status: status))
                }
                Console.out("     \(evaluated.count) identities found\n\n  Valid identities only\n")
            }
            let valid = evaluated.filter { $0.1 == errSecSuccess }
            for (index, (certificate, status)) in valid.enumerated() {
                Console.out(line(index + 1, certificate, status: status))
            }
            Console.out("     \(valid.count) valid identities found\n")
        }
        return 0
    }

    /// `printIdentity`: `%3d) SHA1 "label"` and the trust failure, if any.
    private func line(_ ordinal: Int, _ certificate: SecCertificate, status: OSStatus) -> String {
        let number = String(ordinal)
        let padded = String(repeating: " ", count: max(0, 3 - number.count)) + number
        let label = inferredLabel(certificate).flatMap { $0.isEmpty ? nil : $0 } ?? "<unknown>"
        let failure = status == errSecSuccess ? "" : " (\(cssmTrustErrorName(status)))"
        return "\(padded)) \(CertificateDigest.sha1(derData(certificate))) \"\(label)\"\(failure)\n"
    }
}

// MARK: - add-certificates

/// `security add-certificates`: adds DER or PEM certificate files to a keychain.
struct AddCertificates: ToolCommand {
    static let name = "add-certificates"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Add certificates to a keychain.",
        usage: "security add-certificates [-k keychain] file...",
        discussion: HelpText.wrapped(
            """
            Adds each certificate file (DER, or PEM: the first block of the file) to the \
            keychain of -k, or to the default keychain. A certificate the keychain has already is \
            reported ("<file>: already in <keychain>") and the command exits 1 after adding the \
            others, as on macOS.
            """))

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to add to (default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    @Argument(help: ArgumentHelp("The certificate files.", valueName: "file"))
    var files: [String] = []

    func execute(in session: Session) throws -> Int32 {
        let target: OpenKeychain
        do {
            target = try session.open(keychain, createDefault: keychain == nil)
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainOpen \(keychain ?? "<default>")").withResult(1)
        }
        var result: Int32 = 0
        for file in files {
            let certificate: SecCertificate
            do {
                certificate = try readCertificateFile(file)
            } catch let failure as CommandFailure {
                for line in failure.rawLines { Console.err(line + "\n") }
                result = 1
                continue
            }
            do {
                try withSecurityKeychain(target, session: session) {
                    try securityCheck(SecItemAdd([kSecValueRef: certificate] as CFDictionary, nil))
                }
            } catch let error as KeychainError where error.code == .duplicateItem {
                Console.err("security: \(file): already in \(keychain ?? "default keychain")\n")
                result = 1
            } catch {
                let failure = searchFailure(error, function: "SecCertificateAddToKeychain") as? CommandFailure
                for message in failure?.messages ?? [] { Console.err("security: \(message)\n") }
                result = 1
            }
        }
        return result
    }
}

// MARK: - delete-certificate, delete-identity

/// The options and body `delete-certificate` and `delete-identity` share.
struct CertificateDeletion: ParsableArguments {
    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The certificate's common name (or a part of it, if unique).", valueName: "name"))
    var name: String?

    @Option(
        name: .customShort("Z", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The certificate's SHA-1 or SHA-256 hash, in hexadecimal.", valueName: "hash"))
    var hash: String?

    @Flag(name: .customShort("t"), help: "Also delete the certificate's user trust settings.")
    var deleteTrust = false

    @Argument(help: ArgumentHelp("Keychains to search (default: the search list).", valueName: "keychain"))
    var keychains: [String] = []

    func validate() throws {
        if name == nil && hash == nil { throw ValidationError("Say which certificate: give -c <name> or -Z <hash>.") }
    }

    /// `do_delete_certificate`: deletes the one certificate named, and with `identity` its
    /// private key first.
    func run(identity deletingIdentity: Bool, session: Session) throws -> Int32 {
        let targets = try searchTargets(keychains, in: session)
        let found: FoundCertificate?
        do {
            found = try uniqueCertificate(allCertificates(in: targets, session: session), name: name, hash: hash)
        } catch {
            throw searchFailure(error)
        }
        guard let found else {
            throw CommandFailure(
                result: 1, messages: [], rawLines: ["Unable to delete certificate matching \"\(name ?? hash ?? "")\""])
        }
        do {
            if deletingIdentity {
                let identity = try keychainIdentities(found.keychain, session: session).first {
                    certificate(of: $0) == found.certificate
                }
                if let identity {
                    var key: SecKey?
                    SecIdentityCopyPrivateKey(identity, &key)
                    if let key {
                        try withSecurityKeychain(found.keychain, session: session) {
                            try securityCheck(SecItemDelete([kSecValueRef: key] as CFDictionary))
                        }
                    }
                }
            }
            var query = ItemQuery(class: .certificate, persistentID: found.item.persistentID)
            query.synchronizable = .any
            try session.withAccess(to: found.keychain) { _ = try found.keychain.database.delete(query) }
        } catch {
            throw searchFailure(error, function: "SecKeychainItemDelete")
        }
        if deleteTrust {
            let status = SecTrustSettingsRemoveTrustSettings(found.certificate, .user)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw CommandFailure(
                    result: 1, messages: [], rawLines: ["SecTrustSettingsRemoveTrustSettings: \(statusMessage(status))"]
                )
            }
        }
        return 0
    }
}

/// `security delete-certificate`: deletes a certificate from a keychain.
struct DeleteCertificate: ToolCommand {
    static let name = "delete-certificate"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Delete a certificate from a keychain.",
        usage: "security delete-certificate [-c name] [-Z hash] [-t] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Deletes the one certificate whose SHA-1 or SHA-256 hash is -Z, or whose common name \
            contains -c (an exact name wins; a name that matches several certificates is an error). \
            Its private key stays (see delete-identity). When nothing matches, the command prints \
            "Unable to delete certificate matching …" and exits 1.
            """))

    @OptionGroup var options: CertificateDeletion

    func execute(in session: Session) throws -> Int32 { try options.run(identity: false, session: session) }
}

/// `security delete-identity`: deletes a certificate and its private key.
struct DeleteIdentity: ToolCommand {
    static let name = "delete-identity"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Delete an identity (certificate + private key) from a keychain.",
        usage: "security delete-identity [-c name] [-Z hash] [-t] [keychain...]",
        discussion: HelpText.wrapped(
            """
            Deletes the one certificate named as for delete-certificate, and its private key. \
            Certificates of the same key's other identities, and other keys, stay.
            """))

    @OptionGroup var options: CertificateDeletion

    func execute(in session: Session) throws -> Int32 { try options.run(identity: true, session: session) }
}

// MARK: - verify-cert

/// Reads a certificate file, DER or PEM, as macOS's `readCertFile` does.
/// - Throws: ``CommandFailure`` with macOS's lines: `***Error reading file <file>` (on
///   standard output, as macOS prints it), `Error decoding cert file <file>`, or
///   `SecCertificateCreateFromData: <message>`.
func readCertificateFile(_ path: String) throws -> SecCertificate {
    let data: Data
    do {
        data = try readInputFile(path)
    } catch {
        Console.out("***Error reading file \(path)\n")
        throw CommandFailure(result: 1, messages: [])
    }
    var der = data
    if data.starts(with: Array("-----BEGIN".utf8))
        || String(decoding: data.prefix(1024), as: UTF8.self).contains("-----BEGIN ")
    {
        guard let block = PEMBlock.blocks(in: data)?.first else {
            throw CommandFailure(result: 1, messages: [], rawLines: ["Error decoding cert file \(path)"])
        }
        der = block.der
    }
    guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else {
        throw CommandFailure(
            result: 1, messages: [], rawLines: ["SecCertificateCreateFromData: \(statusMessage(errSecDecode))"])
    }
    return certificate
}

/// `security verify-cert`: evaluates a certificate chain with SecTrust.
struct VerifyCert: ToolCommand {
    static let name = "verify-cert"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Verify certificate(s).",
        usage: """
            security verify-cert [-c certFile...] [-r rootCertFile...] [-p policy] [-C] [-d date] [-k keychain...] \
            [-s sslHost] [-e emailAddress] [-L] [-l] [-N] [-q]
            """,
        discussion: HelpText.wrapped(
            """
            Verifies the certificate of the first -c (the others, and the certificates of the keychains \
            given with -k, may serve as intermediates) against the roots of -r, or else the system's \
            (/etc/ssl/certs/ca-certificates.crt) and the certificates trusted with add-trusted-cert \
            (the trust settings are ignored with -r, as on macOS). With only one -r, the root itself is verified. \
            Prints "...certificate verification successful." and exits 0, or prints \
            "Cert Verify Result: <reason>" (CSSMERR_TP_NOT_TRUSTED, CSSMERR_TP_CERT_EXPIRED, \
            CSSMERR_APPLETP_HOSTNAME_MISMATCH, …) on standard error and exits 1.

            Policies (-p): basic (the default), ssl (with -s <host>; -C for a client certificate); \
            macOS's other policy names are checked as basic. -d YYYY-MM-DD[-hh:mm:ss] verifies at \
            that date (UTC). -L, -l, -N and -R are accepted for macOS scripts; certificates are never \
            fetched from the network and revocation is not checked on Linux.

            Example:
              security verify-cert -c server.pem -c intermediate.pem -r root.pem -p ssl -s example.com
            """))

    @Option(
        name: .customShort("c", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A certificate file, DER or PEM; the first is the one verified.", valueName: "certFile"))
    var certificateFiles: [String] = []

    @Option(
        name: .customShort("r", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A root (anchor) certificate file.", valueName: "rootCertFile"))
    var rootFiles: [String] = []

    @Option(
        name: .customShort("p", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The policy: basic (default), ssl, smime, codeSign, …", valueName: "policy"))
    var policy: String = "basic"

    @Flag(name: .customShort("C"), help: "Verify a client certificate (with -p ssl).")
    var client = false

    @Option(
        name: .customShort("d", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Verify at this date: YYYY-MM-DD or YYYY-MM-DD-hh:mm:ss (UTC).", valueName: "date"))
    var date: String?

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("A keychain whose certificates may serve as intermediates.", valueName: "keychain"))
    var keychains: [String] = []

    @Option(
        name: .customShort("s", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The host name the SSL policy checks.", valueName: "sslHost"))
    var sslHost: String?

    @Option(
        name: .customShort("e", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("An email address (accepted; the S/MIME policy is checked as basic).", valueName: "email"))
    var email: String?

    @Option(
        name: .customShort("R", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp("Accepted for macOS scripts: revocation is not checked on Linux.", valueName: "option"))
    var revocation: [String] = []

    @Flag(name: .customShort("L"), help: "Accepted for macOS scripts (certificates are never fetched).")
    var local = false

    @Flag(name: .customShort("l"), help: "Accepted for macOS scripts (the leaf is a CA).")
    var leafIsCA = false

    @Flag(name: .customShort("N"), help: "Accepted for macOS scripts (no keychain search list is used).")
    var noKeychains = false

    @Flag(name: .customShort("q"), help: "Quiet: print nothing, only set the exit status.")
    var quiet = false

    /// macOS's policy names (`policyStringToOid`).
    static let policyNames: Set<String> = [
        "basic", "ssl", "smime", "codeSign", "IPSec", "iChat", "swUpdate", "pkgSign", "pkinitClient",
        "pkinitServer", "eap", "macappstore", "appleID", "timestamping", "revocation", "passbook",
    ]

    func execute(in session: Session) throws -> Int32 {
        guard Self.policyNames.contains(policy) else {
            Console.err("***unknown policy spec (\(policy))\n")
            return 2
        }
        var certificates = try certificateFiles.map(readCertificateFile)
        let roots = try rootFiles.map(readCertificateFile)
        if certificates.isEmpty {
            guard !roots.isEmpty else {
                Console.err("***No certs specified.\n")
                return 2
            }
            guard roots.count == 1 else {
                Console.err("***Multiple roots and no certs not allowed.\n")
                return 2
            }
            certificates = roots
        }
        var verifyDate: Date?
        if let date {
            guard let parsed = Self.parseDate(date) else {
                Console.err("Date processing error\n")
                return 2
            }
            verifyDate = parsed
        }
        if !keychains.isEmpty {
            let targets = try searchTargets(keychains, in: session)
            do {
                certificates += try allCertificates(in: targets, session: session).map(\.certificate)
            } catch {
                throw searchFailure(error)
            }
        }
        // Another policy than ssl is checked as basic X.509, under its own name, so that trust
        // settings restricted to it (`add-trusted-cert -p codeSign`) apply, as on macOS.
        let secPolicy =
            policy == "ssl"
            ? SecPolicyCreateSSL(!client, sslHost.map { $0 as CFString })
            : SecPolicy.trustSettingsPolicy(named: policy) ?? SecPolicyCreateBasicX509()
        var trust: SecTrust?
        guard SecTrustCreateWithCertificates(certificates as CFArray, secPolicy, &trust) == errSecSuccess,
            let trust
        else {
            throw CommandFailure(
                result: 1, messages: [], rawLines: ["SecTrustCreateWithCertificates: \(statusMessage(errSecParam))"])
        }
        if !roots.isEmpty { SecTrustSetAnchorCertificates(trust, roots as CFArray) }
        if let verifyDate { SecTrustSetVerifyDate(trust, verifyDate as CFDate) }
        var error: CFError?
        if SecTrustEvaluateWithError(trust, &error) {
            if !quiet { Console.out("...certificate verification successful.\n") }
            return 0
        }
        if !quiet {
            let status = OSStatus(truncatingIfNeeded: error?.code ?? Int(errSecNotTrusted))
            Console.err("Cert Verify Result: \(cssmTrustErrorName(status))\n")
            if status == errSecInvalidTrustSettings {
                for domain in [SecTrustSettingsDomain.user, .admin] {
                    if let problem = TrustSettingsStore.problem(domain) { Console.err("security: \(problem)\n") }
                }
            }
        }
        return 1
    }

    /// `-d`: `%Y-%m-%d-%H:%M:%S` or `%Y-%m-%d`, in UTC.
    static func parseDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in ["yyyy-MM-dd-HH:mm:ss", "yyyy-MM-dd"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
