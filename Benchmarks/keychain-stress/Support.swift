import Crypto
import Foundation
import GRDB
import KeychainCore
import KeychainLibc
import SeededRandom

// MARK: - Randomness

/// Draws of the shapes the attacks use. Every failure is reported with the seed that
/// reproduces it.
extension SplitMix64 {
    mutating func int(_ upper: Int) -> Int { upper <= 1 ? 0 : Int.random(in: 0..<upper, using: &self) }
    mutating func bytes(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }) }
    mutating func chance(_ percent: Int) -> Bool { int(100) < percent }
    mutating func pick<T>(_ values: [T]) -> T { values[int(values.count)] }
}

// MARK: - Scratch directories

/// A fresh directory, removed when released. Children started with ``environment`` see it as
/// their HOME and XDG directories, so no real keychain is ever touched.
package final class Scratch: @unchecked Sendable {
    package let path: String

    package init(_ label: String = "stress") throws {
        path = FileManager.default.temporaryDirectory.path + "/keychain-stress-\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o700)
    }

    package func file(_ name: String) -> String { path + "/" + name }

    /// A new empty sub-directory.
    func directory(_ name: String) throws -> String {
        let directory = file(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The environment of a child process: everything that names a keychain points in here.
    package var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = path
        environment["XDG_DATA_HOME"] = path + "/data"
        environment["XDG_CONFIG_HOME"] = path + "/config"
        environment["XDG_RUNTIME_DIR"] = path + "/run"
        environment["KEYCHAIN_DEFAULT_PATH"] = path + "/data/keychains/login.keychain-db"
        environment["KEYCHAIN_ACCESS_GROUPS"] = nil
        environment["KEYCHAIN_PASSWORD"] = nil
        environment["KEYCHAIN_AGENT"] = "off"
        environment[StressKeys.deviceKeyVariable] = StressKeys.deviceKeyHex
        return environment
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

// MARK: - Keys and configurations

/// The explicit, fixed device keys the suite uses; never the user's device key file.
package enum StressKeys {
    static let deviceKeyVariable = "KEYCHAIN_STRESS_DEVICE_KEY"
    package static let device = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
    package static let otherDevice = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 5) })
    static var deviceKeyHex: String { hex(device) }

    /// The cheap test-only derivation with the suite's device key.
    package static func testing(device: Data = StressKeys.device) -> KeychainConfiguration {
        .testing(deviceKey: .fixed(device))
    }

    /// The production derivation and floor, with the suite's device key.
    package static func production(device: Data = StressKeys.device) -> KeychainConfiguration {
        KeychainConfiguration(deviceKey: .fixed(device), accessGroups: .standard)
    }

    /// The configuration a worker process uses: the device key from the environment.
    static func fromEnvironment() -> KeychainConfiguration {
        let key = ProcessInfo.processInfo.environment[deviceKeyVariable].flatMap(unhex) ?? device
        return testing(device: key)
    }
}

func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

func unhex(_ text: String) -> Data? {
    var data = Data()
    var index = text.startIndex
    while index < text.endIndex {
        guard let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex),
            let byte = UInt8(text[index..<next], radix: 16)
        else { return nil }
        data.append(byte)
        index = next
    }
    return data
}

// MARK: - Files

package func sha256(ofFile path: String) -> String? {
    guard let data = FileManager.default.contents(atPath: path) else { return nil }
    return hex(Data(SHA256.hash(data: data)))
}

/// The files SQLite may keep next to a keychain.
let sidecarSuffixes = ["-wal", "-shm", "-journal"]

func existingFiles(_ path: String) -> [String] {
    ([""] + sidecarSuffixes).map { path + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
}

func fileMode(_ path: String) -> mode_t {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0 }
    return info.st_mode & 0o7777
}

/// Copies a file byte for byte (no sidecars).
package func copyFile(_ source: String, _ destination: String) throws {
    try? FileManager.default.removeItem(atPath: destination)
    for suffix in sidecarSuffixes { try? FileManager.default.removeItem(atPath: destination + suffix) }
    try FileManager.default.copyItem(atPath: source, toPath: destination)
    chmod(destination, 0o600)
}

/// Folds a keychain's WAL into its main file and closes every connection, so that the main
/// file alone holds everything (for copies and byte-level tampering).
package func checkpoint(_ path: String) throws {
    let queue = try DatabaseQueue(path: path)
    try queue.writeWithoutTransaction { db in _ = try Row.fetchAll(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    try queue.close()
    for suffix in sidecarSuffixes { try? FileManager.default.removeItem(atPath: path + suffix) }
}

/// Raw SQLite access to a keychain file, bypassing the engine (to tamper with it).
package func rawQueue(_ path: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.busyMode = .timeout(10)
    return try DatabaseQueue(path: path, configuration: configuration)
}

// MARK: - Processes

/// The path of the `keychain-stress` binary, which is also the suite's worker process.
var stressExecutable: String {
    let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    if (own as NSString).lastPathComponent == "keychain-stress" { return own }
    return siblingExecutable("keychain-stress") ?? ((own as NSString).deletingLastPathComponent + "/keychain-stress")
}

/// A binary built next to this one (the test bundle or `keychain-stress`), if it exists.
func siblingExecutable(_ name: String) -> String? {
    let candidates = [
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "",
        CommandLine.arguments.first ?? "",
    ].map { ($0 as NSString).deletingLastPathComponent }
    for directory in candidates where !directory.isEmpty {
        let path = directory + "/" + name
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// A child process with its output captured.
package final class Child: @unchecked Sendable {
    let process = Process()
    let output = Pipe()
    let errors = Pipe()
    let input = Pipe()
    private let collected = Mutex<(Data, Data)>((Data(), Data()))
    private let done = DispatchGroup()

    init(_ executable: String, _ arguments: [String], environment: [String: String], stdin: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = stdin ? input : FileHandle.nullDevice
        try process.run()
        for (index, pipe) in [output, errors].enumerated() {
            done.enter()
            Thread.detachNewThread { [collected, done] in
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.withLock { if index == 0 { $0.0 = data } else { $0.1 = data } }
                done.leave()
            }
        }
    }

    /// A worker: `keychain-stress worker <command> …`.
    package static func worker(_ arguments: [String], scratch: Scratch, stdin: Bool = false) throws -> Child {
        try Child(stressExecutable, ["worker"] + arguments, environment: scratch.environment, stdin: stdin)
    }

    var pid: pid_t { process.processIdentifier }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    func kill(_ signal: Int32 = SIGKILL) { _ = Glibc.kill(pid, signal) }

    /// Waits for the process to end; kills it after `timeout` seconds.
    @discardableResult
    package func wait(timeout: Double = 600) -> (status: Int32, signaled: Bool, out: String, err: String) {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(1000) }
        if process.isRunning {
            kill()
        }
        process.waitUntilExit()
        done.wait()
        let (out, err) = collected.withLock { $0 }
        return (
            process.terminationStatus, process.terminationReason == .uncaughtSignal,
            String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self)
        )
    }
}

/// A worker whose output is read line by line while it runs.
final class LineChild: @unchecked Sendable {
    let process = Process()
    private let reader: FileHandle
    private var buffer = Data()
    let input = Pipe()
    let errors = Pipe()
    private let errorText = Mutex(Data())
    private let errorDone = DispatchSemaphore(value: 0)

    init(_ arguments: [String], scratch: Scratch, environment: [String: String]? = nil) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: stressExecutable)
        process.arguments = ["worker"] + arguments
        process.environment = environment ?? scratch.environment
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input
        reader = output.fileHandleForReading
        try process.run()
        Thread.detachNewThread { [errors, errorText, errorDone] in
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorText.withLock { $0 = data }
            errorDone.signal()
        }
    }

    var pid: pid_t { process.processIdentifier }

    /// The next line, or `nil` at end of output.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            let chunk = reader.availableData
            if chunk.isEmpty {
                if buffer.isEmpty { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            buffer.append(chunk)
        }
    }

    func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits for the end; returns the exit status, whether a signal ended it, and its stderr.
    func finish() -> (status: Int32, signaled: Bool, errors: String) {
        process.waitUntilExit()
        errorDone.wait()
        return (
            process.terminationStatus, process.terminationReason == .uncaughtSignal,
            String(decoding: errorText.withLock { $0 }, as: UTF8.self)
        )
    }
}

// MARK: - Memory

/// The process's resident set and its peak, in bytes, from /proc.
package func memoryStatus(pid: pid_t? = nil) -> (resident: Int, peak: Int) {
    let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return (0, 0) }
    func value(_ key: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1024
    }
    return (value("VmRSS:"), value("VmHWM:"))
}

/// Resets the peak resident set (`VmHWM`) to the current one, so a later peak measures only
/// what happened since. Returns `false` when the kernel refuses.
@discardableResult
package func resetPeakMemory() -> Bool {
    let fd = open("/proc/self/clear_refs", O_WRONLY)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return write(fd, "5", 1) == 1
}

/// A region of `size` bytes of address space that is never touched: reading it all would add
/// `size` to the resident set, so a check that stays flat proves the bytes were not copied.
package final class UntouchedRegion: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    package let size: Int

    package init?(size: Int) {
        guard let pointer = mmap(nil, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
            pointer != MAP_FAILED
        else { return nil }
        base = pointer
        self.size = size
    }

    /// The region as `Data`, without copying.
    package var data: Data { Data(bytesNoCopy: base, count: size, deallocator: .none) }

    deinit { munmap(base, size) }
}

// MARK: - Small helpers

/// A lock-protected value.
final class Mutex<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// The `KeychainError` code a body throws, `nil` when it succeeds (another error is code 1).
package func errorCode(_ body: () throws -> Void) -> KeychainError.Code? {
    do {
        try body()
        return nil
    } catch let error as KeychainError {
        return error.code
    } catch {
        return KeychainError.Code(rawValue: 1)
    }
}

func codeName(_ code: KeychainError.Code?) -> String {
    guard let code else { return "success" }
    return code.description.split(separator: " ").first.map(String.init) ?? "\(code.rawValue)"
}

package func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func realtimeSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func percent(_ part: Int, _ whole: Int) -> String {
    whole == 0 ? "n/a" : String(format: "%.1f%%", 100 * Double(part) / Double(whole))
}

func count(_ value: Int) -> String { value.formatted(.number.grouping(.automatic)) }

/// Writes a line to standard error at once (progress of long runs).
func progress(_ text: String) {
    FileHandle.standardError.write(Data(("keychain-stress: " + text + "\n").utf8))
}

/// Writes one protocol line to standard output at once (unbuffered: a worker may be killed
/// right after).
func emit(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}
