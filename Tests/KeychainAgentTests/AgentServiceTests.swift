import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainClient
import KeychainCore
import Testing

@testable import KeychainAgent

/// The agent's keychains served over peer-to-peer D-Bus to separate connections, as separate
/// processes reach it: an unlock lasts for every later connection until a lock, each caller
/// works in the groups the service gives it, and errors arrive with their OSStatus.
@Suite("Agent service")
struct AgentServiceTests {
    /// A service in a process of its own (the test worker), on a private socket with a device
    /// key in its own directory: as the real agent is, and so that its handlers never wait for
    /// a thread this test process's other tests hold.
    final class Running: @unchecked Sendable {
        let directory: String
        let process: Process
        let input: Pipe
        let address: DBusAddress
        let socket: String

        /// - Parameters:
        ///   - groups: What every caller gets, or, with `minePID`, ignored.
        ///   - minePID: The process that gets the group `mine`; others get `theirs`.
        init(groups: [String], minePID: Int32? = nil) async throws {
            directory = FileManager.default.temporaryDirectory.path + "/agent-service-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(
                atPath: directory + "/config", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            socket = directory + "/agent.sock"
            process = Process()
            process.executableURL = URL(fileURLWithPath: workerPath)
            process.arguments =
                ["serve", directory, groups.joined(separator: ",")] + (minePID.map { [String($0)] } ?? [])
            input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // A wait for the worker to listen, not a time limit on anything measured.
            for _ in 0..<2_400 where !FileManager.default.fileExists(atPath: socket) {
                try await Task.sleep(for: .milliseconds(50))
            }
            address = try DBusAddress.parse("unix:path=" + socket)
        }

        func connection() async throws -> DBusConnection { try await DBusConnection.connect(to: address) }

        func close() async {
            try? input.fileHandleForWriting.close()
            process.terminate()
            while process.isRunning { try? await Task.sleep(for: .milliseconds(10)) }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static func call(
        _ connection: DBusConnection, _ method: String, _ arguments: [DBusValue]
    ) async throws -> [DBusValue] {
        let message = DBusMessage.methodCall(
            path: AgentInterface.objectPath, interface: AgentInterface.name, member: method, body: arguments)
        return try await connection.call(message).body
    }

    /// The keychain error of a failed call.
    static func failure(
        _ connection: DBusConnection, _ method: String, _ arguments: [DBusValue]
    ) async -> KeychainError? {
        do {
            _ = try await call(connection, method, arguments)
            return nil
        } catch let error as DBusError {
            return AgentCodec.keychainError(error)
        } catch {
            return nil
        }
    }

    static func password(_ text: String?) -> [DBusValue] {
        [.boolean(text != nil), .bytes(Array((text ?? "").utf8))]
    }

    @Test("create, unlock, add and find in separate connections: the unlock lasts until a lock")
    func unlockLastsAcrossConnections() async throws {
        let agent = try await Running(groups: ["build", "*"])
        let path = agent.directory + "/data/keychains/build.keychain-db"
        try FileManager.default.createDirectory(
            atPath: agent.directory + "/data/keychains", withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let first = try await agent.connection()
        _ = try await Self.call(first, AgentInterface.create.name, [.string(path)] + Self.password("P"))
        await first.close()

        let second = try await agent.connection()
        _ = try await Self.call(second, AgentInterface.lock.name, [.string(path)])
        #expect(
            await Self.failure(second, AgentInterface.unlock.name, [.string(path)] + Self.password("wrong"))?.code
                == .authFailed)
        _ = try await Self.call(second, AgentInterface.unlock.name, [.string(path)] + Self.password("P"))
        await second.close()

        let third = try await agent.connection()
        let item = Item(
            class: .genericPassword, attributes: [.service: .string("deploy"), .account: .string("ci")],
            data: Data("s3cret".utf8))
        let stored = try AgentCodec.decodeItem(
            try await Self.call(third, AgentInterface.add.name, [.string(path), AgentCodec.encode(item)])[0])
        #expect(stored.attributes[.accessGroup] == .string("build"))
        await third.close()

        let fourth = try await agent.connection()
        let query = AgentCodec.encode(ItemQuery(class: .genericPassword, attributes: [.service: .string("deploy")]))
        let found = try AgentCodec.decodeItems(
            try await Self.call(fourth, AgentInterface.find.name, [.string(path), query, .boolean(true)])[0])
        #expect(found.map(\.data) == [Data("s3cret".utf8)])
        // A lookup of a few items is answered on the event loop, its query read from the wire;
        // a query with a field twice is errSecParam there too, and the connection carries on.
        var limited = ItemQuery(class: .genericPassword, attributes: [.service: .string("deploy")])
        limited.limit = 1
        let quick = try AgentCodec.decodeItems(
            try await Self.call(
                fourth, AgentInterface.find.name, [.string(path), AgentCodec.encode(limited), .boolean(true)])[0])
        #expect(quick.map(\.data) == [Data("s3cret".utf8)])
        let twice = DBusValue.dictionary(
            key: .string, value: .variant,
            [
                DBusDictEntry(.string("limit"), .variant(.int64(1))),
                DBusDictEntry(.string("limit"), .variant(.int64(1))),
            ])
        #expect(
            await Self.failure(fourth, AgentInterface.find.name, [.string(path), twice, .boolean(true)])?.code
                == .parameter)
        // Another spelling of the same file is the same keychain, with the same lock state
        // (a handle of its own would have opened locked).
        let spelling = agent.directory + "/data//keychains/./build.keychain-db"
        let other = try await Self.call(fourth, AgentInterface.status.name, [.string(spelling)])[0].stringKeyedEntries
        #expect(other?["isLocked"] == .variant(.boolean(false)), "\(String(describing: other))")
        // So is a spelling through a link to its directory, with a relative target.
        try FileManager.default.createSymbolicLink(
            atPath: agent.directory + "/linked", withDestinationPath: "data/keychains")
        let linked = try await Self.call(
            fourth, AgentInterface.status.name, [.string(agent.directory + "/linked/build.keychain-db")])[0]
            .stringKeyedEntries
        #expect(linked?["isLocked"] == .variant(.boolean(false)), "\(String(describing: linked))")
        _ = try await Self.call(fourth, AgentInterface.lock.name, [.string(path)])
        #expect(
            await Self.failure(fourth, AgentInterface.find.name, [.string(path), query, .boolean(true)])?.code
                == .interactionNotAllowed)
        let status = try await Self.call(fourth, AgentInterface.status.name, [.string(path)])[0].stringKeyedEntries
        #expect(status?["isLocked"] == .variant(.boolean(true)) || status?["isLocked"] == .boolean(true))
        await fourth.close()
        await agent.close()
    }

    @Test("each connection works in the groups the service gives its caller, whatever the item says")
    func groupsComeFromTheService() async throws {
        // Here the caller is told apart by its pid; the real service asks IdentityResolver.
        let agent = try await Running(groups: [], minePID: getpid())
        let connection = try await agent.connection()
        var item = Item(class: .genericPassword, attributes: [.service: .string("s")], data: Data("x".utf8))
        item.attributes[.accessGroup] = .string("theirs")
        let refused = await Self.failure(connection, AgentInterface.add.name, [.string(""), AgentCodec.encode(item)])
        #expect(refused?.code == .missingEntitlement)
        #expect(refused?.osStatus == -34018)
        item.attributes[.accessGroup] = nil
        let stored = try AgentCodec.decodeItem(
            try await Self.call(connection, AgentInterface.add.name, [.string(""), AgentCodec.encode(item)])[0])
        #expect(stored.attributes[.accessGroup] == .string("mine"))
        await connection.close()
        await agent.close()
    }

    @Test("gdbus can call the agent")
    func gdbusCallsTheAgent() async throws {
        let gdbus = "/usr/bin/gdbus"
        #expect(FileManager.default.isExecutableFile(atPath: gdbus), "gdbus is missing (libglib2.0-bin)")
        let agent = try await Running(groups: ["g"])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: gdbus)
        process.arguments = [
            "call", "--address", "unix:path=" + agent.socket, "-d", "org.keychainlinux.Agent", "-o",
            AgentInterface.objectPath, "-m", AgentInterface.name + ".Status", "",
        ]
        let output = agent.directory + "/gdbus.out"
        FileManager.default.createFile(atPath: output, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = process.standardOutput
        try process.run()
        while process.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        let text = String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("'hasPassword': <false>") && text.contains("'accessGroups': <['g']>"), "\(text)")
        await agent.close()
    }

    /// Eight synchronous clients at once, each on a thread of its own (this agent runs in the
    /// test's process and needs the cooperative pool for its handlers; the real agent is a
    /// process of its own).
    static func eightClients(socket: String) async -> [String] {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let failures = NSLock()
                nonisolated(unsafe) var messages: [String] = []
                DispatchQueue.concurrentPerform(iterations: 8) { index in
                    do {
                        try oneClient(socket: socket, index: index)
                    } catch {
                        failures.withLock { messages.append("client \(index): \(error)") }
                    }
                }
                continuation.resume(returning: failures.withLock { messages })
            }
        }
    }

    static func oneClient(socket: String, index: Int) throws {
        let connection = try AgentConnection(socketPath: socket)
        defer { connection.close() }
        let keychain: any KeychainHandle = connection.keychain(at: "")
        let item = Item(
            class: .genericPassword, attributes: [.service: .string("svc"), .account: .string("user\(index)")],
            data: Data("secret \(index)".utf8))
        _ = try keychain.add(item)
        let query = ItemQuery(
            class: .genericPassword, attributes: [.service: .string("svc"), .account: .string("user\(index)")])
        guard try keychain.findFirst(query, includeData: true)?.data == Data("secret \(index)".utf8),
            try keychain.update(query, attributes: [.label: .string("l")], data: Data("new".utf8)) == 1,
            try keychain.upsert(item).added == false, keychain.accessGroups.groups == ["app"]
        else { throw KeychainError(.decode, "an answer was wrong") }
    }

    @Test("a keychain kept by the agent works as a KeychainHandle for synchronous code, from many threads at once")
    func synchronousClient() async throws {
        let agent = try await Running(groups: ["app"])
        let socket = agent.socket
        let failures = await Self.eightClients(socket: socket)
        #expect(failures.isEmpty, "\(failures)")
        let connection = try AgentConnection(socketPath: socket)
        let keychain = connection.keychain(at: "")
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == 8)
        #expect(!keychain.isLocked && !keychain.hasPassword)
        #expect(try keychain.delete(ItemQuery(class: .genericPassword, attributes: [.account: .string("user3")])) == 1)
        let missing = #expect(throws: KeychainError.self) {
            try keychain.add(Item(class: .genericPassword, attributes: [.accessGroup: .string("other")]))
        }
        #expect(missing?.code == .missingEntitlement)
        connection.close()
        await agent.close()
        // The agent gone, a call fails at once with interaction-not-allowed rather than hanging.
        let gone = #expect(throws: KeychainError.self) { try keychain.find(ItemQuery(class: .genericPassword)) }
        #expect(gone?.code == .interactionNotAllowed)
        #expect(
            (#expect(throws: KeychainError.self) { try AgentConnection(socketPath: socket) })?.code == .notAvailable)
    }

    @Test("a call to an agent that accepts the connection and never answers fails after the timeout, never hangs")
    func silentAgentTimesOut() throws {
        // A listening socket nobody reads: the kernel completes `connect` from the backlog.
        let directory = FileManager.default.temporaryDirectory.path + "/silent-agent-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/agent.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0 && listen(listener, 8) == 0)

        let connection = try AgentConnection(socketPath: path, timeout: .milliseconds(300))
        defer { connection.close() }
        let clock = ContinuousClock()
        let start = clock.now
        let failure = #expect(throws: KeychainError.self) {
            try connection.keychain(at: "").find(ItemQuery(class: .genericPassword))
        }
        #expect(failure?.code == .interactionNotAllowed)
        // It waited for the answer (300 ms, once more on a new connection) and then gave up: a
        // liveness bound, not a speed limit.
        let waited = clock.now - start
        #expect(waited >= .milliseconds(290) && waited < .seconds(30), "waited \(waited)")
    }

    /// An app's wrong passwords slow that app down, not the user's own programs nor another app;
    /// the one slowed down is told how long to wait (issue 50, item 5).
    @Test("the wrong-password back-off is the caller's: an app cannot keep the user out")
    func backOffIsPerCaller() async throws {
        let directory = try TemporaryDirectory()
        let configuration = KeychainConfiguration.testing(deviceKey: .file(at: directory.path + "/device-key"))
        let service = AgentService(
            configuration: configuration,
            paths: KeychainPaths(environment: ["HOME": directory.path, "XDG_DATA_HOME": directory.path + "/data"])
        ) { _ in .standard }
        // One free failure, then 5 minutes (the cap): the test's steps cannot outlast it.
        service.setUnlockBackOff(freeFailures: 1, baseDelay: .seconds(3600))
        let path = directory.path + "/p.keychain-db"
        let made = try KeychainDatabase.create(at: path, password: Data("right".utf8), configuration: configuration)
        try made.close()
        let user = AccessGroups(["default"], managesKeychains: true)
        let app = AccessGroups(["com.example.app"])
        let other = AccessGroups(["com.example.other"])
        _ = try await service.withKeychain(named: path, for: user) { $0.lock() }
        for _ in 0..<2 {
            await #expect(throws: KeychainError.self) {
                try await service.unlock(keychainNamed: path, password: Data("wrong".utf8), for: app)
            }
        }
        do {
            try await service.unlock(keychainNamed: path, password: Data("right".utf8), for: app)
            Issue.record("the app's third attempt was not held back")
        } catch let error as KeychainError {
            #expect(error.code == .interactionNotAllowed)
            #expect(error.message.contains("too many wrong passwords: try again in "), "\(error.message)")
            #expect(error.isSetupProblem, "tools print the message, not just the status")
        }
        // Another app and the user are not slowed by the app's failures.
        await #expect(throws: KeychainError.self) {
            try await service.unlock(keychainNamed: path, password: Data("wrong".utf8), for: other)
        }
        try await service.unlock(keychainNamed: path, password: Data("right".utf8), for: user)
        #expect(try await service.withKeychain(named: path, for: user) { !$0.isLocked })
    }

    @Test("only a caller with every group manages keychains; a caller with no group can do nothing")
    func administrationNeedsEveryGroup() async throws {
        let agent = try await Running(groups: ["app"])
        let connection = try await agent.connection()
        let path = agent.directory + "/data/keychains/x.keychain-db"
        for (method, arguments) in [
            (AgentInterface.create.name, [DBusValue.string(path)] + Self.password("P")),
            (AgentInterface.deleteKeychain.name, [.string(path)]), (AgentInterface.lockAll.name, []),
            (AgentInterface.lock.name, [.string("")]),
            (AgentInterface.changePassword.name, [.string(""), .boolean(false), .bytes([]), .bytes(Array("n".utf8))]),
            (AgentInterface.rotateKeys.name, [.string("")] + Self.password(nil) + Self.password(nil)),
        ] {
            #expect(await Self.failure(connection, method, arguments)?.code == .missingEntitlement, "\(method)")
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        await connection.close()
        await agent.close()

        let nobody = try await Running(groups: [])
        let none = try await nobody.connection()
        #expect(await Self.failure(none, AgentInterface.status.name, [.string("")])?.code == .missingEntitlement)
        #expect(await Self.failure(none, AgentInterface.lock.name, [.string("")])?.code == .missingEntitlement)
        await none.close()
        await nobody.close()
    }
}
