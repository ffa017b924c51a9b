import Crypto
import Foundation
import Logging
import PostgresNIO

// Accounts, device logins, invitations, revocation and change notifications: the calls outside
// the `SyncServer` protocol. Every login password becomes a SCRAM verifier here, on the device;
// the server (and its statement log) sees only the verifier.

extension PostgresSyncServer {
    /// `sync init`: migrates the schema (as the administrator) and creates the account and its
    /// first device's login.
    ///
    /// - Parameters:
    ///   - adminURL: a superuser's `postgresql://` URL (used for this call only).
    ///   - account: the new account's identifier.
    ///   - device: the first device.
    ///   - role: its login name (`kc_dev_…`, see ``deviceRoleName(for:)``).
    ///   - password: its login password (printable ASCII; see ``ScramVerifier/randomPassword()``).
    public static func bootstrap(
        adminURL: String, account: UUID, device: DeviceID, role: String, password: String,
        logger: Logger = Logger(label: "keychain.sync")
    ) async throws {
        let verifier = try ScramVerifier(password: password).encoded
        try await withSingleConnection(to: try SyncServerAddress(url: adminURL), logger: logger) { connection in
            try await ServerSchema.migrate(using: connection, logger: logger)
            try await connection.run(
                "SELECT keychain_sync.kc_bootstrap_account(\(account), \(device.uuid), \(role), \(verifier))",
                logger: logger)
        }
    }

    /// `sync migrate`: brings the server's schema to this build's version (as the administrator),
    /// as `sync init` does before it creates an account: the missing migrations in one
    /// transaction, so machines keep syncing meanwhile.
    ///
    /// - Parameter adminURL: a superuser's `postgresql://` URL (used for this call only).
    /// - Returns: The schema version before and after.
    public static func migrateSchema(
        adminURL: String, logger: Logger = Logger(label: "keychain.sync")
    ) async throws -> (before: Int, after: Int) {
        try await withSingleConnection(to: try SyncServerAddress(url: adminURL), logger: logger) { connection in
            let before = try await ServerSchema.currentVersion(orZeroWithoutSchemaUsing: connection, logger: logger)
            return (before, try await ServerSchema.migrate(using: connection, logger: logger))
        }
    }

    /// Invites a device into `zone`: stores SHA-256 of the invitation secret and creates a
    /// one-use login (`kc_inv_…`, valid until `expires`, one connection) that may only join.
    ///
    /// - Parameters:
    ///   - tokenHash: SHA-256 of the invitation secret J (32 bytes).
    ///   - role: the invitation login's name, `kc_inv_` and 1 to 48 of `[0-9a-z_]`.
    ///   - password: the invitation login's password (derived from J by the caller).
    ///   - expires: at most 7 days ahead.
    public func createInvitation(zone: ZoneID, tokenHash: Data, role: String, password: String, expires: Date)
        async throws
    {
        let verifier = try ScramVerifier(password: password).encoded
        try await withConnection { [self] connection in
            try await connection.run(
                """
                SELECT keychain_sync.kc_invite(\(zone.uuid), \(ByteBuffer(bytes: tokenHash)), \(role), \(verifier), \(expires))
                """, logger: logger)
        }
    }

    /// A new device joins with an invitation: logs in as the invitation login (once), proves
    /// the secret, creates its own login and posts its join request.
    ///
    /// - Parameters:
    ///   - serverURL: the server's `postgresql://host:port/db` URL (any user or password in it is ignored).
    ///   - token: the invitation secret J (the server checks SHA-256(J)).
    ///   - device: the new device.
    ///   - role: its login name (`kc_dev_…`).
    ///   - password: its login password.
    ///   - request: its sealed join request.
    public static func join(
        serverURL: String, invitationRole: String, invitationPassword: String, token: Data, device: DeviceID,
        role: String, password: String, request: Data, logger: Logger = Logger(label: "keychain.sync")
    ) async throws {
        let verifier = try ScramVerifier(password: password).encoded
        let address = try SyncServerAddress(url: serverURL, requiresUser: false).with(
            username: invitationRole, password: invitationPassword)
        try await withSingleConnection(to: address, logger: logger) { connection in
            try await connection.run(
                """
                SELECT keychain_sync.kc_join(\(ByteBuffer(bytes: token)), \(device.uuid), \(role), \(verifier), \
                \(ByteBuffer(bytes: request)))
                """, logger: logger)
        }
    }

    /// The join requests posted to `zone`, oldest first.
    public func joinRequests(zone: ZoneID) async throws -> [ServerJoinRequest] {
        try await withConnection { [self] connection in
            let rows = try await connection.query(
                """
                SELECT device, blob, posted_at FROM keychain_sync.join_requests
                WHERE zone_id = \(zone.uuid) ORDER BY posted_at, device
                """, logger: logger)
            var requests: [ServerJoinRequest] = []
            for try await (device, blob, postedAt) in rows.decode((UUID, Data, Date).self) {
                requests.append(ServerJoinRequest(device: DeviceID(device), blob: blob, postedAt: postedAt))
            }
            return requests
        }
    }

    /// Removes a device of this login's account: its login is refused from now on and its open
    /// connections are ended.
    public func revoke(device: DeviceID) async throws {
        try await withConnection { [self] connection in
            try await connection.run("SELECT keychain_sync.kc_revoke(\(device.uuid))", logger: logger)
        }
    }

    /// Waits for pushes to a zone on a dedicated connection (`LISTEN`) and calls `onNotify`
    /// with each notified sequence number, until the task is cancelled (then it returns) or the
    /// connection fails (then it throws; reconnecting, and pulling after, are the caller's job:
    /// notifications sent while disconnected are lost).
    ///
    /// - Parameters:
    ///   - zone: the zone (for the log).
    ///   - channel: its notify channel (``ZoneState/notifyChannel``).
    ///   - onListening: called once the server has confirmed `LISTEN`.
    ///   - onNotify: called with each sequence number, in order.
    public func listen(
        zone: ZoneID, channel: String, onListening: @Sendable () async -> Void = {},
        onNotify: @Sendable (Int64) async -> Void
    ) async throws {
        guard Self.isValidNotifyChannel(channel) else {
            throw SyncServerError(.invalidArgument, "a notify channel is a letter and 32 lowercase hex digits")
        }
        let connection = try await address.connect(id: 0, logger: logger)
        do {
            try await withTaskCancellationHandler {
                try await connection.listen(on: channel) { notifications in
                    await onListening()
                    for try await notification in notifications {
                        if let seq = Int64(notification.payload) { await onNotify(seq) }
                    }
                }
            } onCancel: {
                _ = connection.close() as EventLoopFuture<Void>
            }
        } catch {
            try? await connection.close()
            if Task.isCancelled { return }
            logger.debug("sync listen ended", metadata: ["zone": "\(zone)"])
            throw SyncServerError(postgres: error)
        }
        try? await connection.close()
        if !Task.isCancelled { throw SyncServerError(.connectionFailed, "the notification connection ended") }
    }

    /// Opens one connection for `body` and closes it after; a body still waiting a second after
    /// the server closed it fails (see ``untilClosed(_:grace:_:)``).
    @discardableResult
    static func withSingleConnection<T: Sendable>(
        to address: SyncServerAddress, logger: Logger,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await address.connect(id: 0, logger: logger)
        do {
            let result = try await untilClosed(ConnectionClosedSignal(connection)) { try await body(connection) }
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw SyncServerError(postgres: error)
        }
    }
}
