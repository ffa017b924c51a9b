import Foundation
import KeychainLibc
import Testing

@testable import KeychainCore

/// Closing a keychain: short-lived processes leave no write-ahead log behind, and the log never
/// grows past its steady size.
@Suite("Closing a keychain and the log's size")
struct CloseTests {
    private func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    @Test(
        "close() folds a log past its limit into the file and empties it; later calls fail cleanly; a second close does nothing"
    )
    func closeRemovesTheLog() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 4, count: 32)))
        let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
        for index in 0..<100 { try keychain.add(genericPassword("a\(index)")) }
        #expect(size(path + "-wal") > keychainLogCloseLimit)
        try keychain.close()
        #expect(size(path + "-wal") == 0)
        // Everything is in the file now: a copy of the file alone holds every item.
        let alone = scratch.file("alone.keychain-db")
        try FileManager.default.copyItem(atPath: path, toPath: alone)
        let items = try KeychainDatabase.open(at: alone, configuration: configuration).find(
            ItemQuery(class: .genericPassword))
        #expect(items.count == 100)
        #expect(errorCode { _ = try keychain.find(ItemQuery(class: .genericPassword)) } == .notAvailable)
        #expect(errorCode { try keychain.add(genericPassword("late")) } == .notAvailable)
        #expect(errorCode { try keychain.unlock(password: nil as Data?) } == .notAvailable)
        try keychain.close()
        let reopened = try KeychainDatabase.open(at: path, configuration: configuration)
        #expect(try reopened.find(ItemQuery(class: .genericPassword)).count == 100)
    }

    @Test("a keychain written by 200 short-lived processes that close it keeps its log under twice the close limit")
    func shortLivedProcessesLeaveNoLog() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let environment = scratch.file("config")
        #expect(try quietWorker(["create", path, "077"], configHome: environment) == 0)
        for index in 0..<200 {
            #expect(
                try quietWorker(["add-close", path, "p\(index)"], configHome: environment) == 0, "process \(index)")
        }
        #expect(size(path + "-wal") <= 2 * keychainLogCloseLimit)
        let keychain = try KeychainDatabase.open(
            at: path, configuration: KeychainConfiguration(deviceKey: .file(at: environment + "/keychain/device-key")))
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == 200)
    }

    @Test("the log is cut back to its limit when SQLite starts it again, however large a transaction made it")
    func logIsCutBackToItsLimit() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let keychain = try KeychainDatabase.create(
            at: path, password: nil, configuration: .testing(deviceKey: .fixed(Data(repeating: 4, count: 32))))
        // One transaction of 4,000 items writes a log far past the limit.
        try keychain.add(
            contentsOf: (0..<4_000).map { genericPassword("bulk\($0)", data: String(repeating: "x", count: 500)) })
        #expect(size(path + "-wal") > keychainLogSizeLimit)
        // Adds after it: a checkpoint folds the log in, the log starts again and is cut back.
        for index in 0..<400 { try keychain.add(genericPassword("after\(index)")) }
        #expect(size(path + "-wal") <= keychainLogSizeLimit)
    }

    /// Runs the worker with its output discarded and returns its exit status. Started with
    /// `posix_spawn` and reaped with `waitpid`: Foundation's `Process`, started 200 times in a
    /// row beside other tests, has crashed libdispatch's signal handling here.
    private func quietWorker(_ arguments: [String], configHome: String) throws -> Int32 {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = configHome
        environment["KEYCHAIN_ACCESS_GROUPS"] = nil
        let argv = ([workerPath] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, workerPath, &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(.ECHILD) }
        }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f
    }
}
