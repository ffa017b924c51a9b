import Crypto
import Foundation
import GRDB

extension KeychainDatabase {
    /// Replaces every key of the keychain with new random ones and re-seals every item under
    /// them, in one transaction; optionally changes the password at the same time.
    ///
    /// A password change alone rewraps the keys but keeps them, so an old copy of the header
    /// and the old password still open items added later. Rotation is the remedy: afterwards no
    /// old header, old password or old key opens anything written since, and every item's
    /// sealed blobs and keyed hashes are new. A crash leaves the keychain entirely before or
    /// entirely after (SQLite's transaction). Other handles on the file, in this process or
    /// another, must unlock again.
    /// - Parameters:
    ///   - password: The current password's bytes; `nil` for a password-less keychain.
    ///   - newPassword: The password afterwards; `nil` keeps the current one (a password-less
    ///     keychain stays password-less).
    /// - Throws: `.authFailed` for a wrong password, or on a machine whose device key does not
    ///   open the this-device-only keys; `.decode` when a row fails authentication (nothing is
    ///   changed then).
    public func rotateKeys(password: Data?, newPassword: Data? = nil) throws {
        try replaceKeys(password: password, newPassword: newPassword ?? password, rotating: true)
    }

    /// Rotates the keys, with passwords given as text (their UTF-8 bytes); see
    /// ``rotateKeys(password:newPassword:)-(Data?,Data?)``.
    @_disfavoredOverload
    public func rotateKeys(password: String?, newPassword: String? = nil) throws {
        try rotateKeys(password: password.map { Data($0.utf8) }, newPassword: newPassword.map { Data($0.utf8) })
    }

    /// Rewraps (and with `rotating`, replaces) every key for `newPassword`, in one transaction.
    func replaceKeys(
        password: Data?, newPassword: Data?, rotating: Bool, sealing: SealingDemand = .whereConfigured
    ) throws {
        var committed: (Header, [KeyName: SymmetricKey])?
        try Self.run {
            try writer.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    let meta = try Storage.meta(db)
                    let current = try Header(meta: meta)
                    let old = try unwrapEveryKey(meta, header: current, password: password)
                    let keys = rotating ? KeyName.freshKeys() : old
                    if rotating { try resealEveryRow(db, from: old, to: keys, layout: current.indexLayout) }
                    let next = try storeHeader(
                        db, keys: keys, newPassword: newPassword, current: current, sealing: sealing,
                        keepsRecoveryKey: !rotating)
                    committed = (next, keys)
                    return .commit
                }
            }
        }
        guard let (next, keys) = committed else { return }
        header.withLock { $0 = next }
        if rotating { keys.withUnlockedState(self.keys) }
    }

    /// Re-seals every row (items and tombstones) from the keys `old` to the keys `new`:
    /// attributes and secret under the new class key, access-group, sync and primary-key tags
    /// and tag rows under the new index key. Row ids and persistent references stay.
    private func resealEveryRow(
        _ db: Database, from old: [KeyName: SymmetricKey], to new: [KeyName: SymmetricKey], layout: IndexLayout
    ) throws {
        let before = old.state(layout: layout)
        let after = new.state(layout: layout)
        guard let oldTagger = before.indexTagger, let newTagger = after.indexTagger else {
            throw KeychainError(.internalComponent, "the index key is missing")
        }
        let reader = RowCodec(database: self, state: before, tagger: oldTagger)
        let writer = RowCodec(database: self, state: after, tagger: newTagger)
        var rows: [StoredRow] = []
        try db.forEachRow("SELECT \(StoredRow.columns(includeData: true)) FROM items i", []) {
            rows.append(try StoredRow($0))
        }
        try db.execute(sql: "DELETE FROM tags")
        for stored in rows {
            let (attributes, data) = try reader.unseal(stored)
            let schema = ItemSchema.of(stored.itemClass)
            let tags = attributes.flatMap { name, value in
                schema.indexedAttributes[name].map { spec in
                    newTagger.tags(schema.itemClass, spec, value).map { AttributeTag(name: name, tag: $0) }
                } ?? []
            }
            let row = try writer.seal(
                itemClass: stored.itemClass, uuid: stored.uuid, attributes: attributes, data: data,
                tombstone: stored.tombstone, primaryKeyTag: newTagger.primaryKeyTag(schema, attributes, tags: tags))
            let rowAttributes = schema.tagRowAttributes(layout)
            let tagRows = tags.compactMap { rowAttributes[$0.name] != nil ? $0.tag : nil }
            try db.run(
                "UPDATE items SET agrp = ?, sync = ?, pk = ?, attributes = ?, data = ?, tags = ? WHERE id = ?",
                [
                    row.groupTag.databaseValue, row.syncTag.databaseValue, row.primaryKeyTag.databaseValue,
                    row.attributes.databaseValue, row.data.databaseValue, Self.tagList(tagRows).databaseValue,
                    stored.id.databaseValue,
                ])
            try insertTags(tagRows, of: stored.id, db: db)
        }
    }
}

extension Dictionary where Key == KeyName, Value == SymmetricKey {
    /// A key-ring state holding these keys.
    fileprivate func state(layout: IndexLayout) -> KeyRing.State {
        var state = KeyRing.State(layout: layout, groups: [])
        state.install(self)
        return state
    }

    /// Puts these keys in `ring`, unlocked (the caller has just proven the password).
    func withUnlockedState(_ ring: KeyRing) {
        ring.modify { state in
            state.classKeys = [:]
            state.install(self)
            state.isUnlocked = true
            state.hasBeenUnlocked = true
        }
    }
}
