import Crypto
import Foundation
import PostgresScratchServer
import KeychainCore
import Testing

@testable import KeychainSync

/// A machine of a test zone: its own keychain file (its own device key), synced through the
/// suite's real PostgreSQL.
final class TestMachine: Sendable {
    let temporary: TemporaryKeychain
    var keychain: KeychainDatabase { temporary.keychain }

    /// A machine whose keychain has `password` (it starts locked), or none.
    init(password: String? = nil) throws {
        temporary = try TemporaryKeychain(password: password, configuration: .testing())
    }

    func syncNow() async throws -> (pushed: Int, pulled: Int) {
        try await SyncSetup.syncNow(keychain: keychain)
    }

    /// The synchronizable items, as (service, account, secret) triples, sorted.
    func syncedItems() throws -> [String] {
        try keychain.find(ItemQuery(class: .genericPassword, synchronizable: .yes), includeData: true).map {
            "\($0.attributes[.service]?.stringValue ?? "")|\($0.attributes[.account]?.stringValue ?? "")|"
                + String(decoding: $0.data ?? Data(), as: UTF8.self)
        }.sorted()
    }

    func add(service: String, account: String, secret: String, synchronizable: Bool = true, accessible: String? = nil)
        throws
    {
        var attributes: Attributes = [
            .service: .string(service), .account: .string(account), .synchronizable: .number(synchronizable ? 1 : 0),
        ]
        if let accessible { attributes[.accessible] = .string(accessible) }
        try keychain.add(Item(class: .genericPassword, attributes: attributes, data: Data(secret.utf8)))
    }

    func query(service: String, account: String) -> ItemQuery {
        ItemQuery(
            class: .genericPassword, attributes: [.service: .string(service), .account: .string(account)],
            synchronizable: .yes)
    }
}

/// A zone of machines: the first made with `init`, the others joined by invitation and approved.
func makeZone(machines count: Int, cluster given: PostgresCluster? = nil) async throws -> [TestMachine] {
    let cluster = try given ?? SharedCluster.get()
    let first = try TestMachine()
    _ = try await SyncSetup.initialize(keychain: first.keychain, adminURL: cluster.superuserURL, deviceName: "m0")
    var machines = [first]
    for index in 1..<count {
        let machine = try TestMachine()
        let code = try await SyncSetup.invite(keychain: first.keychain)
        let joined = try await SyncSetup.join(keychain: machine.keychain, code: code, deviceName: "m\(index)")
        let approved = try await SyncSetup.approve(keychain: first.keychain)
        #expect(approved.map(\.id) == [joined.device])
        #expect(approved.first?.fingerprint == joined.fingerprint)
        machines.append(machine)
    }
    return machines
}

extension SyncIntegration {
    @Suite("Sync between machines through a real PostgreSQL", .serialized, .timeLimit(.minutes(10)))
    struct SyncDevicesTests {
        @Test("an add, an update and a delete on one machine reach the other; local-only items stay home")
        func changesPropagate() async throws {
            let zone = try await makeZone(machines: 2)
            let (a, b) = (zone[0], zone[1])
            try a.add(service: "deploy", account: "ci", secret: "token-1")
            try a.add(service: "local", account: "ci", secret: "never leaves", synchronizable: false)
            try a.add(service: "bound", account: "ci", secret: "this device only", accessible: "aku")
            #expect(try await a.syncNow().pushed == 1)
            _ = try await b.syncNow()
            #expect(try b.syncedItems() == ["deploy|ci|token-1"])
            #expect(try b.keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)).count == 1)

            try a.keychain.update(
                a.query(service: "deploy", account: "ci"), attributes: [:], data: Data("token-2".utf8))
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try b.syncedItems() == ["deploy|ci|token-2"])

            // B changes it back; A sees B's change.
            try b.keychain.update(b.query(service: "deploy", account: "ci"), attributes: [.label: .string("from b")])
            _ = try await b.syncNow()
            _ = try await a.syncNow()
            #expect(
                try a.keychain.find(a.query(service: "deploy", account: "ci")).first?.attributes[.label]
                    == .string("from b"))

            try b.keychain.delete(b.query(service: "deploy", account: "ci"))
            #expect(try await b.syncNow().pushed == 1)
            #expect(try await a.syncNow().pulled == 1)
            // The synchronizable item bound to A (…ThisDeviceOnly) never left and stays.
            #expect(try a.syncedItems() == ["bound|ci|this device only"])
            // kSecAttrSynchronizableAny sees the local item still there on A.
            #expect(try a.keychain.find(ItemQuery(class: .genericPassword, synchronizable: .any)).count == 2)
        }

        @Test("an item leaving the sync set is deleted on the others and kept where it left")
        func leavingTheSyncSet() async throws {
            let zone = try await makeZone(machines: 2)
            let (a, b) = (zone[0], zone[1])
            try a.add(service: "s", account: "a", secret: "x")
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try b.syncedItems().count == 1)
            try a.keychain.update(a.query(service: "s", account: "a"), attributes: [.synchronizable: .number(0)])
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try b.syncedItems().isEmpty)
            #expect(
                try a.keychain.find(ItemQuery(class: .genericPassword, attributes: [.service: .string("s")])).count == 1
            )
        }

        @Test("the same primary key added on two machines offline ends as one item; the loser is in the conflict log")
        func concurrentAddsConverge() async throws {
            let zone = try await makeZone(machines: 2)
            let (a, b) = (zone[0], zone[1])
            try a.add(service: "shared", account: "me", secret: "from a")
            try await Task.sleep(nanoseconds: 5_000_000)
            try b.add(service: "shared", account: "me", secret: "from b")  // later: wins
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            _ = try await a.syncNow()
            #expect(try a.syncedItems() == ["shared|me|from b"])
            #expect(try b.syncedItems() == ["shared|me|from b"])
            let conflicts = try SyncSetup.conflicts(of: b.keychain) + SyncSetup.conflicts(of: a.keychain)
            #expect(conflicts.map { String(decoding: $0.loser.data ?? Data(), as: UTF8.self) }.contains("from a"))
            #expect(try SyncSetup.status(of: a.keychain).pendingChanges == 0)
            #expect(try SyncSetup.status(of: b.keychain).pendingChanges == 0)
        }

        @Test("1,000 adds on one machine arrive whole on another")
        func thousandAdds() async throws {
            let zone = try await makeZone(machines: 2)
            let (a, b) = (zone[0], zone[1])
            try a.keychain.add(
                contentsOf: (0..<1000).map { index in
                    Item(
                        class: .genericPassword,
                        attributes: [
                            .service: .string("bulk"), .account: .string("user\(index)"), .synchronizable: .number(1),
                        ], data: Data("secret-\(index)".utf8))
                })
            let started = Date()
            #expect(try await a.syncNow().pushed == 1000)
            #expect(try await b.syncNow().pulled == 1000)
            let elapsed = Date().timeIntervalSince(started)
            #expect(try b.syncedItems() == a.syncedItems())
            #expect(try b.syncedItems().count == 1000)
            print("sync: 1,000 items pushed by A and pulled by B in \(String(format: "%.2f", elapsed)) s")
        }

        @Test("a removed machine's login is refused and it cannot open what is written later")
        func removalRollsKeys() async throws {
            let zone = try await makeZone(machines: 3)
            let (a, b, c) = (zone[0], zone[1], zone[2])
            try a.add(service: "before", account: "x", secret: "old")
            _ = try await a.syncNow()
            _ = try await c.syncNow()
            let status = try SyncSetup.status(of: c.keychain)
            _ = try await SyncSetup.remove(keychain: a.keychain, device: status.device.description)
            try a.add(service: "after", account: "x", secret: "new")
            _ = try await a.syncNow()
            _ = try await b.syncNow()
            #expect(try b.syncedItems() == ["after|x|new", "before|x|old"])
            await #expect(throws: (any Error).self) { _ = try await c.syncNow() }
            #expect(try c.syncedItems() == ["before|x|old"])
            // The record written after the removal does not open with any key C holds.
            let cluster = try SharedCluster.get()
            let zoneID = try SyncSetup.status(of: a.keychain).zone.description
            let blobs = try cluster.sql(
                "SELECT encode(blob, 'hex') FROM keychain_sync.records WHERE zone_id = '\(zoneID)' ORDER BY seq DESC LIMIT 1"
            )
            let secretsOfC = try SyncEngine(keychain: c.keychain, server: NoServer()).context().secrets
            let newest = try #require(Data(hexString: blobs.trimmingCharacters(in: .whitespacesAndNewlines)))
            let header = try RecordCodec.header(of: newest)
            #expect(secretsOfC.classKeysByID[header.keyID] == nil)
        }
    }
}

extension Data {
    init?(hexString: String) {
        var bytes = [UInt8]()
        var index = hexString.startIndex
        while index < hexString.endIndex {
            let next = hexString.index(index, offsetBy: 2, limitedBy: hexString.endIndex) ?? hexString.endIndex
            guard let byte = UInt8(hexString[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
