import CKeychainAgent
import Foundation
import KeychainLibc
import Synchronization

/// A real, throw-away PostgreSQL 15 server for tests and benchmarks (one test, one suite, one run): its own temporary data directory,
/// SCRAM-SHA-256 authentication, 127.0.0.1 on a free port, a Unix socket inside the temporary
/// directory, `fsync=on` and `max_connections=200`.
///
/// With ``TLS-swift.struct``, the server also speaks TLS (`ssl=on`) with a certificate chain
/// the caller made, and can refuse logins without it.
///
/// The superuser's password is random and travels only through a 0600 file (`initdb --pwfile`)
/// and `PGPASSWORD` in `psql`'s environment. The server stops in ``stop()``, in `deinit`, and —
/// if the test process dies first — through a watchdog process that waits for the test
/// process to end.
public final class PostgresCluster: Sendable {
    /// How ``restart(mode:)`` shuts the server down (`pg_ctl -m`).
    public enum ShutdownMode: String, Sendable {
        case smart, fast, immediate
    }

    /// The server's TLS: its certificate and key, copied into the data directory (the key 0600,
    /// both owned by the `postgres` user, as the server demands).
    public struct TLS: Sendable {
        /// The server's certificate, a PEM file (the certificate, then any intermediates).
        public var certificateFile: String
        /// The certificate's private key, a PEM file.
        public var keyFile: String
        /// Whether TCP logins without TLS are refused (`hostssl` lines only in `pg_hba.conf`,
        /// and `hostnossl … reject`); otherwise both are accepted.
        public var required: Bool

        /// TLS with this certificate and key; required unless `required` is `false`.
        public init(certificateFile: String, keyFile: String, required: Bool = true) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.required = required
        }
    }

    /// A failure to start or drive the server, with the tool's output (never the password).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public static let binaries = "/usr/lib/postgresql/15/bin"
    public static let runuser = "/usr/sbin/runuser"

    /// The server's TCP port on 127.0.0.1.
    public let port: Int
    /// The temporary directory holding the data directory, the socket and the log.
    public let directory: URL
    /// The data directory (`PGDATA`).
    public var dataDirectory: URL { directory.appendingPathComponent("data") }
    /// The server's log (every statement when started with `logStatements`).
    public var logFile: URL { directory.appendingPathComponent("postgresql.log") }
    /// The superuser's password.
    public let superuserPassword: String
    /// The database the URLs name.
    public let database = "postgres"

    private let state = Mutex<(stopped: Bool, watchdog: Int32?, options: [String])>((false, nil, []))

    /// `postgresql://postgres:…@127.0.0.1:port/postgres`.
    public var superuserURL: String { "postgresql://postgres:\(superuserPassword)@127.0.0.1:\(port)/\(database)" }

    /// The server's `postgresql://127.0.0.1:port/postgres` URL without a login.
    public var serverURL: String { "postgresql://127.0.0.1:\(port)/\(database)" }

    /// Creates the cluster (`initdb`) and starts it.
    ///
    /// - Parameters:
    ///   - logStatements: `log_statement=all` into ``logFile``.
    ///   - logConnections: `log_connections=on` into ``logFile`` (each login, and whether it used TLS).
    ///   - tls: the server's certificate and key, when it speaks TLS.
    /// - Throws: ``Failure`` when PostgreSQL 15 is not installed (never a skip) or a step fails.
    public init(logStatements: Bool = false, logConnections: Bool = false, tls: TLS? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binaries + "/initdb") else {
            throw Failure(
                description:
                    "PostgreSQL 15 is not installed (no \(Self.binaries)/initdb): apt-get install -y postgresql")
        }
        directory = try Self.makeDirectory()
        superuserPassword = Self.randomPassword()
        port = try Self.freePort()
        do {
            try initdb()
            var options: [String] = []
            if logStatements { options.append("-c log_statement=all") }
            if logConnections { options.append("-c log_connections=on") }
            if let tls { options += try installTLS(tls) }
            state.withLock { $0.options = options }
            try start(options)
            state.withLock { $0.watchdog = try? startWatchdog() }
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        stop()
    }

    // MARK: Life cycle

    /// Stops the server at once (`pg_ctl stop -m immediate`, then SIGKILL to the postmaster if
    /// it is still there) and removes the temporary directory. Later calls do nothing.
    public func stop() {
        let watchdog: Int32?? = state.withLock { state in
            if state.stopped { return nil }
            state.stopped = true
            return .some(state.watchdog)
        }
        guard let watchdog else { return }
        let pid = postmasterPID()
        _ = try? pgCtl(["stop", "-m", "immediate", "-w", "-t", "20"])
        if let pid, kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        if let watchdog = watchdog {
            kill(watchdog, SIGKILL)
            var status: Int32 = 0
            waitpid(watchdog, &status, 0)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server with `mode` and starts it again with the same options.
    public func restart(mode: ShutdownMode) throws {
        try pgCtl(["restart", "-m", mode.rawValue, "-w", "-t", "60", "-l", logFile.path])
    }

    /// Takes a base backup of the running server into `name` in the cluster's directory
    /// (`pg_basebackup -X stream`: the files and the write-ahead log written while they were
    /// copied, as a backup job takes one), for ``restore(from:)``.
    /// - Returns: The backup's directory.
    public func baseBackup(named name: String) throws -> URL {
        let target = directory.appendingPathComponent(name)
        let result = try Self.run(
            Self.runuser,
            [
                "-u", "postgres", "--", Self.binaries + "/pg_basebackup", "-h", "127.0.0.1", "-p", String(port),
                "-U", "postgres", "-D", target.path, "-X", "stream", "-c", "fast", "--no-sync",
            ],
            environment: ["PGPASSWORD": superuserPassword, "PGCONNECT_TIMEOUT": "10"])
        guard result.status == 0 else { throw Failure(description: "pg_basebackup failed: \(result.output)") }
        return target
    }

    /// Puts the server back as a base backup (``baseBackup(named:)``) had it, as restoring a
    /// backup after losing a server does: stops it at once (`-m immediate`), replaces the data
    /// directory with the backup, and starts it with the same options. Everything committed
    /// after the backup is gone.
    public func restore(from backup: URL) throws {
        try pgCtl(["stop", "-m", "immediate", "-w", "-t", "60"])
        try FileManager.default.removeItem(at: dataDirectory)
        try FileManager.default.moveItem(at: backup, to: dataDirectory)
        try start(state.withLock { $0.options })
    }

    /// The postmaster's process id (first line of `postmaster.pid`), while it runs.
    public func postmasterPID() -> pid_t? {
        let file = dataDirectory.appendingPathComponent("postmaster.pid")
        guard let text = try? String(contentsOf: file, encoding: .utf8),
            let first = text.split(separator: "\n").first
        else { return nil }
        return pid_t(first.trimmingCharacters(in: .whitespaces))
    }

    /// The watchdog's process id, while it runs (it outlives this process's calls and ends the
    /// server if this process dies first).
    public func watchdogPID() -> pid_t? { state.withLock { $0.watchdog } }

    // MARK: SQL as the superuser

    /// Runs SQL as the superuser through `psql` and returns its unaligned, tuples-only output.
    @discardableResult
    public func sql(_ statement: String) throws -> String {
        let result = try Self.run(
            Self.binaries + "/psql",
            [
                "-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-d", database, "-X", "-q", "-A", "-t",
                "-v", "ON_ERROR_STOP=1", "-f", "-",
            ],
            input: Data(statement.utf8), environment: ["PGPASSWORD": superuserPassword, "PGCONNECT_TIMEOUT": "10"])
        guard result.status == 0 else { throw Failure(description: "psql failed: \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Steps

    private static func makeDirectory() throws -> URL {
        var template = Array("/tmp/kc-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed") }
        let path = String(cString: made)
        guard let user = getpwnam("postgres") else {
            throw Failure(description: "no postgres user (install the postgresql package)")
        }
        guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
            throw Failure(description: "cannot chown \(path) to postgres")
        }
        return URL(fileURLWithPath: path)
    }

    private func initdb() throws {
        let passwordFile = directory.appendingPathComponent("pwfile")
        guard
            FileManager.default.createFile(
                atPath: passwordFile.path, contents: Data((superuserPassword + "\n").utf8),
                attributes: [.posixPermissions: 0o600])
        else { throw Failure(description: "cannot write the password file") }
        defer { try? FileManager.default.removeItem(at: passwordFile) }
        if let user = getpwnam("postgres") { chown(passwordFile.path, user.pointee.pw_uid, user.pointee.pw_gid) }
        let result = try Self.run(
            Self.runuser,
            [
                "-u", "postgres", "--", Self.binaries + "/initdb", "-D", dataDirectory.path, "-U", "postgres",
                "-A", "scram-sha-256", "--pwfile=" + passwordFile.path, "-E", "UTF8", "--locale=C", "--no-sync",
            ])
        guard result.status == 0 else { throw Failure(description: "initdb failed: \(result.output)") }
    }

    private func start(_ extra: [String]) throws {
        let options = [
            "-c listen_addresses=127.0.0.1", "-p \(port)", "-c unix_socket_directories=\(directory.path)",
            "-c max_connections=200", "-c fsync=on",
        ]
        try pgCtl(["start", "-w", "-t", "60", "-l", logFile.path, "-o", (options + extra).joined(separator: " ")])
    }

    /// Copies the certificate and key into the data directory, writes `pg_hba.conf` for TLS, and
    /// returns the server options that turn it on.
    private func installTLS(_ tls: TLS) throws -> [String] {
        try copyForServer(tls.certificateFile, to: "server.crt", mode: 0o644)
        try copyForServer(tls.keyFile, to: "server.key", mode: 0o600)
        let plain = tls.required ? "hostnossl all all 127.0.0.1/32 reject" : "host all all 127.0.0.1/32 scram-sha-256"
        let rules = """
            local all all scram-sha-256
            hostssl all all 127.0.0.1/32 scram-sha-256
            \(plain)

            """
        try writeForServer(Data(rules.utf8), to: "pg_hba.conf", mode: 0o600)
        return ["-c ssl=on", "-c ssl_cert_file=server.crt", "-c ssl_key_file=server.key"]
    }

    private func copyForServer(_ source: String, to name: String, mode: Int) throws {
        guard let contents = FileManager.default.contents(atPath: source) else {
            throw Failure(description: "cannot read \(source)")
        }
        try writeForServer(contents, to: name, mode: mode)
    }

    /// Writes a file of the data directory, owned by the `postgres` user.
    private func writeForServer(_ contents: Data, to name: String, mode: Int) throws {
        let path = dataDirectory.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: path)
        guard FileManager.default.createFile(atPath: path, contents: contents, attributes: [.posixPermissions: mode]),
            let user = getpwnam("postgres"), chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0
        else { throw Failure(description: "cannot write \(name) for the server") }
    }

    private func pgCtl(_ arguments: [String]) throws {
        let result = try Self.run(
            Self.runuser, ["-u", "postgres", "--", Self.binaries + "/pg_ctl", "-D", dataDirectory.path] + arguments)
        guard result.status == 0 else {
            throw Failure(description: "pg_ctl \(arguments.first ?? "") failed: \(result.output)")
        }
    }

    /// A shell that waits for this process to end, then stops the server and removes the directory.
    private func startWatchdog() throws -> Int32 {
        let script = """
            while kill -0 "$1" 2>/dev/null; do sleep 1; done
            \(Self.runuser) -u postgres -- "$2/pg_ctl" -D "$3/data" -m immediate -w -t 20 stop >/dev/null 2>&1
            pid=$(head -n 1 "$3/data/postmaster.pid" 2>/dev/null) && kill -9 "$pid" 2>/dev/null
            rm -rf "$3"
            """
        // In its own session (setsid execs in place, so the pid stays), so that a signal to this
        // process's group does not end the watchdog with it.
        return try Self.spawn(
            "/usr/bin/setsid", ["/bin/sh", "-c", script, "watchdog", String(getpid()), Self.binaries, directory.path],
            input: "/dev/null", output: "/dev/null", environment: [:])
    }

    // MARK: Utilities

    private static func randomPassword() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
    }

    /// A port nothing listens on now: the kernel's choice for a socket bound to port 0.
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "cannot bind a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a program to completion; output (stdout and stderr) goes through a temporary file.
    ///
    /// posix_spawn and waitpid, not Foundation's `Process`: `pg_ctl start` leaves a postmaster
    /// behind that inherits `Process`'s internal descriptors, and `waitUntilExit` then never returns.
    public static func run(
        _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
    ) throws -> (status: Int32, output: String) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("kc-pg-\(UUID().uuidString)")
        let outputPath = base.path + ".out"
        let inputPath = base.path + ".in"
        defer {
            unlink(outputPath)
            unlink(inputPath)
        }
        guard
            FileManager.default.createFile(
                atPath: inputPath, contents: input ?? Data(), attributes: [.posixPermissions: 0o600])
        else { throw Failure(description: "cannot write \(inputPath)") }
        let pid = try spawn(executable, arguments, input: inputPath, output: outputPath, environment: environment)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw Failure(description: "waitpid failed: errno \(errno)") }
        }
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7F == 0
        return (exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F), text)
    }

    /// Starts a program with stdin from `input` and stdout and stderr to `output` (created 0600).
    static func spawn(
        _ executable: String, _ arguments: [String], input: String, output: String, environment: [String: String]
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else the caller has open: the postmaster and the watchdog outlive this call,
        // and a socket they inherited (a test's D-Bus connection, say) would never close.
        _ = ck_spawn_add_closefrom(&actions, 3)
        let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw Failure(description: "cannot start \(executable): errno \(spawned)") }
        return pid
    }
}
