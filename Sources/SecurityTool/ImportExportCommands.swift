import ArgumentParser
import Foundation
import KeychainModel
import Security

// MARK: - import

/// The formats of `-f` (macOS's `SecExternalFormat` names in `keychain_import.c`).
enum ExternalFormatName: String, CaseIterable, ExpressibleByArgument {
    case openssl, openssh1, openssh2, bsafe, raw, pkcs7, pkcs8, pkcs12, netscape, x509, pemseq
}

/// `security import`: imports certificates, keys and identities from a file into a keychain.
struct ImportCommand: ToolCommand {
    static let name = "import"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Import items into a keychain.",
        usage: """
            security import inputfile [-k keychain] [-t type] [-f format] [-w] [-P passphrase] [options...]
            """,
        discussion: HelpText.wrapped(
            """
            Reads a PKCS#12 file (.p12, .pfx: identities, with their certificate chains), DER or PEM \
            certificates (one, or a PEM bundle), or unencrypted PEM keys (PRIVATE KEY, EC PRIVATE KEY, \
            RSA PRIVATE KEY, PUBLIC KEY; or the same keys in DER) and adds them to the keychain of -k, or to the default \
            keychain. It prints what it imported, as macOS does ("1 identity imported.", "2 \
            certificates imported.", "1 key imported.").

            The format is taken from -f, else from the file's name (.p12, .pfx) and contents. -t \
            selects the items of a PEM or DER file; a PKCS#12 file is imported whole whatever -t \
            says, as on macOS. \
            The passphrase of a PKCS#12 file comes from -P, else it is asked for on the terminal \
            ("password to unlock <file>: ", as macOS asks; without a terminal the empty passphrase is \
            tried). A wrong passphrase fails with "MAC \
            verification failed during PKCS12 import (wrong password?)" and exit status 1. Files \
            encrypted with legacy ciphers (RC2, 3DES: `openssl pkcs12 -export -legacy`, old \
            exports) are read as on macOS; one whose cipher this system's libcrypto cannot run is \
            refused; convert it first with
              \(legacyPKCS12Conversion)

            Importing an item the keychain already has fails with "The specified item already \
            exists in the keychain." (exit 1), as on macOS.

            -A, -T and -x are accepted so that macOS scripts run unchanged. They have no effect \
            on Linux: any process running as you that can unlock the keychain may use its keys, and \
            private keys are never exported except as PKCS#12 by `security export`.

            Example (a CI signing set-up):
              security create-keychain -p "$KC_PW" build.keychain
              security unlock-keychain -p "$KC_PW" build.keychain
              security import signing.p12 -k build.keychain -P "$P12_PW" -T /usr/bin/codesign
              security find-identity -p basic build.keychain
            """))

    @Argument(help: ArgumentHelp("The file to import.", valueName: "inputfile"))
    var inputFile: String

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to import into (default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The type of items: pub, priv, session, cert or agg.", valueName: "type"))
    var type: String?

    @Option(
        name: .customShort("f", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The format: openssl, openssh1, openssh2, bsafe, raw, pkcs7, pkcs8, pkcs12, netscape, x509 or pemseq.",
            valueName: "format"))
    var format: String?

    @Flag(name: .customShort("w"), help: "The keys are wrapped (encrypted): not supported on Linux.")
    var wrapped = false

    @Flag(name: .customShort("x"), help: "Accepted for macOS scripts (non-extractable keys); no effect.")
    var nonExtractable = false

    @Option(
        name: .customShort("P", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The passphrase of a PKCS#12 file. \(HelpText.secretOnCommandLine)", valueName: "passphrase"))
    var passphrase: String?

    @Flag(name: .customShort("A"), help: "Accepted for macOS scripts; no effect on Linux.")
    var allowAnyApplication = false

    @Option(
        name: .customShort("T", allowingJoined: true), parsing: .unconditionalSingleValue,
        help: ArgumentHelp(
            "Accepted for macOS scripts (an application allowed to use the keys); no effect. May be repeated.",
            valueName: "appPath"))
    var trustedApplications: [String] = []

    func validate() throws {
        if let type, !["pub", "priv", "session", "cert", "agg"].contains(type) {
            throw ValidationError("Unknown type \"\(type)\" (give pub, priv, session, cert or agg).")
        }
        if let format, ExternalFormatName(rawValue: format) == nil {
            throw ValidationError("Unknown format \"\(format)\".")
        }
    }

    /// What a file holds, once read.
    private struct Contents {
        var identities: [SecIdentity] = []
        var certificates: [SecCertificate] = []
        var keys: [SecKey] = []
    }

    private static let function = "SecKeychainItemImport"

    func execute(in session: Session) throws -> Int32 {
        if wrapped {
            throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecUnsupportedFormat))")
        }
        let target: OpenKeychain
        do {
            target = try session.open(keychain, createDefault: keychain == nil)
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainOpen \(keychain ?? "<default>")").withResult(1)
        }
        let data = try readInputFile(inputFile)
        if SSHKeyImport.isOpenSSHPrivateKey(data) { return try SSHKeyImport.run(data, keychain: keychain) }
        let fileFormat = inferredFormat(data)
        var contents = try read(data, as: fileFormat, session: session)
        // As on macOS, a PKCS#12 file is imported whole whatever -t says: SecImportRep::importRep
        // (OSX/libsecurity_keychain/lib/SecExternalRep.cpp) hands kSecFormatPKCS12 to the
        // PKCS#12 importer before it looks at the item type. GitHub's "Installing an Apple
        // certificate on macOS runners" imports its .p12 with `-t cert -f pkcs12`.
        switch fileFormat == .pkcs12 ? nil : type {
        case "cert":
            contents.identities = []
            contents.keys = []
        case "priv", "pub", "session":
            contents.identities = []
            contents.certificates = []
            // Session (symmetric) keys are never read from files here.
            contents.keys = contents.keys.filter { isPrivateKey($0) == (type == "priv") && type != "session" }
        default: break
        }
        guard !contents.identities.isEmpty || !contents.certificates.isEmpty || !contents.keys.isEmpty else {
            throw CommandFailure.failure("No keychain items found")
        }
        var certificatesAdded = 0
        do {
            try withSecurityKeychain(target, session: session) {
                for identity in contents.identities {
                    try securityCheck(SecItemAdd([kSecValueRef: identity] as CFDictionary, nil))
                }
                for key in contents.keys {
                    // The label macOS's import gives keys that come without one.
                    let label = isPrivateKey(key) ? "Imported Private Key" : "Imported Public Key"
                    try securityCheck(SecItemAdd([kSecValueRef: key, kSecAttrLabel: label] as CFDictionary, nil))
                }
                for certificate in contents.certificates {
                    let status = SecItemAdd([kSecValueRef: certificate] as CFDictionary, nil)
                    // A chain certificate the keychain has already (another identity's CA) is
                    // not an error, as on macOS; a certificate imported on its own is.
                    if status == errSecDuplicateItem && !contents.identities.isEmpty { continue }
                    try securityCheck(status)
                    certificatesAdded += 1
                }
            }
        } catch {
            throw (searchFailure(error, function: Self.function) as? CommandFailure)?.withResult(1) ?? error
        }
        let counts = [
            (contents.identities.count, "identity", "identities"), (contents.keys.count, "key", "keys"),
            (certificatesAdded, "certificate", "certificates"),
        ]
        for (count, one, many) in counts where count > 0 {
            Console.out("\(count) \(count > 1 ? many : one) imported.\n")
        }
        return 0
    }

    /// Whether a key is a private key (its `kSecAttrKeyClass`).
    private func isPrivateKey(_ key: SecKey) -> Bool {
        (SecKeyCopyAttributes(key) as? NSDictionary)?[kSecAttrKeyClass as String].map { "\($0)" } == "1"
    }

    /// The format the file is read as: `-f`, else its name and contents, as
    /// `SecKeychainItemImport` infers it.
    private func inferredFormat(_ data: Data) -> ExternalFormatName? {
        if let format { return ExternalFormatName(rawValue: format) }
        let fileExtension = (inputFile as NSString).pathExtension.lowercased()
        if fileExtension == "p12" || fileExtension == "pfx" { return .pkcs12 }
        if PEMBlock.blocks(in: data) != nil { return .pemseq }
        if SecCertificateCreateWithData(nil, data as CFData) != nil { return .x509 }
        if KeyFileContents.read(der: data) != nil { return .openssl }
        // A DER SEQUENCE that is not a certificate: PKCS#12 is the one such format read here.
        if data.first == 0x30 { return .pkcs12 }
        return nil
    }

    private func read(_ data: Data, as format: ExternalFormatName?, session: Session) throws -> Contents {
        let unknownFormat = CommandFailure.failure("\(Self.function): \(statusMessage(errSecUnknownFormat))")
        switch format {
        case .pkcs12:
            return try readPKCS12(data, session: session)
        case .x509:
            if let blocks = PEMBlock.blocks(in: data) { return try readPEM(blocks) }
            guard let certificate = SecCertificateCreateWithData(nil, data as CFData) else {
                throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecDecode))")
            }
            return Contents(certificates: [certificate])
        case .pemseq, .openssl, .pkcs8:
            if let blocks = PEMBlock.blocks(in: data) { return try readPEM(blocks) }
            guard let file = KeyFileContents.read(der: data) else { throw unknownFormat }
            return Contents(keys: [try secKey(file)])
        case .none:
            throw unknownFormat
        default:
            throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecUnsupportedFormat))")
        }
    }

    /// The certificates and keys of PEM blocks; a block of any other kind, or one that does not
    /// decode, fails the import (nothing is added).
    private func readPEM(_ blocks: [PEMBlock]) throws -> Contents {
        var contents = Contents()
        for block in blocks {
            switch block.label {
            case "CERTIFICATE", "TRUSTED CERTIFICATE", "X509 CERTIFICATE":
                guard let certificate = SecCertificateCreateWithData(nil, block.der as CFData) else {
                    throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecDecode))")
                }
                contents.certificates.append(certificate)
            case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "PUBLIC KEY", "RSA PUBLIC KEY":
                guard let file = KeyFileContents.read(block) else {
                    throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecUnsupportedFormat))")
                }
                contents.keys.append(try secKey(file))
            default:
                // ENCRYPTED PRIVATE KEY, PKCS7, CRLs: not read here.
                throw CommandFailure(
                    result: 1,
                    messages: [
                        "\(Self.function): \(statusMessage(errSecUnsupportedFormat))",
                        "\(inputFile): PEM blocks of type \"\(block.label)\" cannot be imported on Linux",
                    ])
            }
        }
        return contents
    }

    /// The `SecKey` of a key read from a file.
    private func secKey(_ file: KeyFileContents) throws -> SecKey {
        let attributes: [CFString: Any] = [
            kSecAttrKeyType: file.kind == .ec ? kSecAttrKeyTypeECSECPrimeRandom : kSecAttrKeyTypeRSA,
            kSecAttrKeyClass: file.isPrivate ? kSecAttrKeyClassPrivate : kSecAttrKeyClassPublic,
        ]
        guard let key = SecKeyCreateWithData(file.bytes as CFData, attributes as CFDictionary, nil) else {
            throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecUnsupportedFormat))")
        }
        return key
    }

    /// The identities of a PKCS#12 file and the chain certificates that come with them.
    private func readPKCS12(_ data: Data, session: Session) throws -> Contents {
        var secret = passphrase
        var askedNobody = false
        if secret == nil {
            let fileName = (inputFile as NSString).lastPathComponent
            // macOS's prompt_password, word for word (it names the file as if it were a keychain).
            secret =
                try session.secrets.readFromTerminalOnly(prompt: "password to unlock \(fileName): ")
                .map { String(decoding: $0, as: UTF8.self) }
            askedNobody = secret == nil
        }
        let phrase = secret ?? ""
        var items: CFArray?
        let status = SecPKCS12Import(data as CFData, [kSecImportExportPassphrase: phrase] as CFDictionary, &items)
        switch status {
        case errSecSuccess: break
        case errSecAuthFailed, errSecPkcs12VerifyFailure:
            var messages = ["\(Self.function): \(statusMessage(errSecPkcs12VerifyFailure))"]
            if askedNobody {
                messages.append(
                    "\(inputFile): the empty passphrase was tried (no -P, and no terminal to ask on): "
                        + "give the file's passphrase with -P")
            }
            throw CommandFailure(result: 1, messages: messages)
        default:
            var messages = ["\(Self.function): \(statusMessage(status))"]
            if status == errSecDecode, let reason = pkcs12Diagnosis(data, passphrase: phrase) {
                messages.append("\(inputFile): \(reason)")
            }
            throw CommandFailure(result: 1, messages: messages)
        }
        var contents = Contents()
        for case let entry as NSDictionary in (items ?? NSArray()) {
            guard let identity = entry[kSecImportItemIdentity as String].map({ $0 as AnyObject }) as? SecIdentity
            else { continue }
            contents.identities.append(identity)
            let chain = (entry[kSecImportItemCertChain as String] as? NSArray)?.compactMap { $0 as? SecCertificate }
            for certificate in chain?.dropFirst() ?? [] where !contents.certificates.contains(certificate) {
                contents.certificates.append(certificate)
            }
        }
        return contents
    }
}

// MARK: - export

/// `security export`: writes a keychain's certificates or identities to a file.
struct ExportCommand: ToolCommand {
    static let name = "export"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Export items from a keychain.",
        usage: "security export [-k keychain] [-t type] [-f format] [-p] [-P passphrase] [-o outfile]",
        discussion: HelpText.wrapped(
            """
            Writes the items of a keychain (-k, else the default keychain) to -o, or to standard \
            output.

            Types (-t): certs, identities, all (the default: certificates and identities), allKeys, \
            pubKeys, privKeys. Formats (-f): pkcs12 (identities with their keys, encrypted under -P: \
            PBES2 with AES-256-CBC and an HMAC-SHA-256 MAC, as `openssl pkcs12 -export` writes by \
            default), x509 (one certificate, DER), pemseq (certificates, PEM). Without -f, one \
            certificate is written as x509 and several as pemseq, as on macOS. -p wraps the output in \
            PEM. The passphrase of a PKCS#12 file comes from -P, else it is asked for on the terminal.

            Linux limits: a PKCS#12 file holds one identity (with the keychain's other certificates); \
            keys are exported only inside PKCS#12 files (other key formats fail with "Import/Export \
            format unsupported.").

            Example:
              security export -k build.keychain -t identities -f pkcs12 -P "$P12_PW" -o signing.p12
              openssl pkcs12 -in signing.p12 -passin env:P12_PW -nokeys
            """))

    @Option(
        name: .customShort("k", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The keychain to export from (default: the default keychain).", valueName: "keychain"))
    var keychain: String?

    @Option(
        name: .customShort("t", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The items: certs, allKeys, pubKeys, privKeys, identities or all (default).", valueName: "type"))
    var type: String = "all"

    @Option(
        name: .customShort("f", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The format: pkcs12, x509 or pemseq (and macOS's other names).", valueName: "format"))
    var format: String?

    @Flag(name: .customShort("w"), help: "Wrap (encrypt) private keys: not supported on Linux.")
    var wrapped = false

    @Flag(name: .customShort("p"), help: "Write PEM instead of binary.")
    var pem = false

    @Option(
        name: .customShort("P", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp(
            "The passphrase of a PKCS#12 file. \(HelpText.secretOnCommandLine)", valueName: "passphrase"))
    var passphrase: String?

    @Option(
        name: .customShort("o", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("The file to write (default: standard output).", valueName: "outfile"))
    var output: String?

    func validate() throws {
        guard ["certs", "allKeys", "pubKeys", "privKeys", "identities", "all"].contains(type) else {
            throw ValidationError("Unknown type \"\(type)\".")
        }
        if let format, ExternalFormatName(rawValue: format) == nil {
            throw ValidationError("Unknown format \"\(format)\".")
        }
    }

    private static let function = "SecKeychainItemExport"

    func execute(in session: Session) throws -> Int32 {
        let unsupported = CommandFailure.failure("\(Self.function): \(statusMessage(errSecUnsupportedFormat))")
        let target: OpenKeychain
        do {
            target = try session.open(keychain, createDefault: keychain == nil)
        } catch {
            throw CommandFailure.status(of: error, "SecKeychainOpen \(keychain ?? "<default>")").withResult(1)
        }
        if ["allKeys", "pubKeys", "privKeys"].contains(type) || wrapped { throw unsupported }
        var identities: [SecIdentity] = []
        var certificates: [SecCertificate] = []
        do {
            if type == "identities" || type == "all" {
                identities = try keychainIdentities(target, session: session)
            }
            if type == "certs" || type == "all" {
                certificates = try keychainCertificateItems(target, session: session).compactMap { item in
                    item.data.flatMap { SecCertificateCreateWithData(nil, $0 as CFData) }
                }
            }
        } catch {
            throw (searchFailure(error, function: "SecKeychainSearchCopyNext") as? CommandFailure)?.withResult(1)
                ?? error
        }
        let identityCertificates = identities.map(certificate(of:))
        let otherCertificates = certificates.filter { !identityCertificates.contains($0) }
        // macOS counts what it exports as items: with -t all an identity is two (its certificate
        // and its private key), with -t identities one; the default format follows the count.
        let itemCount = identities.count * (type == "all" ? 2 : 1) + otherCertificates.count
        guard itemCount > 0 else {
            throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecParam))")
        }
        var chosen = format.flatMap(ExternalFormatName.init(rawValue:))
        if chosen == nil { chosen = itemCount > 1 ? .pemseq : .x509 }
        let bytes: Data
        switch chosen {
        case .pkcs12:
            guard identities.count == 1 else {
                throw CommandFailure(
                    result: 1,
                    messages: [
                        "\(Self.function): \(statusMessage(errSecParam))",
                        "a PKCS#12 file written on Linux holds exactly one identity (this keychain has \(identities.count))",
                    ])
            }
            bytes = try exportPKCS12(identities[0], with: otherCertificates, session: session)
        case .x509:
            guard identities.count + otherCertificates.count == 1 else {
                throw CommandFailure.failure("\(Self.function): \(statusMessage(errSecParam))")
            }
            let der = derData(identityCertificates.first ?? otherCertificates[0])
            bytes = pem ? Data(PEMBlock.encode(der, label: "CERTIFICATE").utf8) : der
        case .pemseq:
            // Private keys are never written in the clear: only the certificates, which is what
            // macOS's pemseq holds too unless keys are wrapped under a passphrase.
            guard identities.isEmpty else {
                throw CommandFailure(
                    result: 1,
                    messages: unsupported.messages + [
                        "private keys are exported only as PKCS#12 on Linux: give -f pkcs12, or -t certs for the certificates"
                    ])
            }
            bytes = Data(otherCertificates.map { PEMBlock.encode(derData($0), label: "CERTIFICATE") }.joined().utf8)
        default:
            throw unsupported
        }
        if let output {
            guard
                FileManager.default.createFile(atPath: output, contents: bytes, attributes: [.posixPermissions: 0o600])
            else {
                throw CommandFailure.failure("Error writing to \(output): \(String(cString: strerror(errno)))")
            }
            Console.err("...\(bytes.count) bytes written to \(output)\n")
        } else {
            Console.out([UInt8](bytes))
        }
        return 0
    }

    /// A PKCS#12 file of the identity and the certificates, under the passphrase of `-P` or the
    /// terminal; PEM-armoured with `-p`.
    private func exportPKCS12(_ identity: SecIdentity, with others: [SecCertificate], session: Session) throws
        -> Data
    {
        var phrase = passphrase
        if phrase == nil {
            phrase = try session.secrets.readFromTerminalOnly(
                prompt: "Enter the passphrase to protect the exported file: "
            )
            .map { String(decoding: $0, as: UTF8.self) }
        }
        guard let phrase else {
            // macOS asks in a dialog; here only a terminal can be asked.
            throw CommandFailure(
                result: 1,
                messages: [
                    "\(Self.function): \(statusMessage(errSecPassphraseRequired))",
                    "a PKCS#12 file is written under a passphrase: give it with -P, or run on a terminal to be asked",
                ])
        }
        var parameters = SecItemImportExportKeyParameters()
        let retained = Unmanaged<CFTypeRef>.passRetained(NSString(string: phrase))
        defer { retained.release() }
        parameters.passphrase = retained
        var exported: CFData?
        let items = NSArray(array: [identity as AnyObject] + others.map { $0 as AnyObject })
        let status = SecItemExport(items, .formatPKCS12, [], &parameters, &exported)
        guard status == errSecSuccess, let exported else {
            throw CommandFailure.failure("\(Self.function): \(statusMessage(status))")
        }
        let der = Data(referencing: exported)
        return pem ? Data(PEMBlock.encode(der, label: "PKCS12").utf8) : der
    }
}
