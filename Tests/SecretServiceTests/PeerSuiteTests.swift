import Foundation
import KeychainLibc
import SecretService
import Testing

/// SecretStorage's and keyring's own test suites (their source distributions, which `.ci/run`
/// unpacks in `.venv/peer-suites`), run unchanged against keychaind and against the real GNOME
/// Keyring on private buses: every test that passes against GNOME Keyring passes against ours,
/// and none fails or errs against ours (issue 50: 12 of SecretStorage's 27 tests erred on ours).
@Suite("The peers' own test suites against keychaind and GNOME Keyring")
struct PeerSuiteTests {
    static let suites = SecretToolTests.repository + "/.venv/peer-suites"

    /// The suite's unpacked source: `<name>-<version>`.
    static func source(_ name: String) throws -> String {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: suites)) ?? []
        guard let directory = entries.first(where: { $0.hasPrefix(name + "-") }) else {
            throw ToolMissing(description: "\(suites)/\(name)-* is missing (bash .ci/run unpacks it)")
        }
        return suites + "/" + directory
    }

    /// Where a suite runs: keychaind activated by the bus, or GNOME Keyring started on it.
    enum Provider: String, CaseIterable, Sendable {
        case keychaind, gnomeKeyring
    }

    /// Runs `arguments` with the suites' Python on a fresh private bus served by `provider`.
    static func run(_ arguments: [String], on provider: Provider, pythonPath: String? = nil) throws -> ToolResult {
        let python = try requireTool(PythonClientTests.python)
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        var gnome: LaunchedTool?
        defer { gnome?.stop() }
        if provider == .gnomeKeyring {
            let daemon = try LaunchedTool(
                try requireTool("/usr/bin/gnome-keyring-daemon"), ["--foreground", "--unlock", "--components=secrets"],
                stdin: Data("gnome-password".utf8), environment: bus.environment, deadline: 600)
            gnome = daemon
            var owner: Int32?
            for _ in 0..<600 where owner != daemon.process.processIdentifier {
                owner = try bus.ownerPID(of: SecretServiceProvider.busName)
                usleep(50_000)
            }
            #expect(owner == daemon.process.processIdentifier, "GNOME Keyring owns the name")
            try waitForDefaultCollection(environment: bus.environment)
        }
        var environment = bus.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        if let pythonPath { environment["PYTHONPATH"] = pythonPath }
        return try runTool(python, arguments, environment: environment, deadline: 600)
    }

    /// The outcome of each test of a unittest run (`name ... ok`, `... ERROR`, `... skipped …`).
    static func unittestOutcomes(_ output: String) -> [String: String] {
        var outcomes: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let separator = line.range(of: " ... ") else { continue }
            let outcome = line[separator.upperBound...].split(separator: " ").first.map(String.init) ?? ""
            outcomes[String(line[..<separator.lowerBound])] = outcome
        }
        return outcomes
    }

    @Test func secretStoragesSuitePassesAgainstKeychaindWhereverItPassesAgainstGnomeKeyring() throws {
        let runner = try Self.source("secretstorage") + "/tests/run_tests.py"
        var outcomes: [Provider: [String: String]] = [:]
        for provider in Provider.allCases {
            let result = try Self.run([runner], on: provider)
            let output = String(decoding: result.stderr, as: UTF8.self) + result.out
            outcomes[provider] = Self.unittestOutcomes(output)
            #expect(outcomes[provider]?.count ?? 0 >= 20, "\(provider): \(output.suffix(3000))")
        }
        let ours = outcomes[.keychaind] ?? [:]
        let theirs = outcomes[.gnomeKeyring] ?? [:]
        #expect(ours.values.allSatisfy { $0 == "ok" || $0 == "skipped" }, "\(ours.filter { $0.value != "ok" })")
        for (test, outcome) in theirs where outcome == "ok" {
            #expect(ours[test] == "ok", "\(test) passes against GNOME Keyring, not against keychaind")
        }
        #expect(Set(ours.keys) == Set(theirs.keys))
    }

    /// keyring's two Secret Service backends: `SecretService` (through SecretStorage) and
    /// `libsecret` (through libsecret's GObject introspection, Debian's `python3-gi` and
    /// `gir1.2-secret-1`, which the venv sees through `PYTHONPATH`).
    static let keyringBackends: [(file: String, pythonPath: String?)] = [
        ("test_SecretService.py", nil),
        ("test_libsecret.py", "/usr/lib/python3/dist-packages"),
    ]

    @Test(arguments: keyringBackends.map(\.file))
    func keyringsSuitePassesAgainstKeychaindAsAgainstGnomeKeyring(backend: String) throws {
        let source = try Self.source("keyring")
        let pythonPath = Self.keyringBackends.first { $0.file == backend }?.pythonPath
        var summaries: [Provider: String] = [:]
        for provider in Provider.allCases {
            let result = try Self.run(
                [
                    "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", source, "-c", source + "/pytest.ini",
                    source + "/tests/backends/" + backend,
                ], on: provider, pythonPath: pythonPath)
            let summary = result.out.split(separator: "\n").last.map(String.init) ?? ""
            summaries[provider] = summary
            #expect(result.status == 0, "\(provider): \(result.out.suffix(3000))")
        }
        let ours = summaries[.keychaind] ?? ""
        let theirs = summaries[.gnomeKeyring] ?? ""
        // No test may be skipped: the suite skips itself when its backend cannot load (no
        // libsecret), which would pass silently.
        for summary in [ours, theirs] {
            #expect(
                summary.contains(" passed") && !summary.contains("failed") && !summary.contains("error")
                    && !summary.contains("skipped"), "\(summary)")
        }
        // The same number of tests passed ("16 passed in 1.19s": the count before " passed").
        func passed(_ summary: String) -> Int? {
            summary.split(separator: " ").first.flatMap { Int($0) }
        }
        #expect(passed(ours) != nil && passed(ours) == passed(theirs), "keychaind: \(ours); GNOME Keyring: \(theirs)")
    }
}
