import Crypto
import Foundation
import KeychainStorage
import Testing

@Suite("Cipher")
struct CipherTests {
    @Test("the same password and salt make ciphers that read each other's output")
    func deterministicDerivation() throws {
        let a = try testCipher("pw")
        let b = try testCipher("pw")
        let plaintext = Data("hello".utf8)
        #expect(try b.decrypt(a.encrypt(plaintext)) == plaintext)
        #expect(try a.decrypt(b.encrypt(plaintext)) == plaintext)
    }

    @Test("a different password or salt cannot decrypt", arguments: ["password", "salt"])
    func otherKeysFail(change: String) throws {
        let a = try testCipher("pw")
        let b = change == "password" ? try testCipher("pw2") : try testCipher("pw", salt: Data(repeating: 1, count: 32))
        let sealed = try a.encrypt(Data("hello".utf8))
        #expect(throws: KeychainStorageError.self) { try b.decrypt(sealed) }
    }

    @Test("each encryption uses a fresh nonce, and the format is 0x01 ‖ nonce ‖ ciphertext ‖ tag")
    func format() throws {
        let cipher = try testCipher()
        let plaintext = Data("same".utf8)
        let one = try cipher.encrypt(plaintext)
        let two = try cipher.encrypt(plaintext)
        #expect(one != two)
        #expect(one.count == 1 + 12 + plaintext.count + 16)
        #expect(one.first == 1)
    }

    @Test("tampering with any byte makes decryption fail", arguments: [0, 1, 12, 13, 17, 32])
    func tamperingFails(index: Int) throws {
        let cipher = try testCipher()
        var sealed = try cipher.encrypt(Data("tamper".utf8))
        sealed[index] ^= 0x40
        let error = storageError { try cipher.decrypt(sealed) }
        #expect(error?.code == .decryptionFailed)
        #expect(error?.osStatus == -26275)
    }

    @Test(
        "short or foreign input is refused",
        arguments: [Data(), Data([1]), Data(count: 28), Data(repeating: 2, count: 40)])
    func malformedInput(data: Data) throws {
        #expect(storageErrorCode { try testCipher().decrypt(data) } == .decryptionFailed)
    }

    @Test(
        "weak parameters, short salts and empty passwords are refused",
        arguments: [
            ("scrypt N=2^14", Cipher.KeyDerivation.scrypt(logN: 14), "password", 32),
            ("scrypt r=4", .scrypt(r: 4), "password", 32),
            ("scrypt absurd", .scrypt(logN: 30), "password", 32),
            ("PBKDF2 210k", .pbkdf2(rounds: 210_000), "password", 32),
            ("short salt", .unsafeTestingOnly, "password", 15),
            ("empty password", .unsafeTestingOnly, "", 32),
        ])
    func refusedParameters(name: String, derivation: Cipher.KeyDerivation, password: String, saltSize: Int) {
        let error = storageError {
            try Cipher(password: password, salt: Data(count: saltSize), keyDerivation: derivation)
        }
        #expect(error?.code == .invalidParameter, "\(name)")
        #expect(error?.osStatus == -50)
    }

    @Test("PBKDF2 at 600,000 rounds is accepted")
    func pbkdf2Accepted() throws {
        let cipher = try Cipher(password: "pw", salt: testSalt, keyDerivation: .pbkdf2())
        #expect(try cipher.decrypt(cipher.encrypt(Data("x".utf8))) == Data("x".utf8))
        #expect(String(describing: cipher).contains("600000"))
    }

    @Test("the default derivation is scrypt N=2^17, r=8, p=1, and a text salt is its UTF-8 bytes")
    func defaultDerivation() throws {
        #expect(Cipher.KeyDerivation.default == .scrypt(logN: 17, r: 8, p: 1))
        let cipher = try Cipher(password: "pw", salt: "a salt of enough bytes")
        #expect(String(describing: cipher).contains("scrypt(N=2^17, r=8, p=1)"))
        let same = try Cipher(password: "pw", salt: Data("a salt of enough bytes".utf8))
        #expect(try same.decrypt(cipher.encrypt(Data("x".utf8))) == Data("x".utf8))
    }

    @Test("a raw 256-bit key is accepted and other sizes are refused")
    func rawKeys() throws {
        let cipher = try Cipher(key: SymmetricKey(size: .bits256))
        #expect(try cipher.decrypt(cipher.encrypt(Data("k".utf8))) == Data("k".utf8))
        #expect(storageErrorCode { try Cipher(key: SymmetricKey(size: .bits128)) } == .invalidParameter)
    }

    @Test("makeSalt returns 32 fresh random bytes")
    func salts() {
        let a = Cipher.makeSalt()
        #expect(a.count == 32)
        #expect(a != Cipher.makeSalt())
    }

    @Test("a cipher's description shows no key or password")
    func descriptionHasNoSecret() throws {
        let key = SymmetricKey(size: .bits256)
        let cipher = try Cipher(key: key)
        let hex = key.withUnsafeBytes { Data($0) }.map { String(format: "%02x", $0) }.joined()
        #expect(!String(describing: cipher).contains(hex))
        #expect(!String(describing: try testCipher("hunter2")).contains("hunter2"))
    }
}
