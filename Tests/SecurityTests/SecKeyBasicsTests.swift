// SecKey generation, import, export, attributes, block sizes, equality and errors (Apple's
// `OSX/sec/Security/SecKey.m`, `SecECKey.m`, `SecRSAKey.c`), cross-checked with openssl's own
// encodings of the same keys.

import Crypto
import Foundation
import Security
import Testing

@Suite("SecKey: keys")
struct SecKeyBasicsTests {
    @Test(
        "EC generation: export lengths, curve, block size and round trip",
        arguments: [(256, 97, 65, 32), (384, 145, 97, 48), (521, 199, 133, 66)])
    func ecGeneration(_ bits: Int, _ privateLength: Int, _ publicLength: Int, _ block: Int) throws {
        let key = try ecKey(bits)
        let bytes = exported(key)
        #expect(bytes.count == privateLength && bytes.first == 4)
        let pub = publicKey(key)
        #expect(exported(pub).count == publicLength)
        #expect(exported(pub) == bytes.prefix(publicLength))
        #expect(SecKeyGetBlockSize(key) == block && SecKeyGetBlockSize(pub) == block)
        let again = try importKey(bytes, type: kSecAttrKeyTypeECSECPrimeRandom, keyClass: kSecAttrKeyClassPrivate)
        #expect(exported(again) == bytes)
        #expect(again == key && again.hashValue == key.hashValue)
        #expect(again != pub)
    }

    @Test("RSA generation: 2048 bits, e = 65537, PKCS#1 export that openssl reads")
    func rsaGeneration() throws {
        let key = try randomKey([kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 2048])
        #expect(SecKeyGetBlockSize(key) == 256)
        let attributes = SecKeyCopyAttributes(key)! as! [String: Any]
        #expect(attributes["bsiz"] as? Int == 2048)
        try withScratchDirectory { directory in
            try directory.write(exported(key), "key.der")
            let text = try OpenSSL.run(["rsa", "-inform", "DER", "-in", "key.der", "-noout", "-text"], in: directory)
            #expect(String(decoding: text, as: UTF8.self).contains("publicExponent: 65537"))
            let publicDER = try OpenSSL.run(
                ["rsa", "-inform", "DER", "-in", "key.der", "-RSAPublicKey_out", "-outform", "DER"], in: directory)
            #expect(publicDER == exported(publicKey(key)))
        }
    }

    @Test("EC import: openssl's key gives the same X9.63 bytes and public point")
    func ecImportMatchesOpenSSL() throws {
        for (curve, size) in [("prime256v1", 32), ("secp384r1", 48), ("secp521r1", 66)] {
            try withScratchDirectory { directory in
                try OpenSSL.run(["ecparam", "-name", curve, "-genkey", "-noout", "-out", "key.pem"], in: directory)
                let spki = try OpenSSL.run(
                    ["ec", "-in", "key.pem", "-pubout", "-outform", "DER", "-conv_form", "uncompressed"],
                    in: directory)
                let point = spki.suffix(1 + 2 * size)
                let text = String(
                    decoding: try OpenSSL.run(["ec", "-in", "key.pem", "-noout", "-text"], in: directory),
                    as: UTF8.self)
                let privateHex = text.components(separatedBy: "priv:")[1].components(separatedBy: "pub:")[0]
                var scalar = hexBytes(privateHex)
                scalar = Data(count: max(0, size - scalar.count)) + scalar.suffix(size)
                let key = try importKey(
                    point + scalar, type: kSecAttrKeyTypeECSECPrimeRandom, keyClass: kSecAttrKeyClassPrivate)
                #expect(exported(key) == point + scalar)
                #expect(exported(publicKey(key)) == point)
                let pub = try importKey(point, type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPublic)
                #expect(pub == publicKey(key))
            }
        }
    }

    @Test("RSA import: PKCS#1 private, PKCS#1 and SPKI public; export is always PKCS#1")
    func rsaImportFormats() throws {
        let key = try KeyFixtures.rsa2048()
        try withScratchDirectory { directory in
            try directory.write(exported(key), "key.der")
            let pkcs1 = try OpenSSL.run(
                ["rsa", "-inform", "DER", "-in", "key.der", "-RSAPublicKey_out", "-outform", "DER"], in: directory)
            let spki = try OpenSSL.run(
                ["rsa", "-inform", "DER", "-in", "key.der", "-pubout", "-outform", "DER"], in: directory)
            let pkcs8 = try OpenSSL.run(
                ["pkcs8", "-topk8", "-nocrypt", "-inform", "DER", "-in", "key.der", "-outform", "DER"], in: directory)
            let fromPKCS1 = try importKey(pkcs1, type: kSecAttrKeyTypeRSA, keyClass: kSecAttrKeyClassPublic)
            let fromSPKI = try importKey(spki, type: kSecAttrKeyTypeRSA, keyClass: kSecAttrKeyClassPublic)
            #expect(exported(fromPKCS1) == pkcs1 && exported(fromSPKI) == pkcs1)
            #expect(fromSPKI == publicKey(key))
            // Private keys are PKCS#1 only, as on Apple platforms.
            #expect(throws: SecKeyTestFailure.self) {
                try importKey(pkcs8, type: kSecAttrKeyTypeRSA, keyClass: kSecAttrKeyClassPrivate)
            }
        }
    }

    @Test(
        "SecKeyCreateWithData errors",
        arguments: [
            DictionaryCase(-50) { [kSecAttrKeyType: kSecAttrKeyTypeEC] },
            DictionaryCase(-4) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeyClass: kSecAttrKeyClassSymmetric] },
            DictionaryCase(-50) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeyClass: "073"] },
            DictionaryCase(-50) { [kSecAttrKeyType: "99", kSecAttrKeyClass: kSecAttrKeyClassPublic] },
            DictionaryCase(-50) { [kSecAttrKeyClass: kSecAttrKeyClassPublic] },
            DictionaryCase(-50) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeyClass: kSecAttrKeyClassPublic] },
            DictionaryCase(-50) { [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeyClass: kSecAttrKeyClassPublic] },
            DictionaryCase(-50) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeyClass: Data()] },
            DictionaryCase(-50) { [kSecAttrKeyType: [1, 2], kSecAttrKeyClass: kSecAttrKeyClassPublic] },
            DictionaryCase(-4) {
                [
                    kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeyClass: kSecAttrKeyClassPrivate,
                    kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
                ]
            },
        ])
    func createWithDataErrors(_ test: DictionaryCase) {
        let (attributes, expected) = (test.dictionary(), test.expected)
        var error: Unmanaged<CFError>?
        let random = Data((0..<65).map { UInt8(truncatingIfNeeded: $0 &* 37) })
        #expect(SecKeyCreateWithData(random as CFData, attributes as CFDictionary, &error) == nil)
        #expect(status(error) == expected)
    }

    @Test("Numbers and exact decimal strings name the type and class")
    func numericTypeAndClass() throws {
        let point = exported(publicKey(try ecKey(256)))
        for attributes: [CFString: Any] in [
            [kSecAttrKeyType: 73, kSecAttrKeyClass: 0],
            [kSecAttrKeyType: "73", kSecAttrKeyClass: "0"],
            [kSecAttrKeyType: kSecAttrKeyTypeDSA, kSecAttrKeyClass: kSecAttrKeyClassPublic],
        ] {
            var error: Unmanaged<CFError>?
            #expect(SecKeyCreateWithData(point as CFData, attributes as CFDictionary, &error) != nil)
            #expect(error == nil)
        }
    }

    @Test(
        "SecKeyCreateRandomKey errors",
        arguments: [
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 255] },
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 224] },
            DictionaryCase(-50) { [kSecAttrKeySizeInBits: 256] },
            DictionaryCase(-50) { [kSecAttrKeyType: 73, kSecAttrKeySizeInBits: 256] },
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeEC] },
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 8200] },
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 512] },
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits: 2047] },
            DictionaryCase(-50) { [kSecAttrKeyType: kSecAttrKeyTypeAES, kSecAttrKeySizeInBits: 256] },
            DictionaryCase(-50) {
                [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256, kSecPrivateKeyAttrs: "x"]
            },
            DictionaryCase(-25311) { [kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: Data()] },
            // Tokens other than the Secure Enclave: Apple's status without CryptoTokenKit.
            DictionaryCase(-4) {
                [
                    kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256,
                    kSecAttrTokenID: kSecAttrTokenIDSecureElement,
                ]
            },
            // The Secure Enclave makes P-256 keys only.
            DictionaryCase(-50) {
                [
                    kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 384,
                    kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
                ]
            },
        ])
    func createRandomKeyErrors(_ test: DictionaryCase) {
        let (parameters, expected) = (test.dictionary(), test.expected)
        var error: Unmanaged<CFError>?
        #expect(SecKeyCreateRandomKey(parameters as CFDictionary, &error) == nil)
        #expect(status(error) == expected)
    }

    @Test("Sizes as strings are read leniently, as CFStringGetIntValue does")
    func lenientSize() throws {
        for size in ["256", " 384", "521 bits"] {
            let key = try randomKey([kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: size])
            #expect(SecKeyGetBlockSize(key) == (Int(size.filter(\.isNumber))! + 7) / 8)
        }
    }

    /// The attributes Apple's software keys report (`OSX/sec/Security/SecKey.m`), per key type and
    /// class.
    @Test("SecKeyCopyAttributes: Apple's table; klbl is the SHA-1 of the public key bytes")
    func attributes() throws {
        let ec = try ecKey(256)
        let rsa = try KeyFixtures.rsa2048()
        for key in [ec, publicKey(ec), rsa, publicKey(rsa)] {
            let attributes = SecKeyCopyAttributes(key)! as! [String: Any]
            let isPrivate = (attributes["kcls"] as? String) == "1"
            let isEC = (attributes["type"] as? String) == "73"
            #expect(attributes["class"] as? String == "keys")
            #expect(attributes["kcls"] as? String == (key == publicKey(key) ? "0" : "1"))
            #expect(
                attributes["bsiz"] as? Int == (isEC ? 256 : 2048)
                    && attributes["esiz"] as? Int == attributes["bsiz"] as? Int)
            #expect(attributes["v_Data"] as? Data == exported(key))
            #expect(attributes["klbl"] as? Data == Data(Insecure.SHA1.hash(data: exported(publicKey(key)))))
            for name in ["perm", "priv", "modi", "extr"] { #expect(attributes[name] as? Bool == true, "\(name)") }
            for name in ["sens", "asen", "next", "snrc", "vyrc"] {
                #expect(attributes[name] as? Bool == false, "\(name)")
            }
            for name in ["sign", "unwp"] { #expect(attributes[name] as? Bool == isPrivate, "\(name)") }
            for name in ["encr", "vrfy", "wrap"] { #expect(attributes[name] as? Bool == !isPrivate, "\(name)") }
            #expect(attributes["decr"] as? Bool == (isPrivate || !isEC))  // RSA public: Apple quirk
            #expect(attributes["drve"] as? Bool == (isPrivate && isEC))
        }
    }

    @Test("Equality and hashing follow key material and class; CFGetTypeID names keys")
    func equalityAndTypeID() throws {
        let key = try ecKey(256)
        let copy = try importKey(exported(key), type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPrivate)
        let pub = publicKey(key)
        let pubCopy = try importKey(exported(pub), type: kSecAttrKeyTypeEC, keyClass: kSecAttrKeyClassPublic)
        #expect(Set([key, copy, pub, pubCopy]).count == 2)
        #expect(key == copy && pub == pubCopy && key != pub)
        #expect(CFGetTypeID(key) == SecKeyGetTypeID())
        #expect(CFGetTypeID(NSString(string: "x")) == CFStringGetTypeID())
        #expect(CFGetTypeID(NSData()) == CFDataGetTypeID())
        #expect(CFGetTypeID(kCFBooleanTrue) == CFBooleanGetTypeID())
        #expect(CFGetTypeID(NSNumber(value: 3)) == CFNumberGetTypeID())
    }

    @Test("Descriptions and errors never show private key bytes")
    func noSecretsInDescriptions() throws {
        let key = try ecKey(256)
        let secret = hexString(exported(key).suffix(32))
        #expect(!String(describing: key).lowercased().contains(secret.prefix(16)))
        var error: Unmanaged<CFError>?
        _ = SecKeyCreateSignature(key, .rsaSignatureMessagePKCS1v15SHA256, Data("m".utf8) as CFData, &error)
        let message = "\(error!.takeRetainedValue())"
        #expect(!message.lowercased().contains(secret.prefix(16)))
        #expect(String(describing: key).hasPrefix("<SecKeyRef curve type: kSecECCurveSecp256r1"))
    }
}
