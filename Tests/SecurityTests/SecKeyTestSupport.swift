// Shared helpers of the SecKey tests: the openssl command line (required: a missing openssl fails the
// test), key fixtures made once per run, and small wrappers around the C-style API.

import Crypto
import CryptoExtras
import Foundation
import Security
import SeededRandom
import Testing

/// A failure of a helper, with what went wrong.
struct SecKeyTestFailure: Error, CustomStringConvertible {
    var description: String
}

/// The `openssl` command line, run by the tests as an independent implementation.
enum OpenSSL {
    /// The executable, found on `PATH`; a missing one fails the calling test (no silent skip).
    static func executable() throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("openssl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw SecKeyTestFailure(description: "openssl not found on PATH; .ci/run installs it")
    }

    /// Runs openssl with `arguments` in `directory`, feeding `input`; returns standard output.
    /// - Throws: When openssl exits with a non-zero status (its standard error is in the message).
    @discardableResult
    static func run(_ arguments: [String], in directory: URL, input: Data = Data()) throws -> Data {
        let process = Process()
        process.executableURL = try executable()
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SecKeyTestFailure(
                description: "openssl \(arguments.joined(separator: " ")) failed: "
                    + String(decoding: errors, as: UTF8.self))
        }
        return output
    }

    /// Whether openssl exits with status 0 (for verifications that may legitimately fail).
    static func succeeds(_ arguments: [String], in directory: URL) throws -> Bool {
        do {
            try run(arguments, in: directory)
            return true
        } catch let failure as SecKeyTestFailure where failure.description.contains(" failed: ") {
            return false
        }
    }
}

/// A temporary directory for openssl's files, removed when the body returns.
func withScratchDirectory<T>(_ body: (URL) throws -> T) throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("seckey-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

extension URL {
    /// Writes `data` to a file named `name` in this directory and returns the name.
    @discardableResult
    func write(_ data: Data, _ name: String) throws -> String {
        try data.write(to: appendingPathComponent(name))
        return name
    }

    /// Reads the file `name` in this directory.
    func read(_ name: String) throws -> Data {
        try Data(contentsOf: appendingPathComponent(name))
    }
}

// MARK: - Calling the API

/// Generates a key with `SecKeyCreateRandomKey`, failing with the error's status.
func randomKey(_ parameters: [CFString: Any]) throws -> SecKey {
    var error: Unmanaged<CFError>?
    guard let key = SecKeyCreateRandomKey(parameters as CFDictionary, &error) else {
        throw SecKeyTestFailure(description: "SecKeyCreateRandomKey failed: \(status(error))")
    }
    return key
}

/// An EC private key on the curve of `bits`.
func ecKey(_ bits: Int) throws -> SecKey {
    try randomKey([kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: bits])
}

/// Imports key bytes with `SecKeyCreateWithData`.
func importKey(_ data: Data, type: CFString, keyClass: CFString) throws -> SecKey {
    var error: Unmanaged<CFError>?
    let attributes: [CFString: Any] = [kSecAttrKeyType: type, kSecAttrKeyClass: keyClass]
    guard let key = SecKeyCreateWithData(data as CFData, attributes as CFDictionary, &error) else {
        throw SecKeyTestFailure(description: "SecKeyCreateWithData failed: \(status(error))")
    }
    return key
}

/// The external representation of a key.
func exported(_ key: SecKey) -> Data {
    SecKeyCopyExternalRepresentation(key, nil)! as Data
}

/// The public key of a key.
func publicKey(_ key: SecKey) -> SecKey {
    SecKeyCopyPublicKey(key)!
}

/// The status code of an error (consuming it), or 0 for none.
func status(_ error: Unmanaged<CFError>?) -> Int {
    guard let error = error?.takeRetainedValue() else { return 0 }
    #expect(error.domain == NSOSStatusErrorDomain)
    return CFErrorGetCode(error)
}

/// Signs and returns the signature or the error status.
func sign(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: Data) -> Result<Data, StatusCode> {
    var error: Unmanaged<CFError>?
    guard let signature = SecKeyCreateSignature(key, algorithm, data as CFData, &error) else {
        return .failure(StatusCode(status(error)))
    }
    #expect(error == nil)
    return .success(signature as Data)
}

/// Verifies and returns 0 for a valid signature or the error status.
func verify(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: Data, _ signature: Data) -> Int {
    var error: Unmanaged<CFError>?
    let valid = SecKeyVerifySignature(key, algorithm, data as CFData, signature as CFData, &error)
    let code = status(error)
    #expect(valid == (code == 0))
    return code
}

/// Encrypts and returns the ciphertext or the error status.
func encrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: Data) -> Result<Data, StatusCode> {
    var error: Unmanaged<CFError>?
    guard let result = SecKeyCreateEncryptedData(key, algorithm, data as CFData, &error) else {
        return .failure(StatusCode(status(error)))
    }
    return .success(result as Data)
}

/// Decrypts and returns the plaintext or the error status.
func decrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: Data) -> Result<Data, StatusCode> {
    var error: Unmanaged<CFError>?
    guard let result = SecKeyCreateDecryptedData(key, algorithm, data as CFData, &error) else {
        return .failure(StatusCode(status(error)))
    }
    return .success(result as Data)
}

/// A status code as an error, so results can carry it.
struct StatusCode: Error, Equatable {
    var code: Int
    init(_ code: Int) { self.code = code }
}

extension Result where Failure == StatusCode {
    /// The failure's status, or 0 on success.
    var code: Int {
        if case .failure(let failure) = self { return failure.code }
        return 0
    }

    /// The success value, or a thrown failure naming the status.
    func value() throws -> Success {
        try mapError { SecKeyTestFailure(description: "status \($0.code)") }.get()
    }
}

// MARK: - Fixtures

/// Keys made once per test run: RSA generation is slow in debug builds. A fixture that cannot be made
/// (no openssl) makes every test that uses it fail with the reason.
enum KeyFixtures {
    private static let rsa2048Key = Result { try opensslRSA(bits: 2048) }
    private static let rsa1024Key = Result { try opensslRSA(bits: 1024) }

    /// An RSA-2048 key generated by openssl and imported from its PKCS#1 DER (so it also checks import).
    static func rsa2048() throws -> SecKey { try rsa2048Key.get() }

    /// An RSA-1024 key from openssl, for size limits.
    static func rsa1024() throws -> SecKey { try rsa1024Key.get() }

    private static func opensslRSA(bits: Int) throws -> SecKey {
        try withScratchDirectory { directory in
            try OpenSSL.run(["genrsa", "-out", "key.pem", "\(bits)"], in: directory)
            let der = try OpenSSL.run(["rsa", "-in", "key.pem", "-outform", "DER", "-traditional"], in: directory)
            return try importKey(der, type: kSecAttrKeyTypeRSA, keyClass: kSecAttrKeyClassPrivate)
        }
    }
}

// MARK: - Formats for openssl

/// A PEM file of DER bytes.
func pem(_ der: Data, _ label: String) -> Data {
    let base64 = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
    return Data("-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n".utf8)
}

/// The PEM openssl reads for a key: PKCS#8 or SPKI, converted with swift-crypto from our export.
func opensslPEM(_ key: SecKey) throws -> Data {
    let bytes = exported(key)
    let attributes = SecKeyCopyAttributes(key)! as! [String: Any]
    let isPrivate = (attributes["kcls"] as? String) == "1"
    if (attributes["type"] as? String) == "42" {
        if isPrivate { return Data(try _RSA.Signing.PrivateKey(derRepresentation: bytes).pemRepresentation.utf8) }
        return Data(try _RSA.Signing.PublicKey(derRepresentation: bytes).pemRepresentation.utf8)
    }
    switch (bytes.count, isPrivate) {
    case (65, false): return Data(try P256.Signing.PublicKey(x963Representation: bytes).pemRepresentation.utf8)
    case (97, false): return Data(try P384.Signing.PublicKey(x963Representation: bytes).pemRepresentation.utf8)
    case (133, false): return Data(try P521.Signing.PublicKey(x963Representation: bytes).pemRepresentation.utf8)
    case (97, true): return Data(try P256.Signing.PrivateKey(x963Representation: bytes).pemRepresentation.utf8)
    case (145, true): return Data(try P384.Signing.PrivateKey(x963Representation: bytes).pemRepresentation.utf8)
    case (199, true): return Data(try P521.Signing.PrivateKey(x963Representation: bytes).pemRepresentation.utf8)
    default: throw SecKeyTestFailure(description: "unexpected key length \(bytes.count)")
    }
}

/// Bytes from a hex string (spaces and colons ignored).
func hexBytes(_ hex: String) -> Data {
    let digits = hex.filter { $0.isHexDigit }.map { $0 }
    var data = Data()
    for index in stride(from: 0, to: digits.count - 1, by: 2) {
        data.append(UInt8(String(digits[index...index + 1]), radix: 16)!)
    }
    return data
}

/// Lowercase hex of bytes.
func hexString(_ data: Data) -> String {
    data.map { String(format: "%02x", $0) }.joined()
}

extension SplitMix64 {
    /// `count` seeded random bytes (randomized message sizes and contents reproduce).
    mutating func bytes(_ count: Int) -> Data {
        Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &self) })
    }
}

/// A parameter dictionary and the status it must give, as a `Sendable` test argument.
struct DictionaryCase: Sendable, CustomTestStringConvertible {
    let expected: Int
    let dictionary: @Sendable () -> [CFString: Any]

    init(_ expected: Int, _ dictionary: @escaping @Sendable () -> [CFString: Any]) {
        self.expected = expected
        self.dictionary = dictionary
    }

    var testDescription: String {
        let entries = dictionary().map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ", ")
        return "[\(entries)] → \(expected)"
    }
}
