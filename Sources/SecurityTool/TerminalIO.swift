import Foundation
import KeychainModel
import KeychainLibc

/// Unbuffered writes to standard output and standard error, byte-exact.
package enum Console {
    /// Writes bytes to a file descriptor, retrying short writes.
    static func emit(_ bytes: [UInt8], to fd: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// Writes text to standard output.
    package static func out(_ text: String) { emit(Array(text.utf8), to: 1) }
    /// Writes bytes to standard output.
    static func out(_ bytes: [UInt8]) { emit(bytes, to: 1) }
    /// Writes text to standard error.
    package static func err(_ text: String) { emit(Array(text.utf8), to: 2) }
    /// Writes bytes to standard error.
    static func err(_ bytes: [UInt8]) { emit(bytes, to: 2) }

    /// Whether standard input is a terminal.
    static var inputIsTerminal: Bool { isatty(0) == 1 }
}

/// Standard input read one line at a time, shared by interactive mode (`security -i`) and the
/// secret prompts, so that what one reads past its line is kept for the next.
///
/// Input is read in blocks, and a line may not be longer than ``lineLimit`` bytes (the largest
/// secret): past it, reading stops and ``readLine()`` throws, without reading the rest.
package final class StandardInput {
    /// The longest line accepted: the engine's largest secret (4 MiB).
    static let lineLimit = KeychainConfiguration.defaultMaximumDataSize
    /// How much one `read(2)` asks for.
    static let blockSize = 64 << 10

    private let fd: Int32
    private let limit: Int
    private var buffer: [UInt8] = []
    /// Where the unread part of `buffer` starts.
    private var start = 0
    private var atEnd = false
    /// How many `read(2)` calls returned data, and how many bytes they returned (for tests).
    private(set) var reads = 0
    private(set) var bytesRead = 0

    /// - Parameters:
    ///   - fd: The file descriptor to read (standard input unless told).
    ///   - limit: The longest line accepted, in bytes.
    init(fd: Int32 = 0, limit: Int = StandardInput.lineLimit) {
        self.fd = fd
        self.limit = limit
    }

    /// Reads one line: the bytes before the next newline (the newline is dropped; nothing else
    /// is). Returns `nil` at the end of input when no byte was read.
    /// - Throws: ``CommandFailure`` (errSecParam) when the line is longer than the limit; its
    ///   bytes are dropped and what follows them is not read.
    package func readLine() throws -> [UInt8]? {
        // Bytes before `scanned` hold no newline: each byte is looked at once.
        var scanned = start
        while true {
            if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                compact()
                guard line.count <= limit else { throw Self.tooLong(limit) }
                return line
            }
            scanned = buffer.count
            if buffer.count - start > limit {
                buffer.removeAll()
                start = 0
                throw Self.tooLong(limit)
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                defer {
                    buffer.removeAll()
                    start = 0
                }
                return Array(buffer[start...])
            }
            fill()
        }
    }

    /// Gives back what was read past the last line when standard input is a file, as C's
    /// `exit(3)` does for its input streams, so that the next reader of the file (the shell
    /// that ran `security`) starts after the last line used. Input from a pipe cannot be
    /// given back.
    func returnUnreadInput() {
        let unread = buffer.count - start
        guard unread > 0, lseek(fd, off_t(-unread), SEEK_CUR) >= 0 else { return }
        buffer.removeAll()
        start = 0
    }

    private static func tooLong(_ limit: Int) -> CommandFailure {
        CommandFailure.failure(
            "standard input: a line is longer than \(limit) bytes (the largest secret)",
            result: KeychainError.Code.parameter.rawValue)
    }

    /// Reads one block (or finds the end of input).
    private func fill() {
        let count = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: Self.blockSize))
        while true {
            let got = buffer.withUnsafeMutableBytes { bytes in
                read(fd, bytes.baseAddress! + count, Self.blockSize)
            }
            if got < 0 && errno == EINTR { continue }
            buffer.removeSubrange((count + max(got, 0))...)
            if got <= 0 {
                atEnd = true
            } else {
                reads += 1
                bytesRead += got
            }
            return
        }
    }

    /// Drops the lines already returned once they are most of the buffer (linear overall).
    private func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > buffer.count / 2 {
            buffer.removeSubrange(..<start)
            start = 0
        }
    }
}

/// Reads a secret without echo on the terminal, or one line of standard input when standard
/// input is not a terminal.
///
/// Secrets are handled as bytes: what is typed or piped is stored exactly (UTF-8 or not).
struct SecretReader {
    let input: StandardInput

    /// Reads a secret.
    /// - Parameters:
    ///   - prompt: The prompt shown on the terminal (not shown when reading piped input).
    ///   - confirmation: A second prompt; on a terminal the secret must be typed twice and
    ///     match (three tries). Ignored for piped input.
    /// - Returns: The secret, or `nil` when none could be read (end of input, or the two
    ///   entries never matched).
    /// - Throws: ``CommandFailure`` when the secret is longer than ``StandardInput/lineLimit``.
    func readSecret(prompt: String, confirmation: String? = nil) throws -> [UInt8]? {
        guard Console.inputIsTerminal else { return try input.readLine() }
        guard let confirmation else { return try Self.readFromTerminal(prompt: prompt) }
        for _ in 0..<3 {
            guard let first = try Self.readFromTerminal(prompt: prompt) else { return nil }
            guard let second = try Self.readFromTerminal(prompt: confirmation) else { return nil }
            if first == second { return first }
            Console.err("passwords don't match\n")
        }
        return nil
    }

    /// Reads a secret on the controlling terminal only (never from piped input); `nil` when
    /// there is no terminal.
    func readFromTerminalOnly(prompt: String) throws -> [UInt8]? {
        guard Console.inputIsTerminal else { return nil }
        return try Self.readFromTerminal(prompt: prompt)
    }

    /// Like `getpass(3)`: prompts on `/dev/tty` (standard error if it cannot be opened), turns
    /// echo off while reading one line, and restores the terminal even on Ctrl-C.
    /// - Throws: ``CommandFailure`` when the line is longer than ``StandardInput/lineLimit``
    ///   (what was typed past it is not read).
    static func readFromTerminal(prompt: String) throws -> [UInt8]? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        let inFD = tty >= 0 ? tty : 0
        let outFD = tty >= 0 ? tty : 2
        defer { if tty >= 0 { close(tty) } }
        var saved = termios()
        let canChangeEcho = tcgetattr(inFD, &saved) == 0
        if canChangeEcho {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO | ECHONL)
            EchoGuard.arm(fd: inFD, saved: saved)
            _ = tcsetattr(inFD, TCSAFLUSH, &silent)
        }
        // The prompt comes after echo is off (TCSAFLUSH drops input typed before it), as in getpass(3).
        Console.emit(Array(prompt.utf8), to: outFD)
        defer {
            if canChangeEcho {
                _ = tcsetattr(inFD, TCSAFLUSH, &saved)
                EchoGuard.disarm()
                Console.emit([0x0A], to: outFD)
            }
        }
        // A terminal returns at most one line per read, so reading by blocks takes nothing
        // past the line.
        let terminal = StandardInput(fd: inFD)
        return try terminal.readLine()
    }
}

/// Restores terminal echo if the process is interrupted while a secret is being typed.
private enum EchoGuard {
    nonisolated(unsafe) private static var fd: Int32 = -1
    nonisolated(unsafe) private static var saved = termios()

    static func arm(fd: Int32, saved: termios) {
        Self.saved = saved
        Self.fd = fd
        for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP] { _ = signal(number, EchoGuard.handler) }
    }

    static func disarm() {
        fd = -1
        for number in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP] { _ = signal(number, SIG_DFL) }
    }

    private static let handler: @convention(c) (Int32) -> Void = { number in
        if EchoGuard.fd >= 0 { _ = tcsetattr(EchoGuard.fd, TCSAFLUSH, &EchoGuard.saved) }
        _ = signal(number, SIG_DFL)
        _ = raise(number)
    }
}
