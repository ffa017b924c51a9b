import KeychainAgentProtocol
import KeychainCore
import KeychainLibc

/// Where the agent's socket lives, and the rules for its directory.
///
/// - `$KEYCHAIN_AGENT_SOCK` when set (an absolute path);
/// - else `$XDG_RUNTIME_DIR/keychain/agent.sock`;
/// - else `~/.local/state/keychain/s.<hosthash>/agent.sock`, where `<hosthash>` is a short hash of
///   the host name, so that a home directory shared between machines gives each its own agent
///   (as OpenSSH's `~/.ssh/agent/s.<hosthash>…`).
///
/// The directory is created with mode 0700 and refused if it is not the user's, is a link, or
/// lets anyone else in; the lock file `agent.lock` beside the socket admits one agent at a time.
/// The abstract socket namespace is never used: it has no permissions and can be squatted.
public struct AgentSocketLocation: Sendable, Hashable {
    /// The socket's path.
    public var socketPath: String
    /// The directory that holds the socket and the lock.
    public var directory: String { PathSafety.parent(of: socketPath) }
    /// The single-instance lock file.
    public var lockPath: String { directory + "/agent.lock" }

    /// The name of the override variable.
    public static let overrideVariable = AgentEndpoint.socketVariable

    /// A location at an explicit path.
    /// - Parameter socketPath: An absolute path; its directory is subject to the same rules.
    public init(socketPath: String) { self.socketPath = socketPath }

    /// The location from the environment.
    /// - Parameters:
    ///   - environment: The variables to read (`KEYCHAIN_AGENT_SOCK`, `XDG_RUNTIME_DIR`, `HOME`).
    ///   - hostName: The host name hashed into the fallback directory.
    /// - Throws: ``AgentError/Code/unsafeLocation`` when a path is relative or no directory can be derived.
    public static func resolve(environment: [String: String], hostName: String) throws -> AgentSocketLocation {
        do {
            return AgentSocketLocation(
                socketPath: try AgentEndpoint.socketPath(environment: environment, hostName: hostName))
        } catch let error as KeychainError {
            throw AgentError(.unsafeLocation, error.message)
        }
    }

    /// A short, stable hash of the host name (FNV-1a, 64 bits, 16 hex digits).
    public static func hostHash(_ hostName: String) -> String { AgentEndpoint.hostHash(hostName) }

    /// Creates the socket directory (mode 0700) if needed, and checks it.
    /// - Parameter uid: The user the directory must belong to (`geteuid()`).
    /// - Throws: ``AgentError/Code/unsafeLocation`` naming the path and the fix when the directory
    ///   is a link, not a directory, another user's, or open to group or others.
    public func prepareDirectory(uid: UInt32 = geteuid()) throws {
        try createIfMissing(directory)
        try Self.checkPrivateDirectory(directory, uid: uid)
    }

    /// Checks that `path` is a real directory of `uid` with no access for group or others.
    public static func checkPrivateDirectory(_ path: String, uid: UInt32) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw AgentError.system("lstat", path) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw AgentError(
                .unsafeLocation, "\(path) is not a directory (a link?); fix: remove it so the agent can create it")
        }
        guard info.st_uid == uid else {
            throw AgentError(
                .unsafeLocation,
                "\(path) belongs to uid \(info.st_uid), not to uid \(uid); fix: remove it (someone else may be squatting it)"
            )
        }
        guard info.st_mode & 0o077 == 0 else {
            throw AgentError(
                .unsafeLocation,
                "\(path) has mode \(PathSafety.octal(info.st_mode & 0o7777)), open to group or others; fix: chmod 700 \(path)"
            )
        }
    }

    /// Creates `path` and missing parents; the last component 0700, parents 0700 too when new.
    private func createIfMissing(_ path: String) throws {
        var info = stat()
        if lstat(path, &info) == 0 { return }
        let parent = PathSafety.parent(of: path)
        if parent != path, parent != "/" { try createIfMissing(parent) }
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw AgentError.system("mkdir", path) }
    }
}
