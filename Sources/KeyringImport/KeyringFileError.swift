import Foundation

/// Why a keyring file on disk could not be read. Its texts name the file's kind and what is
/// wrong with it, never a secret or a password.
public enum KeyringFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file is not of the kind it was read as (or is a version of it this reader does not know).
    case unrecognized(String)
    /// The file is of the right kind but damaged: truncated, or a field that cannot be what it says.
    case damaged(String)
    /// The password does not open the file, or the encrypted part was altered (the two cannot be
    /// told apart: the file's check covers the decrypted contents only).
    case wrongPassword

    public var description: String {
        switch self {
        case .unrecognized(let what): "not a keyring file this can read: \(what)"
        case .damaged(let what): "the keyring file is damaged: \(what)"
        case .wrongPassword: "the password does not open the keyring file (or its encrypted part was altered)"
        }
    }
}
