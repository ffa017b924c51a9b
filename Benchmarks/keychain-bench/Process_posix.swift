import Foundation
import KeychainLibc

/// Child processes started with `posix_spawn`, timed from the spawn to the end of
/// `waitpid`: the whole-process cost a shell script pays.
enum ChildProcess {
    struct Outcome {
        var status: Int32
        var standardOutput: Data
        var standardError: Data
        var nanoseconds: UInt64
    }

    /// Runs `executable` with `arguments` and exactly `environment`.
    /// - Parameter capture: Whether to collect standard output and error; when `false`
    ///   both go to `/dev/null`, so the timing holds no pipe reading.
    /// - Parameter input: Bytes for the child's standard input (small: they are written before
    ///   the child is waited for), or `nil` for `/dev/null`.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], capture: Bool = true,
        input: Data? = nil
    ) throws -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        var inputPipe: [Int32] = [-1, -1]
        if input != nil {
            guard pipe(&inputPipe) == 0 else { throw BenchmarkFailure("pipe failed: errno \(errno)") }
            for fd in inputPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if capture {
            guard pipe(&outputPipe) == 0, pipe(&errorPipe) == 0 else {
                throw BenchmarkFailure("pipe failed: errno \(errno)")
            }
            // Close-on-exec (Glibc's module has no `pipe2`), so that a child another thread
            // starts does not inherit the write ends and keep the reads below waiting until it
            // exits. The child's own standard output and error are duplicates, without the flag.
            for fd in outputPipe + errorPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
            for fd in outputPipe + errorPipe { posix_spawn_file_actions_addclose(&actions, fd) }
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        var pid: pid_t = 0
        var start = Clock.now()
        var spawned = spawn(&pid, executable, arguments, environment, &actions)
        // ETXTBSY: the executable is still open for writing somewhere, typically in a child
        // that another thread forked just after the file was written and that has not yet
        // reached its exec. It passes; wait for it (at most about a second).
        var attempts = 1
        while spawned == ETXTBSY && attempts < Self.busyAttempts {
            usleep(20_000)
            attempts += 1
            start = Clock.now()
            spawned = spawn(&pid, executable, arguments, environment, &actions)
        }
        guard spawned == 0 else {
            for fd in outputPipe + errorPipe + inputPipe where fd >= 0 { close(fd) }
            throw BenchmarkFailure("cannot start \(executable): errno \(spawned)")
        }
        if let input {
            close(inputPipe[0])
            input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(inputPipe[1], bytes.baseAddress! + offset, bytes.count - offset)
                    if written > 0 { offset += written } else if errno != EINTR { break }
                }
            }
            close(inputPipe[1])
        }
        var output = Data()
        var error = Data()
        if capture {
            close(outputPipe[1])
            close(errorPipe[1])
            output = readAll(outputPipe[0])
            error = readAll(errorPipe[0])
            close(outputPipe[0])
            close(errorPipe[0])
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let elapsed = Clock.now() - start
        let exitCode: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Outcome(status: exitCode, standardOutput: output, standardError: error, nanoseconds: elapsed)
    }

    /// `posix_spawn` with Swift arguments and exactly `environment`; its result.
    private static func spawn(
        _ pid: inout pid_t, _ executable: String, _ arguments: [String], _ environment: [String: String],
        _ actions: inout posix_spawn_file_actions_t
    ) -> Int32 {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        return posix_spawn(&pid, executable, &actions, nil, argv, envp)
    }

    /// How many times ``run(_:_:environment:capture:input:)`` tries to start an executable that is
    /// busy (`ETXTBSY`), 20 ms apart: about five seconds, as a loaded machine may need.
    static let busyAttempts = 250

    /// Reads a pipe to its end. The outputs here are small (a secret, an error message),
    /// so reading standard output fully before standard error cannot fill the other pipe.
    private static func readAll(_ fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 {
                data.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        return data
    }

    /// The path of the running executable.
    static var currentExecutable: String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Starts a long-running child (a bus or a keyring daemon): its standard input gets `input`
    /// and is closed, its standard output is returned as a pipe to read, its standard error goes
    /// to `/dev/null`. Stop it with ``stop(_:)``.
    static func start(
        _ executable: String, _ arguments: [String], environment: [String: String], input: Data = Data()
    ) throws -> (pid: pid_t, output: Int32) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var inputPipe: [Int32] = [-1, -1]
        var outputPipe: [Int32] = [-1, -1]
        guard pipe(&inputPipe) == 0, pipe(&outputPipe) == 0 else {
            throw BenchmarkFailure("pipe failed: errno \(errno)")
        }
        for fd in inputPipe + outputPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        posix_spawn_file_actions_adddup2(&actions, inputPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let spawned = spawn(&pid, executable, arguments, environment, &actions)
        close(inputPipe[0])
        close(outputPipe[1])
        guard spawned == 0 else {
            close(inputPipe[1])
            close(outputPipe[0])
            throw BenchmarkFailure("cannot start \(executable): errno \(spawned)")
        }
        _ = input.withUnsafeBytes { write(inputPipe[1], $0.baseAddress, $0.count) }
        close(inputPipe[1])
        return (pid, outputPipe[0])
    }

    /// Ends a child started with ``start(_:_:environment:input:)``: SIGTERM, then SIGKILL
    /// after a second, and waits for it.
    /// Starts a private session bus (`dbus-daemon --session`) with `environment`: its pid and
    /// the address it printed.
    /// - Throws: ``BenchmarkFailure`` when it prints no address (it is then stopped).
    static func startSessionBus(_ daemon: String, environment: [String: String]) throws -> (
        pid: pid_t, address: String
    ) {
        let started = try start(daemon, ["--session", "--nofork", "--print-address=1"], environment: environment)
        let address = readLine(started.output, timeout: 10)
        close(started.output)
        guard let address, !address.isEmpty else {
            stop(started.pid)
            throw BenchmarkFailure("dbus-daemon printed no address")
        }
        return (started.pid, address)
    }

    /// Ends a bus started with ``startSessionBus(_:environment:)`` at `address`, and the
    /// services it activated (the document portal and permission store xdg-desktop-portal asks
    /// for): they are not this process's children, run with SIGTERM blocked when this process
    /// blocks it, and outlive their bus; each carries the bus's address (with its unique GUID) in
    /// `DBUS_STARTER_ADDRESS`, which is how they are found.
    static func stopBus(_ pid: pid_t, address: String?) {
        stop(pid)
        guard let address, !address.isEmpty else { return }
        let needle = Data(("DBUS_STARTER_ADDRESS=" + address + "\0").utf8)
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let process = pid_t(entry), process != getpid(),
                let environment = FileManager.default.contents(atPath: "/proc/\(entry)/environ"),
                environment.range(of: needle) != nil
            else { continue }
            kill(process, SIGKILL)
        }
    }

    static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// The first line a child writes to `fd` (within `timeout` seconds), without its newline.
    static func readLine(_ fd: Int32, timeout: Double) -> String? {
        var line = [UInt8]()
        let deadline = Clock.now() + UInt64(timeout * 1e9)
        var byte: UInt8 = 0
        while Clock.now() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 || errno == EINTR else { return nil }
            guard poller.revents != 0 else { continue }
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return nil
    }
}
