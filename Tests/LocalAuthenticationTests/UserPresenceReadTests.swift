import Foundation
import KeychainTestSupport
import Testing

/// An app stores a password whose access control asks for user presence
/// (`SecAccessControlCreateWithFlags(…, .userPresence, …)`), then reads it with
/// `SecItemCopyMatching`: the person is asked through the real polkit, by the keychain's polkit
/// agent on the app's terminal, whether the keychain is in the app's process or in keychaind (which the app starts,
/// as a user's first app does). In ``PolkitTests``, whose tests run one at a time: each gives the
/// one test account a password of its own.
extension PolkitTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case inProcess, keychaind
        var testDescription: String { rawValue }

        func environment(_ polkit: PolkitFixture) -> [String: String] {
            switch self {
            case .inProcess: ["KEYCHAIN_AGENT": "off"]
            case .keychaind:
                [
                    "KEYCHAIN_AGENT": "required", "XDG_RUNTIME_DIR": polkit.home + "/run",
                    "KEYCHAIN_AGENT_SOCK": polkit.home + "/run/keychain.sock",
                ]
            }
        }
    }

    /// A polkit fixture whose account has a new password and, through `backend`, a password
    /// item `vault` that asks for user presence (stored by the app from a file, then removed).
    func storedVault(_ backend: Backend) throws -> (PolkitFixture, password: String, secret: String) {
        let polkit = try PolkitFixture()
        let password = try polkit.newPassword()
        let secret = "presence-" + UUID().uuidString.prefix(12)
        let file = try polkit.accountFile("secret", secret)
        let stored = try polkit.runAsUser(
            polkit.worker, ["store", "vault", file], environment: backend.environment(polkit))
        try #require(stored.output == "stored\n", "\(stored)")
        try FileManager.default.removeItem(atPath: file)
        return (polkit, password, secret)
    }

    @Test(
        "the right password reads the secret; three wrong ones are errSecAuthFailed, Ctrl-D errSecUserCanceled; no terminal, Fail or a context that may not ask is errSecInteractionNotAllowed without asking; Skip leaves it out",
        arguments: Backend.allCases)
    func readAsksThePerson(backend: Backend) throws {
        let (polkit, password, secret) = try storedVault(backend)
        let environment = backend.environment(polkit)

        let right = try polkit.onTerminal(
            ["read", "vault"], steps: [("Password:", password)], environment: environment)
        #expect(right.output.contains("Authenticating as: \(PolkitFixture.user)"), "\(right)")
        #expect(right.output.contains("secret \(secret)\r\n"), "\(right)")
        #expect(!right.output.contains(password), "\(right)")

        let wrong = try polkit.onTerminal(
            ["read", "vault"], steps: PolkitFixture.wrongThreeTimes, environment: environment)
        #expect(wrong.output.contains("error -25293\r\n") && !wrong.output.contains(secret), "\(wrong)")
        // Ctrl-D cancels: errSecUserCanceled.
        let cancelled = try polkit.onTerminal(
            ["read", "vault"], steps: [("Password:", "\u{4}")], environment: environment)
        #expect(cancelled.output.contains("error -128\r\n") && !cancelled.output.contains(secret), "\(cancelled)")

        // Nobody to ask with: at once, never a hang.
        let alone = try polkit.runAsUser(polkit.worker, ["read", "vault"], environment: environment)
        #expect(alone.output == "error -25308\n", "\(alone)")
        for mode in ["fail", "not-interactive"] {
            let barred = try polkit.onTerminal(["read", "vault", mode], steps: [], environment: environment)
            #expect(
                barred.output.contains("error -25308\r\n") && !barred.output.contains("Password:"), "\(mode): \(barred)"
            )
        }
        let skipped = try polkit.onTerminal(["read", "vault", "skip"], steps: [], environment: environment)
        #expect(skipped.output.contains("error -25300\r\n") && !skipped.output.contains("Password:"), "\(skipped)")

        // Changing the item asks as reading it does; with nobody to ask, it is refused.
        let relabelAlone = try polkit.runAsUser(polkit.worker, ["relabel", "vault"], environment: environment)
        #expect(relabelAlone.output == "error -25308\n", "\(relabelAlone)")
        let relabel = try polkit.onTerminal(
            ["relabel", "vault"], steps: [("Password:", password)], environment: environment)
        #expect(relabel.output.contains("relabelled\r\n"), "\(relabel)")

        // The security tool asks on its terminal too, as macOS's has its dialog ask.
        let tool = try polkit.onTerminal(
            ["find-generic-password", "-s", "vault", "-w"], steps: [("Password:", password)], environment: environment,
            program: polkit.securityTool)
        #expect(tool.output.contains("\(secret)\r\n"), "\(tool)")
        let toolAlone = try polkit.runAsUser(
            polkit.securityTool, ["find-generic-password", "-s", "vault", "-w"], environment: environment)
        #expect(toolAlone.status != 0 && !toolAlone.output.contains(secret), "\(toolAlone)")

        // keychaind's access log names each secret it gave out, the program (as the kernel names
        // it) and what allowed it; without keychaind, nothing is logged, and the tool says so.
        let log = try polkit.runAsUser(polkit.securityTool, ["access-log"], environment: environment)
        #expect(!log.output.contains(secret), "\(log)")
        switch backend {
        case .inProcess:
            #expect(log.status == 1 && log.output.isEmpty && log.errors.contains("no keychaind serves you"), "\(log)")
        case .keychaind:
            let reads = log.output.split(separator: "\n").filter {
                $0.contains(" read genp ") && $0.contains("(service \"vault\", account \"owner\") by pid ")
                    && $0.contains(", allowed by access group ") && $0.hasSuffix(" and the owner's authentication")
            }
            #expect(reads.count == 2, "the app's read and the tool's: \(log)")
            #expect(reads.first?.contains("(\(polkit.worker))") == true, "\(log)")
            #expect(reads.last?.contains("(\(polkit.securityTool))") == true, "\(log)")
        }
    }

    @Test(
        "an evaluated LAContext given as kSecUseAuthenticationContext spares the next reads the question; a read without it asks again",
        arguments: Backend.allCases)
    func evaluatedContextCoversReads(backend: Backend) throws {
        let (polkit, password, secret) = try storedVault(backend)
        let environment = backend.environment(polkit)

        let run = try polkit.onTerminal(
            ["evaluate-and-read", "vault", "3"], steps: [("Password:", password), ("Password:", password)],
            environment: environment)
        let lines = run.output.components(separatedBy: "\r\n")
        let asked = run.output.components(separatedBy: "Password:").count - 1
        #expect(asked == 2, "one question for the evaluation, one for the read without the context: \(run)")
        #expect(lines.filter { $0.hasSuffix("secret \(secret)") }.count == 4, "\(run)")
        #expect(lines.contains { $0.hasSuffix("success") }, "\(run)")
        // The question for the read without the context comes after it was announced.
        let announced = try #require(run.output.range(of: "without the context"))
        #expect(run.output[announced.upperBound...].contains("Password:"), "\(run)")
    }

    @Test(
        "a Secure Enclave key made with .privateKeyUsage | .userPresence is found unasked; each signature asks for the password; a wrong one is errSecAuthFailed, nobody to ask errSecInteractionNotAllowed",
        arguments: Backend.allCases)
    func secureEnclaveKeyAsks(backend: Backend) throws {
        let polkit = try PolkitFixture()
        let password = try polkit.newPassword()
        let environment = backend.environment(polkit)
        let created = try polkit.runAsUser(polkit.worker, ["key-create", "signing", "1"], environment: environment)
        try #require(created.output == "created\n", "\(created)")
        let signed = try polkit.onTerminal(
            ["key-sign", "signing"], steps: [("Password:", password)], environment: environment)
        #expect(signed.output.contains("found\r\n") && signed.output.contains("signed\r\n"), "\(signed)")
        #expect(signed.output.components(separatedBy: "found").last?.contains("Password:") == true, "\(signed)")
        if backend == .keychaind {
            let log = try polkit.runAsUser(polkit.securityTool, ["access-log"], environment: environment)
            #expect(log.output.contains("used keys") && log.output.contains("the owner's authentication"), "\(log)")
        }
        let wrong = try polkit.onTerminal(
            ["key-sign", "signing"], steps: PolkitFixture.wrongThreeTimes, environment: environment)
        #expect(wrong.output.contains("found\r\n") && wrong.output.contains("error -25293\r\n"), "\(wrong)")
        let alone = try polkit.runAsUser(polkit.worker, ["key-sign", "signing"], environment: environment)
        #expect(alone.output == "found\nerror -25308\n", "\(alone)")
    }

    @Test(
        "Apple's sample code, unchanged: its login asks once and logs in; its keychain item asks when read, and gives the credentials back",
        arguments: Backend.allCases)
    func appleSamples(backend: Backend) throws {
        let polkit = try PolkitFixture()
        let password = try polkit.newPassword()
        let environment = backend.environment(polkit)
        let login = try polkit.onTerminal(
            ["apple-sample", "login"], steps: [("Password:", password)], environment: environment)
        #expect(login.output.contains("logged in\r\n"), "\(login)")

        let secret = "sample-" + UUID().uuidString.prefix(12)
        let file = try polkit.accountFile("secret", secret)
        let added = try polkit.runAsUser(
            polkit.worker, ["apple-sample", "add", "www.example.com", "appleseed", file], environment: environment)
        try #require(added.output == "added\n", "\(added)")
        let read = try polkit.onTerminal(
            ["apple-sample", "read", "www.example.com"], steps: [("Password:", password)], environment: environment)
        #expect(read.output.contains("credentials appleseed \(secret)\r\n"), "\(read)")
        let wrong = try polkit.onTerminal(
            ["apple-sample", "read", "www.example.com"], steps: PolkitFixture.wrongThreeTimes, environment: environment)
        #expect(wrong.output.contains("error unhandledError(status: -25293)"), "\(wrong)")
    }
}
