import Crypto
import Foundation
import KeychainModel
import KeychainTestSupport
import Security
import Testing

/// Apple's Secure Enclave sample code, unchanged, in an application of its own
/// (`keychain-secitem-worker secure-enclave`) against a keychaind whose preferences name a real
/// `swtpm`: the key is made, used and kept in the TPM.
@Suite("Secure Enclave keys through keychaind, in a TPM", .serialized, .timeLimit(.minutes(10)))
struct SecureEnclaveAgentTests {
    /// A keychaind of the test's own, with a home whose preferences name `tpm`.
    final class Agent {
        let directory = FileManager.default.temporaryDirectory.path + "/se-agent-" + UUID().uuidString.prefix(8)
        private var daemon: TestDaemon?
        var socket: String { directory + "/run/agent.sock" }

        init(tpm: SoftwareTPM) throws {
            for sub in ["", "/run", "/home"] {
                try FileManager.default.createDirectory(
                    atPath: directory + sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            var preferences = KeychainPreferences()
            preferences.tpm = tpm.tcti
            let paths = KeychainPaths(environment: environment)
            try FileManager.default.createDirectory(
                atPath: (paths.preferencesFile as NSString).deletingLastPathComponent, withIntermediateDirectories: true
            )
            try preferences.save(to: paths.preferencesFile)
            try start()
        }

        deinit {
            stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        var environment: [String: String] {
            [
                "HOME": directory + "/home", "XDG_DATA_HOME": directory + "/home/data",
                "XDG_CONFIG_HOME": directory + "/home/config", "PATH": "/usr/bin:/bin",
                "KEYCHAIN_UNSAFE_TEST_KDF": "1", "KEYCHAIN_AGENT_SOCK": socket, "KEYCHAIN_AGENT": "required",
            ]
        }

        func start() throws {
            let daemon = try TestDaemon(Self.products + "/keychaind", ["--socket", socket], environment: environment)
            self.daemon = daemon
            for _ in 0..<600 where agentPid(at: socket) == nil { usleep(50_000) }
            guard agentPid(at: socket) != nil else {
                throw TestDaemonFailure(description: "keychaind never answered: \(daemon.errors)")
            }
        }

        func stop() {
            stopAgent(at: socket)
            daemon?.stop()
        }

        static let products: String = {
            let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
            return URL(fileURLWithPath: executable).deletingLastPathComponent().path
        }()

        /// Runs the worker's `secure-enclave` command; its one line of output.
        func worker(_ command: String, tag: String, input: Data = Data()) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.products + "/keychain-secitem-worker")
            process.arguments = ["secure-enclave", command, tag]
            process.environment = environment
            let output = Pipe()
            let inputPipe = Pipe()
            process.standardOutput = output
            process.standardInput = inputPipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            inputPipe.fileHandleForWriting.write(input)
            try inputPipe.fileHandleForWriting.close()
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    static func bytes(_ hex: Substring) -> Data {
        var data = Data()
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            data.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return data
    }

    /// The value after `word ` in the worker's line, or a recorded failure.
    static func value(_ line: String, _ word: String) throws -> Data {
        guard line.hasPrefix(word + " ") else {
            throw TestDaemonFailure(description: "expected \(word), the worker said: \(line)")
        }
        return bytes(line.dropFirst(word.count + 1))
    }

    @Test("Apple's sample code makes a key in the TPM, signs and decrypts with it, across keychaind's restart")
    func appleSampleCodeAgainstTheTPM() throws {
        var tpm = try SoftwareTPM()
        let firstTPM = tpm
        let agent = try Agent(tpm: tpm)
        let publicKey = try Self.value(try agent.worker("create", tag: "com.example.keys.mykey"), "public")
        let verifier = try P256.Signing.PublicKey(x963Representation: publicKey)
        let message = Data("sign me".utf8)
        func signs() throws -> Bool {
            let signature = try Self.value(
                try agent.worker("sign", tag: "com.example.keys.mykey", input: message), "signature")
            return verifier.isValidSignature(
                try P256.Signing.ECDSASignature(derRepresentation: signature), for: message)
        }
        #expect(try signs())
        // ECIES to the public key, in this process; decrypted by the key in the TPM.
        let plaintext = Data("a secret for the enclave".utf8)
        var error: Unmanaged<CFError>?
        let key = SecKeyCreateWithData(
            publicKey as CFData,
            [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeyClass: kSecAttrKeyClassPublic]
                as CFDictionary,
            &error)
        let cipherText = try #require(
            key.flatMap {
                SecKeyCreateEncryptedData(
                    $0, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, plaintext as CFData, &error)
            } as Data?)
        #expect(
            try Self.value(try agent.worker("decrypt", tag: "com.example.keys.mykey", input: cipherText), "plaintext")
                == plaintext)
        // The key is in the TPM: with the TPM gone, nothing signs, and the error says why.
        tpm.stop()
        let refused = try agent.worker("sign", tag: "com.example.keys.mykey", input: message)
        #expect(refused.hasPrefix("error") && refused.contains("TPM"), "\(refused)")
        // The machine reboots: the TPM and keychaind start again, and the key signs.
        tpm = try SoftwareTPM(state: firstTPM.state)
        agent.stop()
        var preferences = KeychainPreferences()
        preferences.tpm = tpm.tcti
        try preferences.save(to: KeychainPaths(environment: agent.environment).preferencesFile)
        try agent.start()
        #expect(try signs())
        withExtendedLifetime(firstTPM) {}
    }

    /// Runs `security secure-enclave` with `environment`: its status and output.
    static func securitySays(_ environment: [String: String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Agent.products + "/security")
        process.arguments = ["secure-enclave"]
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: printed, as: UTF8.self))
    }

    @Test("security secure-enclave says which TPM holds the keys, or that none does")
    func securitySaysWhere() throws {
        let tpm = try SoftwareTPM()
        let agent = try Agent(tpm: tpm)
        let inTPM = try Self.securitySays(agent.environment)
        #expect(inTPM.status == 0 && inTPM.output.contains("in the TPM 2.0 at \(tpm.tcti)"), "\(inTPM)")
        #expect(inTPM.output.contains("manufacturer IBM"), "swtpm is IBM's: \(inTPM)")
        let paths = KeychainPaths(environment: agent.environment)
        var preferences = KeychainPreferences()
        preferences.tpm = "none"
        try preferences.save(to: paths.preferencesFile)
        let none = try Self.securitySays(agent.environment)
        #expect(none.status == 0 && none.output.contains("in keychaind's memory"), "\(none)")
        tpm.stop()
        preferences.tpm = tpm.tcti
        try preferences.save(to: paths.preferencesFile)
        let silent = try Self.securitySays(agent.environment)
        #expect(silent.status == 1 && silent.output.contains("does not answer"), "\(silent)")
    }
}
