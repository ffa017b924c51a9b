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

    /// Leases a connection for `body`; a connection whose use threw is closed, not reused.
    @discardableResult
    func withConnection<T>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        let connection = try await pool.lease()
        do {
            let result = try await body(connection)
            await pool.release(connection, reusable: true)
            return result
        } catch {
            await pool.release(connection, reusable: false)
            throw SyncServerError(postgres: error)
        }
    }

    /// Runs `body` in one transaction: committed when it returns a value, rolled back when it
    /// returns `nil` or throws.
    func transaction<T>(
        _ mode: String, _ body: (PostgresConnection) async throws -> T?
    ) async throws -> T? {
        try await withConnection { connection in
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
        _ = try await transaction("ISOLATION LEVEL READ COMMITTED") { connection -> Bool? in
            try await connection.run(
                """
                INSERT INTO keychain_sync.zones (zone_id, account_id, head_seq, head_hash, notify_channel)
                VALUES (\(commit.zone.uuid), keychain_sync.kc_current_account(), 1,
                        \(ByteBuffer(bytes: Self.headHash(commit))), \(notifyChannel))
                """, logger: logger)
            try await write(commit, seq: 1, channel: notifyChannel, on: connection)
            return true
        }
    }

    public func push(_ commit: Commit) async throws -> PushOutcome {
        try Self.check(commit)
        do {
            let committed = try await transaction("ISOLATION LEVEL READ COMMITTED") { connection -> Bool? in
                guard let channel = try await advanceHead(commit, on: connection) else { return nil }
                try await write(commit, seq: commit.expectedSeq + 1, channel: channel, on: connection)
                return true
            }
            if committed != nil { return .committed }
        } catch let error as SyncServerError where error.code == .serializationFailure {
            // At READ COMMITTED the loser waits and sees 0 rows; a stricter level raises 40001.
        }
        return try await outcomeOfLostRace(commit)
    }

    public func pull(_ zone: ZoneID, after seq: Int64) async throws -> PullBatch {
        try await transaction("ISOLATION LEVEL REPEATABLE READ READ ONLY") { connection -> PullBatch? in
            let rows = try await connection.query(
                "SELECT head_seq, head_hash FROM keychain_sync.zones WHERE zone_id = \(zone.uuid)", logger: logger)
            var found: (Int64, Data?)?
            for try await row in rows.decode((Int64, Data?).self) { found = row }
            guard let (head, headHash) = found else { throw SyncServerError(.notFound, "no such zone") }
            let heads = try await heads(zone, after: seq, on: connection)
            let records = try await records(zone, after: seq, on: connection)
            return PullBatch(headSeq: head, heads: heads, records: records, headHash: headHash)
        }!
    }

    public func zoneState(_ zone: ZoneID) async throws -> ZoneState {
        try await transaction("ISOLATION LEVEL REPEATABLE READ READ ONLY") { connection -> ZoneState? in
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
        try await withConnection { connection in
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

    public func acknowledge(_ zone: ZoneID, seq: Int64) async throws -> Int {
        try await withConnection { connection in
            let rows = try await connection.query(
                "SELECT keychain_sync.kc_acknowledge(\(zone.uuid), \(seq))", logger: logger)
            var purged: Int64 = 0
            for try await value in rows.decode(Int64.self) { purged = value }
            return Int(purged)
        }
    }

    public func recordIndex(_ zone: ZoneID) async throws -> [RecordID: Int64] {
        try await withConnection { connection in
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

    /// The compare-and-swap: the zone's notify channel when the head moved to `expectedSeq + 1`.
    func advanceHead(_ commit: Commit, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query(
            """
            UPDATE keychain_sync.zones SET head_seq = head_seq + 1, head_hash = \(ByteBuffer(bytes: Self.headHash(commit)))
            WHERE zone_id = \(commit.zone.uuid) AND head_seq = \(commit.expectedSeq)
            RETURNING notify_channel
            """, logger: logger)
        var channel: String?
        for try await value in rows.decode(String.self) { channel = value }
        return channel
    }

    /// Why a compare-and-swap failed: this commit is already in, or the head moved.
    func outcomeOfLostRace(_ commit: Commit) async throws -> PushOutcome {
        try await withConnection { connection in
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

    /// Everything a commit writes once its head is won, then the notification.
    func write(_ commit: Commit, seq: Int64, channel: String, on connection: PostgresConnection) async throws {
        try await insertKeys(commit, on: connection)
        try await insertRoster(commit, on: connection)
        try await upsertShares(commit, on: connection)
        try await upsertEscrow(commit, on: connection)
        try await upsertRecords(commit, seq: seq, on: connection)
        let head = commit.head
        try await connection.run(
            """
            INSERT INTO keychain_sync.commits (zone_id, seq, commit_id, author, head)
            VALUES (\(commit.zone.uuid), \(seq), \(head.commitID), \(head.author.uuid), \(ByteBuffer(bytes: head.bytes)))
            """, logger: logger)
        try await connection.run("SELECT pg_notify(\(channel), \(String(seq)))", logger: logger)
    }

    func insertKeys(_ commit: Commit, on connection: PostgresConnection) async throws {
        guard !commit.keys.isEmpty else { return }
        try await connection.run(
            """
            INSERT INTO keychain_sync.keys (zone_id, key_id, epoch, wrapped)
            SELECT \(commit.zone.uuid), k.key_id, k.epoch, k.wrapped
            FROM unnest(\(commit.keys.map(\.keyID))::uuid[], \(commit.keys.map(\.epoch))::int8[],
                        \(commit.keys.map { ByteBuffer(bytes: $0.wrapped) })::bytea[]) AS k(key_id, epoch, wrapped)
            """, logger: logger)
    }

    func insertRoster(_ commit: Commit, on connection: PostgresConnection) async throws {
        guard let roster = commit.roster else { return }
        try await connection.run(
            """
            INSERT INTO keychain_sync.rosters (zone_id, epoch, blob)
            VALUES (\(commit.zone.uuid), \(roster.epoch), \(ByteBuffer(bytes: roster.blob)))
            """, logger: logger)
    }

    func upsertShares(_ commit: Commit, on connection: PostgresConnection) async throws {
        guard !commit.shares.isEmpty else { return }
        try await connection.run(
            """
            INSERT INTO keychain_sync.shares (zone_id, epoch, recipient, blob)
            SELECT \(commit.zone.uuid), s.epoch, s.recipient, s.blob
            FROM unnest(\(commit.shares.map(\.epoch))::int8[], \(commit.shares.map(\.recipient.uuid))::uuid[],
                        \(commit.shares.map { ByteBuffer(bytes: $0.blob) })::bytea[]) AS s(epoch, recipient, blob)
            ON CONFLICT (zone_id, epoch, recipient) DO UPDATE SET blob = excluded.blob
            """, logger: logger)
    }

    func upsertEscrow(_ commit: Commit, on connection: PostgresConnection) async throws {
        guard let escrow = commit.escrow else { return }
        try await connection.run(
            """
            INSERT INTO keychain_sync.escrow (zone_id, epoch, blob)
            VALUES (\(commit.zone.uuid), \(escrow.epoch), \(ByteBuffer(bytes: escrow.blob)))
            ON CONFLICT (zone_id, epoch) DO UPDATE SET blob = excluded.blob
            """, logger: logger)
    }

    func upsertRecords(_ commit: Commit, seq: Int64, on connection: PostgresConnection) async throws {
        guard !commit.records.isEmpty else { return }
        let records = commit.records
        try await connection.run(
            """
            INSERT INTO keychain_sync.records (zone_id, record_id, seq, key_id, tombstone, blob)
            SELECT \(commit.zone.uuid), r.record_id, \(seq), r.key_id, r.tombstone, r.blob
            FROM unnest(\(records.map { ByteBuffer(bytes: $0.recordID.bytes) })::bytea[],
                        \(records.map(\.keyID))::uuid[], \(records.map(\.tombstone))::bool[],
                        \(records.map { ByteBuffer(bytes: $0.blob) })::bytea[]) AS r(record_id, key_id, tombstone, blob)
            ON CONFLICT (zone_id, record_id) DO UPDATE
            SET seq = excluded.seq, key_id = excluded.key_id, tombstone = excluded.tombstone, blob = excluded.blob,
                written_at = now()
            """, logger: logger)
    }

    func headSeq(_ zone: ZoneID, on connection: PostgresConnection) async throws -> Int64? {
        let rows = try await connection.query(
            "SELECT head_seq FROM keychain_sync.zones WHERE zone_id = \(zone.uuid)", logger: logger)
        var head: Int64?
        for try await value in rows.decode(Int64.self) { head = value }
        return head
    }

    func heads(_ zone: ZoneID, after seq: Int64, on connection: PostgresConnection) async throws -> [ServerHead] {
        let rows = try await connection.query(
            """
            SELECT seq, commit_id, author, head FROM keychain_sync.commits
            WHERE zone_id = \(zone.uuid) AND seq > \(seq) ORDER BY seq
            """, logger: logger)
        var heads: [ServerHead] = []
        for try await (seq, commitID, author, bytes) in rows.decode((Int64, UUID, UUID, Data).self) {
            heads.append(ServerHead(seq: seq, commitID: commitID, author: DeviceID(author), bytes: bytes))
        }
        return heads
    }

    func records(_ zone: ZoneID, after seq: Int64, on connection: PostgresConnection) async throws -> [ServerRecord] {
        let rows = try await connection.query(
            """
            SELECT record_id, seq, key_id, tombstone, blob FROM keychain_sync.records
            WHERE zone_id = \(zone.uuid) AND seq > \(seq) ORDER BY seq, record_id
            """, logger: logger)
        var records: [ServerRecord] = []
        for try await (id, seq, keyID, tombstone, blob) in rows.decode((Data, Int64, UUID, Bool, Data).self) {
            guard let recordID = RecordID(id) else { throw SyncServerError(.server, "malformed record id") }
            records.append(ServerRecord(recordID: recordID, seq: seq, keyID: keyID, tombstone: tombstone, blob: blob))
        }
        return records
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
