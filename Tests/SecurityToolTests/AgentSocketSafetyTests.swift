import DBusNIO
import Foundation
import KeychainClient
import KeychainTestSupport
import KeychainLibc
import Testing

/// Who a client talks to, and how many agents serve one user (issue 50, item 11): a client
/// sends nothing to a socket another user listens on, and an agent that systemd started holds
/// the same one-agent lock as one a client started.
@Suite struct AgentSocketSafetyTests {
    /// The defect: a client connected to whatever listened at the agent's path and sent it the
    /// keychain's password, without asking the kernel who accepted the connection.
    @Test func aClientSendsNothingToASocketAnotherUserListensOn() throws {
        let sandbox = try Sandbox()
        let directory = sandbox.root + "/shared-run"
        #expect(mkdir(directory, 0o777) == 0 && chmod(directory, 0o777) == 0)
        chmod(sandbox.root, 0o755)
        let socket = directory + "/agent.sock"
        let listener = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777); s.listen(4)
            print("ready", flush=True)
            received = 0
            while True:
                c, _ = s.accept(); c.settimeout(2)
                try:
                    while True:
                        chunk = c.recv(65536)
                        if not chunk: break
                        received += len(chunk)
                except OSError:
                    pass
                c.close()
                print(received, flush=True)
            """
        // As uid and gid 65534 (setpriv, in util-linux).
        let nobody = try Spawned(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3", "-c", listener, socket],
            environment: ["PATH": "/usr/bin:/bin"])
        defer { nobody.stop() }
        #expect(nobody.readLine() == "ready")
        #expect(try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"]).status == 0)
        let unlock = try sandbox.run(
            ["unlock-keychain", "-p", "pw", "build.keychain"],
            environment: ["KEYCHAIN_AGENT": "required", "KEYCHAIN_AGENT_SOCK": socket])
        #expect(unlock.status != 0, "\(unlock)")
        #expect(unlock.err.contains("is not running as you (uid 65534): nothing was sent to it"), "\(unlock)")
        // The listener saw a connection that carried nothing, not even the SASL handshake.
        #expect(nobody.readLine() == "0")
    }

    /// The defect: an agent started by `keychaind.socket` held no lock, so once its socket file
    /// was removed a second agent started beside it.
    @Test func anAgentSystemdStartedHoldsTheOneAgentLock() throws {
        let sandbox = try Sandbox()
        let run = sandbox.root + "/run/keychain"
        try FileManager.default.createDirectory(
            atPath: run, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let socket = run + "/agent.sock"
        let keychaind = URL(fileURLWithPath: securityPath).deletingLastPathComponent().path + "/keychaind"
        // systemd-socket-activate becomes keychaind (it execs it at the first connection).
        let activated = try Spawned(
            "/usr/bin/systemd-socket-activate", ["-l", socket, keychaind, "--socket", socket],
            environment: sandbox.environment)
        defer { activated.stop() }
        for _ in 0..<400 where access(socket, F_OK) != 0 { usleep(25_000) }
        let first = try sandbox.run(
            ["show-keychain-info"], environment: ["KEYCHAIN_AGENT": "required", "KEYCHAIN_AGENT_SOCK": socket])
        #expect(first.status == 0, "\(first)")
        #expect(agentPid(at: socket) == activated.pid)
        #expect(unlink(socket) == 0)

        let second = try Spawned(keychaind, ["--socket", socket], environment: sandbox.environment)
        defer { second.stop() }
        let status = second.wait(seconds: 30)
        let said = second.readErrors()
        #expect(status == 1, "a second agent started beside the first: \(said)")
        #expect(said.contains("another keychaind holds"), "\(said)")
        #expect(kill(activated.pid, 0) == 0, "the first agent still runs")
    }

}

/// A program started by ``spawnWithDefaultSignals(_:_:environment:files:)`` (not Foundation's
/// `Process`, which cannot follow setpriv and systemd-socket-activate execing another program),
/// its output and errors on pipes.
private final class Spawned {
    let pid: pid_t
    private let output: Int32
    private let errors: Int32
    private var status: Int32?

    init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        var out: [Int32] = [0, 0]
        var err: [Int32] = [0, 0]
        guard pipe(&out) == 0, pipe(&err) == 0 else { throw CocoaError(.fileWriteUnknown) }
        do {
            pid = try spawnWithDefaultSignals(executable, arguments, environment: environment) { actions in
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                posix_spawn_file_actions_adddup2(&actions, out[1], 1)
                posix_spawn_file_actions_adddup2(&actions, err[1], 2)
                for fd in out + err { posix_spawn_file_actions_addclose(&actions, fd) }
            }
        } catch {
            for fd in out + err { close(fd) }
            throw error
        }
        close(out[1])
        close(err[1])
        output = out[0]
        errors = err[0]
    }

    /// One line of its output (nil at its end), read a byte at a time.
    func readLine() -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(output, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    /// Its exit status once it ends within `seconds`, or nil (it is then left running).
    func wait(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        var raw: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &raw, WNOHANG) == pid {
                status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
                return status
            }
            usleep(10_000)
        }
        return nil
    }

    /// Everything it wrote on standard error, once it has ended.
    func readErrors() -> String {
        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(errors, &buffer, buffer.count)
            if count <= 0 { break }
            collected += buffer[0..<count]
        }
        return String(decoding: collected, as: UTF8.self)
    }

    /// Ends it (SIGTERM, then SIGKILL after 10 s) and reaps it, once.
    func stop() {
        if status == nil {
            kill(pid, SIGTERM)
            if wait(seconds: 10) == nil {
                kill(pid, SIGKILL)
                _ = wait(seconds: 10)
            }
        }
        close(output)
        close(errors)
    }
}
