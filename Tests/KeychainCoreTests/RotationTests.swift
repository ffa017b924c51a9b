import Foundation
import GRDB
import Testing

@testable import KeychainCore

/// Key rotation: the remedy for an old copy of the header (and the old password) that still
/// opens items added after a plain password change.
@Suite("Key rotation")
struct RotationTests {
    private static let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 9, count: 32)))

    private func item(_ account: String, _ accessibility: Accessibility = .whenUnlocked, sync: Bool = false) -> Item {
        var attributes: Attributes = [
            .account: .string(account), .service: .string("svc"), .label: .string("label-\(account)"),
            .accessible: .string(accessibility.rawValue),
        ]
        if sync { attributes[.synchronizable] = .number(1) }
        return Item(class: .genericPassword, attributes: attributes, data: Data("secret-\(account)".utf8))
    }

    private func secret(_ keychain: KeychainDatabase, _ account: String) throws -> Data? {
        try keychain.findFirst(
            ItemQuery(class: .genericPassword, attributes: [.account: .string(account)]), includeData: true)?.data
    }

    /// The header (every `meta` row) of the file, to put back later as an attacker would.
    private func header(of path: String) throws -> [(String, Data)] {
        try GRDBTestAccess.queue(path).read { db in
            try Row.fetchAll(db, sql: "SELECT name, value FROM meta").map { ($0["name"], $0["value"]) }
        }
    }

    private func restore(_ header: [(String, Data)], into path: String) throws {
        try GRDBTestAccess.queue(path).write { db in
            try db.execute(sql: "DELETE FROM meta")
            for (name, value) in header {
                try db.execute(sql: "INSERT INTO meta(name, value) VALUES (?, ?)", arguments: [name, value])
            }
        }
    }

    @Test("after a plain password change, an old header and the old password open later items (stated in the README)")
    func passwordChangeAloneKeepsTheKeys() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let keychain = try KeychainDatabase.create(at: path, password: "old", configuration: Self.configuration)
        let oldHeader = try header(of: path)
        try keychain.changePassword(old: "old", new: "new")
        try keychain.unlock(password: "new")
        try keychain.add(item("later"))
        try restore(oldHeader, into: path)
        let reopened = try KeychainDatabase.open(at: path, configuration: Self.configuration)
        try reopened.unlock(password: "old")
        #expect(try secret(reopened, "later") == Data("secret-later".utf8))
    }

    @Test("after rotation, an old header and the old password open nothing, old items or later ones")
    func rotationRetiresOldHeaders() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let keychain = try KeychainDatabase.create(at: path, password: "old", configuration: Self.configuration)
        try keychain.unlock(password: "old")
        try keychain.add(item("before"))
        let oldHeader = try header(of: path)
        try keychain.rotateKeys(password: "old", newPassword: "new")
        try keychain.add(item("later"))
        try restore(oldHeader, into: path)
        let reopened = try KeychainDatabase.open(at: path, configuration: Self.configuration)
        try reopened.unlock(password: "old")
        for account in ["before", "later"] {
            // The old index key finds no row (its keyed hashes are gone), and the old class keys
            // open none: never the secret.
            #expect(((try? secret(reopened, account)) ?? nil) == nil, "\(account)")
        }
        #expect(((try? reopened.find(ItemQuery(class: .genericPassword), includeData: true)) ?? []).isEmpty)
    }

    @Test(
        "rotation keeps every item readable and findable, with new sealed blobs and keyed hashes",
        arguments: [false, true])
    func rotationKeepsEveryItem(passwordless: Bool) throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let password: String? = passwordless ? nil : "pw"
        let keychain = try KeychainDatabase.create(at: path, password: password, configuration: Self.configuration)
        try keychain.unlock(password: password)
        var accounts: [String] = []
        for (index, accessibility) in Accessibility.all.enumerated()
        where passwordless == false || accessibility != .whenPasscodeSetThisDeviceOnly {
            try keychain.add(item("a\(index)", accessibility))
            accounts.append("a\(index)")
        }
        try keychain.add(item("gone", sync: true))
        var gone = ItemQuery(class: .genericPassword, attributes: [.account: .string("gone")])
        gone.synchronizable = .any
        _ = try keychain.delete(gone)
        let identities = try keychain.find(ItemQuery(class: .genericPassword)).map(\.persistentID)
        let columns = "SELECT attributes, data, pk, agrp, sync, tags FROM items ORDER BY id"
        let before = try GRDBTestAccess.queue(path).read { try Row.fetchAll($0, sql: columns) }
        let tagRows = try GRDBTestAccess.queue(path).read { try Data.fetchAll($0, sql: "SELECT tag FROM tags") }

        try keychain.rotateKeys(password: password)

        let after = try GRDBTestAccess.queue(path).read { try Row.fetchAll($0, sql: columns) }
        #expect(before.count == after.count)
        for (old, new) in zip(before, after) {
            for column in ["attributes", "pk", "agrp", "sync"] {
                #expect((old[column] as Data?) != (new[column] as Data?), "\(column)")
            }
        }
        let newTags = try GRDBTestAccess.queue(path).read { try Data.fetchAll($0, sql: "SELECT tag FROM tags") }
        #expect(newTags.count == tagRows.count && Set(newTags).isDisjoint(with: tagRows))
        for handle in [keychain, try KeychainDatabase.open(at: path, configuration: Self.configuration)] {
            try handle.unlock(password: password)
            for account in accounts { #expect(try secret(handle, account) == Data("secret-\(account)".utf8)) }
            #expect(try handle.find(ItemQuery(class: .genericPassword)).map(\.persistentID) == identities)
            let byLabel = try handle.find(ItemQuery(class: .genericPassword, attributes: [.label: .string("label-a0")]))
            #expect(byLabel.count == 1)
            var tombstones = ItemQuery(class: .genericPassword, attributes: [.account: .string("gone")])
            tombstones.synchronizable = .any
            tombstones.includesTombstones = true
            #expect(try handle.find(tombstones).count == 1)
            #expect(errorCode { try handle.add(item("a0")) } == .duplicateItem)
        }
    }

    @Test("a wrong password rotates nothing and changes no byte of the items")
    func wrongPasswordRotatesNothing() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let keychain = try KeychainDatabase.create(at: path, password: "pw", configuration: Self.configuration)
        try keychain.unlock(password: "pw")
        try keychain.add(item("a"))
        let read = { try GRDBTestAccess.queue(path).read { try Row.fetchAll($0, sql: "SELECT * FROM items") } }
        let before = try read()
        #expect(errorCode { try keychain.rotateKeys(password: "wrong") } == .authFailed)
        #expect(try read() == before)
        #expect(try secret(keychain, "a") == Data("secret-a".utf8))
    }
}
