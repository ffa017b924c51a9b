import Crypto
import Foundation
import KeychainCore

/// A fresh directory for one test, removed at the end of its scope.
final class Scratch {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.path + "/kc-core-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A copy of a checked-in keychain file of one format version (`Fixtures/format-vN.keychain-db`,
/// password "fixture"), in a scratch directory: the original is never written.
struct FixtureCopy {
    /// The device key and configuration the fixtures were made with.
    static let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 0x42, count: 32)))

    /// Where the fixture of a format version is checked in.
    static func path(version: Int) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v\(version).keychain-db").path
    }

    let scratch: Scratch
    let path: String

    init(version: Int) throws {
        scratch = try Scratch()
        path = scratch.file("copy.keychain-db")
        try FileManager.default.copyItem(atPath: Self.path(version: version), toPath: path)
    }

    /// Opens the copy (a fixture opens locked).
    func open() throws -> KeychainDatabase {
        try KeychainDatabase.open(at: path, configuration: Self.configuration)
    }
}

func genericPassword(_ account: String, service: String = "svc", data: String = "secret") -> Item {
    Item(
        class: .genericPassword,
        attributes: [.account: .string(account), .service: .string(service)],
        data: Data(data.utf8))
}

func query(_ itemClass: ItemClass = .genericPassword, _ attributes: Attributes = [:]) -> ItemQuery {
    ItemQuery(class: itemClass, attributes: attributes)
}

func sha256(ofFile path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// Runs `body` and returns the code of the `KeychainError` it throws, or `nil`.
func errorCode(_ body: () throws -> Void) -> KeychainError.Code? {
    do {
        try body()
        return nil
    } catch let error as KeychainError {
        return error.code
    } catch {
        return KeychainError.Code(rawValue: 1)
    }
}

/// The helper executable built next to the test bundle.
var workerPath: String {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path,
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().path
        } ?? "",
    ]
    for directory in candidates {
        let path = directory + "/keychain-test-worker"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return candidates[0] + "/keychain-test-worker"
}

/// Starts the worker with an environment whose device key lives under `configHome`.
func startWorker(_ arguments: [String], configHome: String) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: workerPath)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_CONFIG_HOME"] = configHome
    environment["KEYCHAIN_ACCESS_GROUPS"] = nil
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    return (process, output)
}

func runWorker(_ arguments: [String], configHome: String) throws -> (status: Int32, output: String) {
    let (process, pipe) = try startWorker(arguments, configHome: configHome)
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

import GRDB

/// Raw SQLite access to a keychain file, for tests that tamper with it.
enum GRDBTestAccess {
    static func queue(_ path: String) throws -> DatabaseQueue {
        try DatabaseQueue(path: path)
    }
}

/// A generic-password query in authentication mode `mode`.
func genericPasswordQuery(_ mode: ItemQuery.AuthenticationUI) -> ItemQuery {
    var query = ItemQuery(class: .genericPassword)
    query.authenticationUI = mode
    return query
}

/// The engine's error `body` throws, or `nil` when it succeeds (or throws another error).
func refusal(_ body: () throws -> Any) -> KeychainError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error as? KeychainError
    }
}
