import Foundation
import KeychainModel

/// The engine's token-key hardware on a TPM 2.0: Secure Enclave keys
/// (`kSecAttrTokenIDSecureEnclave`) made and used inside the TPM, the keychain keeping only
/// each key's blob (docs/keys-and-certificates.md, "Secure Enclave keys").
///
/// It connects to the TPM for each call, as ``TPMSealer`` does, so that nothing holds a TPM that
/// serves one connection at a time, and its errors are ``KeychainModel/KeychainError``s that say
/// what to do.
public struct TPMSecureEnclave: TokenKeyHardware {
    /// The TCTI configuration of the TPM (`device:/dev/tpmrm0`, `swtpm:path=…`).
    public let tcti: String
    /// The storage key's and recent keys' saved contexts, shared by the copies of this value.
    private let contexts = TPMSavedContexts()

    /// The TPM at `tcti`; see ``MachineTPM/checked(_:)``.
    /// - Throws: `.parameter` for a TCTI that names no TPM.
    public init(tcti: String) throws {
        self.tcti = try MachineTPM.checked(tcti)
    }

    /// The TPM of this machine by the user's preferences; see ``MachineTPM/tcti(by:)``.
    /// - Throws: `.parameter` for a preference that names no TPM.
    public static func configured(by preferences: KeychainPreferences) throws -> TPMSecureEnclave? {
        try MachineTPM.tcti(by: preferences).map(TPMSecureEnclave.init(tcti:))
    }

    /// `the TPM 2.0 at device:/dev/tpmrm0`.
    public var name: String { "the TPM 2.0 at \(tcti)" }

    /// Makes a P-256 key in the TPM; see ``TPM/createKey()``.
    package func createKey() throws -> (publicKey: Data, wrappedKey: Data) {
        try mapped {
            let (publicKey, blob) = try TPM(tcti: tcti).createKey(contexts: contexts)
            return (publicKey, blob.serialized)
        }
    }

    /// Signs or agrees keys with the key `wrappedKey` holds, in the TPM; a key exchange's X9.63
    /// KDF runs here, over the secret the TPM gives.
    package func useKey(_ wrappedKey: Data, _ request: TokenKeyRequest) throws -> Data {
        try mapped {
            let blob = try TPMBlob(serialized: wrappedKey)
            switch request.operation {
            case .sign:
                return try TPM(tcti: tcti).sign(request.input, with: blob, contexts: contexts)
            case .keyExchange:
                var shared = try TPM(tcti: tcti).sharedSecret(
                    with: blob, peer: request.input, contexts: contexts)
                defer { shared.resetBytes(in: 0..<shared.count) }
                guard request.kdfHash != 0 else { return shared }
                guard
                    let derived = X963KeyDerivation.derive(
                        shared, hashBits: request.kdfHash, sharedInfo: request.sharedInfo,
                        outputSize: request.outputSize)
                else { throw KeychainError.parameter("ECDHKeyExchange wrong requested size (\(request.outputSize))") }
                return derived
            }
        }
    }

    /// Runs `body`, turning a ``TPMError`` into the ``KeychainModel/KeychainError`` a user acts on.
    private func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as TPMError {
            switch error.kind {
            case .unavailable:
                throw KeychainError(
                    .notAvailable, "the Secure Enclave key is in a TPM, and no TPM answers at \(tcti)",
                    underlying: error, isSetupProblem: true)
            case .notThisTPM:
                throw KeychainError(
                    .notAvailable,
                    "the Secure Enclave key was made by another TPM (another machine, or this TPM was "
                        + "cleared): it can never be used here", underlying: error, isSetupProblem: true)
            case .malformed:
                throw KeychainError(.decode, "the Secure Enclave key's TPM blob is malformed", underlying: error)
            case .authorizationFailed, .lockedOut, .policyFailed, .failed:
                throw KeychainError(.internalComponent, "the TPM failed: \(error)", underlying: error)
            }
        }
    }
}
