// A helper process for the engine's multi-process tests: racing adds, writers killed with
// SIGKILL, files created under a given umask. Not part of any product.
//
//   keychain-test-worker race <keychain> <account> <start-at-unix-seconds>
//   keychain-test-worker write <keychain> <ack-file> <prefix>
//   keychain-test-worker create <keychain> <umask-octal>
//   keychain-test-worker add-many <keychain> <prefix> <threads> <count-per-thread>
//   keychain-test-worker first-use <account> <start-at-unix-seconds>   (the default keychain)
//   keychain-test-worker delete <keychain>
//   keychain-test-worker add-close <keychain> <account>     (opens, adds one item, closes)
//   keychain-test-worker try-add <keychain> <account>       (waits 0.3 s at most: added / busy)
//   keychain-test-worker prefs-append <preferences.json> <prefix> <count>
//
// The device key comes from the environment's XDG_CONFIG_HOME, as for any process.

import Foundation
import KeychainCore
import KeychainLibc

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: keychain-test-worker <command> <keychain> …\n".utf8))
    exit(2)
}
let path = arguments[2]

@Sendable func item(account: String, data: String) -> Item {
    Item(
        class: .genericPassword,
        attributes: [.service: .string("worker"), .account: .string(account)],
        data: Data(data.utf8))
}

func report(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

do {
    switch arguments[1] {
    case "race":
        let keychain = try KeychainDatabase.open(at: path)
        let start = Double(arguments[4]) ?? 0
        while Date().timeIntervalSince1970 < start { usleep(100) }
        do {
            try keychain.add(item(account: arguments[3], data: "\(getpid())"))
            report("added")
        } catch let error as KeychainError where error.code == .duplicateItem {
            report("duplicate")
        }
    case "write":
        let keychain = try KeychainDatabase.open(at: path)
        let ack = open(arguments[3], O_WRONLY | O_APPEND | O_CREAT, 0o600)
        let prefix = arguments[4]
        var index = 0
        while true {
            let account = "\(prefix)-\(index)"
            try keychain.add(item(account: account, data: "v1-\(account)"))
            if index % 3 == 0 {
                try keychain.update(
                    ItemQuery(class: .genericPassword, attributes: [.account: .string(account)]),
                    attributes: [:], data: Data("v2-\(account)".utf8))
            }
            let line = "\(account)\n"
            _ = line.withCString { write(ack, $0, strlen($0)) }
            fsync(ack)
            index += 1
        }
    case "first-use":
        let start = Double(arguments[3]) ?? 0
        while Date().timeIntervalSince1970 < start { usleep(100) }
        let keychain = try KeychainDatabase.openDefault()
        try keychain.add(item(account: path, data: "first use"))
        report("added")
    case "try-add":
        var configuration = KeychainConfiguration()
        configuration.busyTimeout = 0.3
        let keychain = try KeychainDatabase.open(at: path, configuration: configuration)
        do {
            try keychain.add(item(account: arguments[3], data: "x"))
            report("added")
        } catch let error as KeychainError where error.code == .databaseLocked {
            report("busy")
        }
    case "add-close":
        let keychain = try KeychainDatabase.open(at: path)
        try keychain.add(item(account: arguments[3], data: "short-lived"))
        try keychain.close()
        report("added")
    case "delete":
        try KeychainDatabase.deleteKeychain(at: path)
        report("deleted")
    case "create":
        umask(mode_t(Int(arguments[3], radix: 8) ?? 0))
        _ = try KeychainDatabase.create(at: path, password: nil)
        report("created")
    case "add-many":
        let keychain = try KeychainDatabase.open(at: path)
        let prefix = arguments[3]
        let threads = Int(arguments[4]) ?? 1
        let count = Int(arguments[5]) ?? 1
        let failures = Mutex(0)
        // Real threads (DispatchQueue.concurrentPerform would run at most one per core).
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                for index in 0..<count {
                    do {
                        try keychain.add(item(account: "\(prefix)-\(thread)-\(index)", data: "x"))
                        _ = try keychain.find(
                            ItemQuery(class: .genericPassword, attributes: [.service: .string("worker")], limit: 5))
                    } catch {
                        failures.withLock { $0 += 1 }
                        FileHandle.standardError.write(Data("\(error)\n".utf8))
                    }
                }
            }
        }
        group.wait()
        report("failures \(failures.withLock { $0 })")
    case "prefs-append":
        // Appends <prefix>-0 … <prefix>-<count-1> to the search list, one update each.
        let count = Int(arguments[4]) ?? 1
        for index in 0..<count {
            try KeychainPreferences.update(at: path) { preferences in
                preferences.searchList = (preferences.searchList ?? []) + ["\(arguments[3])-\(index)"]
            }
        }
        report("appended \(count)")
    default:
        exit(2)
    }
} catch let error as KeychainError {
    FileHandle.standardError.write(Data("worker: \(error.code): \(error.message)\n".utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("worker: \(error)\n".utf8))
    exit(1)
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
