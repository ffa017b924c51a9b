import Foundation
import KeychainAgentProtocol
import KeychainModel

extension AgentKeychain: KeychainRecovery {
    /// Makes a new recovery key in the agent (`MakeRecoveryKey`) and returns its text.
    /// - Throws: The agent's ``KeychainModel/KeychainError``.
    public func makeRecoveryKey() throws -> String {
        let reply = try connection.call(AgentInterface.makeRecoveryKey, .init(keychain: keychain))
        return String(decoding: reply.key, as: UTF8.self)
    }
}

extension AgentKeychain: KeychainBootStateUnlock {
    /// Turns unlocking without a password on or off in the agent (`SetUnlocksWithBootState`).
    /// - Throws: The agent's ``KeychainModel/KeychainError``.
    public func setUnlocksWithBootState(_ enabled: Bool, password: Data?) throws {
        _ = try connection.call(
            AgentInterface.setUnlocksWithBootState, .init(keychain: keychain, enabled: enabled, password: password))
    }
}
