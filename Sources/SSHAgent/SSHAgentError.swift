/// Why the SSH agent refused a request. Every refusal is answered with the protocol's
/// `SSH_AGENT_FAILURE`, which carries no reason; the reason goes to the agent's log, and never
/// names a key's secret.
public enum SSHAgentError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request or a key in it is not what the protocol says.
    case malformed(String)
    /// A key type, signature algorithm or constraint this agent does not serve.
    case unsupported(String)
    /// No identity the caller may use has that public key.
    case noSuchIdentity
    /// The keychain that holds the identities is locked.
    case locked
    /// The keychain refused (its message, which holds no secret).
    case keychain(String)
    /// `ssh-add -x` locked the agent (or it is locked already).
    case agentLocked
    /// `ssh-add -X` gave another passphrase than the lock's (or the agent is not locked).
    case wrongLockPassphrase

    /// What went wrong, in words (no secret).
    public var description: String {
        switch self {
        case .malformed(let reason): "malformed request: \(reason)"
        case .unsupported(let reason): reason
        case .noSuchIdentity: "no such identity"
        case .locked: "the keychain is locked"
        case .keychain(let message): "the keychain refused: \(message)"
        case .agentLocked: "the agent is locked (ssh-add -X unlocks it)"
        case .wrongLockPassphrase: "not the passphrase the agent was locked with"
        }
    }
}
