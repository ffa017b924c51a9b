import ArgumentParser
import Foundation
import KeychainModel
import KeychainTPM

/// `security secure-enclave` (Linux only): where this machine's Secure Enclave keys are made and
/// used, by the same choice keychaind makes (``KeychainTPM/MachineTPM``).
struct SecureEnclaveCommand: ToolCommand {
    static let name = "secure-enclave"
    static let configuration = CommandConfiguration(
        commandName: Self.name,
        _superCommandName: "security",
        abstract: "Show where Secure Enclave keys are made and used on this machine (Linux only).",
        usage: "security secure-enclave",
        discussion: HelpText.wrapped(
            """
            Keys made with kSecAttrTokenIDSecureEnclave live in this machine's TPM 2.0 when it has \
            one you may use (/dev/tpmrm0, or the TPM named by the "tpm" preference): the private key \
            is made inside the TPM, never leaves it, and the keychain keeps only a blob that this TPM \
            alone can use. Without a TPM they are held in keychaind's memory, never given to an \
            application, but not by hardware. Exits with status 1 when the TPM does not answer.
            """))

    func execute(in session: Session) throws -> Int32 {
        let preferences: KeychainPreferences
        let tcti: String?
        do {
            preferences = try session.preferences()
            tcti = try MachineTPM.tcti(by: preferences)
        } catch let error as KeychainError {
            throw CommandFailure.failure(error.message)
        }
        guard let tcti else {
            let reason =
                preferences.tpm == "none"
                ? "the \"tpm\" preference is none" : "this machine has no /dev/tpmrm0 that you may use"
            Console.out("Secure Enclave keys: in keychaind's memory, not in hardware (\(reason)).\n")
            return 0
        }
        do {
            let manufacturer = try TPM(tcti: tcti).manufacturer()
            Console.out(
                "Secure Enclave keys: in the TPM 2.0 at \(tcti) (manufacturer \(manufacturer)); "
                    + "their private keys never leave it, and they work on this machine only.\n")
            return 0
        } catch {
            Console.err("Secure Enclave keys: the TPM 2.0 at \(tcti) does not answer (\(error)).\n")
            return 1
        }
    }
}
