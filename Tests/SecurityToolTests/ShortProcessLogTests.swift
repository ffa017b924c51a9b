import Foundation
import KeychainLibc
import Testing

/// Scripts run `security` as thousands of short processes: a process that ends with the
/// keychain's write-ahead log past 256 KiB folds it into the file, so the log never grows across them (it reached 14.6 MB after 1,000 adds when
/// no process closed its keychain).
@Suite struct ShortProcessLogTests {
    /// In process: each process opens and closes the keychain itself. (Through the agent one
    /// process holds it open, and SQLite's own checkpoints bound the log; docs/engine.md.)
    @Test func aThousandShortLivedProcessesKeepTheLogBounded() throws {
        let sandbox = try Sandbox()
        sandbox.agentMode = "off"
        var largest = 0
        for index in 0..<1_000 {
            let status = try spawnTool(
                sandbox, ["add-generic-password", "-s", "svc\(index % 50)", "-a", "acct\(index)", "-w", "secret"])
            #expect(status == 0, "process \(index)")
            largest = max(largest, fileSize(sandbox.loginKeychain + "-wal"))
        }
        // A process that ends with the log past 256 KiB folds it into the file and empties it.
        #expect(largest <= 512 << 10, "largest log between processes: \(largest) bytes")
        let found = try sandbox.run(["find-generic-password", "-s", "svc7", "-a", "acct507", "-w"])
        #expect(found.out == "secret\n", "\(found)")
    }

    private func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// Runs `security` with its output discarded and returns its exit status (`posix_spawn` and
    /// `waitpid`: a thousand Foundation `Process` launches in a row are slower and have crashed
    /// libdispatch's signal handling here).
    private func spawnTool(_ sandbox: Sandbox, _ arguments: [String]) throws -> Int32 {
        let argv = ([securityPath] + arguments).map { strdup($0) } + [nil]
        let envp = sandbox.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in [Int32(0), 1, 2] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, securityPath, &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(.ECHILD) }
        }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f
    }
}
