import Foundation
import GRDB
import KeychainLibc
import Testing

@testable import KeychainCore

/// Regressions from an outside review of how keychain files and the device key are created,
/// published, deleted and opened: each test is named after what broke.
@Suite("Files: publishing, deleting, the device key and their errors")
struct FileSafetyTests {
    // MARK: Password change across device keys

    @Test("a password change where the device key differs is refused and destroys no this-device-only key")
    func passwordChangeWithAnotherDeviceKeyKeepsDeviceKeys() throws {
        let scratch = try Scratch()
        let path = scratch.file("travels.keychain-db")
        let home = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 1, count: 32)))
        let keychain = try KeychainDatabase.create(at: path, password: "old", configuration: home)
        try keychain.unlock(password: "old")
        for (index, accessibility) in Accessibility.all.enumerated() {
            try keychain.add(deviceItem("item\(index)", accessibility))
        }
        let elsewhere = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 2, count: 32)))
        let moved = try KeychainDatabase.open(at: path, configuration: elsewhere)
        try moved.unlock(password: "old")
        let refusal = try #require(throws: KeychainError.self) { try moved.changePassword(old: "old", new: "new") }
        #expect(refusal.code == .authFailed)
        #expect(refusal.isSetupProblem && refusal.message.contains("device key"))

        let back = try KeychainDatabase.open(at: path, configuration: home)
        try back.unlock(password: "old")
        for index in Accessibility.all.indices {
            let found = try back.find(
                ItemQuery(class: .genericPassword, attributes: [.account: .string("item\(index)")]), includeData: true)
            #expect(found.first?.data == Data("secret-item\(index)".utf8), "item\(index)")
        }
        try back.add(deviceItem("later", .whenUnlockedThisDeviceOnly))
    }

    // MARK: Publishing a new file

    @Test("eight to sixteen processes using a fresh home at once all succeed (device key and keychain races)")
    func firstUseRaceInFreshHome() throws {
        for trial in 0..<4 {
            let scratch = try Scratch()
            let environment = home(scratch)
            let count = 8 + trial * 2
            let start = Date().timeIntervalSince1970 + 0.4
            let workers = try (0..<count).map { index in
                try WorkerProcess(["first-use", "acct\(index)", "\(start)"], environment: environment)
            }
            let results = workers.map { $0.finish() }
            for (index, result) in results.enumerated() {
                #expect(result.status == 0, "trial \(trial), process \(index): \(result.error)")
            }
            let keychain = try KeychainDatabase.open(
                at: scratch.file("data/keychains/login.keychain-db"),
                configuration: KeychainConfiguration(deviceKey: .file(at: scratch.file("config/keychain/device-key"))))
            #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == count, "trial \(trial)")
            #expect(leftovers(in: scratch.file("data/keychains")).isEmpty, "trial \(trial)")
            #expect(leftovers(in: scratch.file("config/keychain")).isEmpty, "trial \(trial)")
        }
    }

    @Test("a creation or deletion killed at each step leaves the keychain whole or gone, never refused")
    func killedAtEveryStepOfCreateAndDelete() throws {
        let strace = try #require(
            ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "strace is needed to kill a process at a chosen system call (.ci/run installs it)")
        let steps = "trace=link,linkat,unlink,unlinkat,rename,renameat,renameat2,fsync,fdatasync,flock"
        for operation in ["create", "delete"] {
            var step = 1
            var survived = false
            while !survived && step < 200 {
                let scratch = try Scratch()
                let environment = home(scratch)
                let path = scratch.file("data/keychains/k.keychain-db")
                let configuration = KeychainConfiguration(
                    deviceKey: .file(at: scratch.file("config/keychain/device-key")))
                if operation == "delete" {
                    let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
                    try keychain.add(deviceItem("kept", .whenUnlocked))
                }
                let result = try WorkerProcess(
                    [
                        "-f", "-qq", "-o", "/dev/null", "-e", steps,
                        "-e", "inject=\(steps.dropFirst("trace=".count)):signal=KILL:when=\(step)",
                        workerPath, operation == "create" ? "create" : "delete", path,
                    ] + (operation == "create" ? ["077"] : []), environment: environment, executable: strace
                ).finish()
                survived = result.status == 0
                try checkWholeOrGone(path, configuration: configuration, operation: operation, step: step)
                step += 1
            }
            #expect(survived, "\(operation): the worker never ran to its end")
            #expect(step > 3, "\(operation): killed at only \(step - 1) steps")
        }
    }

    /// After a kill: the keychain opens with its item, or it is absent and a new one can be made
    /// there (with nothing of the old one replayed into it).
    private func checkWholeOrGone(
        _ path: String, configuration: KeychainConfiguration, operation: String, step: Int
    ) throws {
        let context = Comment(rawValue: "\(operation) killed at step \(step)")
        do {
            let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
            let items = try keychain.find(ItemQuery(class: .genericPassword))
            #expect(items.count == (operation == "delete" ? 1 : 0), context)
        } catch let error as KeychainError where error.code == .noSuchKeychain {
            let fresh = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
            #expect(try fresh.find(ItemQuery(class: .genericPassword)).isEmpty, context)
            try fresh.add(deviceItem("new", .whenUnlocked))
        } catch {
            Issue.record(error, context)
        }
    }

    @Test("what a killed creation or deletion left beside the name is cleaned up by the next creation")
    func staleTemporariesAreRemoved() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let configuration = KeychainConfiguration.testing()
        let dead = deadProcessID()
        let stale = [".k.keychain-db.\(dead).7.tmp", ".k.keychain-db.\(dead).7.tmp-journal"]
        for name in stale { FileManager.default.createFile(atPath: scratch.file(name), contents: Data("x".utf8)) }
        FileManager.default.createFile(atPath: path + "-wal", contents: Data(repeating: 0xAB, count: 4096))
        let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
        try keychain.add(deviceItem("a", .whenUnlocked))
        for name in stale { #expect(!FileManager.default.fileExists(atPath: scratch.file(name)), "\(name)") }
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == 1)
    }

    @Test("a file left with a second (temporary) name by a publish killed after link() opens again")
    func interruptedLinkPublishIsRecovered() throws {
        let scratch = try Scratch()
        let path = scratch.file("k.keychain-db")
        let configuration = KeychainConfiguration.testing()
        do {
            let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
            try keychain.add(deviceItem("a", .whenUnlocked))
        }
        let second = scratch.file(".k.keychain-db.\(deadProcessID()).9.tmp")
        #expect(link(path, second) == 0)
        let reopened = try KeychainDatabase.open(at: path, configuration: configuration)
        #expect(try reopened.find(ItemQuery(class: .genericPassword)).count == 1)
        #expect(!FileManager.default.fileExists(atPath: second))
        // A second name that is not ours is still refused.
        #expect(link(path, scratch.file("elsewhere")) == 0)
        #expect(errorCode { _ = try KeychainDatabase.open(at: path, configuration: configuration) } == .invalidKeychain)
    }

    @Test(
        "opening a second handle on a keychain this process has open keeps SQLite's locks (another process stays out)")
    func secondHandleKeepsTheFirstHandlesLocks() throws {
        let scratch = try Scratch()
        let configHome = scratch.file("config")
        #expect(try runWorker(["create", scratch.file("k.keychain-db"), "077"], configHome: configHome).status == 0)
        let path = scratch.file("k.keychain-db")
        let configuration = KeychainConfiguration(deviceKey: .file(at: configHome + "/keychain/device-key"))
        let first = try KeychainDatabase.open(at: path, configuration: configuration)
        try first.add(deviceItem("a", .whenUnlocked))
        try first.writer.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")  // SQLite's write lock, a POSIX lock on the -shm file
            defer { try? db.execute(sql: "ROLLBACK") }
            // Reading the -shm or the file through a descriptor of our own, then closing it, would
            // drop that lock for the whole process.
            let second = try KeychainDatabase.open(at: path, configuration: configuration)
            withExtendedLifetime(second) {}
            #expect(try runWorker(["try-add", path, "intruder"], configHome: configHome).output == "busy\n")
        }
        #expect(try runWorker(["try-add", path, "later"], configHome: configHome).output == "added\n")
    }

    // MARK: The device key

    @Test("the device key is never re-created while a keychain made with another exists; the error names the file")
    func missingDeviceKeyIsNotRecreated() throws {
        let scratch = try Scratch()
        var environment = home(scratch)
        #expect(try WorkerProcess(["first-use", "a", "0"], environment: environment).finish().status == 0)
        environment["XDG_CONFIG_HOME"] = scratch.file("elsewhere")
        let result = try WorkerProcess(["first-use", "b", "0"], environment: environment).finish()
        #expect(result.status == 1)
        #expect(result.error.contains(scratch.file("elsewhere/keychain/device-key")))
        #expect(result.error.contains("missing"))
        #expect(!result.error.contains("password"))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("elsewhere/keychain/device-key")))
    }

    @Test("a password keychain whose device key file is missing opens with its password and creates no key")
    func passwordKeychainOpensWithoutDeviceKeyFile() throws {
        let scratch = try Scratch()
        let path = scratch.file("pw.keychain-db")
        var configuration = KeychainConfiguration.testing(deviceKey: .file(at: scratch.file("key-a")))
        let keychain = try KeychainDatabase.create(at: path, password: "pw", configuration: configuration)
        try keychain.unlock(password: "pw")
        try keychain.add(deviceItem("a", .whenUnlocked))
        configuration.deviceKey = .file(at: scratch.file("missing-key"))
        let moved = try KeychainDatabase.open(at: path, configuration: configuration)
        try moved.unlock(password: "pw")
        #expect(try moved.find(ItemQuery(class: .genericPassword)).count == 1)
        #expect(!FileManager.default.fileExists(atPath: scratch.file("missing-key")))
        let passwordless = scratch.file("plain.keychain-db")
        configuration.deviceKey = .file(at: scratch.file("key-a"))
        _ = try KeychainDatabase.create(at: passwordless, password: nil, configuration: configuration)
        configuration.deviceKey = .file(at: scratch.file("missing-key"))
        let error = try #require(throws: KeychainError.self) {
            _ = try KeychainDatabase.open(at: passwordless, configuration: configuration)
        }
        #expect(error.isSetupProblem && error.message.contains(scratch.file("missing-key")))
        #expect(error.code != .authFailed)
    }

    // MARK: Directories and errors

    @Test(
        "a keychains or configuration directory other users can write to is refused", arguments: [0o777, 0o770, 0o702])
    func permissiveDirectoryIsRefused(mode: Int) throws {
        let scratch = try Scratch()
        let directory = scratch.file("keychains")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        chmod(directory, mode_t(mode))
        let error = try #require(throws: KeychainError.self) {
            _ = try KeychainDatabase.create(at: directory + "/k.keychain-db", password: nil, configuration: .testing())
        }
        #expect(error.isSetupProblem && error.message.contains("chmod go-w \(directory)"))
        let keyError = try #require(throws: KeychainError.self) {
            _ = try KeychainDatabase.inMemory(configuration: .testing(deviceKey: .file(at: directory + "/device-key")))
        }
        #expect(keyError.message.contains("chmod go-w"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/device-key"))
        chmod(directory, 0o700)
        _ = try KeychainDatabase.create(at: directory + "/k.keychain-db", password: nil, configuration: .testing())
    }

    @Test("a keychain held by another writer fails with errSecDatabaseLocked, not 'no keychain is available'")
    func busyKeychainSaysSo() throws {
        let scratch = try Scratch()
        let path = scratch.file("busy.keychain-db")
        var configuration = KeychainConfiguration.testing()
        configuration.busyTimeout = 0.2
        let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
        let holder = try DatabaseQueue(path: path)
        try holder.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            let error = try #require(throws: KeychainError.self) { try keychain.add(deviceItem("a", .whenUnlocked)) }
            #expect(error.code == .databaseLocked)
            #expect(error.osStatus == -67869)
            #expect(error.isSetupProblem)
            try db.execute(sql: "ROLLBACK")
        }
        try keychain.add(deviceItem("a", .whenUnlocked))
    }

    @Test("a keychain on a read-only file system without -wal/-shm opens for reading")
    func readOnlyFileSystemKeychainOpensForReading() throws {
        let scratch = try Scratch()
        let mountPoint = scratch.file("ro")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        #expect(run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mountPoint]) == 0)
        defer { _ = run("/bin/umount", ["-l", mountPoint]) }
        let path = mountPoint + "/k.keychain-db"
        let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 3, count: 32)))
        do {
            let keychain = try KeychainDatabase.create(at: path, password: nil, configuration: configuration)
            try keychain.add(deviceItem("a", .whenUnlocked))
        }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(run("/bin/mount", ["-o", "remount,ro", mountPoint]) == 0)
        let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
        let found = try keychain.find(ItemQuery(class: .genericPassword), includeData: true)
        #expect(found.map(\.data) == [Data("secret-a".utf8)])
        #expect(errorCode { try keychain.add(deviceItem("b", .whenUnlocked)) } == .readOnly)
    }

    // MARK: Helpers

    private func deviceItem(_ account: String, _ accessibility: Accessibility) -> Item {
        Item(
            class: .genericPassword,
            attributes: [
                .account: .string(account), .service: .string("files"), .accessible: .string(accessibility.rawValue),
            ],
            data: Data("secret-\(account)".utf8))
    }

    private func home(_ scratch: Scratch) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_DATA_HOME"] = scratch.file("data")
        environment["XDG_CONFIG_HOME"] = scratch.file("config")
        environment["KEYCHAIN_DEFAULT_PATH"] = nil
        environment["KEYCHAIN_ACCESS_GROUPS"] = nil
        return environment
    }

    private func leftovers(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".tmp") }
    }

    /// A process id that no process has now.
    private func deadProcessID() -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try? process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    private func run(_ executable: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// The test worker (or another executable) started with a given environment, its standard
/// error kept for messages.
private struct WorkerProcess {
    let process = Process()
    let errors = Pipe()

    init(_ arguments: [String], environment: [String: String], executable: String = workerPath) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
    }

    func finish() -> (status: Int32, error: String) {
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
