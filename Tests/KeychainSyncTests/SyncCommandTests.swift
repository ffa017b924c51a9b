import Foundation
import PostgresScratchServer
import GRDB
import KeychainCore
import Logging
import Testing

@testable import KeychainSync

/// `security sync` as a person uses it: two homes (two machines), real `security` processes, the
/// suite's real PostgreSQL; and `security sync now` killed with SIGKILL at random points.
extension SyncIntegration {
    @Suite("security sync on the command line", .serialized, .timeLimit(.minutes(10)))
    struct SyncCommandTests {
        /// One machine: a private HOME and XDG directories, its login keychain made by `security`.
        final class Home: @unchecked Sendable {
            let root = FileManager.default.temporaryDirectory.path + "/kc-sync-cli-\(UUID().uuidString)"

            deinit { try? FileManager.default.removeItem(atPath: root) }

            var environment: [String: String] {
                var environment = ProcessInfo.processInfo.environment.filter {
                    !$0.key.hasPrefix("KEYCHAIN_") && !$0.key.hasPrefix("XDG_") && $0.key != "PGPASSWORD"
                }
                environment["HOME"] = root + "/home"
                environment["XDG_DATA_HOME"] = root + "/data"
                environment["XDG_CONFIG_HOME"] = root + "/config"
                environment["KEYCHAIN_AGENT"] = "off"
                return environment
            }

            /// The login keychain, opened in this process with the machine's device key.
            func keychain() throws -> KeychainDatabase {
                try KeychainDatabase.open(
                    at: root + "/data/keychains/login.keychain-db",
                    configuration: KeychainConfiguration(deviceKey: .file(at: root + "/config/keychain/device-key")))
            }

            /// Starts `security` with arguments.
            func start(
                _ arguments: [String], stdin: String? = nil, extra: [String: String] = [:],
                executable: String = SyncCommandTests.securityExecutable
            ) throws -> (
                Process, Pipe, Pipe
            ) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = arguments
                process.environment = environment.merging(extra) { $1 }
                let (out, err) = (Pipe(), Pipe())
                process.standardOutput = out
                process.standardError = err
                let input = Pipe()
                process.standardInput = input
                try process.run()
                if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
                try input.fileHandleForWriting.close()
                return (process, out, err)
            }

            /// Runs `security` to the end on a Dispatch thread, so that waiting for it never holds
            /// one of the test process's two cooperative-pool threads.
            func run(
                _ arguments: [String], stdin: String? = nil, extra: [String: String] = [:],
                executable: String = SyncCommandTests.securityExecutable
            ) async throws -> (status: Int32, out: String, err: String) {
                try await onDispatchThread {
                    try self.runBlocking(arguments, stdin: stdin, extra: extra, executable: executable)
                }
            }

            /// Runs `security` to the end.
            func runBlocking(
                _ arguments: [String], stdin: String? = nil, extra: [String: String] = [:],
                executable: String = SyncCommandTests.securityExecutable
            ) throws -> (status: Int32, out: String, err: String) {
                let (process, out, err) = try start(arguments, stdin: stdin, extra: extra, executable: executable)
                let output = out.fileHandleForReading.readDataToEndOfFile()
                let error = err.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (
                    process.terminationStatus, String(decoding: output, as: UTF8.self),
                    String(decoding: error, as: UTF8.self)
                )
            }
        }

        static var securityExecutable: String {
            let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for candidate in [directory, directory.deletingLastPathComponent()] {
                let path = candidate.appendingPathComponent("security").path
                if FileManager.default.isExecutableFile(atPath: path) { return path }
            }
            let linked = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map {
                URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("security").path
            }
            return linked ?? directory.appendingPathComponent("security").path
        }

        private func addSynced(_ home: Home, count: Int, prefix: String) throws {
            let keychain = try home.keychain()
            try keychain.add(
                contentsOf: (0..<count).map { index in
                    Item(
                        class: .genericPassword,
                        attributes: [
                            .service: .string("cli"), .account: .string("\(prefix)\(index)"),
                            .synchronizable: .number(1),
                        ], data: Data("secret \(prefix)\(index)".utf8))
                })
        }

        private func syncedCount(_ home: Home) throws -> Int {
            try home.keychain().find(ItemQuery(class: .genericPassword, synchronizable: .yes)).count
        }

        /// Two machines set up with the commands a person types; the admin password in PGPASSWORD.
        private func setUpTwoMachines() async throws -> (a: Home, b: Home) {
            let cluster = try SharedCluster.get()
            let (a, b) = (Home(), Home())
            let admin = "postgresql://postgres@127.0.0.1:\(cluster.port)/postgres"
            let initialized = try await a.run(
                ["sync", "init", "--server", admin, "--name", "alpha"], extra: ["PGPASSWORD": cluster.superuserPassword]
            )
            #expect(initialized.status == 0, "\(initialized.err)")
            #expect(initialized.out.contains("Recovery key"))
            #expect(!initialized.err.contains("visible to other processes"))
            let invited = try await a.run(["sync", "invite"])
            #expect(invited.status == 0, "\(invited.err)")
            let code = try #require(invited.out.split(separator: "\n").last.map(String.init))
            #expect(code.hasPrefix("kcsync1-"))
            let joined = try await b.run(["sync", "join", "-", "--name", "beta"], stdin: code + "\n")
            #expect(joined.status == 0, "\(joined.err)")
            let approved = try await a.run(["sync", "approve"])
            #expect(approved.status == 0, "\(approved.err)")
            #expect(approved.out.contains("beta"))
            return (a, b)
        }

        @Test(
            "security sync migrate brings a server of an older schema, or of none, to this version's; run again, it has nothing to do"
        )
        func migrateAnOlderServer() async throws {
            let cluster = try SharedCluster.get()
            let database = "kc_migrate_\(UInt32.random(in: 1...UInt32.max))"
            try cluster.sql("CREATE DATABASE \(database)")
            defer { _ = try? cluster.sql("DROP DATABASE \(database) WITH (FORCE)") }
            let url = "postgresql://postgres@127.0.0.1:\(cluster.port)/\(database)"
            let password = ["PGPASSWORD": cluster.superuserPassword]
            let home = Home()
            // No keychain schema at all: every migration.
            let fresh = try await home.run(["sync", "migrate", "--server", url], extra: password)
            #expect(fresh.status == 0, "\(fresh.err)")
            #expect(fresh.out == "server schema version \(ServerSchema.latestVersion) (was 0)\n")
            // A server left at the version before this one's (as one set up by an older build).
            let older = "kc_migrate_old_\(UInt32.random(in: 1...UInt32.max))"
            try cluster.sql("CREATE DATABASE \(older)")
            defer { _ = try? cluster.sql("DROP DATABASE \(older) WITH (FORCE)") }
            let olderURL = "postgresql://postgres:\(cluster.superuserPassword)@127.0.0.1:\(cluster.port)/\(older)"
            let previous = ServerSchema.latestVersion - 1
            let reached = try await PostgresSyncServer.withSingleConnection(
                to: try SyncServerAddress(url: olderURL), logger: Logger(label: "t")
            ) { connection in
                try await ServerSchema.migrate(using: connection, upTo: previous, logger: Logger(label: "t"))
            }
            #expect(reached == previous)
            let plainOlderURL = "postgresql://postgres@127.0.0.1:\(cluster.port)/\(older)"
            let upgraded = try await home.run(["sync", "migrate", "--server", plainOlderURL], extra: password)
            #expect(upgraded.status == 0, "\(upgraded.err)")
            #expect(upgraded.out == "server schema version \(ServerSchema.latestVersion) (was \(previous))\n")
            let again = try await home.run(["sync", "migrate", "--server", plainOlderURL], extra: password)
            #expect(again.out == "server schema version \(ServerSchema.latestVersion): nothing to do\n", "\(again.err)")
            let version = try await PostgresSyncServer.withSingleConnection(
                to: try SyncServerAddress(url: olderURL), logger: Logger(label: "t")
            ) { connection in
                try await ServerSchema.currentVersion(using: connection, logger: Logger(label: "t"))
            }
            #expect(version == ServerSchema.latestVersion)
            // No administrator password: refused, and nothing printed as if it had worked.
            let refused = try await home.run(["sync", "migrate", "--server", plainOlderURL])
            #expect(refused.status != 0 && refused.out.isEmpty)
        }

        @Test("init, invite, join, approve, now, status, devices and conflicts work as typed")
        func commandsAsTyped() async throws {
            let (a, b) = try await setUpTwoMachines()
            try addSynced(a, count: 3, prefix: "x")
            let pushed = try await a.run(["sync", "now"])
            #expect(pushed.status == 0, "\(pushed.err)")
            #expect(pushed.out.contains("pushed 3"))
            let pulled = try await b.run(["sync", "now"])
            #expect(pulled.out.contains("pulled 3"), "\(pulled)")
            #expect(try syncedCount(b) == 3)
            let status = try await b.run(["sync", "status"])
            #expect(status.out.contains("pending changes: 0"))
            #expect(status.out.contains("waiting for unlock: 0"))
            #expect(status.out.contains("conflicts: 0"))
            let devices = try await b.run(["sync", "devices"])
            #expect(devices.out.contains("alpha"))
            #expect(devices.out.contains("beta (this machine)"))
            #expect(try await b.run(["sync", "conflicts"]).out.contains("no conflicts"))
            // A wrong code is refused with a clear error and registers nothing.
            let stranger = Home()
            let refused = try await stranger.run(["sync", "join", "kcsync1-AAAA"])
            #expect(refused.status != 0)
            #expect(refused.err.contains("sync join"))
        }

        @Test(
            "every machine lost: sync recover with the recovery key from init gets every item back; a wrong key changes nothing"
        )
        func recoverWithTheRecoveryKey() async throws {
            let cluster = try SharedCluster.get()
            let admin = "postgresql://postgres@127.0.0.1:\(cluster.port)/postgres"
            let password = ["PGPASSWORD": cluster.superuserPassword]
            let lost = Home()
            let initialized = try await lost.run(
                ["sync", "init", "--server", admin, "--name", "lost"], extra: password)
            #expect(initialized.status == 0, "\(initialized.err)")
            let lines = initialized.out.split(separator: "\n").map(String.init)
            let key = try #require(lines.firstIndex { $0.hasPrefix("Recovery key") }.map { lines[$0 + 1] })
            try addSynced(lost, count: 4, prefix: "r")
            #expect(try await lost.run(["sync", "now"]).out.contains("pushed 4"))
            // A device removed from the zone and its keys rolled: the recovery key still opens the newest.
            let other = Home()
            let code = try #require(
                try await lost.run(["sync", "invite"]).out.split(separator: "\n").last.map(String.init))
            #expect(try await other.run(["sync", "join", "-", "--name", "other"], stdin: code + "\n").status == 0)
            #expect(try await lost.run(["sync", "approve"]).status == 0)
            #expect(try await lost.run(["sync", "remove", "other"]).status == 0)
            try addSynced(lost, count: 1, prefix: "after-roll-")
            #expect(try await lost.run(["sync", "now"]).status == 0)
            let zone = try SyncSetup.status(of: lost.keychain()).zone.description
            let devices =
                "SELECT count(*) FROM keychain_sync.devices d JOIN keychain_sync.zones z USING (account_id) WHERE z.zone_id = '\(zone)'"
            let devicesBefore = try cluster.sql(devices)

            // The machine is gone. A wrong key (well formed) is refused and changes nothing.
            let fresh = Home()
            let wrong = try await fresh.run(
                ["sync", "recover", "--server", admin, "--name", "fresh"],
                stdin: RecoveryKey.generate().displayString + "\n",
                extra: password)
            #expect(wrong.status != 0)
            #expect(wrong.err.contains("sync recover: this recovery key opens no zone"), "\(wrong.err)")
            #expect(!wrong.err.contains(key) && !wrong.out.contains(key))
            #expect(try cluster.sql(devices) == devicesBefore)
            #expect(try await fresh.run(["sync", "status"]).status != 0)

            // The right key, on standard input: the zone's items come back.
            let recovered = try await fresh.run(
                ["sync", "recover", "--server", admin, "--name", "fresh"], stdin: key + "\n", extra: password)
            #expect(recovered.status == 0, "\(recovered.err)")
            #expect(recovered.out.contains("recovered zone \(zone)"), "\(recovered.out)")
            #expect(try syncedCount(fresh) == 5)
            #expect(try cluster.sql(devices) == "\(Int(devicesBefore)! + 1)")
            // It is a full member: its writes reach the zone, and the others' reach it.
            try addSynced(fresh, count: 2, prefix: "recovered-")
            #expect(try await fresh.run(["sync", "now"]).out.contains("pushed 2"))
            #expect(try await lost.run(["sync", "now"]).out.contains("pulled 2"))
            let devicesListed = try await fresh.run(["sync", "devices"])
            #expect(devicesListed.out.contains("fresh (this machine)"))
            #expect(!devicesListed.out.contains("recovery key"))
        }

        @Test("keychaind keeps the default keychain in sync by itself: pulls on NOTIFY, pushes local writes")
        func agentSyncsInTheBackground() async throws {
            let (a, b) = try await setUpTwoMachines()
            let runtime = a.root + "/run"
            try FileManager.default.createDirectory(
                atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let agent = Process()
            agent.executableURL = URL(
                fileURLWithPath: (SyncCommandTests.securityExecutable as NSString).deletingLastPathComponent
                    + "/keychaind")
            agent.environment = a.environment.merging(["XDG_RUNTIME_DIR": runtime]) { $1 }
            agent.standardOutput = FileHandle.nullDevice
            agent.standardError = FileHandle.nullDevice
            try agent.run()
            defer {
                agent.terminate()
                agent.waitUntilExit()
            }
            // B's change, pushed by `security sync now` there, lands in A's keychain with no command on A.
            try addSynced(b, count: 2, prefix: "from-b-")
            #expect(try await b.run(["sync", "now"]).status == 0)
            #expect(try await eventually(20) { try syncedCount(a) == 2 })
            // A's write (by another process, straight into the file) is pushed by A's agent.
            try addSynced(a, count: 3, prefix: "from-a-")
            #expect(try await eventually(20) { try SyncSetup.status(of: a.keychain()).pendingChanges == 0 })
            #expect(try await b.run(["sync", "now"]).out.contains("pulled 3"))
            #expect(try syncedCount(b) == 5)
        }

        @Test(
            "keychain-bench --only sync prints the push, pull, propagation and concurrent-push rows against their floor"
        )
        func benchmarkRows() async throws {
            let home = Home()
            let bench = (SyncCommandTests.securityExecutable as NSString).deletingLastPathComponent + "/keychain-bench"
            let result = try await home.run(["--only", "sync", "--sync-items", "40", "--quiet"], executable: bench)
            #expect(result.status == 0, "\(result.err)")
            #expect(result.out.contains("push (seal, commit)"), "\(result.out)")
            #expect(result.out.contains("× plain INSERT"))
            #expect(result.out.contains("× plain SELECT"))
            #expect(result.out.contains("one item, add to the other machine"))
            #expect(result.out.contains("1 machine alone, one add and one round at a time"))
            #expect(result.out.contains("4 machines at once, one add and one round each"))
            #expect(result.out.contains(" pushes/s"))
        }

        @Test("security sync now killed with SIGKILL at random points loses nothing and commits nothing twice")
        func killedPushesLoseNothing() async throws {
            let (a, b) = try await setUpTwoMachines()
            try addSynced(a, count: 300, prefix: "k")
            var generator = SystemRandomNumberGenerator()
            for round in 0..<12 {
                let (process, _, _) = try a.start(["sync", "now"])
                let delay = UInt64.random(in: 0...400_000_000, using: &generator)
                try await Task.sleep(nanoseconds: delay)
                // Not when it has ended already: its pid may be another process's by now.
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
                // Writes keep landing between the crashes.
                try addSynced(a, count: 5, prefix: "r\(round)-")
            }
            let finished = try await a.run(["sync", "now"])
            #expect(finished.status == 0, "\(finished.err)")
            #expect(try await b.run(["sync", "now"]).status == 0)
            let expected = 300 + 12 * 5
            #expect(try syncedCount(a) == expected)
            #expect(try syncedCount(b) == expected)
            #expect(try SyncSetup.status(of: a.keychain()).pendingChanges == 0)
            // The server holds one record per item and a gapless log (from the oldest head it keeps:
            // the heads both machines acknowledged are collected).
            let zone = try SyncSetup.status(of: a.keychain()).zone.description
            let cluster = try SharedCluster.get()
            #expect(
                try cluster.sql("SELECT count(*) FROM keychain_sync.records WHERE zone_id = '\(zone)'") == "\(expected)"
            )
            #expect(
                try cluster.sql(
                    "SELECT max(seq) - min(seq) + 1 = count(*) FROM keychain_sync.commits WHERE zone_id = '\(zone)'"
                ) == "t")
            #expect(try a.keychain().readSyncTables { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        }
    }
}
