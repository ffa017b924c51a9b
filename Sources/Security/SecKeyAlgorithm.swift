// `SecKeyAlgorithm`: Apple's names and exact raw strings (`OSX/sec/Security/SecKeyAdaptors.m`). The
// type's initializers and equality, `SecKeyOperationType`, `SecKeyKeyExchangeParameter`, the
// constructions and the table that maps each string to its construction are in
// SecKeyAlgorithm+Types.swift.
//
// The members are declared in the type's own declaration, not in an extension: Security is built
// with library evolution, and a static property declared in an extension has no property descriptor,
// a symbol the library exports for each member declared in the type.

public import _SecurityFoundation

/// The algorithm a ``SecKey`` operation uses, named by Apple's raw string such as
/// `"algid:sign:ECDSA:message-X962:SHA256"`.
///
/// ```swift
/// let signature = SecKeyCreateSignature(privateKey, .ecdsaSignatureMessageX962SHA256, message as CFData, &error)
/// ```
///
/// Which algorithms a key can run is answered by ``SecKeyIsAlgorithmSupported(_:_:_:)``; an
/// algorithm with no backend on Linux is reported unsupported (docs/keys-and-certificates.md
/// lists them).
public struct SecKeyAlgorithm: Hashable, RawRepresentable, @unchecked Sendable {
    /// The algorithm's raw string.
    public let rawValue: CFString

    init(constant: String) {
        rawValue = SecConstantString(value: constant)
    }

    /// Raw RSA signing: the input, at most the block size, is exponentiated with the private key.
    public static let rsaSignatureRaw = SecKeyAlgorithm(constant: "algid:sign:RSA:raw")

    /// RSA PKCS#1 v1.5 signature over a caller-supplied DigestInfo (type-1 padding, no OID added).
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm(constant: "algid:sign:RSA:digest-PKCS1v15")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA1` (`"algid:sign:RSA:digest-PKCS1v15:SHA1"`).
    public static let rsaSignatureDigestPKCS1v15SHA1 = SecKeyAlgorithm(constant: "algid:sign:RSA:digest-PKCS1v15:SHA1")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA224` (`"algid:sign:RSA:digest-PKCS1v15:SHA224"`).
    public static let rsaSignatureDigestPKCS1v15SHA224 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PKCS1v15:SHA224")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA256` (`"algid:sign:RSA:digest-PKCS1v15:SHA256"`).
    public static let rsaSignatureDigestPKCS1v15SHA256 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PKCS1v15:SHA256")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA384` (`"algid:sign:RSA:digest-PKCS1v15:SHA384"`).
    public static let rsaSignatureDigestPKCS1v15SHA384 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PKCS1v15:SHA384")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPKCS1v15SHA512` (`"algid:sign:RSA:digest-PKCS1v15:SHA512"`).
    public static let rsaSignatureDigestPKCS1v15SHA512 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PKCS1v15:SHA512")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPSSSHA1` (`"algid:sign:RSA:digest-PSS:SHA1:SHA1:20"`).
    public static let rsaSignatureDigestPSSSHA1 = SecKeyAlgorithm(constant: "algid:sign:RSA:digest-PSS:SHA1:SHA1:20")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPSSSHA224` (`"algid:sign:RSA:digest-PSS:SHA224:SHA224:24"`).
    public static let rsaSignatureDigestPSSSHA224 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PSS:SHA224:SHA224:24")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPSSSHA256` (`"algid:sign:RSA:digest-PSS:SHA256:SHA256:32"`).
    public static let rsaSignatureDigestPSSSHA256 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PSS:SHA256:SHA256:32")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPSSSHA384` (`"algid:sign:RSA:digest-PSS:SHA384:SHA384:48"`).
    public static let rsaSignatureDigestPSSSHA384 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PSS:SHA384:SHA384:48")

    /// Apple's `kSecKeyAlgorithmRSASignatureDigestPSSSHA512` (`"algid:sign:RSA:digest-PSS:SHA512:SHA512:64"`).
    public static let rsaSignatureDigestPSSSHA512 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:digest-PSS:SHA512:SHA512:64")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA1` (`"algid:sign:RSA:message-PKCS1v15:SHA1"`).
    public static let rsaSignatureMessagePKCS1v15SHA1 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PKCS1v15:SHA1")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA224` (`"algid:sign:RSA:message-PKCS1v15:SHA224"`).
    public static let rsaSignatureMessagePKCS1v15SHA224 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PKCS1v15:SHA224")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA256` (`"algid:sign:RSA:message-PKCS1v15:SHA256"`).
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PKCS1v15:SHA256")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA384` (`"algid:sign:RSA:message-PKCS1v15:SHA384"`).
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PKCS1v15:SHA384")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePKCS1v15SHA512` (`"algid:sign:RSA:message-PKCS1v15:SHA512"`).
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PKCS1v15:SHA512")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePSSSHA1` (`"algid:sign:RSA:message-PSS:SHA1:SHA1:20"`).
    public static let rsaSignatureMessagePSSSHA1 = SecKeyAlgorithm(constant: "algid:sign:RSA:message-PSS:SHA1:SHA1:20")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePSSSHA224` (`"algid:sign:RSA:message-PSS:SHA224:SHA224:24"`).
    public static let rsaSignatureMessagePSSSHA224 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PSS:SHA224:SHA224:24")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePSSSHA256` (`"algid:sign:RSA:message-PSS:SHA256:SHA256:32"`).
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PSS:SHA256:SHA256:32")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePSSSHA384` (`"algid:sign:RSA:message-PSS:SHA384:SHA384:48"`).
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PSS:SHA384:SHA384:48")

    /// Apple's `kSecKeyAlgorithmRSASignatureMessagePSSSHA512` (`"algid:sign:RSA:message-PSS:SHA512:SHA512:64"`).
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm(
        constant: "algid:sign:RSA:message-PSS:SHA512:SHA512:64")

    /// ECDSA over a caller digest, signature as r‖s (deprecated; the same as ``ecdsaSignatureDigestRFC4754``).
    public static let ecdsaSignatureRFC4754 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:RFC4754")

    /// ECDSA over a caller digest of any length, signature as r‖s.
    public static let ecdsaSignatureDigestRFC4754 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-RFC4754")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA1` (`"algid:sign:ECDSA:digest-RFC4754:SHA1"`).
    public static let ecdsaSignatureDigestRFC4754SHA1 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:digest-RFC4754:SHA1")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA224` (`"algid:sign:ECDSA:digest-RFC4754:SHA224"`).
    public static let ecdsaSignatureDigestRFC4754SHA224 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:digest-RFC4754:SHA224")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA256` (`"algid:sign:ECDSA:digest-RFC4754:SHA256"`).
    public static let ecdsaSignatureDigestRFC4754SHA256 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:digest-RFC4754:SHA256")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA384` (`"algid:sign:ECDSA:digest-RFC4754:SHA384"`).
    public static let ecdsaSignatureDigestRFC4754SHA384 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:digest-RFC4754:SHA384")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestRFC4754SHA512` (`"algid:sign:ECDSA:digest-RFC4754:SHA512"`).
    public static let ecdsaSignatureDigestRFC4754SHA512 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:digest-RFC4754:SHA512")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA1` (`"algid:sign:ECDSA:message-RFC4754:SHA1"`).
    public static let ecdsaSignatureMessageRFC4754SHA1 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-RFC4754:SHA1")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA224` (`"algid:sign:ECDSA:message-RFC4754:SHA224"`).
    public static let ecdsaSignatureMessageRFC4754SHA224 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-RFC4754:SHA224")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA256` (`"algid:sign:ECDSA:message-RFC4754:SHA256"`).
    public static let ecdsaSignatureMessageRFC4754SHA256 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-RFC4754:SHA256")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA384` (`"algid:sign:ECDSA:message-RFC4754:SHA384"`).
    public static let ecdsaSignatureMessageRFC4754SHA384 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-RFC4754:SHA384")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageRFC4754SHA512` (`"algid:sign:ECDSA:message-RFC4754:SHA512"`).
    public static let ecdsaSignatureMessageRFC4754SHA512 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-RFC4754:SHA512")

    /// ECDSA over a caller digest of any length, DER signature.
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-X962")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestX962SHA1` (`"algid:sign:ECDSA:digest-X962:SHA1"`).
    public static let ecdsaSignatureDigestX962SHA1 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-X962:SHA1")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestX962SHA224` (`"algid:sign:ECDSA:digest-X962:SHA224"`).
    public static let ecdsaSignatureDigestX962SHA224 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-X962:SHA224")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestX962SHA256` (`"algid:sign:ECDSA:digest-X962:SHA256"`).
    public static let ecdsaSignatureDigestX962SHA256 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-X962:SHA256")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestX962SHA384` (`"algid:sign:ECDSA:digest-X962:SHA384"`).
    public static let ecdsaSignatureDigestX962SHA384 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-X962:SHA384")

    /// Apple's `kSecKeyAlgorithmECDSASignatureDigestX962SHA512` (`"algid:sign:ECDSA:digest-X962:SHA512"`).
    public static let ecdsaSignatureDigestX962SHA512 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:digest-X962:SHA512")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageX962SHA1` (`"algid:sign:ECDSA:message-X962:SHA1"`).
    public static let ecdsaSignatureMessageX962SHA1 = SecKeyAlgorithm(constant: "algid:sign:ECDSA:message-X962:SHA1")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageX962SHA224` (`"algid:sign:ECDSA:message-X962:SHA224"`).
    public static let ecdsaSignatureMessageX962SHA224 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-X962:SHA224")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageX962SHA256` (`"algid:sign:ECDSA:message-X962:SHA256"`).
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-X962:SHA256")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageX962SHA384` (`"algid:sign:ECDSA:message-X962:SHA384"`).
    public static let ecdsaSignatureMessageX962SHA384 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-X962:SHA384")

    /// Apple's `kSecKeyAlgorithmECDSASignatureMessageX962SHA512` (`"algid:sign:ECDSA:message-X962:SHA512"`).
    public static let ecdsaSignatureMessageX962SHA512 = SecKeyAlgorithm(
        constant: "algid:sign:ECDSA:message-X962:SHA512")

    /// Raw RSA encryption, without padding.
    public static let rsaEncryptionRaw = SecKeyAlgorithm(constant: "algid:encrypt:RSA:raw")

    /// RSA encryption with PKCS#1 v1.5 padding.
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm(constant: "algid:encrypt:RSA:PKCS1")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA1` (`"algid:encrypt:RSA:OAEP:SHA1"`).
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA1")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA224` (`"algid:encrypt:RSA:OAEP:SHA224"`).
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA224")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA256` (`"algid:encrypt:RSA:OAEP:SHA256"`).
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA256")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA384` (`"algid:encrypt:RSA:OAEP:SHA384"`).
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA384")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA512` (`"algid:encrypt:RSA:OAEP:SHA512"`).
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA512")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA1AESGCM` (`"algid:encrypt:RSA:OAEP:SHA1:AESGCM"`).
    public static let rsaEncryptionOAEPSHA1AESGCM = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA1:AESGCM")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA224AESGCM` (`"algid:encrypt:RSA:OAEP:SHA224:AESGCM"`).
    public static let rsaEncryptionOAEPSHA224AESGCM = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA224:AESGCM")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA256AESGCM` (`"algid:encrypt:RSA:OAEP:SHA256:AESGCM"`).
    public static let rsaEncryptionOAEPSHA256AESGCM = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA256:AESGCM")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA384AESGCM` (`"algid:encrypt:RSA:OAEP:SHA384:AESGCM"`).
    public static let rsaEncryptionOAEPSHA384AESGCM = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA384:AESGCM")

    /// Apple's `kSecKeyAlgorithmRSAEncryptionOAEPSHA512AESGCM` (`"algid:encrypt:RSA:OAEP:SHA512:AESGCM"`).
    public static let rsaEncryptionOAEPSHA512AESGCM = SecKeyAlgorithm(constant: "algid:encrypt:RSA:OAEP:SHA512:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardX963SHA1AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM"`).
    public static let eciesEncryptionStandardX963SHA1AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardX963SHA224AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM"`).
    public static let eciesEncryptionStandardX963SHA224AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardX963SHA256AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM"`).
    public static let eciesEncryptionStandardX963SHA256AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardX963SHA384AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM"`).
    public static let eciesEncryptionStandardX963SHA384AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardX963SHA512AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM"`).
    public static let eciesEncryptionStandardX963SHA512AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorX963SHA1AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM"`).
    public static let eciesEncryptionCofactorX963SHA1AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorX963SHA224AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM"`).
    public static let eciesEncryptionCofactorX963SHA224AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorX963SHA256AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM"`).
    public static let eciesEncryptionCofactorX963SHA256AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorX963SHA384AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM"`).
    public static let eciesEncryptionCofactorX963SHA384AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorX963SHA512AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM"`).
    public static let eciesEncryptionCofactorX963SHA512AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA224AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV"`).
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA256AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV"`).
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA384AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV"`).
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionStandardVariableIVX963SHA512AESGCM` (`"algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV"`).
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA224AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV"`).
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA256AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"`).
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA384AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV"`).
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV")

    /// Apple's `kSecKeyAlgorithmECIESEncryptionCofactorVariableIVX963SHA512AESGCM` (`"algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV"`).
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = SecKeyAlgorithm(
        constant: "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV")

    /// ECDH: the shared x-coordinate.
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(constant: "algid:keyexchange:ECDH")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA1` (`"algid:keyexchange:ECDH:KDFX963:SHA1"`).
    public static let ecdhKeyExchangeStandardX963SHA1 = SecKeyAlgorithm(constant: "algid:keyexchange:ECDH:KDFX963:SHA1")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA224` (`"algid:keyexchange:ECDH:KDFX963:SHA224"`).
    public static let ecdhKeyExchangeStandardX963SHA224 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDH:KDFX963:SHA224")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA256` (`"algid:keyexchange:ECDH:KDFX963:SHA256"`).
    public static let ecdhKeyExchangeStandardX963SHA256 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDH:KDFX963:SHA256")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA384` (`"algid:keyexchange:ECDH:KDFX963:SHA384"`).
    public static let ecdhKeyExchangeStandardX963SHA384 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDH:KDFX963:SHA384")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeStandardX963SHA512` (`"algid:keyexchange:ECDH:KDFX963:SHA512"`).
    public static let ecdhKeyExchangeStandardX963SHA512 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDH:KDFX963:SHA512")

    /// Cofactor ECDH: the shared x-coordinate (the same as standard ECDH on the NIST curves).
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(constant: "algid:keyexchange:ECDHC")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA1` (`"algid:keyexchange:ECDHC:KDFX963:SHA1"`).
    public static let ecdhKeyExchangeCofactorX963SHA1 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDHC:KDFX963:SHA1")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA224` (`"algid:keyexchange:ECDHC:KDFX963:SHA224"`).
    public static let ecdhKeyExchangeCofactorX963SHA224 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDHC:KDFX963:SHA224")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA256` (`"algid:keyexchange:ECDHC:KDFX963:SHA256"`).
    public static let ecdhKeyExchangeCofactorX963SHA256 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDHC:KDFX963:SHA256")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA384` (`"algid:keyexchange:ECDHC:KDFX963:SHA384"`).
    public static let ecdhKeyExchangeCofactorX963SHA384 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDHC:KDFX963:SHA384")

    /// Apple's `kSecKeyAlgorithmECDHKeyExchangeCofactorX963SHA512` (`"algid:keyexchange:ECDHC:KDFX963:SHA512"`).
    public static let ecdhKeyExchangeCofactorX963SHA512 = SecKeyAlgorithm(
        constant: "algid:keyexchange:ECDHC:KDFX963:SHA512")
}
