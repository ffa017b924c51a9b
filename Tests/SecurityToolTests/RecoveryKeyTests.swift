import Foundation
import Testing

/// `security login-keychain --recovery-key`: a key that opens the login keychain wherever its
/// password is asked for (docs/login.md).
@Suite struct RecoveryKeyTests {
    /// The key in `login-keychain --recovery-key`'s output: 26 characters in groups of four.
    static func key(in output: String) -> String? {
        output.split(whereSeparator: \.isWhitespace).map(String.init).first {
            $0.split(separator: "-").count == 7 && $0.count == 32
        }
    }

    @Test("the recovery key unlocks the login keychain and sets a new password; the old one then opens nothing")
    func recoveryKeyUnlocksAndResets() throws {
        let sandbox = try Sandbox()
        let create = try sandbox.run(["create-keychain", "-p", "login pw", "login.keychain"])
        #expect(create.status == 0, "\(create)")
        let add = try sandbox.run(
            ["add-generic-password", "-a", "me", "-s", "mail", "-w", "hunter2", "login.keychain"],
            environment: ["KEYCHAIN_PASSWORD": "login pw"])
        #expect(add.status == 0, "\(add)")
        try sandbox.lock("login.keychain")
        // Locked: the password is asked for first (here on standard input).
        let made = try sandbox.run(["login-keychain", "--recovery-key"], input: "login pw\n")
        #expect(made.status == 0, "\(made)")
        let recovery = try #require(Self.key(in: made.out), "\(made)")
        #expect(made.out.contains("shown only this once"))
        try sandbox.lock("login.keychain")
        let unlocked = try sandbox.run(["unlock-keychain", "-p", recovery, "login.keychain"])
        #expect(unlocked.status == 0, "\(unlocked)")
        // The password forgotten: the recovery key stands in for it.
        let reset = try sandbox.run(["set-keychain-password", "-o", recovery, "-p", "new pw", "login.keychain"])
        #expect(reset.status == 0, "\(reset)")
        try sandbox.lock("login.keychain")
        #expect(try sandbox.run(["unlock-keychain", "-p", "login pw", "login.keychain"]).status == 51)
        let found = try sandbox.run(
            ["find-generic-password", "-a", "me", "-s", "mail", "-w", "login.keychain"],
            environment: ["KEYCHAIN_PASSWORD": "new pw"])
        #expect(found.status == 0 && found.out == "hunter2\n", "\(found)")
        // A new recovery key replaces the last.
        let again = try sandbox.run(["login-keychain", "--recovery-key"], input: "new pw\n")
        let second = try #require(Self.key(in: again.out), "\(again)")
        #expect(second != recovery)
        try sandbox.lock("login.keychain")
        #expect(try sandbox.run(["unlock-keychain", "-p", recovery, "login.keychain"]).status == 51)
        #expect(try sandbox.run(["unlock-keychain", "-p", second, "login.keychain"]).status == 0)
    }

    @Test("a login keychain without a password has no recovery key, and says why")
    func passwordlessLoginKeychainNeedsNone() throws {
        let sandbox = try Sandbox()
        let made = try sandbox.run(["login-keychain", "--recovery-key"])
        #expect(made.status == 1, "\(made)")
        #expect(made.err.contains("has no password"), "\(made)")
        #expect(Self.key(in: made.out) == nil)
    }

    @Test("a wrong password when asked makes no key")
    func wrongPasswordMakesNoKey() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "login pw", "login.keychain"]).status == 0)
        try sandbox.lock("login.keychain")
        let made = try sandbox.run(["login-keychain", "--recovery-key"], input: "wrong\n")
        #expect(made.status == 51, "\(made)")
        #expect(Self.key(in: made.out) == nil)
    }
}
