// A minimal `SecTrust` and `SecPolicy` (`OSX/sec/Security/SecTrust.c`, `SecPolicyChecks.list`): chain
// building and the RFC 5280 checks that certificate pinning, mTLS clients and `.p12` imports need, on
// KeychainPKI's parsing and signature checks.
//
// What `SecTrustEvaluateWithError` checks, and the status of the first failure, in this order:
// 1. A chain from the leaf to an anchor, built by name and verified signatures among the certificates
//    given, the anchors and (unless only custom anchors are used) the system store
//    `/etc/ssl/certs/ca-certificates.crt`: errSecCreateChainFailed (-25318) when an issuer is missing,
//    errSecNotTrusted (-67843) when the chain ends at a self-signed certificate that is not an anchor.
// 2. No critical extension this module does not understand: errSecUnknownCriticalExtensionFlag (-67603).
// 3. Every issuer is a CA (basicConstraints cA; a version 1 anchor without extensions is accepted):
//    errSecNoBasicConstraintsCA (-67605); its key usage, when present, allows keyCertSign:
//    errSecInvalidKeyUsageForPolicy (-67608); path length constraints: errSecPathLengthConstraintExceeded
//    (-67611).
// 4. Name constraints (RFC 5280 4.2.1.10, 6.1.3 (b) and (c)), critical or not: every certificate below a
//    certificate with a nameConstraints extension (the anchor's included, as Apple and OpenSSL do; self-issued
//    intermediates excepted) has its subject, its subject's emailAddress attributes and its subjectAltName
//    entries within the permitted subtrees of their form and outside the excluded ones (KeychainPKI's
//    `NameConstraints`): errSecInvalidName (-67689), Apple's status for kSecPolicyCheckNameConstraints
//    (`OSX/sec/Security/SecPolicyChecks.list`, checked in `trust/trustd/SecPolicyServer.c`). So is a chain
//    with a nameConstraints extension that does not parse (a critical one already fails the certificate's
//    parsing). As OpenSSL (`check_name_constraints`), not Apple: a leaf without a subjectAltName DNS name
//    has its host-like common names checked as DNS names, and a name of a form not matched (otherName,
//    x400Address, ediPartyName, registeredID) fails only when a subtree of its form is present, whereas
//    Apple fails a critical extension with such a subtree whatever the names.
// 5. Every certificate is valid at the verify date (now by default): errSecCertificateExpired (-67818),
//    errSecCertificateNotValidYet (-67819).
// 6. SSL policies: the leaf's extended key usage, when present, allows server (or client)
//    authentication: errSecInvalidExtendedKeyUsage (-67609); the host name matches a subjectAltName
//    DNS name (a leading `*.` matches exactly one label) or IP address: errSecHostNameMismatch (-67602).
//
// Trust settings (SecTrustSettings.swift), consulted unless only the caller's anchors are used
// (SecTrustSetAnchorCertificates without SecTrustSetAnchorCertificatesOnly(false), as Apple): the user's,
// then the admin's, decide for each certificate of the chain, from the leaf up, under the policies
// evaluated. trustRoot (on a self-signed certificate) or trustAsRoot makes it an anchor that ends the
// chain; deny makes the evaluation fail with errSecTrustSettingDeny (-67654) and the result `.deny`; a
// corrupt trust settings file makes it fail with errSecInvalidTrustSettings (-25262). Certificates with
// any setting also serve as issuers.
//
// Linux decisions: revocation is not checked; the common name is never used as a host name
// (subjectAltName only, as Apple since iOS 13), though check 4 holds a host-like one to the DNS name
// constraints, since other clients still match it; a successful evaluation gives `.proceed` when a user or
// admin trust setting anchored it and `.unspecified` otherwise; a failure gives `.deny` for a denied
// certificate and `.recoverableTrustFailure` otherwise.

public import _SecurityFoundation
internal import KeychainPKI
internal import KeychainLibc

/// A trust policy: which checks ``SecTrustEvaluateWithError(_:_:)`` applies on top of chain validation.
///
/// ```swift
/// let policy = SecPolicyCreateSSL(true, "www.example.com" as CFString)
/// ```
public final class SecPolicy: Hashable, CustomStringConvertible, Sendable {
    enum Kind: Hashable, Sendable {
        case basicX509
        case ssl(server: Bool, hostname: String?)
        /// Another of macOS's policies, named as `security add-trusted-cert -p` names it; checked as basic.
        case named(String)
        /// Revocation checking with `kSecRevocation…` flags (see ``SecPolicyCreateRevocation(_:)``).
        case revocation(CFOptionFlags)
    }

    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    /// `<SecPolicyRef: …>` with the policy's name.
    public var description: String {
        switch kind {
        case .basicX509: "<SecPolicyRef: BasicX509>"
        case .ssl(let server, let hostname): "<SecPolicyRef: \(server ? "SSLServer" : "SSLClient") \(hostname ?? "")>"
        case .named(let name): "<SecPolicyRef: \(name)>"
        case .revocation(let flags): "<SecPolicyRef: Revocation \(flags)>"
        }
    }

    /// Policies are equal when they check the same things.
    public static func == (lhs: SecPolicy, rhs: SecPolicy) -> Bool { lhs.kind == rhs.kind }

    /// Hashes the policy's checks.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
}

/// The type identifier of ``SecPolicy`` objects.
public func SecPolicyGetTypeID() -> CFTypeID { 0x5EC0_0005 }

/// The type identifier of ``SecTrust`` objects.
public func SecTrustGetTypeID() -> CFTypeID { 0x5EC0_0006 }

/// Returns the policy for basic X.509 validation: a chain to an anchor, validity dates, CA constraints.
///
/// - Returns: The policy.
public func SecPolicyCreateBasicX509() -> SecPolicy { SecPolicy(.basicX509) }

/// Returns the policy for TLS: basic X.509 validation, the extended key usage and, if given, the host name.
///
/// - Parameters:
///   - server: `true` to evaluate a server's certificate, `false` a client's.
///   - hostname: The name the certificate must carry (a DNS name or an IP address), or `nil`.
/// - Returns: The policy.
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy {
    SecPolicy(.ssl(server: server, hostname: hostname.map { String($0) }))
}

/// The result of a trust evaluation, as ``SecTrustGetTrustResult(_:_:)`` reports it.
public enum SecTrustResultType: UInt32, Sendable {
    /// Not evaluated yet.
    case invalid = 0
    /// Trusted, explicitly by the user.
    case proceed = 1
    /// Deprecated.
    case confirm = 2
    /// Explicitly distrusted by the user.
    case deny = 3
    /// Trusted through an anchor, with no user setting.
    case unspecified = 4
    /// Not trusted, for a reason the user could override (an unknown anchor, an expired certificate, …).
    case recoverableTrustFailure = 5
    /// Not trusted, for a reason nothing can override.
    case fatalTrustFailure = 6
    /// Evaluation failed for another reason.
    case otherError = 7
}

/// A trust evaluation: certificates, the policies they must satisfy, and the verdict.
///
/// ```swift
/// var trust: SecTrust?
/// SecTrustCreateWithCertificates([leaf, intermediate] as CFArray, SecPolicyCreateSSL(true, host as CFString), &trust)
/// SecTrustSetAnchorCertificates(trust!, [root] as CFArray)
/// var error: CFError?
/// let trusted = SecTrustEvaluateWithError(trust!, &error)
/// ```
public final class SecTrust: CustomStringConvertible, @unchecked Sendable {
    fileprivate struct State {
        var certificates: [SecCertificate]
        var policies: [SecPolicy]
        var anchors: [SecCertificate]?
        var anchorsOnly = false
        var verifyDate: Date?
        var verdict: Verdict?
    }

    private let lock = NSLock()
    private var state: State

    init(certificates: [SecCertificate], policies: [SecPolicy]) {
        state = State(certificates: certificates, policies: policies)
    }

    /// `<SecTrustRef: 0x…>`.
    public var description: String {
        "<SecTrustRef: 0x\(String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16))>"
    }

    fileprivate func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// Changes the inputs and forgets the verdict.
    fileprivate func change(_ body: (inout State) -> Void) {
        withState {
            body(&$0)
            $0.verdict = nil
        }
    }

    /// The chain, the status of the first failed check (errSecSuccess when trusted) and the result type.
    fileprivate typealias Verdict = (chain: [SecCertificate], status: OSStatus, result: SecTrustResultType)

    /// The verdict, evaluated once.
    fileprivate func verdict() -> Verdict {
        withState { state in
            if let verdict = state.verdict { return verdict }
            let verdict = evaluate(state)
            state.verdict = verdict
            return verdict
        }
    }

    /// The first certificate (the leaf).
    var leaf: SecCertificate { withState { $0.certificates[0] } }

    /// The policies evaluated.
    var policies: [SecPolicy] { withState { $0.policies } }

    /// Replaces the policies and forgets the verdict.
    func setPolicies(_ policies: [SecPolicy]) { change { $0.policies = policies } }

    private func evaluate(_ state: State) -> Verdict {
        let leaf = state.certificates[0]
        var anchors = state.anchors ?? []
        if state.anchors == nil || !state.anchorsOnly { anchors += systemAnchors }
        var settings: [TrustSettingsSnapshot] = []
        if !state.anchorsOnly {
            do {
                settings = try TrustSettingsStore.loadForEvaluation()
            } catch {
                return ([leaf], errSecInvalidTrustSettings, .fatalTrustFailure)
            }
        }
        let policyNames = Set(state.policies.map(\.trustSettingsName))
        /// The user's (then the admin's) decision for a certificate; unspecified is no decision.
        func decision(_ certificate: SecCertificate) -> SecTrustSettingsResult? {
            for snapshot in settings {
                if let result = snapshot.decision(for: certificate, policies: policyNames), result != .unspecified {
                    return result
                }
            }
            return nil
        }
        let userAnchors = settings.flatMap { $0.parsed.values }.filter {
            let result = decision($0)
            return result == .trustAsRoot || (result == .trustRoot && isSelfSigned($0))
        }
        let anchorDER = Set(anchors.map { CertificateDER($0.certificate.derBytes) })
        let userAnchorDER = Set(userAnchors.map { CertificateDER($0.certificate.derBytes) })
        // Certificates with any setting serve as issuers (a denied root is found, and denies).
        let pool = anchors + state.certificates.dropFirst() + userAnchors + settings.flatMap { $0.parsed.values }
        var chain = [leaf]
        /// Whether the chain ends at the certificate just added: an anchor, or a denied certificate.
        func ends(_ certificate: SecCertificate) -> (trusted: Bool, denied: Bool) {
            if !settings.isEmpty && decision(certificate) == .deny { return (false, true) }
            let der = CertificateDER(certificate.certificate.derBytes)
            return (anchorDER.contains(der) || userAnchorDER.contains(der), false)
        }
        var (trusted, denied) = ends(leaf)
        while !trusted && !denied && chain.count < 10 {
            let current = chain[chain.count - 1].certificate
            let issuer = pool.first { candidate in
                candidate.certificate.subject.normalizedContent == current.issuer.normalizedContent
                    && !chain.contains(candidate)
                    && (try? current.isSignatureValid(issuedBy: candidate.certificate)) == true
            }
            guard let issuer else {
                let selfSigned = current.isSelfIssued && (try? current.isSignatureValid(issuedBy: current)) == true
                return (chain, selfSigned ? errSecNotTrusted : errSecCreateChainFailed, .recoverableTrustFailure)
            }
            chain.append(issuer)
            (trusted, denied) = ends(issuer)
        }
        if denied { return (chain, errSecTrustSettingDeny, .deny) }
        guard trusted else { return (chain, errSecNotTrusted, .recoverableTrustFailure) }
        let status = check(chain.map(\.certificate), state)
        guard status == errSecSuccess else { return (chain, status, .recoverableTrustFailure) }
        let byUser = userAnchorDER.contains(CertificateDER(chain[chain.count - 1].certificate.derBytes))
        return (chain, status, byUser ? .proceed : .unspecified)
    }

    /// Checks 2–6 of the file comment over a chain that ends at an anchor.
    private func check(_ chain: [X509Certificate], _ state: State) -> OSStatus {
        if chain.contains(where: \.hasUnknownCriticalExtension) { return errSecUnknownCriticalExtensionFlag }
        for (index, issuer) in chain.enumerated().dropFirst() {
            let isV1Anchor = index == chain.count - 1 && issuer.version < 3 && issuer.extensions.isEmpty
            guard issuer.basicConstraints?.isCertificateAuthority == true || isV1Anchor else {
                return errSecNoBasicConstraintsCA
            }
            if let usage = issuer.keyUsage, !usage.contains(.keyCertSign) { return errSecInvalidKeyUsageForPolicy }
            let intermediatesBelow = chain[1..<index].filter { !$0.isSelfIssued }.count
            if let limit = issuer.basicConstraints?.pathLengthConstraint, intermediatesBelow > limit {
                return errSecPathLengthConstraintExceeded
            }
        }
        guard satisfiesNameConstraints(chain) else { return errSecInvalidName }
        let date = state.verifyDate ?? Date()
        for certificate in chain {
            if date > certificate.notValidAfter { return errSecCertificateExpired }
            if date < certificate.notValidBefore { return errSecCertificateNotValidYet }
        }
        // No revocation source (OCSP, CRL) is consulted on Linux: a best-attempt revocation
        // policy passes, as Apple's does when its server cannot be reached; one that requires a
        // positive response fails.
        for policy in state.policies {
            if case .revocation(let flags) = policy.kind, flags & kSecRevocationRequirePositiveResponse != 0 {
                return errSecIncompleteCertRevocationCheck
            }
        }
        for policy in state.policies {
            guard case .ssl(let server, let hostname) = policy.kind else { continue }
            // Apple refuses SHA-1 signatures on TLS certificates since macOS 10.15 and iOS 13
            // ("Requirements for trusted certificates in iOS 13 and macOS 10.15",
            // https://support.apple.com/en-us/103769); an anchor's own signature is not checked.
            if chain.dropLast().contains(where: { (try? $0.verifiableSignatureAlgorithm.digestAlgorithm) == .sha1 }) {
                return errSecInvalidDigestAlgorithm
            }
            let leaf = chain[0]
            if let usages = leaf.extendedKeyUsage,
                !usages.contains(ExtendedKeyUsage.any),
                !usages.contains(server ? ExtendedKeyUsage.serverAuth : ExtendedKeyUsage.clientAuth)
            {
                return errSecInvalidExtendedKeyUsage
            }
            if let hostname, !hostname.isEmpty, !matches(leaf, hostname: hostname) { return errSecHostNameMismatch }
        }
        return errSecSuccess
    }
}

/// Check 4 of the file comment: whether every certificate of `chain` (leaf first, anchor last) satisfies the
/// name constraints of each certificate above it, self-issued intermediates excepted (RFC 5280 6.1.3), and no
/// nameConstraints extension of the chain failed to parse.
func satisfiesNameConstraints(_ chain: [X509Certificate]) -> Bool {
    if chain.contains(where: { $0.unparseableExtensions.contains(NameConstraints.extensionOID) }) { return false }
    for (index, issuer) in chain.enumerated().dropFirst() {
        guard let constraints = issuer.nameConstraints else { continue }
        for (position, certificate) in chain[..<index].enumerated() where position == 0 || !certificate.isSelfIssued {
            if !constraints.permits(certificate, isLeaf: position == 0) { return false }
        }
    }
    return true
}

/// Whether a certificate's subjectAltName names `hostname`: an IP address entry equal to it, or a DNS
/// name equal to it ignoring case, where a leading `*.` stands for exactly one non-empty label
/// over a parent of two labels or more.
func matches(_ certificate: X509Certificate, hostname: String) -> Bool {
    guard let names = certificate.subjectAlternativeNames else { return false }
    if let address = ipAddressBytes(hostname) { return names.ipAddresses.contains(address) }
    var host = hostname.lowercased()
    if host.hasSuffix(".") { host.removeLast() }
    for var name in names.dnsNames.map({ $0.lowercased() }) {
        if name.hasSuffix(".") { name.removeLast() }
        if name == host { return true }
        // The wildcard's parent has two labels at least: `*.test` names no host (as OpenSSL's
        // X509_check_host and Apple's SecDNSMatch refuse a wildcard over a top-level domain).
        if name.hasPrefix("*."), let dot = host.firstIndex(of: "."), dot != host.startIndex,
            host[host.index(after: dot)...] == name.dropFirst(2), name.dropFirst(2).contains(".")
        {
            return true
        }
    }
    return false
}

/// The 4 or 16 bytes of an IPv4 or IPv6 address literal, or `nil` for a DNS name.
private func ipAddressBytes(_ text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
    return nil
}

/// The system's trusted roots, read once from `/etc/ssl/certs/ca-certificates.crt` (empty if absent).
let systemAnchors: [SecCertificate] = {
    guard let text = try? String(contentsOfFile: "/etc/ssl/certs/ca-certificates.crt", encoding: .utf8) else {
        return []
    }
    let begin = "-----BEGIN CERTIFICATE-----"
    let end = "-----END CERTIFICATE-----"
    return text.components(separatedBy: begin).dropFirst().compactMap { block in
        guard let body = block.components(separatedBy: end).first,
            let der = Data(base64Encoded: body, options: .ignoreUnknownCharacters),
            let certificate = try? X509Certificate(derEncoded: der)
        else { return nil }
        return SecCertificate(certificate)
    }
}()

/// The objects of a `CFTypeRef` that is one `T` or an array of them; `nil` if anything else is in it.
func objects<T>(_ value: CFTypeRef, as type: T.Type) -> [T]? {
    if let one = value as? T { return [one] }
    guard let array = value as? NSArray else { return nil }
    var result: [T] = []
    for element in array {
        guard let object = element as? T else { return nil }
        result.append(object)
    }
    return result
}

/// Creates a trust object for a leaf certificate (first) and other certificates that may help build its
/// chain.
///
/// - Parameters:
///   - certificates: A `SecCertificate`, or an array of them with the leaf first.
///   - policies: A `SecPolicy`, an array of them, or `nil` for ``SecPolicyCreateBasicX509()``.
///   - trust: Receives the trust object.
/// - Returns: `errSecSuccess`, or `errSecParam` when an input is not of the right type or is empty.
@discardableResult
public func SecTrustCreateWithCertificates(
    _ certificates: CFTypeRef, _ policies: CFTypeRef?, _ trust: UnsafeMutablePointer<SecTrust?>
) -> OSStatus {
    guard let certificates = objects(certificates, as: SecCertificate.self), !certificates.isEmpty else {
        return errSecParam
    }
    var policyList = [SecPolicyCreateBasicX509()]
    if let policies {
        guard let list = objects(policies, as: SecPolicy.self) else { return errSecParam }
        policyList = list
    }
    trust.pointee = SecTrust(certificates: certificates, policies: policyList)
    return errSecSuccess
}

/// Sets the certificates a chain may end at. Once set, only these anchors are trusted (not the system's,
/// and user and admin trust settings are ignored) unless ``SecTrustSetAnchorCertificatesOnly(_:_:)`` says
/// otherwise.
///
/// - Parameters:
///   - trust: The trust object.
///   - anchorCertificates: The anchors, or `nil` to go back to the system's.
/// - Returns: `errSecSuccess`, or `errSecParam` for an array holding something other than certificates.
@discardableResult
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray?) -> OSStatus {
    guard let anchorCertificates else {
        trust.change {
            $0.anchors = nil
            $0.anchorsOnly = false
        }
        return errSecSuccess
    }
    guard let anchors = objects(anchorCertificates, as: SecCertificate.self) else { return errSecParam }
    trust.change {
        $0.anchors = anchors
        $0.anchorsOnly = true
    }
    return errSecSuccess
}

/// Chooses whether only the anchors set with ``SecTrustSetAnchorCertificates(_:_:)`` are trusted (`true`)
/// or the system's roots and the user and admin trust settings too (`false`).
///
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.change { $0.anchorsOnly = anchorCertificatesOnly }
    return errSecSuccess
}

/// Sets the date at which the certificates must be valid (now by default).
///
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustSetVerifyDate(_ trust: SecTrust, _ verifyDate: CFDate) -> OSStatus {
    trust.change { $0.verifyDate = verifyDate as Date }
    return errSecSuccess
}

/// Evaluates the trust: whether the leaf chains to an anchor and satisfies every policy.
///
/// ```swift
/// var error: CFError?
/// if !SecTrustEvaluateWithError(trust, &error) { … CFErrorGetCode(error) … }
/// ```
/// - Parameters:
///   - trust: The trust object.
///   - error: On failure, an error in `NSOSStatusErrorDomain` whose code is the first failed check's status
///     (see the checks listed in `SecTrust.swift`).
/// - Returns: Whether the certificate is trusted.
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    let verdict = trust.verdict()
    guard verdict.status == errSecSuccess else {
        let summary = trust.leaf.certificate.subjectSummary ?? "certificate"
        error?.pointee = NSError(
            domain: NSOSStatusErrorDomain, code: Int(verdict.status),
            userInfo: [NSLocalizedDescriptionKey: "“\(summary)” certificate is not trusted (\(verdict.status))"])
        return false
    }
    error?.pointee = nil
    return true
}

/// Returns the result of the last evaluation (evaluating first if needed).
///
/// - Parameters:
///   - trust: The trust object.
///   - result: Receives `.proceed` when trusted through a user or admin trust setting, `.unspecified`
///     when trusted otherwise, `.deny` when a certificate of the chain is denied by a trust setting,
///     `.fatalTrustFailure` when the trust settings are corrupt, `.recoverableTrustFailure` otherwise.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustGetTrustResult(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>) -> OSStatus {
    result.pointee = trust.verdict().result
    return errSecSuccess
}

/// Returns the leaf certificate's public key.
///
/// - Parameter trust: The trust object.
/// - Returns: The key, or `nil` when it is neither RSA nor EC.
public func SecTrustCopyKey(_ trust: SecTrust) -> SecKey? {
    SecCertificateCopyKey(trust.leaf)
}

/// Returns the certificate chain built by the evaluation (evaluating first if needed): the leaf first, then
/// each issuer up to the anchor, or as far as the chain could be built.
///
/// - Parameter trust: The trust object.
/// - Returns: An array of `SecCertificate`.
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? {
    NSArray(array: trust.verdict().chain)
}

/// Returns the number of certificates in the evaluated chain.
///
/// - Parameter trust: The trust object.
/// - Returns: The count.
public func SecTrustGetCertificateCount(_ trust: SecTrust) -> CFIndex {
    trust.verdict().chain.count
}

/// A certificate's DER as a set element: hashed by its length and its last 32 bytes (the end of
/// its signature, different in every certificate) rather than byte by byte, compared whole.
private struct CertificateDER: Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        bytes.suffix(32).withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.bytes == rhs.bytes }
}
