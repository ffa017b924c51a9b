import Foundation
import KeychainTestSupport
import LocalAuthentication
import Testing

/// The companion (`SecAccessControlCreateFlags.companion`, the companion `LAPolicy`s) through the
/// real libfido2, against a software FIDO2 key (Clients/security_key.py, a CTAP2 authenticator
/// written for these tests) behind a Unix socket: this kernel has no `uhid` to attach a virtual
/// HID key, and libfido2 takes its transport from the program (`fido_dev_set_io_functions`).
/// Each test pairs keys with `security security-key add`, in a home of its own, and reads
/// through both backends: the keychain in the app's process, and keychaind.
@Suite("The companion: FIDO2 security keys through libfido2")
struct CompanionTests {
    /// SecAccessControlCreateFlags' raw values.
    static let companion = "32"
    static let companionOrPasscode = "\(32 | 16 | 1 << 14)"

    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case inProcess, keychaind
        var testDescription: String { rawValue }
    }

    /// A software key: its socket, and the directory holding its credentials, its presence
    /// ("touch", "deny", "ignore") and its log.
    final class SoftwareKey {
        let daemon: TestDaemon
        let socket: String
        let state: String

        init(in root: String, named name: String) throws {
            socket = root + "/\(name).socket"
            state = root + "/\(name)"
            let script = PolkitFixture.repository + "/Tests/LocalAuthenticationTests/Clients/security_key.py"
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
                throw TestDaemonFailure(description: "/usr/bin/python3 is missing")
            }
            daemon = try TestDaemon(
                "/usr/bin/python3", [script, socket, state], environment: ["PATH": "/usr/bin:/bin"])
            guard daemon.firstLine(within: 30) == "ready" else {
                throw TestDaemonFailure(description: "the software key did not start: \(daemon.errors)")
            }
        }

        var device: String { "unix:" + socket }

        /// What the person does at the next touch.
        func presence(_ answer: String) throws {
            try Data(answer.utf8).write(to: URL(fileURLWithPath: state + "/presence"))
        }

        /// The touches the key saw (`touched get-assertion`, …), in order.
        var touches: [String] {
            let log = String(decoding: FileManager.default.contents(atPath: state + "/log") ?? Data(), as: UTF8.self)
            return log.split(separator: "\n").map(String.init).filter {
                $0.hasPrefix("touched") || $0.hasPrefix("denied") || $0.hasPrefix("timeout")
            }
        }

        deinit { daemon.stop() }
    }

    /// A home of its own, the tools, and a backend.
    final class Fixture {
        let root = FileManager.default.temporaryDirectory.path + "/companion-\(UUID().uuidString.prefix(8))"
        let backend: Backend

        init(_ backend: Backend) throws {
            self.backend = backend
            try FileManager.default.createDirectory(
                atPath: root + "/home/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }

        deinit {
            stopAgent(at: root + "/home/run/keychain.sock")
            stopProcesses(withEnvironmentEntry: "KEYCHAIN_AGENT_SOCK=\(root)/home/run/keychain.sock")
            try? FileManager.default.removeItem(atPath: root)
        }

        var environment: [String: String] {
            var environment = [
                "PATH": "/usr/bin:/bin", "HOME": root + "/home", "XDG_CONFIG_HOME": root + "/home/.config",
                "XDG_DATA_HOME": root + "/home/.local/share",
            ]
            switch backend {
            case .inProcess: environment["KEYCHAIN_AGENT"] = "off"
            case .keychaind:
                environment["KEYCHAIN_AGENT"] = "required"
                environment["XDG_RUNTIME_DIR"] = root + "/home/run"
                environment["KEYCHAIN_AGENT_SOCK"] = root + "/home/run/keychain.sock"
            }
            return environment
        }

        func key(_ name: String) throws -> SoftwareKey { try SoftwareKey(in: root, named: name) }

        /// A fixture with one software key, paired as "first".
        static func paired(_ backend: Backend) throws -> (Fixture, SoftwareKey) {
            let fixture = try Fixture(backend)
            let key = try fixture.key("first")
            try fixture.pair(key, as: "first")
            return (fixture, key)
        }

        /// `security ARGUMENTS`.
        func security(_ arguments: [String]) throws -> PolkitFixture.Outcome {
            try PolkitFixture.run(buildProductsDirectory + "/security", arguments, environment: environment)
        }

        /// Pairs `key` as `name`, and requires it paired.
        func pair(_ key: SoftwareKey, as name: String) throws {
            let paired = try security(["security-key", "add", "-n", name, "-d", key.device])
            try #require(paired.status == 0 && paired.output == "paired \(name)\n", "\(paired)")
        }

        /// The app, `arguments`; what it printed.
        func worker(_ arguments: [String]) throws -> String {
            let run = try PolkitFixture.run(PolkitFixture.builtWorker, arguments, environment: environment)
            return run.output
        }

        /// Stores a password `service` of `flags`; the worker's answer, and the secret.
        func store(_ service: String, flags: String = CompanionTests.companion) throws -> (String, String) {
            let secret = "key-" + UUID().uuidString.prefix(12)
            let file = root + "/secret-\(service)"
            try Data(secret.utf8).write(to: URL(fileURLWithPath: file))
            defer { try? FileManager.default.removeItem(atPath: file) }
            return (try worker(["store", service, file, flags]), secret)
        }
    }

    @Test(
        "a .companion item is read after a touch of the paired key; a key that refuses is errSecUserCanceled; Fail and Skip ask nothing",
        arguments: Backend.allCases)
    func touchReadsItem(backend: Backend) throws {
        let (fixture, key) = try Fixture.paired(backend)
        #expect(key.touches == ["touched make-credential"])
        let (stored, secret) = try fixture.store("vault")
        try #require(stored == "stored\n", "\(stored)")

        #expect(try fixture.worker(["read", "vault"]) == "secret \(secret)\n")
        #expect(key.touches.last == "touched get-assertion")
        try key.presence("deny")
        #expect(try fixture.worker(["read", "vault"]) == "error -128\n")
        #expect(key.touches.last == "denied get-assertion")
        try key.presence("touch")
        let before = key.touches.count
        #expect(try fixture.worker(["read", "vault", "fail"]) == "error -25308\n")
        #expect(try fixture.worker(["read", "vault", "skip"]) == "error -25300\n")
        #expect(key.touches.count == before, "Fail and Skip touched the key: \(key.touches)")
    }

    @Test(
        "an item is bound to the keys paired when it was made: a key paired later is touched and refused (errSecAuthFailed)",
        arguments: Backend.allCases)
    func laterKeyOpensNothing(backend: Backend) throws {
        let fixture = try Fixture(backend)
        let first = try fixture.key("first")
        try fixture.pair(first, as: "first")
        let (stored, _) = try fixture.store("vault")
        try #require(stored == "stored\n", "\(stored)")
        // A second key, paired afterwards; the first is forgotten and taken away.
        let second = try fixture.key("second")
        try fixture.pair(second, as: "second")
        #expect(try fixture.security(["security-key", "remove", "-n", "first"]).output == "removed first\n")
        first.daemon.stop()
        #expect(try fixture.worker(["read", "vault"]) == "error -25293\n")
        #expect(second.touches.last == "touched get-assertion")
        // An item made now is bound to the second key, and reads with it.
        let (again, newer) = try fixture.store("newer")
        try #require(again == "stored\n", "\(again)")
        #expect(try fixture.worker(["read", "newer"]) == "secret \(newer)\n")
    }

    @Test(
        "a paired key whose kept public key was replaced does not verify: errSecAuthFailed, though it was touched",
        arguments: Backend.allCases)
    func forgedPublicKeyFails(backend: Backend) throws {
        let fixture = try Fixture(backend)
        let key = try fixture.key("first")
        let other = try fixture.key("other")
        try fixture.pair(key, as: "first")
        try fixture.pair(other, as: "other")
        let (stored, _) = try fixture.store("vault")
        try #require(stored == "stored\n", "\(stored)")
        // The registry's first entry gets the other key's public key: an item bound to both
        // (as this one is) would accept that key, so only libfido2's check can refuse it.
        let path = fixture.root + "/home/.config/keychain/security-keys.json"
        var file = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        var keys = try #require(file["keys"] as? [[String: Any]])
        var firstKey = try #require(keys[0]["key"] as? [String: Any])
        firstKey["publicKey"] = (keys[1]["key"] as? [String: Any])?["publicKey"]
        keys[0]["key"] = firstKey
        keys.removeLast()
        file["keys"] = keys
        try JSONSerialization.data(withJSONObject: file).write(to: URL(fileURLWithPath: path))
        other.daemon.stop()
        #expect(try fixture.worker(["read", "vault"]) == "error -25293\n")
        #expect(key.touches.last == "touched get-assertion")
    }

    @Test(
        "with no key paired: a .companion item cannot be made (errSecAuthFailed), .companion | .or | .devicePasscode can; canEvaluatePolicy is companionNotAvailable",
        arguments: Backend.allCases)
    func nothingPaired(backend: Backend) throws {
        let fixture = try Fixture(backend)
        #expect(try fixture.store("vault").0 == "error -25293\n")
        #expect(try fixture.store("either", flags: Self.companionOrPasscode).0 == "stored\n")
        #expect(try fixture.worker(["companion"]) == "no \(LAError.Code.companionNotAvailable.rawValue)\ndomain none\n")
        #expect(
            try fixture.worker(["evaluate", "--companion"]) == "error \(LAError.Code.companionNotAvailable.rawValue)\n")
    }

    @Test(
        "an evaluated companion LAContext reads two items twice with one touch; without it, Fail asks nothing; the domain state follows the paired keys",
        arguments: Backend.allCases)
    func evaluatedContext(backend: Backend) throws {
        let (fixture, key) = try Fixture.paired(backend)
        let domain = try fixture.worker(["companion"])
        #expect(domain.hasPrefix("yes\ndomain ") && domain.count == "yes\ndomain \n".count + 64, "\(domain)")
        let (_, first) = try fixture.store("one")
        let (_, second) = try fixture.store("two")
        let touched = key.touches.count
        let run = try fixture.worker(["evaluate-and-read", "one,two", "2", "--companion"])
        #expect(
            run
                == "success\nsecret \(first)\nsecret \(first)\nsecret \(second)\nsecret \(second)\nwithout the context\nerror -25308\n",
            "\(run)")
        #expect(key.touches.count == touched + 1, "\(key.touches)")
        // Pairing a second key changes the companions' domain state.
        try fixture.pair(try fixture.key("second"), as: "second")
        let changed = try fixture.worker(["companion"])
        #expect(changed.hasPrefix("yes\ndomain ") && changed != domain, "\(changed)")
    }

    @Test(
        "a key nobody touches is LAError.systemCancel; one that refuses likewise; Biometry-or-companion uses the key without a reader"
    )
    func evaluationOutcomes() throws {
        let (fixture, key) = try Fixture.paired(.inProcess)
        try key.presence("ignore")
        #expect(try fixture.worker(["evaluate", "--companion"]) == "error \(LAError.Code.systemCancel.rawValue)\n")
        #expect(key.touches.last == "timeout get-assertion")
        try key.presence("deny")
        #expect(try fixture.worker(["evaluate", "--companion"]) == "error \(LAError.Code.systemCancel.rawValue)\n")
        try key.presence("touch")
        // No fprintd on this system bus: "biometry or companion" is the key.
        #expect(try fixture.worker(["evaluate", "--either"]) == "success\n")
        #expect(key.touches.last == "touched get-assertion")
    }

    @Test(
        "security-key: list names each key and its device; a second key of a name is refused; remove forgets it; a malformed list is refused"
    )
    func registryCommands() throws {
        let fixture = try Fixture(.inProcess)
        let key = try fixture.key("first")
        try fixture.pair(key, as: "laptop")
        let listed = try fixture.security(["security-key", "list"])
        #expect(listed.output.hasPrefix("laptop\tpaired ") && listed.output.hasSuffix("\t\(key.device)\n"), "\(listed)")
        let again = try fixture.security(["security-key", "add", "-n", "laptop", "-d", key.device])
        #expect(again.status == 45 && again.errors.contains("laptop"), "\(again)")
        #expect(try fixture.security(["security-key", "remove", "-n", "laptop"]).output == "removed laptop\n")
        #expect(try fixture.security(["security-key", "list"]).output == "")
        let missing = try fixture.security(["security-key", "remove", "-n", "laptop"])
        #expect(missing.status == 44, "\(missing)")
        let path = fixture.root + "/home/.config/keychain/security-keys.json"
        try Data("{\"version\": 1, \"keys\": [{\"name\": 3}]}".utf8).write(to: URL(fileURLWithPath: path))
        let malformed = try fixture.security(["security-key", "list"])
        #expect(
            malformed.status != 0 && malformed.errors.contains("not a list of paired security keys"), "\(malformed)")
        #expect(try fixture.store("vault").0 == "error -25293\n")
    }

    @Test(
        "a Secure Enclave key made with .privateKeyUsage | .companion is found unasked; each signature takes a touch; a refusal is errSecUserCanceled",
        arguments: Backend.allCases)
    func secureEnclaveKey(backend: Backend) throws {
        let (fixture, key) = try Fixture.paired(backend)
        #expect(try fixture.worker(["key-create", "signing", Self.companion]) == "created\n")
        let before = key.touches.count
        #expect(try fixture.worker(["key-sign", "signing"]) == "found\nsigned\n")
        #expect(try fixture.worker(["key-sign", "signing"]) == "found\nsigned\n")
        #expect(key.touches.count == before + 2, "\(key.touches)")
        try key.presence("deny")
        #expect(try fixture.worker(["key-sign", "signing"]) == "found\nerror -128\n")
        // Made with .privateKeyUsage alone, a key asks nothing.
        #expect(try fixture.worker(["key-create", "plain", "0"]) == "created\n")
        let untouched = key.touches.count
        #expect(try fixture.worker(["key-sign", "plain"]) == "found\nsigned\n")
        #expect(key.touches.count == untouched)
    }

    @Test(
        "a Secure Enclave key found with an evaluated companion context signs three times on the evaluation's one touch",
        arguments: Backend.allCases)
    func keyWithEvaluatedContext(backend: Backend) throws {
        let (fixture, key) = try Fixture.paired(backend)
        #expect(try fixture.worker(["key-create", "signing", Self.companion]) == "created\n")
        let before = key.touches.count
        let run = try fixture.worker(["key-sign", "signing", "3", "--companion"])
        #expect(run == "success\nfound\nsigned\nsigned\nsigned\n", "\(run)")
        #expect(key.touches.count == before + 1, "\(key.touches)")
        // Without the context, each signature takes a touch again.
        #expect(try fixture.worker(["key-sign", "signing", "2"]) == "found\nsigned\nsigned\n")
        #expect(key.touches.count == before + 3, "\(key.touches)")
    }

    @Test("keychaind's access log credits a touch of a security key")
    func accessLog() throws {
        let (fixture, key) = try Fixture.paired(.keychaind)
        let (_, secret) = try fixture.store("vault")
        #expect(try fixture.worker(["read", "vault"]) == "secret \(secret)\n")
        let log = try fixture.security(["access-log"])
        #expect(log.output.contains("(service \"vault\", account \"owner\")"), "\(log)")
        #expect(log.output.contains("a touch of a security key"), "\(log)")
        #expect(!log.output.contains(secret))
    }

    @Test(
        "an SSH key made with create-ssh-key -p companion signs through keychaind's SSH agent after a touch of the paired key; a refused touch signs nothing"
    )
    func sshKeyAsksForATouch() throws {
        let (fixture, key) = try Fixture.paired(.keychaind)
        let made = try fixture.security(["create-ssh-key", "-p", "companion", "-C", "touched"])
        try #require(made.status == 0 && made.output.hasPrefix("ecdsa-sha2-nistp256 "), "\(made)")
        let publicKey = fixture.root + "/touched.pub"
        let data = fixture.root + "/data"
        try made.output.write(toFile: publicKey, atomically: true, encoding: .utf8)
        try "signed after a touch".write(toFile: data, atomically: true, encoding: .utf8)
        var environment = fixture.environment
        environment["SSH_AUTH_SOCK"] = fixture.root + "/home/run/ssh-agent.sock"
        let sign = ["-Y", "sign", "-n", "file", "-f", publicKey, data]
        let before = key.touches.count

        try key.presence("touch")
        let signed = try PolkitFixture.run("/usr/bin/ssh-keygen", sign, environment: environment)
        #expect(signed.status == 0 && FileManager.default.fileExists(atPath: data + ".sig"), "\(signed)")
        #expect(Array(key.touches.dropFirst(before)) == ["touched get-assertion"], "one touch: \(key.touches)")
        let allowed = fixture.root + "/allowed"
        try "me \(made.output)".write(toFile: allowed, atomically: true, encoding: .utf8)
        let verified = try PolkitFixture.run(
            "/usr/bin/ssh-keygen", ["-Y", "verify", "-f", allowed, "-I", "me", "-n", "file", "-s", data + ".sig"],
            input: "signed after a touch", environment: environment)
        #expect(verified.output.contains("Good \"file\" signature"), "\(verified)")
        let log = try fixture.security(["access-log"])
        #expect(
            log.output.contains("used keys \"touched\"") && log.output.contains("a touch of a security key"), "\(log)")

        try FileManager.default.removeItem(atPath: data + ".sig")
        try key.presence("deny")
        let refused = try PolkitFixture.run("/usr/bin/ssh-keygen", sign, environment: environment)
        #expect(refused.status != 0 && !FileManager.default.fileExists(atPath: data + ".sig"), "\(refused)")
        #expect(key.touches.last == "denied get-assertion", "\(key.touches)")
    }
}
