import Crypto
import CryptoExtras
import Foundation

extension KeyDerivation {
    /// Derives a 256-bit key from a password's text (its UTF-8 bytes).
    func deriveKey(password: String, salt: Data) throws -> SymmetricKey {
        try deriveKey(password: Data(password.utf8), salt: salt)
    }

    /// Derives a 256-bit key from a password's bytes, exactly as given (UTF-8 or not).
    ///
    /// The password is length-prefixed before derivation: HMAC pads short keys with zeros, so
    /// without the prefix "pw" and "pw\0" would derive the same key.
    func deriveKey(password: Data, salt: Data) throws -> SymmetricKey {
        Self.willDerive?(self)
        var passwordBytes = Data()
        passwordBytes.appendLengthPrefixed(password)
        do {
            switch algorithm {
            case .scrypt(let logN, let r, let p):
                return try KDF.Scrypt.deriveKey(
                    from: passwordBytes, salt: salt, outputByteCount: 32, rounds: 1 << Int(logN),
                    blockSize: Int(r), parallelism: Int(p), maxMemory: memoryCost)
            case .pbkdf2SHA256(let rounds):
                return try KDF.Insecure.PBKDF2.deriveKey(
                    from: passwordBytes, salt: salt, using: .sha256, outputByteCount: 32,
                    unsafeUncheckedRounds: Int(rounds))
            }
        } catch {
            throw KeychainError(.allocate, "key derivation failed")
        }
    }

    // MARK: Observing (tests)

    /// Called as each derivation starts, before any of its memory is allocated, in code that
    /// runs under ``$willDerive``'s `withValue` (the binding is the task's, so tests running in
    /// parallel do not see each other's derivations). For tests and the stress suite: they
    /// check that a refusal happened *before* any derivation by this mechanism, not by timing.
    @TaskLocal package static var willDerive: (@Sendable (KeyDerivation) -> Void)? = nil

    /// Runs `body` and counts the key derivations it started (see ``willDerive``).
    package static func countingDerivations<T>(_ body: () throws -> T) rethrows -> (result: T, derivations: Int) {
        let counter = DerivationCounter()
        let result = try $willDerive.withValue({ _ in counter.increment() }, operation: body)
        return (result, counter.value)
    }

    // MARK: Encoding

    /// The stored form: algorithm byte, parameters, salt.
    func encoded(salt: Data) -> Data {
        var out = Data()
        switch algorithm {
        case .scrypt(let logN, let r, let p):
            out.append(1)
            out.append(logN)
            out.appendUInt32(r)
            out.appendUInt32(p)
        case .pbkdf2SHA256(let rounds):
            out.append(2)
            out.append(0)
            out.appendUInt32(rounds)
            out.appendUInt32(0)
        }
        out.append(UInt8(salt.count))
        out.append(salt)
        return out
    }

    /// Reads the stored form.
    static func decode(_ bytes: Data) throws -> (KeyDerivation, salt: Data) {
        let fields = bytes.withUnsafeBytes { raw -> (UInt8, UInt8, UInt32, UInt32, Data)? in
            var reader = BufferReader(raw)
            guard let kind = reader.readUInt8(), let logN = reader.readUInt8(),
                let a = reader.readUInt32(), let b = reader.readUInt32(),
                let saltCount = reader.readUInt8(), let salt = reader.read(Int(saltCount)),
                reader.isAtEnd, saltCount >= 16
            else { return nil }
            return (kind, logN, a, b, Data(salt))
        }
        guard let (kind, logN, a, b, salt) = fields else {
            throw KeychainError.invalidKeychain("malformed key-derivation parameters")
        }
        switch kind {
        case 1: return (KeyDerivation(.scrypt(logN: logN, r: a, p: b)), salt)
        case 2 where logN == 0 && b == 0: return (KeyDerivation(.pbkdf2SHA256(rounds: a)), salt)
        default: throw KeychainError.invalidKeychain("unknown key-derivation function")
        }
    }
}

// MARK: - Byte helpers

extension Data {
    mutating func appendUInt32(_ value: UInt32) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }

    mutating func appendLengthPrefixed(_ bytes: Data) {
        appendUInt32(UInt32(bytes.count))
        append(bytes)
    }
}

/// A thread-safe count of derivations, for ``KeyDerivation/countingDerivations(_:)``.
private final class DerivationCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
