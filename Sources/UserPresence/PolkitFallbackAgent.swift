import DBusWire
import Foundation
import KeychainLibc

/// A question polkit's PAM stack asks the person, for an agent of the keychain's own
/// (``PolkitAuthority/check(_:interactive:environment:timeout:answering:)``).
public struct PolkitQuestion: Sendable, Equatable {
    /// What PAM asks ("Password: "), never a secret.
    public var prompt: String
    /// Whether the answer may be shown as it is typed (PAM's `PAM_PROMPT_ECHO_ON`).
    public var echoes: Bool
    /// The account the person proves to be.
    public var user: String
    /// What PAM or the previous try said before this question ("Authentication failure"), if
    /// anything.
    public var message: String?
    /// What polkit says the authentication is for: the action's message, from its policy file.
    public var purpose: String

    /// A question from its parts.
    public init(prompt: String, echoes: Bool, user: String, message: String?, purpose: String = "") {
        self.prompt = prompt
        self.echoes = echoes
        self.user = user
        self.message = message
        self.purpose = purpose
    }
}

/// The person's answer to a ``PolkitQuestion``: what they typed, or `nil` when they cancelled.
/// Called on the thread that checks, which it may block.
public typealias PolkitAnswering = @Sendable (PolkitQuestion) -> Data?

/// polkit's authentication agent protocol (`org.freedesktop.PolicyKit1.AuthenticationAgent`)
/// spoken for one check, for one process that no agent asks for (a program in a terminal, an
/// `ssh` of an SSH agent's caller): the agent is registered for that process alone, on the
/// connection that then checks; polkit calls `BeginAuthentication` on it, and the person's
/// answers go to polkit's own setuid helper (`polkit-agent-helper-1`, which runs the `polkit-1`
/// PAM stack and tells polkit the outcome), as every polkit agent gives them; closing the
/// connection unregisters it.
///
/// Only polkit may call it (the caller must be the name that answered the registration), only
/// for ``PolkitAuthority/authenticateAction``, and only to authenticate the process's own user:
/// the agent never proves anyone else.
enum PolkitFallbackAgent {
    static let objectPath = "/org/keychainlinux/PolkitAgent"
    static let interface = "org.freedesktop.PolicyKit1.AuthenticationAgent"
    /// Where Debian's `polkitd` installs the helper.
    static let helper = "/usr/lib/polkit-1/polkit-agent-helper-1"
    /// Tries of the person's password in one authentication, as a desktop dialog gives.
    static let tries = 3
    /// PAM's longest answer (`PAM_MAX_RESP_SIZE`), the helper's line, newline included.
    static let longestAnswer = 511

    /// Registers for `process` on `connection`, checks, and answers polkit's calls until the
    /// check's answer comes.
    static func check(
        _ subject: DBusValue, _ process: ProcessSubject, on connection: inout DBusBlockingConnection,
        answering: PolkitAnswering
    ) throws -> PolkitAuthority.Outcome {
        let polkit = try register(for: subject, on: &connection)
        let sent = try connection.send(PolkitAuthority.checkCall(subject, interactive: true))
        while true {
            let message = try connection.receive()
            if message.replySerial == sent, message.type == .methodReturn || message.type == .error {
                guard message.type == .methodReturn else {
                    throw UserPresenceError.unavailable("polkit refused the check: \(message.errorName ?? "")")
                }
                return try PolkitAuthority.outcome(of: message.body)
            }
            guard message.type == .methodCall else { continue }
            let reply = reply(to: message, polkit: polkit, process, answering)
            try connection.send(reply)
        }
    }

    /// Registers the agent for the process `subject` names, on `connection`: as a fallback, the
    /// session's own agent (the desktop's dialog) asks instead when there is one.
    /// - Returns: The bus name of polkit, the only one whose calls are answered.
    /// - Throws: ``UserPresenceError`` when polkit refuses.
    static func register(
        for subject: DBusValue, on connection: inout DBusBlockingConnection, fallback: Bool = false
    ) throws -> String {
        let options: [DBusDictEntry] = fallback ? [DBusDictEntry(.string("fallback"), .variant(.boolean(true)))] : []
        let registered = try connection.call(
            .methodCall(
                path: PolkitAuthority.path, interface: PolkitAuthority.interface,
                member: "RegisterAuthenticationAgentWithOptions", destination: PolkitAuthority.busName,
                body: [
                    subject, .string("C"), .string(objectPath), .dictionary(key: .string, value: .variant, options),
                ]))
        DBusSocket.closeAll(registered.descriptors)
        guard registered.message.type == .methodReturn, let polkit = registered.message.sender else {
            throw UserPresenceError.unavailable(
                "polkit refused an agent for the process: \(registered.message.errorName ?? "no reply")")
        }
        return polkit
    }

    /// The reply to a call on this connection: polkit's (from `polkit`, the name that answered
    /// the registration, to the agent's object) answered, anyone else's refused.
    static func reply(
        to message: DBusMessage, polkit: String, _ process: ProcessSubject, _ answering: PolkitAnswering
    ) -> DBusMessage {
        guard message.sender == polkit, message.path == objectPath, message.interface == interface else {
            return .error(to: message, name: "org.freedesktop.DBus.Error.AccessDenied", message: "only polkit may call")
        }
        return answer(message, process, answering)
    }

    /// The reply to one of polkit's calls.
    static func answer(_ call: DBusMessage, _ process: ProcessSubject, _ answering: PolkitAnswering) -> DBusMessage {
        switch call.member {
        case "BeginAuthentication":
            switch begin(call.body, process, answering) {
            case .success: return .methodReturn(to: call)
            case .failure(let reason):
                return .error(to: call, name: "org.freedesktop.PolicyKit1.Error.Failed", message: reason)
            case .cancelled:
                return .error(to: call, name: "org.freedesktop.PolicyKit1.Error.Cancelled", message: "cancelled")
            }
        case "CancelAuthentication":
            // Nothing runs between calls: each authentication ends before the next message is read.
            return .methodReturn(to: call)
        default:
            return .error(to: call, name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no such method")
        }
    }

    enum Result: Equatable {
        case success
        case failure(String)
        case cancelled
    }

    /// `BeginAuthentication(s action_id, s message, s icon_name, a{ss} details, s cookie,
    /// a(sa{sv}) identities)`: the process's user authenticates, up to ``tries`` times.
    static func begin(_ body: [DBusValue], _ process: ProcessSubject, _ answering: PolkitAnswering) -> Result {
        guard body.count == 6, case .string(let action) = body[0], case .string(let purpose) = body[1],
            case .string(let cookie) = body[4],
            case .array(_, let identities) = body[5]
        else { return .failure("malformed BeginAuthentication") }
        guard action == PolkitAuthority.authenticateAction else { return .failure("not the keychain's action") }
        guard identities.contains(where: { uid(of: $0) == process.uid }), let user = userName(process.uid) else {
            return .failure("the process's own user is not among the identities")
        }
        guard !cookie.isEmpty, !cookie.utf8.contains(where: { $0 == 10 || $0 == 0 }) else {
            return .failure("malformed cookie")
        }
        var message: String?
        for _ in 0..<tries {
            switch PolkitHelperRun.run(user: user, cookie: cookie, purpose: purpose, previous: message, answering) {
            case .success: return .success
            case .cancelled: return .cancelled
            case .failure(let said): message = said
            }
        }
        return .failure("authentication failed")
    }

    /// The uid of a `unix-user` identity, `(sa{sv})`.
    static func uid(of identity: DBusValue) -> UInt32? {
        guard case .structure(let fields) = identity, fields.count == 2, fields[0] == .string("unix-user"),
            case .dictionary(_, _, let entries) = fields[1],
            let entry = entries.first(where: { $0.key == .string("uid") })
        else { return nil }
        switch entry.value {
        case .variant(.uint32(let uid)): return uid
        case .variant(.int32(let uid)) where uid >= 0: return UInt32(uid)
        default: return nil
        }
    }

    /// The account name of `uid`, from the password database.
    static func userName(_ uid: UInt32) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name
        else { return nil }
        return String(cString: name)
    }
}

/// One run of polkit's helper: the cookie, then each PAM question's answer, line by line.
enum PolkitHelperRun {
    static func run(
        user: String, cookie: String, purpose: String, previous: String?, _ answering: PolkitAnswering
    ) -> PolkitFallbackAgent.Result {
        guard access(PolkitFallbackAgent.helper, X_OK) == 0,
            let helper = try? PipedProcess(
                arguments: [PolkitFallbackAgent.helper, user], environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        else { return .failure("polkit's helper cannot be started") }
        defer { helper.finish() }
        var lines = LineReader(descriptor: helper.output)
        guard write(Array((cookie + "\n").utf8), to: helper.input) else { return .failure("the helper left") }
        var message = previous
        while let line = lines.next() {
            let (kind, text) = split(line)
            switch kind {
            case "PAM_PROMPT_ECHO_OFF", "PAM_PROMPT_ECHO_ON":
                let question = PolkitQuestion(
                    prompt: text, echoes: kind == "PAM_PROMPT_ECHO_ON", user: user, message: message,
                    purpose: purpose)
                message = nil
                guard var answer = answering(question) else { return .cancelled }
                defer { answer.resetBytes(in: 0..<answer.count) }
                guard answer.count < PolkitFallbackAgent.longestAnswer, !answer.contains(10), !answer.contains(0) else {
                    return .failure("the answer cannot be given to PAM")
                }
                var bytes = [UInt8](repeating: 10, count: answer.count + 1)
                bytes.withUnsafeMutableBytes { _ = answer.copyBytes(to: $0) }
                defer { bytes.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
                guard write(bytes, to: helper.input) else { return .failure("the helper left") }
            case "PAM_ERROR_MSG", "PAM_TEXT_INFO":
                message = text
            case "SUCCESS":
                return .success
            case "FAILURE":
                return .failure(message ?? "Authentication failed. Try again.")
            default:
                return .failure("the helper said what its protocol does not")
            }
        }
        return .failure("the helper left")
    }

    /// A line's kind and its text, unescaped as the helper escapes it (`g_strescape`).
    static func split(_ line: [UInt8]) -> (String, String) {
        guard let space = line.firstIndex(of: 32) else { return (String(decoding: line, as: UTF8.self), "") }
        return (String(decoding: line[..<space], as: UTF8.self), unescape(line[(space + 1)...]))
    }

    /// `g_strcompress`: C escapes (`\n`, `\t`, `\\`, `\"`…) and octal bytes back to what they were.
    static func unescape(_ escaped: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        var index = escaped.startIndex
        let simple: [UInt8: UInt8] = [98: 8, 102: 12, 110: 10, 114: 13, 116: 9, 118: 11]
        while index < escaped.endIndex {
            let byte = escaped[index]
            index += 1
            guard byte == 92, index < escaped.endIndex else {
                bytes.append(byte)
                continue
            }
            let next = escaped[index]
            if (48...55).contains(next) {
                var value = 0
                var digits = 0
                while digits < 3, index < escaped.endIndex, (48...55).contains(escaped[index]) {
                    value = value * 8 + Int(escaped[index] - 48)
                    index += 1
                    digits += 1
                }
                bytes.append(UInt8(truncatingIfNeeded: value))
            } else {
                bytes.append(simple[next] ?? next)
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { writeAll($0, to: descriptor) }
    }

    /// Lines read from a pipe, each at most 4 KiB, within ten minutes of the first.
    struct LineReader {
        let descriptor: Int32
        var buffered: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(600)

        init(descriptor: Int32) { self.descriptor = descriptor }

        mutating func next() -> [UInt8]? {
            while true {
                if let newline = buffered.firstIndex(of: 10) {
                    let line = Array(buffered[..<newline])
                    buffered.removeSubrange(...newline)
                    return line
                }
                guard buffered.count < 4096, ContinuousClock.now < deadline else { return nil }
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 1000)
                if ready < 0 && errno != EINTR { return nil }
                guard ready > 0 else { continue }
                var chunk = [UInt8](repeating: 0, count: 1024)
                let count = read(descriptor, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return nil }
                buffered += chunk[..<count]
            }
        }
    }
}
