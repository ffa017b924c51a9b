import Crypto
import CryptoExtras
import Foundation
import KeychainCore

/// AES-256-GCM test cases 13–16 of the GCM specification (McGrew and Viega, the NIST
/// submission): key, nonce, plaintext, associated data, ciphertext, tag.
private let gcmVectors: [(String, String, String, String, String, String, String)] = [
    (
        "GCM test case 13", String(repeating: "00", count: 32), String(repeating: "00", count: 12), "", "", "",
        "530f8afbc74536b9a963b4f1c4cb738b"
    ),
    (
        "GCM test case 14", String(repeating: "00", count: 32), String(repeating: "00", count: 12),
        String(repeating: "00", count: 16), "", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"
    ),
    (
        "GCM test case 15", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
        "cafebabefacedbaddecaf888",
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
        "",
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
        "b094dac5d93471bdec1a502270e3cc6c"
    ),
    (
        "GCM test case 16", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
        "cafebabefacedbaddecaf888",
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
        "feedfacedeadbeeffeedfacedeadbeefabaddad2",
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
        "76fc6ece0f4e1768cddf8853bb2d551b"
    ),
]

/// RFC 5869 appendix A, test cases 1–3 (HKDF-SHA256): IKM, salt, info, length, OKM.
private let hkdfVectors: [(String, String, String, String, Int, String)] = [
    (
        "RFC 5869 A.1", String(repeating: "0b", count: 22), "000102030405060708090a0b0c", "f0f1f2f3f4f5f6f7f8f9", 42,
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    ),
    (
        "RFC 5869 A.2", (0x00...0x4f).map { String(format: "%02x", $0) }.joined(),
        (0x60...0xaf).map { String(format: "%02x", $0) }.joined(),
        (0xb0...0xff).map { String(format: "%02x", $0) }.joined(),
        82,
        "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"
    ),
    (
        "RFC 5869 A.3", String(repeating: "0b", count: 22), "", "", 42,
        "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
    ),
]

/// RFC 7914 §12 (scrypt) and §11 (PBKDF2-HMAC-SHA256): password, salt, N, r, p, output.
private let scryptVectors: [(String, String, String, Int, Int, Int, String)] = [
    (
        "RFC 7914 §12 #1", "", "", 16, 1, 1,
        "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"
    ),
    (
        "RFC 7914 §12 #2", "password", "NaCl", 1024, 8, 16,
        "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
    ),
    (
        "RFC 7914 §12 #3", "pleaseletmein", "SodiumChloride", 16_384, 8, 1,
        "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
    ),
    (
        "RFC 7914 §12 #4", "pleaseletmein", "SodiumChloride", 1_048_576, 8, 1,
        "2101cb9b6a511aaeaddbbe09cf70f881ec568d574a2ffd4dabe5ee9820adaa478e56fd8f4ba5d09ffa1c6d927c40f4c337304049e8a952fbcbf45c6fa77a41a4"
    ),
]

private let pbkdf2Vectors: [(String, String, String, Int, String)] = [
    (
        "RFC 7914 §11 #1", "passwd", "salt", 1,
        "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
    ),
    (
        "RFC 7914 §11 #2", "Password", "NaCl", 80_000,
        "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"
    ),
]

/// The format-1 fixture: every later version must open it and read these items.
private let fixtureItems: [(ItemClass, Attributes, String)] = [
    (.genericPassword, [.account: .string("alice"), .service: .string("fixture")], "v1-secret"),
    (.internetPassword, [.server: .string("example.com"), .account: .string("bob")], "v1-inet"),
    (.genericPassword, [.account: .string("device")], "v1-device"),
    (.genericPassword, [.account: .string("synced")], "v1-synced"),
]

/// The fixture kept by the engine's tests, found from this source file.
private var fixturePath: String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/KeychainCoreTests/Fixtures/format-v1.keychain-db")
        .path
}

/// Published test vectors and the first released file format.
func knownAnswerAttacks(_ context: StressContext) throws -> [StressRow] {
    var rows: [StressRow] = []
    var failures: [String] = []
    var trials = 0
    for (name, key, nonce, plaintext, aad, ciphertext, tag) in gcmVectors {
        trials += 1
        do {
            let box = try AES.GCM.seal(
                unhex(plaintext)!, using: SymmetricKey(data: unhex(key)!), nonce: AES.GCM.Nonce(data: unhex(nonce)!),
                authenticating: unhex(aad)!)
            if hex(box.ciphertext) != ciphertext || hex(box.tag) != tag { failures.append("\(name): mismatch") }
            // And the negative case: the tag with one bit flipped does not open.
            var bad = box.tag
            bad[bad.startIndex] ^= 1
            let forged = try AES.GCM.SealedBox(nonce: box.nonce, ciphertext: box.ciphertext, tag: bad)
            if (try? AES.GCM.open(forged, using: SymmetricKey(data: unhex(key)!), authenticating: unhex(aad)!)) != nil {
                failures.append("\(name): a forged tag opened")
            }
        } catch {
            failures.append("\(name): \(error)")
        }
    }
    for (name, ikm, salt, info, length, okm) in hkdfVectors {
        trials += 1
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: unhex(ikm)!), salt: unhex(salt)!, info: unhex(info)!,
            outputByteCount: length)
        if hex(key.withUnsafeBytes { Data($0) }) != okm { failures.append("\(name): mismatch") }
    }
    for (name, password, salt, n, r, p, output) in scryptVectors {
        if n > 16_384 && context.mode == .quick { continue }
        trials += 1
        do {
            let key = try KDF.Scrypt.deriveKey(
                from: Data(password.utf8), salt: Data(salt.utf8), outputByteCount: 64, rounds: n, blockSize: r,
                parallelism: p, maxMemory: 1 << 31)
            if hex(key.withUnsafeBytes { Data($0) }) != output { failures.append("\(name): mismatch") }
        } catch {
            failures.append("\(name): \(error)")
        }
    }
    for (name, password, salt, rounds, output) in pbkdf2Vectors {
        trials += 1
        do {
            let key = try KDF.Insecure.PBKDF2.deriveKey(
                from: Data(password.utf8), salt: Data(salt.utf8), using: .sha256, outputByteCount: 64,
                unsafeUncheckedRounds: rounds)
            if hex(key.withUnsafeBytes { Data($0) }) != output { failures.append("\(name): mismatch") }
        } catch {
            failures.append("\(name): \(error)")
        }
    }
    rows.append(
        StressRow(
            group: "Known answers",
            attack:
                "AES-256-GCM (GCM spec cases 13–16), HKDF-SHA256 (RFC 5869 A.1–A.3), scrypt (RFC 7914 §12\(context.mode == .quick ? " #1–#3" : " #1–#4")), PBKDF2-SHA256 (RFC 7914 §11)",
            trials: trials, required: "every output equal to the published one; forged tags refused",
            measured: "\(trials - failures.count)/\(trials) vectors match", passed: failures.isEmpty, evidence: failures
        ))

    // The first released file format.
    let fixture = fixturePath
    guard FileManager.default.fileExists(atPath: fixture) else {
        rows.append(
            .notRun(
                group: "Known answers", attack: "format-1 keychain fixture",
                required: "opens and reads back every item",
                reason: "fixture not found at \(fixture)"))
        return rows
    }
    let scratch = try Scratch("fixture")
    let copy = scratch.file("fixture.keychain-db")
    try copyFile(fixture, copy)
    let before = sha256(ofFile: fixture)
    var fixtureFailures: [String] = []
    let configuration = KeychainConfiguration.testing(deviceKey: .fixed(Data(repeating: 0x42, count: 32)))
    do {
        let keychain = try KeychainDatabase.open(at: copy, configuration: configuration)
        if !keychain.isLocked { fixtureFailures.append("the fixture opened unlocked") }
        try keychain.unlock(password: "fixture")
        for (itemClass, attributes, secret) in fixtureItems {
            let found = try keychain.find(
                ItemQuery(class: itemClass, attributes: attributes, synchronizable: .any), includeData: true)
            if found.count != 1 || found.first?.data != Data(secret.utf8) {
                fixtureFailures.append("\(itemClass) \(attributes.keys.sorted()): \(found.count) items")
            }
        }
        if try keychain.find(ItemQuery(class: .key), includeData: true).first?.data != Data(repeating: 7, count: 32) {
            fixtureFailures.append("the key item does not read back")
        }
        if (try? KeychainDatabase.open(at: copy, configuration: configuration).unlock(password: "not fixture")) != nil {
            fixtureFailures.append("a wrong password opened the fixture")
        }
    } catch {
        fixtureFailures.append("\(error)")
    }
    if sha256(ofFile: fixture) != before { fixtureFailures.append("the checked-in fixture changed") }
    rows.append(
        StressRow(
            group: "Known answers", attack: "format-1 keychain fixture (Tests/KeychainCoreTests/Fixtures)",
            trials: fixtureItems.count + 2, required: "opens, unlocks, reads back every item; wrong password refused",
            measured: fixtureFailures.isEmpty ? "every item read back" : "\(fixtureFailures.count) failures",
            passed: fixtureFailures.isEmpty, evidence: fixtureFailures))
    return rows
}
