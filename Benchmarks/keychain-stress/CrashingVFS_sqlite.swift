// A SQLite VFS that wraps the default one and kills the process at a chosen I/O step, to
// crash a keychain operation at each of its writes, syncs, truncations and deletions.
// Installed as the default VFS in a worker process only.

import Foundation
import GRDBSQLite
import KeychainLibc

enum CrashingVFS {
    /// The 1-based step at which to die with SIGKILL; `Int.max` never.
    nonisolated(unsafe) static var crashAt = Int.max
    /// Whether steps are being counted (only during the operation under test).
    nonisolated(unsafe) static var counting = false
    /// Mutating I/O steps seen while counting.
    nonisolated(unsafe) static var steps = 0
    /// What each step was, for the report.
    nonisolated(unsafe) static var log: [String] = []

    nonisolated(unsafe) private static var base: UnsafeMutablePointer<sqlite3_vfs>?
    nonisolated(unsafe) private static var vfs = sqlite3_vfs()
    nonisolated(unsafe) private static var wrappers: [UnsafeRawPointer: UnsafeMutablePointer<sqlite3_io_methods>] = [:]
    nonisolated(unsafe) private static var originals: [UnsafeRawPointer: UnsafePointer<sqlite3_io_methods>] = [:]
    private static let lock = NSLock()

    /// Registers the crashing VFS as the default for every connection opened afterwards.
    static func install() {
        guard base == nil, let found = sqlite3_vfs_find(nil) else { return }
        base = found
        vfs = found.pointee
        vfs.pNext = nil
        vfs.zName = UnsafePointer(strdup("keychain-stress-crashing"))
        vfs.xOpen = { _, name, file, flags, outFlags in
            guard let base = CrashingVFS.base, let open = base.pointee.xOpen else { return SQLITE_ERROR }
            let result = open(base, name, file, flags, outFlags)
            if result == SQLITE_OK, let file, let methods = file.pointee.pMethods {
                file.pointee.pMethods = UnsafePointer(CrashingVFS.wrapper(for: methods))
            }
            return result
        }
        vfs.xDelete = { _, name, syncDirectory in
            CrashingVFS.step(
                "delete \(name.map { String(cString: $0) }.map { ($0 as NSString).lastPathComponent } ?? "?")")
            guard let base = CrashingVFS.base, let delete = base.pointee.xDelete else { return SQLITE_ERROR }
            return delete(base, name, syncDirectory)
        }
        sqlite3_vfs_register(&vfs, 1)
    }

    /// Counts a step, and dies when it is the chosen one.
    static func step(_ what: String) {
        guard counting else { return }
        lock.lock()
        steps += 1
        let current = steps
        log.append(what)
        lock.unlock()
        if current >= crashAt {
            kill(getpid(), SIGKILL)
            while true { pause() }
        }
    }

    private static func original(_ file: UnsafeMutablePointer<sqlite3_file>?) -> UnsafePointer<sqlite3_io_methods>? {
        guard let methods = file?.pointee.pMethods else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return originals[UnsafeRawPointer(methods)]
    }

    private static func wrapper(for methods: UnsafePointer<sqlite3_io_methods>) -> UnsafeMutablePointer<
        sqlite3_io_methods
    > {
        lock.lock()
        defer { lock.unlock() }
        if let existing = wrappers[UnsafeRawPointer(methods)] { return existing }
        let copy = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        copy.initialize(to: methods.pointee)
        copy.pointee.xWrite = { file, buffer, amount, offset in
            CrashingVFS.step("write \(amount) bytes at \(offset)")
            return CrashingVFS.original(file)?.pointee.xWrite?(file, buffer, amount, offset) ?? SQLITE_IOERR
        }
        copy.pointee.xSync = { file, flags in
            CrashingVFS.step("sync")
            return CrashingVFS.original(file)?.pointee.xSync?(file, flags) ?? SQLITE_IOERR
        }
        copy.pointee.xTruncate = { file, size in
            CrashingVFS.step("truncate to \(size)")
            return CrashingVFS.original(file)?.pointee.xTruncate?(file, size) ?? SQLITE_IOERR
        }
        copy.pointee.xFileControl = { file, op, argument in
            if op == SQLITE_FCNTL_SYNC || op == SQLITE_FCNTL_COMMIT_PHASETWO { CrashingVFS.step("file control \(op)") }
            return CrashingVFS.original(file)?.pointee.xFileControl?(file, op, argument) ?? SQLITE_NOTFOUND
        }
        copy.pointee.xClose = { file in
            guard let original = CrashingVFS.original(file) else { return SQLITE_IOERR }
            file?.pointee.pMethods = original
            return original.pointee.xClose?(file) ?? SQLITE_OK
        }
        wrappers[UnsafeRawPointer(methods)] = copy
        originals[UnsafeRawPointer(copy)] = methods
        return copy
    }
}
