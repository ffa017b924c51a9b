import Foundation
import KeychainAgent
import KeychainClient
import KeychainCore
import KeychainLibc
import KeyringImport

/// `keychaind --pam MODE`: what `pam_keychain.so` starts, as the user, to hand the login
/// password to the user's agent (docs/login.md).
///
/// The PAM module writes the secrets to standard input, each as a 4-byte big-endian length and its
/// bytes: the login password for `login`; the old and the new password for `password`. Nothing
/// else carries them (no argument, no variable, no file). This process is a client of the user's
/// agent, started if needed (as the user: the module has become the user before this runs).
///
/// - `login`: the login keychain is created under the password when there is none, converted from
///   password-less to the password in place (its items kept), or unlocked with it.
/// - `password`: the login keychain's keys are re-wrapped from the old password to the new one
///   (no item is re-sealed); a password-less one is converted to the new password.
/// - `unlock` (no secret): a login without a password; the login keychain is unlocked on this
///   machine's boot state when the user turned that on (`security set-login-unlock tpm`).
///
/// Exit status: 0 done; 2 usage or malformed input; 3 the password does not open the login
/// keychain (an administrator's password reset: docs/login.md says how to recover); 4 the
/// keychain is sealed to a TPM that cannot open it (cleared or replaced: its recovery key does);
/// 5 the boot state changed since unlocking without a password was turned on; 6 done, and the
/// login keychain was created or converted under the password now (the module suggests a
/// recovery key, once); 1 any other failure. The PAM module logs the failures and never fails
/// the login.
enum PAMHandoff {
    /// The longest secret accepted (the module sends at most 4,096 bytes).
    static let maximumSecret = 4096

    /// Runs the mode named by `arguments` (`--pam MODE`) and returns the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let mode = Mode(rawValue: arguments[2]) else {
            complain("usage: keychaind --pam login|password|unlock (started by pam_keychain.so)")
            return 2
        }
        // No core dump and no ptrace by the user's other processes while the password is here.
        try? ProcessHardening.apply()
        var secrets: [Data]
        do {
            secrets = try readSecrets(from: STDIN_FILENO, count: mode.secretCount)
        } catch {
            complain("pam: malformed input from pam_keychain.so")
            return 2
        }
        defer { for index in secrets.indices { secrets[index].resetBytes(in: 0..<secrets[index].count) } }
        useLoginRuntimeDirectory()
        // A login without a password reaches the agent only when the user turned unlocking on the
        // boot state on: other logins (ssh keys, su from root) start nothing.
        if mode == .unlock,
            (try? KeychainPreferences.load(from: KeychainPaths().preferencesFile))?.loginUnlock != "tpm"
        {
            return 0
        }
        do {
            guard let agent = try Keychains.agent(startingIfNeeded: true) else {
                complain("pam: the agent is turned off (KEYCHAIN_AGENT=off); the login keychain was not unlocked")
                return 1
            }
            let login = agent.keychain(at: KeychainSelection().loginKeychain)
            switch mode {
            case .login:
                let made = try unlockAtLogin(login, agent: agent, password: secrets[0])
                moveInAtLogin(login, password: secrets[0])
                return made ? 6 : 0
            case .password: try changePassword(login, old: secrets[0], new: secrets[1])
            case .unlock: if login.hasPassword && login.isLocked { try login.unlock(password: nil) }
            }
            return 0
        } catch let error as KeychainError where error.code == .authFailed && error.isSetupProblem {
            // The TPM it is sealed to cannot open it, or refuses for now: the message says which.
            complain("pam: \(error.message)")
            switch error.reason {
            case .sealedToAnotherTPM?: return 4
            case .bootStateChanged?: return 5
            default: return 1
            }
        } catch let error as KeychainError where error.code == .authFailed {
            complain("pam: the password does not open the login keychain (docs/login.md: after a password reset)")
            return 3
        } catch let error as KeychainError {
            complain("pam: \(error.message)")
            return 1
        } catch {
            complain("pam: the login keychain could not be reached")
            return 1
        }
    }

    /// Where the agent's socket is when the PAM stack did not say: `passwd` runs without a session,
    /// so no `pam_systemd` sets `XDG_RUNTIME_DIR`; the agent the user's session started is then in
    /// the directory systemd-logind makes for the user, `/run/user/UID`, when it is there, the
    /// user's own and private.
    static func useLoginRuntimeDirectory() {
        guard getenv("XDG_RUNTIME_DIR") == nil else { return }
        let directory = "/run/user/\(getuid())"
        var info = stat()
        guard lstat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(),
            info.st_mode & 0o077 == 0
        else { return }
        setenv("XDG_RUNTIME_DIR", directory, 1)
    }

    /// What the PAM module asks.
    enum Mode: String {
        case login, password, unlock

        var secretCount: Int {
            switch self {
            case .login: 1
            case .password: 2
            case .unlock: 0
            }
        }
    }

    /// At login: create, convert or unlock the login keychain with `password`; `true` when it was
    /// created or converted (it has had the login password since this login).
    static func unlockAtLogin(_ login: AgentKeychain, agent: AgentConnection, password: Data) throws -> Bool {
        if !FileManager.default.fileExists(atPath: login.keychain) {
            do {
                _ = try agent.createKeychain(at: login.keychain, password: password)
                try lockWithTheSession(login)
                return true
            } catch let raced as KeychainError where raced.code == .duplicateKeychain {
                // Another login of the user made it first: it is there to unlock.
            }
        }
        if !login.hasPassword {
            // Today's password-less login keychain becomes a password keychain, items kept.
            try login.changePassword(old: nil, new: password)
            try lockWithTheSession(login)
            return true
        } else if login.isLocked {
            try login.unlock(password: password)
        }
        return false
    }

    /// Moves GNOME Keyring's login keyring (and its keyrings without a password) and KDE's default
    /// wallet into the login keychain the first time, from their files (docs/moving-in.md); a
    /// file that does not open is logged, without any secret, and never fails the login.
    static func moveInAtLogin(_ login: AgentKeychain, password: Data) {
        let directory = KeychainPaths().keychainsDirectory
        for (path, result) in KeyringMoveIn.moveInAtLogin(
            password: password, into: login, keychainsDirectory: directory)
        {
            switch result {
            case .success(let report) where !report.tally.leftOut.isEmpty:
                complain(
                    "pam: \(path): \(report.tally.leftOut.count) items left out (their service and account are taken)")
            case .success: break
            case .failure(let error as KeyringFileError):
                complain("pam: \(path) was not moved in: \(error) (security import-keyring asks for its password)")
            case .failure(let error as KeychainError):
                complain("pam: \(path) was not moved in: \(error.message)")
            case .failure:
                complain("pam: \(path) was not moved in: it cannot be read")
            }
        }
    }

    /// A login keychain the login password now protects locks its when-unlocked items when the
    /// session locks or the machine sleeps (`set-keychain-settings -l`; a user who turns it off
    /// keeps it off: only creation and conversion set it).
    static func lockWithTheSession(_ login: AgentKeychain) throws {
        var settings = try login.settings
        settings.locksOnSleep = true
        try login.setSettings(settings)
    }

    /// At `passwd`: re-wrap the login keychain's keys from `old` to `new` (a password-less one
    /// gets `new`).
    static func changePassword(_ login: AgentKeychain, old: Data, new: Data) throws {
        try login.changePassword(old: login.hasPassword ? old : nil, new: new)
    }

    /// Reads `count` framed secrets (a 4-byte big-endian length, then the bytes) and nothing more.
    static func readSecrets(from descriptor: Int32, count: Int) throws -> [Data] {
        var secrets: [Data] = []
        for _ in 0..<count {
            let header = try read(descriptor, count: 4)
            let length = header.reduce(0) { $0 << 8 | Int($1) }
            guard length <= maximumSecret else { throw KeychainError(.decode, "secret too long") }
            secrets.append(try read(descriptor, count: length))
        }
        guard try read(descriptor, atMost: 1).isEmpty else { throw KeychainError(.decode, "trailing input") }
        return secrets
    }

    private static func read(_ descriptor: Int32, count: Int) throws -> Data {
        let bytes = try read(descriptor, atMost: count)
        guard bytes.count == count else { throw KeychainError(.decode, "input ended early") }
        return bytes
    }

    private static func read(_ descriptor: Int32, atMost count: Int) throws -> Data {
        var bytes = Data(count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                KeychainLibc.read(descriptor, buffer.baseAddress! + filled, count - filled)
            }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw KeychainError(.io, "cannot read standard input") }
            if got == 0 { break }
            filled += got
        }
        return bytes.prefix(filled)
    }
}
