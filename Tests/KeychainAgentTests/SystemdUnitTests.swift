import Foundation
import KeychainCore
import KeychainLibc
import Testing

/// The user units in dist/systemd: systemd's own checker accepts them, and they say what the
/// agent needs (the socket's place and modes, the paths KeychainPaths writes, the sandbox).
@Suite("systemd user units")
struct SystemdUnitTests {
    static let unitDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("dist/systemd").path

    static func unit(_ name: String) throws -> String {
        try String(contentsOfFile: unitDirectory + "/" + name, encoding: .utf8)
    }

    /// The `Key=value` lines of a unit, comments left out.
    static func settings(_ text: String) -> [(key: String, value: String)] {
        text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), !line.hasPrefix(";"), let equals = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<equals]), String(line[line.index(after: equals)...]))
        }
    }

    static func values(_ key: String, in text: String) -> [String] {
        settings(text).filter { $0.key == key }.map(\.value)
    }

    /// Runs `systemd-analyze --user verify --man=no` on copies of `units` in a fresh directory (the
    /// service's ExecStart pointed at /bin/true, which exists), with a private runtime directory;
    /// its exit status and everything it printed.
    static func verify(_ units: [String: String]) throws -> (status: Int32, output: String) {
        let analyze = try requiredTool("systemd-analyze")
        let directory = try TemporaryDirectory()
        let runtime = try directory.make("runtime", mode: 0o700)
        var paths: [String] = []
        for (name, text) in units {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                line.hasPrefix("ExecStart=") ? "ExecStart=/bin/true" : String(line)
            }
            paths.append(try directory.write(name, lines.joined(separator: "\n")))
        }
        let output = directory.path + "/output"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: analyze)
        process.arguments = ["--user", "verify", "--man=no"] + paths.sorted()
        process.environment = ["XDG_RUNTIME_DIR": runtime, "HOME": directory.path, "PATH": "/usr/bin:/bin"]
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        process.waitUntilExit()
        try handle.close()
        return (process.terminationStatus, try String(contentsOfFile: output, encoding: .utf8))
    }

    @Test("systemd-analyze verify accepts the three units without a word")
    func verifies() throws {
        let result = try Self.verify([
            "keychaind.socket": try Self.unit("keychaind.socket"),
            "keychaind.service": try Self.unit("keychaind.service"),
            "keychaind-secret-service.service": try Self.unit("keychaind-secret-service.service"),
        ])
        #expect(result.status == 0 && result.output.isEmpty, "\(result.output)")
    }

    @Test("the check is real: an unknown key or a bad value is reported")
    func verifyReportsMistakes() throws {
        let service = try Self.unit("keychaind.service").replacingOccurrences(
            of: "ProtectSystem=strict", with: "ProtectSystem=stricter\nNoSuchOption=yes")
        let result = try Self.verify([
            "keychaind.socket": try Self.unit("keychaind.socket"), "keychaind.service": service,
        ])
        #expect(result.output.contains("NoSuchOption") && result.output.contains("stricter"), "\(result.output)")
    }

    @Test(
        "the sockets are the agent's and its SSH agent's: %t/keychain/agent.sock and ssh-agent.sock, 0600 in a 0700 directory"
    )
    func socketUnit() throws {
        let socket = try Self.unit("keychaind.socket")
        #expect(
            Self.values("ListenStream", in: socket) == ["%t/keychain/agent.sock", "%t/keychain/ssh-agent.sock"])
        #expect(Self.values("SocketMode", in: socket) == ["0600"])
        #expect(Self.values("DirectoryMode", in: socket) == ["0700"])
        #expect(Self.values("Accept", in: socket) == ["no"], "one agent process for all connections")
    }

    @Test("the service may write exactly where KeychainPaths puts keychains, the device key and preferences")
    func writablePaths() throws {
        let service = try Self.unit("keychaind.service")
        let paths = KeychainPaths(environment: ["HOME": "%h"])
        let writable = Self.values("ReadWritePaths", in: service).flatMap { $0.split(separator: " ") }.map {
            $0.hasPrefix("-") ? String($0.dropFirst()) : String($0)
        }
        let parent = { (path: String) in (path as NSString).deletingLastPathComponent }
        #expect(Set(writable) == [paths.keychainsDirectory, paths.configurationDirectory, "%t/keychain"])
        #expect(parent(paths.deviceKeyFile) == paths.configurationDirectory)
        #expect(parent(paths.preferencesFile) == paths.configurationDirectory)
        #expect(parent(paths.loginKeychain) == paths.keychainsDirectory)
        let created = Self.values("ExecStartPre", in: service).joined(separator: " ")
        #expect(created.contains(paths.keychainsDirectory) && created.contains(paths.configurationDirectory))
        #expect(created.contains("-m 0700"))
    }

    @Test(
        "the service is sandboxed, restarts on failure and dumps no core; it reaches the TPM and, for sync, IP"
    )
    func serviceHardening() throws {
        let service = try Self.unit("keychaind.service")
        for (key, value) in [
            ("ExecStart", "%h/.local/bin/keychaind"), ("Restart", "on-failure"), ("LimitCORE", "0"),
            ("NoNewPrivileges", "yes"), ("PrivateTmp", "yes"), ("ProtectSystem", "strict"),
            ("MemoryDenyWriteExecute", "yes"), ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
            ("LockPersonality", "yes"), ("PrivateDevices", "yes"), ("BindPaths", "-/dev/tpmrm0"),
            ("ProtectKernelTunables", "yes"), ("ProtectKernelModules", "yes"), ("ProtectControlGroups", "yes"),
            ("RestrictNamespaces", "yes"), ("RestrictSUIDSGID", "yes"), ("UMask", "0077"),
        ] {
            #expect(Self.values(key, in: service) == [value], "\(key)")
        }
        // /proc of the user's processes is how callers are identified: never hidden.
        #expect(Self.values("ProtectProc", in: service).isEmpty && Self.values("ProtectHome", in: service).isEmpty)
    }
}
