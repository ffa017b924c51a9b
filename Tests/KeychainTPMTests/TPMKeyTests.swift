import Crypto
import Foundation
import KeychainModel
import KeychainTPM
import KeychainTestSupport
import Testing

/// Secure Enclave keys in a real software TPM (`swtpm`, a machine of its own per test): made and
/// used in the TPM, checked by OpenSSL, swift-crypto and tpm2-tools.
@Suite struct TPMKeyTests {
    static func random(_ count: Int) -> Data { Data((0..<count).map { _ in UInt8.random(in: 0...255) }) }

    /// Whether OpenSSL verifies `signature` (`r‖s`) of `digest` under `publicKey` (`04‖X‖Y`).
    static func opensslVerifies(_ signature: Data, digest: Data, publicKey: Data) throws -> Bool {
        let directory = NSTemporaryDirectory() + "tpm-verify-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pem = try P256.Signing.PublicKey(x963Representation: publicKey).pemRepresentation
        try Data(pem.utf8).write(to: URL(fileURLWithPath: directory + "/key.pem"))
        try digest.write(to: URL(fileURLWithPath: directory + "/digest"))
        let der = try P256.Signing.ECDSASignature(rawRepresentation: signature).derRepresentation
        try der.write(to: URL(fileURLWithPath: directory + "/sig"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "pkeyutl", "-verify", "-pubin", "-inkey", directory + "/key.pem", "-in", directory + "/digest",
            "-sigfile", directory + "/sig",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// ECDH between a new key in `tpm` and a swift-crypto key, computed on both sides (expected equal).
    static func agreeWithSwiftCrypto(_ tpm: TPM) throws -> (shared: Data, expected: SharedSecret) {
        let (publicKey, blob) = try tpm.createKey()
        let peer = P256.KeyAgreement.PrivateKey()
        let shared = try tpm.sharedSecret(with: blob, peer: peer.publicKey.x963Representation)
        let expected = try peer.sharedSecretFromKeyAgreement(
            with: P256.KeyAgreement.PublicKey(x963Representation: publicKey))
        #expect(shared == expected.withUnsafeBytes { Data($0) })
        return (shared, expected)
    }

    @Test(
        "the TPM signs digests of every length, and OpenSSL verifies each signature", arguments: [20, 28, 32, 48, 64])
    func signaturesVerifyWithOpenSSL(digestLength: Int) throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        let (publicKey, blob) = try tpm.createKey()
        #expect(publicKey.count == 65 && publicKey.first == 4)
        let digest = Self.random(digestLength)
        let signature = try tpm.sign(digest, with: blob)
        #expect(signature.count == 64)
        #expect(try Self.opensslVerifies(signature, digest: digest, publicKey: publicKey))
        var other = digest
        other[0] ^= 1
        #expect(
            try !Self.opensslVerifies(signature, digest: other, publicKey: publicKey), "a signature of that digest only"
        )
        // Of a message's SHA-256, as swift-crypto verifies it.
        let message = Self.random(100)
        let messageSignature = try tpm.sign(Data(SHA256.hash(data: message)), with: blob)
        let key = try P256.Signing.PublicKey(x963Representation: publicKey)
        #expect(
            key.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: messageSignature), for: message))
    }

    @Test(
        "ECDH in the TPM agrees with swift-crypto's, and the X9.63 KDF with swift-crypto's",
        arguments: [1, 256, 384, 512])
    func keyAgreementMatchesSwiftCrypto(hashBits: Int) throws {
        let software = try SoftwareTPM()
        let (shared, expected) = try Self.agreeWithSwiftCrypto(try TPM(tcti: software.tcti))
        let info = Self.random(Int.random(in: 0...40))
        let size = Int.random(in: 1...100)
        let derived = X963KeyDerivation.derive(shared, hashBits: hashBits, sharedInfo: info, outputSize: size)
        let reference: SymmetricKey =
            switch hashBits {
            case 1: expected.x963DerivedSymmetricKey(using: Insecure.SHA1.self, sharedInfo: info, outputByteCount: size)
            case 256: expected.x963DerivedSymmetricKey(using: SHA256.self, sharedInfo: info, outputByteCount: size)
            case 384: expected.x963DerivedSymmetricKey(using: SHA384.self, sharedInfo: info, outputByteCount: size)
            default: expected.x963DerivedSymmetricKey(using: SHA512.self, sharedInfo: info, outputByteCount: size)
            }
        #expect(derived == reference.withUnsafeBytes { Data($0) })
    }

    @Test("a peer key that is not a point on P-256 is refused by the TPM")
    func aBadPeerIsRefused() throws {
        let software = try SoftwareTPM()
        let tpm = try TPM(tcti: software.tcti)
        let (_, blob) = try tpm.createKey()
        var peer = P256.KeyAgreement.PrivateKey().publicKey.x963Representation
        peer[64] ^= 1
        #expect(throws: TPMError.self) { try tpm.sharedSecret(with: blob, peer: peer) }
        #expect(throws: TPMError.self) { try tpm.sharedSecret(with: blob, peer: Data(peer.prefix(33))) }
    }

    @Test("a key survives the TPM's restart, and another TPM refuses it with a clear error")
    func boundToItsTPM() throws {
        let first = try SoftwareTPM()
        let enclave = try TPMSecureEnclave(tcti: first.tcti)
        let (publicKey, wrapped) = try enclave.createKey()
        let digest = Self.random(32)
        first.stop()
        let again = try SoftwareTPM(state: first.state)
        let signature = try TPMSecureEnclave(tcti: again.tcti).useKey(wrapped, TokenKeyRequest(.sign, input: digest))
        #expect(try Self.opensslVerifies(signature, digest: digest, publicKey: publicKey))
        let other = try SoftwareTPM()
        do {
            _ = try TPMSecureEnclave(tcti: other.tcti).useKey(wrapped, TokenKeyRequest(.sign, input: digest))
            Issue.record("another TPM used the key")
        } catch let error as KeychainError {
            #expect(error.code == .notAvailable && error.isSetupProblem, "\(error)")
            #expect(error.message.contains("another TPM"), "\(error)")
        }
        do {
            _ = try TPMSecureEnclave(tcti: "swtpm:path=/nonexistent/tpm").useKey(
                wrapped, TokenKeyRequest(.sign, input: digest))
            Issue.record("used without a TPM")
        } catch let error as KeychainError {
            #expect(error.code == .notAvailable && error.message.contains("no TPM answers"), "\(error)")
        }
    }

    @Test("saved contexts serve later connections, and those a restarted or other TPM refuses are replaced")
    func savedContexts() throws {
        let first = try SoftwareTPM()
        let contexts = TPMSavedContexts()
        let (publicKey, blob) = try TPM(tcti: first.tcti).createKey(contexts: contexts)
        let saved = try #require(contexts.storageKey)
        let digest = Self.random(32)
        for _ in 0..<3 {
            let signature = try TPM(tcti: first.tcti).sign(digest, with: blob, contexts: contexts)
            #expect(try Self.opensslVerifies(signature, digest: digest, publicKey: publicKey))
        }
        #expect(contexts.storageKey == saved, "loaded from the saved context, not derived again")
        #expect(contexts.count == 2, "the storage key's and the key's")
        // A reboot: the saved contexts no longer load; the same storage key is derived again.
        first.stop()
        let again = try SoftwareTPM(state: first.state)
        let signature = try TPM(tcti: again.tcti).sign(digest, with: blob, contexts: contexts)
        #expect(try Self.opensslVerifies(signature, digest: digest, publicKey: publicKey))
        #expect(contexts.storageKey != saved)
        // Another machine: neither context loads, and the blob does not load under its storage key.
        let other = try SoftwareTPM()
        #expect(throws: TPMError.self) { try TPM(tcti: other.tcti).sign(digest, with: blob, contexts: contexts) }
        // Many keys: at most the limit of contexts is kept.
        for _ in 0..<70 {
            let (_, another) = try TPM(tcti: again.tcti).createKey(contexts: contexts)
            _ = try TPM(tcti: again.tcti).sign(digest, with: another, contexts: contexts)
        }
        #expect(contexts.count == 64)
        withExtendedLifetime(first) {}
    }

    @Test("tpm2-tools loads the key's blob, reads the same public key and signs with it")
    func tpm2ToolsSeeTheSameKey() throws {
        let software = try SoftwareTPM()
        let (publicKey, blob) = try TPM(tcti: software.tcti).createKey()
        let directory = software.state + "-tools"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let object = try TPMTools.load(blob, in: directory, tcti: software.tcti)
        try TPMTools.run(
            "tpm2_readpublic", ["-c", object, "-f", "pem", "-o", directory + "/key.pem", "-Q"], tcti: software.tcti)
        let pem = try String(contentsOfFile: directory + "/key.pem", encoding: .utf8)
        #expect(try P256.Signing.PublicKey(pemRepresentation: pem).x963Representation == publicKey)
        // What the TPM says of the object: made by it, bound to it, never exportable.
        let described = String(
            decoding: try TPMTools.run("tpm2_readpublic", ["-c", object], tcti: software.tcti), as: UTF8.self)
        for attribute in ["fixedtpm", "fixedparent", "sensitivedataorigin", "sign", "decrypt"] {
            #expect(described.contains(attribute), "\(attribute) in \(described)")
        }
        let digest = Self.random(32)
        try digest.write(to: URL(fileURLWithPath: directory + "/digest"))
        try TPMTools.run("tpm2_flushcontext", ["-t"], tcti: software.tcti)
        try TPMTools.run(
            "tpm2_sign",
            ["-c", object, "-g", "sha256", "-d", "-f", "plain", "-o", directory + "/sig", directory + "/digest"],
            tcti: software.tcti)
        let der = try Data(contentsOf: URL(fileURLWithPath: directory + "/sig"))
        let key = try P256.Signing.PublicKey(x963Representation: publicKey)
        #expect(key.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: PlainDigest(digest)))
    }

    @Test("a damaged key blob is refused, never used", arguments: 0..<12)
    func damagedBlobsAreRefused(seed: Int) throws {
        let software = try SoftwareTPM()
        let enclave = try TPMSecureEnclave(tcti: software.tcti)
        let (_, wrapped) = try enclave.createKey()
        var bytes = wrapped
        let index = Int.random(in: 0..<bytes.count)
        bytes[index] ^= UInt8.random(in: 1...255)
        do {
            _ = try enclave.useKey(bytes, TokenKeyRequest(.sign, input: Self.random(32)))
            Issue.record("a damaged blob (byte \(index)) was used")
        } catch let error as KeychainError {
            #expect([.decode, .notAvailable, .internalComponent].contains(error.code), "\(error)")
        }
    }

    @Test("the shared secret never crosses the TPM's bus in the clear (a pcap of every command)")
    func sharedSecretIsEncryptedOnTheBus() throws {
        let software = try SoftwareTPM()
        let ((shared, _), traffic) = try TPMTools.capturingTraffic(software) { try Self.agreeWithSwiftCrypto($0) }
        #expect(traffic.count > 1_000, "the capture holds the commands")
        #expect(traffic.range(of: shared) == nil, "the shared secret is encrypted on the bus")
    }
}

/// A digest as given, for swift-crypto's verification of a signature made over it.
struct PlainDigest: Digest {
    let bytes: Data
    init(_ bytes: Data) { self.bytes = bytes }
    static var byteCount: Int { 32 }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
    func makeIterator() -> Data.Iterator { bytes.makeIterator() }
    var description: String { "PlainDigest" }
}
