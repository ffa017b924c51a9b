import Foundation
import KeychainTestSupport
import KeychainLibc
import Testing

/// The `security` executable built next to the test bundle.
var securityPath: String {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().path
        } ?? "",
    ]
    for directory in candidates {
        for path in [directory + "/security", directory + "/../security"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
    }
    return candidates[0] + "/security"
}

/// The `keychaind` built beside `security`.
var keychaindPath: String { URL(fileURLWithPath: securityPath).deletingLastPathComponent().path + "/keychaind" }

/// What one run of the tool produced.
struct RunResult: CustomStringConvertible {
    var status: Int32
    var stdout: Data
    var stderr: Data

    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }

    var description: String { "status \(status)\n--- stdout\n\(out)--- stderr\n\(err)---" }
}

/// How the tool's tests run `security`: through the session agent, as users run it (the
/// default), or each process opening its keychains itself (`KEYCHAIN_AGENT=off`).
/// `InProcessBackendTests` runs every test of this module once more with the second backend, in
/// a run of this bundle with `SECURITY_TOOL_TESTS_BACKEND=in-process`.
enum ToolBackend: String, Sendable {
    case agent
    case inProcess = "in-process"

    /// This test run's backend.
    static let current = ProcessInfo.processInfo.environment["SECURITY_TOOL_TESTS_BACKEND"].flatMap(Self.init) ?? .agent

    /// `KEYCHAIN_AGENT` for it.
    var agentMode: String { self == .agent ? "auto" : "off" }
}

/// A private home for one test: its own HOME, XDG_DATA_HOME and XDG_CONFIG_HOME, so the
/// real user's keychains are never touched; removed when the test ends.
final class Sandbox: @unchecked Sendable {
    let root: String
    /// Whether keychains use the cheap test-only key derivation (`KEYCHAIN_UNSAFE_TEST_KDF`).
    let cheapKeyDerivation: Bool
    /// Whether the XDG variables are set (a fresh machine usually has only HOME).
    let setsXDG: Bool

    /// `KEYCHAIN_AGENT` for the processes run here: the test run's backend by default
    /// (``ToolBackend``).
    var agentMode = ToolBackend.current.agentMode

    /// The socket of the agent the processes run here start: in the sandbox, so each test has
    /// an agent of its own, stopped with the sandbox.
    var agentSocket: String { root + "/agent/agent.sock" }

    init(cheapKeyDerivation: Bool = true, setsXDG: Bool = true) throws {
        root = FileManager.default.temporaryDirectory.path + "/security-cli-\(UUID().uuidString)"
        self.cheapKeyDerivation = cheapKeyDerivation
        self.setsXDG = setsXDG
        try FileManager.default.createDirectory(atPath: root + "/home", withIntermediateDirectories: true)
    }

    deinit {
        stopAgent(at: agentSocket)
        // An agent that came up after that (its client killed while starting it): its home is here.
        stopProcesses(withEnvironmentEntry: "HOME=" + home)
        try? FileManager.default.removeItem(atPath: root)
    }

    var home: String { root + "/home" }
    var dataHome: String { setsXDG ? root + "/data" : home + "/.local/share" }
    var configHome: String { setsXDG ? root + "/config" : home + "/.config" }
    var keychainsDirectory: String { dataHome + "/keychains" }
    var loginKeychain: String { keychainsDirectory + "/login.keychain-db" }
    var preferencesFile: String { configHome + "/keychain/preferences.json" }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("KEYCHAIN_") && !$0.key.hasPrefix("XDG_")
        }
        environment["HOME"] = home
        if setsXDG {
            environment["XDG_DATA_HOME"] = dataHome
            environment["XDG_CONFIG_HOME"] = configHome
        }
        if cheapKeyDerivation {
            environment["KEYCHAIN_UNSAFE_TEST_KDF"] = "1"
            // The agent a command starts never inherits that variable: it is configured itself.
            if agentMode != "off", let program = try? CheapAgentProgram.make(in: root, agent: keychaindPath) {
                environment["KEYCHAIN_AGENT_PROGRAM"] = program
            }
        }
        // Each process opens its keychains itself unless a test asks for the session agent
        // (AgentScriptTests start one of their own, and stop it).
        environment["KEYCHAIN_AGENT"] = agentMode
        if agentMode != "off" { environment["KEYCHAIN_AGENT_SOCK"] = agentSocket }
        return environment
    }

    /// Runs `security` with arguments, optional standard input (otherwise /dev/null: never a
    /// terminal) and extra environment variables, in the sandbox's home directory.
    @discardableResult
    func run(
        _ arguments: [String], stdin: Data? = nil, environment extra: [String: String] = [:],
        executable: String = securityPath
    ) throws -> RunResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment.merging(extra) { _, new in new }
        process.currentDirectoryURL = URL(fileURLWithPath: home)
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        let inPipe = stdin.map { _ in Pipe() }
        process.standardInput = inPipe ?? FileHandle.nullDevice
        try process.run()
        if let inPipe, let stdin {
            try inPipe.fileHandleForWriting.write(contentsOf: stdin)
            try inPipe.fileHandleForWriting.close()
        }
        let collector = Collector()
        let group = DispatchGroup()
        for (index, pipe) in [outPipe, errPipe].enumerated() {
            group.enter()
            // A thread of its own, not Dispatch's global queue: that has as many threads as
            // cores, and blocking them in reads starves every other test.
            Thread.detachNewThread {
                collector.set(index, pipe.fileHandleForReading.readDataToEndOfFile())
                group.leave()
            }
        }
        group.wait()
        process.waitUntilExit()
        return RunResult(status: process.terminationStatus, stdout: collector.get(0), stderr: collector.get(1))
    }

    /// Runs `security` with arguments and environment variables given as bytes (UTF-8 or not),
    /// as a shell passes them: bash starts the tool, each value written in `$'\xHH'` quoting.
    @discardableResult
    func run(bytes arguments: [[UInt8]], stdin: Data? = nil, environment extra: [String: [UInt8]] = [:]) throws
        -> RunResult
    {
        func quoted(_ bytes: [UInt8]) -> String {
            "$'" + bytes.map { String(format: "\\x%02x", $0) }.joined() + "'"
        }
        let exports = extra.keys.sorted().map { "export \($0)=\(quoted(extra[$0]!)); " }.joined()
        let script = exports + "exec \"$0\" " + arguments.map(quoted).joined(separator: " ")
        return try run(["-c", script, securityPath], stdin: stdin, executable: "/bin/bash")
    }

    /// Locks `keychain` for the processes run after this one: through the agent a keychain
    /// stays unlocked for every process once one unlocks it (as on macOS), while in process each
    /// process starts with it locked; tests of a locked keychain lock it first, on either backend.
    func lock(_ keychain: String) throws {
        let lock = try run(["lock-keychain", keychain])
        #expect(lock.status == 0, "\(lock)")
    }

    /// Runs `security` with a text on standard input.
    @discardableResult
    func run(_ arguments: [String], input: String, environment extra: [String: String] = [:]) throws -> RunResult {
        try run(arguments, stdin: Data(input.utf8), environment: extra)
    }
}

/// Collects the two output streams read on other threads.
private final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private var data: [Int: Data] = [:]

    func set(_ index: Int, _ value: Data) {
        lock.lock()
        data[index] = value
        lock.unlock()
    }

    func get(_ index: Int) -> Data {
        lock.lock()
        defer { lock.unlock() }
        return data[index] ?? Data()
    }
}

/// The message macOS prints when a search finds nothing.
let itemNotFoundMessage =
    "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n"

/// The lines of an attribute block, with the two dates replaced by `<date>` so that blocks
/// can be compared exactly.
func normalizingDates(_ text: String) -> String {
    text.replacing(
        /=0x[0-9A-F]{30}00  "[0-9]{14}Z\\000"/, with: "=<date>")
}

/// Lowercase hex of bytes.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

extension Sandbox {
    /// `setsid(1)`, which starts the tool without a controlling terminal, so that it can never
    /// open the terminal of whoever runs the tests.
    static let setsidPath = "/usr/bin/setsid"

    /// Runs `security` with a pseudo-terminal as standard input, in a new session (no
    /// controlling terminal, so prompts go to standard error), answering each prompt in turn.
    /// - Returns: The run, and what the terminal echoed back while the answers were typed.
    func runOnTerminal(_ arguments: [String], answers: [String], environment extra: [String: String] = [:])
        throws -> (RunResult, echoed: String)
    {
        // posix_openpt(3) by hand: Glibc's module does not export it. The ioctl numbers are
        // Linux's TIOCSPTLCK (unlock the slave) and TIOCGPTN (its number).
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: CInt = 0
        var number: CInt = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw CocoaError(.fileReadUnknown)
        }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw CocoaError(.fileReadUnknown) }
        defer { close(master) }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.setsidPath)
        process.arguments = [securityPath] + arguments
        process.environment = environment.merging(extra) { _, new in new }
        process.currentDirectoryURL = URL(fileURLWithPath: home)
        let outPipe = Pipe()
        let errPipe = Pipe()
        process.standardInput = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardOutput = outPipe
        process.standardError = errPipe
        try process.run()
        close(slave)

        // Answer each prompt once it has been printed (echo is off by then).
        let errFD = errPipe.fileHandleForReading.fileDescriptor
        var stderr = Data()
        for (index, answer) in answers.enumerated() {
            let deadline = Date().addingTimeInterval(20)
            while String(decoding: stderr, as: UTF8.self).components(separatedBy: ": ").count <= index + 1,
                Date() < deadline
            {
                var poller = pollfd(fd: errFD, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 200) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 512)
                let count = read(errFD, &buffer, buffer.count)
                if count <= 0 { break }
                stderr.append(contentsOf: buffer[0..<count])
            }
            _ = (answer + "\n").withCString { write(master, $0, strlen($0)) }
        }
        let stdout = outPipe.fileHandleForReading.readDataToEndOfFile()
        stderr.append(errPipe.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()

        var echoed = Data()
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(master, &buffer, buffer.count)
            if count <= 0 { break }
            echoed.append(contentsOf: buffer[0..<count])
        }
        return (
            RunResult(status: process.terminationStatus, stdout: stdout, stderr: stderr),
            String(decoding: echoed, as: UTF8.self)
        )
    }
}
