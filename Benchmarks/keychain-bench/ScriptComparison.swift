import DBusWire
import Foundation
import KeychainClient
import KeychainLibc
import SecretService

/// The `security` command as scripts run it: a keychain filled by separate
/// `security add-generic-password` processes (so its write-ahead log is what such scripts
/// leave), then `security find-generic-password -w` processes against it, timed interleaved
/// with the Swift process floor and, when GNOME Keyring is installed, with `secret-tool lookup`
/// on a GNOME Keyring that holds the same items: all three in the same run, on the same machine
/// from one moment to the next.
struct ScriptComparison {
    let options: BenchmarkOptions
    let scratch: String
    /// The environment of our child processes (the benchmark's scratch home and device key).
    let environment: [String: String]
    let security: String
    /// The Swift process floor's executable (`keychain-bench --internal-noop`), if found.
    let floorExecutable: String?
    /// The session agent the third column's lookups go through, if it started.
    let agent: BenchAgent?
    /// Why there is no agent.
    let agentNote: String?
    let progress: (String) -> Void

    /// How many add processes run at a time while a keychain is filled.
    static let fillWorkers = 4

    /// The item number `index` of a filled keychain: its service, account and secret.
    static func item(_ index: Int) -> (service: String, account: String, secret: String) {
        ("script-\(index / 10).bench.example.net", "account-\(index)", "secret-\(index)-\(index &* 7919)")
    }

    /// Fills a keychain of `size` items with add processes, fills GNOME Keyring with the same
    /// items when it is installed, and times the lookups.
    func run(size: Int, gnome: GnomeKeyring?) -> ScriptResult {
        var result = ScriptResult(items: size)
        let path = scratch + "/script-\(size).keychain-db"
        do {
            let create = try ChildProcess.run(
                security, ["create-keychain", "-p", "", path], environment: environment)
            guard create.status == 0 else { throw BenchmarkFailure("create-keychain exited \(create.status)") }
            progress("  filling a keychain with \(Format.count(size)) security add-generic-password processes")
            let (security, environment) = (security, environment)
            result.fillSeconds = try Self.fill(size: size) { index in
                let item = Self.item(index)
                // The secret goes in on standard input (a trailing -w), never on the command line.
                return try ChildProcess.run(
                    security, ["add-generic-password", "-s", item.service, "-a", item.account, path, "-w"],
                    environment: environment, capture: false, input: Data((item.secret + "\n").utf8)
                ).status
            }
            result.logBytes =
                (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int64)
                ?? 0
        } catch {
            result.note = "not available: \(error)"
            return result
        }
        var gnomeFilled = false
        if let gnome {
            do {
                progress("  filling GNOME Keyring with the same items (secret-tool store)")
                result.secretToolFillSeconds = try Self.fill(size: size) { index in
                    let item = Self.item(index)
                    return try gnome.store(service: item.service, account: item.account, secret: item.secret)
                }
                gnomeFilled = true
            } catch {
                result.secretToolNote = "not available: \(error)"
            }
        } else {
            result.secretToolNote = GnomeKeyring.missingNote
        }
        measure(&result, path: path, gnome: gnomeFilled ? gnome : nil)
        return result
    }

    /// Runs `add` for every index, ``fillWorkers`` processes at a time.
    /// - Returns: The seconds the whole fill took.
    static func fill(size: Int, _ add: @escaping @Sendable (Int) throws -> Int32) throws -> Double {
        let failure = FirstFailure()
        let start = Clock.now()
        DispatchQueue.concurrentPerform(iterations: fillWorkers) { worker in
            for index in stride(from: worker, to: size, by: fillWorkers) where !failure.isSet {
                do {
                    let status = try add(index)
                    if status != 0 { failure.record("item \(index): exit status \(status)") }
                } catch {
                    failure.record("item \(index): \(error)")
                }
            }
        }
        if let message = failure.message { throw BenchmarkFailure(message) }
        return Double(Clock.now() - start) / 1e9
    }

    /// Times the floor, our lookup (in process and through keychaind) and `secret-tool lookup`,
    /// each once a round in an order rotated from round to round, each round looking up a
    /// different item; every command's output is checked once first.
    private func measure(_ result: inout ScriptResult, path: String, gnome: GnomeKeyring?) {
        let rounds = options.lookupProcessRounds
        var failure: String?
        func findArguments(_ item: (service: String, account: String, secret: String)) -> [String] {
            ["find-generic-password", "-s", item.service, "-a", item.account, "-w", path]
        }
        let first = Self.item(result.items / 2)
        if let outcome = try? ChildProcess.run(security, findArguments(first), environment: environment),
            String(decoding: outcome.standardOutput, as: UTF8.self).trimmingCharacters(in: .newlines) != first.secret
        {
            result.note = "not available: security find-generic-password did not print the secret"
            return
        }
        if let gnome, (try? gnome.lookup(service: first.service, account: first.account)) != first.secret {
            result.secretToolNote = "not available: secret-tool lookup did not print the secret"
        }
        let useGnome = gnome != nil && result.secretToolNote == nil
        result.agentNote = agentNote
        if let agent {
            // The keychain was filled by in-process commands: the agent opens it on the first lookup.
            let check = try? ChildProcess.run(security, findArguments(first), environment: agent.clientEnvironment)
            if check.map({ String(decoding: $0.standardOutput, as: UTF8.self) }) != first.secret + "\n" {
                result.agentNote =
                    "not available: security find-generic-password through keychaind did not print the secret"
            }
        }
        let useAgent = agent != nil && result.agentNote == nil
        // Each round runs every command once, in an order rotated from round to round, so that
        // none always follows the same one (a process that has just exited leaves the machine in
        // a state the next one pays for).
        var commands: [() throws -> UInt64?] = []
        var samples: [[UInt64]] = [[], [], [], []]
        var item = first
        if let floorExecutable {
            commands.append {
                try ChildProcess.run(floorExecutable, ["--internal-noop"], environment: environment, capture: false)
                    .nanoseconds
            }
        } else {
            commands.append { nil }
        }
        commands.append {
            let ours = try ChildProcess.run(security, findArguments(item), environment: environment, capture: false)
            guard ours.status == 0 else { throw BenchmarkFailure("find exited \(ours.status)") }
            return ours.nanoseconds
        }
        commands.append {
            guard useAgent, let agent else { return nil }
            let served = try ChildProcess.run(
                security, findArguments(item), environment: agent.clientEnvironment, capture: false)
            guard served.status == 0 else { throw BenchmarkFailure("find through keychaind exited \(served.status)") }
            return served.nanoseconds
        }
        commands.append {
            guard useGnome, let gnome else { return nil }
            return try gnome.timedLookup(service: item.service, account: item.account)
        }
        timing: for round in 0...rounds {
            item = Self.item((result.items / 2 + round * 37) % result.items)
            for step in 0..<commands.count {
                let index = (step + round) % commands.count
                do {
                    if let time = try commands[index](), round > 0 { samples[index].append(time) }
                } catch {
                    failure = "failed: \(error)"
                    break timing
                }
            }
        }
        let (floor, find, viaAgent, lookup) = (samples[0], samples[1], samples[2], samples[3])
        if let failure {
            result.note = failure
            return
        }
        result.floor = floor.isEmpty ? nil : Summary(nanoseconds: floor)
        result.find = find.isEmpty ? nil : Summary(nanoseconds: find)
        result.secretTool = lookup.isEmpty ? nil : Summary(nanoseconds: lookup)
        result.agentFind = viaAgent.isEmpty ? nil : Summary(nanoseconds: viaAgent)
    }
}

/// `keychaind` started by the benchmark on a socket in its scratch directory, with the
/// benchmark's environment, and stopped by pid.
final class BenchAgent: Sendable {
    let pid: pid_t
    /// The environment of `security` processes served by this agent.
    let clientEnvironment: [String: String]

    /// Starts the agent and waits until it answers.
    /// - Throws: When there is no `keychaind` or it does not answer.
    static func start(_ executable: String?, socket: String, environment: [String: String]) throws -> BenchAgent {
        guard let executable else {
            throw BenchmarkFailure("no keychaind next to security (build the keychaind product)")
        }
        var agentEnvironment = environment
        agentEnvironment["KEYCHAIN_AGENT"] = nil
        let started = try ChildProcess.start(executable, ["--socket", socket], environment: agentEnvironment)
        close(started.output)
        var client = environment
        client["KEYCHAIN_AGENT"] = "required"
        client["KEYCHAIN_AGENT_SOCK"] = socket
        let agent = BenchAgent(pid: started.pid, clientEnvironment: client)
        // A wait for the agent to accept connections (at most ten seconds), not part of any
        // measurement: its socket file exists between bind and listen, when a connect is refused.
        for _ in 0..<1_000 {
            if AgentConnection.isAnswering(at: socket) { return agent }
            usleep(10_000)
        }
        throw BenchmarkFailure("keychaind did not listen on \(socket)")
    }

    private init(pid: pid_t, clientEnvironment: [String: String]) {
        self.pid = pid
        self.clientEnvironment = clientEnvironment
    }

    deinit { ChildProcess.stop(pid) }
}

/// The first failure reported by any of several threads.
private final class FirstFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var first: String?

    var isSet: Bool { lock.withLock { first != nil } }
    var message: String? { lock.withLock { first } }

    func record(_ message: String) {
        lock.withLock { if first == nil { first = message } }
    }
}

/// One size of ``ScriptComparison``.
struct ScriptResult: Codable, Sendable {
    var items: Int
    /// Seconds to fill our keychain with add processes, ``ScriptComparison/fillWorkers`` at a time.
    var fillSeconds: Double?
    /// The keychain's write-ahead log after the fill, in bytes.
    var logBytes: Int64?
    /// Seconds to fill GNOME Keyring with `secret-tool store` processes, as many at a time.
    var secretToolFillSeconds: Double?
    var floor: Summary?
    var find: Summary?
    var secretTool: Summary?
    /// Why our rows are missing.
    var note: String?
    /// Why the `secret-tool` row is missing.
    var secretToolNote: String?
    /// `security find-generic-password -w` served by `keychaind`.
    var agentFind: Summary?
    /// Why the row through the agent is missing.
    var agentNote: String?

    init(items: Int) { self.items = items }

    /// Our lookup process ÷ the Swift process floor, medians of the same rounds.
    var findOverFloor: Double? {
        guard let find, let floor else { return nil }
        return find.medianMicroseconds / floor.medianMicroseconds
    }

    /// Our lookup process ÷ `secret-tool lookup`, medians of the same rounds.
    var findOverSecretTool: Double? {
        guard let find, let secretTool else { return nil }
        return find.medianMicroseconds / secretTool.medianMicroseconds
    }

    /// The lookup process served by the agent ÷ the Swift process floor.
    var agentFindOverFloor: Double? {
        guard let agentFind, let floor else { return nil }
        return agentFind.medianMicroseconds / floor.medianMicroseconds
    }

    /// The lookup process served by the agent ÷ `secret-tool lookup`.
    var agentFindOverSecretTool: Double? {
        guard let agentFind, let secretTool else { return nil }
        return agentFind.medianMicroseconds / secretTool.medianMicroseconds
    }
}

/// A private GNOME Keyring for the benchmark: its own session bus (`dbus-daemon`) and
/// `gnome-keyring-daemon`, unlocked with a password, in the scratch directory; both stopped by
/// pid. Its items go in the in-memory `session` collection: the `login` collection rewrites its
/// whole file on every add (about 0.9 s per add at 10,000 items), which would make filling it
/// take hours, and the daemon answers lookups from memory for either collection.
final class GnomeKeyring: Sendable {
    let secretTool: String
    let environment: [String: String]
    private let busProcess: pid_t
    private let keyringProcess: pid_t

    static let missingNote =
        "not measured: GNOME Keyring is not installed (apt-get install gnome-keyring libsecret-tools dbus-daemon dbus-bin)"

    /// The executable `name` in `/usr/bin` or `/bin`.
    static func find(_ name: String) -> String? {
        ["/usr/bin/", "/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The password of the benchmark's GNOME `login` collection.
    static let password = "keychain-bench"

    /// Starts the bus and the keyring in `directory`. With `login` items, its `login` collection
    /// holds them, encrypted on disk with ``password`` as a user's does (see ``writeLogin(_:in:)``).
    /// - Returns: `nil` when GNOME Keyring or the D-Bus tools are not installed.
    static func start(
        in directory: String, login items: [(service: String, account: String, secret: String)]? = nil
    ) throws -> GnomeKeyring? {
        guard let daemon = find("gnome-keyring-daemon"), let secretTool = find("secret-tool"),
            let bus = find("dbus-daemon"), let send = find("dbus-send")
        else { return nil }
        for sub in ["home", "home/.config", "home/.local/share", "run"] {
            try FileManager.default.createDirectory(
                atPath: directory + "/" + sub, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        var environment = [
            "HOME": directory + "/home", "XDG_CONFIG_HOME": directory + "/home/.config",
            "XDG_DATA_HOME": directory + "/home/.local/share", "XDG_RUNTIME_DIR": directory + "/run",
            "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
        ]
        if let items { try writeLogin(items, in: directory + "/home/.local/share/keyrings") }
        let started = try ChildProcess.startSessionBus(bus, environment: environment)
        let address = started.address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        let keyring: (pid: pid_t, output: Int32)
        do {
            // A password-less `login` written by ``writeLogin(_:in:)`` is opened with an empty one.
            keyring = try ChildProcess.start(
                daemon, ["--foreground", "--unlock", "--components=secrets"], environment: environment,
                input: Data((items == nil ? password : "").utf8))
            close(keyring.output)
        } catch {
            ChildProcess.stop(started.pid)
            throw error
        }
        let gnome = GnomeKeyring(
            secretTool: secretTool, environment: environment, bus: started.pid, keyring: keyring.pid)
        try gnome.waitForService(send: send)
        if items != nil { try gnome.encryptLogin(directory + "/home/.local/share/keyrings/login.keyring") }
        return gnome
    }

    /// Writes `items` as GNOME Keyring's password-less `login` collection: its textual format
    /// (`gkm-secret-textual.c`: a `[keyring]` group, then `[N]` per item with `[N:attributeI]`
    /// groups), which the daemon loads at start. Filling `login` by `CreateItem` instead costs a
    /// rewrite of the whole encrypted file per item: hours at 10,000.
    static func writeLogin(_ items: [(service: String, account: String, secret: String)], in directory: String)
        throws
    {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var text = "[keyring]\ndisplay-name=Login\nctime=0\nmtime=0\nlock-on-idle=false\nlock-after=false\n"
        for (index, item) in items.enumerated() {
            let values = [item.service, item.account, item.secret]
            guard values.allSatisfy({ !$0.contains(where: { $0 == "\n" || $0 == "\\" || $0 == "[" }) }) else {
                throw BenchmarkFailure("an item GNOME Keyring's textual format would need to escape")
            }
            let id = index + 1
            text += "\n[\(id)]\nitem-type=0\ndisplay-name=\(item.service) \(item.account)\nsecret=\(item.secret)\n"
            text += "mtime=0\nctime=0\n"
            text += "\n[\(id):attribute0]\nname=account\ntype=string\nvalue=\(item.account)\n"
            text += "\n[\(id):attribute1]\nname=service\ntype=string\nvalue=\(item.service)\n"
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/login.keyring"))
        try Data("login".utf8).write(to: URL(fileURLWithPath: directory + "/default"))
    }

    /// Unlocks the password-less `login` collection and gives it ``password`` (GNOME Keyring's
    /// `UnlockWithMasterPassword` and `ChangeWithMasterPassword`), so the daemon rewrites it in its
    /// encrypted binary format, as a user's `login` is kept; checked by the file's magic. The
    /// first call waits for the daemon to load the textual file (about ten seconds at 10,000
    /// items: its parser is quadratic).
    private func encryptLogin(_ file: String) throws {
        let client = try SecretServiceClient.open(environment: environment)
        defer { client.connection.closeSoon() }
        func secret(_ text: String) -> DBusValue {
            .structure([.objectPath(client.session), .bytes([]), .bytes(Array(text.utf8)), .string("text/plain")])
        }
        for (member, secrets) in [
            ("UnlockWithMasterPassword", [secret("")]),
            ("ChangeWithMasterPassword", [secret(""), secret(Self.password)]),
        ] {
            _ = try client.call(
                .methodCall(
                    path: SecretServiceClient.service,
                    interface: "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface", member: member,
                    destination: SecretServiceProvider.busName,
                    body: [.objectPath(SecretServiceClient.loginCollection)] + secrets),
                timeout: .seconds(600))
        }
        let magic = Data("GnomeKeyring\n\r\0\n".utf8)
        guard let handle = FileHandle(forReadingAtPath: file), (try? handle.read(upToCount: magic.count)) == magic
        else { throw BenchmarkFailure("GNOME Keyring did not re-encrypt its login collection") }
        try? handle.close()
    }

    private init(secretTool: String, environment: [String: String], bus: pid_t, keyring: pid_t) {
        self.secretTool = secretTool
        self.environment = environment
        busProcess = bus
        keyringProcess = keyring
    }

    deinit {
        ChildProcess.stop(keyringProcess)
        ChildProcess.stopBus(busProcess, address: environment["DBUS_SESSION_BUS_ADDRESS"])
    }

    /// Waits (10 s at most) until the keyring owns `org.freedesktop.secrets` on the bus.
    private func waitForService(send: String) throws {
        let arguments = [
            "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets",
        ]
        for _ in 0..<200 {
            let outcome = try ChildProcess.run(send, arguments, environment: environment)
            if String(decoding: outcome.standardOutput, as: UTF8.self).contains("boolean true") { return }
            usleep(50_000)
        }
        throw BenchmarkFailure("gnome-keyring-daemon did not appear on its bus")
    }

    /// `secret-tool store` of one item in the session collection; its exit status.
    func store(service: String, account: String, secret: String) throws -> Int32 {
        try ChildProcess.run(
            secretTool,
            ["store", "--label=\(service) \(account)", "--collection=session", "service", service, "account", account],
            environment: environment, capture: false, input: Data(secret.utf8)
        ).status
    }

    /// What `secret-tool lookup` prints for an item.
    func lookup(service: String, account: String) throws -> String {
        let outcome = try ChildProcess.run(
            secretTool, ["lookup", "service", service, "account", account], environment: environment)
        return String(decoding: outcome.standardOutput, as: UTF8.self).trimmingCharacters(in: .newlines)
    }

    /// One timed `secret-tool lookup` process, in nanoseconds.
    func timedLookup(service: String, account: String) throws -> UInt64 {
        let outcome = try ChildProcess.run(
            secretTool, ["lookup", "service", service, "account", account], environment: environment, capture: false)
        guard outcome.status == 0 else { throw BenchmarkFailure("secret-tool lookup exited \(outcome.status)") }
        return outcome.nanoseconds
    }
}
