import CFido2
import Foundation
import KeychainCore
import KeychainModel
import UserPresence

/// A `.companion` item read in this process, answered by a touch of a security key, against the
/// floor: libfido2's own open and assertion on the same key, the challenge verified as the
/// keychain verifies it. The key is the tests' software CTAP2 key (a Python process behind a Unix
/// socket, which "touches" at once), so both rows are dominated by it; the ratio is what the
/// keychain adds around one assertion.
struct CompanionComparison {
    let options: BenchmarkOptions
    let lifecycle: Lifecycle
    let scratch: String
    let progress: (String) -> Void

    /// The software key's script.
    static let script =
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/Tests/LocalAuthenticationTests/Clients/security_key.py"

    func run() -> CompanionResult {
        var result = CompanionResult()
        let directory = scratch + "/companion"
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let key = try ChildProcess.start(
                "/usr/bin/python3", [Self.script, directory + "/key.socket", directory + "/key"],
                environment: ["PATH": "/usr/bin:/bin"])
            defer { ChildProcess.stop(key.pid) }
            try Self.waitForReady(key.output)
            let device = SecurityKey.socketPrefix + directory + "/key.socket"
            let credential = try SecurityKey.pair(at: device, userName: "bench")
            let paired = [PairedSecurityKey(name: "bench", key: credential, device: device)]
            // The engine, its verifier touching the same key in its turn, as a read does.
            let paths = KeychainPaths(environment: ["HOME": directory, "XDG_CONFIG_HOME": directory + "/config"])
            try FileManager.default.createDirectory(
                atPath: paths.configurationDirectory, withIntermediateDirectories: true)
            var configuration = lifecycle.configuration
            configuration.userVerifier = KeyVerifier(paired: paired, registry: SecurityKeyRegistry(paths: paths))
            let engine = try KeychainDatabase.create(
                at: directory + "/companion.keychain-db", password: nil as String?, configuration: configuration)
            var item = Item(class: .genericPassword, attributes: [.service: .string("bench.companion")])
            item.attributes[.accessControl] = .data(
                StoredAccessControl(
                    flags: StoredAccessControl.companionFlag, protection: "ak", companions: [credential]
                )
                .serialized)
            item.data = Data("secret".utf8)
            _ = try engine.add(item)
            var query = ItemQuery(class: .genericPassword, attributes: [.service: .string("bench.companion")])
            query.authenticationUI = .allow
            guard try engine.findFirst(query, includeData: true)?.data == Data("secret".utf8) else {
                throw BenchmarkFailure("the touch did not read the .companion item")
            }
            let rounds = min(options.iterations, 100)
            progress("  companion: \(rounds) .companion reads with a touch, and libfido2's assertions alone")
            var samples = (read: [UInt64](), floor: [UInt64]())
            for round in 0..<(options.warmup + rounds) {
                let read = try Clock.time { _ = try engine.findFirst(query, includeData: true) }
                let floor = try Clock.time { try Self.libfido2Assertion(device: device, credential: credential) }
                guard round >= options.warmup else { continue }
                samples.read.append(read)
                samples.floor.append(floor)
            }
            result.read = Summary(nanoseconds: samples.read)
            result.assertion = Summary(nanoseconds: samples.floor)
        } catch {
            result.note = "\(error)"
        }
        return result
    }

    /// Touches the paired key for the engine, in the registry's turn.
    struct KeyVerifier: UserVerifier {
        let paired: [PairedSecurityKey]
        let registry: SecurityKeyRegistry
        func verifyUser() throws { throw KeychainError(.interactionNotAllowed, "no owner here") }
        func verifyCompanion() throws -> Data {
            try registry.inTurn { try SecurityKey.authenticate(paired).publicKey }
        }
    }

    /// Reads the key's first line ("ready", once its socket listens) from `output`, then closes it.
    static func waitForReady(_ output: Int32) throws {
        defer { close(output) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(output, &byte, 1) == 1, byte != 10 { line.append(byte) }
        guard String(decoding: line, as: UTF8.self) == "ready" else {
            throw BenchmarkFailure("the software security key did not start (python3-cryptography missing?)")
        }
    }

    /// The floor: libfido2's own calls for one touch, as the keychain makes them: open the key
    /// (its INIT and GetInfo), an assertion by `credential` over a fresh challenge with user
    /// presence, and its verification against the credential's public key.
    static func libfido2Assertion(device path: String, credential: CompanionKey) throws {
        guard let device = fido_dev_new(), let assertion = fido_assert_new(), let publicKey = es256_pk_new() else {
            throw BenchmarkFailure("libfido2 is out of memory")
        }
        var (ownedDevice, ownedAssertion, ownedKey): (OpaquePointer?, OpaquePointer?, OpaquePointer?) = (
            device, assertion, publicKey
        )
        defer {
            _ = fido_dev_close(device)
            fido_dev_free(&ownedDevice)
            fido_assert_free(&ownedAssertion)
            es256_pk_free(&ownedKey)
        }
        var io = SocketTransport.functions
        var challenge = [UInt8](repeating: 0, count: 32)
        for index in challenge.indices { challenge[index] = UInt8.random(in: 0...255) }
        var status = fido_dev_set_io_functions(device, &io)
        if status == FIDO_OK { status = fido_dev_open(device, path) }
        if status == FIDO_OK { status = fido_assert_set_rp(assertion, SecurityKey.relyingParty) }
        if status == FIDO_OK { status = fido_assert_set_clientdata_hash(assertion, challenge, challenge.count) }
        if status == FIDO_OK { status = fido_assert_set_up(assertion, FIDO_OPT_TRUE) }
        if status == FIDO_OK {
            status = credential.credentialID.withUnsafeBytes {
                fido_assert_allow_cred(assertion, $0.bindMemory(to: UInt8.self).baseAddress, $0.count)
            }
        }
        if status == FIDO_OK { status = fido_dev_get_assert(device, assertion, nil) }
        if status == FIDO_OK {
            status = credential.publicKey.withUnsafeBytes { es256_pk_from_ptr(publicKey, $0.baseAddress, $0.count) }
        }
        if status == FIDO_OK { status = fido_assert_verify(assertion, 0, COSE_ES256, UnsafeRawPointer(publicKey)) }
        guard status == FIDO_OK else { throw BenchmarkFailure("libfido2: \(String(cString: fido_strerr(status)))") }
    }
}

/// The companion rows.
struct CompanionResult: Codable, Sendable {
    /// A `.companion` item read in this process, with a touch.
    var read: Summary?
    /// libfido2's open and assertion on the same key, verified (the floor).
    var assertion: Summary?
    /// Why the rows are missing.
    var note: String?

    /// The read ÷ the assertion.
    var readOverAssertion: Double? {
        guard let read, let assertion else { return nil }
        return read.medianMicroseconds / assertion.medianMicroseconds
    }
}
