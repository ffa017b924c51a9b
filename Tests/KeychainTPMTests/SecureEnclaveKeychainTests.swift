import Crypto
import Foundation
import KeychainCore
import KeychainModel
import KeychainTPM
import KeychainTestSupport
import Testing

/// The engine's Secure Enclave keys with a TPM (``KeychainConfiguration/tokenKeyHardware``), on a
/// real `swtpm`: made and used in the TPM, the keychain keeping the TPM's blob.
@Suite struct SecureEnclaveKeychainTests {
    /// A keychain file and a TPM of its own: one machine.
    final class Machine {
        let directory = NSTemporaryDirectory() + "se-" + UUID().uuidString.prefix(8)
        let deviceKey = DeviceKeySource.ephemeral()
        private(set) var tpm: SoftwareTPM
        /// The TPM this machine started first, which owns (and removes) the state.
        private var first: SoftwareTPM?
        var path: String { directory + "/keys.keychain-db" }

        init() throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            tpm = try SoftwareTPM()
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// Stops the TPM and starts it again on its state: a reboot.
        func restartTPM() throws {
            tpm.stop()
            first = first ?? tpm
            tpm = try SoftwareTPM(state: tpm.state)
        }

        /// A process of this machine: with its TPM as token-key hardware, or (`nil`) with none.
        func open(hardware tcti: String?) throws -> KeychainDatabase {
            var configuration = KeychainConfiguration.testing(deviceKey: deviceKey)
            configuration.tokenKeyHardware = try tcti.map(TPMSecureEnclave.init(tcti:))
            if !FileManager.default.fileExists(atPath: path) {
                return try KeychainDatabase.create(at: path, password: nil as String?, configuration: configuration)
            }
            return try KeychainDatabase.open(at: path, configuration: configuration)
        }
    }

    static let digest = Data(SHA256.hash(data: Data("message".utf8)))

    static func verifies(_ signature: Data, _ publicKey: Data) throws -> Bool {
        try P256.Signing.PublicKey(x963Representation: publicKey).isValidSignature(
            P256.Signing.ECDSASignature(rawRepresentation: signature), for: PlainDigest(digest))
    }

    @Test("a stored Secure Enclave key is made and used in the TPM, and survives the TPM's and the keychain's restart")
    func storedKeysLiveInTheTPM() throws {
        let machine = try Machine()
        let keychain = try machine.open(hardware: machine.tpm.tcti)
        let template = Item(class: .key, attributes: [.label: .string("signing key")])
        let (publicKey, handle) = try keychain.createTokenKey(storing: template)
        #expect(try Self.verifies(keychain.useTokenKey(handle, TokenKeyRequest(.sign, input: Self.digest)), publicKey))
        // Callers see the public key as the item's data, as before.
        let stored = try keychain.findFirst(ItemQuery(class: .key), includeData: true)
        #expect(stored?.data == publicKey)
        // Another process of this machine, after the TPM restarted.
        try machine.restartTPM()
        let again = try machine.open(hardware: machine.tpm.tcti)
        #expect(try Self.verifies(again.useTokenKey(handle, TokenKeyRequest(.sign, input: Self.digest)), publicKey))
        // A process that uses no TPM cannot use it, and says why.
        let plain = try machine.open(hardware: nil)
        do {
            _ = try plain.useTokenKey(handle, TokenKeyRequest(.sign, input: Self.digest))
            Issue.record("a key in the TPM was used without it")
        } catch let error as KeychainError {
            #expect(error.code == .notAvailable && error.message.contains("TPM"), "\(error)")
        }
        // Another machine's TPM refuses it.
        let other = try SoftwareTPM()
        do {
            _ = try machine.open(hardware: other.tcti).useTokenKey(handle, TokenKeyRequest(.sign, input: Self.digest))
            Issue.record("another TPM used the key")
        } catch let error as KeychainError {
            #expect(error.code == .notAvailable && error.message.contains("another TPM"), "\(error)")
        }
    }

    @Test("a key made in the TPM agrees keys as swift-crypto does, with and without the X9.63 KDF")
    func keyExchangeInTheTPM() throws {
        let machine = try Machine()
        let keychain = try machine.open(hardware: machine.tpm.tcti)
        let (publicKey, handle) = try keychain.createTokenKey(storing: nil)
        let peer = P256.KeyAgreement.PrivateKey()
        let expected = try peer.sharedSecretFromKeyAgreement(
            with: P256.KeyAgreement.PublicKey(x963Representation: publicKey))
        let raw = try keychain.useTokenKey(
            handle, TokenKeyRequest(.keyExchange, input: peer.publicKey.x963Representation))
        #expect(raw == expected.withUnsafeBytes { Data($0) })
        let info = Data("info".utf8)
        let derived = try keychain.useTokenKey(
            handle,
            TokenKeyRequest(
                .keyExchange, input: peer.publicKey.x963Representation, kdfHash: 256, sharedInfo: info, outputSize: 48))
        let reference = expected.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: info, outputByteCount: 48)
        #expect(derived == reference.withUnsafeBytes { Data($0) })
        // A bad peer key and a bad size: the engine's errors, as for a key in memory.
        var bad = peer.publicKey.x963Representation
        bad[64] ^= 1
        let refused = #expect(throws: KeychainError.self) {
            try keychain.useTokenKey(handle, TokenKeyRequest(.keyExchange, input: bad))
        }
        #expect(refused?.code == .parameter)
        let tooBig = #expect(throws: KeychainError.self) {
            try keychain.useTokenKey(
                handle,
                TokenKeyRequest(.keyExchange, input: peer.publicKey.x963Representation, kdfHash: 256, outputSize: 0))
        }
        #expect(tooBig?.code == .parameter)
    }

    @Test("without a TPM, Secure Enclave keys stay in memory as before")
    func withoutATPMKeysStayInMemory() throws {
        let machine = try Machine()
        let keychain = try machine.open(hardware: nil)
        let (publicKey, handle) = try keychain.createTokenKey(
            storing: Item(class: .key, attributes: [.label: .string("k")]))
        #expect(try Self.verifies(keychain.useTokenKey(handle, TokenKeyRequest(.sign, input: Self.digest)), publicKey))
        // Still usable by a process with a TPM: the key is not in it, and needs none.
        let withTPM = try machine.open(hardware: machine.tpm.tcti)
        #expect(try Self.verifies(withTPM.useTokenKey(handle, TokenKeyRequest(.sign, input: Self.digest)), publicKey))
    }
}
