import DBusNIO
import DBusWire
import Foundation
import Testing

/// The output of a finished process.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Failures of the test scaffolding itself (a missing tool is a failure, never a skip).
struct SupportError: Error, CustomStringConvertible {
    var description: String
}

enum Tools {
    /// The absolute path of a required tool; throws (failing the test) when it is missing.
    static func require(_ path: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw SupportError(description: "required tool \(path) is missing (see .ci/run for the apt packages)")
        }
        return path
    }

    /// Runs a program to completion, feeding `input` on stdin; the time limit (5 minutes) only
    /// stops a tool that hangs, and is generous for a machine whose cores another build keeps busy.
    static func run(
        _ executable: String,
        _ arguments: [String],
        input: Data? = nil,
        environment: [String: String]? = nil,
        timeout: TimeInterval = 300
    ) async throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try require(executable))
        process.arguments = arguments
        if let environment { process.environment = environment }
        // Output goes to files, not pipes: a blocking pipe read would hold one of the few
        // cooperative threads that the server under test needs.
        let directory = try TemporaryDirectory()
        let outPath = directory.path + "/out"
        let errPath = directory.path + "/err"
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }
        let inPipe = Pipe()
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = inPipe
        try process.run()
        if let input { try inPipe.fileHandleForWriting.write(contentsOf: input) }
        try inPipe.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()
                throw SupportError(description: "\(executable) timed out after \(timeout) s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let out = FileManager.default.contents(atPath: outPath) ?? Data()
        let err = FileManager.default.contents(atPath: errPath) ?? Data()
        return ProcessResult(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self))
    }
}

/// A temporary directory removed when the value is released.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/dbuswire-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A private dbus-daemon started for one test, with an allow-all policy.
final class PrivateBus: Sendable {
    let directory: TemporaryDirectory
    let address: String
    nonisolated(unsafe) let process: Process

    private init(directory: TemporaryDirectory, address: String, process: Process) {
        self.directory = directory
        self.address = address
        self.process = process
    }

    /// Stops the daemon and waits until it is reaped; nothing when it has ended already (a
    /// second SIGKILL could hit another process: pids wrap within a test run, `pid_max` 32768 here).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    static func start() async throws -> PrivateBus {
        let directory = try TemporaryDirectory()
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory.path)/bus</listen>
              <auth>EXTERNAL</auth>
              <!-- Time enough to authenticate on a machine whose cores a build keeps busy. -->
              <limit name="auth_timeout">3600000</limit>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: directory.path + "/session.conf", atomically: true, encoding: .utf8)
        let outputPath = directory.path + "/address"
        FileManager.default.createFile(atPath: outputPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Tools.require("/usr/bin/dbus-daemon"))
        process.arguments = ["--config-file=\(directory.path)/session.conf", "--nofork", "--print-address=1"]
        process.standardOutput = output
        // No inherited pipes: a daemon holding the test runner's stderr would keep it waiting.
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try output.close()
        for _ in 0..<400 {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first, text.hasSuffix("\n") {
                return PrivateBus(directory: directory, address: String(line), process: process)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        process.terminate()
        throw SupportError(description: "dbus-daemon did not print its address")
    }

    deinit { stop() }
}

/// The object the real tools call: every integer width, doubles, nested containers, variants,
/// empty arrays, properties and a child node.
enum TestObjects {
    static let path = "/org/example/Test"
    static let interface = "org.example.Test"

    static let secretType = DBusType.structure([.objectPath, .array(.byte), .array(.byte), .string])

    static func make() throws -> DBusObjectTree {
        let tree = DBusObjectTree()
        let label = LockedLabel()
        try tree.register(
            DBusInterface(
                interface,
                methods: methods,
                properties: [
                    DBusProperty(
                        "Label", type: .string, get: { _ in .string(label.value) },
                        set: { value, _ in
                            label.value = value.stringValue ?? ""
                        }),
                    DBusProperty("Count", type: .uint32, get: { _ in .uint32(42) }),
                ],
                signals: [DBusSignalDescription("Changed", arguments: [.init("what", .string)])]),
            at: path)
        try tree.register(
            DBusInterface(
                "org.example.Child",
                methods: [DBusMethod("Hello", outputs: [.init("greeting", .string)]) { _ in [.string("child")] }]),
            at: path + "/child")
        return tree
    }

    static let methods: [DBusMethod] = [
        DBusMethod("Echo", inputs: [.init("value", .variant)], outputs: [.init("value", .variant)]) { $0.arguments },
        DBusMethod(
            "Integers",
            inputs: [
                .init("y", .byte), .init("n", .int16), .init("q", .uint16), .init("i", .int32), .init("u", .uint32),
                .init("x", .int64), .init("t", .uint64), .init("d", .double), .init("b", .boolean),
            ],
            outputs: [
                .init("y", .byte), .init("n", .int16), .init("q", .uint16), .init("i", .int32), .init("u", .uint32),
                .init("x", .int64), .init("t", .uint64), .init("d", .double), .init("b", .boolean),
            ]
        ) { $0.arguments },
        DBusMethod("Add", inputs: [.init("a", .int32), .init("b", .int32)], outputs: [.init("sum", .int32)]) { call in
            guard case .int32(let a) = call.arguments[0], case .int32(let b) = call.arguments[1] else { return [] }
            return [.int32(a &+ b)]
        },
        DBusMethod(
            "GetSecrets", inputs: [.init("items", .array(.objectPath))],
            outputs: [.init("secrets", .dictionary(key: .objectPath, value: secretType))]
        ) { call in
            let entries = (call.arguments[0].arrayElements ?? []).map { item in
                DBusDictEntry(
                    item,
                    .structure([
                        .objectPath("/session/1"), .bytes([1, 2, 3]), .bytes(Array("pässwörd".utf8)),
                        .string("text/plain"),
                    ]))
            }
            return [.dictionary(key: .objectPath, value: secretType, entries)]
        },
        DBusMethod("Properties", outputs: [.init("props", .dictionary(key: .string, value: .variant))]) { _ in
            [
                .stringVariantDictionary([
                    "Label": .string("Work"), "Created": .uint64(1_700_000_000), "Locked": .boolean(false),
                    "Attributes": .dictionary(
                        key: .string, value: .string, [DBusDictEntry(.string("service"), .string("demo"))]),
                    "Nested": .variant(.array(.int32, [.int32(-1), .int32(2)])),
                ])
            ]
        },
        DBusMethod(
            "Empty",
            outputs: [
                .init("strings", .array(.string)), .init("props", .dictionary(key: .string, value: .variant)),
                .init("bytes", .array(.byte)), .init("structs", .array(.structure([.string, .string]))),
            ]
        ) { _ in
            [
                .array(.string, []), .dictionary(key: .string, value: .variant, []), .bytes([]),
                .array(.structure([.string, .string]), []),
            ]
        },
        DBusMethod("Fail") { _ in throw DBusError.method("org.example.Error.Nope", "as requested") },
        DBusMethod("Slow", outputs: [.init("done", .boolean)]) { _ in
            try await Task.sleep(for: .milliseconds(200))
            return [.boolean(true)]
        },
    ]
}

/// A string behind a lock, for the test property.
final class LockedLabel: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = "initial"
    var value: String {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// A server on a fresh socket serving ``TestObjects``.
struct TestServer {
    let directory: TemporaryDirectory
    let server: DBusServer
    var socketPath: String { directory.path + "/p2p.sock" }
    var address: String { "unix:path=\(socketPath)" }

    static func start(configure: (inout DBusServer.Configuration) -> Void = { _ in }) async throws -> TestServer {
        let directory = try TemporaryDirectory()
        var configuration = DBusServer.Configuration()
        configure(&configuration)
        let server = try await DBusServer.bind(
            unixPath: directory.path + "/p2p.sock", objects: try TestObjects.make(), configuration: configuration)
        return TestServer(directory: directory, server: server)
    }
}
