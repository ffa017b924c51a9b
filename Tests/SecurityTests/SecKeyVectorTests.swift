// Published known-answer vectors through the SecKey API: PKCS #1 v2.1 RSA-PSS (all ten keys, 1024–2048
// bits, salt 20 = SHA-1's length as Apple's PSS uses) and RSA-OAEP-SHA1 decryption.

import Crypto
import Foundation
import Security
import Testing

@Suite("SecKey: published vectors")
struct SecKeyVectorTests {
    @Test("PKCS #1 v2.1 PSS vectors verify with rsaSignatureMessagePSSSHA1 and DigestPSSSHA1", arguments: pssVectors)
    func pss(_ vector: RSAVector) throws {
        let key = try importKey(hexBytes(vector.publicKey), type: kSecAttrKeyTypeRSA, keyClass: kSecAttrKeyClassPublic)
        #expect(SecKeyGetBlockSize(key) == (vector.bits + 7) / 8)
        #expect((SecKeyCopyAttributes(key)! as! [String: Any])["bsiz"] as? Int == vector.bits)
        for (message, signature) in vector.cases {
            let message = hexBytes(message)
            let signature = hexBytes(signature)
            #expect(verify(key, .rsaSignatureMessagePSSSHA1, message, signature) == 0, "example \(vector.example)")
            let digest = Data(Insecure.SHA1.hash(data: message))
            #expect(verify(key, .rsaSignatureDigestPSSSHA1, digest, signature) == 0, "example \(vector.example)")
            #expect(verify(key, .rsaSignatureMessagePSSSHA1, message + Data([0]), signature) == -67808)
        }
        // Keys whose size is not a multiple of 8 bits cannot be loaded by CryptoExtras' RSA encryption:
        // encryption is reported unsupported for them (a documented gap).
        #expect(SecKeyIsAlgorithmSupported(key, .encrypt, .rsaEncryptionOAEPSHA1) == (vector.bits % 8 == 0))
    }

    @Test("PKCS #1 v2.1 OAEP vectors decrypt with rsaEncryptionOAEPSHA1", arguments: oaepVectors)
    func oaep(_ vector: RSAVector) throws {
        let key = try importKey(
            hexBytes(vector.privateKey), type: kSecAttrKeyTypeRSA, keyClass: kSecAttrKeyClassPrivate)
        #expect(exported(publicKey(key)) == hexBytes(vector.publicKey))
        for (message, ciphertext) in vector.cases {
            #expect(try decrypt(key, .rsaEncryptionOAEPSHA1, hexBytes(ciphertext)).value() == hexBytes(message))
            var tampered = hexBytes(ciphertext)
            tampered[3] ^= 0x40
            #expect(decrypt(key, .rsaEncryptionOAEPSHA1, tampered).code == -50)
        }
    }
}

extension RSAVector: CustomTestStringConvertible {
    var testDescription: String { "example \(example) (\(bits) bits)" }
}
