import Foundation
import Testing

/// What the tool says when the machine's set-up, not the command, is at fault: the status
/// line macOS prints, then a line that says what to fix.
@Suite struct SetupErrorTests {
    /// In process: the process that opens the keychain looks for the device key where its own
    /// `XDG_CONFIG_HOME` says. Through the agent that process is the agent, whose environment a
    /// client never changes (docs/agent.md).
    @Test func aMissingDeviceKeyIsNamedNotReportedAsAWrongPassword() throws {
        let sandbox = try Sandbox()
        sandbox.agentMode = "off"
        #expect(try sandbox.run(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "pw"]).status == 0)
        let elsewhere = sandbox.root + "/elsewhere"
        let result = try sandbox.run(
            ["find-generic-password", "-s", "svc", "-w"], environment: ["XDG_CONFIG_HOME": elsewhere])
        #expect(result.status != 0, "\(result)")
        #expect(result.err.contains(elsewhere + "/keychain/device-key"), "\(result)")
        #expect(!result.err.contains("passphrase"), "\(result)")
        // The first line says what is wrong, not the status's generic "I/O error".
        let firstLine = result.err.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.contains("the device key file") && !firstLine.contains("I/O error"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere + "/keychain/device-key"))
        // The original key still opens everything.
        #expect(try sandbox.run(["find-generic-password", "-s", "svc", "-w"]).out == "pw\n")
    }

    @Test func aKeychainsDirectoryOthersCanWriteToIsRefusedWithTheFix() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.keychainsDirectory, withIntermediateDirectories: true)
        chmod(sandbox.keychainsDirectory, 0o777)
        let result = try sandbox.run(["add-generic-password", "-s", "svc", "-a", "acct", "-w", "pw"])
        #expect(result.status != 0, "\(result)")
        #expect(result.err.contains("chmod go-w \(sandbox.keychainsDirectory)"), "\(result)")
        #expect(!result.err.contains("pw\n"))
    }
}
