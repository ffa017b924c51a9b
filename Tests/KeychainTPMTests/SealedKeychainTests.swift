import Foundation
import GRDB
import KeychainCore
import KeychainModel
import KeychainTPM
import KeychainTestSupport
import Testing

/// A keychain whose password is entangled with a TPM (`HardwareSealing`), on a real `swtpm`.
@Suite struct SealedKeychainTests {
    /// A directory of its own, a device key of its own and one swtpm: one machine.
    final class Machine {
        let directory: String
        let tpm: SoftwareTPM
        let deviceKey = DeviceKeySource.ephemeral()
        var path: String { directory + "/login.keychain-db" }

        init(tpm existing: SoftwareTPM? = nil) throws {
            directory = NSTemporaryDirectory() + "sealed-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            tpm = try existing ?? SoftwareTPM()
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// The configuration of a process of this machine: the login keychain sealed to its TPM
        /// (`sealing: false`: a process with no TPM configured).
        func configuration(sealing: Bool = true, tpm: SoftwareTPM? = nil) throws -> KeychainConfiguration {
            var configuration = KeychainConfiguration.testing(deviceKey: deviceKey)
            if sealing {
                configuration.hardwareSealing = HardwareSealing(
                    sealer: try TPMSealer(tcti: (tpm ?? self.tpm).tcti), keychains: [path])
            }
            return configuration
        }

        /// Whether the file records a sealed secret: a process without a TPM cannot unlock it.
        func isSealed(password: String) throws -> Bool {
            let plain = try KeychainDatabase.open(at: path, configuration: try configuration(sealing: false))
            do {
                try plain.unlock(password: password)
                return false
            } catch let error as KeychainError where error.code == .notAvailable {
                #expect(error.message.contains("sealed to this machine's TPM"), "\(error)")
                return true
            }
        }
    }

    static let item = Item(
        class: .genericPassword, attributes: [.service: .string("mail"), .account: .string("me")],
        data: Data("hunter2".utf8))

    static func readsItem(_ keychain: KeychainDatabase) throws -> Bool {
        try keychain.findFirst(ItemQuery(class: .genericPassword), includeData: true)?.data == item.data
    }

    @Test("a sealed login keychain opens with its password on its machine, and its items read")
    func opensWithPasswordOnItsMachine() throws {
        let machine = try Machine()
        let created = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        try created.unlock(password: "login")
        _ = try created.add(Self.item)
        #expect(try machine.isSealed(password: "login"))
        let again = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try again.unlock(password: "login")
        #expect(try Self.readsItem(again))
    }

    @Test("the same files on another machine refuse the right password, with a clear error")
    func anotherMachineRefusesTheRightPassword() throws {
        let machine = try Machine()
        let created = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        try created.unlock(password: "login")
        _ = try created.add(Self.item)
        // The home directory and the device key copied, the TPM another one.
        let other = try SoftwareTPM()
        let copied = try KeychainDatabase.open(
            at: machine.path, configuration: try machine.configuration(tpm: other))
        do {
            try copied.unlock(password: "login")
            Issue.record("another machine's TPM opened the keychain")
        } catch let error as KeychainError {
            #expect(error.code == .authFailed && error.isSetupProblem, "\(error)")
            #expect(error.message.contains("another TPM") && error.message.contains("recovery key"), "\(error)")
        }
        #expect(copied.isLocked)
    }

    @Test("a wrong password is refused and counted by the TPM, which locks out guessing")
    func guessesAreCountedByTheTPM() throws {
        let machine = try Machine()
        // At most two failures before the TPM refuses every authorization for an hour.
        try Self.tpm2(["tpm2_dictionarylockout", "-s", "-n", "2", "-t", "3600", "-l", "3600"], tcti: machine.tpm.tcti)
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        for guess in ["guess1", "guess2"] {
            #expect(throws: KeychainError.self) { try keychain.unlock(password: guess) }
        }
        #expect(try Self.lockoutCounter(machine.tpm.tcti) == 2, "each wrong password counted")
        do {
            try keychain.unlock(password: "login")
            Issue.record("the TPM let a password through in lockout")
        } catch let error as KeychainError {
            #expect(error.code == .authFailed && error.message.contains("lockout"), "\(error)")
        }
        #expect(keychain.isLocked)
    }

    @Test("a password-less login keychain converted to the login password is sealed, items kept")
    func conversionSeals() throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: nil, configuration: try machine.configuration())
        _ = try keychain.add(Self.item)
        try keychain.changePassword(old: nil, new: Data("login".utf8))
        #expect(try machine.isSealed(password: "login"))
        let again = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try again.unlock(password: "login")
        #expect(try Self.readsItem(again))
    }

    @Test("a password change keeps the keychain sealed: the new password opens it, the old does not")
    func passwordChangeStaysSealed() throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "old", configuration: try machine.configuration())
        try keychain.unlock(password: "old")
        _ = try keychain.add(Self.item)
        // Not listed any more (the preference turned off): still sealed, never silently unsealed.
        var unlisted = try machine.configuration()
        unlisted.hardwareSealing?.keychains = []
        let handle = try KeychainDatabase.open(at: machine.path, configuration: unlisted)
        try handle.changePassword(old: Data("old".utf8), new: Data("new".utf8))
        #expect(try machine.isSealed(password: "new"))
        let again = try KeychainDatabase.open(at: machine.path, configuration: unlisted)
        #expect(throws: KeychainError.self) { try again.unlock(password: "old") }
        try again.unlock(password: "new")
        #expect(try Self.readsItem(again))
    }

    @Test("an unsealed login keychain is sealed at its next unlock; other keychains stay portable")
    func unlockSealsTheLoginKeychain() throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration(sealing: false))
        let other = machine.directory + "/other.keychain-db"
        _ = try KeychainDatabase.create(at: other, password: "other", configuration: try machine.configuration())
        #expect(try !machine.isSealed(password: "login"))
        let keychain = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try keychain.unlock(password: "login")
        #expect(try machine.isSealed(password: "login"))
        let plain = try KeychainDatabase.open(at: other, configuration: try machine.configuration(sealing: false))
        try plain.unlock(password: "other")
        #expect(!plain.isLocked, "a keychain not listed is not sealed: its file and password open it anywhere")
    }

    @Test("a TPM that does not answer when the login keychain is made leaves it unsealed, and the next unlock seals it")
    func aSilentTPMNeverStopsCreation() throws {
        let machine = try Machine()
        var absent = try machine.configuration()
        absent.hardwareSealing?.sealer = try TPMSealer(tcti: "swtpm:path=/nonexistent/tpm")
        let created = try KeychainDatabase.create(at: machine.path, password: "login", configuration: absent)
        try created.unlock(password: "login")
        _ = try created.add(Self.item)
        #expect(try !machine.isSealed(password: "login"))
        // Unlocked again where the TPM answers: sealed now, items kept.
        let again = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try again.unlock(password: "login")
        #expect(try machine.isSealed(password: "login"))
        #expect(try Self.readsItem(again))
    }

    @Test("a sealed keychain whose TPM does not answer refuses to change its password, and stays as it was")
    func aSealedKeychainNeverLosesItsSeal() throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(at: machine.path, password: "login", configuration: try machine.configuration())
        var absent = try machine.configuration()
        absent.hardwareSealing?.sealer = try TPMSealer(tcti: "swtpm:path=/nonexistent/tpm")
        let keychain = try KeychainDatabase.open(at: machine.path, configuration: absent)
        do {
            try keychain.changePassword(old: Data("login".utf8), new: Data("new".utf8))
            Issue.record("the password changed without the TPM")
        } catch let error as KeychainError {
            #expect(error.code == .notAvailable && error.message.contains("no TPM answers"), "\(error)")
        }
        let again = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try again.unlock(password: "login")
        #expect(try machine.isSealed(password: "login"))
    }

    @Test("a sealed keychain stripped of its sealed secret is refused as altered")
    func strippedSealIsRefused() throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(at: machine.path, password: "login", configuration: try machine.configuration())
        try DatabaseQueue(path: machine.path).write {
            try $0.execute(sql: "DELETE FROM meta WHERE name = 'kdf.sealed'")
        }
        do {
            let keychain = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
            try keychain.unlock(password: "login")
            Issue.record("a keychain stripped of its seal opened")
        } catch let error as KeychainError {
            #expect(error.code == .decode, "\(error)")
        }
    }

    @Test("a damaged sealed secret is refused as altered", arguments: 0..<6)
    func damagedSealIsRefused(seed: Int) throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(at: machine.path, password: "login", configuration: try machine.configuration())
        try DatabaseQueue(path: machine.path).write { db in
            var sealed = try #require(try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'kdf.sealed'"))
            sealed[sealed.startIndex + (seed * 37) % sealed.count] ^= 0x5A
            try db.execute(sql: "UPDATE meta SET value = ? WHERE name = 'kdf.sealed'", arguments: [sealed])
        }
        // The device key's seal over the header catches it as the file opens.
        do {
            let keychain = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
            try keychain.unlock(password: "login")
            Issue.record("a keychain with a damaged sealed secret opened")
        } catch let error as KeychainError {
            #expect(error.code == .decode, "\(error)")
        }
    }

    // MARK: The recovery key

    @Test("a cleared TPM and the recovery key open the keychain; a new password seals it to the new TPM")
    func recoveryKeyAfterTheTPMWasCleared() throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        try keychain.unlock(password: "login")
        _ = try keychain.add(Self.item)
        let recovery = try keychain.makeRecoveryKey()
        #expect(recovery.count == 32 && recovery.split(separator: "-").count == 7, "\(recovery.count) characters")
        // The TPM is cleared (a new state): the password no longer opens it.
        let cleared = try SoftwareTPM()
        let after = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration(tpm: cleared))
        #expect(throws: KeychainError.self) { try after.unlock(password: "login") }
        // The recovery key does, typed as a person would (lower case, spaces for dashes).
        try after.unlock(password: recovery.lowercased().replacingOccurrences(of: "-", with: " "))
        #expect(try Self.readsItem(after))
        // A new password, set with the recovery key, is sealed to the new TPM.
        try after.changePassword(old: Data(recovery.utf8), new: Data("again".utf8))
        let next = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration(tpm: cleared))
        try next.unlock(password: "again")
        #expect(try Self.readsItem(next))
        let old = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        #expect(throws: KeychainError.self) { try old.unlock(password: "again") }
    }

    @Test("a recovery key outlives password changes, and key rotation voids it")
    func recoveryKeyLifetime() throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "first", configuration: try machine.configuration())
        try keychain.unlock(password: "first")
        _ = try keychain.add(Self.item)
        let recovery = try keychain.makeRecoveryKey()
        try keychain.changePassword(old: Data("first".utf8), new: Data("second".utf8))
        let reopened = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try reopened.unlock(password: recovery)
        #expect(try Self.readsItem(reopened))
        try reopened.rotateKeys(password: Data("second".utf8))
        let rotated = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        #expect(throws: KeychainError.self) { try rotated.unlock(password: recovery) }
        try rotated.unlock(password: "second")
        #expect(try Self.readsItem(rotated))
    }

    @Test("a wrong or mistyped recovery key opens nothing", arguments: 0..<8)
    func wrongRecoveryKeysOpenNothing(seed: Int) throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        try keychain.unlock(password: "login")
        var recovery = Array(try keychain.makeRecoveryKey())
        let positions = recovery.indices.filter { recovery[$0] != "-" }
        let index = positions[(seed * 7) % positions.count]
        recovery[index] = recovery[index] == "A" ? "B" : "A"
        let reopened = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        #expect(throws: KeychainError.self) { try reopened.unlock(password: String(recovery)) }
        #expect(reopened.isLocked)
        // Another keychain's recovery key neither.
        let other = try KeychainDatabase.create(
            at: machine.directory + "/other.keychain-db", password: "x", configuration: try machine.configuration())
        try other.unlock(password: "x")
        let foreign = try other.makeRecoveryKey()
        #expect(throws: KeychainError.self) { try reopened.unlock(password: foreign) }
    }

    @Test("a recovery key needs the keychain unlocked, and a password")
    func recoveryKeyPreconditions() throws {
        let machine = try Machine()
        let locked = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        #expect(throws: KeychainError.self) { _ = try locked.makeRecoveryKey() }
        let passwordless = try KeychainDatabase.create(
            at: machine.directory + "/plain.keychain-db", password: nil, configuration: try machine.configuration())
        #expect(throws: KeychainError.self) { _ = try passwordless.makeRecoveryKey() }
    }

    // MARK: Unlock without a password

    @Test("turned on, the keychain unlocks without a password until the boot state changes, then with the password")
    func bootStateUnlock() throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration())
        try keychain.unlock(password: "login")
        _ = try keychain.add(Self.item)
        #expect(throws: KeychainError.self) { try keychain.setUnlocksWithBootState(true, password: Data("wrong".utf8)) }
        try keychain.setUnlocksWithBootState(true, password: Data("login".utf8))
        #expect(keychain.unlocksWithBootState)
        let autologin = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        try autologin.unlock(password: nil as Data?)
        #expect(try Self.readsItem(autologin))
        // The boot state changes (PCR 7 extended): the password is needed again, and said so.
        try TPMSealingTests.extend(pcr: 7, on: machine.tpm)
        let changed = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        do {
            try changed.unlock(password: nil as Data?)
            Issue.record("unlocked without a password after the boot state changed")
        } catch let error as KeychainError {
            #expect(error.code == .authFailed && error.message.contains("boot state changed"), "\(error)")
        }
        #expect(changed.isLocked)
        try changed.unlock(password: "login")
        #expect(try Self.readsItem(changed))
    }

    @Test("a password change keeps unlocking without a password; turning it off stops it")
    func bootStateUnlockFollowsThePassword() throws {
        let machine = try Machine()
        let keychain = try KeychainDatabase.create(
            at: machine.path, password: "old", configuration: try machine.configuration())
        try keychain.setUnlocksWithBootState(true, password: Data("old".utf8))
        try keychain.changePassword(old: Data("old".utf8), new: Data("new".utf8))
        let after = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        #expect(after.unlocksWithBootState)
        try after.unlock(password: nil as Data?)
        #expect(!after.isLocked)
        try after.setUnlocksWithBootState(false, password: nil)
        let off = try KeychainDatabase.open(at: machine.path, configuration: try machine.configuration())
        #expect(!off.unlocksWithBootState)
        #expect(throws: KeychainError.self) { try off.unlock(password: nil as Data?) }
        try off.unlock(password: "new")
    }

    @Test("without a TPM, or for a keychain without a password, unlocking without a password cannot be turned on")
    func bootStateUnlockNeedsATPMAndAPassword() throws {
        let machine = try Machine()
        let plain = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: try machine.configuration(sealing: false))
        do {
            try plain.setUnlocksWithBootState(true, password: Data("login".utf8))
            Issue.record("turned on without a TPM")
        } catch let error as KeychainError {
            #expect(error.code == .notAvailable && error.message.contains("TPM"), "\(error)")
        }
        let passwordless = try KeychainDatabase.create(
            at: machine.directory + "/plain.keychain-db", password: nil, configuration: try machine.configuration())
        #expect(throws: KeychainError.self) { try passwordless.setUnlocksWithBootState(true, password: nil) }
    }

    // MARK: Tools

    static func tpm2(_ arguments: [String], tcti: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/" + arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.environment = ["TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(arguments)")
    }

    /// The TPM's count of failed authorizations (`TPM2_PT_LOCKOUT_COUNTER`).
    static func lockoutCounter(_ tcti: String) throws -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tpm2_getcap")
        process.arguments = ["properties-variable"]
        process.environment = ["TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let line = text.split(separator: "\n").first(where: { $0.contains("TPM2_PT_LOCKOUT_COUNTER") }),
            let value = line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces)
        else { return nil }
        return Int(value.hasPrefix("0x") ? String(value.dropFirst(2)) : value, radix: 16)
    }
}
