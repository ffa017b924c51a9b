import Crypto
import CryptoExtras
import Foundation
import KeychainClient
import KeychainCore

/// The login unlock `pam_keychain.so` starts (docs/login.md): `keychaind --pam login` run as a
/// process with the password on its standard input, unlocking the locked login keychain in a
/// running agent. Its floors, interleaved in the same rounds: the key derivation alone (scrypt
/// through swift-crypto's own call, with the login keychain's parameters), and a Swift process
/// that does nothing. The target (issue 52): at most 1.2× the two together.
struct LoginUnlock {
    let lifecycle: Lifecycle
    let scratch: String
    let repetitions: Int
    let progress: (String) -> Void

    func run() -> LoginUnlockResult {
        var result = LoginUnlockResult()
        do {
            guard let keychaind = lifecycle.agentExecutable, let bench = lifecycle.probeExecutable else {
                throw BenchmarkFailure("no keychaind or keychain-bench executable beside this one")
            }
            let home = scratch + "/login"
            let socket = home + "/agent.sock"
            let environment = [
                "HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_CONFIG_HOME": home + "/config",
                "XDG_RUNTIME_DIR": home, "KEYCHAIN_AGENT_SOCK": socket, "PATH": "/usr/bin:/bin",
            ]
            try FileManager.default.createDirectory(
                atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
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
            progress("  login unlock: keychaind --pam login, the key derivation alone, a Swift process doing nothing")
            var unlocks: [UInt64] = []
            var derivations: [UInt64] = []
            var processes: [UInt64] = []
            let salt = Data(repeating: 7, count: 16)
            for _ in 0..<repetitions {
                login.lock()
                unlocks.append(try Clock.time { try self.login(keychaind, environment: environment, input: input) })
                guard !login.isLocked else { throw BenchmarkFailure("keychaind --pam login did not unlock") }
                derivations.append(try Clock.time { _ = try self.derive(password, salt: salt) })
                processes.append(
                    try ChildProcess.run(bench, ["--internal-noop"], environment: environment, capture: false)
                        .nanoseconds)
            }
            result.unlock = Summary(nanoseconds: unlocks)
            result.keyDerivation = Summary(nanoseconds: derivations)
            result.swiftProcess = Summary(nanoseconds: processes)
            result.keyDerivationName = lifecycle.keyDerivation.description
        } catch {
            result.note = "not available: \(error)"
        }
        return result
    }

    /// One `keychaind --pam login`, as the PAM module starts it; fails unless it exits 0.
    private func login(_ keychaind: String, environment: [String: String], input: Data) throws {
        let outcome = try ChildProcess.run(
            keychaind, ["--pam", "login"], environment: environment, capture: true, input: input)
        guard outcome.status == 0 else {
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
    /// The key derivation alone, by swift-crypto's own call.
    var keyDerivation: Summary?
    /// `keychain-bench --internal-noop`: a Swift process that does nothing.
    var swiftProcess: Summary?
    /// The derivation's name (`scrypt(logN: 17, r: 8, p: 1)`).
    var keyDerivationName: String?
    /// Why the rows are missing.
    var note: String?

    /// The unlock ÷ (the derivation + the Swift process): the target is ≤ 1.2×.
    var unlockOverFloor: Double? {
        guard let unlock, let keyDerivation, let swiftProcess else { return nil }
        return unlock.medianMicroseconds / (keyDerivation.medianMicroseconds + swiftProcess.medianMicroseconds)
    }
}
