import Foundation

#if canImport(Glibc)
    import Glibc
#endif

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
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String], capture: Bool = true
    ) throws -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
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
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv + envp { free(pointer) }
        }
        var pid: pid_t = 0
        var start = Clock.now()
        var spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        // ETXTBSY: the executable is still open for writing somewhere, typically in a child
        // that another thread forked just after the file was written and that has not yet
        // reached its exec. It passes; wait for it (at most about a second).
        var attempts = 1
        while spawned == ETXTBSY && attempts < Self.busyAttempts {
            usleep(20_000)
            attempts += 1
            start = Clock.now()
            spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        }
        guard spawned == 0 else {
            if capture { for fd in outputPipe + errorPipe { close(fd) } }
            throw BenchmarkFailure("cannot start \(executable): errno \(spawned)")
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

    /// How many times ``run(_:_:environment:capture:)`` tries to start an executable that is
    /// busy (`ETXTBSY`), 20 ms apart.
    static let busyAttempts = 50

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
}
