import KeychainCore
import KeychainLibc

/// The error thrown by every part of the agent's security core.
///
/// An `AgentError` carries a ``Code`` (an open set, like ``KeychainModel/KeychainError/Code``), a
/// message that names the path or process involved and what to do about it, and the `errno`
/// behind a system-call failure. Where it meets the keychain it becomes an `OSStatus`:
/// ``osStatus`` (and ``keychainError``) map every code in one place, so a group outside the
/// caller's set is `errSecMissingEntitlement` (-34018) as on iOS.
///
/// Messages never contain secret bytes, passwords or attribute values.
public struct AgentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var code: Code
    /// A human-readable explanation, free of secrets; for set-up problems it says what to fix.
    public var message: String
    /// The `errno` of the failed system call, if any.
    public var errno: Int32?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The failure code.
    ///   - message: An explanation that contains no secret.
    ///   - errno: The `errno` of the failed system call, if any.
    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// The Apple `OSStatus` a keychain client receives for this failure.
    public var osStatus: Int32 { code.osStatus }

    /// The same failure as a ``KeychainModel/KeychainError`` (same `OSStatus`, same message).
    public var keychainError: KeychainError {
        KeychainError(
            KeychainError.Code(rawValue: osStatus), message,
            isSetupProblem: code == .unsafeLocation || code == .alreadyRunning)
    }

    /// The code, the message and the `errno` text; never a secret.
    public var description: String {
        var text = "AgentError(\(code)): \(message)"
        if let errno { text += " [\(String(cString: strerror(errno)))]" }
        return text
    }

    /// An agent failure code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// A stable name for the code.
        public var rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The caller asked for an access group outside its set, or has no groups at all.
        public static let missingEntitlement = Code(rawValue: "missingEntitlement")
        /// The peer runs as another user (or as root where root is not accepted).
        public static let peerRefused = Code(rawValue: "peerRefused")
        /// The peer process exited, or is no longer the process that connected.
        public static let peerGone = Code(rawValue: "peerGone")
        /// The socket directory or socket file is not the user's or is open to others.
        public static let unsafeLocation = Code(rawValue: "unsafeLocation")
        /// Another agent holds the lock or answers on the socket.
        public static let alreadyRunning = Code(rawValue: "alreadyRunning")
        /// Too many failed unlocks: wait before the next attempt.
        public static let throttled = Code(rawValue: "throttled")
        /// A manifest or `.flatpak-info` file could not be used.
        public static let invalidManifest = Code(rawValue: "invalidManifest")
        /// A system call failed.
        public static let system = Code(rawValue: "system")

        /// The name of the code.
        public var description: String { rawValue }

        /// The `OSStatus` for this code: the one choke point of the mapping.
        public var osStatus: Int32 {
            switch self {
            case .missingEntitlement: return KeychainError.Code.missingEntitlement.rawValue
            case .peerRefused, .peerGone, .throttled:
                return KeychainError.Code.interactionNotAllowed.rawValue
            case .unsafeLocation, .alreadyRunning, .invalidManifest:
                return KeychainError.Code.notAvailable.rawValue
            default: return KeychainError.Code.io.rawValue
            }
        }
    }

    /// An error for the failed system call `call` on `subject`, with the current `errno`.
    static func system(_ call: String, _ subject: String, errno code: Int32 = Glibc.errno) -> AgentError {
        AgentError(.system, "\(call)(\(subject)) failed", errno: code)
    }
}

extension AgentError: OSStatusConvertible {}
