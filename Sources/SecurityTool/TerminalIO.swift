import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Unbuffered writes to standard output and standard error, byte-exact.
enum Console {
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
    static func out(_ text: String) { emit(Array(text.utf8), to: 1) }
    /// Writes bytes to standard output.
    static func out(_ bytes: [UInt8]) { emit(bytes, to: 1) }
    /// Writes text to standard error.
    static func err(_ text: String) { emit(Array(text.utf8), to: 2) }
    /// Writes bytes to standard error.
    static func err(_ bytes: [UInt8]) { emit(bytes, to: 2) }

    /// Whether standard input is a terminal.
    static var inputIsTerminal: Bool { isatty(0) == 1 }
}

/// Standard input read one line at a time, without reading past the line it returns, so that
/// interactive mode (`security -i`) and secret prompts can share it.
final class StandardInput {
    private var buffer: [UInt8] = []
    private var atEnd = false

    /// Reads one line: the bytes before the next newline (the newline is dropped; nothing else
    /// is). Returns `nil` at the end of input when no byte was read.
    func readLine() -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line
            }
            if atEnd {
                if buffer.isEmpty { return nil }
                defer { buffer.removeAll() }
                return buffer
            }
            // One byte at a time: whatever follows the line stays unread for the next reader
            // (a child process, or the shell that runs us).
            var byte: UInt8 = 0
            let count = read(0, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {
                atEnd = true
            } else {
                buffer.append(byte)
            }
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
    func readSecret(prompt: String, confirmation: String? = nil) -> [UInt8]? {
        guard Console.inputIsTerminal else { return input.readLine() }
        guard let confirmation else { return Self.readFromTerminal(prompt: prompt) }
        for _ in 0..<3 {
            guard let first = Self.readFromTerminal(prompt: prompt) else { return nil }
            guard let second = Self.readFromTerminal(prompt: confirmation) else { return nil }
            if first == second { return first }
            Console.err("passwords don't match\n")
        }
        return nil
    }

    /// Reads a secret on the controlling terminal only (never from piped input); `nil` when
    /// there is no terminal.
    func readFromTerminalOnly(prompt: String) -> [UInt8]? {
        guard Console.inputIsTerminal else { return nil }
        return Self.readFromTerminal(prompt: prompt)
    }

    /// Like `getpass(3)`: prompts on `/dev/tty` (standard error if it cannot be opened), turns
    /// echo off while reading one line, and restores the terminal even on Ctrl-C.
    static func readFromTerminal(prompt: String) -> [UInt8]? {
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
        var line: [UInt8] = []
        while true {
            var byte: UInt8 = 0
            let count = read(inFD, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return line.isEmpty ? nil : line }
            if byte == 0x0A { return line }
            line.append(byte)
        }
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
