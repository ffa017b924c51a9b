import Foundation
import KeychainCore

/// Brings a database's write-ahead log to its steady size before its writes are timed.
///
/// SQLite appends every commit to the `-wal` file; once the file holds 1,000 pages (the
/// default `wal_autocheckpoint`, which neither the engine nor the floor changes), SQLite
/// copies them into the database and starts again from the beginning of the file, which it
/// does not shrink. Until the file has first reached that size, every commit makes it longer,
/// and `fdatasync` on a file that grew also commits the file system's journal: on this
/// machine's ext4 disk a 3-page append and sync took ~300 µs when the file grew and ~125 µs
/// when it did not. Seeding leaves each database's log at a different size (the keychain is
/// seeded 1,000 items per transaction, the floor in one transaction), so without this step
/// the first timed writes of a phase would pay for growth in one database and not in
/// another, and a keychain in use, whose log has long reached its size, pays for none.
enum WriteAheadLog {
    /// SQLite's default automatic checkpoint threshold, in pages.
    static let checkpointPages = 1_000

    /// The size of a log that holds `checkpointPages` frames of `pageSize`-byte pages: a
    /// 32-byte header, then a 24-byte header and a page per frame.
    static func steadySize(pageSize: Int) -> Int { 32 + checkpointPages * (pageSize + 24) }

    /// The size of the log of the database at `path` (0 when it has none).
    static func size(ofLogOf path: String) -> Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "-wal")
        return (attributes?[.size] as? NSNumber)?.intValue ?? 0
    }

    /// The page size recorded in the header of the database at `path`.
    static func pageSize(of path: String) throws -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw BenchmarkFailure("cannot read the header of \(path)")
        }
        defer { try? handle.close() }
        let header = try handle.read(upToCount: 18) ?? Data()
        guard header.count == 18 else { throw BenchmarkFailure("\(path) has no SQLite header") }
        return sqlitePageSize(header: header)
    }

    /// Runs `write` (one write transaction that leaves the data as it found it) until the log
    /// of the database at `path` has reached its steady size.
    /// - Returns: The number of writes it took.
    @discardableResult
    static func settle(_ path: String, limit: Int = 20_000, write: (Int) throws -> Void) throws -> Int {
        let target = steadySize(pageSize: try pageSize(of: path))
        var writes = 0
        while size(ofLogOf: path) < target {
            guard writes < limit else {
                throw BenchmarkFailure("the log of \(path) did not reach \(target) bytes in \(limit) writes")
            }
            try write(writes)
            writes += 1
        }
        return writes
    }
}
