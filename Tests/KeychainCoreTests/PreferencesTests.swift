import Foundation
import KeychainLibc
import Testing

@testable import KeychainCore

/// The permission bits of a file, not following a link.
private func fileMode(_ path: String) -> mode_t {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & 0o777 : 0
}

/// `KeychainPreferences.update(at:_:)`: the search list and the default keychain survive
/// concurrent writers.
@Suite("Preferences: serialized read-modify-write")
struct PreferencesTests {
    /// The defect: `load` then `save` with no lock let concurrent writers overwrite each
    /// other's changes (8 concurrent `security create-keychain` left 4 keychains listed).
    @Test("concurrent processes updating the preferences lose no change", arguments: 0..<3)
    func concurrentProcessesLoseNoPreferenceUpdate(trial: Int) throws {
        let scratch = try Scratch()
        let path = scratch.file("config/keychain/preferences.json")
        let (processes, perProcess) = (8, 15)
        let workers = try (0..<processes).map { index in
            try startWorker(["prefs-append", path, "p\(index)", String(perProcess)], configHome: scratch.path)
        }
        for (process, pipe) in workers {
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0 && output == "appended \(perProcess)\n", "trial \(trial)")
        }
        let list = try KeychainPreferences.load(from: path).searchList ?? []
        let expected = (0..<processes).flatMap { index in (0..<perProcess).map { "p\(index)-\($0)" } }
        #expect(list.count == expected.count, "trial \(trial): \(list.count) of \(expected.count) entries")
        #expect(Set(list) == Set(expected), "trial \(trial)")
        // Each writer's own entries keep their order: every update saw the previous ones.
        for index in 0..<processes {
            let own = list.filter { $0.hasPrefix("p\(index)-") }
            #expect(own == (0..<perProcess).map { "p\(index)-\($0)" }, "trial \(trial), writer \(index)")
        }
    }

    @Test("concurrent threads of one process updating the preferences lose no change")
    func concurrentThreadsLoseNoPreferenceUpdate() throws {
        let scratch = try Scratch()
        let path = scratch.file("keychain/preferences.json")
        let (threads, perThread) = (8, 25)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            // Real threads: a concurrentPerform would run at most one per core.
            Thread.detachNewThread {
                defer { group.leave() }
                for index in 0..<perThread {
                    do {
                        try KeychainPreferences.update(at: path) { preferences in
                            preferences.searchList = (preferences.searchList ?? []) + ["t\(thread)-\(index)"]
                        }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(try KeychainPreferences.load(from: path).searchList?.count == threads * perThread)
    }

    @Test("update returns the closure's result, writes nothing when nothing changed or it throws")
    func updateWritesOnlyRealChanges() throws {
        let scratch = try Scratch()
        let path = scratch.file("keychain/preferences.json")
        let seen = try KeychainPreferences.update(at: path) { $0.searchList }
        #expect(seen == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(fileMode(scratch.file("keychain")) == 0o700)
        #expect(fileMode(path + ".lock") == 0o600)
        try KeychainPreferences.update(at: path) { $0.defaultKeychain = "/k/a.keychain-db" }
        #expect(fileMode(path) == 0o600)
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try KeychainPreferences.update(at: path) { preferences in
                preferences.defaultKeychain = "/k/b.keychain-db"
                throw Refused()
            }
        }
        #expect(try KeychainPreferences.load(from: path).defaultKeychain == "/k/a.keychain-db")
    }

    @Test("a symbolic link or a foreign file at the lock path is refused, never followed")
    func preferencesLockRefusesLinks() throws {
        let scratch = try Scratch()
        let directory = scratch.file("keychain")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let path = directory + "/preferences.json"
        let target = scratch.file("elsewhere")
        #expect(symlink(target, path + ".lock") == 0)
        #expect(errorCode { try KeychainPreferences.update(at: path) { $0.searchList = [] } } == .invalidKeychain)
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(!FileManager.default.fileExists(atPath: path))
        unlink(path + ".lock")
        #expect(mkfifo(path + ".lock", 0o600) == 0)
        #expect(errorCode { try KeychainPreferences.update(at: path) { $0.searchList = [] } } == .invalidKeychain)
    }
}
