import KeychainCore

/// Where the session agent listens, and whether a process uses it: what the agent and its
/// clients must agree on before they exchange a message.
///
/// The socket is `$KEYCHAIN_AGENT_SOCK` when set, else `$XDG_RUNTIME_DIR/keychain/agent.sock`
/// (where systemd's `keychaind.socket` puts it), else
/// `$HOME/.local/state/keychain/s.<host hash>/agent.sock` (as gpg-agent does without a runtime
/// directory: one agent per user and host, even on a shared home directory).
public enum AgentEndpoint {
    /// The variable that names the socket explicitly.
    public static let socketVariable = "KEYCHAIN_AGENT_SOCK"
    /// The variable that chooses the mode (see ``Mode``).
    public static let modeVariable = "KEYCHAIN_AGENT"
    /// The name of keychaind's SSH agent socket, beside its own socket (docs/ssh-agent.md).
    public static let sshSocketName = "ssh-agent.sock"
    /// The variable that names the `keychaind` executable a client starts when none is running.
    public static let programVariable = "KEYCHAIN_AGENT_PROGRAM"

    /// Whether a process keeps its keychains through the agent.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// The agent: the one that answers, or one started on first need (by the `security`
        /// tool and the libraries alike); when none can be started, the keychain is opened in
        /// this process. The default.
        case auto
        /// Never the agent: every keychain is opened in this process, with its lock state.
        case off
        /// Always the agent, started on first need; an error when it cannot be reached.
        case required

        /// The mode `environment` asks for: `KEYCHAIN_AGENT` = `auto`, `off` (also `0`, `no`) or
        /// `required` (also `1`, `on`, `yes`); unset or empty is `auto`.
        /// - Throws: ``KeychainModel/KeychainError`` `.parameter` for another value, naming the
        ///   accepted ones.
        public init(environment: [String: String]) throws {
            switch environment[AgentEndpoint.modeVariable]?.lowercased() {
            case nil, "", "auto": self = .auto
            case "off", "0", "no": self = .off
            case "required", "1", "on", "yes": self = .required
            case let other?:
                throw KeychainError(
                    .parameter,
                    "\(AgentEndpoint.modeVariable)=\(other) is not a mode; fix: use auto, off or required",
                    isSetupProblem: true)
            }
        }
    }

    /// The socket path for `environment` on the host named `hostName`.
    /// - Throws: ``KeychainModel/KeychainError`` `.parameter` when `KEYCHAIN_AGENT_SOCK` is not
    ///   absolute, or when neither `XDG_RUNTIME_DIR` nor `HOME` gives a place.
    public static func socketPath(environment: [String: String], hostName: String) throws -> String {
        if let path = environment[socketVariable], !path.isEmpty {
            guard path.hasPrefix("/") else {
                throw KeychainError(
                    .parameter, "\(socketVariable)=\(path) is not an absolute path; fix: give a full path",
                    isSetupProblem: true)
            }
            return path
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/keychain/agent.sock"
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw KeychainError(
                .parameter, "neither XDG_RUNTIME_DIR nor HOME is set; fix: set XDG_RUNTIME_DIR or \(socketVariable)",
                isSetupProblem: true)
        }
        return "\(home)/.local/state/keychain/s.\(hostHash(hostName))/agent.sock"
    }

    /// 16 hex digits of FNV-1a over the host name: a stable directory name per host that says
    /// nothing about the host.
    public static func hostHash(_ hostName: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in hostName.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
