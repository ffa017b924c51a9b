import Crypto
import Foundation
import KeychainCore
import KeychainModel
import KeychainTestSupport
import SSHAgent
import Testing

/// keychaind's SSH agent driven by OpenSSH's own programs: `ssh-add` stores keys in the
/// keychain and lists them, `ssh-keygen -Y sign` signs through the agent and `-Y verify` checks
/// the signature, and `ssh` logs in to an `sshd` started on a loopback port.
@Suite("keychaind's SSH agent, with OpenSSH's tools", .serialized, .timeLimit(.minutes(10)))
struct SSHAgentTests {
    /// A keychaind of the test's own: its home, its agent socket and the SSH socket beside it.
    final class Agent {
        let directory: String
        private(set) var daemon: TestDaemon
        var agentSocket: String { directory + "/run/agent.sock" }
        var sshSocket: String { directory + "/run/" + SSHAgentServer.socketName }

        /// More of the agent's environment (`KEYCHAIN_PINENTRY`, …).
        let extra: [String: String]

        /// An agent whose preferences name `tpm` as this machine's TPM, when given, with `extra`
        /// in its environment.
        init(tpm: SoftwareTPM? = nil, extra: [String: String] = [:]) throws {
            self.extra = extra
            directory = FileManager.default.temporaryDirectory.path + "/ssh-agent-" + UUID().uuidString.prefix(8)
            for sub in ["", "/run", "/home", "/keys"] {
                try FileManager.default.createDirectory(
                    atPath: directory + sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            if let tpm {
                var preferences = KeychainPreferences()
                preferences.tpm = tpm.tcti
                let file = KeychainPaths(environment: Self.environment(directory)).preferencesFile
                try FileManager.default.createDirectory(
                    atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try preferences.save(to: file)
            }
            daemon = try Self.start(directory, extra: extra)
            try waitForSocket()
        }

        deinit {
            stopAgent(at: agentSocket)
            daemon.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        private static func start(_ directory: String, extra: [String: String]) throws -> TestDaemon {
            try TestDaemon(
                SSHAgentTests.products + "/keychaind", ["--socket", directory + "/run/agent.sock"],
                environment: environment(directory).merging(extra) { $1 })
        }

        static func environment(_ directory: String) -> [String: String] {
            [
                "HOME": directory + "/home", "XDG_DATA_HOME": directory + "/home/data",
                "XDG_CONFIG_HOME": directory + "/home/config", "PATH": "/usr/bin:/bin",
                "KEYCHAIN_UNSAFE_TEST_KDF": "1", "KEYCHAIN_AGENT_SOCK": directory + "/run/agent.sock",
                "SSH_AUTH_SOCK": directory + "/run/" + SSHAgentServer.socketName,
            ]
        }

        var environment: [String: String] { Self.environment(directory) }

        /// Stops the agent and starts another on the same home.
        func restart() throws {
            stopAgent(at: agentSocket)
            daemon.stop()
            daemon = try Self.start(directory, extra: extra)
            try waitForSocket()
        }

        private func waitForSocket() throws {
            for _ in 0..<600 {
                if agentPid(at: sshSocket) != nil { return }
                usleep(50_000)
            }
            throw SSHAgentTestFailure("the SSH agent socket never answered: \(daemon.errors)")
        }

        /// Runs `tool` with the agent's environment.
        func run(_ tool: String, _ arguments: [String], input: String? = nil) throws -> SSHAgentTests.Ran {
            try SSHAgentTests.run(tool, arguments, environment: environment, input: input)
        }

        /// `ssh-keygen -Y sign` of a file through the agent with the key of `publicKey` (whose
        /// `.pub` line is `line`), then `ssh-keygen -Y verify` of that signature.
        func expectSignsAndVerifies(
            publicKey: String, line: String, sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let data = directory + "/keys/data"
            try Data("signed through keychaind".utf8).write(to: URL(fileURLWithPath: data))
            try? FileManager.default.removeItem(atPath: data + ".sig")
            let signed = try run("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", publicKey, data])
            #expect(signed.status == 0, "\(signed.errors) \(daemon.errors)", sourceLocation: sourceLocation)
            let allowed = directory + "/keys/allowed"
            try "me \(line)\n".write(toFile: allowed, atomically: true, encoding: .utf8)
            let verified = try run(
                "/usr/bin/ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "me", "-n", "file", "-s", data + ".sig"],
                input: "signed through keychaind")
            #expect(
                verified.status == 0 && verified.output.contains("Good \"file\" signature"), "\(verified)",
                sourceLocation: sourceLocation)
        }

        /// A key made by `ssh-keygen` (`type` and `bits`), with its comment.
        func makeKey(_ type: String, bits: String?, name: String) throws -> String {
            let path = directory + "/keys/" + name
            let made = try run(
                "/usr/bin/ssh-keygen",
                ["-q", "-t", type, "-N", "", "-C", name, "-f", path] + (bits.map { ["-b", $0] } ?? []))
            guard made.status == 0 else { throw SSHAgentTestFailure("ssh-keygen: \(made.errors)") }
            return path
        }
    }

    struct Ran {
        var status: Int32
        var output: String
        var errors: String
    }

    static let products: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path
    }()

    /// Runs `tool`, its output and errors to files (neither can fill and stall).
    static func run(_ tool: String, _ arguments: [String], environment: [String: String], input: String? = nil)
        throws -> Ran
    {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw SSHAgentTestFailure("\(tool) is missing (.ci/run installs it)")
        }
        let base = FileManager.default.temporaryDirectory.path + "/ssh-run-" + UUID().uuidString.prefix(8)
        FileManager.default.createFile(atPath: base + ".out", contents: nil)
        FileManager.default.createFile(atPath: base + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: base + ".out")
            try? FileManager.default.removeItem(atPath: base + ".err")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
        let inputPipe = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : inputPipe
        try process.run()
        if let input {
            inputPipe.fileHandleForWriting.write(Data(input.utf8))
            try inputPipe.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        return Ran(
            status: process.terminationStatus,
            output: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
            errors: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
    }

    /// The fingerprint `ssh-keygen -l` prints for a public key file.
    static func fingerprint(_ agent: Agent, _ publicKey: String) throws -> String {
        let listed = try agent.run("/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", publicKey])
        return try #require(listed.output.split(separator: " ").dropFirst().first.map(String.init), "\(listed)")
    }

    static let keyKinds: [(type: String, bits: String?)] = [
        ("ed25519", nil), ("ecdsa", "256"), ("ecdsa", "384"), ("rsa", "3072"),
    ]

    @Test(
        "ssh-add stores the key in the keychain; ssh-add -L lists it as ssh-keygen wrote it; ssh-keygen -Y signs through the agent and the signature verifies",
        arguments: keyKinds.map { "\($0.type)-\($0.bits ?? "")" })
    func addListSign(kind: String) throws {
        let (type, bits) = try #require(Self.keyKinds.first { "\($0.type)-\($0.bits ?? "")" == kind })
        let agent = try Agent()
        let key = try agent.makeKey(type, bits: bits, name: "key-\(kind)")
        let added = try agent.run("/usr/bin/ssh-add", [key])
        #expect(added.status == 0, "\(added.errors) \(agent.daemon.errors)")
        let publicLine = try String(contentsOfFile: key + ".pub", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let listed = try agent.run("/usr/bin/ssh-add", ["-L"])
        #expect(listed.status == 0 && listed.output.contains(publicLine), "\(listed.output)")
        // A keychain item, which `security` finds by the key's fingerprint.
        let fingerprint = try Self.fingerprint(agent, key + ".pub")
        let item = try agent.run(
            Self.products + "/security", ["find-generic-password", "-s", SSHAgent.itemService, "-a", fingerprint])
        #expect(item.status == 0, "\(item.errors)")
        // The private key file gone, ssh-keygen signs with the agent's copy.
        try FileManager.default.removeItem(atPath: key)
        try agent.expectSignsAndVerifies(publicKey: key + ".pub", line: publicLine)
    }

    @Test(
        "security import of an OpenSSH private key stores it as ssh-add does; an encrypted one is refused with the way forward",
        arguments: keyKinds.map { "\($0.type)-\($0.bits ?? "")" })
    func securityImportsOpenSSHKeys(kind: String) throws {
        let (type, bits) = try #require(Self.keyKinds.first { "\($0.type)-\($0.bits ?? "")" == kind })
        let agent = try Agent()
        let key = try agent.makeKey(type, bits: bits, name: "imported-\(kind)")
        let imported = try agent.run(Self.products + "/security", ["import", key])
        #expect(
            imported.status == 0 && imported.output.contains("1 key imported."), "\(imported) \(agent.daemon.errors)")
        let publicLine = try String(contentsOfFile: key + ".pub", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let listed = try agent.run("/usr/bin/ssh-add", ["-L"])
        #expect(listed.output.contains(publicLine), "\(listed)")
        // It signs with the file gone.
        try FileManager.default.removeItem(atPath: key)
        let data = agent.directory + "/keys/data"
        try Data("imported".utf8).write(to: URL(fileURLWithPath: data))
        #expect(
            try agent.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", key + ".pub", data]).status == 0)
        // A passphrase-protected key: refused, saying to use ssh-add.
        let locked = agent.directory + "/keys/locked-\(kind)"
        let made = try agent.run(
            "/usr/bin/ssh-keygen",
            ["-q", "-t", type, "-N", "a passphrase", "-f", locked] + (bits.map { ["-b", $0] } ?? []))
        #expect(made.status == 0)
        let refused = try agent.run(Self.products + "/security", ["import", locked])
        #expect(refused.status != 0 && refused.errors.contains("ssh-add"), "\(refused)")
        // A damaged key file: refused, nothing stored.
        let spare = try agent.makeKey(type, bits: bits, name: "spare-\(kind)")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: spare))
        let index = bytes.count / 2 + Int.random(in: -20...20)
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let damaged = agent.directory + "/keys/damaged-\(kind)"
        try bytes.write(to: URL(fileURLWithPath: damaged))
        #expect(try agent.run(Self.products + "/security", ["import", damaged]).status != 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).output.split(separator: "\n").count == 1)
    }

    @Test(
        "keys stay in the keychain across an agent restart; ssh-add -d and -D take them out of view, not out of the keychain"
    )
    func keysOutliveTheAgentAndRemovalOnlyHides() throws {
        let agent = try Agent()
        let first = try agent.makeKey("ed25519", bits: nil, name: "first")
        let second = try agent.makeKey("ecdsa", bits: "256", name: "second")
        for key in [first, second] { #expect(try agent.run("/usr/bin/ssh-add", [key]).status == 0) }
        func listed() throws -> [String] {
            try agent.run("/usr/bin/ssh-add", ["-l"]).output.split(separator: "\n").map(String.init)
        }
        #expect(try listed().count == 2)
        try agent.restart()
        #expect(try listed().count == 2, "the keys are the keychain's, not the agent process's")
        #expect(try agent.run("/usr/bin/ssh-add", ["-d", first + ".pub"]).status == 0)
        #expect(try listed().count == 1 && listed()[0].hasSuffix("second (ECDSA)"))
        // A removed key no longer signs.
        try FileManager.default.removeItem(atPath: first)
        let data = agent.directory + "/keys/data"
        try Data("x".utf8).write(to: URL(fileURLWithPath: data))
        #expect(
            try agent.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", first + ".pub", data]).status != 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-D"]).status == 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).status == 1, "no identities")
        let items = try agent.run(Self.products + "/security", ["dump-keychain"])
        #expect(items.output.components(separatedBy: "\"svce\"<blob>=\"\(SSHAgent.itemService)\"").count == 3)
        // Adding one again brings it back into view.
        #expect(try agent.run("/usr/bin/ssh-add", [second]).status == 0)
        #expect(try listed().count == 1)
    }

    @Test("while the keychain is locked the agent lists and signs nothing; unlocked, it does again")
    func lockedKeychainRefuses() throws {
        let agent = try Agent()
        let key = try agent.makeKey("ed25519", bits: nil, name: "locked")
        #expect(try agent.run("/usr/bin/ssh-add", [key]).status == 0)
        let security = Self.products + "/security"
        let password = "pw-" + UUID().uuidString.prefix(8)
        #expect(try agent.run(security, ["set-keychain-password", "-o", "", "-p", password]).status == 0)
        #expect(try agent.run(security, ["lock-keychain"]).status == 0)
        let listed = try agent.run("/usr/bin/ssh-add", ["-l"])
        #expect(listed.status != 0 && !listed.output.contains("locked (ED25519)"), "\(listed)")
        #expect(agent.daemon.errors.contains("ssh agent: refused a request: the keychain is locked"))
        #expect(try agent.run(security, ["unlock-keychain", "-p", password]).status == 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).output.contains("locked (ED25519)"))
    }

    @Test(
        "while the keychain is locked, ssh-add asks for its password through pinentry on its terminal: a wrong one is asked again, the right one unlocks and lists"
    )
    func lockedKeychainAsksOnTheTerminal() throws {
        let pinentry = "/usr/bin/pinentry-curses"
        guard FileManager.default.isExecutableFile(atPath: pinentry) else {
            throw SSHAgentTestFailure("\(pinentry) is missing (.ci/run installs pinentry-curses)")
        }
        let agent = try Agent(extra: ["KEYCHAIN_PINENTRY": pinentry])
        let key = try agent.makeKey("ed25519", bits: nil, name: "asked")
        #expect(try agent.run("/usr/bin/ssh-add", [key]).status == 0)
        let security = Self.products + "/security"
        let password = "pw-" + UUID().uuidString.prefix(8)
        #expect(try agent.run(security, ["set-keychain-password", "-o", "", "-p", password]).status == 0)
        #expect(try agent.run(security, ["lock-keychain"]).status == 0)
        // Without a terminal or a display nothing can ask: refused, as before.
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).status != 0)
        // On a terminal: the person reads who asks, types a wrong password, then the right one.
        let terminal =
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().path
            + "/SecretServiceTests/Clients/terminal.py"
        var environment = agent.environment
        environment["TERM"] = "xterm"
        let ran = try Self.run(
            "/usr/bin/python3", [terminal, "/usr/bin/ssh-add", "-l"], environment: environment,
            input: "wants to use an SSH key\twrong-password\nWrong password\t\(password)\n")
        #expect(ran.status == 0 && ran.output.contains("asked (ED25519)"), "\(ran) \(agent.daemon.errors)")
        #expect(ran.output.contains("/usr/bin/ssh-add"), "the dialog names the program: \(ran.output)")
        #expect(!agent.daemon.errors.contains(password), "the password is never logged")
        // Unlocked for every client.
        #expect(try agent.run(security, ["show-keychain-info"]).status == 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).output.contains("asked (ED25519)"))
    }

    @Test("ssh logs in to an sshd through the agent with each kind of key, and not once the agent shows none")
    func sshLogsInThroughTheAgent() throws {
        let agent = try Agent()
        for (index, kind) in Self.keyKinds.enumerated() {
            let key = try agent.makeKey(kind.type, bits: kind.bits, name: "login-\(index)")
            #expect(try agent.run("/usr/bin/ssh-add", [key]).status == 0)
            try FileManager.default.removeItem(atPath: key)
        }
        let authorized = agent.directory + "/keys/authorized_keys"
        let keys = try agent.run("/usr/bin/ssh-add", ["-L"])
        try keys.output.write(toFile: authorized, atomically: true, encoding: .utf8)
        let sshd = try SSHServer(directory: agent.directory, authorizedKeys: authorized)
        defer { sshd.stop() }
        func login(_ keyType: String?) throws -> Ran {
            try agent.run(
                "/usr/bin/ssh",
                [
                    "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
                    "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-p", "\(sshd.port)",
                ] + (keyType.map { ["-o", "PubkeyAcceptedAlgorithms=\($0)"] } ?? [])
                    + ["\(NSUserName())@127.0.0.1", "echo", "logged-in"])
        }
        for algorithm in ["ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "rsa-sha2-512", "rsa-sha2-256"] {
            let ran = try login(algorithm)
            #expect(ran.status == 0 && ran.output == "logged-in\n", "\(algorithm): \(ran.errors) \(sshd.errors)")
        }
        #expect(try agent.run("/usr/bin/ssh-add", ["-D"]).status == 0)
        let refused = try login(nil)
        #expect(refused.status == 255, "no key, no login: \(refused.output)")
    }

    @Test(
        "security create-ssh-key makes an SSH key in the TPM: ssh-add -L lists it, ssh-keygen -Y signs with it, ssh logs in with it; without its TPM it signs nothing"
    )
    func tpmKeyLogsIn() throws {
        let tpm = try SoftwareTPM()
        let agent = try Agent(tpm: tpm)
        let made = try agent.run(Self.products + "/security", ["create-ssh-key", "-C", "tpm-key"])
        let line = made.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0 && line.hasPrefix("ecdsa-sha2-nistp256 ") && line.hasSuffix(" tpm-key"), "\(made)")
        let listed = try agent.run("/usr/bin/ssh-add", ["-L"])
        #expect(listed.status == 0 && listed.output.contains(line), "\(listed) \(agent.daemon.errors)")
        // Only its public key exists outside the TPM: ssh-keygen signs through the agent.
        let publicKey = agent.directory + "/keys/tpm.pub"
        try (line + "\n").write(toFile: publicKey, atomically: true, encoding: .utf8)
        try agent.expectSignsAndVerifies(publicKey: publicKey, line: line)
        let data = agent.directory + "/keys/data"
        // A login to sshd with it.
        let authorized = agent.directory + "/keys/authorized_keys"
        try (line + "\n").write(toFile: authorized, atomically: true, encoding: .utf8)
        let sshd = try SSHServer(directory: agent.directory, authorizedKeys: authorized)
        defer { sshd.stop() }
        let login = try agent.run(
            "/usr/bin/ssh",
            [
                "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
                "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-p", "\(sshd.port)",
                "\(NSUserName())@127.0.0.1", "echo", "logged-in",
            ])
        #expect(login.status == 0 && login.output == "logged-in\n", "\(login.errors) \(sshd.errors)")
        // The TPM gone, nothing signs, and the agent says why.
        tpm.stop()
        try FileManager.default.removeItem(atPath: data + ".sig")
        let refused = try agent.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", publicKey, data])
        #expect(refused.status != 0)
        #expect(agent.daemon.errors.contains("TPM"), "\(agent.daemon.errors)")
    }

    @Test(
        "ssh-add -x locks the agent: it lists and signs nothing; ssh-add -X with another passphrase fails, with the same one unlocks"
    )
    func lockingTheAgent() throws {
        let agent = try Agent()
        let key = try agent.makeKey("ed25519", bits: nil, name: "lockable")
        #expect(try agent.run("/usr/bin/ssh-add", [key]).status == 0)
        /// ssh-add with a passphrase given by an askpass program, as a desktop's would.
        func ssh(_ arguments: [String], passphrase: String) throws -> Ran {
            let askpass = agent.directory + "/keys/askpass-\(UUID().uuidString.prefix(8))"
            try "#!/bin/sh\nprintf '%s\\n' '\(passphrase)'\n".write(toFile: askpass, atomically: true, encoding: .utf8)
            chmod(askpass, 0o700)
            var environment = agent.environment
            environment["SSH_ASKPASS"] = askpass
            environment["SSH_ASKPASS_REQUIRE"] = "force"
            environment["DISPLAY"] = ":0"
            return try Self.run("/usr/bin/ssh-add", arguments, environment: environment)
        }
        let locked = try ssh(["-x"], passphrase: "lock words")
        #expect(locked.status == 0, "\(locked) \(agent.daemon.errors)")
        let listed = try agent.run("/usr/bin/ssh-add", ["-l"])
        #expect(listed.status == 1 && !listed.output.contains("lockable"), "\(listed)")
        let data = agent.directory + "/keys/data"
        try Data("x".utf8).write(to: URL(fileURLWithPath: data))
        try FileManager.default.removeItem(atPath: key)
        #expect(
            try agent.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", key + ".pub", data]).status != 0)
        #expect(try ssh(["-x"], passphrase: "again").status != 0, "a locked agent does not lock again")
        #expect(try ssh(["-X"], passphrase: "wrong words").status != 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).status == 1, "still locked")
        #expect(try ssh(["-X"], passphrase: "lock words").status == 0)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).output.contains("lockable (ED25519)"))
        #expect(
            try agent.run("/usr/bin/ssh-keygen", ["-Y", "sign", "-n", "file", "-f", key + ".pub", data]).status == 0)
        #expect(!agent.daemon.errors.contains("lock words"), "the passphrase is never logged")
    }

    @Test("a malformed, unknown or oversized request is refused; the agent goes on and its keys are intact")
    func badRequestsAreRefused() throws {
        let agent = try Agent()
        let key = try agent.makeKey("ed25519", bits: nil, name: "kept")
        #expect(try agent.run("/usr/bin/ssh-add", [key]).status == 0)
        let client = try RawClient(path: agent.sshSocket)
        // Unknown type, a sign request cut short, a key of an unknown type: each a failure (5).
        for request: [UInt8] in [[200], [13, 0, 0, 0, 9, 1], [17, 0, 0, 0, 7] + Array("ssh-dss".utf8)] {
            #expect(try client.exchange(request) == [5], "\(request)")
        }
        // Over 256 KiB: the client is let go.
        #expect(try client.sendLength(300 * 1024) == nil)
        #expect(try agent.run("/usr/bin/ssh-add", ["-l"]).output.contains("kept (ED25519)"))
    }

    @Test(
        "10^5 randomized requests, mutated from valid ones: each answered with a failure or a well-formed reply; the keys still sign"
    )
    func fuzzedRequests() throws {
        let keychain = try KeychainDatabase.inMemory()
        let agent = SSHAgent()
        func ask(_ request: [UInt8]) -> [UInt8] {
            agent.answer(request, log: { _ in }) { body in try body(keychain) }
        }
        // A valid Ed25519 key, added, then its blob for sign requests.
        let seedKey = try SSHAgentFuzz.ed25519AddRequest()
        #expect(ask(seedKey.add) == [6])
        let valid: [[UInt8]] = [
            [11], seedKey.add, SSHAgentFuzz.signRequest(blob: seedKey.blob, data: Array("data".utf8), flags: 0),
            SSHAgentFuzz.stringMessage(18, seedKey.blob), [19],
        ]
        var generator = SystemRandomNumberGenerator()
        for round in 0..<100_000 {
            var request = valid[round % valid.count]
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                switch Int.random(in: 0..<3, using: &generator) {
                case 0 where !request.isEmpty:
                    request[Int.random(in: 0..<request.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                case 1 where !request.isEmpty:
                    request.removeLast(Int.random(in: 1...request.count, using: &generator))
                default:
                    request.append(UInt8.random(in: 0...255, using: &generator))
                }
            }
            let reply = ask(request)
            #expect(!reply.isEmpty && [5, 6, 12, 14].contains(reply[0]))
            // A fuzzed request that locked the agent (`ssh-add -x`) is undone with its passphrase.
            if agent.isLocked {
                #expect(request.first == 22 && reply == [6])
                #expect(ask([23] + request.dropFirst()) == [6], "the same passphrase unlocks")
            }
        }
        // The key is still there and signs (added again, in case a fuzzed -D took it out of view).
        #expect(ask(seedKey.add) == [6])
        let signature = ask(SSHAgentFuzz.signRequest(blob: seedKey.blob, data: Array("data".utf8), flags: 0))
        #expect(signature.first == 14)
    }
}

struct SSHAgentTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A client that speaks the agent protocol's framing directly.
final class RawClient {
    let socket: Int32

    init(path: String) throws {
        socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw SSHAgentTestFailure("connect: errno \(errno)") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(socket) }

    /// Sends `request` framed, and returns the reply's contents (`nil` when the agent hung up).
    func exchange(_ request: [UInt8]) throws -> [UInt8]? {
        let framed = Self.length(request.count) + request
        guard send(socket, framed, framed.count, Int32(MSG_NOSIGNAL)) == framed.count else { return nil }
        return receive()
    }

    /// Sends only a length; the agent's answer, `nil` when it hung up.
    func sendLength(_ length: Int) throws -> [UInt8]? {
        let header = Self.length(length)
        _ = send(socket, header, 4, Int32(MSG_NOSIGNAL))
        return receive()
    }

    private func receive() -> [UInt8]? {
        guard let header = read(4) else { return nil }
        return read(header.reduce(0) { $0 << 8 | Int($1) })
    }

    private func read(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + offset, count - offset, 0) }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }

    static func length(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
}

/// An `sshd` on a free loopback port that lets the current user in with the keys of
/// `authorizedKeys` only.
final class SSHServer {
    let port: Int
    let daemon: TestDaemon

    init(directory: String, authorizedKeys: String) throws {
        let hostKey = directory + "/keys/host"
        let made = try SSHAgentTests.run(
            "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKey],
            environment: ["PATH": "/usr/bin:/bin"])
        guard made.status == 0 else { throw SSHAgentTestFailure("host key: \(made.errors)") }
        // The privilege separation directory sshd was built with (systemd makes it at boot).
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        port = try Self.freePort()
        let config = directory + "/sshd_config"
        try """
        Port \(port)
        ListenAddress 127.0.0.1
        HostKey \(hostKey)
        PidFile \(directory)/sshd.pid
        AuthorizedKeysFile \(authorizedKeys)
        StrictModes no
        UsePAM no
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        PubkeyAuthentication yes
        PermitRootLogin prohibit-password
        AllowUsers \(NSUserName())
        """.write(toFile: config, atomically: true, encoding: .utf8)
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/sshd") else {
            throw SSHAgentTestFailure("/usr/sbin/sshd is missing (.ci/run installs openssh-server)")
        }
        daemon = try TestDaemon("/usr/sbin/sshd", ["-D", "-e", "-f", config], environment: ["PATH": "/usr/bin:/bin"])
        for _ in 0..<200 {
            if Self.accepts(port) { return }
            usleep(50_000)
        }
        daemon.stop()
        throw SSHAgentTestFailure("sshd did not listen: \(daemon.errors)")
    }

    var errors: String { daemon.errors }

    func stop() { daemon.stop() }

    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw SSHAgentTestFailure("no free port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// Requests built by hand for the randomized test.
enum SSHAgentFuzz {
    static func string(_ bytes: [UInt8]) -> [UInt8] { RawClient.length(bytes.count) + bytes }

    /// `SSH_AGENTC_ADD_IDENTITY` for a new Ed25519 key, and the key's public blob.
    static func ed25519AddRequest() throws -> (add: [UInt8], blob: [UInt8]) {
        let key = Curve25519.Signing.PrivateKey()
        let publicKey = Array(key.publicKey.rawRepresentation)
        let type = Array("ssh-ed25519".utf8)
        let add =
            [17] + string(type) + string(publicKey) + string(Array(key.rawRepresentation) + publicKey)
            + string(Array("fuzz".utf8))
        return (add, string(type) + string(publicKey))
    }

    static func signRequest(blob: [UInt8], data: [UInt8], flags: UInt32) -> [UInt8] {
        [13] + string(blob) + string(data) + RawClient.length(Int(flags))
    }

    static func stringMessage(_ type: UInt8, _ bytes: [UInt8]) -> [UInt8] { [type] + string(bytes) }
}

extension SSHAgentTests {
    @Test(
        "started by socket activation with both of keychaind.socket's sockets, keychaind serves the SSH socket it was given, from its first connection"
    )
    func socketActivatedAgentServesTheSSHSocket() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/ssh-activated-" + UUID().uuidString.prefix(8)
        for sub in ["", "/run", "/home", "/keys"] {
            try FileManager.default.createDirectory(
                atPath: directory + sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = Agent.environment(directory)
        let agentSocket = directory + "/run/agent.sock"
        let sshSocket = directory + "/run/" + SSHAgentServer.socketName
        // As keychaind.socket lists them: the agent's socket, then the SSH agent's.
        let activator = try TestDaemon(
            "/usr/bin/systemd-socket-activate",
            ["-l", agentSocket, "-l", sshSocket, Self.products + "/keychaind", "--socket", agentSocket],
            environment: environment)
        defer {
            stopAgent(at: agentSocket)
            activator.stop()
        }
        for _ in 0..<400 where access(sshSocket, F_OK) != 0 { usleep(25_000) }
        // The first connection is ssh-add's, to the SSH socket: it starts keychaind, which serves it.
        let key = directory + "/keys/activated"
        let made = try Self.run(
            "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "activated", "-f", key],
            environment: environment)
        #expect(made.status == 0)
        let added = try Self.run("/usr/bin/ssh-add", [key], environment: environment)
        #expect(added.status == 0, "\(added.errors) \(activator.errors)")
        let listed = try Self.run("/usr/bin/ssh-add", ["-l"], environment: environment)
        #expect(listed.output.contains("activated (ED25519)"), "\(listed)")
        #expect(agentPid(at: sshSocket) == activator.pid, "the activated keychaind (the same process) serves it")
        #expect(agentPid(at: agentSocket) == activator.pid)
    }
}
