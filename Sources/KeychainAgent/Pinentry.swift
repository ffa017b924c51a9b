import CKeychainAgent
import Foundation
import KeychainCore
import KeychainLibc
import UserPresence

/// Asks a person for a keychain's password through a pinentry program, as gpg-agent does: the
/// agent starts it, speaks its Assuan protocol over a pipe, and reads the password back, so the
/// password never crosses D-Bus, never appears in an argument or the environment, and stays in
/// this process for the unlock alone
/// ([pinentry's protocol](https://www.gnupg.org/documentation/manuals/assuan/Client-requests.html)).
///
/// Which program: `KEYCHAIN_PINENTRY` (a path; `off` for none), else `/usr/bin/pinentry`
/// (Debian's alternative: curses on a terminal, GNOME's dialog on a desktop). It is shown on the
/// caller's terminal when the caller has one (pinentry's `--ttyname`), else on the agent's
/// display (`DISPLAY` or `WAYLAND_DISPLAY`); with neither, there is no one to ask. A dialog
/// nobody answers is taken away after ``answerTimeout`` (`KEYCHAIN_PINENTRY_TIMEOUT`, in seconds;
/// five minutes, as `sudo`'s `passwd_timeout`), as if cancelled, so that a question left open
/// does not hold its caller, and the callers queued behind it, forever.
///
/// ```swift
/// if let pinentry = Pinentry(environment: ProcessInfo.processInfo.environment) {
///     let dialog = try pinentry.open(on: PinentryScreen(callerPID: pid), environment: environment)
///     defer { dialog.close() }
///     if let password = try dialog.askPassword(description: "Unlock \"work\"") { … }
/// }
/// ```
public struct Pinentry: Sendable {
    /// The environment variable that chooses the program (`off`: none).
    public static let variable = "KEYCHAIN_PINENTRY"

    /// The environment variable that sets ``answerTimeout``, in whole seconds.
    public static let timeoutVariable = "KEYCHAIN_PINENTRY_TIMEOUT"

    /// The pinentry program.
    public let program: String
    /// The longest a dialog waits for the person; then it is taken away as if cancelled.
    public let answerTimeout: Duration

    /// The program `environment` chooses, when it exists; `nil` for none.
    public init?(environment: [String: String]) {
        let chosen = environment[Self.variable] ?? "/usr/bin/pinentry"
        guard chosen != "off", chosen.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: chosen) else {
            return nil
        }
        program = chosen
        let seconds = environment[Self.timeoutVariable].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
        answerTimeout = .seconds(seconds ?? 300)
    }

    /// Starts the program on `screen`, with what of `environment` a dialog needs (display,
    /// session bus, language); `nil` when there is neither a terminal nor a display.
    /// - Throws: ``PinentryError`` when it cannot be started or does not greet.
    public func open(on screen: PinentryScreen, environment: [String: String]) throws -> PinentryDialog? {
        var arguments = [program]
        var childEnvironment = environment.filter {
            [
                "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "LANG",
                "LC_ALL",
                "LC_MESSAGES", "HOME", "PATH",
            ].contains($0.key)
        }
        if let terminal = screen.terminal {
            arguments += ["--ttyname", terminal, "--ttytype", screen.terminalType]
            // A terminal is there: the dialog goes on it, not on a desktop the caller may not see.
            childEnvironment["DISPLAY"] = nil
            childEnvironment["WAYLAND_DISPLAY"] = nil
        } else if environment["DISPLAY"] == nil && environment["WAYLAND_DISPLAY"] == nil {
            return nil
        }
        return try PinentryDialog(arguments: arguments, environment: childEnvironment, answerTimeout: answerTimeout)
    }
}

/// Where a pinentry dialog is shown: the terminal of the process that asked, when it has one.
public struct PinentryScreen: Sendable, Equatable {
    /// The caller's terminal device (`/dev/pts/3`), owned by this user.
    public var terminal: String?
    /// The caller's `TERM`.
    public var terminalType: String

    public init(terminal: String?, terminalType: String = "xterm") {
        self.terminal = terminal
        self.terminalType = terminalType
    }

    /// The terminal of process `pid`: its standard input, output or error when one of them is
    /// a terminal device owned by this user, with its `TERM`.
    public init(callerPID pid: Int32) {
        var found: String?
        for descriptor in 0...2 {
            guard
                let target = try? FileManager.default.destinationOfSymbolicLink(
                    atPath: "/proc/\(pid)/fd/\(descriptor)"),
                target.hasPrefix("/dev/pts/") || target.hasPrefix("/dev/tty")
            else { continue }
            var status = stat()
            guard stat(target, &status) == 0, status.st_uid == getuid(), (status.st_mode & S_IFMT) == S_IFCHR else {
                continue
            }
            found = target
            break
        }
        let environ = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))) ?? Data()
        let variables = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        let term = variables.first { $0.hasPrefix("TERM=") }.map { String($0.dropFirst(5)) }
        self.init(terminal: found, terminalType: term.flatMap { $0.isEmpty ? nil : $0 } ?? "xterm")
        hasDisplay = variables.contains { $0.hasPrefix("DISPLAY=") || $0.hasPrefix("WAYLAND_DISPLAY=") }
        desktop = variables.first { $0.hasPrefix("XDG_CURRENT_DESKTOP=") }.map { String($0.dropFirst(20)) }
    }

    /// The screen of process `pid`, as ``init(callerPID:)`` finds it, without its terminal when
    /// it is `sandboxed`: a sandbox names its terminal in its own mount namespace, where a path
    /// may be another terminal than here, so a sandboxed caller is asked on the display only.
    public init(callerPID pid: Int32, sandboxed: Bool) {
        self.init(callerPID: pid)
        if sandboxed { terminal = nil }
    }

    /// The caller's desktop (`XDG_CURRENT_DESKTOP` in its environment: `KDE`, `GNOME`,
    /// `ubuntu:GNOME`), which decides whose prompter asks.
    public var desktop: String?

    /// Whether the caller runs with a display (`DISPLAY` or `WAYLAND_DISPLAY` in its environment).
    public var hasDisplay = false

    /// Whether the caller is a terminal's program with no display (logged in over SSH, on a
    /// console): it is asked on its terminal rather than by the desktop's prompter.
    public var isTerminalOnly: Bool { terminal != nil && !hasDisplay }
}

/// Why a pinentry dialog failed (never with the password in it).
public struct PinentryError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// One running pinentry program: ask, ask again after a wrong password, close.
public final class PinentryDialog: @unchecked Sendable {
    private let pid: pid_t
    private let input: Int32
    private let output: Int32
    private let answerTimeout: Duration
    private var buffered: [UInt8] = []
    private let state = NSLock()
    private var closed = false
    private var cancelled = false

    init(arguments: [String], environment: [String: String], answerTimeout: Duration) throws {
        self.answerTimeout = answerTimeout
        // SIGTERM at its default action: it is how ``cancel()`` takes the dialog away.
        let child: PipedProcess
        do {
            child = try PipedProcess(arguments: arguments, environment: environment)
        } catch {
            throw PinentryError(description: "\(arguments[0]) cannot be started (\(error))")
        }
        pid = child.pid
        input = child.input
        output = child.output
        do {
            _ = try response()  // "OK Pleased to meet you"
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Asks for a password with `description` (and `error` above it after a wrong one).
    /// Blocks until the person answers: call it on a thread of its own.
    /// - Returns: The password's bytes, or `nil` when the person cancelled or the dialog was
    ///   closed.
    /// - Throws: ``PinentryError`` when the program fails.
    public func askPassword(
        title: String = "Keychain", description: String, prompt: String = "Password:", error: String? = nil
    ) throws -> Data? {
        do {
            try command("SETTITLE", title)
            try command("SETDESC", description)
            try command("SETPROMPT", prompt)
            if let error { try command("SETERROR", error) }
            try send("GETPIN\n")
            return try response()
        } catch let failure as PinentryError where failure.description.hasPrefix("ERR ") {
            return nil  // cancelled (ERR 83886179), or timed out
        } catch {
            if isCancelled { return nil }
            throw error
        }
    }

    /// A button of a ``confirm(title:description:ok:notOK:cancel:)`` dialog.
    public enum Button: Sendable, Hashable {
        /// The first button (Enter picks it).
        case ok
        /// The middle button, when there is one.
        case notOK
        /// The last button, Escape, or a closed dialog.
        case cancel
    }

    /// Shows `description` with two or three buttons (`notOK` in the middle, when given) and
    /// returns the one the person chose. Blocks until they answer: call it on a thread of its
    /// own.
    /// - Throws: ``PinentryError`` when the program fails.
    public func confirm(title: String = "Keychain", description: String, ok: String, notOK: String?, cancel: String)
        throws -> Button
    {
        do {
            try command("SETTITLE", title)
            try command("SETDESC", description)
            try command("SETOK", ok)
            if let notOK { try command("SETNOTOK", notOK) }
            try command("SETCANCEL", cancel)
            try send("CONFIRM\n")
            _ = try response()
            return .ok
        } catch let failure as PinentryError where failure.description.hasPrefix("ERR ") {
            // GPG_ERR_NOT_CONFIRMED (114 in the pinentry source, 83886194 with it) is the middle
            // button; cancel (83886179), a time-out or anything else counts as the last.
            return failure.description.hasPrefix("ERR 83886194") ? .notOK : .cancel
        } catch {
            if isCancelled { return .cancel }
            throw error
        }
    }

    /// Takes the dialog off the screen from any thread: the program is ended, and an
    /// ``askPassword(title:description:error:)`` waiting for it returns `nil`.
    public func cancel() {
        state.withLock {
            guard !closed else { return }
            cancelled = true
            kill(pid, SIGTERM)
        }
    }

    /// Ends the program and releases its pipes; by the dialog's owner, once no
    /// ``askPassword(title:description:error:)`` runs. Twice does nothing.
    public func close() {
        let first = state.withLock {
            defer { closed = true }
            if !closed { kill(pid, SIGTERM) }
            return !closed
        }
        guard first else { return }
        Glibc.close(input)
        Glibc.close(output)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    private var isCancelled: Bool { state.withLock { cancelled } }

    private func command(_ name: String, _ text: String) throws {
        try send(name + " " + Self.escape(text) + "\n")
        _ = try response()
    }

    private func send(_ line: String) throws {
        var bytes = Array(line.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw PinentryError(description: "pinentry closed its input") }
            sent += count
        }
        bytes.removeAll()
    }

    /// Reads up to `OK`; returns the data lines' bytes (percent-decoded), `nil` when none.
    /// - Throws: ``PinentryError`` `ERR …` for pinentry's error, and when nothing comes within
    ///   ``Pinentry/answerTimeout``: then the dialog is taken away, as ``cancel()`` does.
    private func response() throws -> Data? {
        var data: Data?
        let deadline = ContinuousClock.now + answerTimeout
        while true {
            var line = try readLine(before: deadline)
            defer { ck_explicit_bzero(&line, line.count) }
            if line.starts(with: Array("OK".utf8)) { return data }
            if line.starts(with: Array("ERR".utf8)) {
                throw PinentryError(description: "ERR " + String(decoding: line.dropFirst(4).prefix(80), as: UTF8.self))
            }
            if line.starts(with: Array("D ".utf8)) {
                var decoded = Self.unescape(line.dropFirst(2))
                if data == nil { data = Data() }
                data?.append(contentsOf: decoded)
                ck_explicit_bzero(&decoded, decoded.count)
            }
            // "S" status and "#" comment lines carry nothing we need; "INQUIRE" is never asked
            // for by the commands sent.
            if line.starts(with: Array("INQUIRE".utf8)) { try send("CAN\n") }
        }
    }

    private func readLine(before deadline: ContinuousClock.Instant) throws -> [UInt8] {
        while true {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffered[..<end])
                for index in 0...end { buffered[index] = 0 }
                buffered.removeFirst(end + 1)
                return line
            }
            guard try waitForOutput(until: deadline) else {
                cancel()
                throw PinentryError(description: "ERR nobody answered the dialog in time")
            }
            var chunk = [UInt8](repeating: 0, count: 1024)
            let count = read(output, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw PinentryError(description: "pinentry ended") }
            buffered += chunk[..<count]
            ck_explicit_bzero(&chunk, chunk.count)
            guard buffered.count < 64 << 10 else { throw PinentryError(description: "pinentry sent too long a line") }
        }
    }

    /// Waits until pinentry has written something (or ended), at most until `deadline`.
    /// - Returns: `false` when the deadline passed first.
    private func waitForOutput(until deadline: ContinuousClock.Instant) throws -> Bool {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { throw PinentryError(description: "pinentry cannot be read") }
        }
    }

    /// Assuan's escaping of a command's text: `%`, CR and LF as `%XX`.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": escaped += "%25"
            case "\r": escaped += "%0D"
            case "\n": escaped += "%0A"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// The bytes of a data line, `%XX` decoded.
    static func unescape<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), let high = bytes.index(index, offsetBy: 1, limitedBy: bytes.endIndex),
                high != bytes.endIndex, let low = bytes.index(high, offsetBy: 1, limitedBy: bytes.endIndex),
                low != bytes.endIndex,
                let value = UInt8(String(decoding: [bytes[high], bytes[low]], as: UTF8.self), radix: 16)
            {
                decoded.append(value)
                index = bytes.index(after: low)
            } else {
                decoded.append(byte)
                index = bytes.index(after: index)
            }
        }
        return decoded
    }
}
