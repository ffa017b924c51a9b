// `SecKeyAlgorithm`'s initializers and equality, `SecKeyOperationType`, `SecKeyKeyExchangeParameter`,
// and the constructions behind the algorithms. `SecKeyAlgorithm`'s declaration, with Apple's names
// and exact raw strings, and the table that maps each string to its construction, are in
// SecKeyAlgorithm.swift, which scripts/generate-security-tables writes from
// scripts/tables/SecKeyAlgorithm.jsonl.

public import _SecurityFoundation

extension SecKeyAlgorithm {
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

    /// Two algorithms are equal when their raw strings are.
    public static func == (lhs: SecKeyAlgorithm, rhs: SecKeyAlgorithm) -> Bool {
        (lhs.rawValue as String) == (rhs.rawValue as String)
    }

    /// Hashes the raw string.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue as String)
    }
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
}
