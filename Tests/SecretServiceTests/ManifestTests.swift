import Foundation
import KeychainLibc
import KeychainTestSupport
import SecretService
import Testing

/// The Secret Service enforces access groups from who the D-Bus caller is: a program bound by
/// a root-owned manifest (here a copy of `secret-tool` named in `apps.d/mail.toml`) keeps its
/// items in its own group, and an unidentified client (the system's `secret-tool`, `security`)
/// with the user's default groups neither finds nor reads them.
@Suite("Secret Service access groups from manifests")
struct ManifestTests {
    @Test("A manifest-bound client's items are invisible to an unidentified client, and the reverse")
    func manifestBoundClientIsFenced() throws {
        var template = Array("/tmp/keychain-manifest-tests.XXXXXX".utf8CString)
        let made = try #require(mkdtemp(&template))
        let root = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: root) }
        for directory in ["", "/bin", "/apps.d"] {
            if !directory.isEmpty { #expect(mkdir(root + directory, 0o755) == 0) }
            #expect(chmod(root + directory, 0o755) == 0)
        }
        // The manifest binds a copy of secret-tool: the caller's executable, as /proc/PID/exe shows it.
        let mailTool = root + "/bin/secret-tool-mail"
        try ExecutableFile.copy(try requireTool("/usr/bin/secret-tool"), to: mailTool)
        let manifest = """
            app-id = "com.example.mail"
            access-groups = ["com.example.mail"]

            [[executable]]
            path = "\(mailTool)"
            """
        try manifest.write(toFile: root + "/apps.d/mail.toml", atomically: false, encoding: .utf8)
        #expect(chmod(root + "/apps.d/mail.toml", 0o644) == 0)
        #expect(getuid() == 0, "manifests count only when root owns them: the test writes them as root")

        let bus = try PrivateSessionBus.activatingKeychaind(environment: [
            "KEYCHAIN_APP_MANIFESTS": root + "/apps.d", "KEYCHAIN_ACCESS_GROUPS": "default",
        ])
        defer { bus.stop() }
        let secretTool = try requireTool("/usr/bin/secret-tool")
        func run(_ tool: String, _ arguments: [String], stdin: String? = nil) throws -> ToolResult {
            try runTool(tool, arguments, stdin: stdin.map { Data($0.utf8) }, environment: bus.environment)
        }

        // The bound program stores and finds its item.
        #expect(
            try run(mailTool, ["store", "--label=Mail", "service", "mail", "account", "a"], stdin: "mail-secret").status
                == 0)
        let own = try run(mailTool, ["lookup", "service", "mail", "account", "a"])
        #expect(own.status == 0 && own.out == "mail-secret", "\(own)")

        // An unidentified client sees nothing of it: not by lookup, not by listing.
        let lookup = try run(secretTool, ["lookup", "service", "mail", "account", "a"])
        #expect(lookup.status != 0 && lookup.stdout.isEmpty, "\(lookup)")
        let listed = try run(secretTool, ["search", "--all", "service", "mail"])
        #expect(!(listed.out + String(decoding: listed.stderr, as: UTF8.self)).contains("mail-secret"), "\(listed)")
        #expect(!listed.out.contains("label = Mail"), "\(listed.out)")
        let security = try run(
            try requireTool(productsDirectory + "/security"), ["find-generic-password", "-s", "mail", "-a", "a", "-w"])
        #expect(security.status != 0, "\(security)")

        // The reverse: the unidentified client's item is not the bound program's.
        #expect(
            try run(secretTool, ["store", "--label=Other", "service", "other", "account", "b"], stdin: "other-secret")
                .status == 0)
        #expect(try run(secretTool, ["lookup", "service", "other", "account", "b"]).out == "other-secret")
        let crossed = try run(mailTool, ["lookup", "service", "other", "account", "b"])
        #expect(crossed.status != 0 && crossed.stdout.isEmpty, "\(crossed)")
    }

    /// `KEYCHAIN_ACCESS_GROUPS=default`, as docs/agent.md recommends, narrows what the user's
    /// unidentified programs read; it must not take keychain management from the user's own tool
    /// (issue 50, item 6): create, settings, lock all, delete, and a `keychaind --secret-service`
    /// handing the Secret Service to the running agent.
    @Test("Under KEYCHAIN_ACCESS_GROUPS=default the user's security tool and keychaind still manage keychains")
    func recommendedGroupsLeaveTheUsersToolAnAdministrator() throws {
        let bus = try PrivateSessionBus.activatingKeychaind(environment: ["KEYCHAIN_ACCESS_GROUPS": "default"])
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        func run(_ arguments: [String], stdin: String? = nil) throws -> ToolResult {
            try runTool(security, arguments, stdin: stdin.map { Data($0.utf8) }, environment: bus.environment)
        }
        // The first command starts the agent with the recommended setting.
        let stored = try run(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "pw1"])
        #expect(stored.status == 0, "\(stored)")
        // The Secret Service is handed to the running agent by a keychaind of the user.
        let handOff = try runTool(
            try requireTool(productsDirectory + "/keychaind"), ["--secret-service"], environment: bus.environment)
        #expect(handOff.status == 0, "\(handOff)")
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let found = try runTool(
            secretTool, ["lookup", "service", "svc", "account", "acct"], environment: bus.environment)
        #expect(found.out == "pw1", "\(found)")
        let keychain = bus.home + "/build.keychain"
        for arguments in [
            ["create-keychain", "-p", "build-pw", keychain], ["set-keychain-settings", "-t", "600", keychain],
            ["lock-keychain", "-a"], ["unlock-keychain", "-p", "build-pw", keychain],
        ] {
            let result = try run(arguments)
            #expect(result.status == 0, "\(arguments.first ?? ""): \(result)")
        }
        let deleted = try run(["delete-keychain", keychain])
        #expect(deleted.status == 0, "\(deleted)")
        #expect(!FileManager.default.fileExists(atPath: keychain))
    }
}
