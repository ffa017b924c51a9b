// `SecPKCS12Import` (`OSX/sec/Security/SecImportExport.c`, `p12import.c`) and, for the way out, the
// PKCS#12 part of macOS's `SecItemExport`, both on KeychainPKI.
//
// Linux decisions (docs/keys-and-certificates.md, "Certificates, identities and `.p12` files"):
// - Files are read by KeychainPKI: PBES2 (PBKDF2 with any HMAC-SHA PRF, AES-CBC) and HMAC-SHA-1/256/384/
//   512 MACs, a superset of Apple (which hard-codes PBKDF2-HMAC-SHA256 and AES-256-CBC). Legacy files
//   (RC2, RC4, 3DES: `openssl pkcs12 -legacy`, old Keychain Access and Windows exports) are read as
//   Apple reads them, their bags decrypted by OpenSSL's PKCS#12 reader; one whose cipher libcrypto
//   cannot run is refused with errSecDecode (convert it with `PKIError.legacyConversionCommand`).
// - An empty passphrase is tried as `00 00` (iOS), then as zero bytes (macOS).
// - Storing follows iOS: items are added to the keychain only when the options hold
//   `kSecUseDataProtectionKeychain` with a value other than `kCFBooleanFalse`, or (macOS's way of naming a
//   keychain) a `SecKeychain` under `kSecUseKeychain`; `kSecImportToMemoryOnly` = true never stores.
//   The identity is added, then each chain certificate; duplicates count as success.
// - `kSecImportItemTrust` is a BasicX509 `SecTrust` over the leaf and the file's other certificates,
//   evaluated when first asked (Apple evaluates it at import and ignores the result).
//   `kSecImportItemCertChain` is the leaf followed by its issuers among the file's other certificates,
//   found by name (the chain the trust object builds, without evaluating it).
// - `kSecImportItemLabel` and `kSecImportItemKeyID` are returned (macOS's values: the certificate's subject
//   summary and the key's SHA-1 public-key hash); iOS omits them.

public import _SecurityFoundation
internal import KeychainModel
internal import KeychainPKI

/// The import option that holds the passphrase of a PKCS#12 file (a string): `"passphrase"`.
nonisolated(unsafe) public let kSecImportExportPassphrase: CFString = SecConstantString("passphrase")

/// The import option that, set to `true`, keeps imported items out of the keychain: `"memory"`.
nonisolated(unsafe) public let kSecImportToMemoryOnly: CFString = SecConstantString("memory")

/// The key of an import result's label (the certificate's subject summary): `"label"`.
nonisolated(unsafe) public let kSecImportItemLabel: CFString = SecConstantString("label")

/// The key of an import result's key identifier (the SHA-1 hash of the public key): `"keyid"`.
nonisolated(unsafe) public let kSecImportItemKeyID: CFString = SecConstantString("keyid")

/// The key of an import result's trust object (a `SecTrust` for the identity's certificate): `"trust"`.
nonisolated(unsafe) public let kSecImportItemTrust: CFString = SecConstantString("trust")

/// The key of an import result's certificate chain (an array of `SecCertificate`, leaf first): `"chain"`.
nonisolated(unsafe) public let kSecImportItemCertChain: CFString = SecConstantString("chain")

/// The key of an import result's identity (a `SecIdentity`): `"identity"`.
nonisolated(unsafe) public let kSecImportItemIdentity: CFString = SecConstantString("identity")

/// Imports the identities of a PKCS#12 (`.p12`, `.pfx`) file.
///
/// ```swift
/// var items: CFArray?
/// let status = SecPKCS12Import(p12 as CFData, [kSecImportExportPassphrase: "secret"] as CFDictionary, &items)
/// guard status == errSecSuccess, let first = (items as? [[String: Any]])?.first else { return }
/// let identity = first[kSecImportItemIdentity as String] as! SecIdentity
/// ```
///
/// Each private key with its certificate gives one dictionary: ``kSecImportItemIdentity``,
/// ``kSecImportItemCertChain``, ``kSecImportItemTrust``, ``kSecImportItemLabel`` and ``kSecImportItemKeyID``. Keys without a
/// certificate and certificates without a key give none. Files encrypted with legacy ciphers (RC2, RC4,
/// 3DES, as older OpenSSL, Keychain Access and Windows write them) are read as on Apple's platforms.
///
/// The items are added to the keychain only when `options` hold ``kSecUseDataProtectionKeychain`` = `true`
/// (as on iOS) or a `SecKeychain` under ``kSecUseKeychain``; other options (an access group, an
/// accessibility) are passed to `SecItemAdd`.
/// - Parameters:
///   - pkcs12_data: The file's bytes (DER or BER).
///   - options: ``kSecImportExportPassphrase`` (absent means the empty passphrase) and storing options.
///   - items: Receives the array of result dictionaries.
/// - Returns: `errSecSuccess`; `errSecAuthFailed` (-25293) for a wrong passphrase; `errSecDecode` (-26275)
///   for a malformed, unsupported or legacy file; `errSecParam` for a passphrase that is not a string;
///   when storing, the status of the last `SecItemAdd` that failed (`items` is still set).
@discardableResult
public func SecPKCS12Import(
    _ pkcs12_data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    let entries: [String: Any]
    do { entries = try QueryParser.entries(options) } catch { return osStatus(of: error) }
    var passphrase = ""
    if let value = entries["passphrase"] {
        guard let string = queryString(value) else { return errSecParam }
        passphrase = string
    }
    let contents: PKCS12Contents
    do {
        contents = try PKCS12.parse(bytes(of: pkcs12_data), passphrase: passphrase)
    } catch let error as PKIError {
        return error.osStatus
    } catch {
        return errSecDecode
    }
    var identities: [(SecIdentity, [SecCertificate])] = []
    let others = contents.unpairedCertificates.map(SecCertificate.init)
    for pair in contents.identities {
        guard let key = try? secKey(fromPKCS8: pair.privateKey),
            let identity = SecIdentityCreate(nil, SecCertificate(pair.certificate), key)
        else { return errSecDecode }
        identities.append((identity, chain(from: identity.certificate, among: others)))
    }
    var results: [NSDictionary] = []
    for (identity, chain) in identities {
        var builder = ResultDictionaryBuilder(capacity: 4)
        builder.append("identity", identity)
        builder.append("chain", NSArray(array: chain))
        // Apple evaluates this trust (BasicX509 over the leaf and the file's other certificates) and ignores
        // the result; here it is evaluated when first asked.
        builder.append(
            "trust", SecTrust(certificates: [identity.certificate] + others, policies: [SecPolicyCreateBasicX509()]))
        if let label = identity.certificate.certificate.subjectSummary { builder.append("label", string: label) }
        builder.append("keyid", data: identity.privateKey.applicationLabel)
        results.append(builder.build())
    }
    items.pointee = NSArray(array: results)
    guard storesImport(entries) else { return errSecSuccess }
    var stored: [String: Any] = entries.filter { name, _ in name != "passphrase" && name != "memory" }
    stored["nleg"] = nil
    var status = errSecSuccess
    for (identity, chain) in identities {
        for item in [identity as AnyObject] + chain.dropFirst().map({ $0 as AnyObject }) {
            stored["v_Ref"] = item
            let added = SecItemAdd(NSDictionary(dictionary: stored), nil)
            if added != errSecSuccess && added != errSecDuplicateItem { status = added }
        }
    }
    return status
}

/// Whether the import options ask for the items to be stored (iOS: `kSecUseDataProtectionKeychain` other
/// than false; macOS: a keychain under `kSecUseKeychain`), and not for memory only.
private func storesImport(_ entries: [String: Any]) -> Bool {
    if let memory = entries["memory"], cfBooleanValue(memory) == true { return false }
    if entries["u_Keychain"] is SecKeychain { return true }
    guard let value = entries["nleg"] else { return false }
    return cfBooleanValue(value) != false
}

/// The leaf followed by its issuers among `others`, found by normalized name, each used once.
private func chain(from leaf: SecCertificate, among others: [SecCertificate]) -> [SecCertificate] {
    var chain = [leaf]
    var remaining = others
    var current = leaf.certificate
    while current.issuer.normalizedContent != current.subject.normalizedContent,
        let index = remaining.firstIndex(where: {
            $0.certificate.subject.normalizedContent == current.issuer.normalizedContent
        })
    {
        let issuer = remaining.remove(at: index)
        chain.append(issuer)
        current = issuer.certificate
    }
    return chain
}

// MARK: - Export

/// The formats of ``SecItemExport(_:_:_:_:_:)`` (macOS's `SecExternalFormat`); Linux writes
/// ``SecExternalFormat/formatPKCS12`` and ``SecExternalFormat/formatX509Cert``.
public enum SecExternalFormat: UInt32, Sendable {
    /// Let the function choose.
    case formatUnknown = 0
    /// OpenSSL key format.
    case formatOpenSSL = 1
    /// OpenSSH 1 key format.
    case formatSSH = 2
    /// BSAFE key format.
    case formatBSAFE = 3
    /// Raw key bytes.
    case formatRawKey = 4
    /// Encrypted PKCS#8.
    case formatWrappedPKCS8 = 5
    /// Encrypted OpenSSL key format.
    case formatWrappedOpenSSL = 6
    /// Encrypted OpenSSH 1 key format.
    case formatWrappedSSH = 7
    /// Encrypted LSH key format.
    case formatWrappedLSH = 8
    /// A DER X.509 certificate.
    case formatX509Cert = 9
    /// A sequence of PEM items.
    case formatPEMSequence = 10
    /// A PKCS#7 certificate bundle.
    case formatPKCS7 = 11
    /// A PKCS#12 file.
    case formatPKCS12 = 12
    /// A Netscape certificate sequence.
    case formatNetscapeCertSequence = 13
    /// OpenSSH 2 key format.
    case formatSSHv2 = 14
}

/// The flags of ``SecItemExport(_:_:_:_:_:)``.
public struct SecItemImportExportFlags: OptionSet, Hashable, Sendable {
    /// The flags' bits.
    public var rawValue: UInt32
    /// Flags from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Wrap the output in PEM armour (not supported on Linux: errSecUnimplemented).
    public static let pemArmour = SecItemImportExportFlags(rawValue: 1)
}

/// The key flags of ``SecItemImportExportKeyParameters``.
public struct SecKeyImportExportFlags: OptionSet, Hashable, Sendable {
    /// The flags' bits.
    public var rawValue: UInt32
    /// Flags from their bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Import only one key.
    public static let importOnlyOne = SecKeyImportExportFlags(rawValue: 1)
    /// Ask the user for the passphrase (impossible on Linux: errSecPassphraseRequired).
    public static let securePassphrase = SecKeyImportExportFlags(rawValue: 2)
    /// Import without an access control list.
    public static let noAccessControl = SecKeyImportExportFlags(rawValue: 4)
}

/// The version of ``SecItemImportExportKeyParameters`` (0).
public let SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION: UInt32 = 0

/// The key parameters of ``SecItemExport(_:_:_:_:_:)``: the passphrase that protects an exported PKCS#12
/// file. The other fields are accepted and ignored on Linux.
public struct SecItemImportExportKeyParameters {
    /// ``SEC_KEY_IMPORT_EXPORT_PARAMS_VERSION``.
    public var version: UInt32
    /// Key flags.
    public var flags: SecKeyImportExportFlags
    /// The passphrase, a `CFString`.
    public var passphrase: Unmanaged<CFTypeRef>?
    /// Ignored on Linux.
    public var alertTitle: Unmanaged<CFString>?
    /// Ignored on Linux.
    public var alertPrompt: Unmanaged<CFString>?
    /// Ignored on Linux.
    public var accessRef: Unmanaged<SecAccess>?
    /// Ignored on Linux.
    public var keyUsage: Unmanaged<CFArray>?
    /// Ignored on Linux.
    public var keyAttributes: Unmanaged<CFArray>?

    /// Parameters with every field zero.
    public init() {
        version = 0
        flags = []
    }

    /// Parameters with every field given.
    public init(
        version: UInt32, flags: SecKeyImportExportFlags, passphrase: Unmanaged<CFTypeRef>?,
        alertTitle: Unmanaged<CFString>?, alertPrompt: Unmanaged<CFString>?, accessRef: Unmanaged<SecAccess>?,
        keyUsage: Unmanaged<CFArray>?, keyAttributes: Unmanaged<CFArray>?
    ) {
        self.version = version
        self.flags = flags
        self.passphrase = passphrase
        self.alertTitle = alertTitle
        self.alertPrompt = alertPrompt
        self.accessRef = accessRef
        self.keyUsage = keyUsage
        self.keyAttributes = keyAttributes
    }
}

/// Exports an identity as a PKCS#12 file, or a certificate as DER (macOS's `SecItemExport`).
///
/// ```swift
/// var parameters = SecItemImportExportKeyParameters()
/// parameters.passphrase = Unmanaged.passRetained("secret" as CFString)
/// var exported: CFData?
/// let status = SecItemExport(identity, .formatPKCS12, [], &parameters, &exported)
/// ```
///
/// The PKCS#12 file is what `openssl pkcs12 -export` writes by default: PBES2 (PBKDF2-HMAC-SHA256,
/// AES-256-CBC) and an HMAC-SHA-256 MAC, 100,000 iterations; the identity's certificate comes first, then
/// the other certificates of `secItemOrArray`.
/// - Parameters:
///   - secItemOrArray: A `SecIdentity` or `SecCertificate`, or an array of them (one identity at most for
///     PKCS#12).
///   - outputFormat: ``SecExternalFormat/formatPKCS12`` (the default for an identity) or
///     ``SecExternalFormat/formatX509Cert`` (the default for a certificate).
///   - flags: Must be empty (PEM armour is not written on Linux).
///   - keyParams: The passphrase (required for PKCS#12).
///   - exportedData: Receives the bytes.
/// - Returns: `errSecSuccess`; `errSecPassphraseRequired` without a passphrase; `errSecParam` for items
///   that are not identities or certificates, or two identities; `errSecUnsupportedFormat` for other
///   formats; `errSecUnimplemented` for PEM armour.
@discardableResult
public func SecItemExport(
    _ secItemOrArray: CFTypeRef, _ outputFormat: SecExternalFormat, _ flags: SecItemImportExportFlags,
    _ keyParams: UnsafePointer<SecItemImportExportKeyParameters>?, _ exportedData: UnsafeMutablePointer<CFData?>
) -> OSStatus {
    let objects: [AnyObject] = (secItemOrArray as? NSArray).map { $0.map { $0 as AnyObject } } ?? [secItemOrArray]
    var identities: [SecIdentity] = []
    var certificates: [SecCertificate] = []
    for object in objects {
        if let identity = object as? SecIdentity {
            identities.append(identity)
        } else if let certificate = object as? SecCertificate {
            certificates.append(certificate)
        } else {
            return errSecParam
        }
    }
    guard flags.isEmpty else { return errSecUnimplemented }
    let format = outputFormat == .formatUnknown ? (identities.isEmpty ? .formatX509Cert : .formatPKCS12) : outputFormat
    switch format {
    case .formatX509Cert:
        guard identities.isEmpty, certificates.count == 1 else { return errSecParam }
        exportedData.pointee = SecCertificateCopyData(certificates[0])
        return errSecSuccess
    case .formatPKCS12:
        guard identities.count == 1 else { return errSecParam }
        guard let passphrase = keyParams?.pointee.passphrase?.takeUnretainedValue(),
            let string = queryString(passphrase)
        else { return errSecPassphraseRequired }
        let identity = identities[0]
        do {
            let chain = [identity.certificate] + certificates.filter { $0 != identity.certificate }
            let file = try PKCS12.export(
                privateKey: Array(pkcs8DER(of: identity.privateKey)), certificates: chain.map(\.certificate),
                passphrase: string)
            exportedData.pointee = NSData(data: Data(file))
            return errSecSuccess
        } catch let error as PKIError {
            return error.osStatus
        } catch {
            return osStatus(of: error)
        }
    default:
        return errSecUnsupportedFormat
    }
}
