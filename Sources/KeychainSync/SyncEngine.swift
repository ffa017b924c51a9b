import Crypto
import Foundation
import GRDB
import KeychainCore
import Synchronization

/// One device's sync of a keychain with its zone: pull (verify the signed log, then apply
/// what other devices wrote) and push (seal the journaled changes and append them to the log).
///
/// Each record is a last-writer-wins register ordered by (hybrid clock, author): a change that
/// loses is kept in the conflict log, never dropped silently. Everything a pull applies lands in
/// one SQLite transaction with the cursor, so a process killed at any point either applied a
/// batch whole or not at all; a push removes its journal entries only after the server
/// committed, and a retried push after a crash finds its own commit on the next pull.
public final class SyncEngine: Sendable {
    /// The keychain being synced.
    public let keychain: KeychainDatabase
    let server: any SyncServer
    /// How many journal entries one commit carries at most.
    let batchSize: Int
    /// How long ``syncNow()`` waits between acknowledgements while the cursor moves.
    let acknowledgementInterval: Duration
    /// When this engine last wrote the time of a pull and of a push for `sync status`.
    private let statusRecorded = Mutex(StatusTimes())
    /// How stale `sync status`'s times may be while rounds change nothing.
    static let statusInterval: Duration = .seconds(30)
    /// The sync tables' values last decoded, reused while their bytes stay the same.
    private let decoded = DecodedValues()
    /// The live records of the mirror, kept between rounds for the state digest.
    private let liveSet = LiveSet()
    /// When this engine last lost the race for the zone's head.
    private let lastLoss = Mutex<ContinuousClock.Instant?>(nil)
    /// The cursor this engine last acknowledged, and when.
    private let lastAcknowledgement = Mutex<(seq: Int64, time: ContinuousClock.Instant)?>(nil)

    /// Creates the engine of a keychain that is set up for sync (see ``SyncSetup``).
    /// - Parameters:
    ///   - keychain: The keychain, open.
    ///   - server: The zone's shared store.
    ///   - batchSize: The most changes one commit carries.
    ///   - acknowledgementInterval: How long ``syncNow()`` waits between two acknowledgements
    ///     (the first sync of an engine always acknowledges).
    public init(
        keychain: KeychainDatabase, server: any SyncServer, batchSize: Int = 500,
        acknowledgementInterval: Duration = .seconds(10)
    ) {
        self.keychain = keychain
        self.server = server
        self.batchSize = batchSize
        self.acknowledgementInterval = acknowledgementInterval
    }

    /// When the times `sync status` shows were last written.
    struct StatusTimes {
        var pull: ContinuousClock.Instant?
        var push: ContinuousClock.Instant?
    }

    // MARK: Context

    /// What one pull or push works from: settings, secrets, the roster and the cursor, read in one
    /// snapshot.
    struct Context {
        var settings: SyncSettings
        var secrets: SyncSecrets
        var roster: [DeviceID: LocalRosterEntry]
        var cursor: SyncCursor

        /// The server's address with this device's login.
        func serverAddress() throws -> SyncServerAddress {
            try SyncServerAddress(url: settings.server, requiresUser: false).with(
                username: settings.role, password: secrets.password)
        }

        var signers: [DeviceID: Curve25519.Signing.PublicKey] {
            roster.compactMapValues { try? Curve25519.Signing.PublicKey(rawRepresentation: $0.signingKey) }
        }
    }

    func context() throws -> Context {
        let (settings, sealed, roster, cursor) = try keychain.readSyncTables { db in
            guard try LocalSyncStore.tableExists(db) else {
                throw SyncError(.notEnrolled, "this keychain is not set up for sync")
            }
            return (
                try LocalSyncStore.configuration(db, reusing: decoded), try LocalSyncStore.value(SyncSecrets.name, db),
                try LocalSyncStore.roster(db, reusing: decoded), try LocalSyncStore.cursor(db)
            )
        }
        guard let settings, let sealed else { throw SyncError(.notEnrolled, "this keychain is not set up for sync") }
        let secrets = try SyncSecrets.load(keychain, sealed: sealed, reusing: decoded)
        return Context(
            settings: settings, secrets: secrets,
            roster: Dictionary(uniqueKeysWithValues: roster.map { ($0.deviceID, $0) }),
            cursor: cursor)
    }

    // MARK: Pull

    /// Verifies and applies everything written to the zone since this device's cursor.
    ///
    /// While the keychain is locked, the log is verified as always (heads, signatures, the state
    /// digest: none needs a class key of the keychain), every record that can be applied is,
    /// and each one that cannot (a when-unlocked record, which is not even opened, or one whose
    /// local item is when-unlocked) is kept sealed in the keychain file with the cursor, to be
    /// applied by the first pull after an unlock, before anything newer, under the same
    /// last-writer-wins rule.
    ///
    /// Deletions whose tombstones the server collected are found by a reconcile of record ids
    /// (see ``acknowledge()``); a log that no longer holds this device's last verified head (a
    /// restored backup) is verified from scratch and repaired: what the server lost is
    /// journaled again for the next push.
    /// - Returns: How many records were applied (waiting ones included once they are).
    /// - Throws: ``SyncError`` `.tampered` or `.forked` when the server's log fails
    ///   verification, or a waiting record fails authentication (nothing is applied, the cursor
    ///   stays, the waiting records stay), `.server` on transport errors.
    @discardableResult
    public func pull() async throws -> Int {
        var context = try context()
        let released = try applyWaiting(context: context)
        if context.settings.rosterEpoch == 0 {
            // Just joined: the first keys and roster come with the inviting device's approval.
            try await refreshMembership(context: &context, neededEpoch: 1)
        }
        let batch = try await server.pull(context.settings.zoneID, after: context.cursor.seq)
        if isRewound(batch, context: context) {
            return released + (try await repairRegression(context: &context))
        }
        guard batch.headSeq != context.cursor.seq else {
            try recordPull(at: Date())
            return released
        }
        let heads = try await verifiedHeads(batch, context: &context)
        let incoming = try openRecords(
            batch.records, heads: heads, context: context, unlocked: !keychain.isLocked)
        let last = heads[heads.count - 1]
        let purged = try await checkDigest(incoming.map(\.record), against: last.head, context: context)
        let applied = try keychain.withSyncTransaction { transaction in
            try LocalSyncStore.migrate(transaction.database)
            let applied = try applyIncoming(incoming, transaction: transaction, context: context)
            try applyPurgedDeletions(purged, transaction: transaction)
            try LocalSyncStore.pruneMirrorLog(transaction.database)
            try LocalSyncStore.setCursor(SyncCursor(seq: last.head.seq, headHash: last.hash), transaction.database)
            var settings = context.settings
            settings.lastPull = Date()
            try LocalSyncStore.setConfiguration(settings, transaction.database)
            return applied
        }
        statusRecorded.withLock { $0.pull = .now }
        return released + applied
    }

    /// Applies opened records under the last-writer-wins rule, one savepoint each; the ones the
    /// lock stops, and the sealed ones, wait for the unlock.
    /// - Returns: How many were applied.
    private func applyIncoming(_ incoming: [IncomingRecord], transaction: SyncTransaction, context: Context) throws
        -> Int
    {
        var applied = 0
        for record in incoming {
            switch record {
            case .opened(let opened):
                do {
                    // One record at a time: a record the lock stops rolls back alone.
                    try transaction.database.inSavepoint {
                        try apply(opened, transaction: transaction, context: context)
                        return .commit
                    }
                    applied += 1
                } catch let error as KeychainError where error.code == .interactionNotAllowed {
                    try wait(
                        WaitingRecord(record: opened.record, author: opened.header.author),
                        header: opened.header, transaction: transaction)
                }
            case .sealed(let waiting, let header):
                try wait(waiting, header: header, transaction: transaction)
            }
        }
        return applied
    }

    /// Keeps a record for the next unlock: in the waiting table, and in the mirror as the
    /// server's current version of its record (the state digest covers it already; the local
    /// item it maps to, and its sealed primary key, stay as they were until it is applied).
    private func wait(_ waiting: WaitingRecord, header: RecordHeader, transaction: SyncTransaction) throws {
        let db = transaction.database
        try LocalSyncStore.addWaiting(waiting, db)
        let known = try LocalSyncStore.mirror(recordID: waiting.record.recordID, db)
        try LocalSyncStore.setMirror(
            MirrorRow(
                recordID: waiting.record.recordID, seq: waiting.record.seq, hlc: header.hlc, author: header.author,
                tombstone: waiting.record.tombstone, blobHash: RecordCodec.blobHash(waiting.record.blob),
                item: known?.item, sealedPrimaryKey: known?.sealedPrimaryKey), db)
        // As if it had been applied: a local change made from now on is stamped after it.
        try transaction.observe(clock: header.hlc.rawValue)
    }

    /// Applies the records that waited for an unlock, oldest first, when the keychain is
    /// unlocked: each is opened and checked as a fresh one is, then applied under the
    /// last-writer-wins rule against the local item as it is now, unless a later version of
    /// the same record was applied meanwhile (the mirror holds a later commit). One
    /// transaction: a crash leaves them all waiting or all applied.
    /// - Returns: How many were applied.
    /// - Throws: `.tampered` when one fails authentication (all stay waiting).
    private func applyWaiting(context: Context) throws -> Int {
        guard !keychain.isLocked,
            try keychain.readSyncTables({ try LocalSyncStore.waitingCount($0) }) > 0
        else { return 0 }
        let classKeys = context.secrets.classKeysByID
        let keys = try context.secrets.currentZoneKeys()
        // A refusal leaves the transaction with nothing written, and is thrown outside it (the
        // keychain would report an error of another module as an internal failure).
        let outcome = try keychain.withSyncTransaction { transaction -> Result<Int, SyncError> in
            let db = transaction.database
            var opened: [(WaitingRecord, OpenedRecord)] = []
            do {
                for waiting in try LocalSyncStore.waiting(db) {
                    let record = try open(
                        waiting.record, author: waiting.author, classKeys: classKeys, keys: keys, context: context)
                    opened.append((waiting, record))
                }
            } catch let error as SyncError {
                return .failure(error)
            }
            var applied = 0
            for (waiting, record) in opened {
                if let mirror = try LocalSyncStore.mirror(recordID: waiting.record.recordID, db),
                    mirror.seq > waiting.record.seq
                {
                    // Superseded: the zone has a later version, which this device applied or wrote.
                    try LocalSyncStore.removeWaiting(waiting, db)
                    continue
                }
                try apply(record, transaction: transaction, context: context)
                try LocalSyncStore.removeWaiting(waiting, db)
                applied += 1
            }
            return .success(applied)
        }
        return try outcome.get()
    }

    /// The batch's heads, decoded and checked: consecutive from the cursor, each chained to the
    /// one before and signed by a device of the roster.
    private func verifiedHeads(_ batch: PullBatch, context: inout Context) async throws -> [SignedHead] {
        let heads = try batch.heads.map { try SignedHead(decoding: $0, zone: context.settings.zoneID) }
        if let epoch = heads.map(\.head.rosterEpoch).max(), epoch > context.settings.rosterEpoch {
            try await refreshMembership(context: &context, neededEpoch: epoch)
        }
        // A device that has verified no head yet (it just joined) starts at the oldest head the
        // server keeps (older ones may have been collected: docs/sync.md, "Tombstones and heads on
        // the server"); any other continues from its own last verified head.
        let complete =
            context.cursor.headHash == nil ? !heads.isEmpty : heads.count == batch.headSeq - context.cursor.seq
        guard complete, heads.last?.head.seq == batch.headSeq else {
            throw SyncError(.tampered, "the server left out heads between \(context.cursor.seq) and \(batch.headSeq)")
        }
        let from = context.cursor.headHash.map { (seq: context.cursor.seq, hash: $0) }
        try SignedHead.verifyChain(from: from, heads: heads, signers: context.signers)
        return heads
    }

    /// A record opened and checked against the head that wrote it.
    struct OpenedRecord {
        var record: ServerRecord
        var header: RecordHeader
        /// The item (for a deletion: its class and primary-key attributes only).
        var item: Item
    }

    /// A pulled record: opened, or kept sealed until the keychain unlocks.
    enum IncomingRecord {
        case opened(OpenedRecord)
        /// A when-unlocked record pulled while the keychain is locked: only its clear header
        /// is read (and checked against its row and its commit's signer).
        case sealed(WaitingRecord, RecordHeader)

        var record: ServerRecord {
            switch self {
            case .opened(let opened): opened.record
            case .sealed(let waiting, _): waiting.record
            }
        }
    }

    /// Opens and checks a batch's records; with `unlocked` false, the when-unlocked ones are
    /// left sealed (never decrypted while the keychain is locked).
    private func openRecords(_ records: [ServerRecord], heads: [SignedHead], context: Context, unlocked: Bool) throws
        -> [IncomingRecord]
    {
        let authors = Dictionary(heads.map { ($0.head.seq, $0.head.author) }, uniquingKeysWith: { first, _ in first })
        // Records written before the oldest head the server still keeps (a full pull after heads
        // were collected): their commit's signer is gone, so their own sealed header names the
        // author; the signed state digest still covers every live one.
        let oldestHead = heads.first?.head.seq ?? 0
        var seen = Set<RecordID>()
        // Built once per batch: every record is opened and identified with the same keys.
        let classKeys = context.secrets.classKeysByID
        let keys = try context.secrets.currentZoneKeys()
        let whenUnlocked = context.secrets.whenUnlockedKeyIDs
        return try records.map { record in
            let author: DeviceID
            if let signer = authors[record.seq] {
                author = signer
            } else if record.seq > 0, record.seq < oldestHead {
                author = try RecordCodec.header(of: record, zone: context.settings.zoneID).author
            } else {
                throw SyncError(.tampered, "a record claims a commit outside the pulled range")
            }
            guard seen.insert(record.recordID).inserted else {
                throw SyncError(.tampered, "a record was served twice")
            }
            if !unlocked && whenUnlocked.contains(record.keyID) {
                let header = try RecordCodec.header(of: record, zone: context.settings.zoneID)
                guard header.author == author else {
                    throw SyncError(.tampered, "a record's author did not sign its commit")
                }
                return .sealed(WaitingRecord(record: record, author: author), header)
            }
            return .opened(try open(record, author: author, classKeys: classKeys, keys: keys, context: context))
        }
    }

    /// Opens one record and checks it: its author signed its commit, its payload is an item of
    /// the sync set, and its identity is its item's.
    private func open(
        _ record: ServerRecord, author: DeviceID, classKeys: [UUID: SymmetricKey], keys: ZoneKeys, context: Context
    ) throws -> OpenedRecord {
        let (header, payload) = try RecordCodec.open(record, zone: context.settings.zoneID, classKeys: classKeys)
        // A record is written by the device that signed its commit.
        guard header.author == author else {
            throw SyncError(.tampered, "a record's author did not sign its commit")
        }
        let item: Item
        do {
            item = try Item(syncPayload: payload)
        } catch {
            throw SyncError(.tampered, "a record's payload is malformed")
        }
        if !record.tombstone {
            guard item.belongsInSyncSet else {
                throw SyncError(.tampered, "a record holds an item that does not sync")
            }
        }
        let expected = keys.recordID(itemClass: item.itemClass.rawValue, primaryKey: item.syncPrimaryKey)
        guard expected == record.recordID else {
            throw SyncError(.tampered, "a record's identity does not match its item")
        }
        return OpenedRecord(record: record, header: header, item: item)
    }

    /// Checks that the mirror with the batch applied is exactly the live set the last head signs.
    ///
    /// When it is not, tombstones may have been collected (docs/sync.md, "Tombstones and heads on
    /// the server": the server purges them once older than its retention, so a device offline
    /// longer misses deletions): the zone's record ids are listed, and a record the mirror holds
    /// live that the server no longer holds at all is taken as deleted, provided the live set then
    /// matches the signed digest.
    /// - Returns: The mirror rows of the records so found deleted.
    /// - Throws: `.tampered` when the live set does not match either way.
    private func checkDigest(_ records: [ServerRecord], against head: Head, context: Context) async throws
        -> [MirrorRow]
    {
        var changes: [RecordID: Data?] = [:]
        for record in records {
            changes[record.recordID] = record.tombstone ? nil : RecordCodec.blobHash(record.blob)
        }
        let digest = try keychain.readSyncTables { try liveSet.digest(overlaying: changes, $0) }
        if digest == head.stateDigest { return [] }
        // Some live records are gone from the server: tombstones collected (or a server that
        // dropped rows, which the digest then still catches).
        var live = try keychain.readSyncTables { try LocalSyncStore.liveMirror($0) }
        for (id, hash) in changes { live[id] = hash }
        let index = try await server.recordIndex(context.settings.zoneID)
        let gone = live.keys.filter { index[$0] == nil }
        for id in gone { live[id] = nil }
        guard !gone.isEmpty, StateDigest.compute(live) == head.stateDigest else {
            throw SyncError(.tampered, "the zone's records do not match the state its head signs")
        }
        return try keychain.readSyncTables { db in try gone.compactMap { try LocalSyncStore.mirror(recordID: $0, db) } }
    }

    /// Applies deletions whose tombstones were collected: the local item is deleted, unless a local
    /// change to it waits to be pushed; then it stays and is pushed again (resurrection over loss:
    /// docs/sync.md, "Tombstones and heads on the server"). A when-unlocked item that cannot be
    /// deleted while the keychain is locked keeps its mirror row live, so a later pull finds it
    /// again.
    private func applyPurgedDeletions(_ rows: [MirrorRow], transaction: SyncTransaction) throws {
        for row in rows {
            do {
                try transaction.database.inSavepoint {
                    if let item = row.item, try transaction.pendingClock(row: item) == nil {
                        try transaction.applyRemoteDeletion(row: item)
                    }
                    var mirror = row
                    mirror.tombstone = true
                    try LocalSyncStore.setMirror(mirror, transaction.database)
                    return .commit
                }
            } catch let error as KeychainError where error.code == .interactionNotAllowed {
                continue
            }
        }
    }

    /// Applies one record under the last-writer-wins rule.
    private func apply(_ opened: OpenedRecord, transaction: SyncTransaction, context: Context) throws {
        let me = context.settings.deviceID
        let incoming = (opened.header.hlc, opened.header.author)
        let local = try transaction.row(withPrimaryKeyOf: opened.item)
        var mirror = MirrorRow(
            recordID: opened.record.recordID, seq: opened.record.seq, hlc: opened.header.hlc,
            author: opened.header.author, tombstone: opened.record.tombstone,
            blobHash: RecordCodec.blobHash(opened.record.blob), item: local?.row,
            sealedPrimaryKey: try sealedPrimaryKey(of: opened.item, transaction: transaction))
        try transaction.observe(clock: opened.header.hlc.rawValue)
        if let local, let pending = local.pendingClock {
            let mine = (HybridLogicalClock(rawValue: pending), me)
            if mine == incoming {
                // This device's own commit (a push that committed but was not recorded here).
                try transaction.removeJournalEntry(row: local.row, clock: pending)
                try LocalSyncStore.setMirror(mirror, transaction.database)
                return
            }
            if mine > incoming {
                // The local change is later: it stays, and will be pushed over this one.
                try LocalSyncStore.logConflict(
                    recordID: opened.record.recordID, winner: mine, loser: opened.record.blob, transaction.database)
                try LocalSyncStore.setMirror(mirror, transaction.database)
                return
            }
            // The remote change is later: the local one is the loser.
            let loser = try sealLoser(local.item, clock: mine.0, context: context, recordID: opened.record.recordID)
            try LocalSyncStore.logConflict(
                recordID: opened.record.recordID, winner: incoming, loser: loser, transaction.database)
            try transaction.dropJournalEntry(row: local.row)
        }
        if opened.record.tombstone {
            if let local { try transaction.applyRemoteDeletion(row: local.row) }
        } else {
            mirror.item = try transaction.applyRemote(opened.item)
        }
        try LocalSyncStore.setMirror(mirror, transaction.database)
    }

    /// A losing local version, sealed as a record so the conflict log keeps it encrypted.
    private func sealLoser(_ item: Item, clock: HybridLogicalClock, context: Context, recordID: RecordID) throws -> Data
    {
        let keys = try context.secrets.currentZoneKeys()
        let classKey = try keys.classKey(for: item)
        let header = RecordHeader(
            zone: context.settings.zoneID, recordID: recordID, keyID: classKey.id,
            tombstone: item.attributes[.tombstone] != nil, hlc: clock, author: context.settings.deviceID)
        return try RecordCodec.seal(payload: item.syncPayload, header: header, classKey: classKey.key)
    }

    private func sealedPrimaryKey(of item: Item, transaction: SyncTransaction) throws -> Data {
        try transaction.sealSyncSecret(Self.primaryKeyItem(item).syncPayload, name: "sync.primary-key")
    }

    /// The item reduced to its class and primary-key attributes: what a deletion record carries.
    static func primaryKeyItem(_ item: Item) -> Item {
        let names = Set(ItemSchema.of(item.itemClass).primaryKey)
        var attributes = item.attributes.filter { names.contains($0.key) }
        attributes[.tombstone] = nil
        return Item(class: item.itemClass, attributes: attributes)
    }

    private func recordPull(at date: Date) throws {
        guard statusIsStale(\.pull) else { return }
        try keychain.withSyncTransaction { transaction in
            guard var settings = try LocalSyncStore.configuration(transaction.database) else { return }
            settings.lastPull = date
            try LocalSyncStore.setConfiguration(settings, transaction.database)
        }
        statusRecorded.withLock { $0.pull = .now }
    }

    /// Whether a round that changed nothing should still write its time for `sync status`:
    /// when this engine has not written it for ``statusInterval`` (a durable write of its own,
    /// which a runner syncing many times a second need not make each time).
    private func statusIsStale(_ which: KeyPath<StatusTimes, ContinuousClock.Instant?>) -> Bool {
        statusRecorded.withLock { times in
            guard let last = times[keyPath: which] else { return true }
            return ContinuousClock.now - last >= Self.statusInterval
        }
    }

    // MARK: Push

    /// Pulls, then pushes every journaled change, one commit per batch, retrying when another
    /// device committed first.
    /// - Returns: How many records were pushed.
    @discardableResult
    public func push() async throws -> Int {
        try await push(pullingFirst: true, contended: isContended).pushed
    }

    /// What one push did.
    struct PushRound: Sendable {
        /// Records pushed.
        var pushed = 0
        /// Records applied by the pulls the push made.
        var pulled = 0
        /// Whether a commit lost the race for the head (out of turn).
        var lost = false
        /// The last commit of a turn, landed but not yet recorded locally (see
        /// ``push(pullingFirst:contended:)``).
        var unrecorded: PreparedCommit?

        mutating func add(_ other: PushRound) {
            pushed += other.pushed
            pulled += other.pulled
        }
    }

    /// Pushes every journaled change; pulls first only when asked (``syncNow()`` has just
    /// pulled) and after losing the race for the head: a commit that lands leaves this device's
    /// cursor at the head, so the next batch builds on it without asking the server.
    ///
    /// The first commit races; after a loss the rest waits for this device's turn
    /// (``SyncServer/withPushTurn(_:_:)``), so devices pushing at once take turns instead of
    /// starving one another, and for a second after a loss (`contended`) the device waits for
    /// its turn without racing first. A turn ends as soon as its last commit lands: the next
    /// device's turn runs while this one records the commit in its keychain (a crash before
    /// that finds the commit on the next pull, as after any interrupted push).
    private func push(pullingFirst: Bool, contended: Bool) async throws -> PushRound {
        var round = PushRound(lost: contended)
        if !contended { round = try await pushBatches(pullingFirst: pullingFirst, inTurn: false) }
        if round.lost, let turn = try await pushInTurn() { round.add(turn) }
        if round.pushed == 0, statusIsStale(\.push) {
            try keychain.withSyncTransaction { try Self.recordPush(at: Date(), transaction: $0) }
            statusRecorded.withLock { $0.push = .now }
        }
        return round
    }

    /// Waits for this device's turn and, in it, pulls and pushes until the journal is empty;
    /// then records the last commit. `nil`, with no turn taken, when the journal holds nothing
    /// that can be pushed now (only changes waiting for an unlock).
    private func pushInTurn() async throws -> PushRound? {
        guard try keychain.syncJournal(limit: batchSize).contains(where: { !$0.isLocked }) else { return nil }
        let zone = try context().settings.zoneID
        let turn = try await server.withPushTurn(zone) {
            try await pushBatches(pullingFirst: true, inTurn: true)
        }
        if let landed = turn.unrecorded { try finish(landed, head: landed.head) }
        return turn
    }

    /// Whether this engine lost the race for the head within the last second: it then waits
    /// for its turn at once, instead of racing first (and failing while another device holds
    /// the turn).
    private var isContended: Bool {
        lastLoss.withLock { last in last.map { ContinuousClock.now - $0 < .seconds(1) } ?? false }
    }

    /// Commits journal batches until the journal is empty. Out of turn it stops at the first
    /// lost race (`lost`); in turn it pulls and tries again, racing only first attempts of
    /// devices not yet in the queue, and leaves a last commit that emptied the journal for
    /// the caller to record (`unrecorded`) once the turn has ended.
    private func pushBatches(pullingFirst: Bool, inTurn: Bool) async throws -> PushRound {
        var round = PushRound()
        var losses = 0
        var needsPull = pullingFirst
        while true {
            if needsPull { round.pulled += try await pull() }
            needsPull = false
            let read = try keychain.syncJournal(limit: batchSize)
            let journal = read.filter { !$0.isLocked }
            guard !journal.isEmpty else { break }
            let context = try context()
            let entries = try heldBack(journal, context: context)
            guard !entries.isEmpty else { break }
            let prepared = try prepareCommit(entries, context: context)
            if prepared.records.isEmpty {
                try finish(prepared, head: nil)
                continue
            }
            switch try await server.push(prepared.commit) {
            case .committed, .alreadyCommitted:
                round.pushed += prepared.records.count
                losses = 0
                if inTurn, read.count < batchSize {
                    // Everything pushable was in this commit.
                    round.unrecorded = prepared
                    return round
                }
                try finish(prepared, head: prepared.head)
            case .staleHead:
                lastLoss.withLock { $0 = .now }
                guard inTurn else {
                    round.lost = true
                    return round
                }
                losses += 1
                guard losses < 20 else { throw SyncError(.conflict, "the zone kept moving; try again later") }
                needsPull = true
            }
        }
        return round
    }

    /// The entries that can be pushed now: those of a record that waits for an unlock stay in
    /// the journal until it is applied, so that the local change and the waiting one are
    /// decided by their clocks, as they would have been had the record been applied at once.
    private func heldBack(_ entries: [SyncJournalEntry], context: Context) throws -> [SyncJournalEntry] {
        let waiting = try keychain.readSyncTables { try LocalSyncStore.waitingRecordIDs($0) }
        guard !waiting.isEmpty else { return entries }
        let keys = try context.secrets.currentZoneKeys()
        return try entries.filter { entry in
            if let item = entry.item, item.belongsInSyncSet,
                waiting.contains(keys.recordID(itemClass: item.itemClass.rawValue, primaryKey: item.syncPrimaryKey))
            {
                return false
            }
            let mirrored = try keychain.readSyncTables { try LocalSyncStore.mirror(item: entry.row, $0) }
            return !mirrored.contains { waiting.contains($0.recordID) }
        }
    }

    /// A commit built from journal entries, with what to record locally once it lands.
    struct PreparedCommit: Sendable {
        var commit: Commit
        var head: SignedHead
        var records: [ServerRecord]
        var mirror: [MirrorRow]
        var done: [(row: Int64, clock: UInt64)]
    }

    private func prepareCommit(_ entries: [SyncJournalEntry], context: Context) throws -> PreparedCommit {
        let keys = try context.secrets.currentZoneKeys()
        var records: [RecordID: (ServerRecord, MirrorRow)] = [:]
        var done: [(row: Int64, clock: UInt64)] = []
        for entry in entries {
            done.append((entry.row, entry.clock))
            let clock = HybridLogicalClock(rawValue: entry.clock)
            let mirrored = try keychain.readSyncTables { try LocalSyncStore.mirror(item: entry.row, $0) }
            var keep: RecordID?
            if let item = entry.item, item.belongsInSyncSet {
                let id = keys.recordID(itemClass: item.itemClass.rawValue, primaryKey: item.syncPrimaryKey)
                records[id] = try seal(
                    item, recordID: id, tombstone: false, clock: clock, row: entry.row, keys: keys, context: context)
                keep = id
            }
            // Every record this row stood for that it no longer matches is deleted (a primary
            // key change, leaving the sync set, a deletion).
            for old in mirrored where old.recordID != keep && !old.tombstone && records[old.recordID] == nil {
                guard let primaryKey = try primaryKeyItem(of: old, entry: entry) else { continue }
                records[old.recordID] = try seal(
                    primaryKey, recordID: old.recordID, tombstone: true, clock: clock, row: nil, keys: keys,
                    context: context)
            }
        }
        let changes = records.mapValues { entry -> Data? in
            entry.0.tombstone ? nil : RecordCodec.blobHash(entry.0.blob)
        }
        let stateDigest = try keychain.readSyncTables { try liveSet.digest(overlaying: changes, $0) }
        let head = Head(
            zone: context.settings.zoneID, seq: context.cursor.seq + 1,
            previousHash: context.cursor.headHash ?? Data(count: 32), stateDigest: stateDigest,
            rosterEpoch: context.settings.rosterEpoch, keyEpoch: keys.epoch, commitID: UUID(),
            author: context.settings.deviceID, time: HybridLogicalClock.wallClock())
        let signed = try SignedHead.sign(head, with: try context.secrets.signing)
        let sorted = records.values.sorted { $0.0.recordID < $1.0.recordID }
        let commit = Commit(
            zone: context.settings.zoneID, expectedSeq: context.cursor.seq, head: signed.serverHead,
            records: sorted.map(\.0))
        return PreparedCommit(
            commit: commit, head: signed, records: sorted.map(\.0),
            mirror: sorted.map {
                var row = $0.1; row.seq = head.seq; return row
            }, done: done)
    }

    /// The primary key a deletion of `old` sends: the row's own tombstone when it has one,
    /// else the sealed copy the mirror kept.
    private func primaryKeyItem(of old: MirrorRow, entry: SyncJournalEntry) throws -> Item? {
        if let item = entry.item, item.attributes[.tombstone] != nil { return Self.primaryKeyItem(item) }
        guard let sealed = old.sealedPrimaryKey else { return nil }
        return try Item(syncPayload: try keychain.openSyncSecret(sealed, name: "sync.primary-key"))
    }

    private func seal(
        _ item: Item, recordID: RecordID, tombstone: Bool, clock: HybridLogicalClock, row: Int64?, keys: ZoneKeys,
        context: Context
    ) throws -> (ServerRecord, MirrorRow) {
        let classKey = try keys.classKey(for: tombstone ? nil : item)
        let header = RecordHeader(
            zone: context.settings.zoneID, recordID: recordID, keyID: classKey.id, tombstone: tombstone,
            hlc: clock, author: context.settings.deviceID)
        let payload = tombstone ? Self.primaryKeyItem(item).syncPayload : item.syncPayload
        let blob = try RecordCodec.seal(payload: payload, header: header, classKey: classKey.key)
        let record = ServerRecord(recordID: recordID, seq: 0, keyID: classKey.id, tombstone: tombstone, blob: blob)
        let mirror = MirrorRow(
            recordID: recordID, seq: 0, hlc: clock, author: context.settings.deviceID, tombstone: tombstone,
            blobHash: RecordCodec.blobHash(blob), item: row,
            sealedPrimaryKey: try keychain.sealSyncSecret(
                Self.primaryKeyItem(item).syncPayload, name: "sync.primary-key"))
        return (record, mirror)
    }

    /// Records a landed commit: the mirror, the cursor, and the journal entries it carried.
    private func finish(_ prepared: PreparedCommit, head: SignedHead?) throws {
        try keychain.withSyncTransaction { transaction in
            for entry in prepared.done { try transaction.removeJournalEntry(row: entry.row, clock: entry.clock) }
            // A pull that ran since the commit landed (another process's `sync now`) has
            // applied it, and maybe later ones: the mirror and the cursor are already past it.
            if let head, try LocalSyncStore.cursor(transaction.database).seq >= head.head.seq { return }
            for row in prepared.mirror { try LocalSyncStore.setMirror(row, transaction.database) }
            try LocalSyncStore.pruneMirrorLog(transaction.database)
            if let head {
                try LocalSyncStore.setCursor(SyncCursor(seq: head.head.seq, headHash: head.hash), transaction.database)
                try Self.recordPush(at: Date(), transaction: transaction)
            }
        }
        if head != nil { statusRecorded.withLock { $0.push = .now } }
    }

    /// Writes the time of a push for `sync status`.
    private static func recordPush(at date: Date, transaction: SyncTransaction) throws {
        guard var settings = try LocalSyncStore.configuration(transaction.database) else { return }
        settings.lastPush = date
        try LocalSyncStore.setConfiguration(settings, transaction.database)
    }

    // MARK: Both

    /// One push and pull: what `security sync now` does, and each round of keychaind's runner.
    ///
    /// It ends with an acknowledgement (``acknowledge()``) the first time, and then when the
    /// cursor moved and ``acknowledgementInterval`` has passed since the last one: the
    /// acknowledgement is a write of its own, which a device syncing many times a second need
    /// not make each time.
    /// - Returns: How many records were pushed and pulled.
    public func syncNow() async throws -> (pushed: Int, pulled: Int) {
        // A device that lost the race for the head a moment ago waits for its turn at once and
        // pulls in it: a pull before it would be stale by then.
        let contended = isContended
        var round: PushRound
        if contended, let turn = try await pushInTurn() {
            round = turn
        } else {
            round = PushRound(pulled: try await pull())
            round.add(try await push(pullingFirst: false, contended: contended))
        }
        if try acknowledgementIsDue() { try await acknowledge() }
        return (round.pushed, round.pulled)
    }

    /// Whether ``syncNow()`` should acknowledge: never yet, or the cursor moved and the
    /// interval passed.
    private func acknowledgementIsDue() throws -> Bool {
        let seq = try keychain.readSyncTables { try LocalSyncStore.cursor($0) }.seq
        return lastAcknowledgement.withLock { last in
            guard let last else { return true }
            return last.seq != seq && ContinuousClock.now - last.time >= acknowledgementInterval
        }
    }

    /// Tells the server how far this device has verified and applied the log, which lets it collect
    /// the tombstones and heads no device needs any more (docs/sync.md, "Tombstones and heads on
    /// the server").
    /// - Returns: How many tombstones the server purged.
    @discardableResult
    public func acknowledge() async throws -> Int {
        let context = try context()
        guard context.cursor.headHash != nil else { return 0 }
        let purged = try await server.acknowledge(context.settings.zoneID, seq: context.cursor.seq)
        lastAcknowledgement.withLock { $0 = (context.cursor.seq, ContinuousClock.now) }
        return purged
    }
}

extension ZoneKeys {
    /// The class key an item's record is sealed under: class A for when-unlocked items, class C
    /// for the rest (and for deletions, which carry no secret).
    func classKey(for item: Item?) throws -> ClassKey {
        let keyClass: KeyClass = item?.accessibility?.protectionClass == .whenUnlocked ? .a : .c
        guard let key = classKeys[keyClass] else {
            throw SyncError(.unknownKey, "the zone has no class \(keyClass) key")
        }
        return key
    }
}

// MARK: - Head regression

extension SyncEngine {
    /// Whether the server's log no longer holds this device's last verified head (docs/sync.md, "A
    /// server that lost the end of the log"): it ends before it, ends at its sequence number with
    /// another head, or goes on from a head that does not chain from it (the log was rewound, then
    /// written again by a device that repaired it first).
    func isRewound(_ batch: PullBatch, context: Context) -> Bool {
        guard let verified = context.cursor.headHash else { return false }
        if batch.headSeq < context.cursor.seq { return true }
        if batch.headSeq == context.cursor.seq { return batch.headHash.map { $0 != verified } ?? false }
        guard let first = batch.heads.first, first.seq == context.cursor.seq + 1,
            let head = try? SignedHead(decoding: first, zone: context.settings.zoneID)
        else { return false }
        return head.head.previousHash != verified
    }

    /// Repairs a head regression: the server lost the end of the log (a restored backup, a
    /// failover to a replica that lagged). Verifies the server's log and live set from scratch
    /// (every head signed by a device of the roster, chained, the live set matching the last
    /// head's signed digest), then record by record:
    /// - what the server holds newer than this device's mirror (or the same clock: a version
    ///   another device wrote back first) is applied as a pull applies it;
    /// - what this device had seen newer than the server now holds (or the server lost) is
    ///   journaled again at the clock it had, so the next push writes it back, sealed by this
    ///   device, from the local item;
    /// and the cursor moves to the server's head. The mirror then is the server's live set, so
    /// the next push's digest is the server's.
    /// - Returns: How many records were applied.
    /// - Throws: `.tampered` or `.forked` when the server's log fails verification.
    func repairRegression(context: inout Context) async throws -> Int {
        let zone = context.settings.zoneID
        let batch = try await server.pull(zone, after: 0)
        let heads = try batch.heads.map { try SignedHead(decoding: $0, zone: zone) }
        if let epoch = heads.map(\.head.rosterEpoch).max(), epoch > context.settings.rosterEpoch {
            try await refreshMembership(context: &context, neededEpoch: epoch)
        }
        guard let last = heads.last, last.head.seq == batch.headSeq else {
            throw SyncError(.tampered, "the server's log does not end at its head")
        }
        try SignedHead.verifyChain(from: nil, heads: heads, signers: context.signers)
        var serverLive: [RecordID: Data] = [:]
        for record in batch.records where !record.tombstone {
            serverLive[record.recordID] = RecordCodec.blobHash(record.blob)
        }
        guard StateDigest.compute(serverLive) == last.head.stateDigest else {
            throw SyncError(.tampered, "the zone's records do not match the state its head signs")
        }
        let mirror = try keychain.readSyncTables { try LocalSyncStore.allMirror($0) }
        var take: [ServerRecord] = []
        var same: [(ServerRecord, MirrorRow)] = []
        var writeBack: [(server: (ServerRecord, RecordHeader)?, known: MirrorRow)] = []
        for record in batch.records {
            guard let known = mirror[record.recordID] else {
                take.append(record)
                continue
            }
            let header = try RecordCodec.header(of: record, zone: zone)
            if RecordCodec.blobHash(record.blob) == known.blobHash {
                same.append((record, known))
            } else if header.hlc < known.hlc, known.item != nil {
                writeBack.append(((record, header), known))
            } else {
                take.append(record)
            }
        }
        let onServer = Set(batch.records.map(\.recordID))
        var lost: [MirrorRow] = []
        for known in mirror.values where !known.tombstone && !onServer.contains(known.recordID) {
            if known.item != nil { writeBack.append((nil, known)) } else { lost.append(known) }
        }
        let incoming = try openRecords(take, heads: heads, context: context, unlocked: !keychain.isLocked)
        let applied = try keychain.withSyncTransaction { transaction in
            let db = transaction.database
            try LocalSyncStore.migrate(db)
            for (record, known) in same {
                var row = known
                row.seq = record.seq
                try LocalSyncStore.setMirror(row, db)
            }
            for (current, known) in writeBack {
                // The mirror says what the server holds now; the journal, what to write back.
                var row = known
                if let current {
                    let (record, header) = current
                    row = MirrorRow(
                        recordID: known.recordID, seq: record.seq, hlc: header.hlc, author: header.author,
                        tombstone: record.tombstone, blobHash: RecordCodec.blobHash(record.blob), item: known.item,
                        sealedPrimaryKey: known.sealedPrimaryKey)
                } else {
                    row.tombstone = true
                }
                try LocalSyncStore.setMirror(row, db)
                if let item = known.item { try transaction.rejournal(row: item, clock: known.hlc.rawValue) }
            }
            for known in lost {
                var row = known
                row.tombstone = true
                try LocalSyncStore.setMirror(row, db)
            }
            let applied = try applyIncoming(incoming, transaction: transaction, context: context)
            try LocalSyncStore.setCursor(SyncCursor(seq: last.head.seq, headHash: last.hash), db)
            var settings = try LocalSyncStore.configuration(db) ?? context.settings
            settings.lastPull = Date()
            settings.rollbacksRepaired = (settings.rollbacksRepaired ?? 0) + 1
            try LocalSyncStore.setConfiguration(settings, db)
            return applied
        }
        context = try self.context()
        return applied
    }
}

/// The last decoded value of each type, kept with the bytes it came from: a sync round reads
/// the settings, the roster and the secrets several times, and JSON decoding them was a sixth
/// of its CPU.
final class DecodedValues: Sendable {
    private let entries = Mutex<[ObjectIdentifier: (bytes: Data, value: any Sendable)]>([:])

    /// `T` decoded from `bytes`, or the value `cache` decoded last time from the same bytes.
    static func decode<T: Decodable & Sendable>(_ type: T.Type, from bytes: Data, reusing cache: DecodedValues?)
        throws -> T
    {
        let key = ObjectIdentifier(type)
        if let entry = cache?.entries.withLock({ $0[key] }), entry.bytes == bytes, let value = entry.value as? T {
            return value
        }
        let value = try JSONDecoder().decode(T.self, from: bytes)
        cache?.entries.withLock { $0[key] = (bytes, value) }
        return value
    }
}
