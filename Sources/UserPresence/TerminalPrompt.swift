import Foundation
import KeychainLibc

/// Asks the person at this process's controlling terminal for a short secret (a security key's
/// PIN), as the keychain in an app's own process does: `/dev/tty` only (never standard input,
/// which is the app's), echo off while it is typed, and no signal handler installed (the app's
/// own are left alone).
public enum TerminalPrompt {
    /// The longest answer read: a CTAP PIN is at most 63 bytes.
    static let longest = 255

    /// Shows `prompt` on the terminal and reads one line with echo off (or on, with `echo`).
    /// - Parameters:
    ///   - stop: A descriptor that, once readable (a pipe written to or closed), ends the read
    ///     as a cancel would: for a question whose answer is no longer wanted.
    /// - Returns: What was typed, without the newline; `nil` with no terminal, at its end
    ///   (Ctrl-D), once `stop` is readable, or for a line longer than ``longest`` bytes.
    public static func readSecret(prompt: String, echo: Bool = false, stop: Int32? = nil) -> [UInt8]? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { return nil }
        defer { close(tty) }
        var saved = termios()
        let canChangeEcho = !echo && tcgetattr(tty, &saved) == 0
        if canChangeEcho {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO | ECHONL)
            _ = tcsetattr(tty, TCSAFLUSH, &silent)
        }
        defer {
            if canChangeEcho { _ = tcsetattr(tty, TCSAFLUSH, &saved) }
            // The newline typed was not shown.
            if !echo { _ = [UInt8(ascii: "\n")].withUnsafeBytes { writeAll($0, to: tty) } }
        }
        _ = Array(prompt.utf8).withUnsafeBytes { writeAll($0, to: tty) }
        return readLine(from: tty, stop: stop)
    }

    /// One line from `tty`, a byte at a time so that nothing after it is taken; `nil` at its
    /// end, once `stop` is readable, or past ``longest`` bytes. What was read is wiped when the
    /// line is not returned.
    private static func readLine(from tty: Int32, stop: Int32?) -> [UInt8]? {
        var line: [UInt8] = []
        line.reserveCapacity(longest + 1)  // never grown: no copy of the secret is left behind
        func refuse() -> [UInt8]? {
            line.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
            return nil
        }
        var byte: UInt8 = 0
        while true {
            if let stop {
                var pollers = [
                    pollfd(fd: tty, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&pollers, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0, pollers[1].revents == 0 else { return refuse() }
            }
            let count = read(tty, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { return refuse() }
            if byte == UInt8(ascii: "\n") { return line }
            guard line.count < longest else { return refuse() }
            line.append(byte)
        }
    }

    /// A security key's PIN from this terminal (``SecurityKeyPINSource``).
    public static let securityKeyPIN: SecurityKeyPINSource = { question in
        readSecret(prompt: SecurityKeyPINQuestion.text(question))
    }
}

extension SecurityKeyPINQuestion {
    /// What a terminal or a dialog asks: the PIN, and after a wrong one, how many tries are left.
    public static func text(_ question: SecurityKeyPINQuestion) -> String {
        let left = question.triesLeft.map { " (\($0) tries left before it locks)" } ?? ""
        return (question.afterWrongPIN ? "keychain: wrong PIN\(left). " : "keychain: ")
            + "PIN of your security key: "
    }
}
