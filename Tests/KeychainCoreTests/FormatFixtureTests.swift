import Crypto
import CryptoExtras
import Foundation
import GRDB
import KeychainCore
import Testing

/// The keychain files of each format version (`Fixtures/`, see ``FixtureCopy``) are kept so
/// that every later build must open them. Only the current version's fixture can be
/// regenerated (when deliberately changing it):
/// `KEYCHAIN_WRITE_FIXTURE=1 swift test --filter FormatFixtureTests`.

private let fixtureItems: [Item] = [
    Item(
        class: .genericPassword,
        attributes: [.account: .string("alice"), .service: .string("fixture"), .label: .string("Alice")],
        data: Data("v1-secret".utf8)),
    Item(
        class: .internetPassword,
        attributes: [
            .server: .string("example.com"), .account: .string("bob"), .protocol: .string("htps"), .port: .number(443),
        ], data: Data("v1-inet".utf8)),
    Item(
        class: .genericPassword,
        attributes: [.account: .string("device"), .accessible: .string("aku")], data: Data("v1-device".utf8)),
    Item(
        class: .genericPassword,
        attributes: [.account: .string("synced"), .synchronizable: .number(1)], data: Data("v1-synced".utf8)),
    Item(
        class: .key, attributes: ["kcls": .number(1), "klbl": .data(Data([1, 2, 3]))],
        data: Data(repeating: 7, count: 32)),
]

@Suite("Format fixtures and known answers")
struct FormatFixtureTests {
    @Test(
        "every format's fixture opens, unlocks and reads back every item, by attributes and by identity",
        arguments: Array(1...KeychainDatabase.formatVersion))
    func fixtureOpens(version: Int) throws {
        let path = FixtureCopy.path(version: version)
        if version == KeychainDatabase.formatVersion,
            ProcessInfo.processInfo.environment["KEYCHAIN_WRITE_FIXTURE"] == "1"
        {
            try? FileManager.default.removeItem(atPath: path)
            let keychain = try KeychainDatabase.create(
                at: path, password: "fixture", configuration: FixtureCopy.configuration)
            try keychain.unlock(password: "fixture")
            for item in fixtureItems { try keychain.add(item) }
        }
        let (keychain, scratch) = try openCopy(version: version)
        defer { withExtendedLifetime(scratch) {} }
        for expected in fixtureItems {
            var query = ItemQuery(class: expected.itemClass, attributes: expected.attributes, synchronizable: .any)
            query.attributes[.synchronizable] = nil
            let found = try keychain.find(query, includeData: true)
            #expect(found.count == 1, "\(expected)")
            #expect(found.first?.data == expected.data)
            // Files of format 1 index persistent identities differently (a unique uuid index).
            let identity = try #require(found.first?.persistentID)
            let byIdentity = try keychain.find(ItemQuery(class: nil, persistentID: identity), includeData: true)
            #expect(byIdentity.map(\.data) == [expected.data])
        }
    }

    @Test("a format-1 file is upgraded on open and updates in place keep every lookup right")
    func formatOneUpgradesAndUpdates() throws {
        let (keychain, scratch) = try openCopy(version: 1)
        defer { withExtendedLifetime(scratch) {} }
        let alice = ItemQuery(class: .genericPassword, attributes: [.account: .string("alice")])
        // An indexed value changes (its format-1 tag row must go), with a secret and a label.
        try keychain.update(
            alice, attributes: [.account: .string("carol"), .label: .string("Carol")], data: Data("v2".utf8))
        #expect(try keychain.find(alice).isEmpty)
        #expect(try keychain.find(ItemQuery(class: .genericPassword, attributes: [.label: .string("Alice")])).isEmpty)
        let carol = try keychain.find(
            ItemQuery(class: .genericPassword, attributes: [.account: .string("carol"), .label: .string("Carol")]),
            includeData: true)
        #expect(carol.map(\.data) == [Data("v2".utf8)])
        // The item's format-1 accessibility tag is stale now; filters on it are checked after
        // decryption and still find the right items.
        let device = try keychain.find(
            ItemQuery(class: .genericPassword, attributes: [.accessible: .string("aku")]), includeData: true)
        #expect(device.map(\.data) == [Data("v1-device".utf8)])
        try keychain.delete(ItemQuery(class: .genericPassword, attributes: [.account: .string("carol")]))
        #expect(try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)).count == 2)
    }

    @Test("a format-3 file keeps its index layout when upgraded: adds and every kind of lookup agree")
    func formatThreeKeepsItsLayout() throws {
        let (keychain, scratch) = try openCopy(version: 3)
        defer { withExtendedLifetime(scratch) {} }
        let path = scratch.file("copy.keychain-db")
        let header = try GRDBTestAccess.queue(path).read { db in
            (
                try Int.fetchOne(db, sql: "PRAGMA user_version"),
                try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE name = 'index'")
            )
        }
        #expect(header.0 == KeychainDatabase.formatVersion)
        #expect(header.1 == Data([2]))  // the account-first layout of format 3
        var item = Item(
            class: .genericPassword,
            attributes: [.account: .string("alice"), .service: .string("added"), .label: .string("Added")],
            data: Data("new".utf8))
        try keychain.add(item)
        item.attributes[.service] = .string("fixture")
        #expect(errorCode { try keychain.add(item) } == .duplicateItem)
        for (filters, expected) in [
            ([AttributeName.account: AttributeValue.string("alice")], ["v1-secret", "new"]),
            ([.service: .string("added")], ["new"]),
            ([.service: .string("fixture"), .account: .string("alice")], ["v1-secret"]),
            ([.label: .string("Added")], ["new"]),
        ] {
            let found = try keychain.find(ItemQuery(class: .genericPassword, attributes: filters), includeData: true)
            #expect(found.map { String(decoding: $0.data ?? Data(), as: UTF8.self) } == expected, "\(filters)")
        }
    }

    /// Opens and unlocks a copy of a fixture (the checked-in file is never written), in a
    /// scratch directory that lives as long as the returned `Scratch`.
    private func openCopy(version: Int) throws -> (KeychainDatabase, Scratch) {
        let copy = try FixtureCopy(version: version)
        let keychain = try copy.open()
        #expect(keychain.isLocked)
        try keychain.unlock(password: "fixture")
        return (keychain, copy.scratch)
    }

    @Test("scrypt matches RFC 7914 §12")
    func scryptKnownAnswer() throws {
        let key = try KDF.Scrypt.deriveKey(
            from: Data("password".utf8), salt: Data("NaCl".utf8), outputByteCount: 64, rounds: 1024, blockSize: 8,
            parallelism: 16)
        let hex = key.withUnsafeBytes { Data($0) }.map { String(format: "%02x", $0) }.joined()
        #expect(
            hex
                == "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        )
    }

    @Test("HKDF-SHA256 matches RFC 5869 test case 1")
    func hkdfKnownAnswer() {
        let ikm = SymmetricKey(data: Data(repeating: 0x0b, count: 22))
        let salt = Data((0x00...0x0c).map { UInt8($0) })
        let info = Data((0xf0...0xf9).map { UInt8($0) })
        let okm = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, outputByteCount: 42)
        let hex = okm.withUnsafeBytes { Data($0) }.map { String(format: "%02x", $0) }.joined()
        #expect(hex == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test("AES-256-GCM matches the NIST GCM specification's test case 16")
    func aesGCMKnownAnswer() throws {
        func bytes(_ hex: String) -> Data {
            var data = Data()
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                data.append(UInt8(hex[index..<next], radix: 16)!)
                index = next
            }
            return data
        }
        let key = SymmetricKey(data: bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let nonce = try AES.GCM.Nonce(data: bytes("cafebabefacedbaddecaf888"))
        let plaintext = bytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        )
        let aad = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let box = try AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
        #expect(
            box.ciphertext
                == bytes(
                    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                ))
        #expect(box.tag == bytes("76fc6ece0f4e1768cddf8853bb2d551b"))
    }
}
