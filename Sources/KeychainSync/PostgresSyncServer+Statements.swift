import Crypto
import Foundation
import PostgresNIO

// The two statements every sync round runs, prepared once per connection (postgres-nio names
// them and binds values on later calls): planning them anew each time was about 40% of the
// server's CPU per commit, row-level policies included.

extension PostgresSyncServer {
    /// A pull: the zone's head (kind 0, always first), the heads after `seq` (kind 1) and the
    /// records after `seq` (kind 2), in one statement and therefore one snapshot.
    struct PullStatement: PostgresPreparedStatement {
        typealias Row = (
            kind: Int64, seq: Int64, bytes: Data?, id: UUID?, author: UUID?, recordID: Data?, tombstone: Bool?
        )

        static let sql = """
            SELECT 0::int8, z.head_seq, z.head_hash, NULL::uuid, NULL::uuid, NULL::bytea, NULL::bool
                FROM keychain_sync.zones z WHERE z.zone_id = $1
            UNION ALL
            SELECT 1, c.seq, c.head, c.commit_id, c.author, NULL, NULL
                FROM keychain_sync.commits c WHERE c.zone_id = $1 AND c.seq > $2
            UNION ALL
            SELECT 2, r.seq, r.blob, r.key_id, NULL, r.record_id, r.tombstone
                FROM keychain_sync.records r WHERE r.zone_id = $1 AND r.seq > $2
            ORDER BY 1, 2, 6
            """

        var zone: UUID
        var after: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(zone)
            bindings.append(after)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode((Int64, Int64, Data?, UUID?, UUID?, Data?, Bool?).self)
        }
    }

    /// A commit: the compare-and-swap of the zone's head from `$2` to `$2 + 1` and, only when it
    /// matched (every insert reads `moved`), the keys, roster, shares, escrow, records and head,
    /// then the notification (sent when the statement commits). Out of turn (`$4` false) the
    /// update also takes the zone's turn lock for its own statement, so it fails while another
    /// device holds the turn. One row when the head moved, none otherwise.
    struct LandStatement: PostgresPreparedStatement {
        typealias Row = Int64

        static let sql = """
            WITH moved AS (
                UPDATE keychain_sync.zones SET head_seq = head_seq + 1, head_hash = $3
                WHERE zone_id = $1 AND head_seq = $2 AND ($4 OR pg_try_advisory_xact_lock_shared($5))
                RETURNING notify_channel
            ), new_keys AS (
                INSERT INTO keychain_sync.keys (zone_id, key_id, epoch, wrapped)
                SELECT $1, k.key_id, k.epoch, k.wrapped
                FROM moved, unnest($6::uuid[], $7::int8[], $8::bytea[]) AS k(key_id, epoch, wrapped)
            ), new_roster AS (
                INSERT INTO keychain_sync.rosters (zone_id, epoch, blob)
                SELECT $1, r.epoch, r.blob FROM moved, unnest($9::int8[], $10::bytea[]) AS r(epoch, blob)
            ), new_shares AS (
                INSERT INTO keychain_sync.shares (zone_id, epoch, recipient, blob)
                SELECT $1, s.epoch, s.recipient, s.blob
                FROM moved, unnest($11::int8[], $12::uuid[], $13::bytea[]) AS s(epoch, recipient, blob)
                ON CONFLICT (zone_id, epoch, recipient) DO UPDATE SET blob = excluded.blob
            ), new_escrow AS (
                INSERT INTO keychain_sync.escrow (zone_id, epoch, blob)
                SELECT $1, e.epoch, e.blob FROM moved, unnest($14::int8[], $15::bytea[]) AS e(epoch, blob)
                ON CONFLICT (zone_id, epoch) DO UPDATE SET blob = excluded.blob
            ), new_records AS (
                INSERT INTO keychain_sync.records (zone_id, record_id, seq, key_id, tombstone, blob)
                SELECT $1, r.record_id, $2 + 1, r.key_id, r.tombstone, r.blob
                FROM moved, unnest($16::bytea[], $17::uuid[], $18::bool[], $19::bytea[])
                    AS r(record_id, key_id, tombstone, blob)
                ON CONFLICT (zone_id, record_id) DO UPDATE
                SET seq = excluded.seq, key_id = excluded.key_id, tombstone = excluded.tombstone,
                    blob = excluded.blob, written_at = now()
            ), new_commit AS (
                INSERT INTO keychain_sync.commits (zone_id, seq, commit_id, author, head)
                SELECT $1, $2 + 1, $20, $21, $22 FROM moved
            )
            SELECT 1::int8 FROM moved, pg_notify(moved.notify_channel, ($2 + 1)::text)
            """

        var commit: Commit
        var inTurn: Bool

        func makeBindings() throws -> PostgresBindings {
            let commit = self.commit
            var bindings = PostgresBindings(capacity: 22)
            bindings.append(commit.zone.uuid)
            bindings.append(commit.expectedSeq)
            bindings.append(ByteBuffer(bytes: PostgresSyncServer.headHash(commit)))
            bindings.append(inTurn)
            bindings.append(PostgresSyncServer.turnLockKey(commit.zone))
            bindings.append(commit.keys.map(\.keyID))
            bindings.append(commit.keys.map(\.epoch))
            bindings.append(commit.keys.map { ByteBuffer(bytes: $0.wrapped) })
            bindings.append(commit.roster.map { [$0.epoch] } ?? [])
            bindings.append(commit.roster.map { [ByteBuffer(bytes: $0.blob)] } ?? [])
            bindings.append(commit.shares.map(\.epoch))
            bindings.append(commit.shares.map(\.recipient.uuid))
            bindings.append(commit.shares.map { ByteBuffer(bytes: $0.blob) })
            bindings.append(commit.escrow.map { [$0.epoch] } ?? [])
            bindings.append(commit.escrow.map { [ByteBuffer(bytes: $0.blob)] } ?? [])
            bindings.append(commit.records.map { ByteBuffer(bytes: $0.recordID.bytes) })
            bindings.append(commit.records.map(\.keyID))
            bindings.append(commit.records.map(\.tombstone))
            bindings.append(commit.records.map { ByteBuffer(bytes: $0.blob) })
            bindings.append(commit.head.commitID)
            bindings.append(commit.head.author.uuid)
            bindings.append(ByteBuffer(bytes: commit.head.bytes))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }
}
