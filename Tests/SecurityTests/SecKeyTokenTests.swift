// Secure Enclave token keys (`kSecAttrTokenIDSecureEnclave`): made and used where the keychain's
// keys are (this process, or the test agent), never exported.

import Crypto
import Foundation
import KeychainClient
import KeychainCore
import KeychainTestSupport
import Security
import Testing

/// The parameters of a token key; `tag` makes it permanent under that application tag.
private func tokenParameters(tag: String? = nil, accessControl: Bool = false) -> [CFString: Any] {
    var parameters: [CFString: Any] = [
        kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256,
        kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
    ]
    var privateAttributes: [CFString: Any] = [:]
    if let tag {
        privateAttributes[kSecAttrIsPermanent] = true
        privateAttributes[kSecAttrApplicationTag] = Data(tag.utf8)
    }
    if accessControl {
        privateAttributes[kSecAttrAccessControl] = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .privateKeyUsage, nil)!
    }
    if !privateAttributes.isEmpty { parameters[kSecPrivateKeyAttrs] = privateAttributes }
    return parameters
}

/// A token key made with `tokenParameters`.
private func tokenKey(tag: String? = nil, accessControl: Bool = false) throws -> SecKey {
    try randomKey(tokenParameters(tag: tag, accessControl: accessControl))
}

/// The stored token key with `tag`, as a reference.
private func storedKey(tag: String) throws -> SecKey {
    let (status, result) = copyMatching([
        kSecClass: kSecClassKey, kSecAttrApplicationTag: Data(tag.utf8), kSecReturnRef: true,
    ])
    #expect(status == errSecSuccess)
    let object = try #require(result)
    #expect(CFGetTypeID(object) == SecKeyGetTypeID())
    return object as! SecKey
}

/// A signature made with the token key verifies with its exported public key, and a changed message
/// does not.
private func expectSignsAndVerifies(_ key: SecKey) throws {
    let message = Data("token signed \(UUID())".utf8)
    let signature = try sign(key, .ecdsaSignatureMessageX962SHA256, message).value()
    let publicKey = try #require(SecKeyCopyPublicKey(key))
    #expect(verify(publicKey, .ecdsaSignatureMessageX962SHA256, message, signature) == 0)
    #expect(verify(publicKey, .ecdsaSignatureMessageX962SHA256, message + Data([0]), signature) == -67808)
}

/// The token's export refusal: nil and errSecUnimplemented (-4), Apple's status (`SecKey.m:1597-1603`).
private func expectNotExportable(_ key: SecKey) {
    var error: Unmanaged<CFError>?
    #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
    #expect(status(error) == -4)
}

private let backends = KeychainBackend.memoryAndAgent

@Suite("Secure Enclave token keys")
struct SecKeyTokenTests {
    @Test("a token key signs (X9.62 message and digest, RFC 4754) and its public key verifies", arguments: backends)
    func signAndVerify(_ backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            for permanent in [false, true] {
                let key = try tokenKey(tag: permanent ? "sign.\(UUID())" : nil)
                try expectSignsAndVerifies(key)
                let publicKey = publicKey(key)
                let digest = Data(SHA256.hash(data: Data("d".utf8)))
                for algorithm: SecKeyAlgorithm in [
                    .ecdsaSignatureDigestX962SHA256, .ecdsaSignatureDigestX962, .ecdsaSignatureDigestRFC4754,
                ] {
                    let signature = try sign(key, algorithm, digest).value()
                    #expect(verify(publicKey, algorithm, digest, signature) == 0)
                }
                let rfc4754 = try sign(key, .ecdsaSignatureMessageRFC4754SHA256, Data("m".utf8)).value()
                #expect(rfc4754.count == 64)
                // The digest forms check the digest's length, as for software keys.
                #expect(sign(key, .ecdsaSignatureDigestX962SHA256, Data(count: 31)).code == -50)
            }
        }
    }

    @Test("openssl verifies a token key's DER signature with the public key's PEM")
    func opensslVerifies() throws {
        try withKeychain { _ in
            let key = try tokenKey()
            let message = Data("checked by openssl".utf8)
            let signature = try sign(key, .ecdsaSignatureMessageX962SHA256, message).value()
            let point = exported(publicKey(key))
            let pem = try P256.Signing.PublicKey(x963Representation: point).pemRepresentation
            try withScratchDirectory { directory in
                try directory.write(Data(pem.utf8), "pub.pem")
                try directory.write(message, "msg")
                try directory.write(signature, "sig")
                try directory.write(message + Data("x".utf8), "other")
                #expect(
                    try OpenSSL.succeeds(
                        ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig", "msg"], in: directory))
                #expect(
                    try !OpenSSL.succeeds(
                        ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig", "other"], in: directory))
            }
        }
    }

    @Test(
        "ECDH between a token key and a software key gives the same secret both ways",
        arguments: backends,
        [
            SecKeyAlgorithm.ecdhKeyExchangeStandard, .ecdhKeyExchangeCofactor, .ecdhKeyExchangeStandardX963SHA256,
            .ecdhKeyExchangeCofactorX963SHA384, .ecdhKeyExchangeStandardX963SHA1,
        ])
    func keyExchange(_ backend: KeychainBackend, _ algorithm: SecKeyAlgorithm) throws {
        try withKeychain(backend) { _ in
            let token = try tokenKey()
            let software = try ecKey(256)
            let parameters =
                [
                    SecKeyKeyExchangeParameter.requestedSize.rawValue: 42,
                    SecKeyKeyExchangeParameter.sharedInfo.rawValue: Data("info".utf8),
                ] as CFDictionary
            var error: Unmanaged<CFError>?
            let ours = SecKeyCopyKeyExchangeResult(token, algorithm, publicKey(software), parameters, &error)
            #expect(status(error) == 0)
            let theirs = SecKeyCopyKeyExchangeResult(software, algorithm, publicKey(token), parameters, &error)
            #expect(status(error) == 0)
            let secret = try #require(ours as Data?)
            #expect(secret == theirs as Data?)
            #expect(secret.count == (algorithm.rawValue.contains("X963") ? 42 : 32))
            // A peer on another curve: -26275, as for software keys.
            let p384 = publicKey(try ecKey(384))
            #expect(SecKeyCopyKeyExchangeResult(token, algorithm, p384, parameters, &error) == nil)
            #expect(status(error) == -26275)
        }
    }

    @Test(
        "ECIES: encrypted to the token key's public key, decrypted by the token key",
        arguments: backends,
        [
            SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM,
            .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, .eciesEncryptionStandardX963SHA256AESGCM,
            .eciesEncryptionCofactorX963SHA1AESGCM, .eciesEncryptionStandardVariableIVX963SHA512AESGCM,
        ])
    func ecies(_ backend: KeychainBackend, _ algorithm: SecKeyAlgorithm) throws {
        try withKeychain(backend) { _ in
            let key = try tokenKey()
            #expect(SecKeyIsAlgorithmSupported(key, .decrypt, algorithm))
            let plaintext = Data("for the enclave only".utf8)
            let ciphertext = try encrypt(publicKey(key), algorithm, plaintext).value()
            #expect(try decrypt(key, algorithm, ciphertext).value() == plaintext)
            var tampered = ciphertext
            tampered[tampered.count - 1] ^= 1
            #expect(decrypt(key, algorithm, tampered).code == -50)
            // Another token key cannot decrypt it.
            #expect(decrypt(try tokenKey(), algorithm, ciphertext).code == -50)
        }
    }

    @Test("export is refused with -4; the public key is a software key that exports", arguments: backends)
    func export(_ backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let key = try tokenKey(tag: "export.\(UUID())")
            expectNotExportable(key)
            let point = exported(publicKey(key))
            #expect(point.count == 65 && point.first == 4)
            // Nor through a PKCS#12-style path: SecKeyCopyAttributes has no key bytes.
            let attributes = SecKeyCopyAttributes(key) as! [String: Any]
            #expect(attributes["v_Data"] == nil)
        }
    }

    @Test("SecKeyCopyAttributes shows the token ID, P-256, not extractable")
    func attributes() throws {
        try withKeychain { _ in
            let key = try tokenKey()
            let attributes = SecKeyCopyAttributes(key) as! [String: Any]
            #expect(attributes["tkid"] as? String == "com.apple.setoken")
            #expect(attributes["kcls"] as? String == "1")
            #expect(attributes["type"] as? String == "73")
            #expect((attributes["bsiz"] as? NSNumber)?.intValue == 256)
            #expect(cfBoolean(attributes["extr"]) == false)
            #expect(cfBoolean(attributes["sign"]) == true)
            #expect(
                attributes["klbl"] as? Data == Data(Insecure.SHA1.hash(data: exported(publicKey(key)))))
            #expect(SecKeyGetBlockSize(key) == 32)
            #expect(key.description.contains("ECPrivateKey"))
        }
    }

    @Test(
        "only P-256 token keys: -50 for other types and sizes; -4 for other tokens and for imports",
        arguments: [
            ("73", 384, "com.apple.setoken", -50), ("73", 521, "com.apple.setoken", -50),
            ("42", 2048, "com.apple.setoken", -50), ("73", 256, "com.apple.secelemtoken", -4),
        ] as [(String, Int, String, Int)])
    func refusals(_ type: String, _ bits: Int, _ token: String, _ expected: Int) throws {
        try withKeychain { _ in
            var error: Unmanaged<CFError>?
            let parameters: [CFString: Any] = [
                kSecAttrKeyType: type, kSecAttrKeySizeInBits: bits, kSecAttrTokenID: token,
            ]
            #expect(SecKeyCreateRandomKey(parameters as CFDictionary, &error) == nil)
            #expect(status(error) == expected)
        }
    }

    @Test(
        "a permanent token key is found by tag as a reference that still signs and still does not export",
        arguments: backends)
    func permanentFoundByTag(_ backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let tag = "found.\(UUID())"
            let made = try tokenKey(tag: tag, accessControl: true)
            let found = try storedKey(tag: tag)
            #expect(exported(publicKey(found)) == exported(publicKey(made)))
            // Two references to the same stored key are equal (and hash alike); another key is not.
            #expect(found == made && found.hashValue == made.hashValue)
            #expect(found != (try tokenKey()))
            try expectSignsAndVerifies(found)
            expectNotExportable(found)
            // The item is a key with the token ID and a "this device only" protection.
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: Data(tag.utf8), kSecReturnAttributes: true,
            ])
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes["tkid"] as? String == "com.apple.setoken")
            #expect(attributes["pdmn"] as? String == "aku")
            // Deleted through its reference, it is gone, and the reference no longer signs.
            #expect(SecItemDelete([kSecValueRef: found] as CFDictionary) == errSecSuccess)
            #expect(copyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: Data(tag.utf8)]).0 == -25300)
            #expect(sign(found, .ecdsaSignatureMessageX962SHA256, Data("m".utf8)).code == -25300)
        }
    }

    @Test(
        "a token key item's data, as any client reads it, is its public key, never the private key",
        arguments: backends)
    func itemDataIsThePublicKey(_ backend: KeychainBackend) throws {
        try withKeychain(backend) { keychain in
            let tag = "data.\(UUID())"
            let key = try tokenKey(tag: tag)
            let point = exported(publicKey(key))
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: Data(tag.utf8), kSecReturnData: true,
            ])
            #expect(status == errSecSuccess)
            #expect(result as? Data == point)
            // Stored "this device only" (bound to this machine's device key), whatever the default.
            let attributes =
                copyMatching([
                    kSecClass: kSecClassKey, kSecAttrApplicationTag: Data(tag.utf8), kSecReturnAttributes: true,
                ]).1 as? [String: Any]
            #expect(attributes?["pdmn"] as? String == "aku")
            // The engine's (or agent's) own answer to this client, below SecItem.
            let items = try keychain.find(
                ItemQuery(class: .key, attributes: ["atag": .data(Data(tag.utf8))]), includeData: true)
            #expect(items.count == 1)
            #expect(items.first?.data == point)
            if backend == .agent {
                // A second connection to the agent, as another client process would open, reads
                // the same: the private key is not on the wire.
                let served = try #require(keychain as? AgentKeychain)
                let other = try AgentConnection(socketPath: try TestAgent.shared().socketPath)
                let found = try other.keychain(at: served.keychain).find(
                    ItemQuery(class: .key, attributes: ["atag": .data(Data(tag.utf8))]), includeData: true)
                #expect(found.map(\.data) == [point])
            }
        }
    }

    @Test(
        "SecItemAdd of a token key made without kSecAttrIsPermanent stores it; found by tag, it is the same key",
        arguments: backends)
    func addReference(_ backend: KeychainBackend) throws {
        try withKeychain(backend) { _ in
            let tag = "added.\(UUID())"
            let key = try tokenKey()
            var result: CFTypeRef?
            let status = SecItemAdd(
                [kSecValueRef: key, kSecAttrApplicationTag: Data(tag.utf8), kSecReturnRef: true] as CFDictionary,
                &result)
            #expect(status == errSecSuccess)
            let returned = try #require(result as! SecKey?)
            let found = try storedKey(tag: tag)
            for stored in [returned, found] {
                #expect(exported(publicKey(stored)) == exported(publicKey(key)))
                try expectSignsAndVerifies(stored)
                expectNotExportable(stored)
            }
            // A signature of the stored key verifies with the original's public key: the same key.
            let message = Data("same key".utf8)
            let signature = try sign(found, .ecdsaSignatureMessageX962SHA256, message).value()
            #expect(verify(publicKey(key), .ecdsaSignatureMessageX962SHA256, message, signature) == 0)
            #expect(
                SecItemAdd([kSecValueRef: key, kSecAttrApplicationTag: Data(tag.utf8)] as CFDictionary, nil) == -25299)
            // Not as any other class.
            #expect(
                SecItemAdd([kSecClass: kSecClassGenericPassword, kSecValueRef: key] as CFDictionary, nil) == -50)
        }
    }

    @Test("a token key made by one keychain process cannot be used or stored through another")
    func handleBoundToItsHolder() throws {
        let key = try withKeychain(.agent) { _ in try tokenKey() }
        try withKeychain(.memory) { _ in
            // The agent sealed the key under its own process key: this process cannot open it.
            #expect(
                SecItemAdd([kSecValueRef: key, kSecAttrApplicationTag: Data("moved".utf8)] as CFDictionary, nil)
                    == -25300)
        }
    }

    @Test("a locked keychain neither stores nor uses its token keys: errSecInteractionNotAllowed")
    func lockedKeychain() throws {
        try withKeychain(password: "pw") { keychain in
            var error: Unmanaged<CFError>?
            #expect(SecKeyCreateRandomKey(tokenParameters(tag: "locked") as CFDictionary, &error) == nil)
            #expect(status(error) == -25308)
            try keychain.unlock(password: Data("pw".utf8))
            let key = try tokenKey(tag: "locked")
            try expectSignsAndVerifies(key)
            keychain.lock()
            #expect(sign(key, .ecdsaSignatureMessageX962SHA256, Data("m".utf8)).code == -25308)
            try keychain.unlock(password: Data("pw".utf8))
            try expectSignsAndVerifies(key)
        }
    }

    @Test("a permanent token key is found by tag after the keychain file is closed and opened again")
    func foundAfterReopening() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("token.keychain-db").path
        let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 7, count: 32)))
        let tag = "reopen.\(UUID())"
        let first = try KeychainDatabase.create(at: path, password: nil as Data?, configuration: configuration)
        try first.unlock(password: nil)
        let point = try Keychains.withDefault(first) { exported(publicKey(try tokenKey(tag: tag))) }
        try first.close()

        let second = try KeychainDatabase.open(at: path, configuration: configuration)
        try second.unlock(password: nil)
        try Keychains.withDefault(second) {
            let found = try storedKey(tag: tag)
            #expect(exported(publicKey(found)) == point)
            try expectSignsAndVerifies(found)
            expectNotExportable(found)
        }
        try second.close()
    }

    @Test("a key that is not permanent is not stored; the token keys of two calls differ")
    func notPermanent() throws {
        try withKeychain { _ in
            let first = try tokenKey()
            let second = try tokenKey()
            #expect(first != second)
            #expect(exported(publicKey(first)) != exported(publicKey(second)))
            #expect(copyMatching([kSecClass: kSecClassKey, kSecMatchLimit: kSecMatchLimitAll]).0 == -25300)
            // Verifying needs the public key, and the private key does not run public-key operations.
            #expect(!SecKeyIsAlgorithmSupported(first, .verify, .ecdsaSignatureMessageX962SHA256))
            #expect(!SecKeyIsAlgorithmSupported(first, .encrypt, .eciesEncryptionStandardX963SHA256AESGCM))
        }
    }
}

@Suite("swift-crypto interop")
struct CryptoInteropTests {
    @Test("swift-crypto keys become SecKeys and back through X9.63; signatures verify across both")
    func p256RoundTrip() throws {
        let cryptoKey = P256.Signing.PrivateKey()
        let secKey = try importKey(
            cryptoKey.x963Representation, type: kSecAttrKeyTypeECSECPrimeRandom, keyClass: kSecAttrKeyClassPrivate)
        #expect(exported(secKey) == cryptoKey.x963Representation)
        let publicKey = try P256.Signing.PublicKey(x963Representation: exported(SecKeyCopyPublicKey(secKey)!))
        #expect(publicKey.rawRepresentation == cryptoKey.publicKey.rawRepresentation)
        let message = Data("interop".utf8)
        let ours = try sign(secKey, .ecdsaSignatureMessageX962SHA256, message).value()
        #expect(publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: ours), for: message))
        let theirs = try cryptoKey.signature(for: message).derRepresentation
        #expect(verify(SecKeyCopyPublicKey(secKey)!, .ecdsaSignatureMessageX962SHA256, message, theirs) == 0)
    }

    @Test("a token key's public key becomes a swift-crypto key that verifies the token's signatures")
    func tokenPublicKey() throws {
        try withKeychain { _ in
            let key = try tokenKey()
            let publicKey = try P256.Signing.PublicKey(x963Representation: exported(SecKeyCopyPublicKey(key)!))
            let message = Data("from the token".utf8)
            let signature = try sign(key, .ecdsaSignatureMessageX962SHA256, message).value()
            #expect(
                publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: message))
            // ECDH with a swift-crypto key agrees with swift-crypto's own.
            let peer = P256.KeyAgreement.PrivateKey()
            let peerSecKey = try importKey(
                peer.publicKey.x963Representation, type: kSecAttrKeyTypeECSECPrimeRandom,
                keyClass: kSecAttrKeyClassPublic)
            var error: Unmanaged<CFError>?
            let ours = SecKeyCopyKeyExchangeResult(
                key, .ecdhKeyExchangeStandard, peerSecKey, [:] as CFDictionary, &error)
            let theirs = try peer.sharedSecretFromKeyAgreement(
                with: P256.KeyAgreement.PublicKey(x963Representation: publicKey.x963Representation))
            #expect(ours as Data? == theirs.withUnsafeBytes { Data($0) })
        }
    }
}

@Suite("Private key item references")
struct PrivateKeyReferenceTests {
    @Test("a stored EC private key's reference reads its scalar on first use: a bad scalar fails signing with -50")
    func scalarReadOnUse() throws {
        try withKeychain { _ in
            let good = try ecKey(256)
            let tag = Data("deferred.\(UUID())".utf8)
            #expect(add([kSecValueRef: good, kSecAttrApplicationTag: tag]) == errSecSuccess)
            let found = try #require(
                copyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: tag, kSecReturnRef: true]).1)
            let key = found as! SecKey
            #expect(key == good)
            let signature = try sign(key, .ecdsaSignatureMessageX962SHA256, Data("m".utf8)).value()
            #expect(verify(publicKey(good), .ecdsaSignatureMessageX962SHA256, Data("m".utf8), signature) == 0)

            // A valid public point with a scalar above the group order.
            let badTag = Data("bad-scalar.\(UUID())".utf8)
            let bytes = exported(publicKey(good)) + Data(repeating: 0xFF, count: 32)
            #expect(
                add([
                    kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
                    kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrApplicationTag: badTag,
                    kSecValueData: bytes,
                ]) == errSecSuccess)
            let bad =
                try #require(
                    copyMatching([kSecClass: kSecClassKey, kSecAttrApplicationTag: badTag, kSecReturnRef: true]).1)
                as! SecKey
            #expect(exported(publicKey(bad)) == exported(publicKey(good)))
            #expect(sign(bad, .ecdsaSignatureMessageX962SHA256, Data("m".utf8)).code == -50)
            // An invalid public point gives no reference at all.
            let noTag = Data("bad-point.\(UUID())".utf8)
            #expect(
                add([
                    kSecClass: kSecClassKey, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
                    kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrApplicationTag: noTag,
                    kSecValueData: Data([4]) + Data(repeating: 1, count: 96),
                ]) == errSecSuccess)
            let (status, result) = copyMatching([
                kSecClass: kSecClassKey, kSecAttrApplicationTag: noTag, kSecReturnRef: true,
            ])
            #expect(status == errSecSuccess || status == errSecItemNotFound)
            #expect(result == nil)
        }
    }
}

/// A Core Foundation Boolean's value, or `nil` for anything else.
private func cfBoolean(_ value: Any?) -> Bool? {
    guard let number = value as? NSNumber else { return nil }
    return number.boolValue
}
