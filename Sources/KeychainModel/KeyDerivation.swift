import Foundation

/// How a keychain turns its password into a key.
///
/// The parameters are stored in the keychain file and authenticated: a file edited to other
/// parameters does not open, and absurd parameters are refused before any memory is
/// allocated.
///
/// ```swift
/// let keychain = try Keychains.create(at: path, password: Data("correct horse".utf8),
///     configuration: .init(keyDerivation: .scrypt()))
/// ```
public struct KeyDerivation: Sendable, Hashable, CustomStringConvertible {
    /// The function and its cost parameters.
    public enum Algorithm: Sendable, Hashable {
        /// scrypt with cost 2^logN, block size r and parallelism p (memory-hard).
        case scrypt(logN: UInt8, r: UInt32, p: UInt32)
        /// PBKDF2-HMAC-SHA256 with the given number of rounds.
        case pbkdf2SHA256(rounds: UInt32)
    }

    /// The function and cost.
    public var algorithm: Algorithm

    /// Creates a derivation from an algorithm.
    public init(_ algorithm: Algorithm) { self.algorithm = algorithm }

    /// scrypt; the default is N=2^17, r=8, p=1 (about 128 MiB and 0.45 s here).
    public static func scrypt(logN: UInt8 = 17, r: UInt32 = 8, p: UInt32 = 1) -> KeyDerivation {
        KeyDerivation(.scrypt(logN: logN, r: r, p: p))
    }

    /// PBKDF2-HMAC-SHA256 at OWASP's 2023 strength (600,000 rounds) or more.
    public static func pbkdf2(rounds: UInt32 = 600_000) -> KeyDerivation {
        KeyDerivation(.pbkdf2SHA256(rounds: rounds))
    }

    /// The default: scrypt N=2^17, r=8, p=1.
    public static let `default` = scrypt()

    /// A cheap derivation for tests only (scrypt N=2^10). A keychain that uses it opens
    /// only when ``KeychainConfiguration/allowsUnsafeKeyDerivation`` is `true`.
    public static let unsafeTestingOnly = scrypt(logN: 10, r: 8, p: 1)

    /// The function and its parameters, e.g. `scrypt(N=2^17, r=8, p=1)`.
    public var description: String {
        switch algorithm {
        case .scrypt(let logN, let r, let p): "scrypt(N=2^\(logN), r=\(r), p=\(p))"
        case .pbkdf2SHA256(let rounds): "PBKDF2-SHA256(\(rounds) rounds)"
        }
    }

    /// The memory the derivation needs, in bytes.
    package var memoryCost: Int {
        switch algorithm {
        case .scrypt(let logN, let r, let p):
            return 128 * Int(r) * ((1 << Int(logN)) + Int(p)) + 4096
        case .pbkdf2SHA256: return 0
        }
    }

    /// Whether the parameters meet the production floor (scrypt N ≥ 2^15 with r ≥ 8, or
    /// PBKDF2 with ≥ 210,000 rounds).
    package var isStrong: Bool {
        switch algorithm {
        case .scrypt(let logN, let r, _): logN >= 15 && r >= 8
        case .pbkdf2SHA256(let rounds): rounds >= 210_000
        }
    }

    /// Refuses absurd parameters (too much memory or time) before anything is allocated,
    /// and weak ones unless `allowingWeak`.
    package func validate(allowingWeak: Bool) throws {
        switch algorithm {
        case .scrypt(let logN, let r, let p):
            // Bound memory (1 GiB) and work (N·r·p at most 8 times the default's 2^20).
            guard (1...22).contains(logN), (1...32).contains(r), (1...16).contains(p),
                memoryCost <= 1 << 30, (UInt64(1) << logN) * UInt64(r) * UInt64(p) <= 1 << 23
            else {
                throw KeychainError.invalidKeychain("unsupported key-derivation parameters")
            }
        case .pbkdf2SHA256(let rounds):
            guard (1...10_000_000).contains(rounds) else {
                throw KeychainError.invalidKeychain("unsupported key-derivation parameters")
            }
        }
        if !allowingWeak && !isStrong {
            throw KeychainError.invalidKeychain(
                "key-derivation parameters are weaker than allowed (\(self))")
        }
    }
}
