import CKeychainAgent
import DBusWire
import Foundation
import KeychainLibc
import Synchronization

/// The keychain's own polkit authentication agent on this process's terminal, registered for
/// this process alone while it waits for a question of its own (a read that asks, an
/// `LAContext` evaluation), as `pkexec` starts `pkttyagent`: a program run in a terminal (over
/// SSH, on a console, in a desktop's terminal with no agent of the desktop's) is then asked for
/// the password where its user is looking, like `sudo`.
///
/// polkit's message and the account come first, then each of PAM's questions, answered with
/// echo off; Ctrl-D cancels (`errSecUserCanceled`, `LAError.userCancel`), where `pkttyagent`
/// counted it as a failed password. The answers go to polkit's own setuid helper and nowhere
/// else (``PolkitFallbackAgent``). In a login session (`XDG_SESSION_ID`) the agent is registered
/// as a fallback, so the session's own agent (the desktop's dialog) asks when there is one;
/// outside one (a service, a container without logind) polkit would never use a fallback
/// agent, so it is registered for this process alone.
public final class TerminalAgent: Sendable {
    /// Readable once the agent is to stop: ends its wait for polkit and any question it asks.
    private let stopPipe: (read: Int32, write: Int32)
    /// A second descriptor of the agent's bus socket, shut down to wake the agent's thread.
    private let waker: Int32
    /// Signalled when the agent's thread has ended.
    private let finished = DispatchSemaphore(value: 0)

    private init(stopPipe: (Int32, Int32), waker: Int32) {
        self.stopPipe = stopPipe
        self.waker = waker
    }

    /// Whether this process has a controlling terminal to ask on.
    public static var hasTerminal: Bool {
        let descriptor = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        close(descriptor)
        return true
    }

    /// Registers the agent for `subject` (this process) with polkit, on a connection of its own
    /// to the system bus, and answers polkit on a thread of its own until ``stop()``.
    /// - Returns: The running agent; `nil` when there is no terminal, no polkit, or polkit
    ///   refuses the agent (then polkit asks with whatever agent it has, or with none).
    public static func start(
        for subject: ProcessSubject, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> TerminalAgent? {
        guard hasTerminal, let addresses = try? DBusAddress.systemBus(environment: environment),
            var connection = try? DBusBlockingConnection.connect(to: addresses, timeout: .seconds(10))
        else { return nil }
        let inSession = !(environment["XDG_SESSION_ID"] ?? "").isEmpty
        let polkit: String
        do {
            polkit = try PolkitFallbackAgent.register(
                for: PolkitAuthority.subjectValue(subject), on: &connection, fallback: inSession)
        } catch {
            connection.close()
            return nil
        }
        var pipe: [Int32] = [-1, -1]
        guard ck_pipe_cloexec(&pipe) == 0 else {
            connection.close()
            return nil
        }
        let waker = connection.duplicateSocket()
        let agent = TerminalAgent(stopPipe: (pipe[0], pipe[1]), waker: waker)
        let answering = Self.answering(stop: pipe[0])
        let registered = connection
        let thread = Thread { [finished = agent.finished, stop = pipe[0]] in
            serve(registered, polkit: polkit, subject, answering, stop: stop)
            finished.signal()
        }
        thread.name = "keychain polkit agent"
        thread.start()
        return agent
    }

    /// Answers polkit's calls on `connection` until it closes or `stop` is readable, then closes it.
    private static func serve(
        _ connection: DBusBlockingConnection, polkit: String, _ subject: ProcessSubject,
        _ answering: @escaping PolkitAnswering, stop: Int32
    ) {
        var connection = connection
        defer { connection.close() }
        while !isReadable(stop) {
            let message: DBusMessage
            do {
                message = try connection.receive()
            } catch let error as DBusError where error.code == .timedOut {
                continue
            } catch {
                return
            }
            guard message.type == .methodCall else { continue }
            let reply = PolkitFallbackAgent.reply(to: message, polkit: polkit, subject, answering)
            guard (try? connection.send(reply)) != nil else { return }
        }
    }

    /// Stops the agent: a question it is asking ends as cancelled, polkit's connection closes
    /// (which unregisters it), and its thread is waited for.
    public func stop() {
        _ = [UInt8(1)].withUnsafeBytes { writeAll($0, to: stopPipe.write) }
        if waker >= 0 { shutdown(waker, Int32(SHUT_RDWR)) }
        finished.wait()
        if waker >= 0 { close(waker) }
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// PAM's questions asked on this process's terminal: polkit's message and the account
    /// before the first, what the previous try said before a later one; a question ends
    /// unanswered (a cancel) at Ctrl-D or once `stop` is readable.
    static func answering(stop: Int32?) -> PolkitAnswering {
        let introduced = Mutex(false)
        return { question in
            let first = introduced.withLock { introduced in
                defer { introduced = true }
                return !introduced
            }
            var lines = first ? "\(question.purpose)\nAuthenticating as: \(question.user)\n" : ""
            if let message = question.message { lines += "\(message)\n" }
            if !lines.isEmpty { TerminalHint.write(lines) }
            guard var typed = TerminalPrompt.readSecret(prompt: question.prompt, echo: question.echoes, stop: stop)
            else { return nil }
            defer { typed.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
            return Data(typed)
        }
    }

    /// Whether `descriptor` has input, without waiting.
    private static func isReadable(_ descriptor: Int32) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0
    }
}
