import Foundation
import KeychainTestSupport
import LocalAuthentication
import Testing
import UserPresence

/// The real polkitd (Debian's `polkitd`) on a private system bus, in a mount namespace of its own
/// where `/usr/share/polkit-1/actions` holds only this package's action and the private bus is
/// at `/run/dbus/system_bus_socket` (polkit's setuid helper reads no environment, so the bus must
/// be where it looks). The machine's own directories and bus are never touched. Processes run in
/// that namespace through `nsenter`, as the throw-away account `keychain-la-test` that `.ci/run`
/// makes, which each test gives a random password of its own.
///
/// With `fingerprintReader`, the real fprintd runs there too, on libfprint's virtual reader
/// (`FP_VIRTUAL_DEVICE`, as fprintd's own tests drive it), its prints kept in the fixture's
/// directory; fprintd's own polkit actions are installed beside ours, and a rule grants the
/// account its reader, as polkit's defaults grant an active local session (there is no logind
/// here to say the account's session is one).
final class PolkitFixture {
    static let user = "keychain-la-test"
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    /// A person at a terminal (SecretServiceTests' pseudo-terminal driver).
    static let terminalDriver = repository + "/Tests/SecretServiceTests/Clients/terminal.py"
    /// The app that evaluates an `LAContext`.
    static var builtWorker: String { buildProductsDirectory + "/keychain-la-worker" }

    let root = FileManager.default.temporaryDirectory.path + "/polkit-\(UUID().uuidString.prefix(8))"
    let bus: TestDaemon
    let holder: TestDaemon
    /// The copies the account runs.
    var worker: String { root + "/keychain-la-worker" }
    var terminal: String { root + "/terminal.py" }
    /// The account's home for the test: its keychains, and keychaind's socket.
    var home: String { root + "/home" }

    /// The virtual reader's socket, where a finger "touches" it (``touch(_:)``).
    var readerSocket: String { root + "/reader.socket" }
    /// The person at the reader.
    var fingerScript: String { root + "/finger.py" }

    init(fingerprintReader: Bool = false) throws {
        var tools = ["/usr/lib/polkit-1/polkitd", "/usr/bin/unshare", "/usr/bin/nsenter"]
        if fingerprintReader { tools += ["/usr/libexec/fprintd", "/usr/bin/python3"] }
        for tool in tools {
            guard FileManager.default.isExecutableFile(atPath: tool) else {
                throw TestDaemonFailure(description: "\(tool) is missing (.ci/run installs it)")
            }
        }
        try FileManager.default.createDirectory(
            atPath: root + "/actions", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root)
        try FileManager.default.copyItem(
            atPath: Self.repository + "/dist/polkit-1/actions/org.keychainlinux.authenticate.policy",
            toPath: root + "/actions/org.keychainlinux.authenticate.policy")
        try FileManager.default.createDirectory(
            atPath: root + "/rules", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        if fingerprintReader { try Self.installReaderPolicy(root) }
        // The account runs copies kept here: the checkout may be where it cannot read (/root).
        let (worker, terminal) = (root + "/keychain-la-worker", root + "/terminal.py")
        // keychaind beside the worker, where a client looks for it first; the `security` tool.
        // Linked where the build is on the same file system (they are large), else copied.
        let (agent, tool) = (root + "/keychaind", root + "/security")
        for (built, copy) in [
            (Self.builtWorker, worker), (buildProductsDirectory + "/keychaind", agent),
            (buildProductsDirectory + "/security", tool), (Self.terminalDriver, terminal),
            (Self.repository + "/Tests/LocalAuthenticationTests/Clients/finger.py", root + "/finger.py"),
        ] {
            if (try? FileManager.default.linkItem(atPath: built, toPath: copy)) == nil {
                try FileManager.default.copyItem(atPath: built, toPath: copy)
            }
        }
        for (path, mode) in [
            (worker, 0o755), (agent, 0o755), (tool, 0o755), (terminal, 0o644), (root + "/finger.py", 0o644),
        ] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        }
        try FileManager.default.createDirectory(
            atPath: root + "/home/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        for path in [root + "/home", root + "/home/run"] {
            _ = try Self.run("/usr/bin/chown", ["\(Self.user):\(Self.user)", path])
            chmod(path, 0o700)
        }
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(root)/bus</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: root + "/system.conf", atomically: true, encoding: .utf8)
        let environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
        bus = try TestDaemon(
            "/usr/bin/dbus-daemon", ["--config-file=\(root)/system.conf", "--nofork", "--print-address"],
            environment: environment)
        guard bus.firstLine() != nil else {
            throw TestDaemonFailure(description: "dbus-daemon gave no address: \(bus.errors)")
        }
        chmod(root + "/bus", 0o666)
        let script = """
            set -e
            mount --bind '\(root)/actions' /usr/share/polkit-1/actions
            mkdir -p /etc/polkit-1/rules.d
            mount --bind '\(root)/rules' /etc/polkit-1/rules.d
            mkdir -p /run/dbus
            mount -t tmpfs tmpfs /run/dbus
            touch /run/dbus/system_bus_socket
            mount --bind '\(root)/bus' /run/dbus/system_bus_socket
            # Waits up to 30 s for NAME to be owned on the bus; fails when it is not.
            wait_for() {
                for i in $(seq 1 300); do
                    dbus-send --system --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                        org.freedesktop.DBus.NameHasOwner string:"$1" 2>/dev/null | grep -q 'boolean true' && return 0
                    sleep 0.1
                done
                return 1
            }
            /usr/lib/polkit-1/polkitd --no-debug > '\(root)/polkitd.log' 2>&1 &
            echo $! > '\(root)/polkitd.pid'
            wait_for org.freedesktop.PolicyKit1
            \(fingerprintReader ? Self.startReader(root) : "")
            echo ready
            exec sleep 100000
            """
        try script.write(toFile: root + "/namespace.sh", atomically: true, encoding: .utf8)
        holder = try TestDaemon(
            "/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", root + "/namespace.sh"],
            environment: environment)
        guard holder.firstLine(within: 60) == "ready" else {
            let log = (try? String(contentsOfFile: root + "/polkitd.log", encoding: .utf8)) ?? ""
            let said = "\(holder.output) \(holder.errors) polkitd: \(log)"
            stop()
            throw TestDaemonFailure(description: "polkitd did not start: \(said)")
        }
    }

    deinit { stop() }

    func stop() {
        // A keychaind a client of the account started (only this serialized suite uses it).
        _ = try? Self.run("/usr/bin/pkill", ["-KILL", "-u", Self.user, "-x", "keychaind"])
        if let text = try? String(contentsOfFile: root + "/polkitd.pid", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(pid, SIGKILL)
        }
        if let text = try? String(contentsOfFile: root + "/fprintd.pid", encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
        {
            kill(pid, SIGKILL)
        }
        holder.stop()
        bus.stop()
        try? FileManager.default.removeItem(atPath: root)
        // No password stays usable on the account.
        _ = try? Self.run("/usr/sbin/usermod", ["--lock", Self.user])
    }

    /// Copies fprintd's polkit actions beside ours, and adds the rule that grants the account the
    /// reader.
    private static func installReaderPolicy(_ root: String) throws {
        let actions = "/usr/share/polkit-1/actions/net.reactivated.fprint.device.policy"
        guard FileManager.default.fileExists(atPath: actions) else {
            throw TestDaemonFailure(description: "\(actions) is missing (.ci/run installs fprintd)")
        }
        try FileManager.default.copyItem(
            atPath: actions, toPath: root + "/actions/net.reactivated.fprint.device.policy")
        let rule = """
            polkit.addRule(function(action, subject) {
                if (action.id.indexOf("net.reactivated.fprint.device.") == 0 && subject.user == "\(user)")
                    return polkit.Result.YES;
            });
            """
        try rule.write(toFile: root + "/rules/50-keychain-test-reader.rules", atomically: true, encoding: .utf8)
        chmod(root + "/rules/50-keychain-test-reader.rules", 0o644)
    }

    /// The namespace script's lines that start fprintd on the virtual reader and wait for its name
    /// (its `wait_for`).
    /// Its umask lets the account's "finger" reach the reader's socket, which fprintd makes anew
    /// each time the reader is claimed.
    private static func startReader(_ root: String) -> String {
        """
        mkdir -p '\(root)/prints'
        (umask 000; FP_VIRTUAL_DEVICE='\(root)/reader.socket' FP_DRIVERS_ALLOWLIST=virtual_device \\
            STATE_DIRECTORY='\(root)/prints' exec /usr/libexec/fprintd -t > '\(root)/fprintd.log' 2>&1) &
        echo $! > '\(root)/fprintd.pid'
        wait_for net.reactivated.Fprint
        """
    }

    /// Enrolls `finger` for the account, every stage touched with `print` (a print's name on the
    /// virtual reader); fprintd's last word ("enroll-completed").
    func enroll(_ finger: String, print: String) throws -> String {
        let run = try runAsUser("/usr/bin/python3", [fingerScript, "enroll", finger, print, readerSocket])
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines) + (run.status == 0 ? "" : " \(run)")
    }

    /// Deletes the account's enrolled fingers, as fprintd-delete does.
    func deleteFingers() throws -> Outcome {
        try runAsUser("/usr/bin/python3", [fingerScript, "delete"])
    }

    /// A person at the reader, ready (watching fprintd) when this returns, who touches it with each
    /// of `prints` in turn, one per try, once it needs a finger; runs until fprintd answered each.
    /// They act at a higher priority than the tests around them: libfprint's virtual reader
    /// waits only half a second for a touch.
    func touch(_ prints: [String], onePerVerification: Bool = false) throws -> TestDaemon {
        let mode = onePerVerification ? "touch-each" : "touch"
        let person = try TestDaemon(
            "/usr/bin/nice", ["-n", "-10", "/usr/bin/python3", fingerScript, mode, readerSocket] + prints,
            environment: ["PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(root)/bus"])
        guard person.firstLine(within: 60) == "ready" else {
            throw TestDaemonFailure(
                description: "the person at the reader is not ready: \(person.output) \(person.errors)")
        }
        return person
    }

    /// Gives the account a new random password, and returns it.
    func newPassword() throws -> String {
        let password = "la-" + UUID().uuidString.prefix(12)
        let set = try Self.run("/usr/sbin/chpasswd", [], input: "\(Self.user):\(password)\n")
        #expect(set.status == 0, "\(set.errors)")
        return password
    }

    /// Runs `program` in the namespace as the account, with a clean environment and `environment`.
    func runAsUser(
        _ program: String, _ arguments: [String], input: String = "", environment: [String: String] = [:]
    ) throws -> Outcome {
        let variables =
            ["PATH=/usr/bin:/bin", "HOME=\(home)"] + environment.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }
        return try Self.run(
            "/usr/bin/nsenter",
            [
                "-t", "\(holder.pid)", "-m", "/usr/bin/setpriv", "--reuid", Self.user, "--regid", Self.user,
                "--init-groups", "/usr/bin/env", "-i",
            ] + variables + [program] + arguments, input: input)
    }

    /// `program` started as the account, in the background, as ``runAsUser(_:_:input:environment:)``
    /// runs it.
    func startAsUser(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> TestDaemon
    {
        let variables =
            ["PATH=/usr/bin:/bin", "HOME=\(home)"] + environment.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }
        return try TestDaemon(
            "/usr/bin/nsenter",
            [
                "-t", "\(holder.pid)", "-m", "/usr/bin/setpriv", "--reuid", Self.user, "--regid", Self.user,
                "--init-groups", "/usr/bin/env", "-i",
            ] + variables + [program] + arguments, environment: [:])
    }

    /// The worker run as the account on a pseudo-terminal, where a person answers each of `steps`
    /// (what to wait for on the screen, what to type then).
    func onTerminal(
        _ arguments: [String], steps: [(wait: String, type: String)], environment: [String: String] = [:],
        program: String? = nil
    ) throws -> Outcome {
        let input = steps.map { "\($0.wait)\t\($0.type)\n" }.joined()
        return try runAsUser(
            "/usr/bin/python3", [terminal, program ?? worker] + arguments, input: input, environment: environment)
    }

    /// What a person types who gets the password wrong at each of the keychain's three tries.
    static let wrongThreeTimes = Array(repeating: (wait: "Password:", type: "not-the-password"), count: 3)

    /// The `security` tool the account runs.
    var securityTool: String { root + "/security" }

    /// Writes `contents` to a file of the account's, readable by it alone; its path.
    func accountFile(_ name: String, _ contents: String) throws -> String {
        let path = home + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        _ = try Self.run("/usr/bin/chown", ["\(Self.user):\(Self.user)", path])
        return path
    }

    struct Outcome: CustomStringConvertible {
        var status: Int32
        var output: String
        var errors: String
        var description: String { "exit \(status): \(output) \(errors)" }
    }

    /// Runs `program`, waiting on this thread (a synchronous test's), its input written and
    /// closed, its errors kept in a file (so that neither pipe can fill).
    static func run(
        _ program: String, _ arguments: [String], input: String = "", environment: [String: String]? = nil
    ) throws -> Outcome {
        let errorsFile = FileManager.default.temporaryDirectory.path + "/la-errors-\(UUID().uuidString.prefix(8))"
        _ = FileManager.default.createFile(atPath: errorsFile, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errorsFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let (stdin, stdout) = (Pipe(), Pipe())
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsFile))
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, output: String(decoding: output, as: UTF8.self),
            errors: String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errorsFile))) ?? Data(), as: UTF8.self)
        )
    }
}

@Suite("LocalAuthentication through the real polkit", .serialized, .timeLimit(.minutes(10)))
struct PolkitTests {
    @Test(
        "evaluatePolicy(.deviceOwnerAuthentication) on a terminal: the keychain's polkit agent asks there for the user's own password; the right one succeeds"
    )
    func rightPassword() throws {
        let polkit = try PolkitFixture()
        let password = try polkit.newPassword()
        let run = try polkit.onTerminal(["evaluate"], steps: [("Password:", password)])
        #expect(run.output.contains("A program asks you to confirm it is you"), "\(run)")
        #expect(run.output.contains("Authenticating as: \(PolkitFixture.user)"), "\(run)")
        #expect(run.output.contains("success") && !run.output.contains(password), "\(run)")
    }

    @Test(
        "a wrong password is asked again, with PAM's reason; the right one at the second try succeeds; three wrong ones are LAError.authenticationFailed"
    )
    func wrongPassword() throws {
        let polkit = try PolkitFixture()
        let password = try polkit.newPassword()
        let again = try polkit.onTerminal(
            ["evaluate"], steps: [("Password:", "not-the-password"), ("Password:", password)])
        #expect(again.output.contains("success\r\n") && !again.output.contains(password), "\(again)")
        #expect(again.output.components(separatedBy: "Authenticating as:").count == 2, "introduced once: \(again)")
        let run = try polkit.onTerminal(["evaluate"], steps: PolkitFixture.wrongThreeTimes)
        #expect(run.output.contains("error \(LAError.Code.authenticationFailed.rawValue)\r\n"), "\(run)")
        #expect(run.output.components(separatedBy: "Password:").count == 4, "three tries: \(run)")
        #expect(!run.output.contains("success"), "\(run)")
    }

    @Test("Ctrl-D at the password cancels: LAError.userCancel at once, with no other try")
    func cancelOnTheTerminal() throws {
        let polkit = try PolkitFixture()
        _ = try polkit.newPassword()
        let run = try polkit.onTerminal(["evaluate"], steps: [("Password:", "\u{4}")])
        #expect(run.output.contains("error \(LAError.Code.userCancel.rawValue)\r\n"), "\(run)")
        #expect(run.output.components(separatedBy: "Password:").count == 2, "asked once: \(run)")
    }

    @Test("a context that may not ask fails with LAError.notInteractive at once; nobody to ask with is the same")
    func notInteractive() throws {
        let polkit = try PolkitFixture()
        _ = try polkit.newPassword()
        let barred = try polkit.onTerminal(["evaluate", "--not-interactive"], steps: [])
        #expect(barred.output.contains("error \(LAError.Code.notInteractive.rawValue)\r\n"), "\(barred)")
        #expect(!barred.output.contains("Password:"), "\(barred)")
        // No terminal and no desktop agent: polkit has nobody to ask with.
        let alone = try polkit.runAsUser(polkit.worker, ["evaluate"])
        #expect(alone.output == "error \(LAError.Code.notInteractive.rawValue)\n", "\(alone)")
    }

    @Test(
        "canEvaluatePolicy: the owner's password yes; biometry with no reader and a companion not, with Apple's codes")
    func canEvaluate() throws {
        let polkit = try PolkitFixture()
        for (policy, expected) in [
            (LAPolicy.deviceOwnerAuthentication, "yes"),
            (.deviceOwnerAuthenticationWithBiometrics, "no \(LAError.Code.biometryNotAvailable.rawValue)"),
            (.deviceOwnerAuthenticationWithCompanion, "no \(LAError.Code.companionNotAvailable.rawValue)"),
        ] {
            let run = try polkit.runAsUser(polkit.worker, ["can", "\(policy.rawValue)"])
            #expect(run.output == expected + "\n", "\(policy): \(run)")
        }
    }

    @Test(
        "evaluateAccessControl asks what the access control asks for the operation, and the context then answers the item's read unasked"
    )
    func evaluateAccessControlAsksAndAnswersTheRead() throws {
        let (polkit, password, secret) = try storedVault(.inProcess)
        let run = try polkit.onTerminal(
            ["evaluate-access-control", "1", "\(LAAccessControlOperation.useItem.rawValue)", "vault"],
            steps: [("Password:", password)], environment: Backend.inProcess.environment(polkit))
        #expect(run.output.contains("success\r\n") && run.output.contains("secret \(secret)\r\n"), "\(run)")
        #expect(run.output.components(separatedBy: "Password:").count == 2, "asked once: \(run)")
    }

    @Test(
        "evaluateAccessControl asks nothing to make an item or key, nor for privateKeyUsage; biometry, a companion and an application password not given fail with Apple's codes; nobody to ask is notInteractive",
        arguments: [
            // SecAccessControlCreateFlags' raw values: userPresence 1, biometryAny 2,
            // biometryCurrentSet 8, devicePasscode 16, companion 32, or 1 << 14,
            // privateKeyUsage 1 << 30, applicationPassword 1 << 31.
            (1, LAAccessControlOperation.createItem, "success"),
            (1 << 30, .useKeySign, "success"),
            (2, .useItem, "error \(LAError.Code.biometryNotAvailable.rawValue)"),
            (32, .useKeyDecrypt, "error \(LAError.Code.companionNotAvailable.rawValue)"),
            (1 << 31, .useItem, "error \(LAError.Code.notInteractive.rawValue)"),
            (8 | 1 << 14 | 16, .useItem, "error \(LAError.Code.notInteractive.rawValue)"),
            (1, .useKeySign, "error \(LAError.Code.notInteractive.rawValue)"),
        ] as [(UInt, LAAccessControlOperation, String)])
    func evaluateAccessControlWithoutAsking(flags: UInt, operation: LAAccessControlOperation, expected: String) throws {
        let polkit = try PolkitFixture()
        let run = try polkit.runAsUser(polkit.worker, ["evaluate-access-control", "\(flags)", "\(operation.rawValue)"])
        #expect(run.output == expected + "\n", "\(flags) \(operation): \(run)")
    }

    @Test("with no polkit on the system bus, evaluating is LAError.passcodeNotSet (nothing can authenticate the owner)")
    func noPolkit() throws {
        let run = try PolkitFixture.run(
            PolkitFixture.builtWorker, ["evaluate"],
            environment: ["PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
        #expect(run.output == "error \(LAError.Code.passcodeNotSet.rawValue)\n", "\(run)")
    }
}
