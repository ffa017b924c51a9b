import CKeychainAgent
import Foundation
import KeychainLibc
import ScratchTPM

/// A daemon of a test (Xvfb, Seahorse), its output going to files, stopped by pid. Started with
/// posix_spawn rather than Foundation's `Process`, whose children inherit the test process's
/// blocked signals: SIGTERM would never reach them, and Xvfb killed with SIGKILL leaves its lock
/// file and socket behind. Nothing else this process has open is inherited.
public final class TestDaemon {
    /// Its process number.
    public let pid: pid_t
    /// Where its output and errors are written.
    public let directory = FileManager.default.temporaryDirectory.path + "/daemon-\(UUID().uuidString.prefix(8))"
    private var exited = false

    /// Starts `executable` with `arguments` and exactly `environment`.
    /// - Throws: ``SpawnFailure`` when it cannot start.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        pid = try spawnWithDefaultSignals(executable, arguments, environment: environment) { [directory] actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, directory + "/out", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_addopen(&actions, 2, directory + "/err", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = ck_spawn_add_closefrom(&actions, 3)
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether it still runs (once it has ended, it is reaped).
    public var isRunning: Bool {
        guard !exited else { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) != 0 { exited = true }
        return !exited
    }

    /// What it has written to standard output and standard error so far.
    public var output: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/out") ?? Data(), as: UTF8.self)
    }
    public var errors: String {
        String(decoding: FileManager.default.contents(atPath: directory + "/err") ?? Data(), as: UTF8.self)
    }

    /// SIGTERM, then SIGKILL after 5 s; reaped.
    public func stop() {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        let end = Date().addingTimeInterval(5)
        while isRunning && Date() < end { usleep(10_000) }
        guard isRunning else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        exited = true
    }
}

/// A daemon of a test did not come up as it should, and what it said.
public struct TestDaemonFailure: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) { self.description = description }
}

extension TestDaemon {
    /// The first line it writes to standard output, once written within `seconds` (while it
    /// runs); `nil` otherwise.
    public func firstLine(within seconds: Double = 30) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && isRunning {
            let printed = output
            if let end = printed.firstIndex(of: "\n") { return String(printed[..<end]) }
            usleep(20_000)
        }
        return nil
    }

    /// A private X server, `/usr/bin/Xvfb`, on a display it chooses (`-displayfd`): the server
    /// and its display name (`:N`).
    /// - Throws: ``TestDaemonFailure`` when it gives no display.
    public static func xServer(environment: [String: String]) throws -> (server: TestDaemon, display: String) {
        let server = try TestDaemon(
            "/usr/bin/Xvfb", ["-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            environment: environment)
        guard let number = server.firstLine(), Int(number) != nil else {
            throw TestDaemonFailure(description: "Xvfb gave no display: \(server.output) \(server.errors)")
        }
        return (server, ":" + number)
    }
}
