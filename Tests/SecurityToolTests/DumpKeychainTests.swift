import Foundation
import GRDB
import Testing

/// `dump-keychain` with a damaged row: the intact items are printed, the bad row reported.
@Suite struct DumpKeychainTests {
    /// A password-less keychain `dump.keychain` with alice, bob and carol (rows 1, 2, 3), one
    /// byte of bob's `column` flipped in the file.
    private func keychainWithOneBadRow(_ sandbox: Sandbox, column: String) throws -> String {
        #expect(try sandbox.run(["create-keychain", "-p", "", "dump.keychain"]).status == 0)
        for account in ["alice", "bob", "carol"] {
            let added = try sandbox.run(
                ["add-generic-password", "-a", account, "-s", "svc", "-w", "\(account)-secret", "dump.keychain"])
            #expect(added.status == 0, "\(added)")
        }
        let path = sandbox.keychainsDirectory + "/dump.keychain-db"
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            var blob = try #require(try Data.fetchOne(db, sql: "SELECT \(column) FROM items WHERE id = 2"))
            blob[blob.startIndex + blob.count / 2] ^= 0x01
            try db.execute(sql: "UPDATE items SET \(column) = ? WHERE id = 2", arguments: [blob])
        }
        try queue.close()
        return path
    }

    /// The defect: one row failing authentication made dump-keychain print nothing at all.
    @Test(
        "one row failing authentication does not hide the others from dump-keychain",
        arguments: [("attributes", false), ("data", true)])
    func oneBadRowDoesNotHideTheOthersFromDumpKeychain(column: String, withData: Bool) throws {
        let sandbox = try Sandbox()
        let path = try keychainWithOneBadRow(sandbox, column: column)
        let dump = try sandbox.run(["dump-keychain"] + (withData ? ["-d"] : []) + ["dump.keychain"])
        #expect(dump.status == 93, "errSecDecode (-26275) exits with its low byte: \(dump)")
        #expect(dump.out.contains("\"acct\"<blob>=\"alice\""), "\(dump)")
        #expect(dump.out.contains("\"acct\"<blob>=\"carol\""), "\(dump)")
        #expect(!dump.out.contains("\"bob\""), "\(dump)")
        if withData {
            #expect(dump.out.contains("alice-secret") && dump.out.contains("carol-secret"), "\(dump)")
        }
        // The bad row, by row and persistent reference; nothing of its contents.
        let lines = dump.err.split(separator: "\n")
        #expect(lines.count == 2, "\(dump)")
        #expect(lines.first?.contains("row 2 (genp, persistent reference ") == true, "\(dump)")
        #expect(lines.first?.contains(path) == true, "\(dump)")
        #expect(!dump.err.contains("bob"), "\(dump)")
        #expect(lines.last?.contains("1 unreadable item skipped") == true, "\(dump)")

        // The normal search still refuses the damaged item.
        let bob = try sandbox.run(["find-generic-password", "-a", "bob", "-s", "svc", "-w", "dump.keychain"])
        #expect(bob.status != 0 && !bob.out.contains("bob-secret"), "\(bob)")
    }
}
