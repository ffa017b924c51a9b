import Foundation
import Testing

/// The second backend of the tool's tests: every test of this module runs once more with each
/// `security` process opening its keychains itself (`KEYCHAIN_AGENT=off`), in a run of this very
/// bundle. The first run, this one, goes through the session agent, as users run the tool.
@Suite struct InProcessBackendTests {
    @Test(
        "every security tool test passes in process too",
        .enabled(if: ToolBackend.current == .agent, "this is the in-process run itself"))
    func everyToolTestPassesInProcess() throws {
        let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bundle)
        process.arguments = ["--testing-library", "swift-testing", "--filter", "^SecurityToolTests\\."]
        var environment = ProcessInfo.processInfo.environment
        environment["SECURITY_TOOL_TESTS_BACKEND"] = ToolBackend.inProcess.rawValue
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let failures = Self.failures(in: printed)
        #expect(process.terminationStatus == 0, "\(failures)\n\(printed.suffix(1500))")
        // It ran this module's tests (not an empty filter): the same count as this run has.
        let summary = printed.split(separator: "\n").last { $0.contains("Test run with") }.map(String.init) ?? ""
        #expect(summary.contains(" tests in "), "\(printed.suffix(1500))")
    }

    /// Each failure the run reported, with the lines of its comment (`↳`): what the failing
    /// command printed, so a failure of the rerun can be told from the first run's report alone.
    static func failures(in printed: String) -> String {
        var kept: [Substring] = []
        var inFailure = false
        for line in printed.split(separator: "\n") {
            if line.contains("✘") {
                inFailure = true
                kept.append(line)
            } else if inFailure, line.trimmingCharacters(in: .whitespaces).hasPrefix("↳") {
                kept.append(line)
            } else {
                inFailure = false
            }
        }
        return kept.prefix(120).joined(separator: "\n")
    }
}
