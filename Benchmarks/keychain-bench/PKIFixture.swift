import Crypto
import CryptoExtras
import Foundation
import Security

/// The files of the PKI rows (``KeyOperation/pkcs12Import``, ``KeyOperation/trustEvaluate``), made
/// once per run by the real `openssl` in a temporary directory: a P-256 root, an intermediate and a
/// leaf (`root.pem`, `intermediate.pem`, `leaf.pem`) and `leaf.p12` (the leaf's key, the leaf and
/// the intermediate: two certificates, openssl 3's defaults: PBES2 with PBKDF2-HMAC-SHA256, 2048
/// rounds, AES-256-CBC for both bags, an HMAC-SHA256 MAC with 2048 rounds of the PKCS#12 KDF), and
/// `legacy.p12`, the same with `-legacy` (RC2-40 certificate bag, 3DES key, SHA-1 MAC).
struct PKIFixture: Sendable {
    static let passphrase = "bench"
    let p12: Data
    let legacyP12: Data
    let chain: [SecCertificate]
    let root: SecCertificate

    /// The run's fixture, or why there is none (no `openssl`: the rows say "not measured").
    static let shared: Result<PKIFixture, BenchmarkFailure> = {
        do { return .success(try make()) } catch let failure as BenchmarkFailure {
            return .failure(failure)
        } catch { return .failure(BenchmarkFailure("\(error)")) }
    }()

    private static func make() throws -> PKIFixture {
        let directory = FileManager.default.temporaryDirectory.path + "/keychain-bench-pki-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl"] + arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchmarkFailure("not measured: openssl \(arguments.first ?? "") failed or is missing")
            }
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "root.key", "-out", "root.pem", "-days", "30", "-subj", "/CN=Bench Root",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            ])
        try "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n".write(
            toFile: directory + "/ca.ext", atomically: true, encoding: .utf8)
        try openssl(
            ["req", "-new"] + ec + [
                "-keyout", "intermediate.key", "-out", "intermediate.csr", "-subj", "/CN=Bench Intermediate",
            ])
        try openssl([
            "x509", "-req", "-in", "intermediate.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial",
            "-out", "intermediate.pem", "-days", "30", "-extfile", "ca.ext",
        ])
        try openssl(
            ["req", "-new"] + ec + ["-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=bench.example.com"])
        try openssl([
            "x509", "-req", "-in", "leaf.csr", "-CA", "intermediate.pem", "-CAkey", "intermediate.key",
            "-CAcreateserial", "-out", "leaf.pem", "-days", "30",
        ])
        try openssl([
            "pkcs12", "-export", "-inkey", "leaf.key", "-in", "leaf.pem", "-certfile", "intermediate.pem", "-out",
            "leaf.p12", "-passout", "pass:\(passphrase)",
        ])
        try openssl([
            "pkcs12", "-export", "-legacy", "-inkey", "leaf.key", "-in", "leaf.pem", "-certfile", "intermediate.pem",
            "-out", "legacy.p12", "-passout", "pass:\(passphrase)",
        ])
        func certificate(_ name: String) throws -> SecCertificate {
            let text = try String(contentsOfFile: directory + "/" + name, encoding: .utf8)
            let body = text.components(separatedBy: "-----")[2]
            guard let der = Data(base64Encoded: body, options: .ignoreUnknownCharacters),
                let certificate = SecCertificateCreateWithData(nil, der as CFData)
            else { throw BenchmarkFailure("cannot read the benchmark's \(name)") }
            return certificate
        }
        return PKIFixture(
            p12: try Data(contentsOf: URL(fileURLWithPath: directory + "/leaf.p12")),
            legacyP12: try Data(contentsOf: URL(fileURLWithPath: directory + "/legacy.p12")),
            chain: [try certificate("leaf.pem"), try certificate("intermediate.pem")], root: try certificate("root.pem")
        )
    }

    /// `SecPKCS12Import` of the file, no keychain write (`kSecImportToMemoryOnly`-like: the items are
    /// returned, never stored).
    func importPKCS12(legacy: Bool = false) throws {
        var items: CFArray?
        let status = SecPKCS12Import(
            (legacy ? legacyP12 : p12) as CFData, [kSecImportExportPassphrase: Self.passphrase] as CFDictionary,
            &items)
        guard status == errSecSuccess, (items?.count ?? 0) == 1 else {
            throw BenchmarkFailure("SecPKCS12Import returned \(status)")
        }
    }

    /// `SecTrustEvaluateWithError` of leaf + intermediate with the root as the only anchor (a new trust
    /// object each time, so nothing is cached).
    func evaluateChain() throws {
        var trust: SecTrust?
        guard SecTrustCreateWithCertificates(chain as CFArray, SecPolicyCreateBasicX509(), &trust) == errSecSuccess,
            let trust
        else { throw BenchmarkFailure("SecTrustCreateWithCertificates failed") }
        SecTrustSetAnchorCertificates(trust, [root] as CFArray)
        var error: CFError?
        guard SecTrustEvaluateWithError(trust, &error) else {
            throw BenchmarkFailure("SecTrustEvaluateWithError failed: \(String(describing: error))")
        }
    }
}

/// The primitive floors of the PKI rows, on swift-crypto (an in-process OpenSSL floor would need a
/// libcrypto binding the package does not have).
struct PKIFloor: @unchecked Sendable {
    private let salt = Data(repeating: 0x5A, count: 8)
    private let password = Data("bench".utf8)
    private let cbcKey = SymmetricKey(size: .bits256)
    private let iv = try! AES._CBC.IV(ivBytes: [UInt8](repeating: 7, count: 16))
    private let certificateBag: Data
    private let keyBag: Data
    private let pkcs8: Data
    private let macInput = Data(repeating: 0x30, count: 1500)
    private let verifyKey: P256.Signing.PublicKey
    private let signature: P256.Signing.ECDSASignature
    private let message = Data(repeating: 0x42, count: 400)

    init() throws {
        certificateBag = try AES._CBC.encrypt(Data(repeating: 0x30, count: 1000), using: cbcKey, iv: iv)
        keyBag = try AES._CBC.encrypt(Data(repeating: 0x30, count: 150), using: cbcKey, iv: iv)
        let key = P256.Signing.PrivateKey()
        pkcs8 = key.derRepresentation
        verifyKey = key.publicKey
        signature = try key.signature(for: message)
    }

    /// What a two-certificate `.p12` import cannot avoid: two PBKDF2-HMAC-SHA256 derivations of 2048
    /// rounds (the bags' keys), the MAC key's PKCS#12 KDF (2048 SHA-256 rounds), an HMAC-SHA256 over
    /// the contents, AES-256-CBC decryption of the two bags and parsing the P-256 private key.
    func pkcs12() throws {
        for _ in 0..<2 {
            _ = try KDF.Insecure.PBKDF2.deriveKey(
                from: password, salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: 2048)
        }
        var digest = Data(SHA256.hash(data: macInput.prefix(192)))
        for _ in 1..<2048 { digest = Data(SHA256.hash(data: digest)) }
        _ = HMAC<SHA256>.authenticationCode(for: macInput, using: SymmetricKey(data: digest))
        _ = try AES._CBC.decrypt(certificateBag, using: cbcKey, iv: iv)
        _ = try AES._CBC.decrypt(keyBag, using: cbcKey, iv: iv)
        _ = try P256.Signing.PrivateKey(derRepresentation: pkcs8)
    }

    /// What evaluating leaf ← intermediate ← root cannot avoid: two P-256 ECDSA verifications.
    func chain() throws {
        for _ in 0..<2 {
            guard verifyKey.isValidSignature(signature, for: message) else {
                throw BenchmarkFailure("P256 verification failed")
            }
        }
    }
}
