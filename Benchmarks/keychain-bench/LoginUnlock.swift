import Crypto
import CryptoExtras
import Foundation
import KeychainClient
import KeychainCore
import KeychainTPM
import ScratchTPM

/// The login unlock `pam_keychain.so` starts (docs/login.md): `keychaind --pam login` run as a
/// process with the password on its standard input, unlocking the locked login keychain in a
/// running agent. Its floors, interleaved in the same rounds: the key derivation alone (scrypt
/// through swift-crypto's own call, with the login keychain's parameters), and a Swift process
/// that does nothing. The target (issue 52): at most 1.2× the two together.
///
/// Sealed (``run(sealed:)`` with `true`): the same login with the login keychain sealed to a
/// private `swtpm`, against the key derivation plus `tpm2_unseal` of a sealed object on that same
/// swtpm (a process too); the target is again ≤ 1.2×.
struct LoginUnlock {
    let lifecycle: Lifecycle
    let scratch: String
    let repetitions: Int
    let progress: (String) -> Void

    func run(sealed: Bool = false) -> LoginUnlockResult {
        var result = LoginUnlockResult()
        do {
            guard let keychaind = lifecycle.agentExecutable, let bench = lifecycle.probeExecutable else {
                throw BenchmarkFailure("no keychaind or keychain-bench executable beside this one")
            }
            let home = scratch + (sealed ? "/login-sealed" : "/login")
            let socket = home + "/agent.sock"
            let environment = [
                "HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
                "XDG_RUNTIME_DIR": home, "KEYCHAIN_AGENT_SOCK": socket, "PATH": "/usr/bin:/bin",
            ]
            try FileManager.default.createDirectory(
                atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let tpm = sealed ? try SoftwareTPM(state: scratch + "/swtpm") : nil
            var unsealFloor: TPMUnsealFloor?
            if let tpm {
                try Self.useTPM(tpm, configuration: home + "/config")
                unsealFloor = try TPMUnsealFloor(tpm: tpm, directory: scratch + "/tpm2-tools")
            }
            defer { withExtendedLifetime(tpm) {} }
            var agentEnvironment = environment
            if lifecycle.options.testKeyDerivation { agentEnvironment["KEYCHAIN_UNSAFE_TEST_KDF"] = "1" }
            let agent = try BenchAgent.start(keychaind, socket: socket, environment: agentEnvironment)
            defer { withExtendedLifetime(agent) {} }
            let password = Data("login password of the benchmark".utf8)
            let input = Self.framed(password)
            // The first login creates the login keychain under the password: not timed.
            try login(keychaind, environment: environment, input: input)
            let login = try AgentConnection(socketPath: socket)
                .keychain(at: environment["XDG_DATA_HOME"]! + "/keychains/login.keychain-db")
            guard !login.isLocked, login.hasPassword else {
                throw BenchmarkFailure("keychaind --pam login left no unlocked password keychain")
            }
            progress(
                sealed
                    ? "  sealed login unlock: keychaind --pam login on a swtpm, the key derivation, tpm2_unseal"
                    : "  login unlock: keychaind --pam login, the key derivation alone, a Swift process doing nothing")
            // The same login through a PAM transaction, when pamtester and libpam-wrapper are here.
            var pam: PAMLogin?
            do {
                pam = try PAMLogin(
                    keychaind: keychaind, directory: home + "/pam", environment: environment, password: password)
            } catch {
                result.pamNote = "not available: \(error)"
            }
            var unlocks: [UInt64] = []
            var pamUnlocks: [UInt64] = []
            var derivations: [UInt64] = []
            var processes: [UInt64] = []
            var unseals: [UInt64] = []
            let salt = Data(repeating: 7, count: 16)
            for _ in 0..<repetitions {
                login.lock()
                unlocks.append(try Clock.time { try self.login(keychaind, environment: environment, input: input) })
                guard !login.isLocked else { throw BenchmarkFailure("keychaind --pam login did not unlock") }
                if let through = pam {
                    login.lock()
                    do {
                        pamUnlocks.append(try through.login())
                        guard !login.isLocked else {
                            throw BenchmarkFailure("a login through pam_keychain.so left the keychain locked")
                        }
                    } catch {
                        result.pamNote = "not available: \(error)"
                        pam = nil
                        try self.login(keychaind, environment: environment, input: input)
                    }
                }
                derivations.append(try Clock.time { _ = try self.derive(password, salt: salt) })
                if let unsealFloor { unseals.append(try unsealFloor.time()) }
                processes.append(
                    try ChildProcess.run(bench, ["--internal-noop"], environment: environment, capture: false)
                        .nanoseconds)
            }
            result.unlock = Summary(nanoseconds: unlocks)
            if pam != nil { result.throughPAM = Summary(nanoseconds: pamUnlocks) }
            result.keyDerivation = Summary(nanoseconds: derivations)
            result.swiftProcess = Summary(nanoseconds: processes)
            if sealed { result.tpmUnseal = Summary(nanoseconds: unseals) }
            if let tpm { try measureDeviceKeyOpen(tpm: tpm, directory: scratch + "/device-key", into: &result) }
            result.keyDerivationName = lifecycle.keyDerivation.description
        } catch {
            result.note = "not available: \(error)"
        }
        return result
    }

    /// Opening a password-less keychain in this process with its device key file sealed to the
    /// swtpm (a fresh configuration each time, so the TPM unseals it), and with a plain device
    /// key file: the sealed open's floor is the plain open plus `tpm2_unseal`.
    private func measureDeviceKeyOpen(tpm: SoftwareTPM, directory: String, into result: inout LoginUnlockResult) throws
    {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func configuration(_ name: String, sealed: Bool) throws -> KeychainConfiguration {
            var configuration = KeychainConfiguration.testing(deviceKey: .file(at: directory + "/" + name + ".key"))
            if sealed {
                configuration.hardwareSealing = HardwareSealing(sealer: try TPMSealer(tcti: tpm.tcti), keychains: [])
            }
            return configuration
        }
        for sealed in [false, true] {
            let name = sealed ? "sealed" : "plain"
            _ = try KeychainDatabase.create(
                at: directory + "/" + name + ".keychain-db", password: nil,
                configuration: configuration(name, sealed: sealed))
        }
        var plain: [UInt64] = []
        var sealedOpens: [UInt64] = []
        for _ in 0..<repetitions {
            for sealed in [false, true] {
                let name = sealed ? "sealed" : "plain"
                let configuration = try configuration(name, sealed: sealed)
                let elapsed = try Clock.time {
                    _ = try KeychainDatabase.open(
                        at: directory + "/" + name + ".keychain-db", configuration: configuration)
                }
                if sealed { sealedOpens.append(elapsed) } else { plain.append(elapsed) }
            }
        }
        result.plainDeviceKeyOpen = Summary(nanoseconds: plain)
        result.sealedDeviceKeyOpen = Summary(nanoseconds: sealedOpens)
    }

    /// One `keychaind --pam login`, as the PAM module starts it; fails unless it exits 0 (or 6,
    /// the first login, which made the login keychain).
    private func login(_ keychaind: String, environment: [String: String], input: Data) throws {
        let outcome = try ChildProcess.run(
            keychaind, ["--pam", "login"], environment: environment, capture: true, input: input)
        guard outcome.status == 0 || outcome.status == 6 else {
            throw BenchmarkFailure(
                "keychaind --pam login exited \(outcome.status): \(String(decoding: outcome.standardError, as: UTF8.self))"
            )
        }
    }

    /// The derivation the login keychain's password goes through (the agent's), by swift-crypto's
    /// own call with the same parameters.
    private func derive(_ password: Data, salt: Data) throws -> SymmetricKey {
        switch lifecycle.keyDerivation.algorithm {
        case .scrypt(let logN, let r, let p):
            return try KDF.Scrypt.deriveKey(
                from: password, salt: salt, outputByteCount: 32, rounds: 1 << Int(logN), blockSize: Int(r),
                parallelism: Int(p), maxMemory: lifecycle.keyDerivation.memoryCost)
        case .pbkdf2SHA256(let rounds):
            return try KDF.Insecure.PBKDF2.deriveKey(
                from: password, salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: Int(rounds))
        }
    }

    /// Names `tpm` in the preferences under `configuration` (`$XDG_CONFIG_HOME`), as a user would.
    static func useTPM(_ tpm: SoftwareTPM, configuration: String) throws {
        try KeychainPreferences.update(at: configuration + "/keychain/preferences.json") { $0.tpm = tpm.tcti }
    }

    /// The PAM module's framing: a 4-byte big-endian length, then the bytes.
    static func framed(_ secret: Data) -> Data {
        let length = UInt32(secret.count)
        return Data([UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
            + secret
    }
}

/// ``LoginUnlock``'s figures.
struct LoginUnlockResult: Codable, Sendable {
    /// `keychaind --pam login` unlocking the locked login keychain in a running agent (a whole
    /// process, spawn to exit).
    var unlock: Summary?
    /// The same unlock as a login runs it: `pamtester authenticate open_session` through
    /// `pam_keychain.so` (``PAMLogin``), a whole process, spawn to exit.
    var throughPAM: Summary?
    /// Why ``throughPAM`` is missing.
    var pamNote: String?
    /// The key derivation alone, by swift-crypto's own call.
    var keyDerivation: Summary?
    /// `keychain-bench --internal-noop`: a Swift process that does nothing.
    var swiftProcess: Summary?
    /// `tpm2_unseal` of a sealed object on the same swtpm (sealed rows only).
    var tpmUnseal: Summary?
    /// Opening a password-less keychain in process with a plain device key file (sealed rows only).
    var plainDeviceKeyOpen: Summary?
    /// The same with the device key file sealed to the swtpm, unsealed at the open.
    var sealedDeviceKeyOpen: Summary?
    /// The derivation's name (`scrypt(logN: 17, r: 8, p: 1)`).
    var keyDerivationName: String?
    /// Why the rows are missing.
    var note: String?

    /// The floor: the derivation + `tpm2_unseal` (sealed), else the derivation + the Swift process.
    var floorMicroseconds: Double? {
        guard let keyDerivation, let other = tpmUnseal ?? swiftProcess else { return nil }
        return keyDerivation.medianMicroseconds + other.medianMicroseconds
    }

    /// The unlock ÷ ``floorMicroseconds``: the target is ≤ 1.2×.
    var unlockOverFloor: Double? {
        guard let unlock, let floorMicroseconds else { return nil }
        return unlock.medianMicroseconds / floorMicroseconds
    }

    /// The login through PAM ÷ ``floorMicroseconds``: the target is ≤ 1.2×.
    var pamOverFloor: Double? {
        guard let throughPAM, let floorMicroseconds else { return nil }
        return throughPAM.medianMicroseconds / floorMicroseconds
    }

    /// The sealed device key's open ÷ (the plain open + `tpm2_unseal`).
    var sealedDeviceKeyOverFloor: Double? {
        guard let sealedDeviceKeyOpen, let plainDeviceKeyOpen, let tpmUnseal else { return nil }
        return sealedDeviceKeyOpen.medianMicroseconds
            / (plainDeviceKeyOpen.medianMicroseconds + tpmUnseal.medianMicroseconds)
    }
}

/// The floor of the sealed login unlock: `tpm2_unseal` (tpm2-tools, a process) of an object
/// sealed on the same swtpm under a 32-byte authorization, as the login keychain's is, under the
/// same storage key's template.
struct TPMUnsealFloor {
    let tools: [String: String]
    let directory: String
    let authorization: String

    init(tpm: SoftwareTPM, directory: String) throws {
        self.directory = directory
        tools = ["TPM2TOOLS_TCTI": tpm.tcti, "PATH": "/usr/bin:/bin"]
        authorization = "hex:" + (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: directory + "/secret", contents: Data(count: 32)) else {
            throw BenchmarkFailure("cannot write under \(directory)")
        }
        let (primary, secret, sealedPublic, sealedPrivate) = (
            file("p.ctx"), file("secret"), file("s.pub"), file("s.priv")
        )
        let attributes = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|decrypt"
        try tool("tpm2_createprimary", ["-C", "o", "-G", "ecc256:aes128cfb", "-a", attributes, "-c", primary])
        try tool(
            "tpm2_create", ["-C", primary, "-i", secret, "-p", authorization, "-u", sealedPublic, "-r", sealedPrivate])
        try tool("tpm2_flushcontext", ["-t"])
        try tool("tpm2_load", ["-C", primary, "-u", sealedPublic, "-r", sealedPrivate, "-c", file("o.ctx")])
        try tool("tpm2_flushcontext", ["-t"])
    }

    /// One timed `tpm2_unseal`; the object it leaves loaded is flushed after, untimed (swtpm has
    /// no resource manager).
    func time() throws -> UInt64 {
        let elapsed = try Clock.time {
            try tool("tpm2_unseal", ["-c", file("o.ctx"), "-p", authorization, "-o", file("out")])
        }
        try tool("tpm2_flushcontext", ["-t"])
        return elapsed
    }

    private func file(_ name: String) -> String { directory + "/" + name }

    private func tool(_ name: String, _ arguments: [String]) throws {
        try Self.run(name, arguments, environment: tools)
    }

    /// Runs the tpm2-tools program `name` (untimed), failing with what it said.
    static func run(_ name: String, _ arguments: [String], environment: [String: String]) throws {
        let outcome = try ChildProcess.run("/usr/bin/" + name, arguments, environment: environment, capture: true)
        guard outcome.status == 0 else {
            throw BenchmarkFailure(
                "\(name) exited \(outcome.status): \(String(decoding: outcome.standardError, as: UTF8.self))")
        }
    }
}
