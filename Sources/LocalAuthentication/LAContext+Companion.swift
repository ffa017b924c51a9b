import Crypto
import Foundation
import KeychainClient
import KeychainModel
import UserPresence

/// The companion on Linux: a FIDO2 security key paired with the user's keychains
/// (`security security-key add`, ``UserPresence/SecurityKeyRegistry``), touched through libfido2.
extension LAContext {
    /// The security keys paired with this process's user.
    /// - Throws: ``LAError/Code/companionNotAvailable`` when none is, or their list is malformed.
    static func pairedKeys(environment: [String: String]) throws(LAError) -> [PairedSecurityKey] {
        let keys: [PairedSecurityKey]
        do {
            keys = try SecurityKeyRegistry(paths: KeychainPaths(environment: environment)).keys()
        } catch {
            throw LAError(.companionNotAvailable, "the list of paired security keys cannot be read: \(error)")
        }
        guard !keys.isEmpty else {
            throw LAError(.companionNotAvailable, "no security key is paired (security security-key add)")
        }
        return keys
    }

    /// A hash of the paired keys' credentials, which changes when a key is paired or removed;
    /// `nil` when none is.
    static func companionStateHash(environment: [String: String]) -> Data? {
        guard let keys = try? pairedKeys(environment: environment) else { return nil }
        var hash = SHA256()
        for serialized in keys.map(\.key.serialized).sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            hash.update(data: serialized)
        }
        return Data(hash.finalize())
    }

    /// Has the person touch a paired key where this process's keychain is kept (keychaind, or
    /// this process), blocking this thread. The proof answers the context's reads of
    /// `.companion` items bound to that key for `lifetime`.
    /// - Throws: ``LAError``: `systemCancel` when nobody touched the key in time or it refused,
    ///   `authenticationFailed` when its signature does not verify, `companionNotAvailable` when
    ///   none is paired or attached.
    func evaluateCompanion(reason: String, lifetime: Duration) throws -> Data {
        _ = try Self.pairedKeys(environment: ProcessInfo.processInfo.environment)
        do {
            return try Keychains.authenticateWithCompanion(lifetime: lifetime) {
                TerminalHint.write("Touch your security key: \(reason)\n")
            }.proof
        } catch let error as KeychainError {
            switch error.code {
            case .authFailed: throw LAError(.authenticationFailed, "the security key's signature does not verify")
            case .userCanceled: throw LAError(.systemCancel, "nobody touched the security key in time")
            default: throw LAError(.companionNotAvailable, "no paired security key can be used: \(error.message)")
            }
        } catch {
            throw LAError(.companionNotAvailable, "no paired security key can be used: \(error)")
        }
    }
}
