import DBusWire
import Foundation
import KeychainAgent
import KeychainCore
import SecretService
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The provider in this process, on a private bus, so its session table can be read.
@Suite("Secret Service sessions")
struct SessionTests {
    @Test("A session is freed when the connection that opened it leaves the bus (NameOwnerChanged)")
    func sessionFreedWhenCallerLeaves() async throws {
        // Off Swift's global pool: the parallel suite's synchronous tests can hold all of its
        // threads for minutes, and the bus drops a connection left idle that long.
        try await withTaskExecutorPreference(SerialThreadExecutor()) { try await body() }
    }

    private func body() async throws {
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        var keychains = KeychainConfiguration()
        keychains.keyDerivation = .unsafeTestingOnly
        keychains.allowsUnsafeKeyDerivation = true
        let directory = CallerDirectory(resolver: IdentityResolver(defaultGroups: AccessGroups.standard))
        let agent = AgentService(configuration: keychains, paths: KeychainPaths(environment: bus.environment)) {
            try directory.accessGroups(for: $0)
        }
        let provider = try SecretServiceProvider(agent: agent, directory: directory)
        let connection = try await DBusConnection.connect(
            to: try DBusAddress.parseList(bus.address), objects: provider.objects)
        defer { Task { await connection.close() } }
        try await connection.hello()
        let name = try await connection.callBus("RequestName", [.string(SecretServiceProvider.busName), .uint32(4)])
        #expect(name.body.first?.uint32Value == 1)
        let watcher = try await provider.watchSessions(on: connection)
        defer { watcher.cancel() }

        // gdbus opens a session and leaves; the session must go.
        let opened = try await runToolAsync(
            try requireTool("/usr/bin/gdbus"),
            [
                "call", "--session", "--dest", SecretServiceProvider.busName, "--object-path",
                "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.OpenSession", "plain", "<''>",
            ], environment: bus.environment)
        #expect(opened.status == 0, "\(opened)")
        let end = Date().addingTimeInterval(60)
        while provider.sessionCount > 0 && Date() < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(provider.sessionCount == 0)
    }
}

/// Runs a task's jobs on a serial dispatch queue of its own (a thread outside Swift's global pool).
private final class SerialThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "secret-service-session-tests")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
