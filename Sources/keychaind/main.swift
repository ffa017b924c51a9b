// keychaind: the session agent. One per user: it holds the unlocked keychains and answers
// every process of the user over peer-to-peer D-Bus on a private socket, so that a keychain
// unlocked once is unlocked for every later process until it is locked, times out, or the
// agent ends.
//
//   keychaind [--socket PATH] [--secret-service [--replace]]
//   keychaind --pam login|password     (run by pam_keychain.so as the user; PAMHandoff.swift)
//
// With --secret-service it also owns org.freedesktop.secrets on the session bus (the Secret
// Service: secret-tool, libsecret, python keyring); --replace takes the name from a provider
// that allows it. When the name is taken it says so and serves its private socket only.
//
// It is started by systemd's keychaind.socket (socket activation), or by the first `security`
// command that needs it. A `keychaind --secret-service` that the bus starts while an agent
// already serves the socket asks that agent to take the bus name, and exits. It exits on SIGTERM or SIGINT, and by itself when its socket is
// removed or replaced (the session ended, or another agent took over), as gpg-agent does.
import DBusNIO
import DBusWire
import Dispatch
import Foundation
import KeychainAgent
import KeychainAgentProtocol
import KeychainCore
import KeychainSync
import KeychainTPM
import KeychainLibc
import SSHAgent
import SecretService
import Synchronization

/// The sync runners of the keychains this agent keeps open, by path: one per keychain set up
/// for sync.
final class SyncRunners: Sendable {
    private let running = Mutex<[String: SyncRunner]>([:])

    func startIfSetUp(_ path: String, _ keychain: KeychainDatabase) {
        guard SyncRunner.isSetUp(keychain) else { return }
        let runner = SyncRunner(keychain: keychain)
        let isNew = running.withLock { running in
            guard running[path] == nil else { return false }
            running[path] = runner
            return true
        }
        if isNew { runner.start() }
    }
}

/// Writes one line to standard error (never a secret: nothing here handles one).
func complain(_ text: String) {
    let line = "keychaind: " + text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}

func usage() -> Never {
    complain("usage: keychaind [--socket PATH] [--secret-service [--replace]]")
    exit(2)
}

/// The command line.
struct Options {
    /// `--socket PATH` (else the place `AgentEndpoint` derives).
    var socket: String?
    /// `--secret-service`: also serve org.freedesktop.secrets on the session bus.
    var secretService = false
    /// `--replace`: take the bus name from a provider that allows it.
    var replace = false

    init(_ arguments: [String]) {
        var index = 1
        while index < arguments.count {
            switch arguments[index] {
            case "--socket" where index + 1 < arguments.count:
                socket = arguments[index + 1]
                index += 1
            case "--secret-service": secretService = true
            case "--replace": replace = true
            default: usage()
            }
            index += 1
        }
    }
}

/// `environment` with the session bus that activated this process (`DBUS_STARTER_ADDRESS`) as
/// `DBUS_SESSION_BUS_ADDRESS`, when it names none.
func withStarterBus(_ environment: [String: String]) -> [String: String] {
    var environment = environment
    if environment["DBUS_SESSION_BUS_ADDRESS"] == nil, environment["DBUS_STARTER_BUS_TYPE"] == "session" {
        environment["DBUS_SESSION_BUS_ADDRESS"] = environment["DBUS_STARTER_ADDRESS"]
    }
    return environment
}

/// Connects to the session bus, exports the Secret Service and asks for its name. Returns
/// `nil` (after saying why) when the name is taken or there is no bus: the private socket is
/// served either way.
func startSecretService(_ provider: SecretServiceProvider, replace: Bool, environment: [String: String]) async
    -> DBusConnection?
{
    do {
        // Receiving descriptors: the Secret portal's calls carry the app's (below).
        var configuration = DBusConnection.Configuration()
        configuration.receivesDescriptors = true
        let bus = try await DBusConnection.connect(
            to: try DBusAddress.sessionBus(environment: withStarterBus(environment)), objects: provider.objects,
            configuration: configuration)
        try await bus.hello()
        // Subscribed before the name is ours: a caller queued for the name (the one whose call
        // activated us) may leave right after its first call, and its sessions and prompts must
        // still go with it.
        let watcher = try await provider.watchSessions(on: bus)
        // DO_NOT_QUEUE (4); --replace adds ALLOW_REPLACEMENT (1) and REPLACE_EXISTING (2).
        let flags: UInt32 = replace ? 7 : 4
        let reply = try await bus.callBus(
            "RequestName", [.string(SecretServiceProvider.busName), .uint32(flags)])
        guard let code = reply.body.first?.uint32Value, code == 1 || code == 4 else {
            complain(
                "\(SecretServiceProvider.busName) is owned by another program (gnome-keyring?); "
                    + "serving the private socket only (--replace takes the name if its owner allows)")
            watcher.cancel()
            await bus.close()
            return nil
        }
        // The Secret portal's backend follows the Secret Service: served while this is the
        // provider the user chose (docs/secret-service.md, "Flatpak apps"), on the same
        // connection, which GNOME Keyring's portal file reaches by `org.freedesktop.secrets`.
        do {
            try await SecretPortal(provider: provider, prompts: bus).start(
                on: bus, objects: provider.objects, log: complain)
        } catch {
            complain("no Secret portal backend: \(error)")
        }
        return bus
    } catch {
        complain("no Secret Service: the session bus could not be used (\(error))")
        return nil
    }
}

/// The agent's one Secret Service: started at launch with `--secret-service`, or later for a
/// `keychaind --secret-service` that the bus activated while this agent already served the
/// socket (a `security` command started it first): that process hands the bus over to this
/// one (``SecretServiceHandoff``) rather than failing, and the keychains' lock state stays.
actor SecretServiceHost {
    let provider: SecretServiceProvider
    let environment: [String: String]
    private var bus: DBusConnection?

    init(provider: SecretServiceProvider, environment: [String: String]) {
        self.provider = provider
        self.environment = environment
    }

    /// Serves the Secret Service on the session bus at `address` (else the environment's);
    /// whether it is served (already, or now).
    func serve(address: String?, replace: Bool) async -> Bool {
        if let bus, bus.isActive { return true }
        var environment = environment
        if let address { environment["DBUS_SESSION_BUS_ADDRESS"] = address }
        bus = await startSecretService(provider, replace: replace, environment: environment)
        return bus != nil
    }
}

/// How a `keychaind --secret-service` hands the session bus to the agent already running:
/// ``KeychainAgentProtocol/SecretServiceHandoffInterface/serve`` on the agent's object, for the
/// user's own programs only (access groups `*`).
enum SecretServiceHandoff {
    private typealias I = SecretServiceHandoffInterface

    /// The interface the agent serves beside ``KeychainAgentProtocol/AgentInterface``.
    static func serving(_ host: SecretServiceHost, directory: CallerDirectory) -> DBusInterface {
        DBusInterface(
            I.name,
            methods: [
                DBusMethod(I.serve) { call, arguments in
                    guard (try? directory.accessGroups(for: call.connection))?.managesKeychains == true else {
                        throw DBusError.method(
                            "org.freedesktop.DBus.Error.AccessDenied", "only the user's own programs may ask")
                    }
                    let address = arguments.address.isEmpty ? nil : arguments.address
                    return I.Served(served: await host.serve(address: address, replace: arguments.replace))
                }
            ])
    }

    /// Asks the agent on `socket` to serve the Secret Service on this process's session bus;
    /// the exit status for this process (0 when the agent serves it).
    static func handOff(to socket: String, replace: Bool, environment: [String: String]) async -> Int32 {
        let address = environment["DBUS_SESSION_BUS_ADDRESS"] ?? environment["DBUS_STARTER_ADDRESS"] ?? ""
        do {
            let agent = try await DBusConnection.connect(to: .unixPath(socket))
            defer { agent.closeSoon() }
            let reply = try await agent.call(
                I.serve.call(I.ServeArguments(address: address, replace: replace), path: AgentInterface.objectPath))
            guard try I.serve.reply(decoding: reply.body).served else {
                complain("the running agent could not take \(SecretServiceProvider.busName)")
                return 1
            }
            return 0
        } catch {
            complain("the running agent did not take the Secret Service (\(error))")
            return 1
        }
    }
}

/// The inode of the socket file at `path`, or `nil` when there is none.
func socketInode(_ path: String) -> ino_t? {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return nil }
    return info.st_ino
}

/// Raises the soft limit on open descriptors to the hard one: each client connection takes a
/// socket and a pidfd (and its cached identity a second pidfd), so the usual soft limit of 1,024
/// would refuse a few hundred clients at once.
func raiseDescriptorLimit() {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else {
        return
    }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
}

/// The most client connections the agent holds at once: what its descriptors allow (a socket
/// and up to two pidfds each) with 512 kept for keychain files and the bus, and at most 4,096.
/// Beyond it a client is let go at once and fails fast, instead of every client waiting on an
/// agent that can no longer accept.
func connectionLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
    let soft = min(UInt64(limit.rlim_cur), UInt64(1 << 20))
    return max(16, min(4_096, (Int(clamping: soft) - 512) / 3))
}

func run() async throws -> Never {
    // Before anything else: no core dump and no ptrace by the user's other processes.
    try ProcessHardening.apply()
    _ = setsid()  // its own session, when started by a client (fails harmlessly otherwise)
    signal(SIGPIPE, SIG_IGN)
    raiseDescriptorLimit()

    var environment = ProcessInfo.processInfo.environment
    let options = Options(CommandLine.arguments)
    if let socket = options.socket { environment[AgentEndpoint.socketVariable] = socket }
    let location = try AgentSocketLocation.resolve(
        environment: environment, hostName: ProcessInfo.processInfo.hostName)

    // systemd's socket, or our own, bound under the lock that keeps one agent per user.
    let listener: AgentListener?
    let listening: Int32
    let instanceLock: AgentLock?
    // keychaind.socket passes the agent's socket and the SSH agent's, told apart by their paths.
    let sshPath = location.directory + "/" + SSHAgentServer.socketName
    let activatedSockets = SystemdActivation.listeningSockets(environment: environment)
    let activatedSSH = activatedSockets.first { SystemdActivation.boundPath(of: $0) == sshPath }
    if let activated = activatedSockets.first(where: { $0 != activatedSSH }) {
        // systemd's socket, and the same lock as our own: a client that finds no socket file
        // must not start a second agent beside this one.
        instanceLock = try AgentLock(location: location)
        listener = nil
        listening = activated
    } else {
        instanceLock = nil
        do {
            let own = try AgentListener(location: location)
            listener = own
            listening = own.fileDescriptor
        } catch let error as AgentError where error.code == .alreadyRunning && options.secretService {
            // Activated by the bus while an agent serves the socket: that agent takes the bus.
            exit(
                await SecretServiceHandoff.handOff(
                    to: location.socketPath, replace: options.replace, environment: environment))
        }
    }

    // KEYCHAIN_APP_MANIFESTS names another manifest directory (tests, a package's staging
    // tree); it counts only when root owns it as it owns the system one.
    let manifests = ManifestDirectory(path: environment["KEYCHAIN_APP_MANIFESTS"] ?? ManifestDirectory.systemPath)
    let directory = CallerDirectory(
        resolver: IdentityResolver(manifests: manifests, defaultGroups: .fromEnvironment(environment)))
    var keychains = KeychainConfiguration()
    if environment["KEYCHAIN_UNSAFE_TEST_KDF"] == "1" {
        // Tests only, as in the `security` tool: cheap password keys, and keychains made with
        // them may be opened. Never for real keychains.
        keychains.keyDerivation = .unsafeTestingOnly
        keychains.allowsUnsafeKeyDerivation = true
    }
    let paths = KeychainPaths(environment: environment)
    let tpm = machineTPM(paths)
    keychains.hardwareSealing = try tpm.map {
        HardwareSealing(sealer: try TPMSealer(tcti: $0), keychains: [paths.loginKeychain], sealsDeviceKey: true)
    }
    keychains.tokenKeyHardware = try tpm.map(TPMSecureEnclave.init(tcti:))
    // Callers are identified once per connection, and re-checked cheaply on each call.
    let service = AgentService(configuration: keychains, paths: paths, callers: directory)
    service.askAboutApplications(through: Pinentry(environment: environment), environment: environment)
    let objects = DBusObjectTree()
    try objects.register(service.interface, at: AgentInterface.objectPath)
    let secretService = SecretServiceHost(
        provider: try SecretServiceProvider(
            agent: service, directory: directory, pinentry: Pinentry(environment: environment),
            environment: environment), environment: environment)
    try objects.register(
        SecretServiceHandoff.serving(secretService, directory: directory), at: AgentInterface.objectPath)
    var configuration = DBusServer.Configuration()
    let agentUID = getuid()
    configuration.isAuthorized = { $0 == agentUID }
    configuration.maximumMessageSize = 16 << 20
    // A client that stops half-way through a message is let go after 30 s; all clients' messages
    // still arriving hold 256 MiB at most; one process holds 1,024 connections at most.
    configuration.limits.maximumConnections = connectionLimit()
    // A peer connection is one client: its calls beyond 64 at once may wait, but few, since each
    // may be as large as the largest message.
    configuration.callLimits = DBusCallLimits(handledAtOnce: 64, waitingPerSender: 64, waitingInAll: 64)
    // Lookups are answered on the event loops: four at least, so that a few clients at once
    // each have a loop of their own rather than waiting behind one another's call.
    let server = try await DBusServer.serve(
        listeningSocket: listening, unixPath: location.socketPath, objects: objects, configuration: configuration,
        group: DBusServer.eventLoopGroup(minimumThreads: 4))

    // Keep each keychain set up for sync in sync while the agent runs (KEYCHAIN_SYNC=off: not).
    let runners = SyncRunners()
    if environment["KEYCHAIN_SYNC"] != "off" {
        service.whenKeychainOpens { path, keychain in runners.startIfSetUp(path, keychain) }
        service.openDefaultKeychainIfPresent()
    }

    // Lock the keychains with lock-on-sleep when logind says the machine sleeps or the session
    // locks, where a system bus exists, and when a screen saver starts, where a session bus
    // exists; without them, nothing (a line with KEYCHAIND_DEBUG=1).
    let debug = environment["KEYCHAIND_DEBUG"] == "1"
    let busEnvironment = withStarterBus(environment)
    let sleepLock = Task.detached {
        await SleepLock.run(service: service, environment: busEnvironment) { line in
            if debug { complain(line) }
        }
    }
    let screenSaverLock = Task.detached {
        await ScreenSaverLock.run(service: service, environment: busEnvironment) { line in
            if debug { complain(line) }
        }
    }

    if options.secretService {
        _ = await secretService.serve(address: nil, replace: options.replace)
    }

    // OpenSSH's agent, beside the agent's socket (docs/ssh-agent.md): SSH_AUTH_SOCK.
    let sshAgent: SSHAgentServer?
    do {
        sshAgent = try SSHAgentServer.start(
            at: sshPath, listening: activatedSSH, agent: SSHAgent(), keychains: service, callers: directory,
            pinentry: Pinentry(environment: environment), environment: environment, log: complain)
    } catch {
        complain("no SSH agent: \(error)")
        sshAgent = nil
    }
    let sshBound = sshAgent.flatMap { socketInode($0.path) }

    // Leave when the socket we bound is gone or replaced: nobody can reach us any more.
    let bound = listener.flatMap { _ in socketInode(location.socketPath) }
    let stop: @Sendable (Int32) -> Void = { _ in
        if let bound, socketInode(location.socketPath) == bound { unlink(location.socketPath) }
        if let sshAgent, let sshBound, socketInode(sshAgent.path) == sshBound { unlink(sshAgent.path) }
        exit(0)
    }
    let sources = [SIGTERM, SIGINT, SIGHUP].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { stop(number) }
        source.resume()
        return source
    }
    while true {
        try await Task.sleep(for: .seconds(2))
        if let bound, socketInode(location.socketPath) != bound {
            complain("\(location.socketPath) was removed or replaced; exiting")
            exit(0)
        }
        withExtendedLifetime(
            (listener, instanceLock, server, sources, sleepLock, screenSaverLock, secretService, runners)
        ) {}
    }
}

answerHelpIfAsked(CommandLine.arguments)

// `keychaind --pam MODE`: pam_keychain.so handing the login password over (a client, not an agent).
if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "--pam" {
    exit(PAMHandoff.run(CommandLine.arguments))
}

// Before any thread or secret: the agent again, with an allocator that overwrites what it frees.
MemoryHygiene.reexecWithWipingAllocator(arguments: CommandLine.arguments)
do {
    try await run()
} catch let error as AgentError {
    complain(error.message)
    exit(1)
} catch let error as KeychainError {
    complain(error.message)
    exit(1)
} catch {
    complain("\(error)")
    exit(1)
}

/// This machine's TPM (docs/login.md, docs/keys-and-certificates.md): the one the user's
/// preferences name, else `/dev/tpmrm0`. It seals the login keychain and the device key file, and
/// holds Secure Enclave keys. A preference that names no TPM is reported and uses none; a
/// keychain, device key or key bound to a TPM already still needs it (none ever opens without).
func machineTPM(_ paths: KeychainPaths) -> String? {
    do {
        return try MachineTPM.tcti(by: try KeychainPreferences.load(from: paths.preferencesFile))
    } catch let error as KeychainError {
        complain("no TPM is used: \(error.message)")
        return nil
    } catch {
        return nil
    }
}
