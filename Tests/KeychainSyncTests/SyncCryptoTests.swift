import Crypto
import Foundation
import SeededRandom
import Testing

@testable import KeychainSync

@Suite struct ZoneKeysTests {
    let zone = ZoneID.random()

    @Test func keyRowsRoundTrip() throws {
        let keys = ZoneKeys.generate()
        let rows = try keys.wrappedRows(zone: zone)
        #expect(rows.count == 3)
        #expect(rows.allSatisfy { $0.epoch == 1 && $0.wrapped.count == 61 })
        let opened = try ZoneKeys.unwrap(rows: rows, zoneKey: keys.zoneKey, epoch: 1, zone: zone)
        #expect(Set(rows.map(\.keyID)).count == 3)
        #expect(rows.contains { $0.keyID == ZoneKeys.recordIDKeyRowID(zone: zone, epoch: 1) })
        #expect(opened.recordIDKey == keys.recordIDKey)
        for keyClass in KeyClass.allCases {
            #expect(opened.classKey(keyClass).id == keys.classKey(keyClass).id)
            #expect(opened.classKey(keyClass).key == keys.classKey(keyClass).key)
        }
        #expect(try ZoneKeys.previousZoneKey(rows: rows, zoneKey: keys.zoneKey, epoch: 1, zone: zone) == nil)
    }

    @Test func keyClassFollowsAccessibility() {
        #expect(KeyClass(accessibility: "ak") == .a)
        #expect(KeyClass(accessibility: "aku") == .a)
        for other in ["ck", "cku", "dk", "dku", "akpu", ""] { #expect(KeyClass(accessibility: other) == .c) }
    }

    @Test func wrongZoneKeyIsRefused() throws {
        let keys = ZoneKeys.generate()
        let rows = try keys.wrappedRows(zone: zone)
        #expect(
            syncErrorCode {
                _ = try ZoneKeys.unwrap(rows: rows, zoneKey: SymmetricKey(size: .bits256), epoch: 1, zone: zone)
            }
                == .tampered)
    }

    @Test func rowsMovedBetweenZonesKeysOrEpochsAreRefused() throws {
        let keys = ZoneKeys.generate()
        let rows = try keys.wrappedRows(zone: zone)
        // Another zone.
        #expect(
            syncErrorCode { _ = try ZoneKeys.unwrap(rows: rows, zoneKey: keys.zoneKey, epoch: 1, zone: .random()) }
                == .tampered)
        // Two rows' key ids swapped (KA's blob labelled KC and the reverse).
        var swapped = rows
        (swapped[1].keyID, swapped[2].keyID) = (swapped[2].keyID, swapped[1].keyID)
        #expect(
            syncErrorCode { _ = try ZoneKeys.unwrap(rows: swapped, zoneKey: keys.zoneKey, epoch: 1, zone: zone) }
                == .tampered)
        // A row relabelled with a fresh key id.
        var relabelled = rows
        relabelled[0].keyID = UUID()
        #expect(
            syncErrorCode { _ = try ZoneKeys.unwrap(rows: relabelled, zoneKey: keys.zoneKey, epoch: 1, zone: zone) }
                == .tampered)
        // Rows relabelled to another epoch.
        let moved = rows.map { ServerKey(keyID: $0.keyID, epoch: 2, wrapped: $0.wrapped) }
        #expect(
            syncErrorCode { _ = try ZoneKeys.unwrap(rows: moved, zoneKey: keys.zoneKey, epoch: 2, zone: zone) }
                == .tampered)
        // A row missing.
        #expect(
            syncErrorCode {
                _ = try ZoneKeys.unwrap(rows: Array(rows.dropLast()), zoneKey: keys.zoneKey, epoch: 1, zone: zone)
            }
                == .unknownKey)
        // A row twice.
        #expect(
            syncErrorCode {
                _ = try ZoneKeys.unwrap(rows: rows + [rows[0]], zoneKey: keys.zoneKey, epoch: 1, zone: zone)
            }
                == .tampered)
    }

    @Test func everyFlippedByteOfAKeyRowIsRefused() throws {
        let keys = ZoneKeys.generate()
        let rows = try keys.wrappedRows(zone: zone)
        for index in 0..<rows[1].wrapped.count {
            var flipped = rows
            flipped[1].wrapped = rows[1].wrapped.flipping(index)
            #expect(
                syncErrorCode { _ = try ZoneKeys.unwrap(rows: flipped, zoneKey: keys.zoneKey, epoch: 1, zone: zone) }
                    == .tampered,
                "byte \(index)")
        }
    }

    @Test func rotationKeepsTheRecordIDKeyAndChainsOlderZoneKeys() throws {
        let first = ZoneKeys.generate()
        let second = first.rotated()
        let third = second.rotated()
        #expect(second.epoch == 2 && third.epoch == 3)
        #expect(third.recordIDKey == first.recordIDKey)
        #expect(second.zoneKey != first.zoneKey)
        #expect(second.classKey(.a).id != first.classKey(.a).id && second.classKey(.c).key != first.classKey(.c).key)
        #expect(throws: SyncError.self) { _ = try third.wrappedRows(zone: zone, previous: first) }

        let rows =
            try first.wrappedRows(zone: zone) + second.wrappedRows(zone: zone, previous: first)
            + third.wrappedRows(zone: zone, previous: second)
        #expect(
            try ZoneKeys.previousZoneKey(rows: rows, zoneKey: third.zoneKey, epoch: 3, zone: zone) == second.zoneKey)
        #expect(rows.count == 3 + 4 + 4)
        #expect(Set(rows.map(\.keyID)).count == rows.count, "every key row has its own keyID")
        let chain = try ZoneKeys.unwrapChain(rows: rows, zoneKey: third.zoneKey, epoch: 3, zone: zone)
        #expect(chain.keys.sorted() == [1, 2, 3])
        for original in [first, second, third] {
            let opened = try #require(chain[original.epoch])
            #expect(opened.zoneKey == original.zoneKey)
            #expect(opened.classKeysByID == original.classKeysByID)
            #expect(opened.recordIDKey == original.recordIDKey)
        }
        // A chain row removed: the older epochs cannot be reached.
        let broken = rows.filter { $0.keyID != ZoneKeys.zoneKeyID(zone: zone, epoch: 1) }
        #expect(
            syncErrorCode { _ = try ZoneKeys.unwrapChain(rows: broken, zoneKey: third.zoneKey, epoch: 3, zone: zone) }
                == .unknownKey)
    }

    @Test func descriptionsShowNoKeyBytes() {
        let keys = ZoneKeys.generate()
        let hex = keys.zoneKey.syncKeyBytes.syncHex
        #expect(!keys.description.contains(hex))
        #expect(!String(describing: keys.classKey(.a)).contains(keys.classKey(.a).key.syncKeyBytes.syncHex))
    }

    @Test func recordIDsAreDeterministicKeyedAndOrderInsensitive() {
        let keys = ZoneKeys.generate()
        let pk: [(name: String, value: Data)] = [
            ("acct", Data("alice".utf8)), ("svce", Data("mail".utf8)), ("agrp", Data("g".utf8)),
        ]
        let id = keys.recordID(itemClass: "genp", primaryKey: pk)
        #expect(keys.recordID(itemClass: "genp", primaryKey: pk) == id)
        #expect(keys.recordID(itemClass: "genp", primaryKey: pk.reversed()) == id)
        #expect(keys.rotated().recordID(itemClass: "genp", primaryKey: pk) == id)
        #expect(keys.recordID(itemClass: "inet", primaryKey: pk) != id)
        #expect(ZoneKeys.generate().recordID(itemClass: "genp", primaryKey: pk) != id)
        var changed = pk
        changed[0].value = Data("bob".utf8)
        #expect(keys.recordID(itemClass: "genp", primaryKey: changed) != id)
        // Length prefixes keep field boundaries: ("ab", "c") is not ("a", "bc").
        #expect(
            keys.recordID(itemClass: "genp", primaryKey: [("ab", Data("c".utf8))])
                != keys.recordID(itemClass: "genp", primaryKey: [("a", Data("bc".utf8))]))
        #expect(
            keys.recordID(itemClass: "genpacct", primaryKey: [])
                != keys.recordID(itemClass: "genp", primaryKey: [("acct", Data())]))
    }

    @Test func zoneKeyIDsAreDerivedPerZoneAndEpoch() {
        let a = ZoneKeys.zoneKeyID(zone: zone, epoch: 1)
        #expect(a == ZoneKeys.zoneKeyID(zone: zone, epoch: 1))
        #expect(a != ZoneKeys.zoneKeyID(zone: zone, epoch: 2))
        #expect(a != ZoneKeys.zoneKeyID(zone: .random(), epoch: 1))
        #expect(a.uuidString.dropFirst(14).first == "8")
        #expect(ZoneKeys.recordIDKeyRowID(zone: zone, epoch: 1) != a)
        #expect(ZoneKeys.recordIDKeyRowID(zone: zone, epoch: 1) != ZoneKeys.recordIDKeyRowID(zone: zone, epoch: 2))
    }
}

@Suite struct RecordCodecTests {
    let zone = ZoneID.random()
    let keys = ZoneKeys.generate()
    let author = DeviceID.random()

    func header(_ id: RecordID = sampleRecordID(7), keyClass: KeyClass = .c, tombstone: Bool = false) -> RecordHeader {
        RecordHeader(
            zone: zone, recordID: id, keyID: keys.classKey(keyClass).id, tombstone: tombstone,
            hlc: HybridLogicalClock(milliseconds: 1_700_000_000_000, counter: 3), author: author)
    }

    func row(_ header: RecordHeader, _ blob: Data) -> ServerRecord {
        ServerRecord(recordID: header.recordID, seq: 1, keyID: header.keyID, tombstone: header.tombstone, blob: blob)
    }

    @Test func sealedRecordsOpen() throws {
        for (keyClass, tombstone, payload) in [
            (KeyClass.c, false, Data("secret".utf8)), (.a, false, Data()), (.c, true, Data()),
        ] {
            let h = header(keyClass: keyClass, tombstone: tombstone)
            let blob = try RecordCodec.seal(payload: payload, header: h, classKey: keys.classKey(keyClass).key)
            #expect(try RecordCodec.header(of: blob) == h)
            let opened = try RecordCodec.open(row(h, blob), zone: zone, classKeys: keys.classKeysByID)
            #expect(opened.header == h)
            #expect(opened.payload == payload)
        }
    }

    @Test func headerLayoutIsFixed() throws {
        let h = header()
        let bytes = h.encoded
        #expect(bytes.count == RecordHeader.encodedLength)
        #expect(bytes[0] == 1)
        #expect(bytes[1..<17] == zone.uuid.syncBytes)
        #expect(bytes[17..<33] == h.recordID.bytes)
        #expect(bytes[33..<49] == h.keyID.syncBytes)
        #expect(bytes[49] == 0)
        #expect(bytes[50..<58] == Data([0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, 0x00, 0x03]))
        #expect(bytes[58..<74] == author.uuid.syncBytes)
        #expect(header(tombstone: true).encoded[49] == 1)
    }

    @Test func everyFlippedByteIsRefused() throws {
        let h = header()
        let blob = try RecordCodec.seal(payload: Data("pw".utf8), header: h, classKey: keys.classKey(.c).key)
        #expect(blob.count == 74 + 60 + 12 + 256 + 16)
        for index in 0..<blob.count {
            for mask: UInt8 in [0x01, 0x80] {
                let code = syncErrorCode {
                    _ = try RecordCodec.open(
                        row(h, blob.flipping(index, mask: mask)), zone: zone, classKeys: keys.classKeysByID)
                }
                #expect(code == .tampered || code == .malformed, "byte \(index) mask \(mask)")
            }
        }
    }

    @Test func truncatedOrExtendedBlobsAreRefused() throws {
        let h = header()
        let blob = try RecordCodec.seal(payload: Data("pw".utf8), header: h, classKey: keys.classKey(.c).key)
        for length in [0, 1, 73, 74, 100, 134, 146, 161, blob.count - 1] {
            #expect(
                syncErrorCode {
                    _ = try RecordCodec.open(row(h, blob.prefix(length)), zone: zone, classKeys: keys.classKeysByID)
                } != nil, "length \(length)")
        }
        #expect(
            syncErrorCode {
                _ = try RecordCodec.open(row(h, blob + Data([0])), zone: zone, classKeys: keys.classKeysByID)
            } == .tampered)
    }

    @Test func blobsMovedToAnotherRecordZoneKeyOrFlagAreRefused() throws {
        let h = header()
        let blob = try RecordCodec.seal(payload: Data("pw".utf8), header: h, classKey: keys.classKey(.c).key)
        let good = row(h, blob)
        var other = good
        other.recordID = sampleRecordID(8)
        #expect(
            syncErrorCode { _ = try RecordCodec.open(other, zone: zone, classKeys: keys.classKeysByID) } == .tampered)
        #expect(
            syncErrorCode { _ = try RecordCodec.open(good, zone: .random(), classKeys: keys.classKeysByID) }
                == .tampered)
        other = good
        other.keyID = keys.classKey(.a).id
        #expect(
            syncErrorCode { _ = try RecordCodec.open(other, zone: zone, classKeys: keys.classKeysByID) } == .tampered)
        other = good
        other.tombstone = true
        #expect(
            syncErrorCode { _ = try RecordCodec.open(other, zone: zone, classKeys: keys.classKeysByID) } == .tampered)

        // The header rewritten consistently with a moved row still fails authentication.
        var rewritten = h
        rewritten.recordID = sampleRecordID(8)
        let moved = rewritten.encoded + blob.dropFirst(RecordHeader.encodedLength)
        #expect(
            syncErrorCode { _ = try RecordCodec.open(row(rewritten, moved), zone: zone, classKeys: keys.classKeysByID) }
                == .tampered)
        rewritten = h
        rewritten.tombstone = true
        let deleted = rewritten.encoded + blob.dropFirst(RecordHeader.encodedLength)
        #expect(
            syncErrorCode {
                _ = try RecordCodec.open(row(rewritten, deleted), zone: zone, classKeys: keys.classKeysByID)
            } == .tampered)
        rewritten = h
        rewritten.hlc = HybridLogicalClock(milliseconds: 1_800_000_000_000)
        let later = rewritten.encoded + blob.dropFirst(RecordHeader.encodedLength)
        #expect(
            syncErrorCode { _ = try RecordCodec.open(row(rewritten, later), zone: zone, classKeys: keys.classKeysByID) }
                == .tampered)
    }

    @Test func unknownAndWrongClassKeys() throws {
        let h = header()
        let blob = try RecordCodec.seal(payload: Data("pw".utf8), header: h, classKey: keys.classKey(.c).key)
        #expect(syncErrorCode { _ = try RecordCodec.open(row(h, blob), zone: zone, classKeys: [:]) } == .unknownKey)
        let wrong = [h.keyID: SymmetricKey(size: .bits256)]
        #expect(syncErrorCode { _ = try RecordCodec.open(row(h, blob), zone: zone, classKeys: wrong) } == .tampered)
    }

    @Test(arguments: [
        (0, 256), (1, 256), (254, 256), (255, 256), (256, 512), (1000, 1024), (4095, 4096), (4096, 8192),
        (10000, 12288),
    ])
    func paddingBuckets(payload: Int, padded: Int) throws {
        #expect(RecordCodec.paddedLength(payload) == padded)
        let bytes = Data(repeating: 0xAB, count: payload)
        let h = header()
        let blob = try RecordCodec.seal(payload: bytes, header: h, classKey: keys.classKey(.c).key)
        #expect(blob.count == 74 + 60 + 12 + padded + 16)
        #expect(try RecordCodec.open(row(h, blob), zone: zone, classKeys: keys.classKeysByID).payload == bytes)
    }

    @Test func paddingKeepsTrailingZerosAndRefusesBadMarkers() throws {
        let payload = Data([1, 0, 0, 0x80, 0])
        #expect(try RecordCodec.unpad(RecordCodec.pad(payload)) == payload)
        #expect(throws: SyncError.self) { _ = try RecordCodec.unpad(Data(count: 256)) }
        var noMarker = RecordCodec.pad(Data([1]))
        noMarker[1] = 0x40
        #expect(throws: SyncError.self) { _ = try RecordCodec.unpad(noMarker) }
        #expect(throws: SyncError.self) { _ = try RecordCodec.unpad(RecordCodec.pad(Data([1])).prefix(200)) }
    }

    @Test func blobHashIsSHA256() throws {
        let blob = Data("abc".utf8)
        #expect(
            RecordCodec.blobHash(blob).syncHex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sealingTwiceGivesDifferentBlobs() throws {
        let h = header()
        let a = try RecordCodec.seal(payload: Data("pw".utf8), header: h, classKey: keys.classKey(.c).key)
        let b = try RecordCodec.seal(payload: Data("pw".utf8), header: h, classKey: keys.classKey(.c).key)
        #expect(a.prefix(74) == b.prefix(74))
        #expect(a != b)
    }

    @Test func randomizedRoundTripsAndFlips() throws {
        var random = SplitMix64(seed: 0x5EED_C0DE)
        for round in 0..<200 {
            let size = Int.random(in: 0..<6000, using: &random)
            let payload = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
            let keyClass: KeyClass = Bool.random(using: &random) ? .a : .c
            let id = RecordID(Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }))!
            let h = header(id, keyClass: keyClass, tombstone: Bool.random(using: &random))
            let blob = try RecordCodec.seal(payload: payload, header: h, classKey: keys.classKey(keyClass).key)
            #expect(blob.count == 74 + 60 + 12 + RecordCodec.paddedLength(size) + 16)
            #expect(
                try RecordCodec.open(row(h, blob), zone: zone, classKeys: keys.classKeysByID).payload == payload,
                "round \(round)")
            let index = Int.random(in: 0..<blob.count, using: &random)
            let mask = UInt8.random(in: 1...255, using: &random)
            let code = syncErrorCode {
                _ = try RecordCodec.open(
                    row(h, blob.flipping(index, mask: mask)), zone: zone, classKeys: keys.classKeysByID)
            }
            #expect(code == .tampered || code == .malformed, "round \(round) byte \(index)")
        }
    }
}

@Suite struct HeadTests {
    let zone = ZoneID.random()
    let alice = CryptoTestDevice()
    let bob = CryptoTestDevice()

    var signers: [DeviceID: Curve25519.Signing.PublicKey] {
        [alice.id: alice.signing.publicKey, bob.id: bob.signing.publicKey]
    }

    func head(_ seq: Int64, after previous: SignedHead?, by device: CryptoTestDevice, digest: UInt8 = 0) -> Head {
        Head(
            zone: zone, seq: seq, previousHash: previous?.hash ?? Head.genesisHash,
            stateDigest: Data(repeating: digest, count: 32),
            rosterEpoch: 1, keyEpoch: 1, commitID: UUID(), author: device.id,
            time: HybridLogicalClock(milliseconds: UInt64(seq)))
    }

    func chain(_ count: Int) throws -> [SignedHead] {
        var heads: [SignedHead] = []
        for seq in 1...Int64(count) {
            let device = seq % 2 == 0 ? bob : alice
            heads.append(try SignedHead.sign(head(seq, after: heads.last, by: device), with: device.signing))
        }
        return heads
    }

    @Test func headsRoundTripThroughTheirRows() throws {
        let signed = try chain(2)[1]
        #expect(signed.head.encoded.count == Head.encodedLength)
        #expect(signed.head.encoded.prefix(14) == Data("kcsync-head-v1".utf8))
        let row = signed.serverHead
        #expect(row.bytes.count == Head.encodedLength + 64)
        #expect(row.seq == 2 && row.author == bob.id && row.commitID == signed.head.commitID)
        let decoded = try SignedHead(decoding: row, zone: zone)
        #expect(decoded == signed)
        #expect(decoded.hash == signed.hash)
        #expect(decoded.verify(signedBy: bob.signing.publicKey))
        #expect(decoded.hash == Data(SHA256.hash(data: row.bytes)))
        let bytes = row.bytes
        #expect(bytes[14] == 1)
        #expect(bytes[15..<31] == zone.uuid.syncBytes)
        #expect(bytes[31..<39] == Data([0, 0, 0, 0, 0, 0, 0, 2]))
        #expect(bytes[39..<71] == signed.head.previousHash && bytes[71..<103] == signed.head.stateDigest)
        #expect(bytes[119..<135] == signed.head.commitID.syncBytes)
        #expect(bytes[135..<151] == bob.id.uuid.syncBytes)
        #expect(bytes[151..<159] == Data([0, 0, 0, 0, 0, 2, 0, 0]))
        #expect(!decoded.verify(signedBy: alice.signing.publicKey))
    }

    @Test func rowsThatDisagreeWithTheirHeadAreRefused() throws {
        let row = try chain(1)[0].serverHead
        var other = row
        other.seq = 2
        #expect(syncErrorCode { _ = try SignedHead(decoding: other) } == .tampered)
        other = row
        other.commitID = UUID()
        #expect(syncErrorCode { _ = try SignedHead(decoding: other) } == .tampered)
        other = row
        other.author = bob.id
        #expect(syncErrorCode { _ = try SignedHead(decoding: other) } == .tampered)
        #expect(syncErrorCode { _ = try SignedHead(decoding: row, zone: .random()) } == .tampered)
        other = row
        other.bytes = row.bytes.dropLast()
        #expect(syncErrorCode { _ = try SignedHead(decoding: other) } == .malformed)
        other = row
        other.bytes = row.bytes.flipping(0)
        #expect(syncErrorCode { _ = try SignedHead(decoding: other) } == .malformed)
    }

    @Test func aGoodChainVerifies() throws {
        let heads = try chain(5)
        try SignedHead.verifyChain(from: nil, heads: heads, signers: signers)
        try SignedHead.verifyChain(from: (2, heads[1].hash), heads: Array(heads[2...]), signers: signers)
        try SignedHead.verifyChain(from: (5, heads[4].hash), heads: [], signers: signers)
    }

    @Test func reorderedDroppedAndForkedHeadsAreCaught() throws {
        let heads = try chain(5)
        var reordered = heads
        reordered.swapAt(2, 3)
        #expect(syncErrorCode { try SignedHead.verifyChain(from: nil, heads: reordered, signers: signers) } == .forked)
        var dropped = heads
        dropped.remove(at: 2)
        #expect(syncErrorCode { try SignedHead.verifyChain(from: nil, heads: dropped, signers: signers) } == .forked)
        // Dropped right after the last verified head.
        #expect(
            syncErrorCode {
                try SignedHead.verifyChain(from: (1, heads[0].hash), heads: Array(heads[2...]), signers: signers)
            } == .forked)
        // A fork: another head 3 on the same head 2, then the server shows the device's own history.
        let fork = try SignedHead.sign(head(3, after: heads[1], by: bob, digest: 9), with: bob.signing)
        try SignedHead.verifyChain(from: (2, heads[1].hash), heads: [fork], signers: signers)
        #expect(
            syncErrorCode {
                try SignedHead.verifyChain(from: (3, fork.hash), heads: Array(heads[3...]), signers: signers)
            } == .forked)
        // A head 1 that does not start from the genesis hash.
        let bogus = try SignedHead.sign(head(1, after: heads[0], by: alice), with: alice.signing)
        #expect(syncErrorCode { try SignedHead.verifyChain(from: nil, heads: [bogus], signers: signers) } == .forked)
        // A replay of already verified heads.
        #expect(
            syncErrorCode {
                try SignedHead.verifyChain(from: (4, heads[3].hash), heads: Array(heads[2...]), signers: signers)
            } == .rolledBack)
    }

    @Test func forgedAndUnknownSignaturesAreRefused() throws {
        var heads = try chain(3)
        let mallory = CryptoTestDevice()
        // Claims to be bob, signed by mallory.
        heads[1] = try SignedHead.sign(heads[1].head, with: mallory.signing)
        #expect(syncErrorCode { try SignedHead.verifyChain(from: nil, heads: heads, signers: signers) } == .tampered)
        // Mallory's own head: not a known signer.
        let own = try SignedHead.sign(head(1, after: nil, by: mallory), with: mallory.signing)
        #expect(syncErrorCode { try SignedHead.verifyChain(from: nil, heads: [own], signers: signers) } == .tampered)
        // A signed head whose content was changed after signing.
        let good = try chain(1)[0]
        var row = good.serverHead
        row.bytes = row.bytes.flipping(80)
        let altered = try SignedHead(decoding: row)
        #expect(
            syncErrorCode { try SignedHead.verifyChain(from: nil, heads: [altered], signers: signers) } == .tampered)
        // The signature flipped.
        row = good.serverHead
        row.bytes = row.bytes.flipping(row.bytes.count - 3)
        #expect(
            syncErrorCode {
                try SignedHead.verifyChain(from: nil, heads: [try SignedHead(decoding: row)], signers: signers)
            } == .tampered)
    }

    @Test func stateDigestCoversLiveRecordsInIDOrder() {
        let a = [sampleRecordID(1): Data(repeating: 1, count: 32), sampleRecordID(2): Data(repeating: 2, count: 32)]
        var b: [RecordID: Data] = [:]
        b[sampleRecordID(2)] = Data(repeating: 2, count: 32)
        b[sampleRecordID(1)] = Data(repeating: 1, count: 32)
        #expect(StateDigest.compute(a) == StateDigest.compute(b))
        #expect(StateDigest.compute(a).count == 32)
        b[sampleRecordID(2)] = Data(repeating: 3, count: 32)
        #expect(StateDigest.compute(a) != StateDigest.compute(b))
        #expect(StateDigest.compute([:]) != StateDigest.compute(a))
        #expect(StateDigest.compute([sampleRecordID(1): Data(repeating: 1, count: 32)]) != StateDigest.compute(a))
        // Swapping which record has which blob changes the digest.
        let swapped = [
            sampleRecordID(1): Data(repeating: 2, count: 32), sampleRecordID(2): Data(repeating: 1, count: 32),
        ]
        #expect(StateDigest.compute(a) != StateDigest.compute(swapped))
    }
}

@Suite struct RosterTests {
    let zone = ZoneID.random()
    let zoneKey = SymmetricKey(size: .bits256)
    let alice = CryptoTestDevice(name: "Alice's laptop")
    let bob = CryptoTestDevice(name: "bob-desktop")

    var roster: Roster { Roster(zone: zone, epoch: 2, devices: [alice.card, bob.card], signer: alice.id) }

    func trusting(_ devices: CryptoTestDevice...) -> (DeviceID) -> Curve25519.Signing.PublicKey? {
        let keys = Dictionary(uniqueKeysWithValues: devices.map { ($0.id, $0.signing.publicKey) })
        return { keys[$0] }
    }

    @Test func rostersRoundTrip() throws {
        let blob = try roster.seal(zoneKey: zoneKey, signingKey: alice.signing)
        let opened = try Roster.open(blob, zone: zone, epoch: 2, zoneKey: zoneKey, trusting: trusting(alice))
        #expect(opened == roster)
        #expect(opened.device(bob.id)?.name == "bob-desktop")
        #expect(opened.signers.count == 2)
        // Names are sealed.
        #expect(blob.range(of: Data("bob-desktop".utf8)) == nil)
    }

    @Test func untrustedOrForgedSignersAreRefused() throws {
        let blob = try roster.seal(zoneKey: zoneKey, signingKey: alice.signing)
        #expect(
            syncErrorCode { _ = try Roster.open(blob, zone: zone, epoch: 2, zoneKey: zoneKey, trusting: trusting(bob)) }
                == .tampered)
        // Signed by bob while claiming alice as signer.
        let forged = try roster.seal(zoneKey: zoneKey, signingKey: bob.signing)
        #expect(
            syncErrorCode {
                _ = try Roster.open(forged, zone: zone, epoch: 2, zoneKey: zoneKey, trusting: trusting(alice, bob))
            } == .tampered)
        // A member of the zone who is not trusted for this roster (e.g. not in the previous one).
        var byMallory = roster
        let mallory = CryptoTestDevice()
        byMallory.signer = mallory.id
        byMallory.devices.append(mallory.card)
        let malloryBlob = try byMallory.seal(zoneKey: zoneKey, signingKey: mallory.signing)
        #expect(
            syncErrorCode {
                _ = try Roster.open(malloryBlob, zone: zone, epoch: 2, zoneKey: zoneKey, trusting: trusting(alice, bob))
            } == .tampered)
    }

    @Test func wrongZoneEpochKeyOrBytesAreRefused() throws {
        let blob = try roster.seal(zoneKey: zoneKey, signingKey: alice.signing)
        #expect(
            syncErrorCode {
                _ = try Roster.open(blob, zone: .random(), epoch: 2, zoneKey: zoneKey, trusting: trusting(alice))
            } == .tampered)
        #expect(
            syncErrorCode {
                _ = try Roster.open(blob, zone: zone, epoch: 3, zoneKey: zoneKey, trusting: trusting(alice))
            } == .tampered)
        #expect(
            syncErrorCode {
                _ = try Roster.open(
                    blob, zone: zone, epoch: 2, zoneKey: SymmetricKey(size: .bits256), trusting: trusting(alice))
            }
                == .tampered)
        for index in 0..<blob.count {
            let code = syncErrorCode {
                _ = try Roster.open(
                    blob.flipping(index), zone: zone, epoch: 2, zoneKey: zoneKey, trusting: trusting(alice))
            }
            #expect(code == .tampered || code == .malformed, "byte \(index)")
        }
    }

    @Test func fingerprintsAreGroupedHex() throws {
        let fingerprint = alice.card.fingerprint
        #expect(fingerprint.count == 39)
        #expect(fingerprint.split(separator: "-").count == 8)
        #expect(fingerprint.split(separator: "-").allSatisfy { $0.count == 4 && $0.allSatisfy(\.isHexDigit) })
        #expect(fingerprint == fingerprint.lowercased())
        #expect(
            fingerprint.replacingOccurrences(of: "-", with: "")
                == Data(SHA256.hash(data: alice.signing.publicKey.rawRepresentation).prefix(16)).syncHex)
        #expect(fingerprint != bob.card.fingerprint)
    }
}

@Suite struct ZoneKeyShareTests {
    let zone = ZoneID.random()
    let zoneKey = SymmetricKey(size: .bits256)
    let sponsor = CryptoTestDevice()
    let recipient = CryptoTestDevice()

    var sponsors: (DeviceID) -> Curve25519.Signing.PublicKey? {
        let id = sponsor.id
        let key = sponsor.signing.publicKey
        return { $0 == id ? key : nil }
    }

    func share() throws -> ServerShare {
        try ZoneKeyShare.seal(
            zoneKey: zoneKey, epoch: 3, zone: zone, to: recipient.card, from: sponsor.id, signingKey: sponsor.signing)
    }

    @Test func sharesRoundTrip() throws {
        let row = try share()
        #expect(row.epoch == 3 && row.recipient == recipient.id)
        let opened = try ZoneKeyShare.open(
            row, zone: zone, recipientKey: recipient.agreement, recipient: recipient.id, sponsorKey: sponsors)
        #expect(opened.zoneKey == zoneKey)
        #expect(opened.sponsor == sponsor.id)
    }

    @Test func aShareForAnotherDeviceIsRefused() throws {
        let row = try share()
        let other = CryptoTestDevice()
        // Opened by another device as if it were its own.
        var relabelled = row
        relabelled.recipient = other.id
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    relabelled, zone: zone, recipientKey: other.agreement, recipient: other.id, sponsorKey: sponsors)
            }
                == .tampered)
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    row, zone: zone, recipientKey: other.agreement, recipient: other.id, sponsorKey: sponsors)
            }
                == .tampered)
        // The right recipient id with the wrong private key.
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    row, zone: zone, recipientKey: other.agreement, recipient: recipient.id, sponsorKey: sponsors)
            }
                == .tampered)
    }

    @Test func untrustedSponsorsMovedSharesAndFlippedBytesAreRefused() throws {
        let row = try share()
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    row, zone: zone, recipientKey: recipient.agreement, recipient: recipient.id,
                    sponsorKey: { _ in nil })
            }
                == .tampered)
        let impostor = CryptoTestDevice()
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    row, zone: zone, recipientKey: recipient.agreement, recipient: recipient.id,
                    sponsorKey: { _ in impostor.signing.publicKey })
            } == .tampered)
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    row, zone: .random(), recipientKey: recipient.agreement, recipient: recipient.id,
                    sponsorKey: sponsors)
            }
                == .tampered)
        var otherEpoch = row
        otherEpoch.epoch = 4
        #expect(
            syncErrorCode {
                _ = try ZoneKeyShare.open(
                    otherEpoch, zone: zone, recipientKey: recipient.agreement, recipient: recipient.id,
                    sponsorKey: sponsors)
            }
                == .tampered)
        for index in 0..<row.blob.count {
            var flipped = row
            flipped.blob = row.blob.flipping(index)
            let code = syncErrorCode {
                _ = try ZoneKeyShare.open(
                    flipped, zone: zone, recipientKey: recipient.agreement, recipient: recipient.id,
                    sponsorKey: sponsors)
            }
            #expect(code == .tampered || code == .malformed, "byte \(index)")
        }
    }
}

@Suite struct InvitationTests {
    let zone = ZoneID.random()
    let sponsor = CryptoTestDevice()
    let server = "postgresql://kc@db.example.net:5432/keychain?sslmode=verify-full"

    func invitation() throws -> Invitation {
        try Invitation.make(
            server: server, zone: zone, sponsor: sponsor.id, sponsorSigningKey: sponsor.signing.publicKey)
    }

    @Test func codesRoundTrip() throws {
        let original = try invitation()
        let code = original.code
        #expect(code.hasPrefix("kcsync1-"))
        #expect(code.dropFirst(8).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        let parsed = try Invitation(code: "  " + code + "\n")
        #expect(parsed.server == server)
        #expect(parsed.zone == zone)
        #expect(parsed.sponsor == sponsor.id)
        #expect(parsed.sponsorFingerprint == original.sponsorFingerprint)
        #expect(parsed.secret == original.secret)
        #expect(parsed.secret.count == 16)
        #expect(parsed.isSponsorKey(sponsor.signing.publicKey))
        #expect(!parsed.isSponsorKey(CryptoTestDevice().signing.publicKey))
        #expect(parsed.code == code)
        #expect(try invitation().secret != original.secret)
    }

    @Test func everyOneCharacterChangeIsRefused() throws {
        let code = Array(try invitation().code)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for index in code.indices {
            var changed = code
            let current = alphabet.firstIndex(of: code[index]) ?? 0
            changed[index] = alphabet[(current + 1) % alphabet.count]
            #expect(syncErrorCode { _ = try Invitation(code: String(changed)) } == .invitation, "character \(index)")
        }
        #expect(syncErrorCode { _ = try Invitation(code: String(code.dropLast())) } == .invitation)
        #expect(syncErrorCode { _ = try Invitation(code: String(code) + "A") } == .invitation)
        #expect(syncErrorCode { _ = try Invitation(code: "") } == .invitation)
        #expect(syncErrorCode { _ = try Invitation(code: "kcsync1-") } == .invitation)
    }

    @Test(arguments: [
        "postgresql://kc:hunter2@db.example.net/keychain", "postgresql://kc:@db.example.net/keychain",
        "postgresql://db.example.net/keychain?password=hunter2", "postgres://db/k?user=kc&PASSWORD=x",
        "https://db.example.net/keychain", "db.example.net", "",
    ])
    func serversWithPasswordsOrOtherSchemesAreRefused(server: String) throws {
        #expect(
            syncErrorCode {
                _ = try Invitation.make(
                    server: server, zone: zone, sponsor: sponsor.id, sponsorSigningKey: sponsor.signing.publicKey)
            }
                == .invitation)
    }

    @Test func derivedValuesHaveTheirShapes() throws {
        let invitation = try invitation()
        #expect(invitation.tokenHash == Data(SHA256.hash(data: invitation.secret)))
        let role = invitation.loginRole
        #expect(role.hasPrefix("kc_inv_") && role.count == 31)
        #expect(role.dropFirst(7).allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(invitation.loginPassword.count == 32)
        #expect(
            !invitation.loginPassword.contains("=") && !invitation.loginPassword.contains("+")
                && !invitation.loginPassword.contains("/"))
        let again = try Invitation(code: invitation.code)
        #expect(again.loginRole == role && again.loginPassword == invitation.loginPassword)
        #expect(again.joinMACKey == invitation.joinMACKey)
        let other = try self.invitation()
        #expect(
            other.loginRole != role && other.loginPassword != invitation.loginPassword
                && other.joinMACKey != invitation.joinMACKey)
        // The secret and what derives from it never show in descriptions.
        for text in [invitation.description, String(reflecting: invitation), "\(invitation)"] {
            #expect(!text.contains(invitation.secret.syncHex))
            #expect(!text.contains(invitation.loginPassword))
            #expect(!text.contains(String(invitation.code.dropFirst(8).prefix(40))))
        }
        var dumped = ""
        dump(invitation, to: &dumped)
        #expect(!dumped.contains(invitation.secret.syncHex) && !dumped.contains("secret"))
    }

    @Test func joinRequestsAreAuthenticatedByTheInvitation() throws {
        let invitation = try invitation()
        let newcomer = CryptoTestDevice(name: "new phone")
        let blob = JoinRequest(card: newcomer.card).sealed(invitation: invitation)
        #expect(try JoinRequest.open(blob, invitation: invitation).card == newcomer.card)
        #expect(syncErrorCode { _ = try JoinRequest.open(blob, invitation: try self.invitation()) } == .tampered)
        for index in 0..<blob.count {
            let code = syncErrorCode { _ = try JoinRequest.open(blob.flipping(index), invitation: invitation) }
            #expect(code == .tampered, "byte \(index)")
        }
        let posted = ServerJoinRequest(device: newcomer.id, blob: blob, postedAt: Date())
        #expect(try JoinRequest.open(posted, invitation: invitation).card.id == newcomer.id)
        let misfiled = ServerJoinRequest(device: .random(), blob: blob, postedAt: Date())
        #expect(syncErrorCode { _ = try JoinRequest.open(misfiled, invitation: invitation) } == .tampered)
        // A card with substituted keys and a MAC the server cannot compute.
        let substituted = JoinRequest(card: CryptoTestDevice(name: "new phone").card).sealed(
            invitation: try self.invitation())
        #expect(syncErrorCode { _ = try JoinRequest.open(substituted, invitation: invitation) } == .tampered)
        #expect(syncErrorCode { _ = try JoinRequest.open(Data(), invitation: invitation) } == .malformed)
    }
}

@Suite struct RecoveryKeyTests {
    let zone = ZoneID.random()

    @Test func keysDisplayAsGroupedBase32AndParseLeniently() throws {
        let key = RecoveryKey.generate()
        let display = key.displayString
        #expect(display.count == 26 + 6)
        #expect(display.split(separator: "-").map(\.count) == [4, 4, 4, 4, 4, 4, 2])
        #expect(
            display.replacingOccurrences(of: "-", with: "").allSatisfy {
                "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".contains($0)
            })
        for typed in [
            display, display.lowercased(), display.replacingOccurrences(of: "-", with: ""),
            display.replacingOccurrences(of: "-", with: " ").lowercased(), " \(display) ",
        ] {
            #expect(try RecoveryKey(parsing: typed).bytes == key.bytes, "\(typed)")
        }
        #expect(RecoveryKey.generate().bytes != key.bytes)
        #expect(!key.description.contains(key.characters) && !String(reflecting: key).contains(key.characters))
    }

    @Test func knownBase32Vector() throws {
        // RFC 4648 §10: base32("foobar") = "MZXW6YTBOI======"; 16 bytes 0x00…0x0F here.
        let key = try RecoveryKey(parsing: "AAAQEAYEAUDAOCAJBIFQYDIOB4")
        #expect(key.bytes == Data(0..<16))
        #expect(key.characters == "AAAQEAYEAUDAOCAJBIFQYDIOB4")
    }

    @Test func malformedKeysAreRefused() throws {
        let characters = RecoveryKey.generate().characters
        #expect(syncErrorCode { _ = try RecoveryKey(parsing: String(characters.dropLast())) } == .malformed)
        #expect(syncErrorCode { _ = try RecoveryKey(parsing: characters + "A") } == .malformed)
        #expect(syncErrorCode { _ = try RecoveryKey(parsing: "1" + characters.dropFirst()) } == .malformed)
        // The last character carries 3 bits; its 2 low bits must be zero ("B" = 1).
        #expect(syncErrorCode { _ = try RecoveryKey(parsing: characters.dropLast() + "B") } == .malformed)
    }

    @Test func escrowOpensOnlyWithItsKeyZoneAndEpoch() throws {
        let key = RecoveryKey.generate()
        let payload = Data("zone key chain".utf8)
        let blob = try key.sealEscrow(payload, zone: zone, epoch: 4)
        #expect(try key.openEscrow(blob, zone: zone, epoch: 4) == payload)
        #expect(try RecoveryKey(parsing: key.displayString).openEscrow(blob, zone: zone, epoch: 4) == payload)
        #expect(syncErrorCode { _ = try RecoveryKey.generate().openEscrow(blob, zone: zone, epoch: 4) } == .tampered)
        #expect(syncErrorCode { _ = try key.openEscrow(blob, zone: .random(), epoch: 4) } == .tampered)
        #expect(syncErrorCode { _ = try key.openEscrow(blob, zone: zone, epoch: 5) } == .tampered)
        #expect(syncErrorCode { _ = try key.openEscrow(blob.flipping(20), zone: zone, epoch: 4) } == .tampered)
        #expect(syncErrorCode { _ = try key.openEscrow(blob.prefix(10), zone: zone, epoch: 4) } == .malformed)
    }

    @Test func recoverySigningKeyIsDerived() throws {
        let key = RecoveryKey.generate()
        let a = try key.recoverySigningKey(zone: zone).publicKey.rawRepresentation
        #expect(
            try RecoveryKey(parsing: key.displayString).recoverySigningKey(zone: zone).publicKey.rawRepresentation == a)
        #expect(try key.recoverySigningKey(zone: .random()).publicKey.rawRepresentation != a)
    }
}

@Suite struct SyncErrorTests {
    @Test func descriptionsCarryTheCodeAndMessage() {
        #expect(SyncError(.tampered, "record 00 fails").description == "sync: tampered: record 00 fails")
        #expect(SyncError(.forked).description == "sync: forked")
    }
}
