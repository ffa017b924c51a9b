import Foundation
import Testing

/// Runs the real `openssl` binary for fixtures and cross-checks. A missing `openssl` fails the
/// test that needs it (`.ci/run` installs it).
struct OpenSSL {
    /// Thrown (after an issue is recorded) when openssl is missing or fails: the test fails.
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// A fresh temporary directory, removed by ``cleanUp()``.
    let directory: URL

    init() throws {
        guard let path = Self.executable else {
            Issue.record("openssl is not installed: install it (apt-get install openssl); .ci/run does")
            throw Failure(message: "openssl is not installed")
        }
        _ = path
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pki-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    static let executable: String? = {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] {
            let path = directory + "/openssl"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Runs `openssl args…` in the directory; returns stdout (and stderr with `stderr: true`).
    /// Records an issue and throws when the exit status is not 0 unless `allowFailure`.
    @discardableResult
    func run(
        _ arguments: [String], input: [UInt8]? = nil, allowFailure: Bool = false, includeStandardError: Bool = false
    ) throws -> (
        output: String, status: Int32
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable ?? "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let stdout = Pipe()
        let stderr = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input)) }
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: out, as: UTF8.self)
        if process.terminationStatus != 0 && !allowFailure {
            Issue.record(
                "openssl \(arguments.joined(separator: " ")) failed: \(String(decoding: err, as: UTF8.self))")
            throw Failure(message: "openssl \(arguments.first ?? "") failed")
        }
        return (
            text + (allowFailure || includeStandardError ? String(decoding: err, as: UTF8.self) : ""),
            process.terminationStatus
        )
    }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: directory.appendingPathComponent(name))) }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: directory.appendingPathComponent(name))
    }

    func write(_ name: String, _ text: String) throws { try write(name, Array(text.utf8)) }

    /// Key generation arguments for `openssl req -newkey` / `genpkey`.
    enum KeyKind: String, CaseIterable, Sendable {
        case p256, p384, p521, rsa2048, rsa1024

        var newkey: [String] {
            switch self {
            case .p256: return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
            case .p384: return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"]
            case .p521: return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-521"]
            case .rsa2048: return ["-newkey", "rsa:2048"]
            case .rsa1024: return ["-newkey", "rsa:1024"]
            }
        }
    }

    /// A self-signed certificate `name.der` (+ `name.key` PEM, `name.pem`).
    func selfSigned(
        _ name: String, key: KeyKind = .p256, subject: String, extensions: [String] = [],
        digest: String = "sha256", extra: [String] = []
    ) throws -> [UInt8] {
        var arguments = ["req", "-x509"] + key.newkey + ["-nodes", "-keyout", "\(name).key", "-out", "\(name).pem"]
        arguments += ["-subj", subject, "-days", "30", "-\(digest)"] + extra
        for ext in extensions { arguments += ["-addext", ext] }
        try run(arguments)
        try run(["x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"])
        return try read("\(name).der")
    }

    /// A certificate `name.der` for a new key, signed by `issuer` (its `.pem` and `.key`).
    func issued(
        _ name: String, by issuer: String, key: KeyKind = .p256, subject: String,
        extensions: [String] = [], digest: String = "sha256", sigopts: [String] = [], days: String = "30"
    ) throws -> [UInt8] {
        try run(
            ["req", "-new"] + key.newkey + [
                "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject,
            ])
        try write("\(name).ext", extensions.joined(separator: "\n") + "\n")
        var arguments = [
            "x509", "-req", "-in", "\(name).csr", "-CA", "\(issuer).pem", "-CAkey", "\(issuer).key",
            "-CAcreateserial", "-out", "\(name).pem", "-days", days, "-\(digest)", "-extfile", "\(name).ext",
        ]
        for option in sigopts { arguments += ["-sigopt", option] }
        try run(arguments)
        try run(["x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"])
        return try read("\(name).der")
    }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02X", $0) }.joined() }
}
