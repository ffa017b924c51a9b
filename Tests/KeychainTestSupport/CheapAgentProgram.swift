import Foundation
import KeychainLibc

/// A program to name in `KEYCHAIN_AGENT_PROGRAM` that starts `keychaind` with the test-only cheap
/// key derivation (`KEYCHAIN_UNSAFE_TEST_KDF=1`) in its own environment.
///
/// An agent started by a client never inherits that variable (nor any other that would decide
/// what it does for its other clients), so a test that wants cheap password keychains in the
/// agent a client starts configures the agent itself, as a user configures a systemd unit.
public enum CheapAgentProgram {
    /// Writes the program into `directory` (once) and returns its path.
    /// - Parameters:
    ///   - directory: An existing directory of the test's own.
    ///   - agent: The `keychaind` to start.
    public static func make(in directory: String, agent: String) throws -> String {
        let path = directory + "/keychaind-cheap-kdf"
        if access(path, X_OK) == 0 { return path }
        let quoted = "'" + agent.replacingOccurrences(of: "'", with: "'\\''") + "'"
        let script = "#!/bin/sh\nKEYCHAIN_UNSAFE_TEST_KDF=1 exec \(quoted) \"$@\"\n"
        try ExecutableFile.write(script, to: path)
        return path
    }
}
