import Foundation
import Testing

@testable import KeychainCore

/// The test process is hermetic whatever its user's environment holds (issue 56: `swift test`
/// was red for a newcomer who had run the README's first command, because the tests' worker
/// processes found that command's login keychain and refused to make a device key).
@Suite struct HermeticEnvironmentTests {
    @Test func theTestProcessHasItsOwnHomeAndNoneOfTheUsersKeychainSettings() {
        let environment = ProcessInfo.processInfo.environment
        let home = environment["HOME"] ?? ""
        #expect(home.contains("/keychain-tests-") && home.hasSuffix("/home"), "\(home)")
        for variable in ["XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"] {
            #expect(environment[variable]?.hasPrefix(String(home.dropLast("/home".count))) == true, "\(variable)")
        }
        for variable in [
            "KEYCHAIN_DEFAULT_PATH", "KEYCHAIN_PASSWORD", "KEYCHAIN_AGENT_SOCK", "DBUS_SESSION_BUS_ADDRESS",
        ] {
            #expect(environment[variable] == nil, "\(variable)")
        }
        #expect(environment["KEYCHAIN_AGENT"] == "off")
    }

    /// Runs a worker-based test of this very bundle as a newcomer's shell would after the
    /// README's first command: a login keychain and its device key in the real home, no XDG
    /// variables, the user's own default keychain and a session bus address that answers nothing.
    @Test func aWorkerTestPassesInANewcomersEnvironmentAndLeavesTheirHomeAlone() throws {
        let scratch = try Scratch()
        let home = scratch.file("home")
        let keychains = home + "/.local/share/keychains"
        let deviceKey = home + "/.config/keychain/device-key"
        try FileManager.default.createDirectory(atPath: keychains, withIntermediateDirectories: true)
        let login = try KeychainDatabase.create(
            at: keychains + "/login.keychain-db", password: nil,
            configuration: KeychainConfiguration(deviceKey: .file(at: deviceKey)))
        _ = try login.add(genericPassword("demo"))
        try login.close()
        let before = try FileManager.default.contentsOfDirectory(atPath: keychains).sorted()
        let keyBefore = FileManager.default.contents(atPath: deviceKey)

        let bundle = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bundle)
        process.arguments = ["--testing-library", "swift-testing", "--filter", "shortLivedProcessesLeaveNoLog"]
        process.environment = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": home,
            "KEYCHAIN_DEFAULT_PATH": home + "/mine.keychain-db", "KEYCHAIN_PASSWORD": "not-this",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(scratch.file("no-bus"))",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(printed.suffix(2000))")
        #expect(printed.contains("Test run with 1 test"), "\(printed.suffix(2000))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: keychains).sorted() == before)
        #expect(FileManager.default.contents(atPath: deviceKey) == keyBefore)
        #expect(!FileManager.default.fileExists(atPath: home + "/mine.keychain-db"))
    }
}
