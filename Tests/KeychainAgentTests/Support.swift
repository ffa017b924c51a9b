import CKeychainAgent
import CKeychainTestSupport
import Foundation
import KeychainAgent
import KeychainLibc
import Synchronization
import Testing

/// The helper executable built next to the test bundle.
let workerPath: String = {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().path
        } ?? "",
    ]
    for directory in candidates {
        let path = directory + "/keychain-agent-test-worker"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return candidates[0] + "/keychain-agent-test-worker"
}()

/// A required tool's path; the test fails (never skips) when it is missing.
func requiredTool(_ name: String) throws -> String {
    for directory in ["/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"] {
        let path = "\(directory)/\(name)"
        if access(path, X_OK) == 0 { return path }
    }
    Issue.record("\(name) is not installed: .ci/run installs it (apt package \(name == "bwrap" ? "bubblewrap" : name))")
    throw AgentError(.system, "\(name) missing")
}

/// Held while a test spawns a child or writes an executable: a child forked while a copy of the
/// worker is open for writing would hold that descriptor until its exec, and exec-ing the copy
/// meanwhile fails with ETXTBSY.
let spawnGate = Mutex(())

/// A child started with `posix_spawn`, its stdin and stdout on pipes.
final class Child {
    let pid: pid_t
    private var input: Int32
    private let output: Int32
    private var reaped = false

    /// Starts `executable` with `arguments`; as process number `pid` when one is given (see
    /// ``init(_:_:reusing:)``).
    init(_ executable: String, _ arguments: [String], pid wanted: pid_t? = nil) throws {
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        guard ck_pipe_cloexec(&toChild) == 0, ck_pipe_cloexec(&fromChild) == 0 else {
            throw AgentError.testFailure("pipe")
        }
        var argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status: Int32
        if let wanted {
            // errno read inside the lock, before unlocking can change it.
            (child, status) = spawnGate.withLock { _ in
                let started = ck_test_spawn_with_pid(wanted, executable, &argv, environ, toChild[0], fromChild[1])
                return (started, started < 0 ? errno : 0)
            }
        } else {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
            posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
            _ = ck_spawn_add_closefrom(&actions, 3)  // none of the test runner's other descriptors
            status = spawnGate.withLock { _ in posix_spawn(&child, executable, &actions, nil, &argv, environ) }
        }
        close(toChild[0])
        close(fromChild[1])
        guard status == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw AgentError(.system, "spawning \(executable): \(status)", errno: status)
        }
        pid = child
        input = toChild[1]
        output = fromChild[0]
    }

    /// Starts `executable` with `arguments` under `pid`, the number of a process that has exited
    /// and been reaped: the kernel is asked for that number (clone3 with `set_tid`), so the test
    /// does not race the machine's other processes for it. A number taken again meanwhile by
    /// another process is waited for, up to 10 s.
    convenience init(_ executable: String, _ arguments: [String], reusing pid: pid_t) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                try self.init(executable, arguments, pid: pid)
                return
            } catch let error as AgentError where error.errno == EEXIST && ContinuousClock.now < deadline {
                usleep(10_000)
            }
        }
    }

    /// Runs the worker with `arguments`, as uid/gid 65534 through setpriv when `asNobody`.
    static func worker(_ arguments: [String], asNobody: Bool = false, executable: String = workerPath) throws
        -> Child
    {
        guard asNobody else { return try Child(executable, arguments) }
        let setpriv = try requiredTool("setpriv")
        return try Child(
            setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", "--", executable] + arguments)
    }

    /// The next line of the child's output, or `nil` at its end.
    func readLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(output, &byte, 1) == 1 {
            if byte == 10 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// Sends a line to the child's input.
    func send(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { write(input, $0, strlen($0)) }
    }

    /// Closes the child's input (the worker's signal to exit) and reaps it.
    @discardableResult
    func finish() -> Int32 {
        if input >= 0 {
            close(input)
            input = -1
        }
        return wait()
    }

    /// Reaps the child; its exit status.
    @discardableResult
    func wait() -> Int32 {
        guard !reaped else { return 0 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        return (status >> 8) & 0xff
    }

    deinit {
        if !reaped {
            kill(pid, SIGKILL)
            wait()
        }
        if input >= 0 { close(input) }
        close(output)
    }
}

extension AgentError {
    static func testFailure(_ message: String) -> AgentError { AgentError(.system, message, errno: Glibc.errno) }
}

/// A fresh directory under /tmp, root-owned mode 0755 (removed at the end).
final class TemporaryDirectory {
    let path: String

    init(mode: mode_t = 0o755) throws {
        var template = Array("/tmp/keychain-agent-tests.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw AgentError.testFailure("mkdtemp") }
        path = String(cString: made)
        chmod(path, mode)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func make(_ relative: String, mode: mode_t = 0o755) throws -> String {
        let full = path + "/" + relative
        guard mkdir(full, mode) == 0 else { throw AgentError.testFailure("mkdir \(full)") }
        chmod(full, mode)
        return full
    }

    func write(_ relative: String, _ text: String, mode: mode_t = 0o644) throws -> String {
        let full = path + "/" + relative
        try text.write(toFile: full, atomically: false, encoding: .utf8)
        chmod(full, mode)
        return full
    }

    /// Copies the worker executable to `relative`, mode 0755.
    func copyWorker(to relative: String) throws -> String {
        let full = path + "/" + relative
        // Written under the spawn gate: no child of a parallel test can be forked while the copy
        // is open for writing (exec of a file open for writing fails with ETXTBSY).
        let bytes = try Data(contentsOf: URL(fileURLWithPath: workerPath))
        let written = spawnGate.withLock { _ -> Int in
            let fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
            guard fd >= 0 else { return -1 }
            defer { close(fd) }
            return bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        }
        guard written == bytes.count else { throw AgentError.testFailure("write \(full)") }
        chmod(full, 0o755)
        return full
    }
}

/// A listening socket in a private temporary directory, through the API under test.
final class TestAgent {
    let directory: TemporaryDirectory
    let listener: AgentListener
    var socketPath: String { listener.location.socketPath }

    init() throws {
        directory = try TemporaryDirectory()
        let runtime = try directory.make("run", mode: 0o700)
        listener = try AgentListener(location: AgentSocketLocation(socketPath: runtime + "/keychain/agent.sock"))
    }

    /// Accepts one client and reads its credentials; the caller closes the returned fd.
    func acceptPeer() throws -> (fd: Int32, peer: PeerCredentials) {
        let fd = try listener.accept()
        return (fd, try PeerCredentials(socket: fd))
    }
}

/// The output of a command run to completion.
func run(_ executable: String, _ arguments: [String]) throws -> String {
    let child = try Child(executable, arguments)
    var lines: [String] = []
    while let line = child.readLine() { lines.append(line) }
    child.finish()
    return lines.joined(separator: "\n")
}
