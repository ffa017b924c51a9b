import Foundation
import KeychainModel
import Security

/// A failed command: what it returns (macOS's `security` returns an `OSStatus`, `1`, or `2` for
/// a usage error) and what it prints on standard error.
///
/// Messages never contain a secret: they name functions, keychains and status codes only.
package struct CommandFailure: Error {
    /// The command's result, before the process exit status is taken from its low byte.
    var result: Int32
    /// Lines printed on standard error, each prefixed with `security: `.
    var messages: [String]
    /// Lines printed on standard error as they are (no prefix).
    var rawLines: [String] = []
    /// Whether to print the command's usage after the messages (macOS does for result 2).
    var showsUsage: Bool = false

    /// A failure reported the way macOS's `sec_perror` does: `security: <context>: <message>`.
    static func status(_ status: Int32, _ context: String, hint: String? = nil) -> CommandFailure {
        CommandFailure(result: status, messages: ["\(context): \(statusMessage(status))"] + (hint.map { [$0] } ?? []))
    }

    /// A usage error: result 2, the message, then the command's usage.
    package static func usage(_ message: String) -> CommandFailure {
        CommandFailure(result: 2, messages: [message], showsUsage: true)
    }

    /// A plain failure with a message, returning `result` (1 unless told).
    package static func failure(_ message: String, result: Int32 = 1) -> CommandFailure {
        CommandFailure(result: result, messages: [message])
    }

    /// A plain failure that says what is wrong, then what to do, returning 1.
    package static func failure(_ message: String, then advice: String) -> CommandFailure {
        CommandFailure(result: 1, messages: [message, advice])
    }

    /// A failure reported as ``status(_:_:hint:)`` does for the error's status; when the engine
    /// says the cause is the machine's set-up (a missing device key, a directory others can
    /// write to, a keychain held by another process), its explanation takes the place of the
    /// status's generic message ("I/O error" says nothing of what to fix), with the same result.
    static func status(of error: any Error, _ context: String) -> CommandFailure {
        // A failure already reported in the tool's words (the agent that cannot be reached,
        // say) stays as it is.
        if let failure = error as? CommandFailure { return failure }
        if let error = error as? KeychainError, error.isSetupProblem {
            return CommandFailure(result: error.osStatus, messages: ["\(context): \(error.message)"])
        }
        return status(osStatus(of: error), context)
    }

    /// The `OSStatus` for any error the engine or the tool throws
    /// (``KeychainModel/KeychainError/osStatus(of:)``).
    static func osStatus(of error: any Error) -> Int32 { KeychainError.osStatus(of: error) }
}

/// Apple's message for a status code (`SecCopyErrorMessageString`).
func statusMessage(_ status: Int32) -> String {
    SecCopyErrorMessageString(status, nil).map { String(describing: $0) } ?? "OSStatus \(status)"
}

/// The process exit status for a command result, computed as macOS's `security` does: its
/// `main` returns the command's `int` result, and the kernel keeps the low byte
/// (`status & 0xff`), so errSecItemNotFound (-25300) exits 44 and errSecDuplicateItem
/// (-25299) exits 45. One deliberate difference: a non-zero result whose low byte is 0
/// (such as -256) exits 1 here, so that a failure never looks like success.
func exitStatus(forResult result: Int32) -> Int32 {
    let low = result & 0xff
    return low == 0 && result != 0 ? 1 : low
}
