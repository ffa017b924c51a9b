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
