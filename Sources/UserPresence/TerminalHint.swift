import Foundation
import KeychainLibc

/// A line for the person at a terminal, who may not know that something waits for them (a
/// fingerprint reader gives no sign of its own); never a secret.
public enum TerminalHint {
    /// This process's controlling terminal.
    public static let ownTerminal = "/dev/tty"

    /// Writes `text` to the terminal device at `path` when it can be opened (a process without a
    /// terminal has none), never blocking on it.
    public static func write(_ text: String, to path: String = ownTerminal) {
        let descriptor = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFCHR else { return }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { writeAll($0, to: descriptor) }
    }

    /// What the terminal is told while the reader waits for a keychain read: the reader's name.
    public static func touchReader(_ reader: String) -> String {
        "keychain: touch the fingerprint reader (\(reader)) to read an item\n"
    }

    /// What the terminal is told while a security key waits for a touch for a keychain read.
    public static let touchSecurityKey = "keychain: touch your security key to read an item\n"
}
