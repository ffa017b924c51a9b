import Crypto
import CryptoExtras
import Foundation

/// Encrypts the values of a ``KeychainStorage`` before they reach the keychain, and
/// decrypts them after they are read.
///
/// ``Cipher`` is the default implementation (a password-derived key and AES-256-GCM).
/// An implementation must be deterministic in what it accepts: `decrypt(encrypt(x)) == x`,
/// and `decrypt` must throw (not return other bytes) for data it did not produce, so that
/// a wrong cipher is detected. Its errors must not contain the data.
public protocol Ciphering: Sendable {
    /// Encrypts a value.
    /// - Parameter data: The plaintext.
    /// - Returns: The ciphertext.
    /// - Throws: Any error; ``KeychainStorage`` reports it as
    ///   ``KeychainStorageError/Code/encryptionFailed``.
    func encrypt(_ data: Data) throws -> Data

    /// Decrypts a value produced by ``encrypt(_:)``.
    /// - Parameter data: The ciphertext.
    /// - Returns: The plaintext.
    /// - Throws: Any error when `data` is not authentic; ``KeychainStorage`` reports it as
    ///   ``KeychainStorageError/Code/decryptionFailed`` (or
    ///   ``KeychainStorageError/Code/wrongCipher`` when opening a store).
    func decrypt(_ data: Data) throws -> Data
}

/// The default ``Ciphering``: a 256-bit key derived from a password and a salt, and
/// AES-256-GCM.
///
/// ```swift
/// let salt = Cipher.makeSalt()            // keep it with the store's owner; it is not secret
/// let cipher = try Cipher(password: password, salt: salt)
/// ```
///
/// The key is derived with scrypt (N = 2^17, r = 8, p = 1: memory-hard, OWASP's minimum)
/// or, on request, PBKDF2-HMAC-SHA256 with at least 600,000 rounds. Derivation takes a
/// noticeable fraction of a second by design: create one `Cipher` and reuse it.
///
/// Each value is sealed as `0x01 ‖ nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)` with a
/// fresh random nonce; the leading format byte is authenticated too.
/// A `Cipher`'s `description` never shows its key.
public final class Cipher: Ciphering, CustomStringConvertible {
    /// How a ``Cipher`` turns its password into a key.
    public struct KeyDerivation: Sendable, Hashable, CustomStringConvertible {
        enum Algorithm: Sendable, Hashable {
            case scrypt(logN: UInt8, r: Int, p: Int)
            case pbkdf2SHA256(rounds: Int)
        }

        let algorithm: Algorithm
        let isTestingOnly: Bool

        /// scrypt with cost N = 2^`logN`, block size `r` and parallelism `p`. Costs below
        /// N = 2^17, r = 8 are refused.
        public static func scrypt(logN: UInt8 = 17, r: Int = 8, p: Int = 1) -> KeyDerivation {
            KeyDerivation(algorithm: .scrypt(logN: logN, r: r, p: p), isTestingOnly: false)
        }

        /// PBKDF2-HMAC-SHA256; fewer than 600,000 rounds (OWASP's 2023 figure) are refused.
        public static func pbkdf2(rounds: Int = 600_000) -> KeyDerivation {
            KeyDerivation(algorithm: .pbkdf2SHA256(rounds: rounds), isTestingOnly: false)
        }

        /// The default: scrypt N = 2^17, r = 8, p = 1.
        public static let `default` = scrypt()

        /// A cheap derivation (scrypt N = 2^10) that makes tests fast. Never use it for
        /// real data: a password protected by it falls to guessing quickly.
        public static let unsafeTestingOnly = KeyDerivation(
            algorithm: .scrypt(logN: 10, r: 8, p: 1), isTestingOnly: true)

        /// The function and its parameters, marked when it is for tests only.
        public var description: String {
            let name =
                switch algorithm {
                case .scrypt(let logN, let r, let p): "scrypt(N=2^\(logN), r=\(r), p=\(p))"
                case .pbkdf2SHA256(let rounds): "PBKDF2-SHA256(\(rounds) rounds)"
                }
            return isTestingOnly ? name + " [unsafe, testing only]" : name
        }

        func validate() throws {
            switch algorithm {
            case .scrypt(let logN, let r, let p):
                guard (1...22).contains(logN), (1...32).contains(r), (1...16).contains(p),
                    128 * r * ((1 << Int(logN)) + p) <= 1 << 30
                else {
                    throw KeychainStorageError(.invalidParameter, "unsupported scrypt parameters (\(self))")
                }
                if !isTestingOnly && (logN < 17 || r < 8) {
                    throw KeychainStorageError(
                        .invalidParameter, "scrypt parameters are weaker than N=2^17, r=8 (\(self))")
                }
            case .pbkdf2SHA256(let rounds):
                guard rounds >= 600_000, rounds <= 100_000_000 else {
                    throw KeychainStorageError(.invalidParameter, "PBKDF2 needs 600,000 to 100,000,000 rounds")
                }
            }
        }

        func deriveKey(password: Data, salt: Data) throws -> SymmetricKey {
            do {
                switch algorithm {
                case .scrypt(let logN, let r, let p):
                    return try KDF.Scrypt.deriveKey(
                        from: password, salt: salt, outputByteCount: 32, rounds: 1 << Int(logN),
                        blockSize: r, parallelism: p)
                case .pbkdf2SHA256(let rounds):
                    return try KDF.Insecure.PBKDF2.deriveKey(
                        from: password, salt: salt, using: .sha256, outputByteCount: 32, rounds: rounds)
                }
            } catch {
                throw KeychainStorageError(.invalidParameter, "key derivation failed (\(self))")
            }
        }
    }

    /// The smallest salt accepted, in bytes (128 bits, NIST SP 800-132).
    public static let minimumSaltSize = 16

    private static let formatVersion: UInt8 = 1
    private static let overhead = 1 + 12 + 16

    private let key: SymmetricKey
    /// How the key was made: a ``KeyDerivation``'s description, or `"raw key"`.
    private let origin: String

    /// Derives a cipher from a password and a salt.
    ///
    /// The same password and salt always give the same cipher, so a store created with
    /// one opens with the other.
    /// - Parameters:
    ///   - password: The password; must not be empty.
    ///   - salt: At least ``minimumSaltSize`` bytes, unique to this use (see ``makeSalt()``).
    ///   - keyDerivation: The key derivation; the default is scrypt N = 2^17, r = 8, p = 1.
    /// - Throws: ``KeychainStorageError`` with ``KeychainStorageError/Code/invalidParameter``
    ///   for an empty password, a short salt or weak parameters.
    public convenience init(password: String, salt: Data, keyDerivation: KeyDerivation = .default) throws {
        try self.init(password: Data(password.utf8), salt: salt, keyDerivation: keyDerivation)
    }

    /// Derives a cipher from a password's bytes, used exactly as given (UTF-8 or not), and a
    /// salt. The text `password` gives the same cipher as its UTF-8 bytes.
    /// See ``init(password:salt:keyDerivation:)-(String,Data,_)``.
    public init(password: Data, salt: Data, keyDerivation: KeyDerivation = .default) throws {
        guard !password.isEmpty else {
            throw KeychainStorageError(.invalidParameter, "the password is empty")
        }
        guard salt.count >= Self.minimumSaltSize else {
            throw KeychainStorageError(
                .invalidParameter, "the salt has \(salt.count) bytes; at least \(Self.minimumSaltSize) are needed")
        }
        try keyDerivation.validate()
        key = try keyDerivation.deriveKey(password: password, salt: salt)
        origin = keyDerivation.description
    }

    /// Derives a cipher from a password and a salt given as text (its UTF-8 bytes).
    /// See ``init(password:salt:keyDerivation:)-(String,Data,_)``.
    public convenience init(password: String, salt: String, keyDerivation: KeyDerivation = .default) throws {
        try self.init(password: password, salt: Data(salt.utf8), keyDerivation: keyDerivation)
    }

    /// A cipher that uses a given 256-bit key, for keys that come from elsewhere (a key
    /// agreement, a hardware token).
    /// - Parameter key: A 256-bit key.
    /// - Throws: ``KeychainStorageError/Code/invalidParameter`` for another key size.
    public init(key: SymmetricKey) throws {
        guard key.bitCount == 256 else {
            throw KeychainStorageError(.invalidParameter, "the key must have 256 bits")
        }
        self.key = key
        origin = "raw key"
    }

    /// A new random salt of 32 bytes.
    public static func makeSalt() -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Seals `data` with AES-256-GCM under a fresh random nonce.
    public func encrypt(_ data: Data) throws -> Data {
        do {
            let header = Data([Self.formatVersion])
            let box = try AES.GCM.seal(data, using: key, authenticating: header)
            guard let combined = box.combined else {
                throw KeychainStorageError(.encryptionFailed, "AES-GCM produced no output")
            }
            return header + combined
        } catch let error as KeychainStorageError {
            throw error
        } catch {
            throw KeychainStorageError(.encryptionFailed, "AES-GCM sealing failed")
        }
    }

    /// Opens data sealed by ``encrypt(_:)`` with the same key.
    /// - Throws: ``KeychainStorageError/Code/decryptionFailed`` when the data is not
    ///   authentic under this key or not in this format.
    public func decrypt(_ data: Data) throws -> Data {
        guard data.count >= Self.overhead, data.first == Self.formatVersion else {
            throw KeychainStorageError(.decryptionFailed, "the value is not in the Cipher format")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: data.dropFirst())
            return try AES.GCM.open(box, using: key, authenticating: data.prefix(1))
        } catch {
            throw KeychainStorageError(.decryptionFailed, "the value does not authenticate under this cipher")
        }
    }

    /// Names the algorithm and the key derivation; never the key.
    public var description: String { "Cipher(AES-256-GCM, key: \(origin))" }
}
