import DBusNIO
import DBusWire
import Foundation
import KeychainCore
import KeychainLibc
import KeyringImport
import NIOCore
import SecretService

/// The freedesktop Secret Service served by `keychaind --secret-service` against GNOME Keyring,
/// in the same run: each on a private `dbus-daemon` of its own, holding the same items.
///
/// - `secret-tool lookup` processes against each, interleaved.
/// - `SearchItems` + `GetSecrets` from this process, one connection to each bus kept open, a
///   plain session on each, interleaved.
/// - `CreateItem` over that connection: ours into the default (login) keychain, GNOME Keyring's
///   into its `login` collection, encrypted on disk with a password as a user's is. It rewrites
///   that whole file on every add.
///
/// Our keychain is seeded in this process (`add(contentsOf:)`) with the keychain attributes the
/// provider itself gives a D-Bus item (``SecretAttributes/keychainAttributes(for:label:clearing:)``);
/// GNOME Keyring starts with the same items in `login` (``GnomeKeyring/start(in:login:)``).
struct SecretServiceComparison {
    let options: BenchmarkOptions
    let lifecycle: Lifecycle
    let scratch: String
    let progress: (String) -> Void

    func run() -> SecretServiceResult {
        let size = options.secretServiceItems
        var result = SecretServiceResult(items: size)
        let directory = scratch + "/secret-service"
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            guard let agentExecutable = lifecycle.agentExecutable else {
                throw BenchmarkFailure("no keychaind next to security (build the keychaind product)")
            }
            let path = directory + "/login.keychain-db"
            progress("  seeding the default keychain with \(Format.count(size)) Secret Service items")
            try seed(path: path, size: size)
            let ours = try SecretServiceAgent.start(
                agentExecutable, directory: directory + "/ours",
                environment: lifecycle.childEnvironment(keychain: path))
            defer { withExtendedLifetime(ours) {} }
            var gnome: GnomeKeyring?
            var gnomeClient: SecretServiceClient?
            do {
                progress("  starting GNOME Keyring with the same items in its login collection")
                let start = Clock.now()
                gnome = try GnomeKeyring.start(in: directory + "/gnome", login: (0..<size).map(ScriptComparison.item))
                result.gnomeFillSeconds = Double(Clock.now() - start) / 1e9
                if let gnome {
                    gnomeClient = try SecretServiceClient.open(environment: gnome.environment)
                } else {
                    result.gnomeNote = GnomeKeyring.missingNote
                }
            } catch {
                result.gnomeNote = "not available: \(error)"
            }
            defer { withExtendedLifetime(gnome) {} }
            if gnome != nil {
                progress("  moving GNOME Keyring's login file in, against the same adds in one transaction")
                measureMoveIn(
                    &result, file: directory + "/gnome/home/.local/share/keyrings/login.keyring", in: directory)
            }
            let secretTool = GnomeKeyring.find("secret-tool")
            if secretTool == nil { result.secretToolNote = "not measured: secret-tool is not installed" }

            let ourClient = try SecretServiceClient.open(environment: ours.environment)
            defer { ourClient.connection.closeSoon() }
            // Every client is checked once to return the secret before anything is timed.
            let probe = ScriptComparison.item(size / 2)
            guard try ourClient.lookup(service: probe.service, account: probe.account) == Data(probe.secret.utf8)
            else { throw BenchmarkFailure("keychaind's SearchItems + GetSecrets did not return the secret") }
            if let client = gnomeClient,
                try client.lookup(service: probe.service, account: probe.account) != Data(probe.secret.utf8)
            {
                result.gnomeNote = "not available: GNOME Keyring's SearchItems + GetSecrets did not return the secret"
                gnomeClient = nil
            }
            let useGnome = gnomeClient != nil
            if let secretTool {
                progress("  secret-tool lookup processes against each")
                measureProcesses(&result, secretTool: secretTool, ours: ours, gnome: useGnome ? gnome : nil)
            }
            progress("  SearchItems + GetSecrets over one connection to each, interleaved")
            let rounds = options.warmup + options.iterations
            let warmup = options.warmup
            let lookups: PairedSamples
            do {
                var ourSamples: [UInt64] = []
                var theirSamples: [UInt64] = []
                var floorSamples: [UInt64] = []
                var random = SystemRandomNumberGenerator()
                for round in 0..<rounds {
                    let wanted = ScriptComparison.item(Int.random(in: 0..<size, using: &random))
                    // The bus's floor: two calls keychaind answers with nothing (Peer.Ping).
                    var start = Clock.now()
                    for _ in 0..<2 { try ourClient.ping() }
                    if round >= warmup { floorSamples.append(Clock.now() - start) }
                    start = Clock.now()
                    guard try ourClient.lookup(service: wanted.service, account: wanted.account) != nil else {
                        throw BenchmarkFailure("keychaind did not find an item")
                    }
                    let here = Clock.now() - start
                    if round >= warmup { ourSamples.append(here) }
                    if let gnomeClient {
                        start = Clock.now()
                        guard try gnomeClient.lookup(service: wanted.service, account: wanted.account) != nil
                        else { throw BenchmarkFailure("GNOME Keyring did not find an item") }
                        let there = Clock.now() - start
                        if round >= warmup { theirSamples.append(there) }
                    }
                }
                lookups = PairedSamples(ours: ourSamples, theirs: theirSamples)
                result.lookupFloor = Summary(nanoseconds: floorSamples)
            }
            result.lookupOurs = Summary(nanoseconds: lookups.ours)
            result.lookupGnome = lookups.theirs.isEmpty ? nil : Summary(nanoseconds: lookups.theirs)
            progress("  CreateItem over the same connections, interleaved")
            let creates: PairedSamples
            do {
                var ourSamples: [UInt64] = []
                var theirSamples: [UInt64] = []
                for round in 0...options.processRepetitions {
                    let service = "created-\(round).bench.example.net"
                    let secret = "created-secret-\(round)"
                    var start = Clock.now()
                    try ourClient.create(
                        in: SecretServiceClient.loginCollection, service: service, account: "created", secret: secret)
                    let here = Clock.now() - start
                    if round > 0 { ourSamples.append(here) }
                    if let gnomeClient {
                        start = Clock.now()
                        try gnomeClient.create(
                            in: SecretServiceClient.loginCollection, service: service, account: "created",
                            secret: secret)
                        let there = Clock.now() - start
                        if round > 0 { theirSamples.append(there) }
                    }
                }
                creates = PairedSamples(ours: ourSamples, theirs: theirSamples)
            }
            result.createOurs = Summary(nanoseconds: creates.ours)
            result.createGnomeLogin = creates.theirs.isEmpty ? nil : Summary(nanoseconds: creates.theirs)
            progress("  OpenSession with Diffie-Hellman over the same connections, interleaved")
            let sessions = try measureDiffieHellmanSessions(ourClient, gnomeClient, rounds: rounds, warmup: warmup)
            result.openSessionOurs = Summary(nanoseconds: sessions.ours)
            result.openSessionGnome = sessions.theirs.isEmpty ? nil : Summary(nanoseconds: sessions.theirs)
            progress("  Properties.GetAll of every item at once (libsecret's search --all), interleaved")
            do {
                let loads = try measureLoadingEveryItem(ourClient, gnomeClient)
                result.loadAllOurs = Summary(nanoseconds: loads.ours)
                result.loadAllGnome = loads.theirs.isEmpty ? nil : Summary(nanoseconds: loads.theirs)
            } catch {
                result.loadAllNote = "not available: \(error)"
            }
            progress("  RetrieveSecret through xdg-desktop-portal from a sandboxed app, with each as the backend")
            measurePortal(
                &result, ours: ours.environment, gnome: useGnome ? gnome?.environment : nil, in: directory,
                rounds: rounds, warmup: warmup)
            gnomeClient?.connection.closeSoon()
        } catch {
            result.note = "not available: \(error)"
        }
        return result
    }

    /// Every item of the login collection loaded at once, as libsecret's `search --all` loads each
    /// item it found: one `Properties.GetAll` per item, all sent before any reply is read; timed
    /// from the first call to the last reply, on keychaind's connection for a few rounds, then
    /// on GNOME Keyring's once.
    private func measureLoadingEveryItem(
        _ ours: SecretServiceClient, _ theirs: SecretServiceClient?
    ) throws -> PairedSamples {
        let ourPaths = try ours.itemPaths(of: SecretServiceClient.loginCollection)
        let theirPaths = try theirs?.itemPaths(of: SecretServiceClient.loginCollection) ?? []
        var ourSamples: [UInt64] = []
        var theirSamples: [UInt64] = []
        for round in 0...min(options.processRepetitions, 5) {
            let start = Clock.now()
            try ours.loadAtOnce(ourPaths)
            if round > 0 { ourSamples.append(Clock.now() - start) }
        }
        // One round: GNOME Keyring takes minutes at 10,000 items (PERFORMANCE.md), far past what
        // more rounds would make more exact.
        if let theirs {
            let start = Clock.now()
            try theirs.loadAtOnce(theirPaths)
            theirSamples.append(Clock.now() - start)
        }
        return PairedSamples(ours: ourSamples, theirs: theirSamples)
    }

    /// `OpenSession` with `dh-ietf1024-sha256-aes128-cbc-pkcs7` on each connection, interleaved:
    /// the call and its reply (the provider's two exponentiations); the client's public value is
    /// made before and its key after, untimed, and each session is closed untimed.
    private func measureDiffieHellmanSessions(
        _ ours: SecretServiceClient, _ theirs: SecretServiceClient?, rounds: Int, warmup: Int
    ) throws -> PairedSamples {
        var ourSamples: [UInt64] = []
        var theirSamples: [UInt64] = []
        for round in 0..<rounds {
            for (client, isOurs) in [(ours, true)] + (theirs.map { [($0, false)] } ?? []) {
                let agreement = FiniteFieldAgreement(group: .oakley2)
                let start = Clock.now()
                let (peer, path) = try client.openDiffieHellmanSession(publicKey: agreement.publicKey)
                let elapsed = Clock.now() - start
                guard agreement.sessionKey(peerPublicKey: peer) != nil else {
                    throw BenchmarkFailure("OpenSession returned a public value out of range")
                }
                try client.closeSession(path)
                if round >= warmup {
                    if isOurs { ourSamples.append(elapsed) } else { theirSamples.append(elapsed) }
                }
            }
        }
        return PairedSamples(ours: ourSamples, theirs: theirSamples)
    }

    /// Moving GNOME Keyring's encrypted `login` file in (``KeyringMoveIn``: read, decrypt, check,
    /// compare with what is stored, add in one transaction) against its floor, the same items
    /// added to a keychain in one transaction (`add(contentsOf:)`, the items made untimed); each
    /// round into two new password-less keychains, interleaved, the first round untimed.
    private func measureMoveIn(_ result: inout SecretServiceResult, file: String, in directory: String) {
        let items = (0..<result.items).map(Self.secretServiceItem)
        var ours: [UInt64] = []
        var floor: [UInt64] = []
        do {
            for round in 0...Self.moveInRounds {
                let target = try KeychainDatabase.create(
                    at: directory + "/moved-in-\(round).keychain-db", password: nil,
                    configuration: lifecycle.configuration)
                var start = Clock.now()
                let report = try KeyringMoveIn.moveIn(
                    gnomeKeyringAt: file, password: Data(GnomeKeyring.password.utf8), into: target)
                let movedIn = Clock.now() - start
                guard report.tally.added == result.items else {
                    throw BenchmarkFailure("\(report.tally.added) of \(result.items) items were moved in")
                }
                let added = try KeychainDatabase.create(
                    at: directory + "/added-\(round).keychain-db", password: nil, configuration: lifecycle.configuration
                )
                start = Clock.now()
                _ = try added.add(contentsOf: items)
                let adds = Clock.now() - start
                if round > 0 {
                    ours.append(movedIn)
                    floor.append(adds)
                }
                for name in ["moved-in-\(round)", "added-\(round)"] {
                    try? FileManager.default.removeItem(atPath: directory + "/\(name).keychain-db")
                }
            }
            result.moveIn = Summary(nanoseconds: ours)
            result.moveInFloor = Summary(nanoseconds: floor)
        } catch {
            result.moveInNote = "not available: \(error)"
        }
    }

    /// The Secret portal's rows (``SecretPortalComparison``): keychaind's backend, then GNOME
    /// Keyring's, each through its own xdg-desktop-portal.
    private func measurePortal(
        _ result: inout SecretServiceResult, ours: [String: String], gnome: [String: String]?, in directory: String,
        rounds: Int, warmup: Int
    ) {
        let comparison = SecretPortalComparison(scratch: directory, rounds: rounds, warmup: warmup)
        do {
            let outcome = try comparison.measure(
                environment: ours, portalFile: SecretPortalComparison.ourPortalFile, name: "keychain")
            result.portalOurs = Summary(nanoseconds: outcome.calls)
            result.portalFloor = Summary(nanoseconds: outcome.floor)
        } catch {
            result.portalNote = "not available: \(error)"
            return
        }
        guard let gnome else {
            result.portalGnomeNote = result.gnomeNote ?? GnomeKeyring.missingNote
            return
        }
        do {
            let outcome = try comparison.measure(
                environment: gnome, portalFile: SecretPortalComparison.gnomePortalFile, name: "gnome-keyring")
            result.portalGnome = Summary(nanoseconds: outcome.calls)
        } catch {
            result.portalGnomeNote = "not available: \(error)"
        }
    }

    /// Timed rounds of the move-in rows (each moves every item in twice).
    static let moveInRounds = 5

    /// Creates the keychain at `path` with `size` items as the provider stores a D-Bus item
    /// with the attributes `service` and `account` (``ScriptComparison/item(_:)``).
    private func seed(path: String, size: Int) throws {
        let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: lifecycle.configuration)
        for start in stride(from: 0, to: size, by: BenchmarkRunner.seedBatch) {
            let items = (start..<min(size, start + BenchmarkRunner.seedBatch)).map(Self.secretServiceItem)
            _ = try keychain.add(contentsOf: items)
        }
    }

    /// Item `index` (``ScriptComparison/item(_:)``) as the provider stores a D-Bus item with the
    /// attributes `service` and `account`.
    static func secretServiceItem(_ index: Int) -> Item {
        let (service, account, secret) = ScriptComparison.item(index)
        return Item(
            class: .genericPassword,
            attributes: SecretAttributes.keychainAttributes(
                for: ["service": service, "account": account], label: "\(service) \(account)"),
            data: Data(secret.utf8))
    }

    /// `secret-tool lookup` against our provider and against GNOME Keyring, one after the other
    /// in each round (the first round untimed), each checked once to print the secret.
    private func measureProcesses(
        _ result: inout SecretServiceResult, secretTool: String, ours: SecretServiceAgent, gnome: GnomeKeyring?
    ) {
        func arguments(_ index: Int) -> [String] {
            let item = ScriptComparison.item(index)
            return ["lookup", "service", item.service, "account", item.account]
        }
        let probe = result.items / 2
        let printed = try? ChildProcess.run(secretTool, arguments(probe), environment: ours.environment)
        guard
            printed.map({ String(decoding: $0.standardOutput, as: UTF8.self) })?.trimmingCharacters(in: .newlines)
                == ScriptComparison.item(probe).secret
        else {
            result.secretToolNote = "not available: secret-tool lookup on keychaind did not print the secret"
            return
        }
        var ourSamples: [UInt64] = []
        var theirSamples: [UInt64] = []
        do {
            for round in 0...options.processRepetitions {
                let index = (probe + round * 37) % result.items
                let here = try ChildProcess.run(
                    secretTool, arguments(index), environment: ours.environment, capture: false)
                guard here.status == 0 else { throw BenchmarkFailure("secret-tool lookup exited \(here.status)") }
                if round > 0 { ourSamples.append(here.nanoseconds) }
                if let gnome {
                    let item = ScriptComparison.item(index)
                    let there = try gnome.timedLookup(service: item.service, account: item.account)
                    if round > 0 { theirSamples.append(there) }
                }
            }
        } catch {
            result.secretToolNote = "failed: \(error)"
            return
        }
        result.secretToolOurs = Summary(nanoseconds: ourSamples)
        result.secretToolGnome = theirSamples.isEmpty ? nil : Summary(nanoseconds: theirSamples)
    }
}

/// `keychaind --secret-service` on a private `dbus-daemon`, with a home and socket of its own
/// in `directory`; both stopped by pid.
final class SecretServiceAgent: Sendable {
    /// The environment of clients on its bus.
    let environment: [String: String]
    private let busProcess: pid_t
    private let agentProcess: pid_t

    static func start(_ executable: String, directory: String, environment base: [String: String]) throws
        -> SecretServiceAgent
    {
        guard let bus = GnomeKeyring.find("dbus-daemon") else {
            throw BenchmarkFailure("dbus-daemon is not installed")
        }
        for sub in ["", "/run"] {
            try FileManager.default.createDirectory(
                atPath: directory + sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        var environment = base
        environment["XDG_RUNTIME_DIR"] = directory + "/run"
        let started = try ChildProcess.startSessionBus(bus, environment: environment)
        let address = started.address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        let socket = directory + "/agent.sock"
        var agentEnvironment = environment
        agentEnvironment["KEYCHAIN_AGENT"] = nil
        agentEnvironment["KEYCHAIN_AGENT_SOCK"] = socket
        let agent: (pid: pid_t, output: Int32)
        do {
            agent = try ChildProcess.start(
                executable, ["--socket", socket, "--secret-service"], environment: agentEnvironment)
            close(agent.output)
        } catch {
            ChildProcess.stop(started.pid)
            throw error
        }
        let served = SecretServiceAgent(environment: environment, bus: started.pid, agent: agent.pid)
        try served.waitForName()
        return served
    }

    private init(environment: [String: String], bus: pid_t, agent: pid_t) {
        self.environment = environment
        busProcess = bus
        agentProcess = agent
    }

    deinit {
        ChildProcess.stop(agentProcess)
        ChildProcess.stopBus(busProcess, address: environment["DBUS_SESSION_BUS_ADDRESS"])
    }

    /// Waits until keychaind owns `org.freedesktop.secrets` on its bus.
    private func waitForName() throws {
        try SecretServiceClient.waitForOwner(SecretServiceProvider.busName, pid: agentProcess, environment: environment)
    }
}

/// A Secret Service client on one session-bus connection with a plain session: what a program
/// that keeps its connection does (secrets cross the private bus unencrypted, as with
/// libsecret's plain sessions).
struct SecretServiceClient: Sendable {
    let connection: DBusConnection
    let session: String

    static let service = "/org/freedesktop/secrets"
    static let loginCollection = "/org/freedesktop/secrets/collection/login"
    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let itemInterface = "org.freedesktop.Secret.Item"

    /// A connection to the session bus of `environment` that has said `Hello`. Synchronous
    /// (NIO futures waited for on this thread): the benchmark's threads block, and must never
    /// wait for Swift's cooperative pool, which the tests' own threads may hold.
    static func connect(environment: [String: String]) throws -> DBusConnection {
        guard let path = try DBusAddress.sessionBus(environment: environment).compactMap(\.unixPath).first else {
            throw BenchmarkFailure("no unix:path= session bus address")
        }
        let connection = try DBusConnection.connectFuture(unixPath: path).wait()
        _ = try connection.callFuture(
            .methodCall(
                path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello",
                destination: "org.freedesktop.DBus")
        ).wait()
        return connection
    }

    /// One call, its reply waited for on this thread.
    func call(_ message: DBusMessage, timeout: Duration? = nil) throws -> DBusMessage {
        try connection.callFuture(message, timeout: timeout).wait()
    }

    /// Waits (30 s at most) until process `pid` owns `name` on the bus of `environment`.
    static func waitForOwner(_ name: String, pid: pid_t, environment: [String: String]) throws {
        let connection = try connect(environment: environment)
        defer { connection.closeSoon() }
        for _ in 0..<600 {
            let reply = try? connection.callFuture(
                .methodCall(
                    path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "GetConnectionUnixProcessID", destination: "org.freedesktop.DBus", body: [.string(name)])
            ).wait()
            if reply?.type == .methodReturn, reply?.body.first == .uint32(UInt32(pid)) { return }
            usleep(50_000)
        }
        throw BenchmarkFailure("process \(pid) did not take \(name) on its bus")
    }

    static func open(environment: [String: String]) throws -> SecretServiceClient {
        let connection = try connect(environment: environment)
        let reply = try connection.callFuture(
            .methodCall(
                path: service, interface: serviceInterface, member: "OpenSession",
                destination: SecretServiceProvider.busName, body: [.string("plain"), .variant(.string(""))])
        ).wait()
        guard reply.body.count == 2, case .objectPath(let session) = reply.body[1] else {
            throw BenchmarkFailure("OpenSession returned \(reply.signature)")
        }
        return SecretServiceClient(connection: connection, session: session)
    }

    /// Opens a `dh-ietf1024-sha256-aes128-cbc-pkcs7` session with our public value.
    /// - Returns: The provider's public value and the session's path.
    func openDiffieHellmanSession(publicKey: [UInt8]) throws -> (peer: [UInt8], path: String) {
        let reply = try call(
            .methodCall(
                path: Self.service, interface: Self.serviceInterface, member: "OpenSession",
                destination: SecretServiceProvider.busName,
                body: [.string(FiniteFieldAgreement.secretServiceAlgorithm), .variant(.bytes(publicKey))]))
        guard reply.body.count == 2, case .bytes(let peer) = reply.body[0].variantValue ?? reply.body[0],
            case .objectPath(let path) = reply.body[1]
        else { throw BenchmarkFailure("OpenSession returned \(reply.signature)") }
        return (peer, path)
    }

    /// Closes a session.
    func closeSession(_ path: String) throws {
        _ = try call(
            .methodCall(
                path: path, interface: "org.freedesktop.Secret.Session", member: "Close",
                destination: SecretServiceProvider.busName))
    }

    static func attributes(service: String, account: String) -> DBusValue {
        .dictionary(
            key: .string, value: .string,
            [DBusDictEntry(.string("account"), .string(account)), DBusDictEntry(.string("service"), .string(service))])
    }

    /// `SearchItems` by service and account, then `GetSecrets` of the first unlocked item.
    func lookup(service: String, account: String) throws -> Data? {
        let found = try call(
            .methodCall(
                path: Self.service, interface: Self.serviceInterface, member: "SearchItems",
                destination: SecretServiceProvider.busName, body: [Self.attributes(service: service, account: account)]
            ))
        guard case .objectPath(let path)? = found.body.first?.arrayElements?.first else { return nil }
        let secrets = try call(
            .methodCall(
                path: Self.service, interface: Self.serviceInterface, member: "GetSecrets",
                destination: SecretServiceProvider.busName,
                body: [.array(.objectPath, [.objectPath(path)]), .objectPath(session)]))
        guard case .dictionary(_, _, let entries)? = secrets.body.first,
            case .structure(let fields)? = entries.first?.value,
            fields.count == 4, case .bytes(let bytes) = fields[2]
        else { return nil }
        return Data(bytes)
    }

    /// The paths of `collection`'s items (its `Items` property).
    func itemPaths(of collection: String) throws -> [String] {
        let reply = try call(
            .methodCall(
                path: collection, interface: "org.freedesktop.DBus.Properties", member: "Get",
                destination: SecretServiceProvider.busName,
                body: [.string("org.freedesktop.Secret.Collection"), .string("Items")]))
        let paths = (reply.body.first?.variantValue ?? reply.body.first)?.arrayElements?.compactMap {
            if case .objectPath(let path) = $0 { return path } else { return nil }
        }
        guard let paths, !paths.isEmpty else { throw BenchmarkFailure("\(collection) lists no items") }
        return paths
    }

    /// `Properties.GetAll` of every item in `paths`, all sent before the first reply is waited
    /// for; each reply checked to be a return.
    func loadAtOnce(_ paths: [String]) throws {
        // No call is given up on before the last: libsecret's own limit (25 s a call) is what
        // the row shows a provider against.
        let replies = paths.map { path in
            connection.callFuture(
                .methodCall(
                    path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                    destination: SecretServiceProvider.busName, body: [.string(Self.itemInterface)]),
                timeout: .seconds(900))
        }
        for reply in replies {
            let message = try reply.wait()
            guard message.type == .methodReturn else {
                throw BenchmarkFailure("GetAll of an item failed: \(message.body.first?.stringValue ?? "")")
            }
        }
    }

    /// `org.freedesktop.DBus.Peer.Ping` to the provider: a round trip through the bus that the
    /// provider answers with nothing.
    func ping() throws {
        _ = try call(
            .methodCall(
                path: Self.service, interface: "org.freedesktop.DBus.Peer", member: "Ping",
                destination: SecretServiceProvider.busName))
    }

    /// `CreateItem` in `collection` (never replacing); a prompt counts as a failure.
    func create(in collection: String, service: String, account: String, secret: String) throws {
        let properties = DBusValue.stringVariantDictionary([
            Self.itemInterface + ".Label": .string("\(service) \(account)"),
            Self.itemInterface + ".Attributes": Self.attributes(service: service, account: account),
        ])
        let reply = try call(
            .methodCall(
                path: collection, interface: "org.freedesktop.Secret.Collection", member: "CreateItem",
                destination: SecretServiceProvider.busName,
                body: [
                    properties,
                    .structure([.objectPath(session), .bytes([]), .bytes(Array(secret.utf8)), .string("text/plain")]),
                    .boolean(false),
                ]))
        guard reply.body.count == 2, reply.body[1] == .objectPath("/") else {
            throw BenchmarkFailure("CreateItem in \(collection) asked for a prompt")
        }
    }
}

/// Timings of ours and GNOME Keyring's, taken in the same rounds.
struct PairedSamples: Sendable {
    var ours: [UInt64]
    var theirs: [UInt64]
}

/// ``SecretServiceComparison``'s figures; durations in microseconds.
struct SecretServiceResult: Codable, Sendable {
    /// Items in our default keychain and in GNOME Keyring's `login` collection.
    var items: Int
    /// `secret-tool lookup` processes.
    var secretToolOurs: Summary?
    var secretToolGnome: Summary?
    /// `SearchItems` + `GetSecrets` in this process over one connection, plain session.
    var lookupOurs: Summary?
    var lookupGnome: Summary?
    /// Two `Peer.Ping` round trips to keychaind over the same connection, in the same rounds:
    /// what the bus and this client cost before any work.
    var lookupFloor: Summary?
    /// `CreateItem` over the same connection, both at ``items``.
    var createOurs: Summary?
    var createGnomeLogin: Summary?
    /// `OpenSession` with Diffie-Hellman over the same connection.
    var openSessionOurs: Summary?
    var openSessionGnome: Summary?
    /// `Properties.GetAll` of every item in `login` sent at once, to the last reply.
    var loadAllOurs: Summary?
    var loadAllGnome: Summary?
    /// Why the rows of loading every item at once are missing.
    var loadAllNote: String?
    /// Seconds to start GNOME Keyring with ``items`` items in `login` and have it encrypt them.
    var gnomeFillSeconds: Double?
    /// Moving GNOME Keyring's encrypted `login` file (``items`` items) into a new keychain.
    var moveIn: Summary?
    /// The floor: the same items added to a new keychain in one transaction.
    var moveInFloor: Summary?
    /// Why the move-in rows are missing.
    var moveInNote: String?

    /// Moving in ÷ the same adds in one transaction (target ≤ 1.5).
    var moveInOverFloor: Double? {
        guard let ours = moveIn, let floor = moveInFloor else { return nil }
        return ours.medianMicroseconds / floor.medianMicroseconds
    }
    /// The Secret portal's `RetrieveSecret` from a sandboxed app through xdg-desktop-portal,
    /// with keychaind and with GNOME Keyring as the backend.
    var portalOurs: Summary?
    var portalGnome: Summary?
    /// A `Peer.Ping` to xdg-desktop-portal from the same client, in the same rounds as ours.
    var portalFloor: Summary?
    /// Why the portal rows are missing (ours; GNOME Keyring's).
    var portalNote: String?
    var portalGnomeNote: String?

    /// Our backend's RetrieveSecret ÷ GNOME Keyring's (target ≤ 1).
    var portalOursOverGnome: Double? {
        guard let ours = portalOurs, let theirs = portalGnome else { return nil }
        return ours.medianMicroseconds / theirs.medianMicroseconds
    }

    /// Our backend's RetrieveSecret ÷ a Ping to the portal.
    var portalOverFloor: Double? {
        guard let ours = portalOurs, let floor = portalFloor else { return nil }
        return ours.medianMicroseconds / floor.medianMicroseconds
    }
    /// Why our rows are missing.
    var note: String?
    /// Why GNOME Keyring's rows are missing.
    var gnomeNote: String?
    /// Why the `secret-tool` rows are missing.
    var secretToolNote: String?

    init(items: Int) { self.items = items }

    /// `secret-tool lookup` on ours ÷ on GNOME Keyring (target ≤ 1).
    var secretToolOursOverGnome: Double? {
        guard let ours = secretToolOurs, let theirs = secretToolGnome else { return nil }
        return ours.medianMicroseconds / theirs.medianMicroseconds
    }

    /// GNOME Keyring's SearchItems + GetSecrets ÷ ours (target ≥ 10).
    var lookupGnomeOverOurs: Double? {
        guard let ours = lookupOurs, let theirs = lookupGnome else { return nil }
        return theirs.medianMicroseconds / ours.medianMicroseconds
    }

    /// Our SearchItems + GetSecrets ÷ two Peer.Ping round trips.
    var lookupOverFloor: Double? {
        guard let ours = lookupOurs, let floor = lookupFloor else { return nil }
        return ours.medianMicroseconds / floor.medianMicroseconds
    }

    /// GNOME Keyring's CreateItem into `login` ÷ ours (target ≥ 100).
    var createGnomeOverOurs: Double? {
        guard let ours = createOurs, let theirs = createGnomeLogin else { return nil }
        return theirs.medianMicroseconds / ours.medianMicroseconds
    }

    /// Loading every item at once from ours ÷ from GNOME Keyring.
    var loadAllOursOverGnome: Double? {
        guard let ours = loadAllOurs, let theirs = loadAllGnome else { return nil }
        return ours.medianMicroseconds / theirs.medianMicroseconds
    }

    /// Our Diffie-Hellman `OpenSession` ÷ GNOME Keyring's (target ≤ 1).
    var openSessionOursOverGnome: Double? {
        guard let ours = openSessionOurs, let theirs = openSessionGnome else { return nil }
        return ours.medianMicroseconds / theirs.medianMicroseconds
    }
}
