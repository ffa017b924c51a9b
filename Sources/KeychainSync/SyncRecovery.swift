import Crypto
import Foundation
import KeychainCore
import Logging
import PostgresNIO

/// Recovery when every machine is lost (docs/sync.md, "Machines"): the recovery key shown once by
/// `init` derives the keys of the zone's recovery peer, a roster member whose keys no machine
/// holds. Every zone key is shared with it, so on a fresh machine the recovery key opens the newest
/// zone key, the recovery peer admits the new machine into the roster, and the machine pulls every
/// item.
extension SyncSetup {
    /// What `recover` did.
    public struct Recovered: Sendable {
        /// The zone recovered.
        public var zone: ZoneID
        /// This device.
        public var device: DeviceID
        /// This device's fingerprint.
        public var fingerprint: String
        /// How many records the first pull applied.
        public var pulled: Int
    }

    /// Joins this keychain, on a fresh machine, to the zone that `recoveryKey` opens on the server.
    ///
    /// Connects with `adminURL` (the server's administrator, as for ``initialize(keychain:adminURL:deviceName:)``),
    /// finds the zone whose recovery peer the key derives (only `zone`, when given), and opens
    /// the newest zone key shared with it. Nothing is written anywhere until the key has opened
    /// it, its roster and its keys: a wrong key changes nothing. Then it creates this device's
    /// login in the zone's account, pulls the whole zone, and commits a roster with this device
    /// in it, signed by the recovery peer (the other members, if any, accept it as from any
    /// member) with a share of the zone key for it.
    /// - Parameters:
    ///   - keychain: The keychain (unlocked; not set up for sync).
    ///   - adminURL: `postgresql://user:password@host:port/database`.
    ///   - recoveryKey: The recovery key as the user typed it.
    ///   - zone: The zone, when known (otherwise every zone of the server is tried).
    ///   - deviceName: A name for this device, sealed on the server.
    /// - Throws: ``SyncError`` `.malformed` for a mistyped key, `.recovery` when it opens no zone.
    public static func recover(
        keychain: KeychainDatabase, adminURL: String, recoveryKey: String, zone: ZoneID? = nil, deviceName: String
    ) async throws -> Recovered {
        try ensureNotSetUp(keychain)
        let recovery = try RecoveryKey(parsing: recoveryKey)
        let admin = try SyncServerAddress(url: adminURL)
        let found = try await PostgresSyncServer.recoveryState(adminURL: adminURL, zone: zone) {
            RecoveryKey.peerDeviceID(zone: $0)
        }
        // The newest share the key opens, then the roster and keys under it, checked.
        var opened: (zone: ZoneID, keys: ZoneKeys, older: [ZoneKeys], roster: Roster)?
        for candidate in found {
            let peer = RecoveryKey.peerDeviceID(zone: candidate.zone)
            guard let share = candidate.shares.max(by: { $0.epoch < $1.epoch }), let roster = candidate.roster,
                let agreement = try? recovery.recoveryAgreementKey(zone: candidate.zone),
                let unsealed = try? ZoneKeyShare.openUnverified(
                    share, zone: candidate.zone, recipientKey: agreement, recipient: peer)
            else { continue }
            let zoneKey = unsealed.zoneKey
            let members = try Roster.open(roster.blob, zone: candidate.zone, epoch: roster.epoch, zoneKey: zoneKey)
            // The share is vouched for by a member, and the roster lists this key's recovery peer.
            _ = try ZoneKeyShare.open(
                share, zone: candidate.zone, recipientKey: agreement, recipient: peer,
                sponsorKey: { members.device($0)?.signingKey })
            guard let card = members.device(peer),
                card.signingKey.rawRepresentation
                    == (try recovery.recoverySigningKey(zone: candidate.zone).publicKey.rawRepresentation)
            else {
                throw SyncError(.tampered, "zone \(candidate.zone)'s roster does not list its recovery peer")
            }
            let keys = try ZoneKeys.unwrap(
                rows: candidate.keys, zoneKey: zoneKey, epoch: share.epoch, zone: candidate.zone)
            let chain =
                (try? ZoneKeys.unwrapChain(
                    rows: candidate.keys, zoneKey: zoneKey, epoch: share.epoch, zone: candidate.zone))
                ?? [:]
            opened = (candidate.zone, keys, chain.values.sorted { $0.epoch < $1.epoch }, members)
            break
        }
        guard let opened else {
            throw SyncError(.recovery, "this recovery key opens no zone on the server")
        }

        // A new device, admitted by the recovery peer.
        let enrolling = NewDevice(name: deviceName)
        let (device, role, password, card) = (enrolling.id, enrolling.role, enrolling.password, enrolling.card)
        try await PostgresSyncServer.addDevice(
            adminURL: adminURL, zone: opened.zone, device: device, role: role, password: password)
        var secrets = enrolling.secrets
        for keys in opened.older { secrets.install(keys) }
        secrets.install(opened.keys)
        let settings = SyncSettings(
            server: admin.serverURL, role: role, zone: opened.zone.uuid,
            device: device.uuid, deviceName: deviceName, rosterEpoch: opened.roster.epoch,
            keyEpoch: opened.keys.epoch)
        // Until the roster that admits it lands, this device trusts the members the key showed.
        try storeEnrolment(keychain, settings: settings, secrets: secrets, roster: opened.roster.devices, cursor: nil)
        let peerSigning = try recovery.recoverySigningKey(zone: opened.zone)
        let pulled = try await withSyncDeadline(roundLimit) {
            try await withServer(at: admin.with(username: role, password: password)) { server in
                let engine = SyncEngine(keychain: keychain, server: server)
                let pulled = try await engine.pull()
                var context = try engine.context()
                try await engine.commitRoster(
                    adding: [card], removing: [], context: &context,
                    sponsor: (RecoveryKey.peerDeviceID(zone: opened.zone), peerSigning))
                _ = try await engine.syncNow()
                return pulled
            }
        }
        return Recovered(zone: opened.zone, device: device, fingerprint: card.fingerprint, pulled: pulled)
    }
}

extension PostgresSyncServer {
    /// What recovery reads as the administrator: for each zone (only `zone`, when given), its
    /// recovery peer's shares, its newest roster and its key rows.
    struct RecoveryState: Sendable {
        var zone: ZoneID
        var shares: [ServerShare]
        var roster: (epoch: Int64, blob: Data)?
        var keys: [ServerKey]
    }

    /// Reads, as the administrator, the zones that hold a share for their recovery peer.
    static func recoveryState(
        adminURL: String, zone: ZoneID?, peer: @escaping @Sendable (ZoneID) -> DeviceID,
        logger: Logger = Logger(label: "keychain.sync")
    ) async throws -> [RecoveryState] {
        try await withSingleConnection(to: try SyncServerAddress(url: adminURL), logger: logger) { connection in
            try await ServerSchema.migrate(using: connection, logger: logger)
            var zones: [ZoneID] = []
            if let zone {
                zones = [zone]
            } else {
                let rows = try await connection.query("SELECT zone_id FROM keychain_sync.zones", logger: logger)
                for try await id in rows.decode(UUID.self) { zones.append(ZoneID(id)) }
            }
            let peers = zones.map { peer($0).uuid }
            let rows = try await connection.query(
                """
                SELECT s.zone_id, s.epoch, s.blob FROM keychain_sync.shares s
                JOIN unnest(\(zones.map(\.uuid))::uuid[], \(peers)::uuid[]) AS p(zone_id, recipient)
                  ON s.zone_id = p.zone_id AND s.recipient = p.recipient
                ORDER BY s.zone_id, s.epoch
                """, logger: logger)
            var shares: [ZoneID: [ServerShare]] = [:]
            for try await (id, epoch, blob) in rows.decode((UUID, Int64, Data).self) {
                let zone = ZoneID(id)
                shares[zone, default: []].append(ServerShare(epoch: epoch, recipient: peer(zone), blob: blob))
            }
            // The statements of the transport, run on this connection (its pool stays unused).
            let reader = PostgresSyncServer(
                address: try SyncServerAddress(url: adminURL), maximumConnections: 1, logger: logger)
            var states: [RecoveryState] = []
            for (zone, zoneShares) in shares.sorted(by: { $0.key.uuid.uuidString < $1.key.uuid.uuidString }) {
                states.append(
                    RecoveryState(
                        zone: zone, shares: zoneShares,
                        roster: try await reader.latest("rosters", zone, on: connection),
                        keys: try await reader.keys(zone, on: connection)))
            }
            await reader.shutdown()
            return states
        }
    }

    /// Recovery: creates, as the administrator, a device login in the account of `zone`.
    static func addDevice(
        adminURL: String, zone: ZoneID, device: DeviceID, role: String, password: String,
        logger: Logger = Logger(label: "keychain.sync")
    ) async throws {
        let verifier = try ScramVerifier(password: password).encoded
        try await withSingleConnection(to: try SyncServerAddress(url: adminURL), logger: logger) { connection in
            try await connection.run(
                "SELECT keychain_sync.kc_add_device(\(zone.uuid), \(device.uuid), \(role), \(verifier))",
                logger: logger)
        }
    }
}
