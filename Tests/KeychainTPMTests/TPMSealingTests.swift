import Foundation
import KeychainLibc
import KeychainTPM
import KeychainTestSupport
import Testing

/// KeychainTPM against a real software TPM: `swtpm` started by each test with a state directory
/// of its own (a machine of its own), and `tpm2-tools` as a cross-check.
@Suite struct TPMSealingTests {

    static func random(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255) }) }

    @Test("a secret sealed by the TPM unseals with its authorization, for secrets of every size")
    func sealThenUnseal() throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        for size in [1, 32, 64, TPM.maximumSecret] {
            let secret = Self.random(size)
            let authorization = Self.random(32)
            let sealed = try tpm.seal(secret, authorization: authorization)
            #expect(try tpm.unseal(sealed, authorization: authorization) == secret)
            // Through storage and back.
            let stored = try TPMBlob(serialized: sealed.serialized)
            #expect(try tpm.unseal(stored, authorization: authorization) == secret)
        }
    }

    @Test("a wrong authorization is refused, and counted by the TPM")
    func wrongAuthorizationIsRefused() throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        let sealed = try tpm.seal(Self.random(32), authorization: Self.random(32))
        #expect(throws: TPMError.self) { try tpm.unseal(sealed, authorization: Self.random(32)) }
        do {
            _ = try tpm.unseal(sealed, authorization: Self.random(32))
            Issue.record("a wrong authorization unsealed")
        } catch let error as TPMError {
            #expect(error.kind == .authorizationFailed || error.kind == .lockedOut, "\(error)")
        }
    }

    @Test("a secret sealed on one machine does not unseal on another, with the right authorization")
    func anotherTPMCannotUnseal() throws {
        let authorization = Self.random(32)
        let first = try SoftwareTPM()
        let sealed = try TPM(tcti: first.tcti).seal(Self.random(32), authorization: authorization)
        let other = try SoftwareTPM()
        do {
            _ = try TPM(tcti: other.tcti).unseal(sealed, authorization: authorization)
            Issue.record("another TPM unsealed the secret")
        } catch let error as TPMError {
            #expect(error.kind == .notThisTPM, "\(error)")
            #expect(error.description.contains("another TPM"), "a clear error: \(error)")
        }
    }

    @Test("the same machine unseals after a restart (the storage key comes from the TPM's seed)")
    func theSameTPMAfterARestart() throws {
        let first = try SoftwareTPM()
        let authorization = Self.random(32)
        let secret = Self.random(48)
        let sealed = try TPM(tcti: first.tcti).seal(secret, authorization: authorization)
        first.stop()
        let again = try SoftwareTPM(state: first.state)
        #expect(try TPM(tcti: again.tcti).unseal(sealed, authorization: authorization) == secret)
    }

    @Test("a damaged or foreign blob is refused, never unsealed", arguments: 0..<20)
    func damagedBlobsAreRefused(seed: Int) throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        let authorization = Self.random(32)
        let sealed = try tpm.seal(Self.random(32), authorization: authorization)
        var bytes = sealed.serialized
        let index = Int.random(in: 0..<bytes.count)
        bytes[index] ^= UInt8.random(in: 1...255)
        do {
            let damaged = try TPMBlob(serialized: bytes)
            _ = try tpm.unseal(damaged, authorization: authorization)
            Issue.record("a damaged blob (byte \(index)) unsealed")
        } catch is TPMError {
            // Refused, with a TPMError.
        }
        #expect(throws: TPMError.self) { try TPMBlob(serialized: bytes.prefix(bytes.count / 2)) }
    }

    @Test("every byte of a blob's framing and its areas' own sizes is checked: each altered one is refused")
    func everySizeByteIsChecked() throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        let authorization = Self.random(32)
        let sealed = try tpm.seal(Self.random(32), authorization: authorization)
        let bytes = sealed.serialized
        let publicEnd = 3 + sealed.publicArea.count
        // The version, each area's length, and each area's own TPM2B size (byte 4 was seen to
        // load once altered: the TPM checks what follows the size, not the size).
        var unsealed: [String] = []
        for index in [0, 1, 2, 3, 4, publicEnd, publicEnd + 1, publicEnd + 2, publicEnd + 3] {
            for change in UInt8(1)...255 {
                var damaged = bytes
                damaged[index] ^= change
                if (try? tpm.unseal(try TPMBlob(serialized: damaged), authorization: authorization)) != nil {
                    unsealed.append("byte \(index) ^ \(change)")
                }
            }
        }
        #expect(unsealed.isEmpty, "\(unsealed.prefix(8))")
    }

    @Test("tpm2-tools unseals what KeychainTPM sealed: the standard storage key and object format")
    func tpm2ToolsUnsealsIt() throws {
        let software = try SoftwareTPM()
        let secret = Self.random(32)
        let authorization = Self.random(32)
        let sealed = try TPM(tcti: software.tcti).seal(secret, authorization: authorization)
        let directory = software.state + "-tools"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let object = try TPMTools.load(sealed, in: directory, tcti: software.tcti)
        let hex = authorization.map { String(format: "%02x", $0) }.joined()
        let unsealed = try TPMTools.run("tpm2_unseal", ["-c", object, "-p", "hex:" + hex], tcti: software.tcti)
        #expect(unsealed == secret)
    }

    @Test("the secret and its authorization never cross the TPM's bus in the clear (a pcap of every command)")
    func nothingInTheClearOnTheBus() throws {
        let software = try SoftwareTPM()
        let secret = Data("a keychain key that must not be on the bus".utf8)
        let authorization = Self.random(32)
        let (unsealed, traffic) = try TPMTools.capturingTraffic(software) { tpm in
            try tpm.unseal(try tpm.seal(secret, authorization: authorization), authorization: authorization)
        }
        #expect(unsealed == secret)
        #expect(traffic.count > 1_000, "the capture holds the commands")
        #expect(traffic.range(of: secret) == nil, "the secret is encrypted on the bus")
        #expect(traffic.range(of: authorization) == nil, "the authorization is never sent")
    }

    @Test("a secret sealed to PCR 7 unseals with no authorization until PCR 7 is extended")
    func sealedToTheBootState() throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        let secret = Self.random(32)
        let sealed = try tpm.seal(secret, toPCRs: [7])
        #expect(try tpm.unseal(sealed, fromPCRs: [7]) == secret)
        #expect(try tpm.unseal(TPMBlob(serialized: sealed.serialized), fromPCRs: [7]) == secret)
        // Another PCR extended: still the same boot state for PCR 7.
        try Self.extend(pcr: 8, on: software)
        #expect(try tpm.unseal(sealed, fromPCRs: [7]) == secret)
        // PCR 7 extended (another Secure Boot state): refused, with the reason.
        try Self.extend(pcr: 7, on: software)
        do {
            _ = try tpm.unseal(sealed, fromPCRs: [7])
            Issue.record("unsealed after PCR 7 changed")
        } catch let error as TPMError {
            #expect(error.kind == .policyFailed, "\(error)")
        }
        // Nor does an authorization-sealed unseal of it work: the object has no authorization value.
        #expect(throws: TPMError.self) { try tpm.unseal(sealed, authorization: Data()) }
    }

    @Test("a secret sealed to the boot state of one machine does not unseal on another")
    func bootStateSealIsThisMachines() throws {
        let first = try SoftwareTPM()
        let sealed = try TPM(tcti: first.tcti).seal(Self.random(32), toPCRs: [7])
        let other = try SoftwareTPM()
        do {
            _ = try TPM(tcti: other.tcti).unseal(sealed, fromPCRs: [7])
            Issue.record("another TPM unsealed it")
        } catch let error as TPMError {
            #expect(error.kind == .notThisTPM, "\(error)")
        }
    }

    /// Extends a SHA-256 PCR of `software` with `tpm2_pcrextend`.
    static func extend(pcr: Int, on software: SoftwareTPM) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tpm2_pcrextend")
        process.arguments = ["\(pcr):sha256=" + String(repeating: "ab", count: 32)]
        process.environment = ["TPM2TOOLS_TCTI": software.tcti, "PATH": "/usr/bin:/bin"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "tpm2_pcrextend \(pcr)")
    }

    @Test("a missing TPM is a clear error")
    func aMissingTPMIsAClearError() throws {
        do {
            let tpm = try TPM(tcti: "swtpm:path=/nonexistent/tpm")
            _ = try tpm.seal(Data([1]), authorization: Data())
            Issue.record("sealed without a TPM")
        } catch let error as TPMError {
            #expect(error.kind == .unavailable || error.kind == .failed, "\(error)")
        }
    }
}
