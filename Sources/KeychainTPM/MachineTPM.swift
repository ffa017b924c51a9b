import Foundation
import KeychainModel

/// Which TPM this machine's keychains use, decided in one place for the login keychain's sealing
/// (``TPMSealer``) and for Secure Enclave keys (``TPMSecureEnclave``).
public enum MachineTPM {
    /// The TCTI configuration of the TPM the user's preferences name
    /// (``KeychainModel/KeychainPreferences/tpm``), none for `none`, else `device:/dev/tpmrm0`
    /// when this machine has one and this user may use it (Debian gives it to the group `tss`).
    /// - Throws: `.parameter` for a preference that names no TPM (``checked(_:)``).
    public static func tcti(by preferences: KeychainPreferences) throws -> String? {
        switch preferences.tpm {
        case "none": return nil
        case let tcti?: return try checked(tcti)
        case nil: return access("/dev/tpmrm0", R_OK | W_OK) == 0 ? "device:/dev/tpmrm0" : nil
        }
    }

    /// `tcti` when it names where a TPM is: only the `device`, `swtpm`, `mssim` and `tabrmd`
    /// TCTIs, never a program to run (`cmd`).
    /// - Throws: `.parameter` for any other.
    public static func checked(_ tcti: String) throws -> String {
        let kind = tcti.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        guard ["device", "swtpm", "mssim", "tabrmd"].contains(kind) else {
            throw KeychainError(.parameter, "not a TPM's TCTI configuration: \(tcti)", isSetupProblem: true)
        }
        return tcti
    }
}
