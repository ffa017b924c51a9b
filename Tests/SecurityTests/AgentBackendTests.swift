import Foundation
import KeychainClient
import KeychainCore
import KeychainTestSupport
import Security
import Testing

/// The `.agent` backend of these tests is the real thing: `SecItem*` under it reaches the
/// test process's `keychaind`, which keeps the items where any other client finds them.
@Suite("The agent backend")
struct AgentBackendTests {
    @Test("SecItemAdd under the agent backend stores the item in keychaind, where another connection finds it")
    func itemsLiveInTheAgent() throws {
        try withKeychain(.agent) { keychain in
            let served = try #require(keychain as? AgentKeychain)
            #expect(
                add([kSecClass: kSecClassGenericPassword, kSecAttrAccount: "via-agent", kSecValueData: Data("s".utf8)])
                    == errSecSuccess)
            let other = try AgentConnection(socketPath: try TestAgent.shared().socketPath)
            let found = try other.keychain(at: served.keychain).findFirst(
                ItemQuery(class: .genericPassword, attributes: [.account: .string("via-agent")]), includeData: true)
            #expect(found?.data == Data("s".utf8))
        }
    }

    @Test("the in-process backend never reaches the agent: its default keychain is an engine handle")
    func inProcessIsTheEngine() throws {
        try withKeychain(.memory) { keychain in
            #expect(keychain is KeychainDatabase)
            let current = try Keychains.current()
            #expect(current is KeychainDatabase)
        }
    }

    @Test("the test process runs with KEYCHAIN_AGENT=off: nothing reaches the user's own agent")
    func processIsInProcessByDefault() {
        #expect(testEnvironmentIsFixed)
    }
}
