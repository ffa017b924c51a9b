import Crypto
import Foundation
import GRDB
import KeychainCore

/// Joining a zone and leaving it: invitations, approval, the first keys of a new device, and
/// removal with a key roll (design: docs/sync.md, "Devices").
///
/// Trust flows from the inviting device: the code carries its signing key's fingerprint, the
/// new device's request is authenticated with the code's one-time secret (so the server cannot
/// substitute keys), the inviting device admits it by signing a new roster and sealing the zone
/// key to it, and the new device accepts only a share and a roster signed by that key.
extension SyncSetup {
    /// How long an invitation code is valid.
    public static let invitationLifetime: TimeInterval = 15 * 60

    /// Creates an invitation for a new machine.
    ///
    /// The code carries the server's URL with its `sslmode` and, when this machine verifies the
    /// server with a root certificate file, that file's fingerprint (see ``Invitation``).
    /// - Returns: The one-time code (valid ``invitationLifetime``).
    public static func invite(keychain: KeychainDatabase) async throws -> String {
        let engine = SyncEngine(keychain: keychain, server: NoServer())
        let context = try engine.context()
        var server = try SyncServerAddress(url: context.settings.server, requiresUser: false)
        let root = try server.sslRootCertificate.map(SyncServerAddress.rootFingerprint(ofFile:))
        server.sslRootCertificate = nil
        let invitation = try Invitation.make(
            server: server.serverURL, serverRootFingerprint: root, zone: context.settings.zoneID,
            sponsor: context.settings.deviceID, sponsorSigningKey: try context.secrets.signing.publicKey)
        let expires = Date().addingTimeInterval(invitationLifetime)
        try await withServer(context) { server in
            try await server.createInvitation(
                zone: context.settings.zoneID, tokenHash: invitation.tokenHash, role: invitation.loginRole,
                password: invitation.loginPassword, expires: expires)
        }
        try updateSecrets(keychain) { secrets in
            secrets.invitations.removeAll { $0.expires < Date() }
            secrets.invitations.append(SyncSecrets.StoredInvitation(code: invitation.code, expires: expires))
        }
        return invitation.code
    }

    /// What `join` made.
    public struct Joined: Sendable {
        /// The zone joined.
        public var zone: ZoneID
        /// This device.
        public var device: DeviceID
        /// This device's fingerprint: the inviting machine shows it when approving.
        public var fingerprint: String
    }

    /// Registers this machine with an invitation code: creates its login on the server and posts
    /// its keys. It receives the zone's keys once the inviting machine approves it (its next
    /// `sync now` then pulls everything).
    ///
    /// The server is reached with the code's `sslmode`. When the code carries a root
    /// certificate's fingerprint, `serverRoot` must be a copy of that file on this machine; the
    /// keychain keeps its absolute path (as `sslrootcert`) to reconnect, so leave the file there.
    /// - Parameters:
    ///   - serverRoot: a PEM file of the server's root certificate(s), checked against the
    ///     code's fingerprint; it may also be given for a code without one (TLS modes only).
    /// - Throws: `.invitation` when the code needs a root file and none is given, or the file's
    ///   fingerprint differs.
    public static func join(
        keychain: KeychainDatabase, code: String, deviceName: String, serverRoot: String? = nil
    ) async throws -> Joined {
        try ensureNotSetUp(keychain)
        let invitation = try Invitation(code: code)
        let server = try serverURL(of: invitation, root: serverRoot)
        let enrolling = NewDevice(name: deviceName)
        let (device, role, password, card) = (enrolling.id, enrolling.role, enrolling.password, enrolling.card)
        try await PostgresSyncServer.join(
            serverURL: server, invitationRole: invitation.loginRole,
            invitationPassword: invitation.loginPassword, token: invitation.secret, device: device, role: role,
            password: password, request: JoinRequest(card: card).sealed(invitation: invitation))
        let settings = SyncSettings(
            server: server, role: role, zone: invitation.zone.uuid, device: device.uuid,
            deviceName: deviceName, rosterEpoch: 0, keyEpoch: 0, sponsor: invitation.sponsor.uuid,
            sponsorKey: invitation.sponsorKey.rawRepresentation)
        try storeEnrolment(keychain, settings: settings, secrets: enrolling.secrets, roster: [card], cursor: nil)
        return Joined(zone: invitation.zone, device: device, fingerprint: card.fingerprint)
    }

    /// The invitation's server with `root` as its `sslrootcert`, once `root` matches the
    /// fingerprint the code carries.
    static func serverURL(of invitation: Invitation, root: String?) throws -> String {
        var address = try SyncServerAddress(url: invitation.server, requiresUser: false)
        guard let root else {
            guard let expected = invitation.serverRootFingerprint else { return address.serverURL }
            throw SyncError(
                .invitation,
                "the inviting machine checks the server with its root certificate: give a copy of that file "
                    + "(--server-root FILE, SHA-256 \(expected.syncHex))")
        }
        let path = URL(fileURLWithPath: root).standardizedFileURL.path
        let fingerprint = try SyncServerAddress.rootFingerprint(ofFile: path)
        if let expected = invitation.serverRootFingerprint, expected != fingerprint {
            throw SyncError(
                .invitation,
                "the root certificate file is not the inviting machine's: SHA-256 \(fingerprint.syncHex), "
                    + "the invitation's \(expected.syncHex)")
        }
        guard address.sslMode.usesTLS else {
            throw SyncError(
                .invitation, "the invitation's server is reached without TLS (sslmode=\(address.sslMode.rawValue))")
        }
        address.sslRootCertificate = path
        return address.serverURL
    }

    /// A device waiting for approval, or approved.
    public struct DeviceInfo: Sendable {
        /// The device.
        public var id: DeviceID
        /// Its name (sealed on the server).
        public var name: String
        /// Its signing key's fingerprint.
        public var fingerprint: String
        /// When it was added to the roster.
        public var addedAt: Date
        /// Whether it is this machine.
        public var isThisDevice: Bool
    }

    /// Admits the machines that joined with this machine's invitations: all of them, or the one
    /// whose id (or id prefix) or name is `only`. Signs a new roster and seals the zone key to each.
    /// - Returns: The devices admitted.
    public static func approve(keychain: KeychainDatabase, only: String? = nil) async throws -> [DeviceInfo] {
        let engine = SyncEngine(keychain: keychain, server: NoServer())
        var context = try engine.context()
        let invitations = try context.secrets.invitations.map { try Invitation(code: $0.code) }
        return try await withServer(context) { server in
            let requests = try await server.joinRequests(zone: context.settings.zoneID)
            var admitted: [DeviceCard] = []
            for request in requests where context.roster[request.device] == nil {
                guard
                    let card = invitations.lazy.compactMap({ try? JoinRequest.open(request.blob, invitation: $0) })
                        .first?.card,
                    card.id == request.device
                else { continue }
                if let only, !(card.id.description.hasPrefix(only.lowercased()) || card.name == only) { continue }
                admitted.append(card)
            }
            guard !admitted.isEmpty else { return [] }
            let sync = SyncEngine(keychain: keychain, server: server)
            try await sync.commitRoster(adding: admitted, removing: [], context: &context)
            return admitted.map { DeviceInfo($0, me: context.settings.deviceID) }
        }
    }

    /// The zone's devices, from this machine's verified roster.
    public static func devices(of keychain: KeychainDatabase) throws -> [DeviceInfo] {
        let context = try SyncEngine(keychain: keychain, server: NoServer()).context()
        let peer = RecoveryKey.peerDeviceID(zone: context.settings.zoneID)
        // The recovery peer is a member, not a machine.
        return context.roster.values.filter { $0.deviceID != peer }.sorted { $0.addedAt < $1.addedAt }.map { entry in
            DeviceInfo(
                id: entry.deviceID, name: entry.name,
                fingerprint: (try? Curve25519.Signing.PublicKey(rawRepresentation: entry.signingKey))
                    .map(DeviceCard.fingerprint(of:)) ?? "?",
                addedAt: entry.addedAt, isThisDevice: entry.deviceID == context.settings.deviceID)
        }
    }

    /// Takes a device out of the zone: a new roster without it, new zone and class keys shared
    /// with the remaining devices only (so it opens nothing written later), then its server login
    /// is refused and its connections ended.
    public static func remove(keychain: KeychainDatabase, device: String) async throws -> DeviceInfo {
        let engine = SyncEngine(keychain: keychain, server: NoServer())
        var context = try engine.context()
        let matches = context.roster.values.filter {
            $0.deviceID.description.hasPrefix(device.lowercased()) || $0.name == device
        }
        guard matches.count == 1, let target = matches.first else {
            throw SyncError(
                .invitation, matches.isEmpty ? "no device \(device) in the zone" : "\(device) names several devices")
        }
        guard target.deviceID != context.settings.deviceID else {
            throw SyncError(.conflict, "a device cannot remove itself; run remove on another device")
        }
        guard target.deviceID != RecoveryKey.peerDeviceID(zone: context.settings.zoneID) else {
            throw SyncError(.conflict, "the recovery key is not a machine; it stays in the zone")
        }
        return try await withServer(context) { server in
            let sync = SyncEngine(keychain: keychain, server: server)
            try await sync.commitRoster(adding: [], removing: [target.deviceID], context: &context)
            try await server.revoke(device: target.deviceID)
            return DeviceInfo(
                id: target.deviceID, name: target.name,
                fingerprint: (try? Curve25519.Signing.PublicKey(rawRepresentation: target.signingKey))
                    .map(DeviceCard.fingerprint(of:)) ?? "?",
                addedAt: target.addedAt, isThisDevice: false)
        }
    }

    // MARK: Helpers

    /// Runs `body` connected as this device, and closes the connections after.
    static func withServer<T: Sendable>(
        _ context: SyncEngine.Context, _ body: (PostgresSyncServer) async throws -> T
    ) async throws -> T {
        try await withServer(at: try context.serverAddress(), body)
    }

    /// Runs `body` connected to `address`, and closes the connections after, whatever happens.
    static func withServer<T: Sendable>(
        at address: SyncServerAddress, _ body: (PostgresSyncServer) async throws -> T
    ) async throws -> T {
        let server = PostgresSyncServer(address: address)
        do {
            let result = try await body(server)
            await server.shutdown()
            return result
        } catch {
            await server.shutdown()
            throw error
        }
    }

    static func updateSecrets(_ keychain: KeychainDatabase, _ change: (inout SyncSecrets) throws -> Void) throws {
        try keychain.withSyncTransaction { transaction in
            guard let sealed = try LocalSyncStore.value(SyncSecrets.name, transaction.database) else {
                throw SyncError(.notEnrolled, "this keychain is not set up for sync")
            }
            var secrets = try SyncSecrets.load(keychain, sealed: sealed)
            try change(&secrets)
            try LocalSyncStore.setValue(SyncSecrets.name, try secrets.sealed(in: transaction), transaction.database)
        }
    }
}

extension SyncSetup.DeviceInfo {
    init(_ card: DeviceCard, me: DeviceID) {
        self.init(
            id: card.id, name: card.name, fingerprint: card.fingerprint, addedAt: card.addedAt,
            isThisDevice: card.id == me)
    }
}

extension SyncEngine {
    /// Commits a new roster epoch: devices added (each gets a share of the current zone key) or
    /// removed (the zone and class keys roll first: the remaining devices get shares of the new
    /// zone key, which also wraps the old one so older records still open).
    /// - Parameter sponsor: the member that signs the roster and the new shares, when it is not
    ///   this device (recovery: the recovery peer admits the recovered device).
    func commitRoster(
        adding: [DeviceCard], removing: [DeviceID], context: inout Context,
        sponsor: (id: DeviceID, key: Curve25519.Signing.PrivateKey)? = nil
    ) async throws {
        for _ in 0..<20 {
            try await pull()
            context = try self.context()
            let signing = try context.secrets.signing
            var keys = try context.secrets.currentZoneKeys()
            var keyRows: [ServerKey] = []
            if !removing.isEmpty {
                let rotated = keys.rotated()
                keyRows = try rotated.wrappedRows(zone: context.settings.zoneID, previous: keys)
                keys = rotated
            }
            var cards = try context.roster.values.map { try DeviceCard($0) }
            cards.removeAll { removing.contains($0.id) }
            cards += adding.filter { card in !cards.contains { $0.id == card.id } }
            let epoch = context.settings.rosterEpoch + 1
            let signer = sponsor ?? (context.settings.deviceID, signing)
            let roster = Roster(zone: context.settings.zoneID, epoch: epoch, devices: cards, signer: signer.id)
            let recipients = removing.isEmpty ? adding : cards
            let shares = try recipients.map {
                try ZoneKeyShare.seal(
                    zoneKey: keys.zoneKey, epoch: keys.epoch, zone: context.settings.zoneID, to: $0,
                    from: signer.id, signingKey: signer.key)
            }
            let live = try keychain.readSyncTables { try LocalSyncStore.liveMirror($0) }
            let head = Head(
                zone: context.settings.zoneID, seq: context.cursor.seq + 1,
                previousHash: context.cursor.headHash ?? Head.genesisHash, stateDigest: StateDigest.compute(live),
                rosterEpoch: epoch, keyEpoch: keys.epoch, commitID: UUID(), author: context.settings.deviceID,
                time: .wallClock())
            let signed = try SignedHead.sign(head, with: signing)
            let commit = Commit(
                zone: context.settings.zoneID, expectedSeq: context.cursor.seq, head: signed.serverHead, keys: keyRows,
                roster: (epoch, try roster.seal(zoneKey: keys.zoneKey, signingKey: signer.key)), shares: shares)
            switch try await server.push(commit) {
            case .committed, .alreadyCommitted:
                let newKeys = keys
                try keychain.withSyncTransaction { transaction in
                    let db = transaction.database
                    guard var settings = try LocalSyncStore.configuration(db),
                        let sealed = try LocalSyncStore.value(SyncSecrets.name, db)
                    else { return }
                    var secrets = try SyncSecrets.load(keychain, sealed: sealed)
                    secrets.install(newKeys)
                    if !adding.isEmpty { secrets.invitations.removeAll() }
                    settings.rosterEpoch = epoch
                    settings.keyEpoch = newKeys.epoch
                    try LocalSyncStore.setConfiguration(settings, db)
                    try LocalSyncStore.setValue(SyncSecrets.name, try secrets.sealed(in: transaction), db)
                    try LocalSyncStore.setRoster(cards.map(LocalRosterEntry.init), db)
                    try LocalSyncStore.setCursor(SyncCursor(seq: head.seq, headHash: signed.hash), db)
                }
                return
            case .staleHead:
                try await Task.sleep(nanoseconds: UInt64.random(in: 5_000_000...50_000_000))
            }
        }
        throw SyncError(.conflict, "the zone kept moving; try again later")
    }

    /// Brings this device's keys and roster up to the zone's: a device that just joined receives
    /// its first zone key; every device learns roster changes and rolled keys. Shares and rosters
    /// are accepted only when signed by a device this one already trusts (for a new device: the
    /// inviting device, whose fingerprint its code carried).
    func refreshMembership(context: inout Context, neededEpoch: Int64) async throws {
        guard neededEpoch > context.settings.rosterEpoch else { return }
        let zone = context.settings.zoneID
        let state = try await server.zoneState(zone)
        guard let roster = state.roster, roster.epoch >= neededEpoch else {
            throw SyncError(.tampered, "the server has no roster for epoch \(neededEpoch)")
        }
        var trusted = context.signers
        if context.settings.rosterEpoch == 0, let sponsor = context.settings.sponsor,
            let key = context.settings.sponsorKey.flatMap({ try? Curve25519.Signing.PublicKey(rawRepresentation: $0) })
        {
            // A new device trusts only the key its code named.
            trusted = [DeviceID(sponsor): key]
        }
        let shares = try await server.shares(zone, for: context.settings.deviceID)
        let agreement = try context.secrets.agreement
        var newest: (epoch: Int64, key: SymmetricKey)?
        for share in shares.sorted(by: { $0.epoch < $1.epoch }) {
            guard
                let opened = try? ZoneKeyShare.open(
                    share, zone: zone, recipientKey: agreement, recipient: context.settings.deviceID,
                    sponsorKey: { trusted[$0] })
            else { continue }
            newest = (share.epoch, opened.zoneKey)
        }
        guard let newest else {
            throw SyncError(
                .notEnrolled,
                "this device has not been approved yet (run `security sync approve` on the inviting machine)")
        }
        let keys = try ZoneKeys.unwrap(rows: state.keys, zoneKey: newest.key, epoch: newest.epoch, zone: zone)
        let opened = try Roster.open(roster.blob, zone: zone, epoch: roster.epoch, zoneKey: newest.key) { trusted[$0] }
        guard opened.devices.contains(where: { $0.id == context.settings.deviceID }) else {
            throw SyncError(.notEnrolled, "this device was removed from the zone")
        }
        let chain: [Int64: ZoneKeys] =
            (try? ZoneKeys.unwrapChain(rows: state.keys, zoneKey: newest.key, epoch: newest.epoch, zone: zone)) ?? [:]
        let older = chain.values.sorted { $0.epoch < $1.epoch }
        try keychain.withSyncTransaction { transaction in
            let db = transaction.database
            guard var settings = try LocalSyncStore.configuration(db),
                let sealed = try LocalSyncStore.value(SyncSecrets.name, db)
            else { return }
            var secrets = try SyncSecrets.load(keychain, sealed: sealed)
            for keys in older { secrets.install(keys) }
            secrets.install(keys)
            settings.rosterEpoch = roster.epoch
            settings.keyEpoch = keys.epoch
            try LocalSyncStore.setConfiguration(settings, db)
            try LocalSyncStore.setValue(SyncSecrets.name, try secrets.sealed(in: transaction), db)
            try LocalSyncStore.setRoster(opened.devices.map(LocalRosterEntry.init), db)
        }
        context = try self.context()
    }
}

extension DeviceCard {
    init(_ entry: LocalRosterEntry) throws {
        self.init(
            id: entry.deviceID, name: entry.name,
            signingKey: try Curve25519.Signing.PublicKey(rawRepresentation: entry.signingKey),
            agreementKey: try Curve25519.KeyAgreement.PublicKey(rawRepresentation: entry.agreementKey),
            addedAt: entry.addedAt)
    }
}

/// A machine's new identity as it enrols (`init`, `join`, `recover`): its id, its signing and
/// key-agreement keys, its login and the card the roster lists it by.
struct NewDevice {
    let id = DeviceID.random()
    let signing = Curve25519.Signing.PrivateKey()
    let agreement = Curve25519.KeyAgreement.PrivateKey()
    /// Its login's random password (the server keeps only a SCRAM verifier).
    let password = ScramVerifier.randomPassword()
    let card: DeviceCard

    init(name: String) {
        card = DeviceCard(
            id: id, name: name, signingKey: signing.publicKey, agreementKey: agreement.publicKey, addedAt: Date())
    }

    /// Its login name on the server.
    var role: String { PostgresSyncServer.deviceRoleName(for: id) }

    /// Its secrets before it holds any zone key.
    var secrets: SyncSecrets {
        SyncSecrets(
            signingKey: signing.rawRepresentation, agreementKey: agreement.rawRepresentation, password: password,
            zoneKeys: [:], recordIDKey: Data(), classKeys: [:])
    }
}
