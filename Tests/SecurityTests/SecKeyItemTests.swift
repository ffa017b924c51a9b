// Keys as keychain items (Apple's `keychain/securityd/SecItemSchema.c`) and the legacy key API.

import Crypto
import Foundation
import KeychainCore
import KeychainTestSupport
import Security
import Testing

@Suite("SecKey: keys in the keychain")
struct SecKeyItemTests {
    @Test(
        "a key whose reference cannot be built is returned without its bytes, never with them in their place",
        arguments: KeychainBackend.memoryAndAgent)
    func unbuildableReferenceGivesNoBytes(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let tag = Data("com.example.symmetric".utf8)
            let secret = Data(repeating: 0x5A, count: 32)
            let added = SecItemAdd(
                [
                    kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassSymmetric,
                    kSecAttrApplicationTag: tag, kSecValueData: secret,
                ] as CFDictionary, nil)
            #expect(added == errSecSuccess)
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecReturnRef: true, kSecReturnAttributes: true,
            ])
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes["v_Data"] == nil, "the key's bytes came back without kSecReturnData")
            #expect(attributes["v_Ref"] == nil)
            let (_, withData) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecReturnData: true, kSecReturnAttributes: true,
            ])
            #expect((withData as? [String: Any])?["v_Data"] as? Data == secret)
        }
    }

    @Test(
        "Apple's pattern: generate a stored P-256 key with a tag, find it by tag, sign, verify with the re-imported public key",
        arguments: KeychainBackend.memoryAndAgent
    )
    func generateFindSignVerify(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let tag = Data("com.example.signing".utf8)
            let key = try randomKey([
                kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
                kSecPrivateKeyAttrs: [kSecAttrIsPermanent: true, kSecAttrApplicationTag: tag],
            ])
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: tag,
                kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecReturnRef: true,
            ])
            #expect(status == errSecSuccess)
            let found = try #require(result as? SecKey)
            #expect(found == key && CFGetTypeID(found) == SecKeyGetTypeID())
            let message = Data("sign me".utf8)
            let signature = try sign(found, .ecdsaSignatureMessageX962SHA256, message).value()
            let exportedPublic = exported(publicKey(key))
            let reimported = try importKey(exportedPublic, type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPublic)
            #expect(verify(reimported, .ecdsaSignatureMessageX962SHA256, message, signature) == 0)
        }
    }

    @Test(
        "IsPermanent at the top level stores both keys; in the private attributes, the private key alone",
        arguments: KeychainBackend.memoryAndAgent)
    func permanentPlacement(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            _ = try randomKey([
                kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256, kSecAttrIsPermanent: true,
                kSecAttrApplicationTag: "both",
            ])
            _ = try randomKey([
                kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256,
                kSecPrivateKeyAttrs: [kSecAttrIsPermanent: true, kSecAttrApplicationTag: "private"],
            ])
            // Only a Boolean counts: the number 1 is ignored, so nothing is stored.
            _ = try randomKey([
                kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256, kSecAttrIsPermanent: 1,
                kSecAttrApplicationTag: "number",
            ])
            #expect(keyCount(tag: "both") == 2)
            #expect(keyCount(tag: "private") == 1)
            #expect(keyCount(tag: "number") == 0)
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: "both",
                kSecAttrKeyClass: kSecAttrKeyClassPublic, kSecReturnRef: true,
            ])
            #expect(status == errSecSuccess)
            let attributes = SecKeyCopyAttributes(try #require(result as? SecKey))! as! [String: Any]
            #expect(attributes["kcls"] as? String == "0")
        }
    }

    @Test(
        "Added by kSecValueRef: Apple's attributes as numbers, klbl = SHA-1 of the public key; two keys may share a tag",
        arguments: KeychainBackend.memoryAndAgent
    )
    func addByReference(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let key = try ecKey(384)
            #expect(add([kSecValueRef: key, kSecAttrApplicationTag: Data("t".utf8), kSecAttrLabel: "mine"]) == 0)
            #expect(add([kSecValueRef: key, kSecAttrApplicationTag: Data("t".utf8)]) == errSecDuplicateItem)
            #expect(
                add([kSecClass: kSecClassKey, kSecValueRef: try ecKey(384), kSecAttrApplicationTag: Data("t".utf8)])
                    == 0)
            #expect(keyCount(tag: "t") == 2)
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey,
                kSecAttrApplicationLabel: Data(Insecure.SHA1.hash(data: exported(publicKey(key)))),
                kSecReturnAttributes: true, kSecReturnRef: true, kSecReturnData: true,
            ])
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(
                attributes["kcls"] as? Int == 1 && attributes["type"] as? Int == 73 && attributes["bsiz"] as? Int == 384
            )
            #expect(attributes["atag"] as? Data == Data("t".utf8) && attributes["labl"] as? String == "mine")
            #expect(attributes["sign"] as? Int == 1 && attributes["encr"] as? Int == 0)
            #expect(attributes["class"] as? String == "keys")
            #expect(attributes["v_Ref"] as? SecKey == key)
            #expect(attributes["v_Data"] as? Data == exported(key))
            #expect(attributes["pdmn"] as? String == "ak")
        }
    }

    @Test(
        "A caller's kSecAttrApplicationLabel replaces the SHA-1; v_Ref finds, updates and deletes the key",
        arguments: KeychainBackend.memoryAndAgent)
    func referenceQueries(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let key = try ecKey(256)
            let custom = Data("my-label".utf8)
            #expect(add([kSecValueRef: key, kSecAttrApplicationLabel: custom]) == 0)
            #expect(copyMatching([kSecClass: kSecClassKey, kSecAttrApplicationLabel: custom]).0 == 0)
            let other = try ecKey(256)
            #expect(add([kSecValueRef: other]) == 0)
            let (status, result) = copyMatching([kSecValueRef: other, kSecReturnAttributes: true])
            #expect(status == 0)
            #expect(
                (result as? [String: Any])?["klbl"] as? Data
                    == Data(Insecure.SHA1.hash(data: exported(publicKey(other)))))
            #expect(
                SecItemUpdate([kSecValueRef: other] as CFDictionary, [kSecAttrLabel: "renamed"] as CFDictionary) == 0)
            #expect(SecItemDelete([kSecValueRef: other] as CFDictionary) == 0)
            #expect(copyMatching([kSecValueRef: other]).0 == errSecItemNotFound)
            #expect(copyMatching([kSecClass: kSecClassKey, kSecAttrApplicationLabel: custom]).0 == 0)
        }
    }

    @Test(
        "RSA: stored, found by tag as a reference, OAEP-SHA256 round trip through the found key",
        arguments: KeychainBackend.memoryAndAgent)
    func rsaStoredRoundTrip(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let key = try KeyFixtures.rsa2048()
            var returned: CFTypeRef?
            let status = SecItemAdd(
                [kSecValueRef: key, kSecAttrApplicationTag: "rsa", kSecReturnRef: true] as CFDictionary, &returned)
            #expect(status == 0 && returned as? SecKey == key)
            let (found, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: "rsa", kSecReturnRef: true,
                kSecMatchLimit: kSecMatchLimitAll,
            ])
            #expect(found == 0)
            let keys = try #require(result as? [SecKey])
            #expect(keys == [key])
            let ciphertext = try encrypt(publicKey(keys[0]), .rsaEncryptionOAEPSHA256, Data("hello".utf8)).value()
            #expect(try decrypt(keys[0], .rsaEncryptionOAEPSHA256, ciphertext).value() == Data("hello".utf8))
        }
    }

    @Test("Wrong types in key dictionaries are errSecParam, never a crash", arguments: KeychainBackend.memoryAndAgent)
    func wrongTypes(backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let key = try ecKey(256)
            #expect(add([kSecClass: kSecClassGenericPassword, kSecValueRef: key]) == errSecParam)
            #expect(add([kSecClass: kSecClassKey, kSecValueRef: "not a key"]) != errSecSuccess)
            #expect(add([kSecValueRef: key, kSecAttrApplicationTag: [1, 2]]) == errSecParam)
            #expect(add([kSecValueRef: key, kSecAttrKeySizeInBits: Date()]) == errSecParam)
            var error: Unmanaged<CFError>?
            let stored = SecKeyCreateRandomKey(
                [
                    kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256, kSecAttrIsPermanent: true,
                    kSecAttrApplicationTag: [1],
                ] as CFDictionary, &error)
            #expect(stored == nil && status(error) == -50)
        }
    }

    @Test(
        "Legacy API: RawSign = DigestPKCS1v15SHA256; RawVerify of a bad signature is -9809; SecKeyEncrypt decrypts in openssl"
    )
    func legacy() throws {
        let rsa = try KeyFixtures.rsa2048()
        let digest = [UInt8](SHA256.hash(data: Data("legacy".utf8)))
        var signature = [UInt8](repeating: 0, count: 256)
        var length = signature.count
        #expect(SecKeyRawSign(rsa, .PKCS1SHA256, digest, digest.count, &signature, &length) == 0)
        #expect(
            Data(signature.prefix(length)) == (try sign(rsa, .rsaSignatureDigestPKCS1v15SHA256, Data(digest)).value()))
        #expect(SecKeyRawVerify(publicKey(rsa), .PKCS1SHA256, digest, digest.count, signature, length) == 0)
        signature[10] ^= 1
        #expect(SecKeyRawVerify(publicKey(rsa), .PKCS1SHA256, digest, digest.count, signature, length) == errSSLCrypto)
        var small = 100
        #expect(SecKeyRawSign(rsa, .PKCS1SHA256, digest, digest.count, &signature, &small) == errSecParam)
        #expect(SecKeyRawSign(rsa, .PKCS1MD5, digest, digest.count, &signature, &length) == errSecParam)
        // A negative length from a C-style caller is errSecParam, not a trap.
        #expect(SecKeyRawSign(rsa, .PKCS1SHA256, digest, -1, &signature, &length) == errSecParam)
        #expect(SecKeyRawVerify(publicKey(rsa), .PKCS1SHA256, digest, digest.count, signature, -1) == errSecParam)
        var out = [UInt8](repeating: 0, count: 256)
        var outLength = out.count
        #expect(SecKeyEncrypt(publicKey(rsa), .PKCS1, digest, -5, &out, &outLength) == errSecParam)
        #expect(SecKeyDecrypt(rsa, .PKCS1, digest, -5, &out, &outLength) == errSecParam)

        let plaintext = [UInt8]("legacy secret".utf8)
        var ciphertext = [UInt8](repeating: 0, count: 256)
        var cipherLength = ciphertext.count
        #expect(SecKeyEncrypt(publicKey(rsa), .PKCS1, plaintext, plaintext.count, &ciphertext, &cipherLength) == 0)
        try withScratchDirectory { directory in
            try directory.write(opensslPEM(rsa), "key.pem")
            try directory.write(Data(ciphertext.prefix(cipherLength)), "c")
            let decrypted = try OpenSSL.run(["pkeyutl", "-decrypt", "-inkey", "key.pem", "-in", "c"], in: directory)
            #expect(decrypted == Data(plaintext))
        }
        var output = [UInt8](repeating: 0, count: 256)
        var outputLength = output.count
        #expect(SecKeyDecrypt(rsa, .PKCS1, ciphertext, cipherLength, &output, &outputLength) == 0)
        #expect(Array(output.prefix(outputLength)) == plaintext)

        let ec = try ecKey(256)
        var raw = [UInt8](repeating: 0, count: 64)
        var rawLength = raw.count
        #expect(SecKeyRawSign(ec, .sigRaw, digest, digest.count, &raw, &rawLength) == 0 && rawLength == 64)
        #expect(SecKeyRawVerify(publicKey(ec), .sigRaw, digest, digest.count, raw, rawLength) == 0)
    }

    @Test("SecKeyGeneratePair returns both keys; a bad size is -25311")
    func generatePair() throws {
        var publicKeyRef: SecKey?
        var privateKeyRef: SecKey?
        let parameters = [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 521] as CFDictionary
        #expect(SecKeyGeneratePair(parameters, &publicKeyRef, &privateKeyRef) == 0)
        let privateKey = try #require(privateKeyRef)
        #expect(publicKeyRef == publicKey(privateKey))
        let bad = [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 100] as CFDictionary
        #expect(SecKeyGeneratePair(bad, &publicKeyRef, &privateKeyRef) == errSecKeySizeNotAllowed)
    }
}

/// The number of key items with an application tag.
private func keyCount(tag: String) -> Int {
    let (status, result) = copyMatching([
        kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecMatchLimit: kSecMatchLimitAll,
        kSecReturnAttributes: true,
    ])
    guard status == errSecSuccess else { return 0 }
    return (result as? [Any])?.count ?? 0
}
