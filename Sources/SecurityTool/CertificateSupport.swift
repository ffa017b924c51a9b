import Foundation
import KeychainClient
import KeychainModel
import Security

// How the certificate commands use the `Security` module, as a macOS program would: each call
// runs with the keychain the command chose as its default keychain (`Keychains.withDefault`),
// so the keychain's handle, lock state and agent are the ones the other commands use.

/// Runs calls of the Security API with `keychain` as their default keychain; when one fails
/// because the keychain is locked (``securityCheck(_:)`` throws errSecInteractionNotAllowed),
/// unlocks it as the other commands do and runs `body` again.
///
/// A locked keychain is unlocked first (by a search, which needs the keychain's key), so that
/// `body` runs once: a second run after a partial first one would find its own items there.
func withSecurityKeychain<T>(_ keychain: OpenKeychain, session: Session, _ body: () throws -> T) throws -> T {
    var probe = ItemQuery(class: .key)
    probe.synchronizable = .any
    probe.limit = 1
    _ = try session.withAccess(to: keychain) { try keychain.database.find(probe, includeData: false) }
    return try session.withAccess(to: keychain) { try Keychains.withDefault(keychain.database, operation: body) }
}

/// Throws the engine error of a Security status (so that ``Session/withAccess(to:_:)`` sees a
/// locked keychain); returns for errSecSuccess.
func securityCheck(_ status: OSStatus) throws {
    guard status == errSecSuccess else { throw KeychainError(KeychainError.Code(rawValue: status)) }
}

/// The identities of a keychain (`SecItemCopyMatching` of kSecClassIdentity), in its order.
func keychainIdentities(_ keychain: OpenKeychain, session: Session) throws -> [SecIdentity] {
    try withSecurityKeychain(keychain, session: session) {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(
            [kSecClass: kSecClassIdentity, kSecMatchLimit: kSecMatchLimitAll, kSecReturnRef: true] as CFDictionary,
            &result)
        if status == errSecItemNotFound { return [] }
        try securityCheck(status)
        return (result as? NSArray)?.compactMap { $0 as? SecIdentity } ?? []
    }
}

/// The certificate items of a keychain, with their attributes and DER, in its order.
func keychainCertificateItems(_ keychain: OpenKeychain, session: Session) throws -> [Item] {
    var query = ItemQuery(class: .certificate)
    query.synchronizable = .any
    return try session.withAccess(to: keychain) { try keychain.database.find(query, includeData: true) }
}

/// The certificate of an identity.
func certificate(of identity: SecIdentity) -> SecCertificate {
    var certificate: SecCertificate?
    SecIdentityCopyCertificate(identity, &certificate)
    return certificate!
}

/// A certificate's DER bytes.
func derData(_ certificate: SecCertificate) -> Data { Data(referencing: SecCertificateCopyData(certificate)) }

/// A certificate's common name, or `nil`.
func commonName(_ certificate: SecCertificate) -> String? {
    var name: CFString?
    guard SecCertificateCopyCommonName(certificate, &name) == errSecSuccess, let name else { return nil }
    return String(describing: name)
}

/// The label macOS infers for a certificate (`SecCertificateInferLabel`): its subject summary.
func inferredLabel(_ certificate: SecCertificate) -> String? {
    SecCertificateCopySubjectSummary(certificate).map { String(describing: $0) }
}

/// A certificate's email addresses.
func emailAddresses(_ certificate: SecCertificate) -> [String] {
    var addresses: CFArray?
    SecCertificateCopyEmailAddresses(certificate, &addresses)
    return (addresses as? [Any])?.map { String(describing: $0) } ?? []
}

/// Whether `name` is found in the certificate's common name, ignoring case (macOS's
/// `CFStringFind` with `kCFCompareCaseInsensitive`); a certificate without one never matches.
func commonNameContains(_ certificate: SecCertificate, _ name: String) -> Bool {
    guard let common = commonName(certificate) else { return false }
    return common.range(of: name, options: [.caseInsensitive]) != nil
}

/// The name macOS's `cssmErrorString` prints for a trust failure (`find-identity`).
func cssmTrustErrorName(_ status: OSStatus) -> String {
    switch status {
    case errSecNotTrusted, errSecCreateChainFailed: "CSSMERR_TP_NOT_TRUSTED"
    case errSecCertificateExpired: "CSSMERR_TP_CERT_EXPIRED"
    case errSecCertificateNotValidYet: "CSSMERR_TP_CERT_NOT_VALID_YET"
    case errSecHostNameMismatch: "CSSMERR_APPLETP_HOSTNAME_MISMATCH"
    case errSecInvalidExtendedKeyUsage: "CSSMERR_APPLETP_INVALID_EXTENDED_KEY_USAGE"
    case errSecUnknownCriticalExtensionFlag: "CSSMERR_APPLETP_UNKNOWN_CRITICAL_EXTEN"
    case errSecNoBasicConstraintsCA: "CSSMERR_APPLETP_INVALID_CA"
    case errSecInvalidKeyUsageForPolicy: "CSSMERR_APPLETP_INVALID_KEY_USAGE"
    case errSecPathLengthConstraintExceeded: "CSSMERR_APPLETP_PATH_LEN_CONSTRAINT"
    // kSecPolicyCheckNameConstraints's CSSM code in `OSX/sec/Security/SecPolicyChecks.list`.
    case errSecInvalidName: "CSSMERR_TP_INVALID_CERTIFICATE"
    case errSecTrustSettingDeny: "CSSMERR_APPLETP_TRUST_SETTING_DENY"
    case errSecInvalidTrustSettings: "CSSMERR_TP_INVALID_TRUST_SETTINGS"
    default: "CSSMERR_TP_VERIFY_ACTION_FAILED"
    }
}

/// Evaluates a certificate under a policy, with `others` as candidate intermediates.
/// - Returns: errSecSuccess when trusted, else the status of the first failed check.
func trustStatus(_ certificate: SecCertificate, others: [SecCertificate], policy: SecPolicy) -> OSStatus {
    var trust: SecTrust?
    let certificates = [certificate] + others.filter { $0 != certificate }
    guard SecTrustCreateWithCertificates(certificates as CFArray, policy, &trust) == errSecSuccess, let trust else {
        return errSecParam
    }
    var error: CFError?
    if SecTrustEvaluateWithError(trust, &error) { return errSecSuccess }
    return OSStatus(truncatingIfNeeded: error?.code ?? Int(errSecNotTrusted))
}
