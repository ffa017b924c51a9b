import Foundation
import KeychainAgent
import KeychainModel
import Synchronization
import UserPresence

/// The dialog that asks the person to unlock the keychain when an SSH client needs it while it is
/// locked: `pinentry` (``KeychainAgent/Pinentry``) on the client's terminal, or on the session's
/// display (where Debian's `pinentry-gnome3` shows GNOME's own prompt). It names the program by
/// what the kernel says of it; the password goes from the dialog to the agent's unlock, counted in
/// its back-off after wrong passwords, and nowhere else.
///
/// One dialog at a time: a client that asks meanwhile waits, then finds the keychain unlocked.
/// After the person cancels, no dialog is shown for ``quietAfterCancel`` (each `ssh` connection
/// lists keys, and Cancel means "not now"), and requests fail as for a locked keychain.
final class SSHUnlockPrompt: Sendable {
    let pinentry: Pinentry
    let environment: [String: String]
    /// When the person last cancelled.
    private let cancelled = Mutex<ContinuousClock.Instant?>(nil)
    /// Held while a dialog is shown.
    private let turn = NSLock()

    /// How long no dialog is shown after a Cancel.
    static let quietAfterCancel: Duration = .seconds(30)

    init(pinentry: Pinentry, environment: [String: String]) {
        self.pinentry = pinentry
        self.environment = environment
    }

    /// Asks process `pid`'s person for the password while `isLocked` says the keychain is locked,
    /// giving each answer to `unlock`; three tries.
    /// - Returns: Whether the keychain is unlocked afterwards.
    func unlock(forProcess pid: Int32, isLocked: () -> Bool, unlock: (Data) throws -> Void) -> Bool {
        withDialog(forProcess: pid, unless: { !isLocked() }) { dialog, program in
            let description =
                "Your keychain is locked.\n\n\(program) (pid \(pid)) wants to use an SSH key. "
                + "Enter the keychain's password to unlock it."
            var error: String?
            for _ in 0..<3 {
                guard var password = try? dialog.askPassword(title: "SSH", description: description, error: error)
                else { return nil }
                defer { password.resetBytes(in: 0..<password.count) }
                do {
                    try unlock(password)
                    return true
                } catch let failure as KeychainError where failure.code == .authFailed {
                    error = "Wrong password. Try again."
                } catch let failure as AgentError where failure.code == .throttled {
                    error = failure.message
                } catch {
                    return false
                }
            }
            return false
        } ?? !isLocked()
    }

    /// Who answers polkit's questions for process `pid` when polkit has no authentication agent
    /// for it (a program in a terminal, over SSH): this dialog, on the process's terminal or
    /// display, asks for the password polkit's PAM stack wants (``UserPresence/PolkitQuestion``),
    /// which goes to polkit's helper and nowhere else. One dialog at a time, as for an unlock;
    /// a Cancel is `nil`, and keeps the dialog away as an unlock's does.
    func answering(forProcess pid: Int32, sandboxed: Bool) -> PolkitAnswering {
        { [self] question in
            withDialog(forProcess: pid, sandboxed: sandboxed) { dialog, program in
                let description =
                    "\(program) (pid \(pid)) wants to use an SSH key that asks for you.\n\n"
                    + "Authenticate as \(question.user) to allow it "
                    + "(\(question.prompt.trimmingCharacters(in: .whitespaces)))."
                return try? dialog.askPassword(title: "SSH", description: description, error: question.message)
            }
        }
    }

    /// A security key's PIN for process `pid`, asked with this dialog (one at a time, as the rest).
    func securityKeyPIN(forProcess pid: Int32, sandboxed: Bool) -> SecurityKeyPINSource {
        { [self] question in
            withDialog(forProcess: pid, sandboxed: sandboxed) { dialog, _ in
                dialog.askSecurityKeyPIN(question, forProcess: pid)
            }
        }
    }

    /// Runs `body` with a dialog on process `pid`'s terminal (not a sandboxed one's) or display and the program's name,
    /// one dialog at a time (unless `done` says, once it is this one's turn, that none is
    /// needed); `nil` when no dialog can be shown, after a Cancel within ``quietAfterCancel``,
    /// or when `body` says the person cancelled (`nil`), which starts that quiet time.
    private func withDialog<T>(
        forProcess pid: Int32, sandboxed: Bool = false, unless done: () -> Bool = { false },
        _ body: (PinentryDialog, String) -> T?
    ) -> T? {
        if let last = cancelled.withLock({ $0 }), ContinuousClock.now - last < Self.quietAfterCancel { return nil }
        turn.lock()
        defer { turn.unlock() }
        let screen = PinentryScreen(callerPID: pid, sandboxed: sandboxed)
        guard !done(), let dialog = try? pinentry.open(on: screen, environment: environment) else { return nil }
        defer { dialog.close() }
        guard let answer = body(dialog, PromptedProgram.name(ofProcess: pid) ?? "A program") else {
            cancelled.withLock { $0 = .now }
            return nil
        }
        return answer
    }
}
