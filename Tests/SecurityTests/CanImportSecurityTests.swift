// A package beside ours that says `#if canImport(Security)` (issue 50, item 19). SwiftPM lets a
// target see every module built before it, so swift-certificates' X509 takes its Apple path
// whenever our `Security` happens to be built first, though it does not depend on it. It then
// failed with 108 "missing required module 'GRDBSQLite'" errors: `Security`'s module asked its
// clients for the engine's modules, and through them for clang modules only our own targets are
// given. The test builds a small package that depends on both, in both orders, with the real
// `swift build`, and runs swift-certificates' `SecCertificate` bridge on ours.

import Foundation
import KeychainTestSupport
import KeychainLibc
import Testing

@Suite("A package that says #if canImport(Security) builds beside ours")
struct CanImportSecurityTests {
    @Test(
        "swift-certificates builds before or after Security, and its SecCertificate bridge runs on ours",
        .timeLimit(.minutes(30)))
    func swiftCertificatesInBothOrders() async throws {
        let fixture = try BridgeFixture()
        defer { fixture.remove() }
        // X509 first: it compiles with no Security module in sight, so without its bridge.
        try await fixture.build(["--target", "X509"])
        try await fixture.build([])
        #expect(try await fixture.run() == BridgeFixture.output(bridge: "absent"))
        // Then as when Security is built first: X509's sources, touched, are compiled again with
        // our module in sight, and take their Apple path. One scratch directory serves both
        // orders, so the engine and its dependencies are built once.
        try fixture.touchX509Sources()
        try await fixture.build([])
        #expect(try await fixture.run() == BridgeFixture.output(bridge: "present"))
    }
}

/// Why a step of the fixture's build or run failed, with what the tool printed.
private struct FixtureFailure: Error, CustomStringConvertible {
    var description: String
}

/// A package in a temporary directory that depends on this checkout (product `Security`) and on
/// swift-certificates, with an executable that round-trips a certificate through X509's bridge.
private struct BridgeFixture {
    /// This checkout: the package under test.
    static let checkout = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The one line the executable prints, with `bridge` "present" when swift-certificates' own
    /// bridge ran and "absent" when the fixture's stand-ins did.
    static func output(bridge: String) -> String {
        "round trip: true, summary: Bridge Fixture, bridge: \(bridge)"
    }

    let directory: URL
    let swift: String

    /// Writes the package; finds `swift` first, so that a missing toolchain fails the test.
    init() throws {
        swift = try Self.swiftExecutable()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("canimport-security-\(UUID().uuidString)", isDirectory: true)
        let sources = directory.appendingPathComponent("Sources/BridgeCheck", isDirectory: true)
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try Data(Self.manifest.utf8).write(to: directory.appendingPathComponent("Package.swift"))
        try Data(Self.mainSource.utf8).write(to: sources.appendingPathComponent("main.swift"))
    }

    /// Removes the package, its build and the lock files SwiftPM leaves beside it (named after
    /// the scratch directory's path).
    func remove() {
        let parent = directory.deletingLastPathComponent()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []
        for name in names where name.contains(directory.lastPathComponent) {
            try? FileManager.default.removeItem(at: parent.appendingPathComponent(name))
        }
    }

    private var scratch: URL { directory.appendingPathComponent(".build", isDirectory: true) }

    /// `swift build` with `arguments`; fails with its errors unless it exits with status 0.
    func build(_ arguments: [String]) async throws {
        let log = directory.appendingPathComponent("build.log")
        let command = ["build", "--package-path", directory.path, "--scratch-path", scratch.path] + arguments
        let status = try await runLogged(swift, command, log: log, timeout: .seconds(15 * 60))
        guard status == 0 else {
            throw FixtureFailure(
                description: "swift \(command.joined(separator: " ")) exited with \(status):\n"
                    + Self.summary(of: (try? String(contentsOf: log, encoding: .utf8)) ?? ""))
        }
    }

    /// Runs the built executable and returns what it printed, without the final newline.
    func run() async throws -> String {
        let log = directory.appendingPathComponent("run.log")
        let executable = scratch.appendingPathComponent("debug/BridgeCheck").path
        let status = try await runLogged(executable, [], log: log, timeout: .seconds(60))
        let output = try String(contentsOf: log, encoding: .utf8).trimmingCharacters(in: .newlines)
        guard status == 0 else { throw FixtureFailure(description: "BridgeCheck exited with \(status): \(output)") }
        return output
    }

    /// Sets the modification time of every source file of swift-certificates' X509 to now, so that
    /// the next build compiles the module again.
    func touchX509Sources() throws {
        let sources = scratch.appendingPathComponent("checkouts/swift-certificates/Sources/X509")
        guard let walker = FileManager.default.enumerator(atPath: sources.path) else {
            throw FixtureFailure(description: "no swift-certificates checkout at \(sources.path)")
        }
        var touched = 0
        for case let name as String in walker where name.hasSuffix(".swift") {
            let path = sources.appendingPathComponent(name).path
            try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
            touched += 1
        }
        guard touched > 0 else { throw FixtureFailure(description: "no X509 sources under \(sources.path)") }
    }

    /// `swift` on `PATH`: the toolchain `swift test` was started from.
    private static func swiftExecutable() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/swift"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw FixtureFailure(description: "swift not found on PATH (\(path)): the test builds a package with it")
    }

    /// The distinct error lines of a build log, then its last lines.
    private static func summary(of log: String) -> String {
        let lines = log.components(separatedBy: "\n")
        var errors: [String] = []
        for line in lines where line.contains("error:") && !errors.contains(line) { errors.append(line) }
        return (errors.prefix(20) + ["…"] + lines.suffix(20)).joined(separator: "\n")
    }

    /// `path` as a Swift string literal.
    private static func literal(_ path: String) -> String {
        "\"" + path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The manifest: this checkout by path (its identity is its folder's name) and
    /// swift-certificates by URL, resolved as this package's own dependencies are.
    private static var manifest: String {
        """
        // swift-tools-version:6.2
        import PackageDescription

        let package = Package(
            name: "bridge-fixture",
            platforms: [.macOS(.v15)],
            dependencies: [
                .package(path: \(literal(checkout.path))),
                .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
            ],
            targets: [
                .executableTarget(
                    name: "BridgeCheck",
                    dependencies: [
                        .product(name: "Security", package: \(literal(checkout.lastPathComponent.lowercased()))),
                        .product(name: "X509", package: "swift-certificates"),
                    ]
                )
            ]
        )

        """
    }

    /// The executable: a certificate to `SecCertificate` and back through X509's bridge, or
    /// through stand-ins (less specific than a type's own members, so never chosen over them)
    /// when X509 was compiled without it.
    private static let mainSource = #"""
        import Foundation
        import Security
        import X509

        nonisolated(unsafe) var bridgeWasAbsent = false

        protocol BridgeStandIn {}
        extension Certificate: BridgeStandIn {}
        extension SecCertificate: BridgeStandIn {}

        extension BridgeStandIn where Self == Certificate {
            init(_ certificate: SecCertificate) throws {
                bridgeWasAbsent = true
                self = try Certificate(derEncoded: Array(SecCertificateCopyData(certificate) as Data))
            }
        }

        extension BridgeStandIn where Self == SecCertificate {
            static func makeWithCertificate(_ certificate: Certificate) throws -> SecCertificate {
                bridgeWasAbsent = true
                let der = try certificate.serializeAsPEM().derBytes
                return SecCertificateCreateWithData(nil, Data(der) as CFData)!
            }
        }

        let pem = """
            -----BEGIN CERTIFICATE-----
            MIIBhzCCAS2gAwIBAgIUBPFIu0T+d3JyJYJi3WJuzcmdRwwwCgYIKoZIzj0EAwIw
            GTEXMBUGA1UEAwwOQnJpZGdlIEZpeHR1cmUwHhcNMjYxMTI5MDMxNjE0WhcNMzYx
            MTI2MDMxNjE0WjAZMRcwFQYDVQQDDA5CcmlkZ2UgRml4dHVyZTBZMBMGByqGSM49
            AgEGCCqGSM49AwEHA0IABN4LFEhSfEONbOEMsp74MsWRzVGx/Cc2qSer5u3JkTlA
            h992hTBOLoiuYYFEyOlsDSdmnz5gDs9VLw/5zKoyYcqjUzBRMB0GA1UdDgQWBBTd
            KnVbu9udlbxGqG6I/vPszDWYDzAfBgNVHSMEGDAWgBTdKnVbu9udlbxGqG6I/vPs
            zDWYDzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIEwz/MpPa/cS
            qvaMaPtuEsaCDQT4v2ADUMFke2osi69MAiEAjI6axc7CxPA5mnc68ou9RmyStkVJ
            MwCYi8G7sw+ijZ8=
            -----END CERTIFICATE-----
            """
        let certificate = try Certificate(pemEncoded: pem)
        let secCertificate = try SecCertificate.makeWithCertificate(certificate)
        let summary = SecCertificateCopySubjectSummary(secCertificate) as String? ?? "none"
        let back = try Certificate(secCertificate)
        let bridge = bridgeWasAbsent ? "absent" : "present"
        print("round trip: \(back == certificate), summary: \(summary), bridge: \(bridge)")

        """#
}

/// Runs `executable` with its output and errors in `log` (standard input empty) and returns its exit
/// status (128 + the signal when one ended it). Waits without holding a thread; past `timeout` it
/// is terminated and the call throws.
private func runLogged(_ executable: String, _ arguments: [String], log: URL, timeout: Duration) async throws -> Int32 {
    let pid = try spawnWithDefaultSignals(executable, arguments, environment: ProcessInfo.processInfo.environment) {
        actions in
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
    }
    let deadline = ContinuousClock.now + timeout
    while true {
        var raw: Int32 = 0
        let waited = waitpid(pid, &raw, WNOHANG)
        if waited == pid { return (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f) }
        if waited == -1 && errno != EINTR { throw FixtureFailure(description: "waitpid: errno \(errno)") }
        do {
            guard ContinuousClock.now < deadline else { throw FixtureFailure(description: "\(executable) timed out") }
            try await Task.sleep(for: .milliseconds(250))
        } catch {
            terminate(pid)
            throw error
        }
    }
}

/// Ends a child that is still running: SIGTERM, then SIGKILL after 10 seconds; reaps it.
private func terminate(_ pid: pid_t) {
    kill(pid, SIGTERM)
    for _ in 0..<100 {
        if waitpid(pid, nil, WNOHANG) == pid { return }
        usleep(100_000)
    }
    kill(pid, SIGKILL)
    waitpid(pid, nil, 0)
}
