import KeychainAgent
import KeychainCore
import Testing

@Suite("Access-group policy (SecItemServer rules)")
struct AccessGroupPolicyTests {
    static let manifestCaller = CallerIdentity(
        tier: .manifestBound(appID: "com.example.mail", executable: "/usr/bin/example-mail"),
        accessGroups: AccessGroups(["com.example.mail", "com.example.shared"]), pid: 42)
    static let wildcardCaller = CallerIdentity(tier: .unidentified, accessGroups: .standard, pid: 43)
    static let emptyCaller = CallerIdentity(tier: .unidentified, accessGroups: AccessGroups([]), pid: 44)
    static let starOnlyCaller = CallerIdentity(tier: .unidentified, accessGroups: AccessGroups(["*"]), pid: 45)

    struct WriteCase: Sendable, CustomTestStringConvertible {
        var caller: CallerIdentity
        var requested: String?
        var expected: String?  // nil: -34018
        var testDescription: String { "\(caller.summary) asks \(requested ?? "nothing") → \(expected ?? "-34018")" }
    }

    @Test(
        "writes: explicit group must be in the set, none → first group, empty set → -34018",
        arguments: [
            WriteCase(caller: manifestCaller, requested: "com.example.shared", expected: "com.example.shared"),
            WriteCase(caller: manifestCaller, requested: "com.example.mail", expected: "com.example.mail"),
            WriteCase(caller: manifestCaller, requested: nil, expected: "com.example.mail"),
            WriteCase(caller: manifestCaller, requested: "com.example.bank", expected: nil),
            WriteCase(caller: manifestCaller, requested: "*", expected: nil),
            WriteCase(caller: wildcardCaller, requested: nil, expected: "default"),
            WriteCase(caller: wildcardCaller, requested: "anything", expected: "anything"),
            WriteCase(caller: wildcardCaller, requested: "com.apple.token", expected: nil),
            WriteCase(caller: emptyCaller, requested: nil, expected: nil),
            WriteCase(caller: starOnlyCaller, requested: "named", expected: "named"),
            WriteCase(caller: starOnlyCaller, requested: nil, expected: nil),
            WriteCase(caller: emptyCaller, requested: "default", expected: nil),
        ])
    func writes(_ row: WriteCase) throws {
        if let expected = row.expected {
            #expect(try AccessGroupPolicy.resolve(requested: row.requested, for: row.caller) == expected)
        } else {
            #expect {
                try AccessGroupPolicy.resolve(requested: row.requested, for: row.caller)
            } throws: { error in
                let agentError = error as? AgentError
                return agentError?.code == .missingEntitlement && agentError?.osStatus == -34018
                    && agentError?.keychainError.code == .missingEntitlement
            }
        }
    }

    struct QueryCase: Sendable, CustomTestStringConvertible {
        var caller: CallerIdentity
        var requested: String?
        var expected: AccessGroupPolicy.QueryScope?  // nil: -34018
        var testDescription: String { "\(caller.summary) queries \(requested ?? "all its groups")" }
    }

    @Test(
        "queries are limited to the caller's groups",
        arguments: [
            QueryCase(
                caller: manifestCaller, requested: nil, expected: .groups(["com.example.mail", "com.example.shared"])),
            QueryCase(
                caller: manifestCaller, requested: "com.example.shared", expected: .groups(["com.example.shared"])),
            QueryCase(caller: manifestCaller, requested: "com.example.bank", expected: nil),
            QueryCase(caller: wildcardCaller, requested: nil, expected: .all),
            QueryCase(caller: wildcardCaller, requested: "x", expected: .groups(["x"])),
            QueryCase(caller: emptyCaller, requested: nil, expected: nil),
        ])
    func queries(_ row: QueryCase) throws {
        if let expected = row.expected {
            let scope = try AccessGroupPolicy.queryScope(requested: row.requested, for: row.caller)
            #expect(scope == expected)
            #expect(!AccessGroupPolicy.QueryScope.groups(["a"]).contains("b"))
        } else {
            #expect(throws: AgentError.self) {
                try AccessGroupPolicy.queryScope(requested: row.requested, for: row.caller)
            }
        }
    }
}
