// Cross-checks of every SecKey construction with the openssl command line: our outputs verify or
// decrypt in openssl, openssl's in ours, and the composite ECIES and RSA-AES-GCM layouts decrypt with
// an implementation written here from Apple's (`OSX/sec/Security/SecKeyAdaptors.m`).

import Crypto
import Foundation
import Security
import SeededRandom
import Testing

@Suite("SecKey: cross-checks with openssl")
struct SecKeyOpenSSLTests {
    static let ecdsaCases: [(bits: Int, hash: String, algorithm: SecKeyAlgorithm)] = [
        (256, "sha256", .ecdsaSignatureMessageX962SHA256), (256, "sha1", .ecdsaSignatureMessageX962SHA1),
        (384, "sha384", .ecdsaSignatureMessageX962SHA384), (521, "sha512", .ecdsaSignatureMessageX962SHA512),
        (384, "sha256", .ecdsaSignatureMessageX962SHA256),
    ]

    @Test("ECDSA X9.62: openssl verifies ours and we verify openssl's", arguments: 0..<5)
    func ecdsaBothWays(_ index: Int) throws {
        let (bits, hash, algorithm) = Self.ecdsaCases[index]
        let key = try ecKey(bits)
        let message = Data("ECDSA over P-\(bits) with \(hash)".utf8)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(key), "key.pem")
            try directory.write(opensslPEM(publicKey(key)), "pub.pem")
            try directory.write(message, "msg")
            try directory.write(try sign(key, algorithm, message).value(), "ours.sig")
            #expect(
                try OpenSSL.succeeds(
                    ["dgst", "-\(hash)", "-verify", "pub.pem", "-signature", "ours.sig", "msg"], in: directory))
            try OpenSSL.run(["dgst", "-\(hash)", "-sign", "key.pem", "-out", "theirs.sig", "msg"], in: directory)
            #expect(verify(publicKey(key), algorithm, message, try directory.read("theirs.sig")) == 0)
            // One flipped bit: openssl and we both refuse.
            var bad = try directory.read("ours.sig")
            bad[bad.count - 1] ^= 1
            try directory.write(bad, "bad.sig")
            #expect(
                try !OpenSSL.succeeds(
                    ["dgst", "-\(hash)", "-verify", "pub.pem", "-signature", "bad.sig", "msg"], in: directory))
            #expect(verify(publicKey(key), algorithm, message, bad) == -67808)
        }
    }

    @Test("ECDSA RFC 4754 (r‖s) and digest forms agree with openssl's DER over the same digest")
    func ecdsaRawAndDigestForms() throws {
        let key = try ecKey(256)
        let message = Data("raw forms".utf8)
        let digest = Data(SHA256.hash(data: message))
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(publicKey(key)), "pub.pem")
            try directory.write(digest, "digest")
            let raw = try sign(key, .ecdsaSignatureDigestRFC4754SHA256, digest).value()
            #expect(raw.count == 64)
            let der = derSignature(raw, size: 32)
            try directory.write(der, "sig")
            #expect(
                try OpenSSL.succeeds(
                    ["pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-in", "digest", "-sigfile", "sig"],
                    in: directory))
            #expect(verify(publicKey(key), .ecdsaSignatureMessageRFC4754SHA256, message, raw) == 0)
            #expect(verify(publicKey(key), .ecdsaSignatureDigestX962SHA256, digest, der) == 0)
            #expect(verify(publicKey(key), .ecdsaSignatureDigestX962, digest, der) == 0)
            let theirs = try OpenSSL.run(
                ["pkeyutl", "-sign", "-inkey", "/dev/stdin", "-in", "digest"], in: directory,
                input: try opensslPEM(key))
            #expect(verify(publicKey(key), .ecdsaSignatureDigestX962SHA256, digest, theirs) == 0)
        }
    }

    @Test(
        "RSA PKCS#1 v1.5: byte-identical to openssl, both directions",
        arguments: [
            ("sha1", SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA1), ("sha256", .rsaSignatureMessagePKCS1v15SHA256),
            ("sha384", .rsaSignatureMessagePKCS1v15SHA384), ("sha512", .rsaSignatureMessagePKCS1v15SHA512),
        ])
    func rsaPKCS1v15(_ hash: String, _ algorithm: SecKeyAlgorithm) throws {
        let key = try KeyFixtures.rsa2048()
        let message = Data("PKCS#1 v1.5 with \(hash)".utf8)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(key), "key.pem")
            try directory.write(message, "msg")
            let theirs = try OpenSSL.run(["dgst", "-\(hash)", "-sign", "key.pem", "msg"], in: directory)
            #expect(try sign(key, algorithm, message).value() == theirs)
            #expect(verify(publicKey(key), algorithm, message, theirs) == 0)
        }
    }

    @Test("RSA PKCS#1 v1.5 digest and DigestInfo forms equal the message form")
    func rsaDigestForms() throws {
        let key = try KeyFixtures.rsa2048()
        let message = Data("digest forms".utf8)
        let digest = Data(SHA256.hash(data: message))
        let prefix = hexBytes("3031300d060960864801650304020105000420")
        let byMessage = try sign(key, .rsaSignatureMessagePKCS1v15SHA256, message).value()
        #expect(try sign(key, .rsaSignatureDigestPKCS1v15SHA256, digest).value() == byMessage)
        #expect(try sign(key, .rsaSignatureDigestPKCS1v15Raw, prefix + digest).value() == byMessage)
        #expect(verify(publicKey(key), .rsaSignatureDigestPKCS1v15Raw, prefix + digest, byMessage) == 0)
        #expect(verify(publicKey(key), .rsaSignatureDigestPKCS1v15SHA256, digest, byMessage) == 0)
        // Signatures longer than the block size are -50, not a verification failure.
        #expect(verify(publicKey(key), .rsaSignatureDigestPKCS1v15SHA256, digest, byMessage + Data([0])) == -50)
    }

    @Test(
        "RSA PSS (salt = hash length): openssl verifies ours and we verify openssl's",
        arguments: [
            ("sha1", SecKeyAlgorithm.rsaSignatureMessagePSSSHA1), ("sha256", .rsaSignatureMessagePSSSHA256),
            ("sha384", .rsaSignatureMessagePSSSHA384), ("sha512", .rsaSignatureMessagePSSSHA512),
        ])
    func rsaPSS(_ hash: String, _ algorithm: SecKeyAlgorithm) throws {
        let key = try KeyFixtures.rsa2048()
        let message = Data("PSS with \(hash)".utf8)
        let options = ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:digest"]
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(key), "key.pem")
            try directory.write(opensslPEM(publicKey(key)), "pub.pem")
            try directory.write(message, "msg")
            try directory.write(try sign(key, algorithm, message).value(), "ours.sig")
            #expect(
                try OpenSSL.succeeds(
                    ["dgst", "-\(hash)", "-verify", "pub.pem", "-signature", "ours.sig"] + options + ["msg"],
                    in: directory))
            let theirs = try OpenSSL.run(["dgst", "-\(hash)", "-sign", "key.pem"] + options + ["msg"], in: directory)
            #expect(verify(publicKey(key), algorithm, message, theirs) == 0)
            // A salt of 0 is not Apple's PSS: it fails here.
            let zeroSalt = try OpenSSL.run(
                [
                    "dgst", "-\(hash)", "-sign", "key.pem", "-sigopt", "rsa_padding_mode:pss", "-sigopt",
                    "rsa_pss_saltlen:0", "msg",
                ], in: directory)
            #expect(verify(publicKey(key), algorithm, message, zeroSalt) == -67808)
        }
    }

    @Test(
        "RSA encryption: openssl decrypts ours and we decrypt openssl's",
        arguments: [
            ("pkcs1", "sha1", SecKeyAlgorithm.rsaEncryptionPKCS1), ("oaep", "sha1", .rsaEncryptionOAEPSHA1),
            ("oaep", "sha256", .rsaEncryptionOAEPSHA256),
        ])
    func rsaEncryption(_ mode: String, _ hash: String, _ algorithm: SecKeyAlgorithm) throws {
        let key = try KeyFixtures.rsa2048()
        var options = ["-pkeyopt", "rsa_padding_mode:\(mode)"]
        if mode == "oaep" { options += ["-pkeyopt", "rsa_oaep_md:\(hash)", "-pkeyopt", "rsa_mgf1_md:\(hash)"] }
        let plaintext = Data("secret for \(mode)/\(hash)".utf8)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(key), "key.pem")
            try directory.write(opensslPEM(publicKey(key)), "pub.pem")
            try directory.write(try encrypt(publicKey(key), algorithm, plaintext).value(), "ours.bin")
            let decrypted = try OpenSSL.run(
                ["pkeyutl", "-decrypt", "-inkey", "key.pem", "-in", "ours.bin"] + options, in: directory)
            #expect(decrypted == plaintext)
            let theirs = try OpenSSL.run(
                ["pkeyutl", "-encrypt", "-pubin", "-inkey", "pub.pem"] + options, in: directory, input: plaintext)
            #expect(try decrypt(key, algorithm, theirs).value() == plaintext)
        }
    }

    @Test("Raw RSA decrypt and sign equal openssl's unpadded private operation")
    func rsaRaw() throws {
        let key = try KeyFixtures.rsa2048()
        var random = SplitMix64(seed: 7)
        let input = Data([0x00, 0x42]) + random.bytes(254)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(key), "key.pem")
            try directory.write(input, "in")
            let theirs = try OpenSSL.run(
                ["pkeyutl", "-decrypt", "-inkey", "key.pem", "-in", "in", "-pkeyopt", "rsa_padding_mode:none"],
                in: directory)
            #expect(try sign(key, .rsaSignatureRaw, input).value() == theirs)
            #expect(try decrypt(key, .rsaEncryptionRaw, input).value() == theirs)
            // Shorter input is a big-endian number: left-padded with zeros.
            #expect(try sign(key, .rsaSignatureRaw, input.dropFirst()).value() == theirs)
        }
    }

    @Test("ECDH: the shared secret equals openssl pkeyutl -derive", arguments: [256, 384, 521])
    func ecdh(_ bits: Int) throws {
        let ours = try ecKey(bits)
        let peer = try ecKey(bits)
        var error: Unmanaged<CFError>?
        let secret = SecKeyCopyKeyExchangeResult(
            ours, .ecdhKeyExchangeStandard, publicKey(peer), [:] as CFDictionary, &error)
        #expect(status(error) == 0)
        let cofactor = SecKeyCopyKeyExchangeResult(
            ours, .ecdhKeyExchangeCofactor, publicKey(peer), [:] as CFDictionary, nil)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(ours), "key.pem")
            try directory.write(opensslPEM(publicKey(peer)), "peer.pem")
            let theirs = try OpenSSL.run(
                ["pkeyutl", "-derive", "-inkey", "key.pem", "-peerkey", "peer.pem"], in: directory)
            #expect(secret as Data? == theirs && cofactor as Data? == theirs)
            #expect(theirs.count == (bits + 7) / 8)
        }
    }

    @Test(
        "ECDH X9.63 KDF equals openssl kdf X963KDF (requestedSize, sharedInfo)",
        arguments: [
            ("SHA1", SecKeyAlgorithm.ecdhKeyExchangeStandardX963SHA1), ("SHA256", .ecdhKeyExchangeStandardX963SHA256),
            ("SHA384", .ecdhKeyExchangeCofactorX963SHA384), ("SHA512", .ecdhKeyExchangeCofactorX963SHA512),
        ])
    func ecdhX963(_ digest: String, _ algorithm: SecKeyAlgorithm) throws {
        let ours = try ecKey(256)
        let peer = try ecKey(256)
        let info = Data("shared info".utf8)
        let z =
            SecKeyCopyKeyExchangeResult(ours, .ecdhKeyExchangeStandard, publicKey(peer), [:] as CFDictionary, nil)!
            as Data
        for size in [1, 42, 100] {
            let parameters: [CFString: Any] = [
                SecKeyKeyExchangeParameter.requestedSize.rawValue: size,
                SecKeyKeyExchangeParameter.sharedInfo.rawValue: info,
            ]
            var error: Unmanaged<CFError>?
            let derived = SecKeyCopyKeyExchangeResult(
                ours, algorithm, publicKey(peer), parameters as CFDictionary, &error)
            #expect(status(error) == 0)
            let theirs = try withScratchDirectory { directory in
                try OpenSSL.run(
                    [
                        "kdf", "-binary", "-keylen", "\(size)", "-kdfopt", "digest:\(digest)", "-kdfopt",
                        "hexsecret:\(hexString(z))", "-kdfopt", "hexinfo:\(hexString(info))", "X963KDF",
                    ], in: directory)
            }
            #expect(derived as Data? == theirs)
        }
    }

    @Test(
        "ECIES (standard and variable IV): our ciphertext decrypts with openssl ECDH+KDF and AES-GCM here, and back",
        arguments: [
            (256, SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM, "SHA256", true),
            (256, .eciesEncryptionStandardVariableIVX963SHA256AESGCM, "SHA256", true),
            (256, .eciesEncryptionStandardX963SHA256AESGCM, "SHA256", false),
            (384, .eciesEncryptionStandardX963SHA384AESGCM, "SHA384", false),
            (521, .eciesEncryptionCofactorVariableIVX963SHA512AESGCM, "SHA512", true),
            (256, .eciesEncryptionStandardX963SHA1AESGCM, "SHA1", false),
        ])
    func ecies(_ bits: Int, _ algorithm: SecKeyAlgorithm, _ digest: String, _ variableIV: Bool) throws {
        let recipient = try ecKey(bits)
        let pointLength = 1 + 2 * ((bits + 7) / 8)
        let keySize = bits > 256 ? 32 : 16
        let plaintext = Data("ECIES on P-\(bits), \(digest), variable IV \(variableIV)".utf8)
        let ciphertext = try encrypt(publicKey(recipient), algorithm, plaintext).value()
        #expect(ciphertext.count == pointLength + plaintext.count + 16)
        try withScratchDirectory { directory in
            // Decrypt ours independently: openssl derives Z and runs the KDF; swift-crypto's AES-GCM opens.
            let ephemeral = try importKey(
                ciphertext.prefix(pointLength), type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPublic)
            try directory.write(opensslPEM(recipient), "key.pem")
            try directory.write(opensslPEM(ephemeral), "eph.pem")
            let z = try OpenSSL.run(["pkeyutl", "-derive", "-inkey", "key.pem", "-peerkey", "eph.pem"], in: directory)
            let derived = try OpenSSL.run(
                [
                    "kdf", "-binary", "-keylen", "\(keySize + (variableIV ? 16 : 0))", "-kdfopt", "digest:\(digest)",
                    "-kdfopt", "hexsecret:\(hexString(z))", "-kdfopt",
                    "hexinfo:\(hexString(ciphertext.prefix(pointLength)))", "X963KDF",
                ], in: directory)
            let iv = variableIV ? derived.suffix(16) : Data(count: 16)
            let body = ciphertext.dropFirst(pointLength)
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: iv), ciphertext: body.dropLast(16), tag: body.suffix(16))
            #expect(try AES.GCM.open(box, using: SymmetricKey(data: derived.prefix(keySize))) == plaintext)

            // And the other way: a packet built here from an openssl ephemeral key decrypts in ours.
            try OpenSSL.run(
                [
                    "ecparam", "-name", bits == 256 ? "prime256v1" : bits == 384 ? "secp384r1" : "secp521r1", "-genkey",
                    "-noout", "-out", "e2.pem",
                ], in: directory)
            try directory.write(opensslPEM(publicKey(recipient)), "rcpt.pem")
            let z2 = try OpenSSL.run(["pkeyutl", "-derive", "-inkey", "e2.pem", "-peerkey", "rcpt.pem"], in: directory)
            let spki = try OpenSSL.run(["ec", "-in", "e2.pem", "-pubout", "-outform", "DER"], in: directory)
            let point = spki.suffix(pointLength)
            let derived2 = try OpenSSL.run(
                [
                    "kdf", "-binary", "-keylen", "\(keySize + (variableIV ? 16 : 0))", "-kdfopt", "digest:\(digest)",
                    "-kdfopt", "hexsecret:\(hexString(z2))", "-kdfopt", "hexinfo:\(hexString(point))", "X963KDF",
                ],
                in: directory)
            let sealed = try AES.GCM.seal(
                plaintext, using: SymmetricKey(data: derived2.prefix(keySize)),
                nonce: AES.GCM.Nonce(data: variableIV ? derived2.suffix(16) : Data(count: 16)))
            let packet = point + sealed.ciphertext + sealed.tag
            #expect(try decrypt(recipient, algorithm, packet).value() == plaintext)
        }
    }

    @Test(
        "RSA-OAEP + AES-GCM: openssl unwraps the session key; AES-GCM with AAD = PKCS#1 public key opens the rest",
        arguments: [("sha1", SecKeyAlgorithm.rsaEncryptionOAEPSHA1AESGCM), ("sha256", .rsaEncryptionOAEPSHA256AESGCM)])
    func rsaAESGCM(_ hash: String, _ algorithm: SecKeyAlgorithm) throws {
        let key = try KeyFixtures.rsa2048()
        let plaintext = Data("hybrid RSA payload".utf8)
        let ciphertext = try encrypt(publicKey(key), algorithm, plaintext).value()
        #expect(ciphertext.count == 256 + plaintext.count + 16)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(key), "key.pem")
            try directory.write(ciphertext.prefix(256), "wrapped")
            let sessionKey = try OpenSSL.run(
                [
                    "pkeyutl", "-decrypt", "-inkey", "key.pem", "-in", "wrapped", "-pkeyopt", "rsa_padding_mode:oaep",
                    "-pkeyopt", "rsa_oaep_md:\(hash)", "-pkeyopt", "rsa_mgf1_md:\(hash)",
                ], in: directory)
            #expect(sessionKey.count == 16)
            let body = ciphertext.dropFirst(256)
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: Data(count: 16)), ciphertext: body.dropLast(16), tag: body.suffix(16))
            let opened = try AES.GCM.open(
                box, using: SymmetricKey(data: sessionKey), authenticating: exported(publicKey(key)))
            #expect(opened == plaintext)
        }
        #expect(try decrypt(key, algorithm, ciphertext).value() == plaintext)
    }
}

/// DER `SEQUENCE { r, s }` of an `r‖s` signature (for openssl, written independently of the module).
func derSignature(_ raw: Data, size: Int) -> Data {
    func integer(_ bytes: Data) -> Data {
        var value = Data(bytes.drop(while: { $0 == 0 }))
        if value.isEmpty || value.first! >= 0x80 { value.insert(0, at: 0) }
        return Data([0x02, UInt8(value.count)]) + value
    }
    let body = integer(raw.prefix(size)) + integer(raw.suffix(size))
    return Data([0x30, UInt8(body.count)]) + body
}
