import Foundation
import Logging
import PostgresNIO

/// The shared store's PostgreSQL schema: versioned migrations, applied by a superuser.
///
/// Everything lives in the schema ``name`` (`keychain_sync`) and every statement the transport
/// sends names its tables schema-qualified (`keychain_sync.records`), so a login's
/// `search_path` never changes what a query reads.
///
/// Roles (cluster-wide, created by the first migration when missing):
/// - `kc_owner` (NOLOGIN) owns the schema and every table. Every table has
///   `FORCE ROW LEVEL SECURITY` and `kc_owner` has no policy, so it reads nothing either.
/// - `kc_admin` (NOLOGIN, `CREATEROLE`, member of `pg_signal_backend`) owns the
///   `SECURITY DEFINER` functions; in PostgreSQL 15 `CREATEROLE` is close to superuser, so no
///   login ever holds it.
/// - `kc_device` (NOLOGIN): the group of device logins (`kc_dev_…`, one per device). Its
///   policies show a login only its own account's rows.
/// - `kc_invitee` (NOLOGIN): the group of invitation logins (`kc_inv_…`): `EXECUTE` on
///   `kc_join` and nothing else.
///
/// Row-level security is defence in depth: confidentiality rests on the end-to-end encryption.
public enum ServerSchema {
    /// The schema every table and function lives in.
    public static let name = "keychain_sync"

    /// The highest migration version this build knows.
    public static var latestVersion: Int { migrations.count }

    /// The largest sealed record the server accepts, in bytes (a `CHECK` on `records.blob`).
    public static let maximumBlobSize = 262_144

    /// Applies the migrations the database lacks, in one transaction, and returns the version
    /// it is at afterwards. Running it again is a no-op; concurrent runs serialise on an
    /// advisory lock.
    ///
    /// - Parameter connection: a superuser connection (the migrations create roles).
    @discardableResult
    public static func migrate(using connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await migrate(using: connection, upTo: latestVersion, logger: logger)
    }

    /// ``migrate(using:logger:)`` up to `target` at most (tests make a server of an older
    /// version with it).
    @discardableResult
    static func migrate(using connection: PostgresConnection, upTo target: Int, logger: Logger) async throws -> Int {
        try await connection.run("BEGIN", logger: logger)
        do {
            let version = try await applyMissing(on: connection, upTo: target, logger: logger)
            try await connection.run("COMMIT", logger: logger)
            return version
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw SyncServerError(postgres: error)
        }
    }

    /// The version a database is at, 0 when it has no keychain schema at all (where
    /// ``currentVersion(using:logger:)`` fails: its table is missing).
    static func currentVersion(orZeroWithoutSchemaUsing connection: PostgresConnection, logger: Logger) async throws
        -> Int
    {
        let rows = try await connection.query(
            "SELECT to_regclass('keychain_sync.kc_schema_version') IS NOT NULL", logger: logger)
        for try await exists in rows.decode(Bool.self) where !exists { return 0 }
        return try await currentVersion(using: connection, logger: logger)
    }

    /// The version a database is at (0 when the schema is absent).
    public static func currentVersion(using connection: PostgresConnection, logger: Logger) async throws -> Int {
        let rows = try await connection.query(
            "SELECT coalesce(max(version), 0)::int8 FROM keychain_sync.kc_schema_version", logger: logger)
        for try await version in rows.decode(Int64.self) { return Int(version) }
        return 0
    }

    private static func applyMissing(
        on connection: PostgresConnection, upTo target: Int, logger: Logger
    ) async throws -> Int {
        try await connection.run("SELECT pg_advisory_xact_lock(7344871250129)", logger: logger)
        for statement in preamble { try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger) }
        var version = try await currentVersion(using: connection, logger: logger)
        while version < min(target, migrations.count) {
            for statement in migrations[version] {
                try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            version += 1
            try await connection.run(
                "INSERT INTO keychain_sync.kc_schema_version (version) VALUES (\(Int64(version)))", logger: logger)
            logger.info("keychain_sync schema migrated", metadata: ["version": "\(version)"])
        }
        return version
    }

    /// Run before the versioned migrations: the schema and the version table.
    static let preamble: [String] = [
        "CREATE SCHEMA IF NOT EXISTS keychain_sync",
        "REVOKE ALL ON SCHEMA keychain_sync FROM PUBLIC",
        """
        CREATE TABLE IF NOT EXISTS keychain_sync.kc_schema_version (
            version integer PRIMARY KEY,
            applied_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        "REVOKE ALL ON keychain_sync.kc_schema_version FROM PUBLIC",
    ]

    /// The migrations, in order; migration `i` (0-based) takes the database to version `i + 1`.
    /// Each is a list of single statements (the extended query protocol runs one at a time).
    static let migrations: [[String]] = [
        roles + tables + ownership + functions + grants + policies,
        garbageCollection,
        plannedAccountLookup,
    ]

    // MARK: Version 1

    static let roles: [String] = [
        """
        DO $roles$
        DECLARE
            r text;
        BEGIN
            FOREACH r IN ARRAY ARRAY['kc_owner', 'kc_admin', 'kc_device', 'kc_invitee'] LOOP
                IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = r) THEN
                    EXECUTE format('CREATE ROLE %I NOLOGIN', r);
                END IF;
            END LOOP;
        END
        $roles$
        """,
        "ALTER ROLE kc_admin NOLOGIN CREATEROLE",
        "GRANT pg_signal_backend TO kc_admin",
        "ALTER SCHEMA keychain_sync OWNER TO kc_owner",
        "GRANT USAGE ON SCHEMA keychain_sync TO kc_admin, kc_device, kc_invitee",
    ]

    /// Every data table, in creation order (each has RLS forced and `kc_owner` as owner).
    static let tableNames = [
        "accounts", "devices", "zones", "keys", "records", "commits", "rosters", "shares", "escrow",
        "invitations", "join_requests",
    ]

    static let tables: [String] = [
        """
        CREATE TABLE keychain_sync.accounts (
            account_id uuid PRIMARY KEY,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        """
        CREATE TABLE keychain_sync.devices (
            device_id uuid PRIMARY KEY,
            account_id uuid NOT NULL REFERENCES keychain_sync.accounts,
            role_name name NOT NULL UNIQUE,
            revoked boolean NOT NULL DEFAULT false,
            enrolled_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        "CREATE INDEX devices_account ON keychain_sync.devices (account_id)",
        """
        CREATE TABLE keychain_sync.zones (
            zone_id uuid PRIMARY KEY,
            account_id uuid NOT NULL REFERENCES keychain_sync.accounts,
            head_seq bigint NOT NULL CHECK (head_seq >= 0),
            head_hash bytea CHECK (octet_length(head_hash) = 32),
            notify_channel text NOT NULL UNIQUE CHECK (notify_channel ~ '^[a-z][0-9a-f]{32}$')
        )
        """,
        "CREATE INDEX zones_account ON keychain_sync.zones (account_id)",
        """
        CREATE TABLE keychain_sync.keys (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            key_id uuid NOT NULL,
            epoch bigint NOT NULL,
            wrapped bytea NOT NULL CHECK (octet_length(wrapped) <= 4096),
            PRIMARY KEY (zone_id, key_id)
        )
        """,
        """
        CREATE TABLE keychain_sync.records (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            record_id bytea NOT NULL CHECK (octet_length(record_id) = 16),
            seq bigint NOT NULL CHECK (seq > 0),
            key_id uuid NOT NULL,
            tombstone boolean NOT NULL,
            blob bytea NOT NULL CHECK (octet_length(blob) <= \(maximumBlobSize)),
            PRIMARY KEY (zone_id, record_id),
            FOREIGN KEY (zone_id, key_id) REFERENCES keychain_sync.keys (zone_id, key_id)
        )
        """,
        "CREATE INDEX records_zone_seq ON keychain_sync.records (zone_id, seq)",
        """
        CREATE TABLE keychain_sync.commits (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            seq bigint NOT NULL CHECK (seq > 0),
            commit_id uuid NOT NULL UNIQUE,
            author uuid NOT NULL,
            head bytea NOT NULL CHECK (octet_length(head) <= 65536),
            committed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (zone_id, seq)
        )
        """,
        """
        CREATE TABLE keychain_sync.rosters (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            epoch bigint NOT NULL,
            blob bytea NOT NULL CHECK (octet_length(blob) <= 1048576),
            PRIMARY KEY (zone_id, epoch)
        )
        """,
        """
        CREATE TABLE keychain_sync.shares (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            epoch bigint NOT NULL,
            recipient uuid NOT NULL,
            blob bytea NOT NULL CHECK (octet_length(blob) <= 65536),
            PRIMARY KEY (zone_id, epoch, recipient)
        )
        """,
        """
        CREATE TABLE keychain_sync.escrow (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            epoch bigint NOT NULL,
            blob bytea NOT NULL CHECK (octet_length(blob) <= 65536),
            PRIMARY KEY (zone_id, epoch)
        )
        """,
        """
        CREATE TABLE keychain_sync.invitations (
            token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            sponsor uuid NOT NULL REFERENCES keychain_sync.devices,
            role_name name NOT NULL UNIQUE,
            expires_at timestamptz NOT NULL,
            used boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        """
        CREATE TABLE keychain_sync.join_requests (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            device uuid NOT NULL,
            blob bytea NOT NULL CHECK (octet_length(blob) <= 65536),
            posted_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (zone_id, device)
        )
        """,
    ]

    static let ownership: [String] = tableNames.flatMap { table in
        [
            "ALTER TABLE keychain_sync.\(table) OWNER TO kc_owner",
            "ALTER TABLE keychain_sync.\(table) ENABLE ROW LEVEL SECURITY",
            "ALTER TABLE keychain_sync.\(table) FORCE ROW LEVEL SECURITY",
            "REVOKE ALL ON keychain_sync.\(table) FROM PUBLIC",
        ]
    }

    /// The functions' signatures, for `ALTER FUNCTION`, `REVOKE` and `GRANT`.
    static let functionSignatures = [
        "kc_current_account()",
        "kc_check_login(name, text, text)",
        "kc_bootstrap_account(uuid, uuid, name, text)",
        "kc_invite(uuid, bytea, name, text, timestamptz)",
        "kc_join(bytea, uuid, name, text, bytea)",
        "kc_revoke(uuid)",
    ]

    static let functions: [String] = [
        // The account of the session's login (NULL for a revoked or unknown login). Policies
        // call it; it reads `devices` as kc_admin.
        """
        CREATE FUNCTION keychain_sync.kc_current_account() RETURNS uuid
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
            SELECT d.account_id FROM keychain_sync.devices d WHERE d.role_name = session_user AND NOT d.revoked
        $fn$
        """,
        // Refuses a login name outside its prefix, an existing role, or anything but a SCRAM
        // verifier (so a plaintext password is never stored or logged by CREATE ROLE).
        """
        CREATE FUNCTION keychain_sync.kc_check_login(p_role name, p_verifier text, p_prefix text) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        BEGIN
            IF p_role IS NULL OR p_role !~ ('^' || p_prefix || '[0-9a-z_]{1,48}$') THEN
                RAISE EXCEPTION 'login name must be % followed by 1 to 48 of [0-9a-z_]', p_prefix
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF p_verifier IS NULL
                OR p_verifier !~ '^SCRAM-SHA-256\\$[0-9]{1,7}:[A-Za-z0-9+/=]{4,64}\\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$' THEN
                RAISE EXCEPTION 'a SCRAM-SHA-256 verifier is required' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            IF EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = p_role) THEN
                RAISE EXCEPTION 'login name already in use' USING ERRCODE = 'duplicate_object';
            END IF;
        END
        $fn$
        """,
        // `sync init`, run with the administrator's URL: the account and its first device.
        """
        CREATE FUNCTION keychain_sync.kc_bootstrap_account(p_account uuid, p_device uuid, p_role name, p_verifier text)
        RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        BEGIN
            PERFORM keychain_sync.kc_check_login(p_role, p_verifier, 'kc_dev_');
            INSERT INTO keychain_sync.accounts (account_id) VALUES (p_account);
            EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE kc_device', p_role, p_verifier);
            INSERT INTO keychain_sync.devices (device_id, account_id, role_name) VALUES (p_device, p_account, p_role);
        END
        $fn$
        """,
        // A device invites another into one of its account's zones: the invitation row and a
        // one-use login that may only call kc_join.
        """
        CREATE FUNCTION keychain_sync.kc_invite(
            p_zone uuid, p_token_hash bytea, p_role name, p_verifier text, p_expires timestamptz
        ) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        DECLARE
            v_account uuid;
            v_device uuid;
        BEGIN
            SELECT d.account_id, d.device_id INTO v_account, v_device
                FROM keychain_sync.devices d WHERE d.role_name = session_user AND NOT d.revoked;
            IF v_account IS NULL THEN
                RAISE EXCEPTION 'not an enrolled device' USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF NOT EXISTS (
                SELECT FROM keychain_sync.zones z WHERE z.zone_id = p_zone AND z.account_id = v_account
            ) THEN
                RAISE EXCEPTION 'no such zone' USING ERRCODE = 'no_data_found';
            END IF;
            IF p_expires IS NULL OR p_expires <= now() OR p_expires > now() + interval '7 days' THEN
                RAISE EXCEPTION 'an invitation expires within 7 days' USING ERRCODE = 'invalid_parameter_value';
            END IF;
            PERFORM keychain_sync.kc_check_login(p_role, p_verifier, 'kc_inv_');
            INSERT INTO keychain_sync.invitations (token_hash, zone_id, sponsor, role_name, expires_at)
                VALUES (p_token_hash, p_zone, v_device, p_role, p_expires);
            EXECUTE format(
                'CREATE ROLE %I LOGIN PASSWORD %L VALID UNTIL %L CONNECTION LIMIT 1 IN ROLE kc_invitee',
                p_role, p_verifier, p_expires::text);
        END
        $fn$
        """,
        // Called by an invitation login: checks sha256(token), use and expiry; creates the new
        // device's login, posts its join request, and retires the invitation and its login.
        """
        CREATE FUNCTION keychain_sync.kc_join(
            p_token bytea, p_device uuid, p_role name, p_verifier text, p_request bytea
        ) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        DECLARE
            v_invitation keychain_sync.invitations%ROWTYPE;
            v_account uuid;
        BEGIN
            SELECT * INTO v_invitation FROM keychain_sync.invitations i WHERE i.role_name = session_user FOR UPDATE;
            IF NOT FOUND OR p_token IS NULL OR v_invitation.token_hash <> sha256(p_token) THEN
                RAISE EXCEPTION 'no such invitation' USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF v_invitation.used THEN
                RAISE EXCEPTION 'invitation already used' USING ERRCODE = 'insufficient_privilege';
            END IF;
            IF v_invitation.expires_at <= now() THEN
                RAISE EXCEPTION 'invitation expired' USING ERRCODE = 'insufficient_privilege';
            END IF;
            PERFORM keychain_sync.kc_check_login(p_role, p_verifier, 'kc_dev_');
            SELECT z.account_id INTO v_account FROM keychain_sync.zones z WHERE z.zone_id = v_invitation.zone_id;
            EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE kc_device', p_role, p_verifier);
            INSERT INTO keychain_sync.devices (device_id, account_id, role_name) VALUES (p_device, v_account, p_role);
            INSERT INTO keychain_sync.join_requests (zone_id, device, blob)
                VALUES (v_invitation.zone_id, p_device, p_request);
            UPDATE keychain_sync.invitations SET used = true WHERE token_hash = v_invitation.token_hash;
            EXECUTE format('ALTER ROLE %I NOLOGIN', v_invitation.role_name);
        END
        $fn$
        """,
        // A device removes a device of its account: no more logins, no open sessions.
        """
        CREATE FUNCTION keychain_sync.kc_revoke(p_device uuid) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        DECLARE
            v_account uuid := keychain_sync.kc_current_account();
            v_role name;
        BEGIN
            IF v_account IS NULL THEN
                RAISE EXCEPTION 'not an enrolled device' USING ERRCODE = 'insufficient_privilege';
            END IF;
            SELECT d.role_name INTO v_role FROM keychain_sync.devices d
                WHERE d.device_id = p_device AND d.account_id = v_account;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'no such device' USING ERRCODE = 'no_data_found';
            END IF;
            UPDATE keychain_sync.devices SET revoked = true WHERE device_id = p_device;
            EXECUTE format('ALTER ROLE %I NOLOGIN', v_role);
            PERFORM pg_terminate_backend(a.pid) FROM pg_catalog.pg_stat_activity a
                WHERE a.usename = v_role AND a.pid <> pg_backend_pid();
        END
        $fn$
        """,
    ]

    static let grants: [String] =
        functionSignatures.flatMap { signature in
            [
                "ALTER FUNCTION keychain_sync.\(signature) OWNER TO kc_admin",
                "REVOKE EXECUTE ON FUNCTION keychain_sync.\(signature) FROM PUBLIC",
            ]
        } + [
            "GRANT EXECUTE ON FUNCTION keychain_sync.kc_current_account() TO kc_device",
            "GRANT EXECUTE ON FUNCTION keychain_sync.kc_invite(uuid, bytea, name, text, timestamptz) TO kc_device",
            "GRANT EXECUTE ON FUNCTION keychain_sync.kc_revoke(uuid) TO kc_device",
            "GRANT EXECUTE ON FUNCTION keychain_sync.kc_join(bytea, uuid, name, text, bytea) TO kc_invitee",
            // What the functions' owner touches.
            "GRANT SELECT, INSERT ON keychain_sync.accounts TO kc_admin",
            "GRANT SELECT, INSERT, UPDATE ON keychain_sync.devices TO kc_admin",
            "GRANT SELECT ON keychain_sync.zones TO kc_admin",
            "GRANT SELECT, INSERT, UPDATE ON keychain_sync.invitations TO kc_admin",
            "GRANT INSERT ON keychain_sync.join_requests TO kc_admin",
            // What a device login touches (rows filtered by the policies below).
            "GRANT SELECT ON keychain_sync.accounts, keychain_sync.devices, keychain_sync.invitations TO kc_device",
            "GRANT SELECT, INSERT ON keychain_sync.zones TO kc_device",
            "GRANT UPDATE (head_seq, head_hash) ON keychain_sync.zones TO kc_device",
            "GRANT SELECT, INSERT ON keychain_sync.keys, keychain_sync.commits, keychain_sync.rosters TO kc_device",
            "GRANT SELECT, INSERT, UPDATE ON keychain_sync.records, keychain_sync.shares, keychain_sync.escrow TO kc_device",
            "GRANT SELECT, DELETE ON keychain_sync.join_requests TO kc_device",
        ]

    /// The tables whose rows belong to a zone (their policy goes through `zones`' policy).
    static let zoneTables = [
        "keys", "records", "commits", "rosters", "shares", "escrow", "invitations", "join_requests",
    ]

    static let policies: [String] =
        ["accounts", "devices", "zones", "invitations", "join_requests"].map { table in
            "CREATE POLICY kc_admin_all ON keychain_sync.\(table) TO kc_admin USING (true) WITH CHECK (true)"
        }
        + ["accounts", "devices", "zones"].map { table in
            """
            CREATE POLICY kc_device_account ON keychain_sync.\(table) TO kc_device
                USING (account_id = keychain_sync.kc_current_account())
                WITH CHECK (account_id = keychain_sync.kc_current_account())
            """
        }
        + zoneTables.map { table in
            """
            CREATE POLICY kc_device_zone ON keychain_sync.\(table) TO kc_device
                USING (zone_id IN (SELECT z.zone_id FROM keychain_sync.zones z))
                WITH CHECK (zone_id IN (SELECT z.zone_id FROM keychain_sync.zones z))
            """
        }
}

// MARK: Version 2: tombstone and head garbage collection (docs/sync.md, "Tombstones and heads on the server")

extension ServerSchema {
    /// The tables added after version 1 (each has RLS forced and `kc_owner` as owner).
    static let laterTableNames = ["cursors"]

    /// Every data table.
    static var allTableNames: [String] { tableNames + laterTableNames }

    /// The default time a tombstone stays on the server (`zones.tombstone_retention`, R in the
    /// design): an operator may change it per zone with SQL.
    public static let defaultTombstoneRetention = "30 days"

    /// Version 2: when each record was last written, each zone's tombstone retention, each
    /// device's acknowledged cursor, the functions that record an acknowledgement and purge
    /// what no active device needs any more, and `kc_add_device` (recovery).
    ///
    /// - A tombstone is purged once it is older than the zone's retention R and at or below the
    ///   acknowledged cursor of every *active* device of the zone's account (not revoked, and
    ///   acknowledged, or enrolled, within R). A device offline longer than R finds deletions
    ///   missing; the signed state digest covers live records only, so it reconciles against
    ///   the list of record ids (``SyncServer/recordIndex(_:)``) and applies them.
    /// - A head (`commits` row) is purged once it is below the acknowledged cursor of *every*
    ///   device of the account that is not revoked, however long offline (a device that never
    ///   acknowledged counts as 0): each device still finds the chain from its last verified
    ///   head. The zone's newest head always stays.
    static let garbageCollection: [String] = [
        "ALTER TABLE keychain_sync.records ADD COLUMN written_at timestamptz NOT NULL DEFAULT now()",
        "CREATE INDEX records_tombstones ON keychain_sync.records (zone_id, written_at) WHERE tombstone",
        """
        ALTER TABLE keychain_sync.zones
            ADD COLUMN tombstone_retention interval NOT NULL DEFAULT interval '\(defaultTombstoneRetention)'
            CHECK (tombstone_retention >= interval '0')
        """,
        """
        CREATE TABLE keychain_sync.cursors (
            zone_id uuid NOT NULL REFERENCES keychain_sync.zones,
            device uuid NOT NULL REFERENCES keychain_sync.devices,
            acked_seq bigint NOT NULL CHECK (acked_seq >= 0),
            acked_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (zone_id, device)
        )
        """,
        "ALTER TABLE keychain_sync.cursors OWNER TO kc_owner",
        "ALTER TABLE keychain_sync.cursors ENABLE ROW LEVEL SECURITY",
        "ALTER TABLE keychain_sync.cursors FORCE ROW LEVEL SECURITY",
        "REVOKE ALL ON keychain_sync.cursors FROM PUBLIC",
        // Purges what no device needs any more; run by kc_acknowledge, or by a superuser (a
        // cron job). Returns how many tombstones went.
        """
        CREATE FUNCTION keychain_sync.kc_collect_garbage(p_zone uuid) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        DECLARE
            v_account uuid;
            v_head bigint;
            v_retention interval;
            v_tombstone_floor bigint;
            v_head_floor bigint;
            v_purged bigint;
        BEGIN
            SELECT z.account_id, z.head_seq, z.tombstone_retention INTO v_account, v_head, v_retention
                FROM keychain_sync.zones z WHERE z.zone_id = p_zone;
            IF NOT FOUND OR (
                v_account IS DISTINCT FROM keychain_sync.kc_current_account()
                AND NOT coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = session_user), false)
            ) THEN
                RAISE EXCEPTION 'no such zone' USING ERRCODE = 'no_data_found';
            END IF;
            -- Active devices: not revoked, and heard from (or enrolled) within the retention.
            SELECT coalesce(min(coalesce(c.acked_seq, 0)), v_head) INTO v_tombstone_floor
                FROM keychain_sync.devices d
                LEFT JOIN keychain_sync.cursors c ON c.zone_id = p_zone AND c.device = d.device_id
                WHERE d.account_id = v_account AND NOT d.revoked
                  AND coalesce(c.acked_at, d.enrolled_at) > now() - v_retention;
            DELETE FROM keychain_sync.records r
                WHERE r.zone_id = p_zone AND r.tombstone AND r.written_at < now() - v_retention
                  AND r.seq <= v_tombstone_floor;
            GET DIAGNOSTICS v_purged = ROW_COUNT;
            -- Heads: every device that is not revoked, however long offline.
            SELECT coalesce(min(coalesce(c.acked_seq, 0)), v_head) INTO v_head_floor
                FROM keychain_sync.devices d
                LEFT JOIN keychain_sync.cursors c ON c.zone_id = p_zone AND c.device = d.device_id
                WHERE d.account_id = v_account AND NOT d.revoked;
            DELETE FROM keychain_sync.commits h
                WHERE h.zone_id = p_zone AND h.seq < least(v_head_floor, v_head);
            RETURN v_purged;
        END
        $fn$
        """,
        // A device records how far it has verified and applied the zone's log, then collects
        // garbage. Returns how many tombstones went.
        """
        CREATE FUNCTION keychain_sync.kc_acknowledge(p_zone uuid, p_seq bigint) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        DECLARE
            v_device uuid;
            v_account uuid;
            v_head bigint;
        BEGIN
            SELECT d.device_id, d.account_id INTO v_device, v_account
                FROM keychain_sync.devices d WHERE d.role_name = session_user AND NOT d.revoked;
            IF v_device IS NULL THEN
                RAISE EXCEPTION 'not an enrolled device' USING ERRCODE = 'insufficient_privilege';
            END IF;
            SELECT z.head_seq INTO v_head FROM keychain_sync.zones z
                WHERE z.zone_id = p_zone AND z.account_id = v_account;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'no such zone' USING ERRCODE = 'no_data_found';
            END IF;
            IF p_seq IS NULL OR p_seq < 0 OR p_seq > v_head THEN
                RAISE EXCEPTION 'an acknowledged sequence number is within the log'
                    USING ERRCODE = 'invalid_parameter_value';
            END IF;
            INSERT INTO keychain_sync.cursors (zone_id, device, acked_seq, acked_at)
                VALUES (p_zone, v_device, p_seq, now())
                ON CONFLICT (zone_id, device) DO UPDATE SET acked_seq = excluded.acked_seq, acked_at = excluded.acked_at;
            RETURN keychain_sync.kc_collect_garbage(p_zone);
        END
        $fn$
        """,
        // Recovery (`security sync recover`, run with the administrator's URL): a new device
        // login in the account of an existing zone. Only a superuser may call it.
        """
        CREATE FUNCTION keychain_sync.kc_add_device(p_zone uuid, p_device uuid, p_role name, p_verifier text)
        RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        DECLARE
            v_account uuid;
        BEGIN
            SELECT z.account_id INTO v_account FROM keychain_sync.zones z WHERE z.zone_id = p_zone;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'no such zone' USING ERRCODE = 'no_data_found';
            END IF;
            PERFORM keychain_sync.kc_check_login(p_role, p_verifier, 'kc_dev_');
            EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L IN ROLE kc_device', p_role, p_verifier);
            INSERT INTO keychain_sync.devices (device_id, account_id, role_name) VALUES (p_device, v_account, p_role);
        END
        $fn$
        """,
        "ALTER FUNCTION keychain_sync.kc_add_device(uuid, uuid, name, text) OWNER TO kc_admin",
        "REVOKE EXECUTE ON FUNCTION keychain_sync.kc_add_device(uuid, uuid, name, text) FROM PUBLIC",
        "ALTER FUNCTION keychain_sync.kc_collect_garbage(uuid) OWNER TO kc_admin",
        "ALTER FUNCTION keychain_sync.kc_acknowledge(uuid, bigint) OWNER TO kc_admin",
        "REVOKE EXECUTE ON FUNCTION keychain_sync.kc_collect_garbage(uuid) FROM PUBLIC",
        "REVOKE EXECUTE ON FUNCTION keychain_sync.kc_acknowledge(uuid, bigint) FROM PUBLIC",
        "GRANT EXECUTE ON FUNCTION keychain_sync.kc_collect_garbage(uuid) TO kc_device",
        "GRANT EXECUTE ON FUNCTION keychain_sync.kc_acknowledge(uuid, bigint) TO kc_device",
        // What the functions' owner touches.
        "GRANT SELECT, INSERT, UPDATE ON keychain_sync.cursors TO kc_admin",
        "GRANT SELECT, DELETE ON keychain_sync.records, keychain_sync.commits TO kc_admin",
        "CREATE POLICY kc_admin_all ON keychain_sync.cursors TO kc_admin USING (true) WITH CHECK (true)",
        "CREATE POLICY kc_admin_all ON keychain_sync.records TO kc_admin USING (true) WITH CHECK (true)",
        "CREATE POLICY kc_admin_all ON keychain_sync.commits TO kc_admin USING (true) WITH CHECK (true)",
        // A device reads its zones' cursors; it writes its own only through kc_acknowledge.
        "GRANT SELECT ON keychain_sync.cursors TO kc_device",
        """
        CREATE POLICY kc_device_zone ON keychain_sync.cursors TO kc_device
            USING (zone_id IN (SELECT z.zone_id FROM keychain_sync.zones z))
        """,
    ]
}

extension PostgresConnection {
    /// Runs a statement and reads its reply to the end: an error raised while the statement
    /// executes (a `RAISE` in a function called by `SELECT`, a constraint) arrives with the rows,
    /// so a statement whose rows are not read could fail unnoticed.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        let rows = try await self.query(query, logger: logger)
        for try await _ in rows {}
    }
}

// MARK: Version 3: the login's account, planned once per session

extension ServerSchema {
    /// Version 3: `kc_current_account()` in PL/pgSQL. Every row-level policy calls it, and the
    /// planner also calls it while estimating each statement; as a SQL function it was parsed
    /// and planned again at every call (a third of the server's CPU per commit), while
    /// PL/pgSQL keeps its query's plan for the session. Same result, same owner and grants.
    static let plannedAccountLookup: [String] = [
        """
        CREATE OR REPLACE FUNCTION keychain_sync.kc_current_account() RETURNS uuid
        LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $fn$
        BEGIN
            RETURN (SELECT d.account_id FROM keychain_sync.devices d WHERE d.role_name = session_user AND NOT d.revoked);
        END
        $fn$
        """
    ]
}
