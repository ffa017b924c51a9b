import KeychainModel

/// The error thrown by ``KeychainStorage`` and ``Cipher``.
///
/// Its ``code`` says what went wrong; ``osStatus`` is the Apple `OSStatus` that matches
/// it (for a keychain failure, the keychain's own status). The message never contains a
/// secret, a stored value or a password.
///
/// ```swift
/// do {
///     _ = try KeychainStorage.openStore(name: "cache", cipher: cipher, accessGroup: nil)
/// } catch let error as KeychainStorageError where error.code == .wrongCipher {
///     // ask for the password again
/// }
/// ```
public struct KeychainStorageError: Error, Sendable, CustomStringConvertible {
    /// What went wrong: an open set of codes (new codes never break a `switch`).
    public var code: Code
    /// An explanation free of secrets.
    public var message: String
    /// The lower-level failure: a ``KeychainModel/KeychainError`` or a cipher's error.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The failure code.
    ///   - message: An explanation that contains no secret.
    ///   - underlying: The lower-level failure, if any.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The Apple `OSStatus` for this error: the keychain's status for ``Code/keychain``,
    /// otherwise the status listed with each code.
    public var osStatus: Int32 {
        if code == .keychain, let keychainError = underlying as? KeychainError { return keychainError.osStatus }
        return code.osStatus
    }

    /// The code, the status and the message; never a secret.
    public var description: String {
        var text = "KeychainStorageError(\(code), OSStatus \(osStatus)): \(message)"
        if let underlying { text += " [\(underlying)]" }
        return text
    }

    /// A failure code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public var rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// `createStore` found a store with that name (errSecDuplicateItem, -25299).
        public static let storeAlreadyExists = Code(rawValue: "storeAlreadyExists")
        /// The store does not exist, or was removed (errSecItemNotFound, -25300).
        public static let storeNotFound = Code(rawValue: "storeNotFound")
        /// The store name is empty, too long, not valid text, or contains `/`, `..`, a NUL
        /// or another control character (errSecParam, -50).
        public static let invalidStoreName = Code(rawValue: "invalidStoreName")
        /// The cipher is not the store's: it cannot read the store's check value
        /// (errSecAuthFailed, -25293).
        public static let wrongCipher = Code(rawValue: "wrongCipher")
        /// Another instance changed the store's cipher; open the store again with the new one
        /// (errSecAuthFailed, -25293).
        public static let cipherChanged = Code(rawValue: "cipherChanged")
        /// A stored value could not be decrypted or authenticated (errSecDecode, -26275).
        public static let decryptionFailed = Code(rawValue: "decryptionFailed")
        /// A value could not be encrypted (errSecInternalComponent, -2070).
        public static let encryptionFailed = Code(rawValue: "encryptionFailed")
        /// A parameter was not valid, such as a weak key derivation or a short salt
        /// (errSecParam, -50).
        public static let invalidParameter = Code(rawValue: "invalidParameter")
        /// The keychain failed; ``KeychainStorageError/underlying`` is the
        /// ``KeychainModel/KeychainError`` and its status is the error's.
        public static let keychain = Code(rawValue: "keychain")

        var osStatus: Int32 {
            switch self {
            case .storeAlreadyExists: -25299
            case .storeNotFound: -25300
            case .invalidStoreName, .invalidParameter: -50
            case .wrongCipher, .cipherChanged: -25293
            case .decryptionFailed: -26275
            case .encryptionFailed: -2070
            default: -2070
            }
        }

        /// The code's name.
        public var description: String { rawValue }
    }
}

extension KeychainStorageError {
    /// Runs a keychain operation, wrapping its `KeychainError` as ``Code/keychain``.
    static func keychain<T>(_ what: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as KeychainError {
            throw KeychainStorageError(.keychain, "the keychain could not \(what)", underlying: error)
        }
    }
}

extension KeychainStorageError: OSStatusConvertible {}
