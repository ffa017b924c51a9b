// The legacy key API (`SecKey.m:717-960`, iOS semantics): SecKeyGeneratePair, SecKeyRawSign,
// SecKeyRawVerify, SecKeyEncrypt and SecKeyDecrypt, each mapped to the algorithm Apple maps it to.

public import _SecurityFoundation

/// The padding of the legacy ``SecKeyRawSign(_:_:_:_:_:_:)`` family (Apple's raw values).
public struct SecPadding: OptionSet, Hashable, Sendable {
    /// The raw value.
    public let rawValue: UInt32

    /// Creates a padding from its raw value.
    ///
    /// - Parameter rawValue: The raw value, such as `0x8004` for PKCS#1 with SHA-256.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// PKCS#1 v1.5 (`kSecPaddingPKCS1`, 1).
    public static let PKCS1 = SecPadding(rawValue: 1)
    /// OAEP with SHA-1 (`kSecPaddingOAEP`, 2).
    public static let OAEP = SecPadding(rawValue: 2)
    /// Raw ECDSA signatures, `r‖s` (`kSecPaddingSigRaw`, 0x4000).
    public static let sigRaw = SecPadding(rawValue: 0x4000)
    /// PKCS#1 v1.5 over an MD2 digest (`kSecPaddingPKCS1MD2`, 0x8000; refused).
    public static let PKCS1MD2 = SecPadding(rawValue: 0x8000)
    /// PKCS#1 v1.5 over an MD5 digest (`kSecPaddingPKCS1MD5`, 0x8001; refused).
    public static let PKCS1MD5 = SecPadding(rawValue: 0x8001)
    /// PKCS#1 v1.5 over a SHA-1 digest (`kSecPaddingPKCS1SHA1`, 0x8002).
    public static let PKCS1SHA1 = SecPadding(rawValue: 0x8002)
    /// PKCS#1 v1.5 over a SHA-224 digest (`kSecPaddingPKCS1SHA224`, 0x8003; unsupported on Linux).
    public static let PKCS1SHA224 = SecPadding(rawValue: 0x8003)
    /// PKCS#1 v1.5 over a SHA-256 digest (`kSecPaddingPKCS1SHA256`, 0x8004).
    public static let PKCS1SHA256 = SecPadding(rawValue: 0x8004)
    /// PKCS#1 v1.5 over a SHA-384 digest (`kSecPaddingPKCS1SHA384`, 0x8005).
    public static let PKCS1SHA384 = SecPadding(rawValue: 0x8005)
    /// PKCS#1 v1.5 over a SHA-512 digest (`kSecPaddingPKCS1SHA512`, 0x8006).
    public static let PKCS1SHA512 = SecPadding(rawValue: 0x8006)
}

/// Generates a key pair (the legacy form of ``SecKeyCreateRandomKey(_:_:)``; the same parameters).
///
/// - Parameters:
///   - parameters: The key type, size and per-key attributes.
///   - publicKey: Receives the public key; may be `nil`.
///   - privateKey: Receives the private key; may be `nil`.
/// - Returns: `errSecSuccess`, or the status ``SecKeyCreateRandomKey(_:_:)`` reports.
public func SecKeyGeneratePair(
    _ parameters: CFDictionary, _ publicKey: UnsafeMutablePointer<SecKey?>?,
    _ privateKey: UnsafeMutablePointer<SecKey?>?
) -> OSStatus {
    var error: Unmanaged<CFError>?
    guard let key = SecKeyCreateRandomKey(parameters, &error) else {
        return OSStatus(error?.takeRetainedValue().code ?? Int(errSecParam))
    }
    publicKey?.pointee = SecKeyCopyPublicKey(key)
    privateKey?.pointee = key
    return errSecSuccess
}

/// Signs a digest (legacy API; iOS semantics: the input is never hashed here).
///
/// RSA: no padding → raw; `.PKCS1` → a caller DigestInfo; `.PKCS1SHA1`… → a digest of that hash.
/// EC: `.sigRaw` → `r‖s`; otherwise a DER signature.
/// - Parameters:
///   - key: The private key.
///   - padding: The padding.
///   - dataToSign: The digest.
///   - dataToSignLen: Its length.
///   - sig: The output buffer.
///   - sigLen: In: the buffer's size; out: the signature's length.
/// - Returns: `errSecSuccess`, or -50 for a bad padding, input or a buffer too small.
public func SecKeyRawSign(
    _ key: SecKey, _ padding: SecPadding, _ dataToSign: UnsafePointer<UInt8>, _ dataToSignLen: Int,
    _ sig: UnsafeMutablePointer<UInt8>, _ sigLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let input = callerBytes(dataToSign, dataToSignLen),
        let algorithm = legacySignatureAlgorithm(key, padding, digestLength: input.count)
    else { return errSecParam }
    var error: Unmanaged<CFError>?
    guard let signature = SecKeyCreateSignature(key, algorithm, input as CFData, &error) else {
        return legacyStatus(error)
    }
    return copy(signature as Data, to: sig, length: sigLen)
}

/// Verifies a signature of a digest (legacy API).
///
/// - Parameters:
///   - key: The public key.
///   - padding: The padding, as for ``SecKeyRawSign(_:_:_:_:_:_:)``.
///   - signedData: The digest.
///   - signedDataLen: Its length.
///   - sig: The signature.
///   - sigLen: Its length.
/// - Returns: `errSecSuccess`; **errSSLCrypto (-9809)** for a bad signature, as Apple maps it; -50 for a bad
///   padding or input.
public func SecKeyRawVerify(
    _ key: SecKey, _ padding: SecPadding, _ signedData: UnsafePointer<UInt8>, _ signedDataLen: Int,
    _ sig: UnsafePointer<UInt8>, _ sigLen: Int
) -> OSStatus {
    guard let input = callerBytes(signedData, signedDataLen), let signature = callerBytes(sig, sigLen),
        let algorithm = legacySignatureAlgorithm(key, padding, digestLength: input.count)
    else { return errSecParam }
    var error: Unmanaged<CFError>?
    guard SecKeyVerifySignature(key, algorithm, input as CFData, signature as CFData, &error) else {
        return legacyStatus(error)
    }
    return errSecSuccess
}

/// Encrypts with a public key (legacy API): no padding → raw, `.PKCS1`, `.OAEP` (SHA-1).
///
/// - Parameters:
///   - key: The public key.
///   - padding: The padding.
///   - plainText: The plaintext.
///   - plainTextLen: Its length.
///   - cipherText: The output buffer.
///   - cipherTextLen: In: the buffer's size; out: the ciphertext's length.
/// - Returns: `errSecSuccess`, or -50.
public func SecKeyEncrypt(
    _ key: SecKey, _ padding: SecPadding, _ plainText: UnsafePointer<UInt8>, _ plainTextLen: Int,
    _ cipherText: UnsafeMutablePointer<UInt8>, _ cipherTextLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let algorithm = legacyEncryptionAlgorithm(padding) else { return errSecParam }
    var error: Unmanaged<CFError>?
    guard let input = callerBytes(plainText, plainTextLen) else { return errSecParam }
    guard let output = SecKeyCreateEncryptedData(key, algorithm, input as CFData, &error) else {
        return legacyStatus(error)
    }
    return copy(output as Data, to: cipherText, length: cipherTextLen)
}

/// Decrypts with a private key (legacy API); without padding, leading zero bytes are stripped.
///
/// - Parameters:
///   - key: The private key.
///   - padding: The padding.
///   - cipherText: The ciphertext.
///   - cipherTextLen: Its length.
///   - plainText: The output buffer.
///   - plainTextLen: In: the buffer's size; out: the plaintext's length.
/// - Returns: `errSecSuccess`, or -50.
public func SecKeyDecrypt(
    _ key: SecKey, _ padding: SecPadding, _ cipherText: UnsafePointer<UInt8>, _ cipherTextLen: Int,
    _ plainText: UnsafeMutablePointer<UInt8>, _ plainTextLen: UnsafeMutablePointer<Int>
) -> OSStatus {
    guard let algorithm = legacyEncryptionAlgorithm(padding) else { return errSecParam }
    var error: Unmanaged<CFError>?
    guard let input = callerBytes(cipherText, cipherTextLen) else { return errSecParam }
    guard var output = SecKeyCreateDecryptedData(key, algorithm, input as CFData, &error) as Data? else {
        return legacyStatus(error)
    }
    if padding.isEmpty { output = Data(output.drop(while: { $0 == 0 })) }
    return copy(output, to: plainText, length: plainTextLen)
}

// MARK: - Mapping

/// Apple's legacy mapping of a padding to a signature algorithm; `nil` for a padding it refuses.
private func legacySignatureAlgorithm(_ key: SecKey, _ padding: SecPadding, digestLength: Int) -> SecKeyAlgorithm? {
    if key.isEC {
        if padding == .sigRaw { return .ecdsaSignatureRFC4754 }
        if padding == .PKCS1 {
            let byLength: [Int: SecKeyAlgorithm] = [
                20: .ecdsaSignatureDigestX962SHA1, 28: .ecdsaSignatureDigestX962SHA224,
                32: .ecdsaSignatureDigestX962SHA256, 48: .ecdsaSignatureDigestX962SHA384,
                64: .ecdsaSignatureDigestX962SHA512,
            ]
            return byLength[digestLength] ?? .ecdsaSignatureDigestX962
        }
        return .ecdsaSignatureDigestX962
    }
    switch padding {
    case []: return .rsaSignatureRaw
    case .PKCS1: return .rsaSignatureDigestPKCS1v15Raw
    case .PKCS1SHA1: return .rsaSignatureDigestPKCS1v15SHA1
    case .PKCS1SHA224: return .rsaSignatureDigestPKCS1v15SHA224
    case .PKCS1SHA256: return .rsaSignatureDigestPKCS1v15SHA256
    case .PKCS1SHA384: return .rsaSignatureDigestPKCS1v15SHA384
    case .PKCS1SHA512: return .rsaSignatureDigestPKCS1v15SHA512
    default: return nil
    }
}

private func legacyEncryptionAlgorithm(_ padding: SecPadding) -> SecKeyAlgorithm? {
    switch padding {
    case []: .rsaEncryptionRaw
    case .PKCS1: .rsaEncryptionPKCS1
    case .OAEP: .rsaEncryptionOAEPSHA1
    default: nil
    }
}

/// The status of a failed call: errSecVerifyFailed becomes errSSLCrypto, as Apple's legacy API returns.
private func legacyStatus(_ error: Unmanaged<CFError>?) -> OSStatus {
    let code = OSStatus(error?.takeRetainedValue().code ?? Int(errSecParam))
    return code == errSecVerifyFailed ? errSSLCrypto : code
}

/// Copies a result into a caller buffer; -50 ("buffer too small") when it does not fit.
private func copy(_ data: Data, to buffer: UnsafeMutablePointer<UInt8>, length: UnsafeMutablePointer<Int>) -> OSStatus {
    guard data.count <= length.pointee else { return errSecParam }
    data.copyBytes(to: buffer, count: data.count)
    length.pointee = data.count
    return errSecSuccess
}

/// The `count` bytes a caller passed, or `nil` for a negative count (errSecParam, not a trap).
private func callerBytes(_ pointer: UnsafePointer<UInt8>, _ count: Int) -> Data? {
    count >= 0 ? Data(bytes: pointer, count: count) : nil
}
