import Foundation
import KeychainModel

/// The engine's ``KeychainModel/KeychainSealer`` on a TPM 2.0: what seals the login keychain to
/// this machine (docs/login.md).
///
/// It connects to the TPM for each call (a few milliseconds; nothing is held open between
/// unlocks), and its errors are ``KeychainModel/KeychainError``s that say what to do.
public struct TPMSealer: KeychainSealer {
    /// The TCTI configuration of the TPM (`device:/dev/tpmrm0`, `swtpm:path=…`).
    public let tcti: String

    /// The TPM at `tcti`; see ``MachineTPM/checked(_:)``.
    /// - Throws: `.parameter` for a TCTI that names no TPM.
    public init(tcti: String) throws {
        self.tcti = try MachineTPM.checked(tcti)
    }

    /// The TPM of this machine by the user's preferences; see ``MachineTPM/tcti(by:)``.
    /// - Throws: `.parameter` for a preference that names no TPM.
    public static func configured(by preferences: KeychainPreferences) throws -> TPMSealer? {
        try MachineTPM.tcti(by: preferences).map(TPMSealer.init(tcti:))
    }

    /// Seals `secret` in the TPM under `authorization`; see ``TPM/seal(_:authorization:)``.
    public func seal(_ secret: Data, authorization: Data) throws -> Data {
        try mapped { try TPM(tcti: tcti).seal(secret, authorization: authorization).serialized }
    }

    /// Unseals `sealed`; see ``TPM/unseal(_:authorization:)``.
    public func unseal(_ sealed: Data, authorization: Data) throws -> Data {
        try mapped {
            let secret = try TPMBlob(serialized: sealed)
            return try TPM(tcti: tcti).unseal(secret, authorization: authorization)
        }
    }

    /// Seals `secret` to this TPM alone; see ``TPM/seal(_:)``.
    public func sealToMachine(_ secret: Data) throws -> Data {
        try mapped { try TPM(tcti: tcti).seal(secret).serialized }
    }

    /// Unseals what ``sealToMachine(_:)`` sealed; see ``TPM/unseal(_:)``.
    public func unsealFromMachine(_ sealed: Data) throws -> Data {
        try mapped { try TPM(tcti: tcti).unseal(TPMBlob(serialized: sealed)) }
    }

    /// The PCRs a boot-state seal is bound to: PCR 7, Secure Boot's state and the keys it trusts
    /// (it changes when Secure Boot is turned off or its keys change, not at every kernel update).
    public static let bootStatePCRs = [7]

    /// Seals `secret` to PCR 7's current value; see ``TPM/seal(_:toPCRs:)``.
    public func sealToBootState(_ secret: Data) throws -> Data {
        try mapped { try TPM(tcti: tcti).seal(secret, toPCRs: Self.bootStatePCRs).serialized }
    }

    /// Unseals what ``sealToBootState(_:)`` sealed; see ``TPM/unseal(_:fromPCRs:)``.
    public func unsealFromBootState(_ sealed: Data) throws -> Data {
        try mapped {
            try TPM(tcti: tcti).unseal(TPMBlob(serialized: sealed), fromPCRs: Self.bootStatePCRs)
        }
    }

    /// Runs `body`, turning a ``TPMError`` into the ``KeychainModel/KeychainError`` a user acts on.
    private func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as TPMError {
            throw KeychainError(error, tcti: tcti)
        }
    }
}

extension KeychainError {
    /// What a TPM failure means for a keychain sealed to it.
    init(_ error: TPMError, tcti: String) {
        switch error.kind {
        case .authorizationFailed:
            self.init(.authFailed, "the password is not correct (counted by the TPM)", underlying: error)
        case .lockedOut:
            self.init(
                .authFailed,
                "the TPM refuses passwords for now, after too many wrong ones (its dictionary-attack "
                    + "lockout); try again later", underlying: error, isSetupProblem: true)
        case .notThisTPM:
            self.init(
                .authFailed,
                "the keychain is sealed to another TPM (another machine, or this TPM was cleared): "
                    + "open it with its recovery key (docs/login.md)", underlying: error, isSetupProblem: true)
            reason = .sealedToAnotherTPM
        case .unavailable:
            self.init(
                .notAvailable, "the keychain is sealed to this machine's TPM, and no TPM answers at \(tcti)",
                underlying: error, isSetupProblem: true)
        case .policyFailed:
            self.init(
                .authFailed,
                "this machine's boot state changed since unlocking without a password was turned on: "
                    + "unlock with the password (docs/login.md)", underlying: error, isSetupProblem: true)
            reason = .bootStateChanged
        case .malformed:
            self.init(.decode, "the keychain's TPM-sealed secret is malformed", underlying: error)
        case .failed:
            self.init(.internalComponent, "the TPM failed: \(error)", underlying: error)
        }
    }
}
