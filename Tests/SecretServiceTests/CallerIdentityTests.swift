import Foundation
import KeychainTestSupport
import KeychainLibc
import Testing

/// The Secret Service knows a D-Bus caller by the pid the bus daemon recorded when it
/// connected. A child can keep the connection after that process exits, and the pid can be
/// reused; the process that reuses it never connected and must not lend the connection its
/// identity (issue 50, item 2). dbus-daemon 1.14 gives no `ProcessFD`, so keychaind refuses a
/// process that started after the connection's unique name appeared.
///
/// The reuse is made as root through `/proc/sys/kernel/ns_last_pid`, which sets the pid the
/// kernel hands out next (as CRIU restores processes).
@Suite("Secret Service callers by pid", .serialized)
struct CallerIdentityTests {
    struct Run {
        let directory: String
        let client: pid_t

        /// Starts the client in `mode` on `bus`; returns once it has connected.
        init(_ mode: String, on bus: PrivateSessionBus) throws {
            directory = bus.root + "/inherited-\(mode)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let python = try requireTool(PythonClientTests.python)
            let script = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/inherited_connection_client.py"
            let output = directory + "/client.out"
            client = try spawnWithDefaultSignals(python, [script, directory, mode], environment: bus.environment) {
                posix_spawn_file_actions_addopen(&$0, 0, "/dev/null", O_RDONLY, 0)
                posix_spawn_file_actions_addopen(&$0, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                posix_spawn_file_actions_adddup2(&$0, 1, 2)
            }
            _ = try wait(for: "ready")
        }

        /// The contents of `name` in the directory, waiting for it (bounded).
        func wait(for name: String, seconds: Double = 60) throws -> String {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if let data = FileManager.default.contents(atPath: directory + "/" + name) {
                    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                }
                usleep(20_000)
            }
            let said = FileManager.default.contents(atPath: directory + "/client.out") ?? Data()
            throw ToolMissing(description: "no \(name) from the client: \(String(decoding: said, as: UTF8.self))")
        }

        /// Lets the child make its call; its result.
        func call() throws -> String {
            _ = FileManager.default.createFile(atPath: directory + "/go", contents: nil)
            return try wait(for: "result")
        }
    }

    /// Starts `/bin/sleep` with pid `pid`, which must be free; `nil` when other processes kept
    /// taking it first.
    static func takePid(_ pid: pid_t) throws -> pid_t? {
        for _ in 0..<200 {
            try "\(pid - 1)".write(toFile: "/proc/sys/kernel/ns_last_pid", atomically: false, encoding: .utf8)
            let sleeper = try spawnWithDefaultSignals("/bin/sleep", ["60"], environment: [:]) { _ in }
            if sleeper == pid { return sleeper }
            kill(sleeper, SIGKILL)
            var status: Int32 = 0
            waitpid(sleeper, &status, 0)
        }
        return nil
    }

    @Test("A process that reuses the pid of a caller that exited is refused; the caller itself is served")
    func reusedPidIsRefused() throws {
        #expect(getuid() == 0, "reusing a pid on purpose needs root (ns_last_pid)")
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        // A caller whose connecting process is still there is served.
        let staying = try Run("stay", on: bus)
        #expect(try staying.call().hasPrefix("ok "))
        var status: Int32 = 0
        waitpid(staying.client, &status, 0)

        // The connecting process exits (reaped here, so its pid is free); another takes its pid.
        let leaving = try Run("exit", on: bus)
        waitpid(leaving.client, &status, 0)
        // A real reuse comes after the kernel has gone round every pid; here a moment is enough
        // for the new process to start at a later clock tick (1/100 s) than the name appeared.
        usleep(100_000)
        let taken = try #require(try Self.takePid(leaving.client), "pid \(leaving.client) could not be reused")
        defer {
            kill(taken, SIGKILL)
            waitpid(taken, &status, 0)
        }
        let result = try leaving.call()
        #expect(result == "error org.freedesktop.DBus.Error.AccessDenied", "\(result)")
    }

    /// A caller cannot pile up prompts: each waits on a keychain and may hold a dialog
    /// (issue 50, item 7).
    @Test("One caller may hold 16 unlock prompts at once; the 17th is LimitsExceeded")
    func promptsPerCallerAreLimited() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        #expect(
            try runTool(security, ["create-keychain", "-p", "pw", keychain], environment: bus.environment).status == 0)
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)
        let script = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/many_prompts_client.py"
        let asked = try runTool(
            try requireTool(PythonClientTests.python), [script, "17"], environment: bus.environment)
        let lines = asked.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 17, "\(asked)")
        #expect(lines.prefix(16).allSatisfy { $0 == "prompt" }, "\(lines)")
        #expect(lines.last == "error org.freedesktop.DBus.Error.LimitsExceeded", "\(lines)")
    }

    /// The `session` collection is memory: it keeps 4,096 items and secrets of 64 KiB at most,
    /// for all callers together (issue 50, item 7).
    @Test("The session collection is full at 4,096 items and refuses secrets over 64 KiB")
    func sessionCollectionHasAQuota() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let script = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/session_quota_client.py"
        let filled = try runTool(
            try requireTool(PythonClientTests.python), [script, "4096"], environment: bus.environment, deadline: 600)
        let lines = filled.out.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "stored 4096", "org.freedesktop.DBus.Error.LimitsExceeded", "org.freedesktop.DBus.Error.LimitsExceeded",
            ], "\(filled)")
    }
}
