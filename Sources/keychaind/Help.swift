import KeychainLibc

/// `keychaind --help`: what the agent is, how it is started and what it reads; the source of its
/// manual page (`scripts/make-deb` runs help2man on it).
let helpText = """
    Usage: keychaind [--socket PATH] [--secret-service [--replace]]
           keychaind --pam login|password|unlock

    The session agent of Keychain for Linux. One runs per user: it holds the unlocked
    keychains and answers every process of the user over a private socket, so that a
    keychain unlocked once is unlocked for later processes until it is locked, times
    out, or the agent ends. It is started by systemd's keychaind.socket, or by the
    first security command or library call that needs it.

    Options:
      --socket PATH       Listen at PATH instead of $XDG_RUNTIME_DIR/keychain/agent.sock.
      --secret-service    Also own org.freedesktop.secrets on the session bus (the
                          Secret Service of secret-tool, libsecret and python keyring).
      --replace           With --secret-service, take the name from a provider that
                          allows it.
      --pam MODE          Run by pam_keychain.so as the user, with the login password
                          on standard input: login (create, convert or unlock the login
                          keychain), password (re-wrap it at a password change), unlock
                          (a login without a password; unlock on the boot state).
      -h, --help          Show this text.

    Files:
      ~/.local/share/keychains/          keychains (XDG_DATA_HOME)
      ~/.config/keychain/device-key      the device key, sealed to the TPM where there is one
      ~/.config/keychain/preferences.json  default keychain, search list, TPM (XDG_CONFIG_HOME)
      $XDG_RUNTIME_DIR/keychain/         the socket and its lock

    Environment:
      KEYCHAIN_AGENT_SOCK     the socket path (as --socket)
      KEYCHAIND_DEBUG=1       lines about sleep and session locking on standard error
      KEYCHAIN_SYNC=off       do not sync keychains set up for sync

    It exits on SIGTERM or SIGINT, and by itself when its socket is removed or
    replaced. The PAM module: docs/login.md; the agent: docs/agent.md.

    """

/// Prints ``helpText`` and exits 0 when the arguments ask for help.
func answerHelpIfAsked(_ arguments: [String]) {
    guard arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) else { return }
    _ = helpText.withCString { write(1, $0, strlen($0)) }
    exit(0)
}
