import Crypto
import Foundation
import PostgresScratchServer
import Logging
import PostgresNIO
import Synchronization
import Testing

@testable import KeychainSync

/// The suite's one PostgreSQL server, started on first use and stopped when the test process
/// exits (`atexit`; the cluster's watchdog covers a crash).
enum SharedCluster {
    private static let box = Mutex<Result<PostgresCluster, PostgresCluster.Failure>?>(nil)

    static func get() throws -> PostgresCluster {
        try box.withLock { slot in
            if slot == nil {
                do {
                    slot = .success(try PostgresCluster(logStatements: true))
                    atexit { SharedCluster.stopAtExit() }
                } catch {
                    slot = .failure(PostgresCluster.Failure(description: "\(error)"))
                }
            }
            return try slot!.get()
        }
    }

    private static func stopAtExit() {
        box.withLock { slot in
            if case .success(let cluster) = slot { cluster.stop() }
        }
    }
}

/// Random bytes (the server only ever sees opaque blobs).
func randomBytes(_ count: Int) -> Data {
    var generator = SystemRandomNumberGenerator()
    return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
}

/// One device login of a fresh account, with its transport.
struct TestDevice {
    var account: UUID
    var device: DeviceID
    var role: String
    var password: String
    var server: PostgresSyncServer

    /// Bootstraps a new account with one device.
    static func bootstrap(_ cluster: PostgresCluster, maximumConnections: Int = 4) async throws -> TestDevice {
        let account = UUID()
        let device = DeviceID.random()
        let role = PostgresSyncServer.deviceRoleName(for: device)
        let password = ScramVerifier.randomPassword()
        try await PostgresSyncServer.bootstrap(
            adminURL: cluster.superuserURL, account: account, device: device, role: role, password: password)
        let server = PostgresSyncServer(
            address: cluster.address(user: role, password: password), maximumConnections: maximumConnections)
        return TestDevice(account: account, device: device, role: role, password: password, server: server)
    }

    /// Another transport (another pool) for the same login.
    func anotherServer(_ cluster: PostgresCluster, maximumConnections: Int = 1) -> PostgresSyncServer {
        PostgresSyncServer(
            address: cluster.address(user: role, password: password), maximumConnections: maximumConnections)
    }
}

/// A zone created by a device, with the class key its records name.
struct TestZone {
    var zone: ZoneID
    var keyID: UUID
    var channel: String

    static func create(by device: TestDevice) async throws -> TestZone {
        let zone = TestZone(zone: .random(), keyID: UUID(), channel: PostgresSyncServer.makeNotifyChannel())
        var first = zone.commit(expectedSeq: 0, author: device.device, records: 2)
        first.keys = [ServerKey(keyID: zone.keyID, epoch: 1, wrapped: randomBytes(60))]
        first.roster = (1, randomBytes(300))
        first.shares = [ServerShare(epoch: 1, recipient: device.device, blob: randomBytes(120))]
        first.escrow = (1, randomBytes(90))
        try await device.server.createZone(first, notifyChannel: zone.channel)
        return zone
    }

    /// A commit on `expectedSeq` writing `records` new random records.
    func commit(expectedSeq: Int64, author: DeviceID, records: Int = 1, commitID: UUID = UUID()) -> Commit {
        let rows = (0..<records).map { _ in
            ServerRecord(
                recordID: RecordID(randomBytes(16))!, seq: 0, keyID: keyID, tombstone: false, blob: randomBytes(200))
        }
        let head = ServerHead(seq: expectedSeq + 1, commitID: commitID, author: author, bytes: randomBytes(100))
        return Commit(zone: zone, expectedSeq: expectedSeq, head: head, records: rows)
    }
}

/// How long until `condition` holds, checking every 20 ms, or `nil` when it does not within
/// `limit`.
func timeUntil(within limit: Duration, _ condition: () async throws -> Bool) async throws -> Duration? {
    let start = ContinuousClock.now
    while ContinuousClock.now - start < limit {
        if try await condition() { return ContinuousClock.now - start }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition() ? ContinuousClock.now - start : nil
}

/// Waits until `condition` holds (polling), for at most `seconds`.
func eventually(_ seconds: Double = 5, _ condition: () async throws -> Bool) async throws -> Bool {
    try await timeUntil(within: .milliseconds(Int(seconds * 1000)), condition) != nil
}

/// How many backends a role has open (as the superuser sees them).
func backends(of role: String, in cluster: PostgresCluster) throws -> Int {
    Int(try cluster.sql("SELECT count(*) FROM pg_stat_activity WHERE usename = '\(role)'")) ?? -1
}

extension SyncIntegration {
    @Suite(.serialized, .timeLimit(.minutes(10)))
    struct PostgresServerTests {
        let cluster: PostgresCluster

        init() throws {
            cluster = try SharedCluster.get()
        }

        // MARK: SCRAM verifiers

        @Test func scramVerifierMatchesKnownAnswers() throws {
            // Computed with Python: hashlib.pbkdf2_hmac('sha256', …) and hmac (RFC 5802 / 7677).
            let first = try ScramVerifier(password: "pencil", salt: Data((0..<16).map { UInt8($0) }), iterations: 4096)
            #expect(
                first.encoded
                    == "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$zHCdol2044/ZyWzPLi7oxApCkamKw9Z+E4U/QApd/5Y=:"
                    + "dd5peBOitVnLNFu7VmwP+HiDaaw4OUCv396eVCWhYiE=")
            let second = try ScramVerifier(
                password: "correct horse battery staple", salt: Data("seedsalt".utf8), iterations: 10000)
            #expect(
                second.encoded
                    == "SCRAM-SHA-256$10000:c2VlZHNhbHQ=$D2ioRTIChTxrtemFZh75zZNF+OHsKl1se170wH34Mbg=:"
                    + "cs3ugfbchetcNtBgqT6W2M6g5vHhdJ/lHyN/cutly40=")
            #expect(!"\(first)".contains("AAECAwQF"))
            #expect(throws: SyncServerError.self) { try ScramVerifier(password: "pässword") }
        }

        @Test func aRoleMadeFromAVerifierLogsInWithThePassword() async throws {
            let role = "kc_test_" + randomBytes(6).hexString
            let password = ScramVerifier.randomPassword()
            let verifier = try ScramVerifier(password: password).encoded
            try await cluster.withConnection { connection in
                var statement = ""
                let rows = try await connection.query(
                    "SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', \(role), \(verifier))",
                    logger: Logger(label: "t"))
                for try await text in rows.decode(String.self) { statement = text }
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "t"))
            }
            let user = try await cluster.withConnection(user: role, password: password) { connection in
                var name = ""
                for try await value in try await connection.query(
                    "SELECT current_user::text", logger: Logger(label: "t")
                )
                .decode(String.self) { name = value }
                return name
            }
            #expect(user == role)
            await #expect(throws: SyncServerError.self) {
                try await cluster.withConnection(user: role, password: password + "x") { _ in }
            }
        }

        // MARK: Schema

        @Test func migrationsAreIdempotent() async throws {
            try await cluster.withConnection { connection in
                let logger = Logger(label: "t")
                let first = try await ServerSchema.migrate(using: connection, logger: logger)
                let second = try await ServerSchema.migrate(using: connection, logger: logger)
                #expect(first == ServerSchema.latestVersion)
                #expect(second == ServerSchema.latestVersion)
            }
            #expect(
                try cluster.sql("SELECT count(*) FROM keychain_sync.kc_schema_version")
                    == "\(ServerSchema.latestVersion)")
            let forced = try cluster.sql(
                """
                SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'keychain_sync' AND c.relkind = 'r' AND c.relrowsecurity AND c.relforcerowsecurity
                  AND pg_get_userbyid(c.relowner) = 'kc_owner'
                """)
            #expect(forced == "\(ServerSchema.allTableNames.count)")
            #expect(
                try cluster.sql("SELECT rolcreaterole, rolcanlogin FROM pg_roles WHERE rolname = 'kc_admin'") == "t|f")
        }

        // MARK: Push and pull

        @Test func pushAndPullRoundTripOpaqueBlobs() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let second = zone.commit(expectedSeq: 1, author: alice.device, records: 3)
            #expect(try await alice.server.push(second) == .committed)

            let all = try await alice.server.pull(zone.zone, after: 0)
            #expect(all.headSeq == 2)
            #expect(all.heads.map(\.seq) == [1, 2])
            #expect(all.heads.last == second.head)
            #expect(all.records.count == 5)
            let tail = try await alice.server.pull(zone.zone, after: 1)
            #expect(tail.heads == [second.head])
            #expect(Set(tail.records.map(\.blob)) == Set(second.records.map(\.blob)))
            #expect(tail.records.allSatisfy { $0.seq == 2 })

            let state = try await alice.server.zoneState(zone.zone)
            #expect(state.headSeq == 2 && state.notifyChannel == zone.channel)
            #expect(state.keys.map(\.keyID) == [zone.keyID])
            #expect(state.roster?.epoch == 1 && state.escrow?.epoch == 1)
            #expect(try await alice.server.shares(zone.zone, for: alice.device).count == 1)
            let index = try await alice.server.recordIndex(zone.zone)
            #expect(index.count == 5)
            #expect(second.records.allSatisfy { index[$0.recordID] == 2 })

            // A tombstone rewrites the row at the new seq.
            var deletion = zone.commit(expectedSeq: 2, author: alice.device, records: 0)
            deletion.records = [
                ServerRecord(
                    recordID: second.records[0].recordID, seq: 0, keyID: zone.keyID, tombstone: true, blob: Data())
            ]
            #expect(try await alice.server.push(deletion) == .committed)
            let latest = try await alice.server.pull(zone.zone, after: 2)
            #expect(latest.records.map(\.tombstone) == [true])
            #expect(try await alice.server.recordIndex(zone.zone)[second.records[0].recordID] == 3)
        }

        @Test func rowsBreakingServerChecksAreRefused() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            var commit = zone.commit(expectedSeq: 1, author: alice.device)
            commit.records[0].keyID = UUID()
            do {
                _ = try await alice.server.push(commit)
                Issue.record("a record under an unknown key was accepted")
            } catch let error as SyncServerError {
                #expect(error.code == .invalidArgument && error.sqlState == "23503")
            }
            var oversized = zone.commit(expectedSeq: 1, author: alice.device)
            oversized.records[0].blob = randomBytes(ServerSchema.maximumBlobSize + 1)
            do {
                _ = try await alice.server.push(oversized)
                Issue.record("an oversized blob was accepted")
            } catch let error as SyncServerError {
                #expect(error.code == .invalidArgument && error.sqlState == "23514")
            }
            // Both rolled back whole: the head did not move.
            #expect(try await alice.server.pull(zone.zone, after: 0).headSeq == 1)
            #expect(try await alice.server.push(zone.commit(expectedSeq: 1, author: alice.device)) == .committed)
        }

        @Test func concurrentPushesOnOneHeadCommitExactlyOnceAndTheLoserSeesTheNewHead() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            let other = alice.anotherServer(cluster)
            defer {
                Task {
                    await alice.server.shutdown(); await other.shutdown()
                }
            }
            let zone = try await TestZone.create(by: alice)
            // Many rounds of 200 records a commit, so that the loser also meets the winner's
            // statement still running (before the fix, that loser read the old head back).
            for head in Int64(1)...30 {
                async let first = alice.server.push(zone.commit(expectedSeq: head, author: alice.device, records: 200))
                async let second = other.push(zone.commit(expectedSeq: head, author: alice.device, records: 200))
                let outcomes = try await [first, second]
                #expect(outcomes.filter { $0 == .committed }.count == 1)
                #expect(outcomes.filter { $0 == .staleHead(currentSeq: head + 1) }.count == 1, "round \(head)")
            }
        }

        @Test func aRetriedCommitIsAlreadyCommitted() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let commit = zone.commit(expectedSeq: 1, author: alice.device)
            #expect(try await alice.server.push(commit) == .committed)
            #expect(try await alice.server.push(commit) == .alreadyCommitted)
            #expect(try await alice.server.push(zone.commit(expectedSeq: 2, author: alice.device)) == .committed)
            #expect(try await alice.server.push(commit) == .alreadyCommitted)
            #expect(
                try await alice.server.push(zone.commit(expectedSeq: 1, author: alice.device))
                    == .staleHead(currentSeq: 3))
        }

        @Test func sequenceNumbersAreGaplessUnderConcurrentPushes() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            let servers = (0..<4).map { _ in alice.anotherServer(cluster, maximumConnections: 1) }
            defer {
                Task {
                    await alice.server.shutdown(); for server in servers { await server.shutdown() }
                }
            }
            let zone = try await TestZone.create(by: alice)
            let commitIDs = try await withThrowingTaskGroup(of: UUID.self) { group in
                for index in 0..<50 {
                    let server = servers[index % servers.count]
                    group.addTask { try await pushWithRetries(zone, author: alice.device, to: server) }
                }
                return try await group.reduce(into: [UUID]()) { $0.append($1) }
            }
            let batch = try await alice.server.pull(zone.zone, after: 0)
            #expect(batch.headSeq == 51)
            #expect(batch.heads.map(\.seq) == Array(1...51))
            #expect(Set(batch.heads.dropFirst().map(\.commitID)) == Set(commitIDs))
            #expect(batch.records.count == 52)
        }

        // MARK: Isolation

        @Test func anotherAccountSeesNoRowsAndCannotPush() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            let mallory = try await TestDevice.bootstrap(cluster)
            defer {
                Task {
                    await alice.server.shutdown(); await mallory.server.shutdown()
                }
            }
            let zone = try await TestZone.create(by: alice)
            #expect(try await alice.server.push(zone.commit(expectedSeq: 1, author: alice.device)) == .committed)

            await #expect(throws: SyncServerError.self) { try await mallory.server.pull(zone.zone, after: 0) }
            await #expect(throws: SyncServerError.self) { try await mallory.server.zoneState(zone.zone) }
            #expect(try await mallory.server.recordIndex(zone.zone).isEmpty)
            #expect(try await mallory.server.shares(zone.zone, for: alice.device).isEmpty)
            #expect(try await mallory.server.joinRequests(zone: zone.zone).isEmpty)
            await #expect(throws: SyncServerError.self) {
                try await mallory.server.push(zone.commit(expectedSeq: 2, author: mallory.device))
            }
            let counts = try await cluster.withConnection(user: mallory.role, password: mallory.password) {
                connection in
                var counts: [Int64] = []
                for table in ServerSchema.allTableNames {
                    let byAccount = table == "accounts" || table == "devices"
                    let filter =
                        byAccount
                        ? "account_id = '\(alice.account.uuidString)'" : "zone_id = '\(zone.zone.uuid.uuidString)'"
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT count(*) FROM keychain_sync.\(table) WHERE \(filter)"),
                        logger: Logger(label: "t"))
                    for try await count in rows.decode(Int64.self) { counts.append(count) }
                }
                return counts
            }
            #expect(counts == Array(repeating: 0, count: ServerSchema.allTableNames.count))
            #expect(try await alice.server.pull(zone.zone, after: 0).headSeq == 2)
            // Garbage collection: only the zone's own devices acknowledge and collect, and no
            // device deletes a row itself.
            await #expect(throws: SyncServerError.self) { try await mallory.server.acknowledge(zone.zone, seq: 2) }
            await #expect(throws: SyncServerError.self) { try await alice.server.acknowledge(zone.zone, seq: 3) }
            for statement in [
                "SELECT keychain_sync.kc_collect_garbage('\(zone.zone)')",
                "DELETE FROM keychain_sync.records WHERE zone_id = '\(zone.zone)'",
            ] {
                await #expect(throws: (any Error).self) {
                    try await cluster.withConnection(user: mallory.role, password: mallory.password) {
                        try await $0.run(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "t"))
                    }
                }
            }
            await #expect(throws: (any Error).self) {
                try await cluster.withConnection(user: alice.role, password: alice.password) {
                    try await $0.run(
                        PostgresQuery(unsafeSQL: "DELETE FROM keychain_sync.commits WHERE zone_id = '\(zone.zone)'"),
                        logger: Logger(label: "t"))
                }
            }
            #expect(try await alice.server.pull(zone.zone, after: 0).heads.count == 2)
            // Alice, the account's only device, has passed head 1: it goes; the newest stays.
            #expect(try await alice.server.acknowledge(zone.zone, seq: 2) == 0)
            #expect(try await alice.server.pull(zone.zone, after: 0).heads.map(\.seq) == [2])
        }

        @Test func aRoleWithoutGrantsCannotReadRecords() async throws {
            _ = try await TestDevice.bootstrap(cluster)  // the schema exists
            let role = "kc_nogrant_" + randomBytes(6).hexString
            let password = ScramVerifier.randomPassword()
            let verifier = try ScramVerifier(password: password).encoded
            try await cluster.withConnection { connection in
                var statement = ""
                for try await text in try await connection.query(
                    "SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', \(role), \(verifier))",
                    logger: Logger(label: "t")
                ).decode(String.self) { statement = text }
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: Logger(label: "t"))
            }
            let server = PostgresSyncServer(address: cluster.address(user: role, password: password))
            defer { Task { await server.shutdown() } }
            do {
                _ = try await server.recordIndex(.random())
                Issue.record("a role without grants read records")
            } catch let error as SyncServerError {
                #expect(error.code == .permissionDenied)
            }
        }

        // MARK: Enrolment

        @Test func anInvitationEnrolsOneDeviceOnce() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let invitation = try await ServerTestInvitation.create(by: alice, zone: zone)

            // The invitation login may only join: no table is readable.
            try await cluster.withConnection(user: invitation.role, password: invitation.password) { connection in
                do {
                    try await connection.query("SELECT count(*) FROM keychain_sync.records", logger: Logger(label: "t"))
                    Issue.record("an invitation login read records")
                } catch {
                    #expect(SyncServerError(postgres: error).code == .permissionDenied)
                }
            }
            #expect(try await eventually { try backends(of: invitation.role, in: cluster) == 0 })

            let bob = try await invitation.join(cluster)
            defer { Task { await bob.server.shutdown() } }
            let requests = try await alice.server.joinRequests(zone: zone.zone)
            #expect(requests.map(\.device) == [bob.device])
            #expect(requests.first?.blob == invitation.request)
            #expect(try await bob.server.pull(zone.zone, after: 0).headSeq == 1)

            // Used: the invitation login is refused, and a second join cannot happen.
            do {
                try await cluster.withConnection(user: invitation.role, password: invitation.password) { _ in }
                Issue.record("a used invitation logged in")
            } catch {
                #expect(SyncServerError(postgres: error).code == .authenticationFailed)
            }
            await #expect(throws: SyncServerError.self) { _ = try await invitation.join(cluster) }
        }

        @Test func anExpiredInvitationIsRefused() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let invitation = try await ServerTestInvitation.create(by: alice, zone: zone)
            try cluster.sql(
                "UPDATE keychain_sync.invitations SET expires_at = now() - interval '1 second' WHERE role_name = '\(invitation.role)'"
            )
            do {
                _ = try await invitation.join(cluster)
                Issue.record("an expired invitation was accepted")
            } catch let error as SyncServerError {
                #expect(error.code == .permissionDenied)
                #expect(error.message.contains("expired"))
            }
            // The login itself expires with the invitation (VALID UNTIL).
            try cluster.sql("ALTER ROLE \(invitation.role) VALID UNTIL '2000-01-01'")
            do {
                _ = try await invitation.join(cluster)
                Issue.record("an expired invitation login was accepted")
            } catch let error as SyncServerError {
                #expect(error.code == .authenticationFailed)
            }
            #expect(try await alice.server.joinRequests(zone: zone.zone).isEmpty)
            await #expect(throws: SyncServerError.self) {
                try await alice.server.createInvitation(
                    zone: zone.zone, tokenHash: randomBytes(32), role: "kc_inv_" + randomBytes(8).hexString,
                    password: ScramVerifier.randomPassword(), expires: Date(timeIntervalSinceNow: -60))
            }
        }

        @Test func aRevokedDeviceIsLoggedOutAndRefused() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let bob = try await ServerTestInvitation.create(by: alice, zone: zone).join(cluster)
            defer { Task { await bob.server.shutdown() } }
            #expect(try await bob.server.pull(zone.zone, after: 0).headSeq == 1)
            #expect(try backends(of: bob.role, in: cluster) == 1)  // the pool's idle connection

            try await cluster.withConnection(user: bob.role, password: bob.password) { open in
                try await alice.server.revoke(device: bob.device)
                // The server ends the session (postgres-nio's query on a connection the server has
                // closed never completes, so the test watches the connection close instead).
                #expect(try await eventually { open.isClosed })
            }
            #expect(try await eventually { try backends(of: bob.role, in: cluster) == 0 })
            do {
                _ = try await bob.server.pull(zone.zone, after: 0)
                Issue.record("a revoked device pulled")
            } catch let error as SyncServerError {
                #expect([.authenticationFailed, .connectionFailed].contains(error.code))
            }
            do {
                _ = try await bob.server.pull(zone.zone, after: 0)
                Issue.record("a revoked device logged in")
            } catch let error as SyncServerError {
                #expect(error.code == .authenticationFailed)
            }
            #expect(
                try cluster.sql("SELECT revoked FROM keychain_sync.devices WHERE device_id = '\(bob.device)'") == "t")
        }

        // MARK: Notifications and lifetime

        @Test func listenReceivesTheSeqOfAPushFromAnotherConnection() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            let listener = alice.anotherServer(cluster)
            defer {
                Task {
                    await alice.server.shutdown(); await listener.shutdown()
                }
            }
            let zone = try await TestZone.create(by: alice)
            let (events, continuation) = AsyncStream.makeStream(of: Int64.self)
            let task = Task {
                try await listener.listen(zone: zone.zone, channel: zone.channel) {
                    continuation.yield(-1)
                } onNotify: { seq in
                    continuation.yield(seq)
                }
            }
            var iterator = events.makeAsyncIterator()
            #expect(await iterator.next() == -1)
            #expect(try await alice.server.push(zone.commit(expectedSeq: 1, author: alice.device)) == .committed)
            #expect(try await alice.server.push(zone.commit(expectedSeq: 2, author: alice.device)) == .committed)
            #expect(await iterator.next() == 2)
            #expect(await iterator.next() == 3)
            task.cancel()
            try await task.value
            #expect(try await eventually { try backends(of: alice.role, in: cluster) <= 1 })
        }

        @Test func aRestartedServerIsReachedAgain() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let before = cluster.postmasterPID()
            try cluster.restart(mode: .fast)
            #expect(cluster.postmasterPID() != before)
            // The pool's idle connection was closed by the shutdown; the next call opens another.
            #expect(try await alice.server.push(zone.commit(expectedSeq: 1, author: alice.device)) == .committed)
            #expect(try await alice.server.pull(zone.zone, after: 0).headSeq == 2)
        }

        @Test func shutdownClosesEveryConnection() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            let zone = try await TestZone.create(by: alice)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 { group.addTask { _ = try await alice.server.pull(zone.zone, after: 0) } }
                try await group.waitForAll()
            }
            #expect(await alice.server.openConnectionCount > 1)
            await alice.server.shutdown()
            #expect(await alice.server.openConnectionCount == 0)
            #expect(try await eventually { try backends(of: alice.role, in: cluster) == 0 })
            do {
                _ = try await alice.server.pull(zone.zone, after: 0)
                Issue.record("a shut-down transport ran a query")
            } catch let error as SyncServerError {
                #expect(error.code == .closed)
            }
        }

        @Test func passwordsNeverReachTheServerLog() async throws {
            let alice = try await TestDevice.bootstrap(cluster)
            defer { Task { await alice.server.shutdown() } }
            let zone = try await TestZone.create(by: alice)
            let bob = try await ServerTestInvitation.create(by: alice, zone: zone).join(cluster)
            await bob.server.shutdown()
            let log = try String(contentsOf: cluster.logFile, encoding: .utf8)
            #expect(log.contains("kc_bootstrap_account"))  // statements are logged
            #expect(!log.contains(alice.password))
            #expect(!log.contains(bob.password))
            #expect(!log.contains(cluster.superuserPassword))
        }
    }
}

/// Pushes one commit, rebasing on the reported head until it is in.
func pushWithRetries(_ zone: TestZone, author: DeviceID, to server: PostgresSyncServer) async throws -> UUID {
    let commitID = UUID()
    var expected: Int64 = 1
    for _ in 0..<500 {
        switch try await server.push(zone.commit(expectedSeq: expected, author: author, commitID: commitID)) {
        case .committed, .alreadyCommitted: return commitID
        case .staleHead(let current): expected = current
        }
    }
    throw SyncServerError(.server, "no progress after 500 attempts")
}

/// An invitation into a zone, as its sponsor made it and the new device will use it.
struct ServerTestInvitation {
    var token: Data
    var role: String
    var password: String
    var request: Data

    static func create(by sponsor: TestDevice, zone: TestZone) async throws -> ServerTestInvitation {
        let invitation = ServerTestInvitation(
            token: randomBytes(16), role: "kc_inv_" + randomBytes(16).hexString,
            password: ScramVerifier.randomPassword(), request: randomBytes(150))
        try await sponsor.server.createInvitation(
            zone: zone.zone, tokenHash: Data(SHA256.hash(data: invitation.token)), role: invitation.role,
            password: invitation.password, expires: Date(timeIntervalSinceNow: 900))
        return invitation
    }

    /// Joins as a new device and returns it.
    func join(_ cluster: PostgresCluster) async throws -> TestDevice {
        let device = DeviceID.random()
        let role = PostgresSyncServer.deviceRoleName(for: device)
        let password = ScramVerifier.randomPassword()
        try await PostgresSyncServer.join(
            serverURL: cluster.serverURL, invitationRole: self.role, invitationPassword: self.password, token: token,
            device: device, role: role, password: password, request: request)
        let server = PostgresSyncServer(address: cluster.address(user: role, password: password))
        // The account is the sponsor's; the test does not need its identifier.
        return TestDevice(account: UUID(), device: device, role: role, password: password, server: server)
    }
}
