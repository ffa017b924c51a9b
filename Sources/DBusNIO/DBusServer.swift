import DBusWire
import KeychainLibc
import NIOCore
import NIOPosix
import Synchronization

/// A peer-to-peer D-Bus server on a Unix socket: accepts connections, authenticates each with
/// SASL EXTERNAL checked against the kernel's `SO_PEERCRED`, and serves an object tree.
///
/// ```swift
/// let server = try await DBusServer.bind(unixPath: "/run/user/1000/demo.sock", objects: objects)
/// // gdbus call --address unix:path=/run/user/1000/demo.sock -o /org/example/Demo -m org.example.Demo.Echo hi
/// try await server.close()
/// ```
public final class DBusServer: Sendable {
    /// Settings of a server.
    public struct Configuration: Sendable {
        /// The largest message accepted; a peer that sends a larger one is disconnected.
        /// The specification's 128 MiB by default; the agent sets 16 MiB plus headroom.
        public var maximumMessageSize = DBusLimits.maximumMessageLength
        /// How many calls one connection's sender may have handled at once and waiting; more
        /// get `LimitsExceeded`.
        public var callLimits = DBusCallLimits()
        /// How long a peer has to complete the SASL handshake.
        public var authenticationTimeout: Duration = .seconds(30)
        /// How many connections peers may hold, how long a message may take to arrive and how
        /// many bytes of arriving messages the server holds.
        public var limits = DBusServerLimits()
        /// Which uids may connect (the claimed uid must also equal `SO_PEERCRED`'s). The server
        /// process's own uid by default.
        public var isAuthorized: @Sendable (UInt32) -> Bool
        /// The id `Peer.GetMachineId` returns; `/etc/machine-id` by default.
        public var machineID: String
        /// The server's GUID sent in `OK`; random by default.
        public var guid: String
        /// Whether `org.freedesktop.DBus.Hello` is answered with a unique name `:1.N`, as a bus
        /// would: `gdbus --address` and `busctl --address` say Hello even to a peer. On by default.
        public var answersHello = true
        /// Called for each authenticated connection, e.g. to keep it for sending signals.
        public var onConnection: (@Sendable (DBusConnection) -> Void)?

        /// The default settings.
        public init() {
            let uid = getuid()
            isAuthorized = { $0 == uid }
            machineID = DBusServer.readMachineID()
            guid = DBusServer.randomGUID()
        }
    }

    private let channel: Channel
    /// The server's address, `unix:path=…,guid=…`.
    public let address: DBusAddress

    private init(channel: Channel, address: DBusAddress) {
        self.channel = channel
        self.address = address
    }

    /// Binds a Unix socket at `unixPath` and starts accepting peers.
    ///
    /// - Parameters:
    ///   - unixPath: the socket's path; an existing socket file there is replaced.
    ///   - objects: the objects served to every peer.
    ///   - configuration: limits, authorization and identity.
    ///   - group: the event loops to use.
    /// - Throws: the socket's error when the path cannot be bound.
    public static func bind(
        unixPath: String,
        objects: DBusObjectTree,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> DBusServer {
        let channel = try await bootstrap(objects: objects, configuration: configuration, group: group)
            .bind(unixDomainSocketPath: unixPath, cleanupExistingSocketFile: true).get()
        let address = DBusAddress(transport: "unix", parameters: ["path": unixPath, "guid": configuration.guid])
        return DBusServer(channel: channel, address: address)
    }

    /// Serves peers on a socket that is already bound and listening: the agent's, bound under
    /// its single-instance lock, or the one systemd passes at socket activation.
    ///
    /// The server takes a duplicate of `fd` (close-on-exec), so the caller keeps `fd` and closes it
    /// when it likes; ``close()`` closes only the duplicate. Both share one open file description:
    /// the server makes it non-blocking.
    ///
    /// ```swift
    /// let listener = try AgentListener(location: location)
    /// let server = try await DBusServer.serve(
    ///     listeningSocket: listener.fileDescriptor, unixPath: location.socketPath, objects: objects)
    /// ```
    ///
    /// - Parameters:
    ///   - fd: A listening `AF_UNIX` `SOCK_STREAM` socket.
    ///   - unixPath: The path the socket is bound at, for ``address``.
    ///   - objects: the objects served to every peer.
    ///   - configuration: limits, authorization and identity.
    ///   - group: the event loops to use.
    /// - Throws: ``DBusError`` `.invalidAddress` when `fd` is not a listening Unix stream socket,
    ///   or the error of registering it with the event loop.
    public static func serve(
        listeningSocket fd: Int32,
        unixPath: String,
        objects: DBusObjectTree,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> DBusServer {
        guard isListeningUnixStreamSocket(fd) else {
            throw DBusError(.invalidAddress, "descriptor \(fd) is not a listening Unix stream socket")
        }
        let duplicate = fcntl(fd, F_DUPFD_CLOEXEC, 3)
        guard duplicate >= 0 else {
            throw DBusError(.invalidAddress, "cannot duplicate descriptor \(fd): errno \(errno)")
        }
        let channel: Channel
        do {
            channel = try await bootstrap(objects: objects, configuration: configuration, group: group)
                .withBoundSocket(duplicate).get()
        } catch {
            Glibc.close(duplicate)
            throw error
        }
        let address = DBusAddress(transport: "unix", parameters: ["path": unixPath, "guid": configuration.guid])
        return DBusServer(channel: channel, address: address)
    }

    /// Whether `fd` is an `AF_UNIX` `SOCK_STREAM` socket in the listening state
    /// (`SO_DOMAIN`, `SO_TYPE`, `SO_ACCEPTCONN`).
    ///
    /// - Parameter fd: Any file descriptor.
    /// - Returns: `false` for anything else: a file, a pipe, a connected or datagram socket, a
    ///   socket of another family, a closed descriptor.
    public static func isListeningUnixStreamSocket(_ fd: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 else { return nil }
            return value
        }
        return option(SO_DOMAIN) == AF_UNIX && option(SO_TYPE) == Int32(SOCK_STREAM.rawValue)
            && option(SO_ACCEPTCONN) == 1
    }

    /// An event-loop group of its own for a server whose methods answer on the event loop
    /// (``DBusMethod/wireHandler``): at least `minimumThreads` loops, and one per core
    /// where there are more cores. Each connection stays on one loop, so with more loops
    /// fewer clients wait behind another's call.
    ///
    /// - Parameter minimumThreads: The fewest event-loop threads.
    /// - Returns: A group to pass to ``bind(unixPath:objects:configuration:group:)`` or
    ///   ``serve(listeningSocket:unixPath:objects:configuration:group:)``; it lives as long as
    ///   the process.
    public static func eventLoopGroup(minimumThreads: Int) -> any EventLoopGroup {
        MultiThreadedEventLoopGroup(numberOfThreads: max(minimumThreads, System.coreCount))
    }

    /// Stops accepting peers. Connections already accepted stay open until they close.
    public func close() async throws {
        try await channel.close()
    }

    /// The bootstrap both ways of listening share: every accepted peer gets the same pipeline.
    private static func bootstrap(
        objects: DBusObjectTree, configuration: Configuration, group: any EventLoopGroup
    ) -> ServerBootstrap {
        var made = DBusDispatcher(objects: objects, machineID: configuration.machineID)
        made.answersHello = configuration.answersHello
        let dispatcher = made
        let counter = ConnectionCounter()
        let census = ConnectionCensus(limits: configuration.limits)
        let budget = PendingMessageBudget(capacity: configuration.limits.maximumPendingMessageBytes)
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { child in
                configure(
                    child, dispatcher: dispatcher, configuration: configuration, number: counter.next(),
                    census: census, budget: budget)
            }
    }

    private static func configure(
        _ child: Channel,
        dispatcher: DBusDispatcher,
        configuration: Configuration,
        number: UInt64,
        census: ConnectionCensus,
        budget: PendingMessageBudget
    ) -> EventLoopFuture<Void> {
        peerCredentials(of: child).flatMapThrowing { credentials in
            // Beyond a connection limit the peer is let go at once: its client fails fast, and
            // the descriptors of those admitted are never all taken.
            guard census.admit(credentials.pid) else {
                if let pidFD = credentials.pidFD { Glibc.close(pidFD) }
                // SASL lets a server answer ERROR at any time: the client can say why. Only the
                // sending side closes at once, so that the client's first write (its AUTH, sent
                // with its first call) still succeeds and it reads the reason; the rest a moment later.
                child.writeAndFlush(ByteBuffer(string: "ERROR \"too many connections are open\"\r\n"))
                    .flatMap { child.close(mode: .output) }
                    .whenComplete { _ in
                        child.eventLoop.scheduleTask(in: .seconds(1)) { child.close(promise: nil) }
                    }
                return
            }
            child.closeFuture.whenComplete { _ in census.release(credentials.pid) }
            let state = DBusConnectionState(peerCredentials: credentials)
            // The state owns the pidfd from here: it closes it when the last user lets go.
            state.uniqueName.withLock { $0 = ":1.\(number)" }
            let sasl = SASLServer(
                guid: configuration.guid, peerUID: credentials.uid, isAuthorized: configuration.isAuthorized)
            try child.pipeline.syncOperations.addHandlers([
                SASLServerHandler(machine: sasl, timeout: TimeAmount(configuration.authenticationTimeout)),
                ByteToMessageHandler(
                    DBusMessageDecoder(
                        maximumMessageSize: configuration.maximumMessageSize,
                        partialMessageTimeout: TimeAmount(configuration.limits.partialMessageTimeout), budget: budget)),
                MessageToByteHandler(DBusMessageEncoder()),
                DBusConnectionHandler(state: state, dispatcher: dispatcher, limits: configuration.callLimits),
            ])
            configuration.onConnection?(DBusConnection(channel: child, state: state))
        }
    }

    /// Reads `SO_PEERCRED`, and `SO_PEERPIDFD` where the kernel has it.
    private static func peerCredentials(of channel: Channel) -> EventLoopFuture<DBusPeerCredentials> {
        guard let provider = channel as? SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(DBusError(.authenticationFailed, "no socket credentials"))
        }
        let credentials: EventLoopFuture<KernelPeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: KernelPeerCredentials.optionName)
        return credentials.flatMap { cred in
            let pidFD: EventLoopFuture<CInt> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: soPeerPidFD)
            return pidFD.map { Optional($0) }.recover { _ in nil }.map { fd in
                DBusPeerCredentials(uid: cred.uid, gid: cred.gid, pid: cred.pid, pidFD: fd)
            }
        }
    }

    /// `SO_PEERPIDFD` (Linux 6.5); not in every libc's headers.
    private static let soPeerPidFD = SocketOptionName(77)

    /// The contents of `/etc/machine-id` (or `/var/lib/dbus/machine-id`), else 32 zeros.
    static func readMachineID() -> String {
        for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let text = readSmallFile(path)?.trimmingSuffix(), text.utf8.count == 32 { return text }
        }
        return String(repeating: "0", count: 32)
    }

    private static func readSmallFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = fread(&buffer, 1, buffer.count, file)
        return String(validating: buffer[0..<count], as: UTF8.self)
    }

    /// 32 random hex digits.
    static func randomGUID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }
}

/// Numbers the connections of one server.
private final class ConnectionCounter: Sendable {
    private let value = Mutex<UInt64>(0)

    func next() -> UInt64 {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}

extension String {
    fileprivate func trimmingSuffix() -> String {
        var result = self
        while let last = result.last, last.isWhitespace { result.removeLast() }
        return result
    }
}
