import Foundation
import KeychainCore

/// Runs `keychain-stress worker <command> …`, the suite's helper processes. Returns the exit
/// status; the parent reads the protocol lines each command prints.
func runWorkerCommand(_ arguments: [String]) -> Int32 {
    guard let command = arguments.first else { return 2 }
    var rest = Array(arguments.dropFirst())
    do {
        switch command {
        case "tamper", "foreign", "oversized":
            guard rest.count >= 2, let count = Int(rest.removeLast()), let from = Int(rest.removeLast()) else {
                return 2
            }
            if command == "tamper" { try tamperWorker(rest, from: from, count: count) }
            if command == "foreign" { try foreignWorker(rest, from: from, count: count) }
            if command == "oversized" { try oversizedWorker(rest, from: from, count: count) }
            return 0
        case "kdf-open": return kdfOpenWorker(rest)
        case "writer": return try writerWorker(rest)
        case "passwd-crash": return try passwordCrashWorker(rest)
        case "vfs-selftest": return try vfsSelfTestWorker(rest)
        case "sync-check": return try syncCheckWorker(rest)
        case "read-all": return try readAllWorker(rest)
        case "create": return try createWorker(rest)
        case "first-use": return try firstUseWorker(rest)
        case "delete": return try deleteWorker(rest)
        case "racer": return try racerWorker(rest)
        case "contend": return try contendWorker(rest)
        case "fuzz": return try fuzzWorker(rest)
        default:
            FileHandle.standardError.write(Data("keychain-stress worker: unknown command \(command)\n".utf8))
            return 2
        }
    } catch {
        FileHandle.standardError.write(Data("keychain-stress worker \(command): \(error)\n".utf8))
        return 1
    }
}

/// The worker side: `read-all <keychain> <password|->`: opens the keychain, unlocks it and
/// scans every class; prints `<class> <outcome>` lines. Used where reading might crash.
func readAllWorker(_ arguments: [String]) throws -> Int32 {
    guard let path = arguments.first else { throw WorkerUsage() }
    let password = arguments.count > 1 && arguments[1] != "-" ? arguments[1] : nil
    let code = errorCode {
        let keychain = try KeychainDatabase.open(at: path, configuration: StressKeys.fromEnvironment())
        if let password { try keychain.unlock(password: password) }
        for itemClass in Corpus.classes {
            let outcome = errorCode {
                _ = try keychain.find(
                    ItemQuery(class: itemClass, synchronizable: .any, includesTombstones: true), includeData: true)
            }
            emit("\(itemClass) \(codeName(outcome))")
        }
    }
    emit("open \(codeName(code))")
    return 0
}
