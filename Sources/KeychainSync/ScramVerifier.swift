import Crypto
import CryptoExtras
import Foundation
import KeychainModel

/// A PostgreSQL SCRAM-SHA-256 password verifier, computed on the device so the server never
/// sees the password (RFC 5802 and RFC 7677, in PostgreSQL's `rolpassword` text form).
///
/// `CREATE ROLE … PASSWORD 'SCRAM-SHA-256$…'` stores such a verifier as-is, and the role then
/// logs in with the password. The verifier is offline-guessable like any password hash, so the
/// passwords this module makes are random; it is never logged and ``description`` hides it.
public struct ScramVerifier: Sendable, Equatable, CustomStringConvertible {
    /// PostgreSQL's default iteration count (`scram_iterations`).
    public static let defaultIterations = 4096

    /// The PBKDF2 iteration count.
    public let iterations: Int
    /// The salt.
    public let salt: Data
    /// SHA-256(HMAC(SaltedPassword, "Client Key")).
    public let storedKey: Data
    /// HMAC(SaltedPassword, "Server Key").
    public let serverKey: Data

    /// Computes the verifier of `password`.
    ///
    /// - Parameters:
    ///   - password: printable ASCII (PostgreSQL applies SASLprep, which leaves it unchanged).
    ///   - salt: 16 random bytes unless given (a known-answer test gives one).
    ///   - iterations: the PBKDF2 iteration count.
    /// - Throws: ``SyncServerError/Code/invalidArgument`` for an empty or non-ASCII password.
    public init(password: String, salt: Data? = nil, iterations: Int = ScramVerifier.defaultIterations) throws {
        guard !password.isEmpty, password.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw SyncServerError(.invalidArgument, "a login password must be printable ASCII")
        }
        guard (1...10_000_000).contains(iterations) else {
            throw SyncServerError(.invalidArgument, "SCRAM iteration count out of range")
        }
        let salt = salt ?? Data(SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) })
        let salted = try KDF.Insecure.PBKDF2.deriveKey(
            from: Data(password.utf8), salt: salt, using: .sha256, outputByteCount: 32,
            unsafeUncheckedRounds: iterations)
        let clientKey = Data(HMAC<SHA256>.authenticationCode(for: Data("Client Key".utf8), using: salted))
        self.iterations = iterations
        self.salt = salt
        self.storedKey = Data(SHA256.hash(data: clientKey))
        self.serverKey = Data(HMAC<SHA256>.authenticationCode(for: Data("Server Key".utf8), using: salted))
    }

    /// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (base64), what
    /// `CREATE ROLE … PASSWORD` takes.
    public var encoded: String {
        "SCRAM-SHA-256$\(iterations):\(salt.base64EncodedString())"
            + "$\(storedKey.base64EncodedString()):\(serverKey.base64EncodedString())"
    }

    /// Names the kind of verifier only (the verifier is a password hash).
    public var description: String { "SCRAM-SHA-256 verifier (\(iterations) iterations)" }

    /// A random login password: 32 bytes as unpadded base64url (printable ASCII).
    public static func randomPassword() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64URLEncoded
    }
}
