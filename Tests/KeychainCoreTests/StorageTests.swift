import Foundation
import GRDB
@testable import KeychainCore
import KeychainLibc
import Testing

/// Every file SQLite may keep for a keychain.
private func keychainFiles(_ path: String) -> [String] {
    ["", "-wal", "-shm", "-journal"].map { path + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
}

private func filesContain(_ path: String, _ needles: [Data]) -> [String] {
    keychainFiles(path).flatMap { file -> [String] in
        guard let contents = FileManager.default.contents(atPath: file) else { return [] }
        return needles.filter { contents.range(of: $0) != nil }.map {
            "\(file): \(String(decoding: $0, as: UTF8.self))"
        }
    }
}

private func mode(_ path: String) -> mode_t {
    var info = stat()
    lstat(path, &info)
    return info.st_mode & 0o777
}

@Suite("Storage: confidentiality, files, processes and crashes")
struct StorageTests {
    @Test("no canary secret or attribute value reaches any file of the keychain, before or after deletes")
    func noPlaintextOnDisk() throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        var canaries: [Data] = []
        for index in 0..<40 {
            let token = "CANARY\(index)x\(UInt32.random(in: 100_000...999_999))"
            canaries += ["secret", "account", "service", "label", "comment", "generic", "server"].map {
                Data("\(token)\($0)".utf8)
            }
            try keychain.add(
                Item(
                    class: .genericPassword,
                    attributes: [
                        .account: .string("\(token)account"), .service: .string("\(token)service"),
                        .label: .string("\(token)label"), .comment: .string("\(token)comment"),
                        .generic: .data(Data("\(token)generic".utf8)),
                    ], data: Data("\(token)secret".utf8)))
            try keychain.add(
                Item(
                    class: .internetPassword, attributes: [.server: .string("\(token)server")],
                    data: Data("\(token)secret".utf8)))
        }
        #expect(filesContain(temporary.path, canaries).isEmpty)
        for index in stride(from: 0, to: 40, by: 2) {
            let token = String(decoding: canaries[index * 7], as: UTF8.self).dropLast("secret".count)
            try keychain.delete(ItemQuery(class: .genericPassword, attributes: [.account: .string("\(token)account")]))
        }
        try keychain.update(
            ItemQuery(class: .internetPassword), attributes: [.label: .string("plain")], data: Data("x".utf8))
        #expect(filesContain(temporary.path, canaries).isEmpty)
        // The check itself can fail: a canary written in clear is found.
        let queue = try GRDBTestAccess.queue(temporary.path)
        try queue.write { db in try db.execute(sql: "INSERT INTO meta VALUES ('probe', ?)", arguments: [canaries[0]]) }
        #expect(!filesContain(temporary.path, [canaries[0]]).isEmpty)
    }

    @Test("secrets of 1 and 31 bytes give ciphertexts of equal length")
    func paddingHidesLength() throws {
        let temporary = try TemporaryKeychain()
        try temporary.keychain.add(genericPassword("a", data: "x"))
        try temporary.keychain.add(genericPassword("b", data: String(repeating: "y", count: 31)))
        let lengths = try GRDBTestAccess.queue(temporary.path).read { db in
            try Int.fetchAll(db, sql: "SELECT length(data) FROM items ORDER BY id")
        }
        #expect(lengths.count == 2)
        #expect(lengths[0] == lengths[1])
    }

    @Test("no statement on a write or lookup path scans the items table (a scan made adds O(n))")
    func writePathsUseIndexes() throws {
        let temporary = try TemporaryKeychain()
        let statements = [
            "DELETE FROM items WHERE pk = x'00' AND tomb = 1", "SELECT * FROM items WHERE pk = x'00' AND tomb = 0",
            "DELETE FROM items WHERE id = 1", "SELECT tags FROM items WHERE id = 1",
            "SELECT item FROM tags WHERE tag = x'00'", "SELECT id FROM items WHERE pk = x'00' AND tomb = 1",
            "SELECT 1 FROM items WHERE id = 1",
            "DELETE FROM tags WHERE item = 1 AND tag IN (x'00', x'01', x'02')",
            "SELECT max(id) FROM items",
            // A lookup by persistent identity.
            "SELECT * FROM items i WHERE i.class = 'genp' AND i.id = 1 AND i.uuid = x'00' AND i.tomb = 0 ORDER BY i.id",
        ]
        try GRDBTestAccess.queue(temporary.path).read { db in
            for statement in statements {
                let plan = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement).map {
                    $0["detail"] as String? ?? ""
                }
                #expect(
                    !plan.contains { $0.hasPrefix("SCAN items") || $0.hasPrefix("SCAN tags") }, "\(statement): \(plan)")
            }
        }
    }

    @Test("the writer syncs every commit and caches the indexes' pages, on a new and a reopened keychain")
    func writerConfiguration() throws {
        let temporary = try TemporaryKeychain()
        let reopened = try KeychainDatabase.open(at: temporary.path, configuration: temporary.keychain.configuration)
        for keychain in [temporary.keychain, reopened] {
            let (synchronous, cache) = try keychain.writer.writeWithoutTransaction { db in
                (try Int.fetchOne(db, sql: "PRAGMA synchronous"), try Int.fetchOne(db, sql: "PRAGMA cache_size"))
            }
            #expect(synchronous == 2, "synchronous is not FULL")
            #expect(cache == -keychainWriterCacheKiB)
        }
        // Readers keep SQLite's default cache (2,000 KiB).
        #expect(try temporary.keychain.writer.read { try Int.fetchOne($0, sql: "PRAGMA cache_size") } == -2000)
    }

    @Test("the same attribute value in two keychains has different index tags")
    func indexTagsDifferAcrossKeychains() throws {
        let first = try TemporaryKeychain()
        let second = try TemporaryKeychain()
        let tags = try [first, second].map { temporary in
            var item = genericPassword("same-account", service: "same-service")
            item.attributes[.label] = .string("same label")
            try temporary.keychain.add(item)
            return try GRDBTestAccess.queue(temporary.path).read { db in
                Set(try Data.fetchAll(db, sql: "SELECT tag FROM tags UNION ALL SELECT pk FROM items"))
            }
        }
        #expect(tags[0].count == 2)  // the label's tag and the primary key's
        #expect(tags[0].isDisjoint(with: tags[1]))
    }

    @Test("files are 0600 and directories 0700 under any umask", arguments: ["000", "022", "077"])
    func fileModes(umask: String) throws {
        let scratch = try Scratch()
        let path = scratch.path + "/data/keychains/login.keychain-db"
        let result = try runWorker(["create", path, umask], configHome: scratch.path + "/config")
        #expect(result.status == 0)
        #expect(mode(scratch.path + "/data/keychains") == 0o700)
        for file in keychainFiles(path) { #expect(mode(file) == 0o600, "\(file)") }
        #expect(mode(scratch.path + "/config/keychain") == 0o700)
        #expect(mode(scratch.path + "/config/keychain/device-key") == 0o600)
        // The worker opened it in WAL mode; its -wal/-shm files, if left, are private too.
        let reopened = try runWorker(["add-many", path, "m", "1", "1"], configHome: scratch.path + "/config")
        #expect(reopened.output.contains("failures 0"))
        for file in keychainFiles(path) { #expect(mode(file) == 0o600, "\(file)") }
    }

    @Test("a symbolic link or a hard link at the keychain path is refused and nothing is written")
    func linksAreRefused() throws {
        let scratch = try Scratch()
        let real = try TemporaryKeychain()
        let before = sha256(ofFile: real.path)
        let symlink = scratch.file("link.keychain-db")
        try FileManager.default.createSymbolicLink(atPath: symlink, withDestinationPath: real.path)
        #expect(errorCode { _ = try KeychainDatabase.open(at: symlink, configuration: .testing()) } == .invalidKeychain)
        #expect(
            errorCode { _ = try KeychainDatabase.create(at: symlink, password: nil, configuration: .testing()) } != nil)
        let hardlink = scratch.file("hard.keychain-db")
        #expect(link(real.path, hardlink) == 0)
        #expect(
            errorCode { _ = try KeychainDatabase.open(at: hardlink, configuration: .testing()) } == .invalidKeychain)
        #expect(sha256(ofFile: real.path) == before)
    }

    @Test("the default keychain is created on first use under XDG_DATA_HOME with no password")
    func defaultKeychainLocation() throws {
        let scratch = try Scratch()
        let paths = KeychainPaths(environment: [
            "HOME": scratch.path, "XDG_DATA_HOME": scratch.path + "/data", "XDG_CONFIG_HOME": scratch.path + "/config",
        ])
        #expect(paths.defaultKeychain == scratch.path + "/data/keychains/login.keychain-db")
        #expect(paths.deviceKeyFile == scratch.path + "/config/keychain/device-key")
        let configuration = KeychainConfiguration(deviceKey: .file(at: paths.deviceKeyFile), accessGroups: .standard)
        let keychain = try KeychainDatabase.openDefault(paths: paths, configuration: configuration)
        #expect(!keychain.hasPassword && !keychain.isLocked)
        try keychain.add(genericPassword("a"))
        let again = try KeychainDatabase.openDefault(paths: paths, configuration: configuration)
        #expect(try again.find(ItemQuery(class: .genericPassword)).count == 1)
        let fallback = KeychainPaths(environment: ["HOME": "/home/u"])
        #expect(fallback.defaultKeychain == "/home/u/.local/share/keychains/login.keychain-db")
        #expect(fallback.deviceKeyFile == "/home/u/.config/keychain/device-key")
        let pointed = KeychainPaths(environment: ["HOME": "/home/u", "KEYCHAIN_DEFAULT_PATH": "/tmp/x.keychain-db"])
        #expect(pointed.defaultKeychain == "/tmp/x.keychain-db")
        #expect(paths.resolve("work") == scratch.path + "/data/keychains/work.keychain-db")
    }

    @Test(
        "a path in ~/Library/Keychains names the keychain of that name (macOS's X-db is X)",
        arguments: [
            ("/home/u/Library/Keychains/build", "/home/u/.local/share/keychains/build.keychain-db"),
            ("/home/u/Library/Keychains/build-db", "/home/u/.local/share/keychains/build.keychain-db"),
            ("/home/u/Library/Keychains/build.keychain", "/home/u/.local/share/keychains/build.keychain"),
            ("/home/u/Library/Keychains/build.keychain-db", "/home/u/.local/share/keychains/build.keychain-db"),
            ("/home/u//Library/Keychains//login.keychain-db", "/home/u/.local/share/keychains/login.keychain-db"),
            ("/home/u/Library/Keychains/my.ci-db", "/home/u/.local/share/keychains/my.ci"),
            ("/home/u/Library/Keychains/sub/build-db", "/home/u/Library/Keychains/sub/build-db"),
            ("/home/u/Library/Keychains/..", "/home/u/Library/Keychains/.."),
            ("/home/v/Library/Keychains/build-db", "/home/v/Library/Keychains/build-db"),
            ("Library/Keychains/build-db", "Library/Keychains/build-db"),
        ])
    func macOSKeychainPathsResolveInTheKeychainsDirectory(argument: String, resolved: String) {
        #expect(KeychainPaths(environment: ["HOME": "/home/u"]).resolve(argument) == resolved)
    }

    @Test("the default keychain follows the user's preferences; KEYCHAIN_DEFAULT_PATH wins")
    func defaultKeychainPreference() throws {
        let scratch = try Scratch()
        let environment = ["HOME": scratch.path, "XDG_CONFIG_HOME": scratch.path + "/config"]
        let paths = KeychainPaths(environment: environment)
        #expect(paths.defaultKeychain == paths.loginKeychain)
        var preferences = KeychainPreferences()
        preferences.defaultKeychain = scratch.file("work.keychain-db")
        try preferences.save(to: paths.preferencesFile)
        #expect(mode(paths.preferencesFile) == 0o600)
        #expect(try KeychainPreferences.load(from: paths.preferencesFile) == preferences)
        #expect(KeychainPaths(environment: environment).defaultKeychain == scratch.file("work.keychain-db"))
        var pointed = environment
        pointed["KEYCHAIN_DEFAULT_PATH"] = scratch.file("env.keychain-db")
        #expect(KeychainPaths(environment: pointed).defaultKeychain == scratch.file("env.keychain-db"))
        FileManager.default.createFile(atPath: paths.preferencesFile + ".bad", contents: Data("{".utf8))
        #expect(errorCode { _ = try KeychainPreferences.load(from: paths.preferencesFile + ".bad") } == .parameter)
    }

    @Test("two processes racing to add the same primary key: exactly one wins, every time")
    func processRace() throws {
        let scratch = try Scratch()
        let path = scratch.file("race.keychain-db")
        let config = scratch.path + "/config"
        _ = try runWorker(["create", path, "077"], configHome: config)
        for trial in 0..<25 {
            let start = String(Date().timeIntervalSince1970 + 0.3)
            let workers = try (0..<2).map { _ in
                try startWorker(["race", path, "acct\(trial)", start], configHome: config)
            }
            let outputs = workers.map { process, pipe -> String in
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            #expect(outputs.sorted() == ["added", "duplicate"], "trial \(trial)")
        }
        let count = try GRDBTestAccess.queue(path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items")
        }
        #expect(count == 25)
    }

    @Test("concurrent writers in several processes never see 'database is locked'")
    func multiProcessContention() throws {
        let scratch = try Scratch()
        let path = scratch.file("busy.keychain-db")
        let config = scratch.path + "/config"
        _ = try runWorker(["create", path, "077"], configHome: config)
        let workers = try (0..<3).map { try startWorker(["add-many", path, "p\($0)", "4", "10"], configHome: config) }
        for (process, pipe) in workers {
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(output.contains("failures 0"))
        }
        let count = try GRDBTestAccess.queue(path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items")
        }
        #expect(count == 120)
    }

    @Test("a writer killed with SIGKILL loses no acknowledged write and leaves a sound file")
    func killedWriterLosesNothing() throws {
        let scratch = try Scratch()
        let path = scratch.file("crash.keychain-db")
        let config = scratch.path + "/config"
        _ = try runWorker(["create", path, "077"], configHome: config)
        let ack = scratch.file("ack")
        for round in 0..<4 {
            let (process, _) = try startWorker(["write", path, ack, "r\(round)"], configHome: config)
            usleep(useconds_t(200_000 + Int.random(in: 0..<400_000)))
            // Not when it has ended already: its pid may be another process's by now.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let acknowledged =
            (try? String(contentsOfFile: ack, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
        #expect(acknowledged.count > 0)
        let configuration = KeychainConfiguration(
            deviceKey: .file(at: config + "/keychain/device-key"), accessGroups: .standard)
        let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
        let integrity = try GRDBTestAccess.queue(path).read { db in
            try String.fetchOne(db, sql: "PRAGMA integrity_check")
        }
        #expect(integrity == "ok")
        let items = try keychain.find(ItemQuery(class: .genericPassword), includeData: true)
        let stored = Dictionary(
            items.map {
                ($0.attributes[.account]?.stringValue ?? "", String(decoding: $0.data ?? Data(), as: UTF8.self))
            },
            uniquingKeysWith: { a, _ in a })
        for account in acknowledged {
            let value = stored[account]
            #expect(value == "v1-\(account)" || value == "v2-\(account)", "\(account)")
        }
        for (account, value) in stored {
            #expect(value == "v1-\(account)" || value == "v2-\(account)", "torn item \(account)")
        }
    }

    @Test("many threads read while others write, on one handle")
    func threadsShareAHandle() async throws {
        let temporary = try TemporaryKeychain()
        let keychain = temporary.keychain
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in 0..<25 {
                        try keychain.add(genericPassword("w\(worker)-\(index)"))
                        _ = try keychain.find(ItemQuery(class: .genericPassword, limit: 3), includeData: true)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try keychain.find(ItemQuery(class: .genericPassword)).count == 200)
    }

    @Test("no read returns data after lock() has returned")
    func lockStopsReads() async throws {
        let temporary = try TemporaryKeychain(password: "pw")
        let keychain = temporary.keychain
        try keychain.unlock(password: "pw")
        try keychain.add(genericPassword("a"))
        let lockedAt = Mutex<Date?>(nil)
        let late = Mutex(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<200 {
                        let started = Date()
                        let result = try? keychain.findFirst(ItemQuery(class: .genericPassword), includeData: true)
                        if result?.data != nil, let locked = lockedAt.withLock({ $0 }), started > locked {
                            late.withLock { $0 += 1 }
                        }
                    }
                }
            }
            group.addTask {
                usleep(20_000)
                keychain.lock()
                lockedAt.withLock { $0 = Date() }
            }
        }
        #expect(keychain.isLocked)
        #expect(late.withLock { $0 } == 0)
        #expect(errorCode { _ = try keychain.find(ItemQuery(class: .genericPassword)) } == .interactionNotAllowed)
    }

    @Test("access groups scope every operation (spec §7)")
    func accessGroupScoping() throws {
        let keychain = try KeychainDatabase.inMemory(configuration: .testing())
        var shared = genericPassword("shared")
        shared.attributes[.accessGroup] = .string("com.example.shared")
        try keychain.add(shared)
        try keychain.add(genericPassword("mine"))
        var restricted = KeychainConfiguration.testing()
        restricted.accessGroups = AccessGroups(["com.example.app"])
        let app = try KeychainDatabase.inMemory(configuration: restricted)
        try app.add(genericPassword("app"))
        #expect(try app.findFirst(ItemQuery(class: .genericPassword))?.accessGroup == "com.example.app")
        #expect(
            errorCode {
                _ = try app.find(ItemQuery(class: .genericPassword, attributes: [.accessGroup: .string("other")]))
            } == .missingEntitlement)
        var other = genericPassword("x")
        other.attributes[.accessGroup] = .string("other")
        #expect(errorCode { try app.add(other) } == .missingEntitlement)
        restricted.accessGroups = AccessGroups([])
        let none = try KeychainDatabase.inMemory(configuration: restricted)
        #expect(errorCode { try none.add(genericPassword("x")) } == .missingEntitlement)
        #expect(errorCode { _ = try none.find(ItemQuery(class: .genericPassword)) } == .missingEntitlement)
        #expect(AccessGroups.fromEnvironment(["KEYCHAIN_ACCESS_GROUPS": "a, b"]).groups == ["a", "b"])
        #expect(AccessGroups.fromEnvironment([:]) == .standard)
    }

    @Test("access groups are trimmed of the blanks Foundation's whitespace set names, no more")
    func accessGroupTrimmingMatchesFoundation() {
        let samples = [
            "", " ", "\t", " a ", "\ta b\t", "\u{00A0}x\u{3000}", "\u{2003}\u{202F}y", "\nz\n", "\r w",
            "e\u{301} ", " \u{301}e", "\u{200B}v", "\u{85}u", "*", "\u{1680}com.example\u{205F}",
        ]
        for sample in samples {
            let expected = sample.trimmingCharacters(in: .whitespaces)
            #expect(AccessGroups.trimmingBlanks(Substring(sample)) == expected, "\(sample.unicodeScalars.map(\.value))")
        }
        #expect(
            AccessGroups.fromEnvironment(["KEYCHAIN_ACCESS_GROUPS": "\u{3000}a ,\t, b\u{00A0}"]).groups == ["a", "b"])
    }

    @Test("groups limit what a file keychain shows to each process")
    func groupsAcrossHandles() throws {
        let temporary = try TemporaryKeychain()
        var item = genericPassword("a")
        item.attributes[.accessGroup] = .string("g1")
        try temporary.keychain.add(item)
        try temporary.keychain.add(genericPassword("b"))
        var configuration = temporary.keychain.configuration
        configuration.accessGroups = AccessGroups(["g2"])
        let other = try KeychainDatabase.open(at: temporary.path, configuration: configuration)
        #expect(try other.find(ItemQuery(class: .genericPassword)).isEmpty)
        #expect(errorCode { try other.delete(ItemQuery(class: .genericPassword)) } == .itemNotFound)
        configuration.accessGroups = AccessGroups(["g1"])
        let allowed = try KeychainDatabase.open(at: temporary.path, configuration: configuration)
        #expect(try allowed.find(ItemQuery(class: .genericPassword)).map(\.accessGroup) == ["g1"])
    }
}

final class Mutex<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
