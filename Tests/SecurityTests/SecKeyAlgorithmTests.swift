// SecKeyAlgorithm: Apple's exact strings, the support table over every algorithm × key, round trips with
// randomized sizes, the published RFC 6979 vector, and the error statuses of bad input (Apple's
// `OSX/sec/Security/SecKeyAdaptors.m`).

import Crypto
import Foundation
import Security
import SeededRandom
import Testing

/// Every public algorithm string of Apple's `SecKeyAdaptors.m` (Security-61901), in its order.
let appleAlgorithmStrings: [String] = [
    "algid:sign:RSA:raw",
    "algid:sign:RSA:digest-PKCS1v15",
    "algid:sign:RSA:digest-PKCS1v15:SHA1",
    "algid:sign:RSA:digest-PKCS1v15:SHA224",
    "algid:sign:RSA:digest-PKCS1v15:SHA256",
    "algid:sign:RSA:digest-PKCS1v15:SHA384",
    "algid:sign:RSA:digest-PKCS1v15:SHA512",
    "algid:sign:RSA:digest-PSS:SHA1:SHA1:20",
    "algid:sign:RSA:digest-PSS:SHA224:SHA224:24",
    "algid:sign:RSA:digest-PSS:SHA256:SHA256:32",
    "algid:sign:RSA:digest-PSS:SHA384:SHA384:48",
    "algid:sign:RSA:digest-PSS:SHA512:SHA512:64",
    "algid:sign:RSA:message-PKCS1v15:SHA1",
    "algid:sign:RSA:message-PKCS1v15:SHA224",
    "algid:sign:RSA:message-PKCS1v15:SHA256",
    "algid:sign:RSA:message-PKCS1v15:SHA384",
    "algid:sign:RSA:message-PKCS1v15:SHA512",
    "algid:sign:RSA:message-PSS:SHA1:SHA1:20",
    "algid:sign:RSA:message-PSS:SHA224:SHA224:24",
    "algid:sign:RSA:message-PSS:SHA256:SHA256:32",
    "algid:sign:RSA:message-PSS:SHA384:SHA384:48",
    "algid:sign:RSA:message-PSS:SHA512:SHA512:64",
    "algid:sign:ECDSA:RFC4754",
    "algid:sign:ECDSA:digest-RFC4754",
    "algid:sign:ECDSA:digest-RFC4754:SHA1",
    "algid:sign:ECDSA:digest-RFC4754:SHA224",
    "algid:sign:ECDSA:digest-RFC4754:SHA256",
    "algid:sign:ECDSA:digest-RFC4754:SHA384",
    "algid:sign:ECDSA:digest-RFC4754:SHA512",
    "algid:sign:ECDSA:message-RFC4754:SHA1",
    "algid:sign:ECDSA:message-RFC4754:SHA224",
    "algid:sign:ECDSA:message-RFC4754:SHA256",
    "algid:sign:ECDSA:message-RFC4754:SHA384",
    "algid:sign:ECDSA:message-RFC4754:SHA512",
    "algid:sign:ECDSA:digest-X962",
    "algid:sign:ECDSA:digest-X962:SHA1",
    "algid:sign:ECDSA:digest-X962:SHA224",
    "algid:sign:ECDSA:digest-X962:SHA256",
    "algid:sign:ECDSA:digest-X962:SHA384",
    "algid:sign:ECDSA:digest-X962:SHA512",
    "algid:sign:ECDSA:message-X962:SHA1",
    "algid:sign:ECDSA:message-X962:SHA224",
    "algid:sign:ECDSA:message-X962:SHA256",
    "algid:sign:ECDSA:message-X962:SHA384",
    "algid:sign:ECDSA:message-X962:SHA512",
    "algid:encrypt:RSA:raw",
    "algid:encrypt:RSA:PKCS1",
    "algid:encrypt:RSA:OAEP:SHA1",
    "algid:encrypt:RSA:OAEP:SHA224",
    "algid:encrypt:RSA:OAEP:SHA256",
    "algid:encrypt:RSA:OAEP:SHA384",
    "algid:encrypt:RSA:OAEP:SHA512",
    "algid:encrypt:RSA:OAEP:SHA1:AESGCM",
    "algid:encrypt:RSA:OAEP:SHA224:AESGCM",
    "algid:encrypt:RSA:OAEP:SHA256:AESGCM",
    "algid:encrypt:RSA:OAEP:SHA384:AESGCM",
    "algid:encrypt:RSA:OAEP:SHA512:AESGCM",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA1:AESGCM",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA1:AESGCM",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA224:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA256:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA384:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDH:KDFX963:SHA512:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA224:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA384:AESGCM-KDFIV",
    "algid:encrypt:ECIES:ECDHC:KDFX963:SHA512:AESGCM-KDFIV",
    "algid:keyexchange:ECDH",
    "algid:keyexchange:ECDH:KDFX963:SHA1",
    "algid:keyexchange:ECDH:KDFX963:SHA224",
    "algid:keyexchange:ECDH:KDFX963:SHA256",
    "algid:keyexchange:ECDH:KDFX963:SHA384",
    "algid:keyexchange:ECDH:KDFX963:SHA512",
    "algid:keyexchange:ECDHC",
    "algid:keyexchange:ECDHC:KDFX963:SHA1",
    "algid:keyexchange:ECDHC:KDFX963:SHA224",
    "algid:keyexchange:ECDHC:KDFX963:SHA256",
    "algid:keyexchange:ECDHC:KDFX963:SHA384",
    "algid:keyexchange:ECDHC:KDFX963:SHA512",
]

/// The keys the table runs on.
enum TableKey: String, CaseIterable, Sendable {
    case ecPrivate, ecPublic, rsaPrivate, rsaPublic

    func key() throws -> SecKey {
        switch self {
        case .ecPrivate: try SharedKeys.ec256()
        case .ecPublic: publicKey(try SharedKeys.ec256())
        case .rsaPrivate: try KeyFixtures.rsa2048()
        case .rsaPublic: publicKey(try KeyFixtures.rsa2048())
        }
    }
}

/// An EC key shared by the table tests.
enum SharedKeys {
    private static let ec256Key = Result { try ecKey(256) }
    static func ec256() throws -> SecKey { try ec256Key.get() }
}

/// The operations an algorithm is expected to support on Linux for a key, written from
/// docs/keys-and-certificates.md independently of the module's table.
func expectedOperations(_ raw: String, _ key: TableKey) -> Set<SecKeyOperationType> {
    let sha224 = raw.contains("SHA224")
    let parts = raw.split(separator: ":").map(String.init)
    switch (parts[1], parts[2], key) {
    case ("sign", "ECDSA", .ecPrivate): return raw.contains("message") && sha224 ? [] : [.sign]
    case ("sign", "ECDSA", .ecPublic): return raw.contains("message") && sha224 ? [] : [.verify]
    case ("encrypt", "ECIES", .ecPrivate): return sha224 ? [] : [.decrypt]
    case ("encrypt", "ECIES", .ecPublic): return sha224 ? [] : [.encrypt]
    case ("keyexchange", _, .ecPrivate): return sha224 ? [] : [.keyExchange]
    case ("sign", "RSA", .rsaPrivate): return sha224 ? [] : [.sign]
    case ("sign", "RSA", .rsaPublic): return sha224 || raw == "algid:sign:RSA:raw" ? [] : [.verify]
    case ("encrypt", "RSA", .rsaPrivate):
        return raw.contains("OAEP") && !(raw.contains("SHA1") || raw.contains("SHA256")) ? [] : [.decrypt]
    case ("encrypt", "RSA", .rsaPublic):
        if raw == "algid:encrypt:RSA:raw" { return [] }
        return raw.contains("OAEP") && !(raw.contains("SHA1") || raw.contains("SHA256")) ? [] : [.encrypt]
    default: return []
    }
}

/// The input a signature algorithm expects for `message`: the message, its digest, or a DigestInfo.
func signingInput(_ raw: String, _ message: Data) -> Data {
    let hashes: [(String, (Data) -> Data)] = [
        ("SHA1", { Data(Insecure.SHA1.hash(data: $0)) }), ("SHA224", { _ in Data(count: 28) }),
        ("SHA256", { Data(SHA256.hash(data: $0)) }), ("SHA384", { Data(SHA384.hash(data: $0)) }),
        ("SHA512", { Data(SHA512.hash(data: $0)) }),
    ]
    if raw.contains("message") || raw == "algid:sign:RSA:raw" { return message }
    if raw == "algid:sign:RSA:digest-PKCS1v15" {
        return hexBytes("3031300d060960864801650304020105000420") + Data(SHA256.hash(data: message))
    }
    for (name, hash) in hashes where raw.hasSuffix(":" + name) || raw.contains(":\(name):") { return hash(message) }
    return Data(SHA256.hash(data: message).prefix(20))  // digest of any length
}

@Suite("SecKey: algorithms")
struct SecKeyAlgorithmTests {
    @Test("Raw strings are Apple's, including PSS-SHA224's \":24\"")
    func rawStrings() {
        let samples: [(SecKeyAlgorithm, String)] = [
            (.ecdsaSignatureMessageX962SHA256, "algid:sign:ECDSA:message-X962:SHA256"),
            (.rsaSignatureDigestPSSSHA224, "algid:sign:RSA:digest-PSS:SHA224:SHA224:24"),
            (.rsaSignatureMessagePSSSHA512, "algid:sign:RSA:message-PSS:SHA512:SHA512:64"),
            (
                .eciesEncryptionCofactorVariableIVX963SHA256AESGCM,
                "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV"
            ),
            (.rsaEncryptionOAEPSHA256AESGCM, "algid:encrypt:RSA:OAEP:SHA256:AESGCM"),
            (.ecdhKeyExchangeCofactorX963SHA1, "algid:keyexchange:ECDHC:KDFX963:SHA1"),
            (.ecdsaSignatureRFC4754, "algid:sign:ECDSA:RFC4754"),
            (.rsaSignatureDigestPKCS1v15Raw, "algid:sign:RSA:digest-PKCS1v15"),
            (.ecdsaSignatureMessageRFC4754SHA384, "algid:sign:ECDSA:message-RFC4754:SHA384"),
        ]
        for (algorithm, raw) in samples { #expect(algorithm.rawValue as String == raw) }
        #expect(
            SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA256" as CFString)
                == .ecdsaSignatureMessageX962SHA256)
        #expect(SecKeyOperationType.keyExchange.rawValue == 4)
        #expect(SecKeyKeyExchangeParameter.requestedSize.rawValue as String == "requestedSize")
        #expect(appleAlgorithmStrings.count == 87 && Set(appleAlgorithmStrings).count == 87)
    }

    @Test("Every algorithm × key: supported ones round-trip, the rest say false and -50", arguments: TableKey.allCases)
    func supportTable(_ tableKey: TableKey) throws {
        let key = try tableKey.key()
        var random = SplitMix64(seed: UInt64(tableKey.rawValue.count))
        for raw in appleAlgorithmStrings {
            let algorithm = SecKeyAlgorithm(rawValue: raw as CFString)
            let expected = expectedOperations(raw, tableKey)
            for operation in [SecKeyOperationType.sign, .verify, .encrypt, .decrypt, .keyExchange] {
                #expect(
                    SecKeyIsAlgorithmSupported(key, operation, algorithm) == expected.contains(operation),
                    "\(raw) \(operation) on \(tableKey)")
            }
            try exercise(key, tableKey, algorithm, raw, expected, &random)
        }
    }

    /// Runs the operation an algorithm supports on the table's key pair, or checks -50 when none.
    private func exercise(
        _ key: SecKey, _ tableKey: TableKey, _ algorithm: SecKeyAlgorithm, _ raw: String,
        _ expected: Set<SecKeyOperationType>, _ random: inout SplitMix64
    ) throws {
        let message = random.bytes(Int.random(in: 0...300, using: &random))
        if expected.isEmpty {
            #expect(sign(key, algorithm, message).code == -50, "\(raw) on \(tableKey)")
            #expect(encrypt(key, algorithm, message).code == -50, "\(raw) on \(tableKey)")
            #expect(decrypt(key, algorithm, message).code == -50, "\(raw) on \(tableKey)")
            #expect(verify(key, algorithm, message, message) == -50, "\(raw) on \(tableKey)")
            return
        }
        let privateKey =
            tableKey == .ecPrivate || tableKey == .ecPublic ? try SharedKeys.ec256() : try KeyFixtures.rsa2048()
        if expected.contains(.sign) || expected.contains(.verify) {
            var input = signingInput(raw, message)
            if raw == "algid:sign:RSA:raw" { input = Data([0]) + input.prefix(200) }
            let signature = try sign(privateKey, algorithm, input).value()
            if raw == "algid:sign:RSA:raw" {
                // No raw public operation to verify with (unsupported); openssl checks the value.
                #expect(signature.count == 256)
                return
            }
            #expect(verify(publicKey(privateKey), algorithm, input, signature) == 0, "\(raw)")
            var tampered = signature
            if !tampered.isEmpty { tampered[tampered.count / 2] ^= 0x10 }
            #expect(verify(publicKey(privateKey), algorithm, input, tampered) == -67808, "\(raw)")
        } else if expected.contains(.encrypt) || expected.contains(.decrypt) {
            let plaintext = raw == "algid:encrypt:RSA:raw" ? Data([0]) + message.prefix(100) : message.prefix(150)
            if raw == "algid:encrypt:RSA:raw" {
                // No public raw operation: check that the private one inverts a PKCS#1 encryption's padding layer.
                #expect(try decrypt(privateKey, algorithm, Data(count: 256)).value() == Data(count: 256))
                return
            }
            let ciphertext = try encrypt(publicKey(privateKey), algorithm, plaintext).value()
            #expect(try decrypt(privateKey, algorithm, ciphertext).value() == plaintext, "\(raw)")
        } else {
            let peer = try ecKey(256)
            let parameters: [CFString: Any] = [SecKeyKeyExchangeParameter.requestedSize.rawValue: 48]
            let ours = SecKeyCopyKeyExchangeResult(
                privateKey, algorithm, publicKey(peer), parameters as CFDictionary, nil)
            let theirs = SecKeyCopyKeyExchangeResult(
                peer, algorithm, publicKey(privateKey), parameters as CFDictionary, nil)
            #expect(ours != nil && ours as Data? == theirs as Data?, "\(raw)")
        }
    }

    @Test("Randomized message sizes: ECDSA and RSA signatures, RSA and ECIES encryption")
    func randomizedSizes() throws {
        var random = SplitMix64(seed: 2026)
        let ec = try SharedKeys.ec256()
        let rsa = try KeyFixtures.rsa2048()
        for _ in 0..<20 {
            let message = random.bytes(Int.random(in: 0...5000, using: &random))
            for (key, algorithm) in [
                (ec, SecKeyAlgorithm.ecdsaSignatureMessageX962SHA256), (rsa, .rsaSignatureMessagePSSSHA256),
                (rsa, .rsaSignatureMessagePKCS1v15SHA512),
            ] {
                let signature = try sign(key, algorithm, message).value()
                #expect(verify(publicKey(key), algorithm, message, signature) == 0)
                #expect(verify(publicKey(key), algorithm, message + Data([1]), signature) == -67808)
            }
            let short = message.prefix(Int.random(in: 0...190, using: &random))
            let oaep = try encrypt(publicKey(rsa), .rsaEncryptionOAEPSHA256, short).value()
            #expect(try decrypt(rsa, .rsaEncryptionOAEPSHA256, oaep).value() == short)
            let ecies = try encrypt(publicKey(ec), .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, message).value()
            #expect(try decrypt(ec, .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, ecies).value() == message)
        }
    }

    /// RFC 6979 A.2.5: P-256, SHA-256, message "sample" (deterministic, so a published signature).
    @Test("RFC 6979 P-256/SHA-256 \"sample\" verifies as X9.62 DER and RFC 4754 r‖s; a flipped bit fails")
    func rfc6979() throws {
        let x = hexBytes("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
        let ux = hexBytes("60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6")
        let uy = hexBytes("7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299")
        let r = hexBytes("EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716")
        let s = hexBytes("F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8")
        let key = try importKey(Data([4]) + ux + uy + x, type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPrivate)
        let pub = try importKey(Data([4]) + ux + uy, type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPublic)
        #expect(publicKey(key) == pub)
        let message = Data("sample".utf8)
        #expect(verify(pub, .ecdsaSignatureMessageRFC4754SHA256, message, r + s) == 0)
        #expect(verify(pub, .ecdsaSignatureMessageX962SHA256, message, derSignature(r + s, size: 32)) == 0)
        #expect(verify(pub, .ecdsaSignatureRFC4754, Data(SHA256.hash(data: message)), r + s) == 0)
        var flipped = r + s
        flipped[5] ^= 0x01
        #expect(verify(pub, .ecdsaSignatureMessageRFC4754SHA256, message, flipped) == -67808)
    }

    @Test("Bad input gives Apple's status, never a crash")
    func badInput() throws {
        let ec = try SharedKeys.ec256()
        let rsa = try KeyFixtures.rsa2048()
        let digest31 = Data(count: 31)
        #expect(sign(ec, .ecdsaSignatureDigestX962SHA256, digest31).code == -50)
        #expect(verify(publicKey(ec), .ecdsaSignatureDigestX962SHA256, digest31, Data(count: 70)) == -50)
        #expect(verify(publicKey(ec), .ecdsaSignatureDigestRFC4754SHA256, Data(count: 32), Data(count: 63)) == -67808)
        #expect(verify(publicKey(ec), .ecdsaSignatureDigestX962SHA256, Data(count: 32), Data("junk".utf8)) == -67808)
        // Wrong key class: signing with a public key, verifying with a private one, decrypting with a public one.
        #expect(sign(publicKey(ec), .ecdsaSignatureMessageX962SHA256, Data()).code == -50)
        #expect(verify(ec, .ecdsaSignatureMessageX962SHA256, Data(), Data()) == -50)
        #expect(decrypt(publicKey(rsa), .rsaEncryptionOAEPSHA1, Data(count: 256)).code == -50)
        // RSA limits: one byte over the padding's room; a ciphertext of the wrong length; raw input ≥ n.
        #expect(encrypt(publicKey(rsa), .rsaEncryptionOAEPSHA256, Data(count: 256 - 66 + 1)).code == -50)
        #expect(try encrypt(publicKey(rsa), .rsaEncryptionOAEPSHA256, Data(count: 256 - 66)).value().count == 256)
        #expect(encrypt(publicKey(rsa), .rsaEncryptionPKCS1, Data(count: 246)).code == -50)
        #expect(decrypt(rsa, .rsaEncryptionOAEPSHA1, Data(count: 255)).code == -50)
        #expect(decrypt(rsa, .rsaEncryptionOAEPSHA1, Data(count: 256)).code == -50)
        #expect(sign(rsa, .rsaSignatureRaw, Data(repeating: 0xFF, count: 256)).code == -50)
        #expect(sign(rsa, .rsaSignatureRaw, Data(count: 257)).code == -50)
        // ECIES: a tampered tag, a packet shorter than the point, a packet without a tag.
        let packet = try encrypt(publicKey(ec), .eciesEncryptionStandardVariableIVX963SHA256AESGCM, Data("x".utf8))
            .value()
        var tampered = packet
        tampered[tampered.count - 1] ^= 1
        #expect(decrypt(ec, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, tampered).code == -50)
        #expect(decrypt(ec, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, packet.prefix(64)).code == -50)
        #expect(decrypt(ec, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, packet.prefix(70)).code == -50)
        // RSA-AES-GCM shorter than k + 16.
        #expect(decrypt(rsa, .rsaEncryptionOAEPSHA256AESGCM, Data(count: 271)).code == -50)
    }

    @Test("PSS signing needs a modulus of at least 16·hLen+9 bits; verification does not pre-check")
    func pssSizeCheck() throws {
        let small = try KeyFixtures.rsa1024()
        #expect(sign(small, .rsaSignatureMessagePSSSHA512, Data("m".utf8)).code == -50)
        #expect(verify(publicKey(small), .rsaSignatureMessagePSSSHA512, Data("m".utf8), Data(count: 128)) == -67808)
        let signature = try sign(small, .rsaSignatureMessagePSSSHA256, Data("m".utf8)).value()
        #expect(verify(publicKey(small), .rsaSignatureMessagePSSSHA256, Data("m".utf8), signature) == 0)
    }

    @Test("Key exchange parameters: requestedSize required and a number, sharedInfo data, peer on the same curve")
    func keyExchangeErrors() throws {
        let ours = try SharedKeys.ec256()
        let peer = publicKey(try ecKey(256))
        func exchange(
            _ peer: SecKey, _ parameters: [CFString: Any],
            _ algorithm: SecKeyAlgorithm = .ecdhKeyExchangeStandardX963SHA256
        ) -> Int {
            var error: Unmanaged<CFError>?
            let result = SecKeyCopyKeyExchangeResult(ours, algorithm, peer, parameters as CFDictionary, &error)
            let code = status(error)
            #expect((result == nil) == (code != 0))
            return code
        }
        let size = SecKeyKeyExchangeParameter.requestedSize.rawValue
        let info = SecKeyKeyExchangeParameter.sharedInfo.rawValue
        #expect(exchange(peer, [:]) == -50)
        #expect(exchange(peer, [size: "32"]) == -50)
        #expect(exchange(peer, [size: true]) == -50)
        #expect(exchange(peer, [size: 32, info: "text"]) == -50)
        #expect(exchange(peer, [size: Int.max]) == -50)
        #expect(exchange(peer, [size: -1]) == -50)
        #expect(exchange(peer, [size: 32, info: Data([1])]) == 0)
        #expect(exchange(publicKey(try ecKey(384)), [size: 32]) == -26275)
        #expect(exchange(publicKey(try KeyFixtures.rsa2048()), [size: 32]) == -50)
        #expect(exchange(peer, [:], .ecdhKeyExchangeStandard) == 0)
        #expect(exchange(peer, [:], .rsaEncryptionOAEPSHA1) == -50)
    }
}
