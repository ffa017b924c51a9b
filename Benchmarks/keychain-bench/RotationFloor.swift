import Crypto
import Foundation
import GRDB
import KeychainCore

/// The floor of a key rotation: the same rewrite of the same file done with nothing but
/// swift-crypto's own AES-GCM calls and plain SQL through GRDB.
///
/// A rotation opens and re-seals every row's attributes and secret and rewrites its index
/// columns and tag rows, in one transaction. The floor works on a copy of the keychain
/// configured as a keychain's writer (WAL, `synchronous = FULL`, `secure_delete`, the writer's
/// cache): in one immediate transaction it deletes the tag rows, then for every row seals and
/// opens a plaintext of each blob's size under a fresh key (one AES-GCM seal and one open per
/// blob, as a rotation does), updates the row with blobs and index values of the same sizes,
/// and inserts as many tag rows as it had. What the rotation adds on top is its own work:
/// attribute coding, keyed hashes for every index value, checking each row's associated data.
enum RotationFloor {
    /// Times `repetitions` floor rewrites of a copy of the keychain at `path`.
    static func measure(keychainPath path: String, scratch: String, repetitions: Int) throws -> Summary {
        let copy = scratch + "/rotation-floor.sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy + suffix) }
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy + suffix) } }
        let pool = try DatabasePool(path: copy, configuration: SQLiteBaseline.configuration())
        try pool.writeWithoutTransaction(configureKeychainWriter)
        var samples: [UInt64] = []
        for _ in 0..<repetitions {
            samples.append(try Clock.time { try rewrite(pool) })
        }
        return Summary(nanoseconds: samples)
    }

    private struct Shape {
        var id: Int64
        var attributes: Int
        var data: Int?
        var index: [Data]
        var tags: Data
    }

    /// Other bytes of the same length (an index value rewritten under a new key).
    private static func changed(_ value: Data) -> Data {
        var value = value
        if !value.isEmpty { value[value.startIndex] ^= 0x5A }
        return value
    }

    private static func rewrite(_ pool: DatabasePool) throws {
        let key = SymmetricKey(size: .bits256)
        try pool.write { db in
            let shapes = try Row.fetchAll(db, sql: "SELECT id, attributes, data, agrp, sync, pk, tags FROM items").map {
                row -> Shape in
                Shape(
                    id: row["id"], attributes: (row["attributes"] as Data).count, data: (row["data"] as Data?)?.count,
                    index: [row["agrp"], row["sync"], row["pk"]], tags: row["tags"])
            }
            try db.execute(sql: "DELETE FROM tags")
            let update = try db.cachedStatement(
                sql: "UPDATE items SET agrp = ?, sync = ?, pk = ?, attributes = ?, data = ?, tags = ? WHERE id = ?")
            let insertTag = try db.cachedStatement(sql: "INSERT INTO tags(tag, item) VALUES (?, ?)")
            for shape in shapes {
                let attributes = try resealed(size: shape.attributes, key: key)
                let data = try shape.data.map { try resealed(size: $0, key: key) }
                let tags = stride(from: 0, to: shape.tags.count, by: 16).map {
                    changed(shape.tags.subdata(in: $0..<min($0 + 16, shape.tags.count)))
                }
                let index = shape.index.map(changed)
                try update.execute(arguments: [
                    index[0], index[1], index[2], attributes, data, tags.reduce(Data(), +), shape.id,
                ])
                for tag in tags { try insertTag.execute(arguments: [tag, shape.id]) }
            }
        }
    }

    /// A blob of `size` sealed bytes: one AES-GCM seal of the plaintext it would hold, and the
    /// open that checks it.
    private static func resealed(size: Int, key: SymmetricKey) throws -> Data {
        let plaintext = Data(count: max(0, size - 28))
        let sealed = try AES.GCM.seal(plaintext, using: key)
        _ = try AES.GCM.open(sealed, using: key)
        return sealed.combined ?? Data()
    }

}
