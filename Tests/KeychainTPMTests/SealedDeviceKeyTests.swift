import Foundation
import KeychainCore
import KeychainModel
import KeychainTPM
import KeychainTestSupport
import Testing

/// The device key file sealed to the TPM (`HardwareSealing.sealsDeviceKey`), on a real `swtpm`:
/// a copied home directory opens no password-less keychain and no "this device only" item.
@Suite struct SealedDeviceKeyTests {
    /// A directory with a device key file and a keychain, and one swtpm: one machine.
    final class Machine {
        let directory: String
        let tpm: SoftwareTPM
        var keyFile: String { directory + "/device.key" }
        var path: String { directory + "/login.keychain-db" }

        init() throws {
            directory = NSTemporaryDirectory() + "device-key-" + UUID().uuidString.prefix(8)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            tpm = try SoftwareTPM()
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// A process's configuration: sealing to `tpm` (this machine's by default), or none.
        func configuration(sealingTo tpm: SoftwareTPM? = nil, sealing: Bool = true) throws -> KeychainConfiguration {
            var configuration = KeychainConfiguration.testing(deviceKey: .file(at: keyFile))
            if sealing {
                configuration.hardwareSealing = HardwareSealing(
                    sealer: try TPMSealer(tcti: (tpm ?? self.tpm).tcti), keychains: [])
            }
            return configuration
        }

        var keyFileContents: Data { (try? Data(contentsOf: URL(fileURLWithPath: keyFile))) ?? Data() }
        var isKeyFileSealed: Bool { keyFileContents.starts(with: Data("keychain-linux device key v2 sealed\n".utf8)) }
    }

    static let item = SealedKeychainTests.item

    static func readsItem(_ keychain: KeychainDatabase) throws -> Bool { try SealedKeychainTests.readsItem(keychain) }

    @Test("a device key made by a process with a TPM is sealed, and a password-less keychain opens with it")
    func newDeviceKeyIsSealed() throws {
        let machine = try Machine()
        let created = try KeychainDatabase.create(
            at: machine.path, password: nil, configuration: machine.configuration())
        _ = try created.add(Self.item)
        #expect(machine.isKeyFileSealed)
        let again = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration())
        #expect(try Self.readsItem(again))
    }

    @Test("a plain device key file is sealed in place when read, its keychains kept whole")
    func plainDeviceKeyIsConvertedInPlace() throws {
        let machine = try Machine()
        let created = try KeychainDatabase.create(
            at: machine.path, password: nil, configuration: machine.configuration(sealing: false))
        _ = try created.add(Self.item)
        let plain = machine.keyFileContents
        #expect(plain.count == "keychain-linux device key v1\n".utf8.count + 32)
        let opened = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration())
        #expect(try Self.readsItem(opened))
        #expect(machine.isKeyFileSealed)
        // The key's bytes are nowhere in the file any more.
        let key = plain.suffix(32)
        #expect(machine.keyFileContents.range(of: key) == nil)
        let again = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration())
        #expect(try Self.readsItem(again))
    }

    @Test("the copied files on another machine open no password-less keychain, with a clear error")
    func anotherMachineOpensNothing() throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(at: machine.path, password: nil, configuration: machine.configuration())
        let other = try SoftwareTPM()
        let error = try #require(throws: KeychainError.self) {
            _ = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration(sealingTo: other))
        }
        #expect(error.reason == .sealedToAnotherTPM && error.isSetupProblem, "\(error)")
        #expect(machine.isKeyFileSealed, "the file is left as it was")
    }

    @Test(
        "a process with no TPM configured is told to use keychaind; a password keychain still opens with its password")
    func aProcessWithoutATPM() throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(at: machine.path, password: nil, configuration: machine.configuration())
        let error = try #require(throws: KeychainError.self) {
            _ = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration(sealing: false))
        }
        #expect(error.code == .notAvailable && error.isSetupProblem && error.message.contains("keychaind"), "\(error)")
        let withPassword = machine.directory + "/build.keychain-db"
        let created = try KeychainDatabase.create(
            at: withPassword, password: "P4ss", configuration: machine.configuration())
        try created.unlock(password: "P4ss")
        _ = try created.add(Self.item)
        let plain = try KeychainDatabase.open(at: withPassword, configuration: machine.configuration(sealing: false))
        try plain.unlock(password: "P4ss")
        #expect(try Self.readsItem(plain))
    }

    @Test("a TPM locked out by wrong passwords still unseals the device key")
    func lockoutLeavesTheDeviceKey() throws {
        let machine = try Machine()
        try SealedKeychainTests.tpm2(
            ["tpm2_dictionarylockout", "-s", "-n", "1", "-t", "3600", "-l", "3600"], tcti: machine.tpm.tcti)
        let created = try KeychainDatabase.create(
            at: machine.path, password: nil, configuration: machine.configuration())
        _ = try created.add(Self.item)
        let login = machine.directory + "/sealed.keychain-db"
        var sealingLogin = try machine.configuration()
        sealingLogin.hardwareSealing?.keychains = [login]
        let sealed = try KeychainDatabase.create(at: login, password: "login", configuration: sealingLogin)
        #expect(throws: KeychainError.self) { try sealed.unlock(password: "guess") }
        #expect(throws: KeychainError.self) { try sealed.unlock(password: "login") }
        // A new process (nothing unsealed yet) still opens the password-less keychain.
        let again = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration())
        #expect(try Self.readsItem(again))
    }

    @Test(
        "a cleared TPM and the login keychain's recovery key bring back the device key: this-device-only items and password-less keychains"
    )
    func recoveryKeyRestoresTheDeviceKey() throws {
        let machine = try Machine()
        var sealingLogin = try machine.configuration()
        sealingLogin.hardwareSealing?.keychains = [machine.path]
        let login = try KeychainDatabase.create(at: machine.path, password: "login", configuration: sealingLogin)
        try login.unlock(password: "login")
        _ = try login.add(Self.item)
        var deviceOnly = Self.item
        deviceOnly.attributes[.account] = .string("device")
        deviceOnly.attributes[.accessible] = .string(Accessibility.whenUnlockedThisDeviceOnly.rawValue)
        _ = try login.add(deviceOnly)
        let recovery = try login.makeRecoveryKey()
        let other = machine.directory + "/other.keychain-db"
        _ = try KeychainDatabase.create(at: other, password: nil, configuration: machine.configuration()).add(Self.item)
        #expect(machine.isKeyFileSealed)
        let sealedBefore = machine.keyFileContents

        // The TPM is cleared: the password-less keychain is out of reach, the login keychain
        // refuses its password, and its recovery key opens it whole.
        let cleared = try SoftwareTPM()
        var afterClear = try machine.configuration(sealingTo: cleared)
        afterClear.hardwareSealing?.keychains = [machine.path]
        #expect(throws: KeychainError.self) { _ = try KeychainDatabase.open(at: other, configuration: afterClear) }
        let reopened = try KeychainDatabase.open(at: machine.path, configuration: afterClear)
        #expect(throws: KeychainError.self) { try reopened.unlock(password: "login") }
        try reopened.changePassword(old: Data(recovery.utf8), new: Data("login".utf8))
        try reopened.unlock(password: "login")
        let found = try reopened.find(ItemQuery(class: .genericPassword), includeData: true)
        #expect(found.count == 2)

        // The device key file is sealed to the new TPM; the unreadable one is kept beside it.
        #expect(machine.isKeyFileSealed && machine.keyFileContents != sealedBefore)
        let beside = try FileManager.default.contentsOfDirectory(atPath: machine.directory)
            .filter { $0.hasPrefix("device.key.unreadable-") }
        #expect(beside.count == 1)
        let fresh = try machine.configuration(sealingTo: cleared)
        #expect(try Self.readsItem(KeychainDatabase.open(at: other, configuration: fresh)))
        let next = try KeychainDatabase.open(at: machine.path, configuration: afterClear)
        try next.unlock(password: "login")
        #expect(try next.find(ItemQuery(class: .genericPassword), includeData: true).count == 2)
    }

    @Test(
        "a process without a TPM that uses the recovery key reads every item, and never writes the device key in the clear"
    )
    func recoveryWithoutATPMLeavesTheSealedFile() throws {
        let machine = try Machine()
        let login = try KeychainDatabase.create(
            at: machine.path, password: "login", configuration: machine.configuration())
        try login.unlock(password: "login")
        var deviceOnly = Self.item
        deviceOnly.attributes[.accessible] = .string(Accessibility.whenUnlockedThisDeviceOnly.rawValue)
        _ = try login.add(deviceOnly)
        let recovery = try login.makeRecoveryKey()
        let sealed = machine.keyFileContents
        #expect(machine.isKeyFileSealed)
        let plain = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration(sealing: false))
        try plain.unlock(password: recovery)
        #expect(try Self.readsItem(plain), "the this-device-only item, with the key the recovery key kept")
        #expect(machine.keyFileContents == sealed, "the sealed file is left as it was")
        let files = try FileManager.default.contentsOfDirectory(atPath: machine.directory)
        #expect(!files.contains { $0.contains("unreadable") })
    }

    @Test("without a recovery key, a cleared TPM leaves a password keychain's password working for its other items")
    func withoutARecoveryKeyThePasswordStillOpens() throws {
        let machine = try Machine()
        let created = try KeychainDatabase.create(
            at: machine.path, password: "P4ss", configuration: machine.configuration())
        try created.unlock(password: "P4ss")
        _ = try created.add(Self.item)
        let cleared = try SoftwareTPM()
        let reopened = try KeychainDatabase.open(
            at: machine.path, configuration: machine.configuration(sealingTo: cleared))
        try reopened.unlock(password: "P4ss")
        #expect(try Self.readsItem(reopened))
        // Its password cannot change without this machine's keys, and says so.
        let error = try #require(throws: KeychainError.self) {
            try reopened.changePassword(old: Data("P4ss".utf8), new: Data("new".utf8))
        }
        #expect(error.isSetupProblem, "\(error)")
    }

    @Test("a damaged sealed device key is refused, and the file is left as it was", arguments: [40, 100, 200])
    func damagedSealedKeyIsRefused(offset: Int) throws {
        let machine = try Machine()
        _ = try KeychainDatabase.create(at: machine.path, password: nil, configuration: machine.configuration())
        var contents = machine.keyFileContents
        contents[offset] ^= 0x5A
        try contents.write(to: URL(fileURLWithPath: machine.keyFile))
        #expect(throws: KeychainError.self) {
            _ = try KeychainDatabase.open(at: machine.path, configuration: machine.configuration())
        }
        #expect(machine.keyFileContents == contents)
    }
}
