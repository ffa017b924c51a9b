import Foundation
import KeychainClient
import KeychainLibc
import KeychainTestSupport
import Testing

/// `pam_keychain.so` in real PAM transactions: Linux-PAM through Debian's `libpam-wrapper` (a
/// private service directory) and `pamtester`, `pam_unix` checking the password of the
/// throw-away account `keychain-pam-test` that `.ci/run` makes (no shell, home
/// `/var/lib/keychain-pam-test`). Each test gives the account a random password of its own with
/// `chpasswd`, and the module hands it to the built `keychaind --pam`, as the account.
@Suite(.serialized) struct LoginPAMTests {
    static let userName = "keychain-pam-test"
    static let service = "keychain-login"

    /// The account, its files and its agent, reset for one test.
    final class Account {
        let uid: uid_t
        let gid: gid_t
        let home: String
        let password: String
        let stack: String
        var runtime: String { "/run/user/\(uid)" }
        var socket: String { runtime + "/keychain/agent.sock" }
        var loginKeychain: String { home + "/.local/share/keychains/login.keychain-db" }

        /// - Parameters:
        ///   - helper: The module's `helper=`.
        ///   - options: More arguments for the module, e.g. `timeout=1`.
        init(helper: String = LoginPAMTests.products + "/keychaind", options: String = "") throws {
            #expect(getuid() == 0, "PAM's password check (pam_unix) and becoming the account need root")
            guard let entry = getpwnam(LoginPAMTests.userName) else {
                throw Missing("the account \(LoginPAMTests.userName) is missing (bash .ci/run makes it)")
            }
            uid = entry.pointee.pw_uid
            gid = entry.pointee.pw_gid
            home = String(cString: entry.pointee.pw_dir)
            password = Account.randomPassword()
            stack = FileManager.default.temporaryDirectory.path + "/pam-\(UUID().uuidString)"
            stopAgent(at: "/run/user/\(uid)/keychain/agent.sock")
            for directory in [".local", ".config"] {
                try? FileManager.default.removeItem(atPath: home + "/" + directory)
            }
            try Account.makePrivateDirectory(runtime, uid: uid, gid: gid)
            try setPassword(password)
            try FileManager.default.createDirectory(atPath: stack, withIntermediateDirectories: true)
            let unix = try LoginPAMTests.require("/lib/x86_64-linux-gnu/security/pam_unix.so")
            let permit = try LoginPAMTests.require("/lib/x86_64-linux-gnu/security/pam_permit.so")
            let module = try LoginPAMTests.require(LoginPAMTests.products + "/libpam_keychain.so")
            // A loaded CI machine can take longer than the module's 20 s to start an agent and
            // derive a keychain's key: the login would go on with the keychain still locked.
            let options = options.contains("timeout=") ? options : "timeout=120 " + options
            // The lines docs/login.md gives, after the stack's own modules.
            let lines = """
                auth     required \(unix)
                auth     optional \(module) helper=\(helper) \(options)
                account  required \(unix)
                password required \(unix)
                password optional \(module) helper=\(helper) \(options)
                session  required \(permit)
                session  optional \(module) helper=\(helper) \(options)

                """
            try Data(lines.utf8).write(to: URL(fileURLWithPath: stack + "/" + LoginPAMTests.service))
        }

        deinit {
            stopAgent(at: socket)
            try? FileManager.default.removeItem(atPath: stack)
            // No password stays usable on the account.
            _ = try? LoginPAMTests.run("/usr/sbin/usermod", ["--lock", LoginPAMTests.userName])
        }

        func setPassword(_ password: String) throws {
            let set = try LoginPAMTests.run(
                "/usr/sbin/chpasswd", [], input: "\(LoginPAMTests.userName):\(password)\n")
            #expect(set.status == 0, "\(set)")
        }

        /// Runs PAM operations (`authenticate`, `open_session`, `chauthtok(…)`) with `input` as
        /// what the user types.
        func pam(_ operations: [String], input: [String]) throws -> Result {
            let wrapper = try LoginPAMTests.require("/usr/lib/x86_64-linux-gnu/libpam_wrapper.so")
            return try LoginPAMTests.run(
                try LoginPAMTests.require("/usr/bin/pamtester"),
                [LoginPAMTests.service, LoginPAMTests.userName] + operations,
                input: input.map { $0 + "\n" }.joined(),
                environment: ["LD_PRELOAD": wrapper, "PAM_WRAPPER": "1", "PAM_WRAPPER_SERVICE_DIR": stack])
        }

        /// Runs the built `security` as the account, with its home and runtime directory.
        func security(_ arguments: [String]) throws -> Result {
            try LoginPAMTests.run(
                "/usr/bin/setpriv",
                ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", LoginPAMTests.products + "/security"]
                    + arguments,
                environment: ["HOME": home, "XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin"], cleared: true)
        }

        /// Names `tpm` (`nil`: none) in the account's preferences, as a user or an administrator
        /// would (docs/login.md), and stops the account's agent so that the next one reads it.
        func useTPM(_ tpm: SoftwareTPM?) throws {
            let directory = home + "/.config/keychain"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for path in [home + "/.config", directory] { try Account.makePrivateDirectory(path, uid: uid, gid: gid) }
            let file = directory + "/preferences.json"
            let json = "{\"version\": 1, \"tpm\": \"\(tpm?.tcti ?? "none")\"}\n"
            try Data(json.utf8).write(to: URL(fileURLWithPath: file))
            guard chown(file, uid, gid) == 0, chmod(file, 0o600) == 0 else { throw Missing("cannot prepare \(file)") }
            stopAgent(at: socket)
        }

        /// `security login-keychain --recovery-key`'s key.
        func makeRecoveryKey() throws -> String {
            let made = try security(["login-keychain", "--recovery-key"])
            return try #require(
                made.out.split(whereSeparator: \.isWhitespace).map(String.init).first { $0.count == 32 }, "\(made)")
        }

        /// A TPM of its own that the account can reach.
        func softwareTPM() throws -> SoftwareTPM { try SoftwareTPM(owner: (uid, gid)) }

        static func randomPassword() -> String {
            "Pw-" + (0..<16).map { _ in String("abcdefghjkmnpqrstuvwxyz23456789".randomElement()!) }.joined()
        }

        static func makePrivateDirectory(_ path: String, uid: uid_t, gid: gid_t) throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            guard chown(path, uid, gid) == 0, chmod(path, 0o700) == 0 else { throw Missing("cannot prepare \(path)") }
        }
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String; init(_ text: String) { description = text }
    }

    struct Result: CustomStringConvertible {
        var status: Int32
        var out: String
        var err: String
        var description: String { "status \(status)\n--- stdout\n\(out)--- stderr\n\(err)---" }
    }

    /// The directory of the build products (`keychaind`, `security`, `libpam_keychain.so`).
    static var products: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
        for _ in 0..<4 where !FileManager.default.isExecutableFile(atPath: directory.path + "/keychaind") {
            directory = directory.deletingLastPathComponent()
        }
        return directory.path
    }

    static func require(_ path: String) throws -> String {
        guard FileManager.default.fileExists(atPath: path) else {
            throw Missing("\(path) is missing (bash .ci/run installs it)")
        }
        return path
    }

    /// Runs a program to its end, its output in files (a daemon it starts keeps no pipe open).
    static func run(
        _ path: String, _ arguments: [String], input: String = "", environment: [String: String] = [:],
        cleared: Bool = false
    ) throws -> Result {
        let scratch = FileManager.default.temporaryDirectory.path + "/pam-run-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for name in ["in", "out", "err"] {
            _ = FileManager.default.createFile(atPath: scratch + "/" + name, contents: nil)
        }
        try Data(input.utf8).write(to: URL(fileURLWithPath: scratch + "/in"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = (cleared ? [:] : ProcessInfo.processInfo.environment).merging(environment) { $1 }
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: scratch + "/in"))
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/err"))
        try process.run()
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        func text(_ name: String) -> String {
            String(decoding: FileManager.default.contents(atPath: scratch + "/" + name) ?? Data(), as: UTF8.self)
        }
        return Result(status: process.terminationStatus, out: text("out"), err: text("err"))
    }

    // MARK: Login

    @Test("the first login makes the login keychain a password keychain under the login password, unlocked")
    func firstLoginCreatesTheLoginKeychainUnlocked() throws {
        let account = try Account()
        let login = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(login.status == 0, "\(login)")
        #expect(!(login.out + login.err).contains("set-keychain-password"), "no note when all is well: \(login)")
        #expect((login.out + login.err).contains("security login-keychain --recovery-key"), "once: \(login)")
        #expect(FileManager.default.fileExists(atPath: account.loginKeychain))
        // Unlocked in the agent: a later process adds and reads without a password.
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let found = try account.security(["find-generic-password", "-s", "svc", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
        // Its password is the login password.
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        #expect(try account.security(["unlock-keychain", "-p", "wrong"]).status == 51)
        #expect(try account.security(["unlock-keychain", "-p", account.password]).status == 0)
    }

    @Test("a login unlocks the locked login keychain for every later process")
    func loginUnlocksTheLoginKeychain() throws {
        let account = try Account()
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        let again = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(again.status == 0, "\(again)")
        #expect(!(again.out + again.err).contains("recovery"), "the recovery key is suggested once: \(again)")
        let found = try account.security(["find-generic-password", "-s", "svc", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
    }

    @Test("a password-less login keychain is converted in place at the first login, its items kept")
    func firstLoginConvertsAPasswordlessLoginKeychain() throws {
        let account = try Account()
        // Today's login keychain: made password-less on first use, by the account's own tool.
        let add = try account.security(["add-generic-password", "-s", "old", "-a", "me", "-w", "kept"])
        #expect(add.status == 0, "\(add)")
        #expect(try account.security(["unlock-keychain", "-p", "anything"]).status == 0, "password-less")
        let converting = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(converting.status == 0, "\(converting)")
        #expect((converting.out + converting.err).contains("security login-keychain --recovery-key"), "\(converting)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        let locked = try account.security(["find-generic-password", "-s", "old", "-w"])
        #expect(locked.status == 36, "now locked: \(locked)")
        #expect(try account.security(["unlock-keychain", "-p", account.password]).status == 0)
        let found = try account.security(["find-generic-password", "-s", "old", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "kept\n", "\(found)")
    }

    @Test("a wrong password at login unlocks nothing, and the right one still does")
    func wrongPasswordAtLoginUnlocksNothing() throws {
        let account = try Account()
        let login = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(login.status == 0, "\(login)")
        let add = try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"])
        #expect(add.status == 0, "\(add)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        let wrong = try account.pam(["authenticate", "open_session"], input: ["not-" + account.password])
        #expect(wrong.status != 0, "\(wrong)")
        let locked = try account.security(["find-generic-password", "-s", "svc", "-w"])
        #expect(locked.status == 36, "\(locked)")
        let again = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(again.status == 0, "\(again)")
        let found = try account.security(["find-generic-password", "-s", "svc", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
    }

    @Test("a helper that cannot run never stops the login")
    func aMissingHelperNeverStopsTheLogin() throws {
        let account = try Account(helper: "/nonexistent/keychaind")
        let login = try account.pam(["authenticate", "open_session", "close_session"], input: [account.password])
        #expect(login.status == 0, "\(login)")
        #expect(!FileManager.default.fileExists(atPath: account.loginKeychain))
    }

    @Test("a helper that does not answer is killed at the module's timeout, and the login goes on")
    func aHangingHelperIsKilledAndTheLoginGoesOn() throws {
        // A helper the account can run that says it started, then never ends.
        let directory = FileManager.default.temporaryDirectory.path + "/pam-hang-\(UUID().uuidString)"
        let marker = "keychain-hang-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let helper = directory + "/keychaind"
        try ExecutableFile.write("#!/bin/bash\ntouch \"$HOME/\(marker)\"\nexec -a \(marker) sleep 300\n", to: helper)
        let account = try Account(helper: helper, options: "timeout=1")
        defer { try? FileManager.default.removeItem(atPath: account.home + "/" + marker) }

        let login = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(login.status == 0, "the login succeeds: \(login)")
        #expect(FileManager.default.fileExists(atPath: account.home + "/" + marker), "the helper ran")
        let running = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { pid in
            let arguments = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
            return String(decoding: arguments, as: UTF8.self).contains(marker)
        }
        #expect(running.isEmpty, "the helper was killed when the login went on: \(running)")
    }

    // MARK: Password changes

    @Test(
        "passwd with the old and new password re-wraps the login keychain (re-sealed, with a TPM): the new one opens it, the old does not",
        arguments: [false, true])
    func passwordChangeRewrapsTheLoginKeychain(sealed: Bool) throws {
        let account = try Account()
        let tpm = sealed ? try account.softwareTPM() : nil
        if let tpm { try account.useTPM(tpm) }
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let new = Account.randomPassword()
        // As a user changes their own password: pam_unix asks for the current one.
        let change = try account.pam(["chauthtok(PAM_CHANGE_EXPIRED_AUTHTOK)"], input: [account.password, new, new])
        #expect(change.status == 0, "\(change)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.security(["unlock-keychain", "-p", account.password]).status == 51)
        #expect(try account.security(["unlock-keychain", "-p", new]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).out == "s3cret\n")
        // And the next login, with the new password, unlocks it.
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.pam(["authenticate", "open_session"], input: [new]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).out == "s3cret\n")
        guard sealed else { return }
        // Still sealed: another TPM refuses the new password.
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        let other = try account.softwareTPM()
        try account.useTPM(other)
        let elsewhere = try account.security(["unlock-keychain", "-p", new])
        #expect(elsewhere.status == 51 && elsewhere.err.contains("another TPM"), "\(elsewhere)")
    }

    @Test("an administrator's reset (no old password) loses nothing: the old password still opens the keychain")
    func adminResetKeepsTheKeychain() throws {
        let account = try Account()
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let new = Account.randomPassword()
        // Root sets the password: pam_unix asks for no current password.
        let reset = try account.pam(["chauthtok"], input: [new, new])
        #expect(reset.status == 0, "\(reset)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        // The login with the new password succeeds, leaves the keychain locked, and says how to
        // move it to the new password.
        let login = try account.pam(["authenticate", "open_session"], input: [new])
        #expect(login.status == 0, "\(login)")
        #expect((login.out + login.err).contains("security set-keychain-password"), "\(login)")
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        // The old password opens it; set-keychain-password moves it to the new one.
        let moved = try account.security(["set-keychain-password", "-o", account.password, "-p", new])
        #expect(moved.status == 0, "\(moved)")
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).out == "s3cret\n")
    }

    // MARK: Sealed to this machine's TPM

    @Test(
        "with a TPM, the first login seals the login keychain to it: the same files and password on another TPM open nothing"
    )
    func loginSealsTheLoginKeychainToTheTPM() throws {
        let account = try Account()
        let tpm = try account.softwareTPM()
        try account.useTPM(tpm)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        // The agent sealed the device key file too: its key is in it only as the TPM sealed it.
        let deviceKey = try Data(contentsOf: URL(fileURLWithPath: account.home + "/.config/keychain/device-key"))
        #expect(deviceKey.starts(with: Data("keychain-linux device key v2 sealed\n".utf8)))
        // Another machine: the home directory (keychain and device key) with another TPM.
        let other = try account.softwareTPM()
        try account.useTPM(other)
        let elsewhere = try account.security(["unlock-keychain", "-p", account.password])
        #expect(elsewhere.status == 51, "\(elsewhere)")
        #expect(elsewhere.err.contains("another TPM"), "a clear error: \(elsewhere)")
        // No TPM at all: a clear error too, never a silent downgrade.
        try account.useTPM(nil)
        let none = try account.security(["unlock-keychain", "-p", account.password])
        #expect(none.status != 0 && none.err.contains("TPM"), "\(none)")
        // Back on its machine, the login unlocks it.
        try account.useTPM(tpm)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        let found = try account.security(["find-generic-password", "-s", "svc", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
    }

    @Test("a cleared TPM: the login says so, and the recovery key opens the keychain and seals it to the new TPM")
    func recoveryKeyAfterTheTPMWasCleared() throws {
        let account = try Account()
        let tpm = try account.softwareTPM()
        try account.useTPM(tpm)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let recovery = try account.makeRecoveryKey()
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        // The TPM is cleared: the login goes on, the keychain stays locked, and the login says how.
        let cleared = try account.softwareTPM()
        try account.useTPM(cleared)
        let login = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(login.status == 0, "\(login)")
        #expect((login.out + login.err).contains("recovery key"), "\(login)")
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        // The recovery key opens it and sets the login password again, sealed to the new TPM.
        let moved = try account.security(["set-keychain-password", "-o", recovery, "-p", account.password])
        #expect(moved.status == 0, "\(moved)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        let found = try account.security(["find-generic-password", "-s", "svc", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
    }

    @Test("an administrator's reset: the recovery key opens the login keychain and moves it to the new password")
    func recoveryKeyAfterAnAdministratorsReset() throws {
        let account = try Account()
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let recovery = try account.makeRecoveryKey()
        let new = Account.randomPassword()
        #expect(try account.pam(["chauthtok"], input: [new, new]).status == 0)
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        // The old password is forgotten too: the recovery key moves the keychain to the new one.
        let moved = try account.security(["set-keychain-password", "-o", recovery, "-p", new])
        #expect(moved.status == 0, "\(moved)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.pam(["authenticate", "open_session"], input: [new]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).out == "s3cret\n")
    }

    // MARK: The session's lock

    @Test("the login keychain locks with the session, and a screen unlock through PAM unlocks it again")
    func screenUnlockUnlocksTheLoginKeychain() throws {
        let account = try Account()
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        // Made by the login: it locks when the session locks or the machine sleeps (-l).
        let info = try account.security(["show-keychain-info"])
        #expect(info.status == 0 && info.err.contains("lock-on-sleep"), "\(info)")
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        // What logind's Session.Lock does to it (SleepLockTests drive that signal itself).
        #expect(try account.security(["lock-keychain"]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        // A screen locker with the module in its stack: a wrong password unlocks nothing...
        let wrong = try account.pam(["authenticate", "setcred(PAM_REFRESH_CRED)"], input: ["not-" + account.password])
        #expect(wrong.status != 0, "\(wrong)")
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        // ...the right one does, with no session opened.
        let unlock = try account.pam(["authenticate", "setcred(PAM_REFRESH_CRED)"], input: [account.password])
        #expect(unlock.status == 0, "\(unlock)")
        let found = try account.security(["find-generic-password", "-s", "svc", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
        // Turned off by the user, it stays off at the next login.
        #expect(try account.security(["set-keychain-settings"]).status == 0)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try !account.security(["show-keychain-info"]).err.contains("lock-on-sleep"))
    }

    // MARK: Logins without a password

    @Test("set-login-unlock tpm: a login without a password unlocks the login keychain, until the boot state changes")
    func loginWithoutAPasswordOnTheBootState() throws {
        let account = try Account()
        let tpm = try account.softwareTPM()
        try account.useTPM(tpm)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let on = try account.security(["set-login-unlock", "-p", account.password, "tpm"])
        #expect(on.status == 0, "\(on)")
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        // Autologin, a fingerprint, a FIDO2 key: the session opens with no password in the stack.
        let autologin = try account.pam(["open_session"], input: [])
        #expect(autologin.status == 0, "\(autologin)")
        let found = try account.security(["find-generic-password", "-s", "svc", "-a", "me", "-w"])
        #expect(found.status == 0 && found.out == "s3cret\n", "\(found)")
        // Another boot state (PCR 7 extended, as when Secure Boot is turned off).
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        let extend = try LoginPAMTests.run(
            "/usr/bin/tpm2_pcrextend", ["7:sha256=" + String(repeating: "ab", count: 32)],
            environment: ["TPM2TOOLS_TCTI": tpm.tcti])
        #expect(extend.status == 0, "\(extend)")
        let changed = try account.pam(["open_session"], input: [])
        #expect(changed.status == 0, "the login goes on: \(changed)")
        #expect((changed.out + changed.err).contains("boot state changed"), "\(changed)")
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
        // The password still opens it, and turning it on again seals it to the new boot state.
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["set-login-unlock", "-p", account.password, "tpm"]).status == 0)
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.pam(["open_session"], input: []).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).out == "s3cret\n")
        // Turned off: a login without a password leaves it locked.
        #expect(try account.security(["set-login-unlock", "password"]).status == 0)
        #expect(try account.security(["lock-keychain", "-a"]).status == 0)
        #expect(try account.pam(["open_session"], input: []).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "svc", "-w"]).status == 36)
    }

    @Test("a login without a password, when unlocking on the boot state is off, starts nothing")
    func loginWithoutAPasswordStartsNothing() throws {
        let account = try Account()
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        stopAgent(at: account.socket)
        #expect(try account.pam(["open_session"], input: []).status == 0)
        #expect(!FileManager.default.fileExists(atPath: account.socket), "no agent was started")
        // Without a TPM it cannot be turned on, and says why.
        let refused = try account.security(["set-login-unlock", "-p", account.password, "tpm"])
        #expect(refused.status != 0 && refused.err.contains("TPM"), "\(refused)")
    }

    // MARK: Where the password goes

    /// GNOME Keyring's login keyring made by the real `gnome-keyring-daemon` under `password`
    /// (read from standard input, as its PAM module gives it), holding what `secret-tool` stored,
    /// on a bus of its own; then placed in the account's `~/.local/share/keyrings`.
    static func makeGnomeLoginKeyring(for account: Account, password: String) throws {
        let scratch = FileManager.default.temporaryDirectory.path + "/gnome-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch + "/run", withIntermediateDirectories: true)
        let script = """
            exec 3<&0
            gnome-keyring-daemon --foreground --unlock --components=secrets <&3 >/dev/null 2>&1 &
            daemon=$!
            trap 'kill -9 $daemon' EXIT
            exec 3<&-
            for i in $(seq 300); do
              dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets | grep -q true && break
              sleep 0.1
            done
            echo -n mail-secret | secret-tool store --label=Mail service mail account alice || exit 3
            echo -n wifi | secret-tool store --label=Wi-Fi xdg:schema org.gnome.keyring.NetworkPassword \\
              server ap user bob || exit 3
            """
        // The password reaches the daemon on its standard input (a background job's own is
        // /dev/null, hence descriptor 3).
        let made = try run(
            try require("/usr/bin/dbus-run-session"), ["--", "/bin/sh", "-c", script], input: password,
            environment: [
                "HOME": scratch, "XDG_DATA_HOME": scratch + "/data", "XDG_RUNTIME_DIR": scratch + "/run",
                "PATH": "/usr/bin:/bin",
            ], cleared: true)
        #expect(made.status == 0, "\(made)")
        let keyrings = account.home + "/.local/share/keyrings"
        for directory in [account.home + "/.local", account.home + "/.local/share", keyrings] {
            try Account.makePrivateDirectory(directory, uid: account.uid, gid: account.gid)
        }
        let file = keyrings + "/login.keyring"
        try FileManager.default.copyItem(atPath: scratch + "/data/keyrings/login.keyring", toPath: file)
        guard chown(file, account.uid, account.gid) == 0 else { throw Missing("cannot prepare \(file)") }
    }

    @Test("the first login moves GNOME Keyring's login keyring in, once; one the password does not open is left")
    func firstLoginMovesGnomeKeyringIn() throws {
        let account = try Account()
        try Self.makeGnomeLoginKeyring(for: account, password: account.password)
        let login = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(login.status == 0, "\(login)")
        let mail = try account.security(["find-generic-password", "-s", "mail", "-a", "alice", "-w"])
        #expect(mail.status == 0 && mail.out == "mail-secret\n", "\(mail)")
        let wifi = try account.security(["find-internet-password", "-s", "ap", "-a", "bob", "-w"])
        #expect(wifi.status == 0 && wifi.out == "wifi\n", "\(wifi)")
        let record = account.home + "/.local/share/keychains/moved-in.json"
        #expect(FileManager.default.fileExists(atPath: record))
        // A later login moves nothing in again: an item deleted since stays deleted.
        #expect(try account.security(["delete-generic-password", "-s", "mail", "-a", "alice"]).status == 0)
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["find-generic-password", "-s", "mail", "-a", "alice"]).status != 0)

        // A login keyring under another password: the login goes on, the file is left for
        // `security import-keyring`, and the log says so without the password.
        let other = try Account()
        try Self.makeGnomeLoginKeyring(for: other, password: "not-the-login-password")
        let refused = try other.pam(["authenticate", "open_session"], input: [other.password])
        #expect(refused.status == 0, "\(refused)")
        #expect(try other.security(["find-generic-password", "-s", "mail"]).status != 0)
        #expect(!FileManager.default.fileExists(atPath: other.home + "/.local/share/keychains/moved-in.json"))
    }

    /// KDE's default wallet made by the real `kwalletd5` under `password`, as pam_kwallet makes
    /// it at login (Tests/SecretServiceTests/Clients/kwallet_fixture.py), holding one password;
    /// then placed, with its salt, in the account's `~/.local/share/kwalletd`.
    static func makeKWallet(for account: Account, password: String) throws {
        let scratch = FileManager.default.temporaryDirectory.path + "/kwallet-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for directory in ["home", "data", "config", "run"] {
            try FileManager.default.createDirectory(
                atPath: scratch + "/" + directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SecretServiceTests/Clients/kwallet_fixture.py").path
        let entries =
            #"[{"folder": "Passwords", "key": "forum.example.org", "type": "password", "value": "kde-secret"}]"#
        let made = try run(
            try require("/usr/bin/dbus-run-session"), ["--", "/usr/bin/python3", fixture],
            input: password + "\n" + entries,
            environment: [
                "HOME": scratch + "/home", "XDG_DATA_HOME": scratch + "/data", "XDG_CONFIG_HOME": scratch + "/config",
                "XDG_RUNTIME_DIR": scratch + "/run", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            ], cleared: true)
        #expect(made.status == 0, "\(made)")
        let wallets = account.home + "/.local/share/kwalletd"
        for directory in [account.home + "/.local", account.home + "/.local/share", wallets] {
            try Account.makePrivateDirectory(directory, uid: account.uid, gid: account.gid)
        }
        for name in ["kdewallet.kwl", "kdewallet.salt"] {
            try FileManager.default.copyItem(atPath: scratch + "/data/kwalletd/" + name, toPath: wallets + "/" + name)
            guard chown(wallets + "/" + name, account.uid, account.gid) == 0 else {
                throw Missing("cannot prepare \(name)")
            }
        }
    }

    @Test(
        "the first login moves KDE's default wallet in, as pam_kwallet opens it; one the password does not open is left"
    )
    func firstLoginMovesKWalletIn() throws {
        let account = try Account()
        try Self.makeKWallet(for: account, password: account.password)
        let login = try account.pam(["authenticate", "open_session"], input: [account.password])
        #expect(login.status == 0, "\(login)")
        let forum = try account.security(["find-generic-password", "-l", "forum.example.org", "-w"])
        #expect(forum.status == 0 && forum.out == "kde-secret\n", "\(forum)")

        let other = try Account()
        try Self.makeKWallet(for: other, password: "not-the-login-password")
        let refused = try other.pam(["authenticate", "open_session"], input: [other.password])
        #expect(refused.status == 0, "\(refused)")
        #expect(try other.security(["find-generic-password", "-l", "forum.example.org"]).status != 0)
    }

    @Test("the password is in no process's arguments or environment and in no file of the account")
    func thePasswordIsInNoArgumentEnvironmentOrFile() throws {
        let account = try Account()
        #expect(try account.pam(["authenticate", "open_session"], input: [account.password]).status == 0)
        #expect(try account.security(["add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret"]).status == 0)
        let needle = Data(account.password.utf8)
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where Int(entry) != nil {
            for file in ["cmdline", "environ"] {
                let contents = FileManager.default.contents(atPath: "/proc/\(entry)/\(file)") ?? Data()
                #expect(contents.range(of: needle) == nil, "/proc/\(entry)/\(file)")
            }
        }
        let files = FileManager.default.enumerator(atPath: account.home)
        while let relative = files?.nextObject() as? String {
            let contents = FileManager.default.contents(atPath: account.home + "/" + relative) ?? Data()
            #expect(contents.range(of: needle) == nil, "\(relative)")
        }
    }
}
