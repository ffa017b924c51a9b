import Crypto
import Foundation
import KeychainClient
import KeychainCore
import KeychainModel
import KeychainTPM
import ScratchTPM

/// A Secure Enclave key's signature in a TPM (issue 55: at most 1.1× `tpm2_sign` on the same
/// swtpm in the same run): through keychaind (what `SecKeyCreateSignature` asks), and through
/// the engine in this process, against `tpm2_sign` with a key of the same template loaded from
/// its context file; swift-crypto's P-256 signature in memory is the software reference.
struct SecureEnclaveComparison {
    let options: BenchmarkOptions
    let lifecycle: Lifecycle
    let scratch: String
    let progress: (String) -> Void

    func run() -> SecureEnclaveResult {
        var result = SecureEnclaveResult()
        let directory = scratch + "/secure-enclave"
        do {
            try FileManager.default.createDirectory(
                atPath: directory + "/run", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let tpm = try SoftwareTPM(state: directory + "/swtpm")
            defer { withExtendedLifetime(tpm) {} }
            // Through keychaind, whose preferences name the swtpm.
            var environment = lifecycle.childEnvironment(keychain: directory + "/agent.keychain-db")
            environment["KEYCHAIN_DEFAULT_PATH"] = nil
            environment["HOME"] = directory
            environment["XDG_DATA_HOME"] = directory + "/data"
            environment["XDG_CONFIG_HOME"] = directory + "/config"
            try KeychainPreferences.update(at: directory + "/config/keychain/preferences.json") { $0.tpm = tpm.tcti }
            let socket = directory + "/run/agent.sock"
            let agent = try BenchAgent.start(lifecycle.agentExecutable, socket: socket, environment: environment)
            defer { withExtendedLifetime(agent) {} }
            let template = Item(class: .key, attributes: [.label: .string("bench")])
            let served = try AgentConnection(socketPath: socket)
                .createKeychain(at: directory + "/data/keychains/se.keychain-db", password: nil)
            let throughAgent = try served.createTokenKey(storing: template)
            // In this process.
            var configuration = KeychainConfiguration.testing(deviceKey: .file(at: directory + "/device-key"))
            configuration.tokenKeyHardware = try TPMSecureEnclave(tcti: tpm.tcti)
            let engine = try KeychainDatabase.create(
                at: directory + "/engine.keychain-db", password: nil as String?, configuration: configuration)
            let inProcess = try engine.createTokenKey(storing: template)
            let floor = try TPMSignFloor(tpm: tpm, directory: directory + "/tpm2-tools")
            let software = P256.Signing.PrivateKey()
            let digest = Data(SHA256.hash(data: Data("a message to sign".utf8)))
            let request = TokenKeyRequest(.sign, input: digest)
            progress("  Secure Enclave: \(options.iterations) P-256 signatures in a swtpm, and tpm2_sign's")
            var samples = (agent: [UInt64](), engine: [UInt64](), tools: [UInt64](), software: [UInt64]())
            for round in 0..<(options.warmup + min(options.iterations, 200)) {
                let timedAgent = try Clock.time { _ = try served.useTokenKey(throughAgent.handle, request) }
                let timedEngine = try Clock.time { _ = try engine.useTokenKey(inProcess.handle, request) }
                let timedTools = try floor.time()
                let timedSoftware = try Clock.time { _ = try software.signature(for: SHA256.hash(data: digest)) }
                guard round >= options.warmup else { continue }
                samples.agent.append(timedAgent)
                samples.engine.append(timedEngine)
                samples.tools.append(timedTools)
                samples.software.append(timedSoftware)
            }
            result.agent = Summary(nanoseconds: samples.agent)
            result.engine = Summary(nanoseconds: samples.engine)
            result.tpm2Sign = Summary(nanoseconds: samples.tools)
            result.software = Summary(nanoseconds: samples.software)
        } catch {
            result.note = "\(error)"
        }
        return result
    }
}

/// `tpm2_sign` of a P-256 key on the same swtpm, made and loaded once with tpm2-tools (the
/// template's attributes as ours: sign and decrypt, no DA), timed as a user runs it: a process
/// that loads the key from its context file and signs a digest.
struct TPMSignFloor {
    let tools: [String: String]
    let directory: String

    init(tpm: SoftwareTPM, directory: String) throws {
        self.directory = directory
        tools = ["TPM2TOOLS_TCTI": tpm.tcti, "PATH": "/usr/bin:/bin"]
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let digest = Data(SHA256.hash(data: Data("a message to sign".utf8)))
        guard FileManager.default.createFile(atPath: file("digest"), contents: digest) else {
            throw BenchmarkFailure("cannot write under \(directory)")
        }
        let storage = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|decrypt"
        try tool("tpm2_createprimary", ["-C", "o", "-G", "ecc256:aes128cfb", "-a", storage, "-c", file("p.ctx")])
        try tool("tpm2_flushcontext", ["-t"])
        let key = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|sign|decrypt"
        try tool(
            "tpm2_create",
            ["-C", file("p.ctx"), "-G", "ecc256:null", "-a", key, "-u", file("k.pub"), "-r", file("k.priv")])
        try tool("tpm2_flushcontext", ["-t"])
        try tool("tpm2_load", ["-C", file("p.ctx"), "-u", file("k.pub"), "-r", file("k.priv"), "-c", file("k.ctx")])
        try tool("tpm2_flushcontext", ["-t"])
    }

    /// One timed `tpm2_sign`; the key it leaves loaded is flushed after, untimed (swtpm has no
    /// resource manager).
    func time() throws -> UInt64 {
        let elapsed = try Clock.time {
            try tool(
                "tpm2_sign",
                ["-c", file("k.ctx"), "-g", "sha256", "-d", "-f", "plain", "-o", file("sig"), file("digest")])
        }
        try tool("tpm2_flushcontext", ["-t"])
        return elapsed
    }

    private func file(_ name: String) -> String { directory + "/" + name }

    private func tool(_ name: String, _ arguments: [String]) throws {
        try TPMUnsealFloor.run(name, arguments, environment: tools)
    }
}

/// A P-256 signature by a Secure Enclave key in a swtpm, each way, and `tpm2_sign`'s.
struct SecureEnclaveResult: Codable, Sendable {
    /// Through keychaind (a client's call, the keychain read, the TPM).
    var agent: Summary?
    /// Through the engine in this process.
    var engine: Summary?
    /// `tpm2_sign` on the same swtpm.
    var tpm2Sign: Summary?
    /// swift-crypto's P-256 signature in memory: what a key held in keychaind's memory costs.
    var software: Summary?
    /// Why the rows are missing.
    var note: String?

    /// Through keychaind ÷ `tpm2_sign`: the target is ≤ 1.1×.
    var agentOverTools: Double? {
        guard let agent, let tpm2Sign else { return nil }
        return agent.medianMicroseconds / tpm2Sign.medianMicroseconds
    }

    /// In this process ÷ `tpm2_sign`.
    var engineOverTools: Double? {
        guard let engine, let tpm2Sign else { return nil }
        return engine.medianMicroseconds / tpm2Sign.medianMicroseconds
    }
}
