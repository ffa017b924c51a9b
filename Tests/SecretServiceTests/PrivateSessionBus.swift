import CKeychainAgent
import Foundation
import KeychainTestSupport
import KeychainLibc

/// What one run of a tool produced.
struct ToolResult: CustomStringConvertible {
    var status: Int32
    var stdout: Data
    var stderr: Data
    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }
    var description: String { "status \(status), stderr: \(String(decoding: stderr, as: UTF8.self))" }
}

struct ToolMissing: Error, CustomStringConvertible {
    var description: String
}

/// The directory of the test bundle's build products (`keychaind`, `security`).
var productsDirectory: String { buildProductsDirectory }

/// A tool that must exist: a missing one fails the test.
func requireTool(_ path: String) throws -> String {
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw ToolMissing(description: "\(path) is missing")
    }
    return path
}

/// A tool started with its output going to files (a pipe's write end inherited by a daemon it
/// starts would never close).
final class LaunchedTool {
    let process = Process()
    let directory = FileManager.default.temporaryDirectory.path + "/tool-\(UUID().uuidString.prefix(8))"
    let end: Date
    let name: String

    init(_ path: String, _ arguments: [String], stdin: Data?, environment: [String: String], deadline: TimeInterval)
        throws
    {
        end = Date().addingTimeInterval(deadline)
        name = "\(path) \(arguments.first ?? "")"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: directory + "/out", contents: nil)
        _ = FileManager.default.createFile(atPath: directory + "/err", contents: nil)
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/out"))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/err"))
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        let input = Pipe()
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = input
        try process.run()
        if let stdin { try input.fileHandleForWriting.write(contentsOf: stdin) }
        try input.fileHandleForWriting.close()
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Kills it (SIGKILL) and waits until it is reaped; nothing when it has ended already. A
    /// second signal to an ended process could hit another one: the machine's pids wrap
    /// (`pid_max` 32768 here) within one test run.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Whether it still runs; past the deadline it is killed and this throws.
    func running() throws -> Bool {
        guard process.isRunning else { return false }
        if Date() > end {
            kill(process.processIdentifier, SIGKILL)
            throw ToolMissing(description: "\(name) did not finish")
        }
        return true
    }

    /// What it has written to standard output so far (it may still run).
    var outputSoFar: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/out") ?? Data(), as: UTF8.self)
    }

    /// What it produced; only once it has ended (``running()`` is false).
    var result: ToolResult {
        ToolResult(
            status: process.terminationStatus,
            stdout: FileManager.default.contents(atPath: directory + "/out") ?? Data(),
            stderr: FileManager.default.contents(atPath: directory + "/err") ?? Data())
    }
}

/// Runs `path` with `arguments`, optional standard input, in `environment`, blocking; killed
/// after `deadline` (a hang fails the test rather than blocking the suite). For synchronous
/// tests whose peers all run in other processes.
func runTool(
    _ path: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String],
    deadline: TimeInterval = 120
) throws -> ToolResult {
    let tool = try LaunchedTool(path, arguments, stdin: stdin, environment: environment, deadline: deadline)
    while try tool.running() { usleep(10_000) }
    return tool.result
}

/// As ``runTool(_:_:stdin:environment:deadline:)``, for async tests that serve D-Bus in this
/// process: it waits without holding one of the few cooperative threads the provider needs.
func runToolAsync(
    _ path: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String],
    deadline: TimeInterval = 120
) async throws -> ToolResult {
    let tool = try LaunchedTool(path, arguments, stdin: stdin, environment: environment, deadline: deadline)
    while try tool.running() { try await Task.sleep(for: .milliseconds(10)) }
    return tool.result
}

/// A private session bus (`dbus-daemon --config-file`) whose only service directory activates
/// the built `keychaind --secret-service`, with a temporary home; stopped by pid.
final class PrivateSessionBus: @unchecked Sendable {
    let root: String
    let daemon: TestDaemon
    /// What the test adds to the environment of the daemon, the provider and the clients.
    let extraEnvironment: [String: String]
    private(set) var address = ""

    var home: String { root + "/home" }
    var socket: String { root + "/run/agent.sock" }

    /// The environment of the daemon, the provider it activates and the clients.
    var environment: [String: String] { Self.environment(root: root, extra: extraEnvironment, address: address) }

    static func environment(root: String, extra: [String: String], address: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("KEYCHAIN_") && !$0.key.hasPrefix("XDG_") && !$0.key.hasPrefix("DBUS_")
        }
        environment["HOME"] = root + "/home"
        environment["XDG_DATA_HOME"] = root + "/data"
        environment["XDG_CONFIG_HOME"] = root + "/config"
        environment["XDG_RUNTIME_DIR"] = root + "/run"
        environment["KEYCHAIN_UNSAFE_TEST_KDF"] = "1"
        environment["KEYCHAIN_AGENT_SOCK"] = root + "/run/agent.sock"
        environment["KEYCHAIN_AGENT"] = "required"
        // No dialog unless a test asks for one (a desktop's pinentry would wait for a person).
        environment["KEYCHAIN_PINENTRY"] = "off"
        environment.merge(extra) { $1 }
        if !address.isEmpty { environment["DBUS_SESSION_BUS_ADDRESS"] = address }
        return environment
    }

    /// Starts the bus; `serviceFile` is the repository's activation file, whose `Exec` is
    /// pointed at the built `keychaind`.
    /// With `standardDirectories`, the bus reads activation files where a user's session bus does
    /// (`<standard_session_servicedirs/>`: `XDG_DATA_HOME`, `XDG_DATA_DIRS` from `environment`,
    /// then `/usr/share`) and not the private directory holding `serviceFile`'s copy.
    init(
        serviceFile: String, keychaind: String, environment extra: [String: String] = [:],
        standardDirectories: Bool = false
    ) throws {
        extraEnvironment = extra
        root = FileManager.default.temporaryDirectory.path + "/secret-service-\(UUID().uuidString.prefix(8))"
        for directory in ["home", "data", "config", "run", "services", "bus"] {
            try FileManager.default.createDirectory(
                atPath: root + "/" + directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        // The service file and its siblings (the Secret portal backend's), each started as the
        // built keychaind.
        let serviceDirectory = URL(fileURLWithPath: serviceFile).deletingLastPathComponent().path
        let siblings = try FileManager.default.contentsOfDirectory(atPath: serviceDirectory).filter {
            $0.hasSuffix(".service")
        }
        for name in siblings {
            let template = try String(contentsOfFile: serviceDirectory + "/" + name, encoding: .utf8)
            let service = template.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                line.hasPrefix("Exec=") ? "Exec=\(keychaind) --secret-service" : String(line)
            }.joined(separator: "\n")
            try service.write(toFile: root + "/services/" + name, atomically: true, encoding: .utf8)
        }
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:dir=\(root)/bus</listen>
              <auth>EXTERNAL</auth>
              \(standardDirectories ? "<standard_session_servicedirs/>" : "<servicedir>\(root)/services</servicedir>")
              <!-- A user's session bus has these limits (Debian's /usr/share/dbus-1/session.conf);
                   dbus-daemon's own defaults are a system bus's. -->
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">1000000000</limit>
              <limit name="max_replies_per_connection">50000</limit>
              <limit name="max_match_rules_per_connection">50000</limit>
              <limit name="service_start_timeout">120000</limit>
              <!-- Counts until Hello, which an async test sends when a cooperative thread is
                   free: minutes on a loaded 2-core machine. -->
              <limit name="auth_timeout">3600000</limit>
              <limit name="pending_fd_timeout">150000</limit>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: root + "/session.conf", atomically: true, encoding: .utf8)

        // Started with no signal blocked: a child of this process inherits its blocked SIGTERM
        // through Foundation's Process, and would then stop only when killed.
        daemon = try TestDaemon(
            try requireTool("/usr/bin/dbus-daemon"),
            ["--config-file=\(root)/session.conf", "--nofork", "--print-address"],
            environment: Self.environment(root: root, extra: extra, address: ""))
        var line = ""
        let end = Date().addingTimeInterval(60)
        while !line.contains("\n") && Date() < end {
            usleep(10_000)
            line = daemon.output
        }
        let printed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard printed.hasPrefix("unix:") else { throw ToolMissing(description: "dbus-daemon printed no address") }
        address = printed
    }

    /// A bus that activates the built `keychaind` from the repository's service file, with
    /// `environment` added to the standard one.
    static func activatingKeychaind(environment extra: [String: String] = [:]) throws -> PrivateSessionBus {
        try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"), environment: extra)
    }

    /// The pid of the owner of `name` on this bus, or `nil`.
    func ownerPID(of name: String) throws -> Int32? {
        let result = try runTool(
            try requireTool("/usr/bin/dbus-send"),
            [
                "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                "org.freedesktop.DBus.GetConnectionUnixProcessID", "string:\(name)",
            ], environment: environment)
        guard result.status == 0, let last = result.out.split(separator: " ").last else { return nil }
        return Int32(last.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Stops the provider and the daemon by pid and removes the directory.
    func stop() {
        // The activated keychaind; never this process (a test may own the name itself).
        if let pid = try? ownerPID(of: "org.freedesktop.secrets"), pid != getpid() { kill(pid, SIGTERM) }
        daemon.stop()
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Waits (a minute at most) until the Secret Service's default alias names a collection:
/// `gnome-keyring-daemon --unlock` takes the bus name before it has made its login keyring from
/// the password on its standard input, and an item stored meanwhile would wait for a prompter
/// that a private bus cannot start.
func waitForDefaultCollection(environment: [String: String]) throws {
    let dbusSend = try requireTool("/usr/bin/dbus-send")
    for _ in 0..<1200 {
        let alias = try runTool(
            dbusSend,
            [
                "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.ReadAlias", "string:default",
            ], environment: environment, deadline: 30)
        if alias.status == 0 && alias.out.contains("/org/freedesktop/secrets/collection/") { return }
        usleep(50_000)
    }
    throw ToolMissing(description: "the Secret Service made no default collection")
}
