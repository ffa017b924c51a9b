import Crypto
import Foundation
import Logging
import PostgresNIO

/// The shared store on PostgreSQL (postgres-nio), as one device's login sees it.
///
/// Every ``SyncServer`` method is one SQL transaction on a pooled connection. The server holds
/// ciphertext and opaque identifiers only (schema: ``ServerSchema``); row-level security shows a
/// login only its account's zones. Call ``shutdown()`` when done: it closes every connection.
public final class PostgresSyncServer: SyncServer {
    /// The server and login.
    public let address: SyncServerAddress
    let pool: ConnectionPool
    let logger: Logger

    /// Connects lazily to `address` (no connection is made until the first call).
    ///
    /// - Parameters:
    ///   - maximumConnections: the pool's size (concurrent calls beyond it wait).
    ///   - logger: where postgres-nio and this transport log (never a password or a blob).
    public init(
        address: SyncServerAddress, maximumConnections: Int = 4, logger: Logger = Logger(label: "keychain.sync")
    ) {
        self.address = address
        self.logger = logger
        self.pool = ConnectionPool(address: address, maximum: maximumConnections, logger: logger)
    }

    /// Connects lazily to a `postgresql://user:password@host:port/db` URL.
    public convenience init(url: String, maximumConnections: Int = 4, logger: Logger = Logger(label: "keychain.sync"))
        throws
    {
        self.init(address: try SyncServerAddress(url: url), maximumConnections: maximumConnections, logger: logger)
    }

    /// Closes every connection; later calls fail with ``SyncServerError/Code/closed``.
    public func shutdown() async {
        await pool.shutdown()
    }

    /// The connections currently open (leased or idle); 0 after ``shutdown()`` once calls end.
    public var openConnectionCount: Int {
        get async { await pool.openCount }
    }

    // MARK: Names

    /// A fresh notify channel: a letter and 32 lowercase hex digits (postgres-nio double-quotes
    /// channel names without escaping, and `pg_notify` must get exactly the same string).
    public static func makeNotifyChannel() -> String {
        "z" + SymmetricKey(size: .bits128).withUnsafeBytes { Data($0) }.hexString
    }

    /// Whether `channel` has the shape ``makeNotifyChannel()`` gives.
    public static func isValidNotifyChannel(_ channel: String) -> Bool {
        let bytes = Array(channel.utf8)
        guard bytes.count == 33, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[0]) else { return false }
        return bytes.dropFirst().allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The login name of a device: `kc_dev_` and its identifier's 32 hex digits.
    public static func deviceRoleName(for device: DeviceID) -> String {
        "kc_dev_" + device.uuid.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    // MARK: Connections and transactions

    /// Leases a connection for `body`; a connection whose use threw is closed, not reused. A
    /// body still waiting a second after the server closed its connection fails (see
    /// ``untilClosed(_:grace:_:)``).
    @discardableResult
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T)
        async throws -> T
    {
        let lease = try await pool.lease()
        do {
            let result = try await lease.run(body)
            await pool.release(lease, reusable: true)
            return result
        } catch {
            await pool.release(lease, reusable: false)
            throw SyncServerError(postgres: error)
        }
    }

    /// Runs `body` in one transaction: committed when it returns a value, rolled back when it
    /// returns `nil` or throws.
    func transaction<T: Sendable>(
        _ mode: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T?
    ) async throws -> T? {
        try await withConnection { [logger] connection in
            try await connection.run(PostgresQuery(unsafeSQL: "BEGIN " + mode), logger: logger)
            let result: T?
            do {
                result = try await body(connection)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            try await connection.run(result == nil ? "ROLLBACK" : "COMMIT", logger: logger)
            return result
        }
    }

    // MARK: SyncServer

    public func createZone(_ commit: Commit, notifyChannel: String) async throws {
        guard commit.expectedSeq == 0 else {
            throw SyncServerError(.invalidArgument, "a zone's first commit builds on 0")
        }
        try Self.check(commit)
        guard Self.isValidNotifyChannel(notifyChannel) else {
            throw SyncServerError(.invalidArgument, "a notify channel is a letter and 32 lowercase hex digits")
        }
        _ = try await transaction("ISOLATION LEVEL READ COMMITTED") { [self] connection -> Bool? in
            // An empty zone, then its first commit as any later one lands (head 0 → 1).
            try await connection.run(
                """
                INSERT INTO keychain_sync.zones (zone_id, account_id, head_seq, head_hash, notify_channel)
                VALUES (\(commit.zone.uuid), keychain_sync.kc_current_account(), 0, NULL, \(notifyChannel))
                """, logger: logger)
            guard try await land(commit, on: connection) else {
                throw SyncServerError(.server, "a new zone's first commit did not land")
            }
            return true
        }
    }

    public func push(_ commit: Commit) async throws -> PushOutcome {
        try Self.check(commit)
        // One statement, so one round trip and its own transaction: at READ COMMITTED the
        // loser of a race for the head waits for the winner's row lock, then matches 0 rows.
        if try await withConnection({ [self] in try await land(commit, on: $0) }) { return .committed }
        return try await outcomeOfLostRace(commit)
    }

    public func pull(_ zone: ZoneID, after seq: Int64) async throws -> PullBatch {
        try await withConnection { [self] connection in
            // One statement reads one snapshot: no transaction (and its two extra round trips).
            let rows = try await connection.execute(PullStatement(zone: zone.uuid, after: seq), logger: logger)
            var batch: PullBatch?
            for try await row in rows {
                try Self.add(row, to: &batch)
            }
            guard let batch else { throw SyncServerError(.notFound, "no such zone") }
            return batch
        }
    }

    /// Adds one row of ``pull(_:after:)``'s statement to the batch: kind 0 is the zone's head
    /// (always first), 1 a head, 2 a record.
    private static func add(_ row: PullStatement.Row, to batch: inout PullBatch?) throws {
        switch row.kind {
        case 0:
            batch = PullBatch(headSeq: row.seq, heads: [], records: [], headHash: row.bytes)
        case 1:
            guard let bytes = row.bytes, let commitID = row.id, let author = row.author, batch != nil else {
                throw SyncServerError(.server, "malformed head row")
            }
            batch?.heads.append(ServerHead(seq: row.seq, commitID: commitID, author: DeviceID(author), bytes: bytes))
        default:
            guard let blob = row.bytes, let keyID = row.id, let tombstone = row.tombstone,
                let recordID = row.recordID.flatMap(RecordID.init), batch != nil
            else { throw SyncServerError(.server, "malformed record row") }
            batch?.records.append(
                ServerRecord(recordID: recordID, seq: row.seq, keyID: keyID, tombstone: tombstone, blob: blob))
        }
    }

    public func zoneState(_ zone: ZoneID) async throws -> ZoneState {
        try await transaction("ISOLATION LEVEL REPEATABLE READ READ ONLY") { [self] connection -> ZoneState? in
            let rows = try await connection.query(
                "SELECT head_seq, notify_channel FROM keychain_sync.zones WHERE zone_id = \(zone.uuid)", logger: logger)
            var found: (Int64, String)?
            for try await row in rows.decode((Int64, String).self) { found = row }
            guard let (headSeq, channel) = found else { throw SyncServerError(.notFound, "no such zone") }
            return ZoneState(
                headSeq: headSeq, notifyChannel: channel,
                roster: try await latest("rosters", zone, on: connection), keys: try await keys(zone, on: connection),
                escrow: try await latest("escrow", zone, on: connection))
        }!
    }

    public func shares(_ zone: ZoneID, for device: DeviceID) async throws -> [ServerShare] {
        try await withConnection { [self] connection in
            let rows = try await connection.query(
                """
                SELECT epoch, blob FROM keychain_sync.shares
                WHERE zone_id = \(zone.uuid) AND recipient = \(device.uuid) ORDER BY epoch
                """, logger: logger)
            var shares: [ServerShare] = []
            for try await (epoch, blob) in rows.decode((Int64, Data).self) {
                shares.append(ServerShare(epoch: epoch, recipient: device, blob: blob))
            }
            return shares
        }
    }

    /// A turn is a transaction holding the zone's advisory lock on a connection of its own,
    /// released with the transaction, or by the server when the connection drops or stays idle
    /// for a minute. A commit made out of turn takes the same lock, shared, for its own
    /// statement, so it fails while a device holds the turn, and its device queues too; two
    /// commits out of turn do not fail each other through the lock, so the loser of their race
    /// waits for the winner's row and sees the head it moved. A device that waits 10 s for a
    /// turn runs `body` without one.
    public func withPushTurn<T: Sendable>(_ zone: ZoneID, _ body: () async throws -> T) async throws -> T {
        guard pool.maximum > 1 else { return try await body() }  // body needs a connection too
        let connection: ConnectionPool.Lease
        do { connection = try await pool.lease() } catch { throw SyncServerError(postgres: error) }
        do {
            try await connection.run { [logger] connection in
                try await connection.run("BEGIN", logger: logger)
                try await connection.run(
                    """
                    SELECT set_config('lock_timeout', '10s', true),
                           set_config('idle_in_transaction_session_timeout', '60s', true),
                           pg_advisory_xact_lock(\(Self.turnLockKey(zone)))
                    """, logger: logger)
            }
        } catch {
            await pool.release(connection, reusable: false)
            if let error = error as? PSQLError, error.serverInfo?[.sqlState] == "55P03" { return try await body() }
            throw SyncServerError(postgres: error)
        }
        let result: T
        do {
            result = try await Self.$holdsTurn.withValue(true) { try await body() }
        } catch {
            await pool.release(connection, reusable: false)
            throw error
        }
        do {
            try await connection.run { [logger] in try await $0.run("ROLLBACK", logger: logger) }
            await pool.release(connection, reusable: true)
        } catch {
            await pool.release(connection, reusable: false)
        }
        return result
    }

    /// Whether this task runs in a push turn: its commits do not yield to a turn.
    @TaskLocal static var holdsTurn = false

    /// The advisory lock key of a zone's write turn: 64 bits of a hash of its id (a collision
    /// only makes two zones take turns together).
    static func turnLockKey(_ zone: ZoneID) -> Int64 {
        var hasher = SHA256()
        hasher.update(data: Data("kcsync-push-turn".utf8))
        withUnsafeBytes(of: zone.uuid.uuid) { hasher.update(bufferPointer: $0) }
        return Array(hasher.finalize()).prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    public func acknowledge(_ zone: ZoneID, seq: Int64) async throws -> Int {
        try await withConnection { [self] connection in
            let rows = try await connection.query(
                "SELECT keychain_sync.kc_acknowledge(\(zone.uuid), \(seq))", logger: logger)
            var purged: Int64 = 0
            for try await value in rows.decode(Int64.self) { purged = value }
            return Int(purged)
        }
    }

    public func recordIndex(_ zone: ZoneID) async throws -> [RecordID: Int64] {
        try await withConnection { [self] connection in
            let rows = try await connection.query(
                "SELECT record_id, seq FROM keychain_sync.records WHERE zone_id = \(zone.uuid)", logger: logger)
            var index: [RecordID: Int64] = [:]
            for try await (id, seq) in rows.decode((Data, Int64).self) {
                guard let recordID = RecordID(id) else { throw SyncServerError(.server, "malformed record id") }
                index[recordID] = seq
            }
            return index
        }
    }
}

// MARK: - Push and pull statements

extension PostgresSyncServer {
    /// The checks the server would make anyway, made before a round trip.
    static func check(_ commit: Commit) throws {
        guard commit.expectedSeq >= 0, commit.head.seq == commit.expectedSeq + 1 else {
            throw SyncServerError(.invalidArgument, "a commit's head seq is its expected seq + 1")
        }
        guard Set(commit.records.map(\.recordID)).count == commit.records.count else {
            throw SyncServerError(.invalidArgument, "a commit writes each record once")
        }
    }

    /// SHA-256 of the signed head's bytes (`zones.head_hash`).
    static func headHash(_ commit: Commit) -> Data {
        Data(SHA256.hash(data: commit.head.bytes))
    }

    /// Lands a commit in one statement: the compare-and-swap of the zone's head from
    /// `expectedSeq` to `expectedSeq + 1` and, only when it matched, everything the commit
    /// writes, then the notification of the zone's channel (sent when the statement commits).
    /// - Returns: Whether the head moved (`false`: another commit came first, or this one did).
    func land(_ commit: Commit, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.execute(LandStatement(commit: commit, inTurn: Self.holdsTurn), logger: logger)
        var landed = false
        for try await _ in rows { landed = true }
        return landed
    }

    /// Why a compare-and-swap failed: this commit is already in, or the head moved.
    func outcomeOfLostRace(_ commit: Commit) async throws -> PushOutcome {
        try await withConnection { [self] connection in
            let rows = try await connection.query(
                """
                SELECT count(*) FROM keychain_sync.commits
                WHERE zone_id = \(commit.zone.uuid) AND commit_id = \(commit.head.commitID)
                """, logger: logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            if count > 0 { return .alreadyCommitted }
            guard let head = try await headSeq(commit.zone, on: connection) else {
                throw SyncServerError(.notFound, "no such zone")
            }
            return .staleHead(currentSeq: head)
        }
    }

    func headSeq(_ zone: ZoneID, on connection: PostgresConnection) async throws -> Int64? {
        let rows = try await connection.query(
            "SELECT head_seq FROM keychain_sync.zones WHERE zone_id = \(zone.uuid)", logger: logger)
        var head: Int64?
        for try await value in rows.decode(Int64.self) { head = value }
        return head
    }

    func keys(_ zone: ZoneID, on connection: PostgresConnection) async throws -> [ServerKey] {
        let rows = try await connection.query(
            """
            SELECT key_id, epoch, wrapped FROM keychain_sync.keys WHERE zone_id = \(zone.uuid) ORDER BY epoch, key_id
            """, logger: logger)
        var keys: [ServerKey] = []
        for try await (keyID, epoch, wrapped) in rows.decode((UUID, Int64, Data).self) {
            keys.append(ServerKey(keyID: keyID, epoch: epoch, wrapped: wrapped))
        }
        return keys
    }

    /// The highest epoch's blob of `rosters` or `escrow`.
    func latest(_ table: String, _ zone: ZoneID, on connection: PostgresConnection) async throws -> (
        epoch: Int64, blob: Data
    )? {
        let rows = try await connection.query(
            """
            SELECT epoch, blob FROM keychain_sync.\(unescaped: table)
            WHERE zone_id = \(zone.uuid) ORDER BY epoch DESC LIMIT 1
            """, logger: logger)
        var latest: (epoch: Int64, blob: Data)?
        for try await (epoch, blob) in rows.decode((Int64, Data).self) { latest = (epoch, blob) }
        return latest
    }
}

extension Data {
    /// Lowercase hex.
    var hexString: String { map { String(format: "%02x", $0) }.joined() }
}
