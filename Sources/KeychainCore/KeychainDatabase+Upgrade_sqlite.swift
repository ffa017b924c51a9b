import Foundation
import GRDB

extension KeychainDatabase {
    /// Changes, once in a keychain's life, the attributes of the items of `classes` that
    /// `change` returns new values for; the keychain's header then records `name`, and later
    /// calls with that name change nothing.
    ///
    /// This is for a layer above the engine that starts keeping an attribute its earlier
    /// versions did not: the Secret Service fills in the search terms
    /// (``KeychainModel/AttributeName/searchTerms``) of the D-Bus items stored before it kept them. Every live
    /// item of those classes, in every access group, is offered to `change`, and everything
    /// happens in one transaction: when an item cannot be read (the keychain is locked, a row
    /// fails authentication) nothing changes and nothing is recorded, so a later call tries
    /// again. The changed items keep their modification dates and persistent identities.
    ///
    /// ```swift
    /// try keychain.upgradeItems(named: "example.labels", classes: [.genericPassword]) { item in
    ///     item.attributes[.label] == nil ? [.label: .string("untitled")] : nil
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - name: What the upgrade is, recorded in the header once it is done.
    ///   - classes: The item classes whose items are offered.
    ///   - change: The attributes to set on an item (its secret included, which is never
    ///     changed), or `nil` to leave it as it is. It may not change the primary key.
    /// - Returns: How many items changed (0 when `name` was recorded already).
    /// - Throws: `.interactionNotAllowed` while the keychain is locked, `.decode` for a damaged
    ///   item, `.parameter` for a change of the primary key or a value of the wrong type.
    @discardableResult
    public func upgradeItems(
        named name: String, classes: [ItemClass], _ change: (Item) throws -> Attributes?
    ) throws -> Int {
        let metaName = "upgrade." + name
        if try headerEntry(metaName) != nil { return 0 }
        return try withWriteTransaction { db, state in
            let codec = RowCodec(database: self, state: state, tagger: try Self.tagger(state))
            var changed = 0
            for itemClass in classes where itemClass != .identity {
                let schema = ItemSchema.of(itemClass)
                let rows = try StoredRow.fetchAll(
                    db, "SELECT \(StoredRow.columns(includeData: true)) FROM items i WHERE i.class = ? AND i.tomb = 0",
                    [itemClass.rawValue.databaseValue])
                for row in rows {
                    let (attributes, data) = try codec.unseal(row)
                    var item = Item(class: itemClass, attributes: attributes, data: data)
                    item.persistentID = UUID(bytes: row.uuid)
                    guard let changes = try change(item) else { continue }
                    for (name, value) in try normalize(changes, schema: schema, ignoring: []) {
                        item.attributes[name] = value
                    }
                    guard schema.hasSamePrimaryKey(attributes, item.attributes) else {
                        throw KeychainError.parameter("an upgrade may not change an item's primary key")
                    }
                    item.persistentID = nil
                    try replace(row, old: attributes, with: item, db: db, codec: codec)
                    changed += 1
                }
            }
            try Storage.setMeta(db, metaName, Data([1]))
            return changed
        }
    }
}
