// The rest of SecTrust's and SecPolicy's surface that libraries still compile against: changing
// a trust's policies, the revocation policy and its flags, and the functions Apple deprecated in
// macOS 10.15 to 12 that code keeps in its `#available` else-branches
// (https://developer.apple.com/documentation/security/sectrust).

public import _SecurityFoundation

/// Check revocation with OCSP.
public let kSecRevocationOCSPMethod: CFOptionFlags = 1 << 0
/// Check revocation with certificate revocation lists.
public let kSecRevocationCRLMethod: CFOptionFlags = 1 << 1
/// Prefer CRLs to OCSP when both are possible.
public let kSecRevocationPreferCRL: CFOptionFlags = 1 << 2
/// Fail unless a revocation source answers that the certificate is good.
public let kSecRevocationRequirePositiveResponse: CFOptionFlags = 1 << 3
/// Consult only what is cached locally, never the network.
public let kSecRevocationNetworkAccessDisabled: CFOptionFlags = 1 << 4
/// Check revocation with whichever method is available (OCSP or CRL).
public let kSecRevocationUseAnyAvailableMethod: CFOptionFlags = kSecRevocationOCSPMethod | kSecRevocationCRLMethod

/// Returns a policy that checks whether the chain's certificates are revoked.
///
/// Linux has no revocation source to consult (no OCSP or CRL fetching): a best-attempt policy
/// passes, as Apple's does when no revocation server can be reached, and a policy with
/// ``kSecRevocationRequirePositiveResponse`` fails with `errSecIncompleteCertRevocationCheck`,
/// so code that demands a positive answer is never told a certificate was checked.
///
/// - Parameter revocationFlags: `kSecRevocation…` flags.
/// - Returns: The policy.
public func SecPolicyCreateRevocation(_ revocationFlags: CFOptionFlags) -> SecPolicy? {
    SecPolicy(.revocation(revocationFlags))
}

/// Replaces the policies a trust is evaluated against (and forgets its verdict).
///
/// - Parameters:
///   - trust: The trust object.
///   - policies: A `SecPolicy` or an array of them.
/// - Returns: `errSecSuccess`, or `errSecParam` for anything but policies.
@discardableResult
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: CFTypeRef) -> OSStatus {
    guard let list = objects(policies, as: SecPolicy.self) else { return errSecParam }
    trust.setPolicies(list)
    return errSecSuccess
}

/// Returns the policies a trust is evaluated against.
///
/// - Parameters:
///   - trust: The trust object.
///   - policies: Receives an array of `SecPolicy`.
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecTrustCopyPolicies(_ trust: SecTrust, _ policies: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    policies.pointee = NSArray(array: trust.policies)
    return errSecSuccess
}

/// Evaluates the trust and reports the result type.
///
/// - Parameters:
///   - trust: The trust object.
///   - result: Receives the result (`.unspecified` or `.proceed` when trusted).
/// - Returns: `errSecSuccess`: the verdict is in `result`.
@available(*, deprecated, message: "Use SecTrustEvaluateWithError(_:_:)")
@discardableResult
public func SecTrustEvaluate(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>) -> OSStatus {
    SecTrustGetTrustResult(trust, result)
}

/// Returns a certificate of the evaluated chain (evaluating first if needed).
///
/// - Parameters:
///   - trust: The trust object.
///   - ix: The index: 0 is the leaf.
/// - Returns: The certificate, or `nil` past the chain's end.
@available(*, deprecated, message: "Use SecTrustCopyCertificateChain(_:)")
public func SecTrustGetCertificateAtIndex(_ trust: SecTrust, _ ix: CFIndex) -> SecCertificate? {
    guard let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate], chain.indices.contains(ix) else {
        return nil
    }
    return chain[ix]
}

/// Returns the leaf certificate's public key.
///
/// - Parameter trust: The trust object.
/// - Returns: The key, or `nil` when it is neither RSA nor EC.
@available(*, deprecated, message: "Use SecTrustCopyKey(_:)")
public func SecTrustCopyPublicKey(_ trust: SecTrust) -> SecKey? {
    SecTrustCopyKey(trust)
}
