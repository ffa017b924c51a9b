// `SecKeyAlgorithm`, `SecKeyOperationType` and `SecKeyKeyExchangeParameter`: Apple's names and exact
// raw strings (`OSX/sec/Security/SecKeyAdaptors.m`), and the table that maps each string to the
// construction that implements it here.

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

    /// Creates an algorithm from its raw string.
    ///
    /// - Parameter rawValue: A raw algorithm string; strings Apple does not define are accepted
    ///   and reported unsupported.
    public init(rawValue: CFString) {
        self.rawValue = SecConstantString(value: rawValue as String)
    }

    /// Creates an algorithm from its raw string.
    ///
    /// - Parameter rawValue: A raw algorithm string.
    public init(_ rawValue: CFString) {
        self.init(rawValue: rawValue)
    }

    init(constant: String) {
        rawValue = SecConstantString(value: constant)
    }

    /// Two algorithms are equal when their raw strings are.
    public static func == (lhs: SecKeyAlgorithm, rhs: SecKeyAlgorithm) -> Bool {
        (lhs.rawValue as String) == (rhs.rawValue as String)
    }

    /// Hashes the raw string.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue as String)
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

/// The kind of operation asked of ``SecKeyIsAlgorithmSupported(_:_:_:)``.
public enum SecKeyOperationType: Int, Sendable {
    /// Creating a signature (``SecKeyCreateSignature(_:_:_:_:)``).
    case sign = 0
    /// Verifying a signature (``SecKeyVerifySignature(_:_:_:_:_:)``).
    case verify = 1
    /// Encrypting (``SecKeyCreateEncryptedData(_:_:_:_:)``).
    case encrypt = 2
    /// Decrypting (``SecKeyCreateDecryptedData(_:_:_:_:)``).
    case decrypt = 3
    /// Key exchange (``SecKeyCopyKeyExchangeResult(_:_:_:_:_:)``).
    case keyExchange = 4
}

/// A key of the parameter dictionary of ``SecKeyCopyKeyExchangeResult(_:_:_:_:_:)``.
public struct SecKeyKeyExchangeParameter: Hashable, RawRepresentable, @unchecked Sendable {
    /// The parameter's raw string.
    public let rawValue: CFString

    /// Creates a parameter from its raw string.
    ///
    /// - Parameter rawValue: The raw string.
    public init(rawValue: CFString) {
        self.rawValue = SecConstantString(value: rawValue as String)
    }

    /// Creates a parameter from its raw string.
    ///
    /// - Parameter rawValue: The raw string.
    public init(_ rawValue: CFString) {
        self.init(rawValue: rawValue)
    }

    /// Two parameters are equal when their raw strings are.
    public static func == (lhs: SecKeyKeyExchangeParameter, rhs: SecKeyKeyExchangeParameter) -> Bool {
        (lhs.rawValue as String) == (rhs.rawValue as String)
    }

    /// Hashes the raw string.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue as String)
    }

    /// The number of bytes the X9.63 KDF produces (a `CFNumber`, required by the KDF variants): `"requestedSize"`.
    public static let requestedSize = SecKeyKeyExchangeParameter(rawValue: "requestedSize" as NSString)

    /// The X9.63 KDF's shared info (a `CFData`, optional): `"sharedInfo"`.
    public static let sharedInfo = SecKeyKeyExchangeParameter(rawValue: "sharedInfo" as NSString)
}

// MARK: - The algorithm table

/// A hash function an algorithm names.
enum KeyHash: Sendable, CaseIterable {
    case sha1, sha224, sha256, sha384, sha512

    /// The name in Apple's raw strings.
    var name: String {
        switch self {
        case .sha1: "SHA1"
        case .sha224: "SHA224"
        case .sha256: "SHA256"
        case .sha384: "SHA384"
        case .sha512: "SHA512"
        }
    }

    /// The digest length in bytes.
    var byteCount: Int {
        switch self {
        case .sha1: 20
        case .sha224: 28
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// Whether swift-crypto has this hash (it has no SHA-224).
    var isAvailable: Bool { self != .sha224 }
}

/// How an ECDSA signature is encoded.
enum ECDSAFormat: Sendable {
    /// DER `SEQUENCE { r, s }`.
    case x962
    /// `r‖s`, each padded to the field size.
    case rfc4754
}

/// What an algorithm signs: a message hashed here, a digest of a fixed hash, or any digest.
enum SignatureInput: Sendable, Equatable {
    case message(KeyHash)
    case digest(KeyHash)
    case anyDigest
}

/// The construction behind an algorithm string.
enum AlgorithmSpec: Sendable, Equatable {
    case ecdsa(SignatureInput, ECDSAFormat)
    case rsaPKCS1v15(SignatureInput)
    case rsaPSS(SignatureInput)
    case rsaSignatureRaw
    case rsaEncryptionRaw
    case rsaEncryptionPKCS1
    case rsaOAEP(KeyHash)
    case rsaOAEPAESGCM(KeyHash)
    case ecies(cofactor: Bool, variableIV: Bool, KeyHash)
    case ecdh(cofactor: Bool, kdf: KeyHash?)

    /// Whether this construction can take part in an operation of this kind.
    func serves(_ operation: SecKeyOperationType) -> Bool {
        switch self {
        case .ecdsa, .rsaPKCS1v15, .rsaPSS, .rsaSignatureRaw: operation == .sign || operation == .verify
        case .rsaEncryptionRaw, .rsaEncryptionPKCS1, .rsaOAEP, .rsaOAEPAESGCM, .ecies:
            operation == .encrypt || operation == .decrypt
        case .ecdh: operation == .keyExchange
        }
    }

    /// The construction of a raw string, or `nil` for a string Apple does not define or we do not know.
    static func of(_ algorithm: SecKeyAlgorithm) -> AlgorithmSpec? {
        table[queryString(algorithm.rawValue) ?? ""]
    }

    private static let table: [String: AlgorithmSpec] = {
        var table: [String: AlgorithmSpec] = [
            "algid:sign:RSA:raw": .rsaSignatureRaw,
            "algid:sign:RSA:digest-PKCS1v15": .rsaPKCS1v15(.anyDigest),
            "algid:sign:ECDSA:RFC4754": .ecdsa(.anyDigest, .rfc4754),
            "algid:sign:ECDSA:digest-RFC4754": .ecdsa(.anyDigest, .rfc4754),
            "algid:sign:ECDSA:digest-X962": .ecdsa(.anyDigest, .x962),
            "algid:encrypt:RSA:raw": .rsaEncryptionRaw,
            "algid:encrypt:RSA:PKCS1": .rsaEncryptionPKCS1,
            "algid:keyexchange:ECDH": .ecdh(cofactor: false, kdf: nil),
            "algid:keyexchange:ECDHC": .ecdh(cofactor: true, kdf: nil),
        ]
        for hash in KeyHash.allCases {
            let name = hash.name
            // PSS strings carry the salt length; Apple's SHA-224 strings say 24 although the salt is 28.
            let salt = hash == .sha224 ? 24 : hash.byteCount
            table["algid:sign:RSA:digest-PKCS1v15:\(name)"] = .rsaPKCS1v15(.digest(hash))
            table["algid:sign:RSA:message-PKCS1v15:\(name)"] = .rsaPKCS1v15(.message(hash))
            table["algid:sign:RSA:digest-PSS:\(name):\(name):\(salt)"] = .rsaPSS(.digest(hash))
            table["algid:sign:RSA:message-PSS:\(name):\(name):\(salt)"] = .rsaPSS(.message(hash))
            table["algid:sign:ECDSA:digest-X962:\(name)"] = .ecdsa(.digest(hash), .x962)
            table["algid:sign:ECDSA:message-X962:\(name)"] = .ecdsa(.message(hash), .x962)
            table["algid:sign:ECDSA:digest-RFC4754:\(name)"] = .ecdsa(.digest(hash), .rfc4754)
            table["algid:sign:ECDSA:message-RFC4754:\(name)"] = .ecdsa(.message(hash), .rfc4754)
            table["algid:encrypt:RSA:OAEP:\(name)"] = .rsaOAEP(hash)
            table["algid:encrypt:RSA:OAEP:\(name):AESGCM"] = .rsaOAEPAESGCM(hash)
            for (cofactor, tag) in [(false, "ECDH"), (true, "ECDHC")] {
                table["algid:keyexchange:\(tag):KDFX963:\(name)"] = .ecdh(cofactor: cofactor, kdf: hash)
                table["algid:encrypt:ECIES:\(tag):KDFX963:\(name):AESGCM"] = .ecies(
                    cofactor: cofactor, variableIV: false, hash)
                if hash != .sha1 {
                    table["algid:encrypt:ECIES:\(tag):KDFX963:\(name):AESGCM-KDFIV"] = .ecies(
                        cofactor: cofactor, variableIV: true, hash)
                }
            }
        }
        return table
    }()
}
