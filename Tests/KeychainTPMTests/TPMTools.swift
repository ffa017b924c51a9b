import Foundation
import KeychainTPM
import KeychainTestSupport
import Synchronization
import Testing

/// `tpm2-tools` and `openssl`, run as a cross-check of what KeychainTPM does.
enum TPMTools {
    /// Runs `/usr/bin/name` with `arguments` against the TPM at `tcti`, expecting success.
    /// - Returns: What it wrote to standard output.
    @discardableResult
    static func run(_ name: String, _ arguments: [String], tcti: String = "") throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/" + name)
        process.arguments = arguments
        process.environment = ["TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let diagnostics = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(name) \(arguments): \(diagnostics)")
        return data
    }

    /// Loads `blob` under the standard storage key with tpm2-tools, in `directory` (made here).
    /// - Returns: The path of the loaded object's context file.
    static func load(_ blob: TPMBlob, in directory: String, tcti: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try blob.publicArea.write(to: URL(fileURLWithPath: directory + "/object.pub"))
        try blob.privateArea.write(to: URL(fileURLWithPath: directory + "/object.priv"))
        // The storage key's template: tpm2-tools' ECC default plus noDA, as the TCG's SRK template has it.
        let attributes = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|decrypt"
        try run(
            "tpm2_createprimary",
            ["-C", "o", "-G", "ecc256:aes128cfb", "-a", attributes, "-c", directory + "/p.ctx", "-Q"], tcti: tcti)
        // swtpm has no resource manager: each tool leaves its objects loaded unless flushed.
        try run("tpm2_flushcontext", ["-t"], tcti: tcti)
        try run(
            "tpm2_load",
            [
                "-C", directory + "/p.ctx", "-u", directory + "/object.pub", "-r", directory + "/object.priv", "-c",
                directory + "/object.ctx", "-Q",
            ], tcti: tcti)
        try run("tpm2_flushcontext", ["-t"], tcti: tcti)
        return directory + "/object.ctx"
    }
}

/// Held while a test captures a TPM's traffic: tpm2-tss's pcap TCTI takes its file from
/// `TCTI_PCAP_FILE` when the TCTI starts, so two captures at once would write to one file.
private let captureGate = Mutex(())

extension TPMTools {
    /// Runs `body` with a TPM at `tcti` that writes every command and response to a capture of
    /// its own (tpm2-tss's pcap TCTI), one capture at a time.
    /// - Returns: What `body` returned, and the capture's bytes.
    static func capturingTraffic<T>(_ software: SoftwareTPM, _ body: (TPM) throws -> T) throws -> (T, Data) {
        try captureGate.withLock { _ in
            let capture = software.state + ".pcap"
            defer { try? FileManager.default.removeItem(atPath: capture) }
            // The test process's constructor set the variable, so this replaces its value in
            // place: adding a variable would move `environ` under the parallel tests' spawns.
            precondition(getenv("TCTI_PCAP_FILE") != nil, "the test environment presets TCTI_PCAP_FILE")
            setenv("TCTI_PCAP_FILE", capture, 1)
            let result = try body(try TPM(tcti: "pcap:" + software.tcti))
            return (result, FileManager.default.contents(atPath: capture) ?? Data())
        }
    }
}
