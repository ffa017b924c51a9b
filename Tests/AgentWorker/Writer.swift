import Foundation
import KeychainClient
import KeychainCore

/// `write <socket> <keychain> <count>`: adds `count` items to the agent's keychain one by one
/// on one connection, printing `ok N` after the agent acknowledged item N, and `stop N` at the
/// first failure (the agent was killed): what a test compares with the keychain afterwards.
func runWriter(socket: String, keychain path: String, count: Int) -> Never {
    guard let connection = try? AgentConnection(socketPath: socket) else {
        say("no agent")
        exit(1)
    }
    let keychain = connection.keychain(at: path)
    for index in 0..<count {
        let item = Item(
            class: .genericPassword, attributes: [.account: .string("item-\(index)"), .service: .string("crash")],
            data: Data("secret-\(index)".utf8))
        do {
            _ = try keychain.add(item)
        } catch {
            say("stop \(index)")
            exit(0)
        }
        say("ok \(index)")
    }
    say("done")
    exit(0)
}
