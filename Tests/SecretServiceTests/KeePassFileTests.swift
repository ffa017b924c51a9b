import Foundation
import KeePassFormat
import KeyringImport
import SecretService
import SeededRandom
import Testing

/// KeePass databases moved in: files written by the real KeePassXC (`keepassxc-cli`, Debian's
/// `keepassxc`), in KDBX 4 with Argon2, read here and checked against a second KDBX
/// implementation (pykeepass, from PyPI) reading the same file.
///
/// keepassxc-cli 2.7 creates databases as KDBX 3.1 with the AES-KDF, and has no option for
/// another key derivation; so pykeepass makes the empty KDBX 4 database (Argon2d and AES-256,
/// or Argon2id and ChaCha20), and KeePassXC writes every entry into it, keeping its format.
@Suite("Moving in from KeePass databases")
struct KeePassFileTests {
    static let password = "kdbx master password"
    static let client = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/keepass_client.py"

    /// A database KeePassXC filled: "Mail" (user, URL, two lines of notes; its password changed
    /// once, so its history holds the old one), "Work/VPN", and "Old", moved to the recycle bin.
    final class Database {
        let directory: String
        let path: String

        init(cipher: String) throws {
            directory = FileManager.default.temporaryDirectory.path + "/kdbx-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            path = directory + "/passwords.kdbx"
            let created = try runTool(
                try requireTool(PythonClientTests.python),
                [KeePassFileTests.client, "create", path] + (cipher.isEmpty ? [] : [cipher]),
                stdin: Data((KeePassFileTests.password + "\n").utf8), environment: ["HOME": directory])
            try #require(created.status == 0, "pykeepass created the database: \(created)")
            let p = KeePassFileTests.password
            try cli(
                [
                    "add", "-q", "-u", "alice", "--url", "https://mail.example.com", "--notes", "line one\nline two",
                    "-p", "Mail",
                ], "\(p)\nold-mail-password\n")
            try cli(["edit", "-q", "-p", "Mail"], "\(p)\nnew-mail-password\n")
            try cli(["mkdir", "-q", "Work"], "\(p)\n")
            try cli(["add", "-q", "-u", "bob", "-p", "Work/VPN"], "\(p)\nvpn-secret\n")
            try cli(["add", "-q", "-u", "carol", "-p", "Old"], "\(p)\nold-secret\n")
            try cli(["rm", "-q", "Old"], "\(p)\n")
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// `keepassxc-cli COMMAND DATABASE …` with `input` as what a person types.
        func cli(_ arguments: [String], _ input: String) throws {
            var arguments = arguments
            arguments.insert(path, at: arguments.count - 1)  // before the entry or group
            let done = try runTool(
                try requireTool("/usr/bin/keepassxc-cli"), arguments, stdin: Data(input.utf8),
                environment: ["HOME": directory, "QT_QPA_PLATFORM": "offscreen"])
            try #require(done.status == 0, "keepassxc-cli \(arguments.first ?? ""): \(done)")
        }

        /// The entries outside the recycle bin as pykeepass reads them.
        func reference() throws -> [[String: Any]] {
            let dumped = try runTool(
                try requireTool(PythonClientTests.python), [KeePassFileTests.client, "dump", path],
                stdin: Data((KeePassFileTests.password + "\n").utf8), environment: ["HOME": directory])
            try #require(dumped.status == 0, "pykeepass read the database: \(dumped)")
            return try #require(try JSONSerialization.jsonObject(with: Data(dumped.out.utf8)) as? [[String: Any]])
        }
    }

    @Test(
        "a KDBX 4 file KeePassXC wrote reads as pykeepass reads it: titles, fields, passwords, UUIDs, paths, dates; no history or recycle bin",
        arguments: ["aes256-argon2d", "chacha20"])
    func fileMatchesPyKeePass(cipher: String) throws {
        let database = try Database(cipher: cipher == "chacha20" ? "chacha20" : "")
        let expected = try database.reference()
        #expect(expected.count == 2, "Mail and Work/VPN")
        let items = try KeePassFile(contentsOf: Data(contentsOf: URL(fileURLWithPath: database.path)))
            .items(password: Data(Self.password.utf8))
        #expect(items.count == expected.count, "\(items.map(\.label))")
        for entry in expected {
            let path = entry["path"] as? String ?? ""
            let item = try #require(items.first { $0.attributes["Path"] == path }, "\(path)")
            #expect(item.label == entry["title"] as? String)
            #expect(item.secret == Data((entry["password"] as? String ?? "").utf8), "the current password: \(path)")
            #expect(item.attributes["Uuid"] == entry["uuid"] as? String)
            for (attribute, key) in [("Title", "title"), ("UserName", "username"), ("URL", "url"), ("Notes", "notes")] {
                let value = entry[key] as? String ?? ""
                #expect(
                    item.attributes[attribute] == (value.isEmpty && attribute != "Title" ? nil : value),
                    "\(path) \(attribute)")
            }
            #expect(item.created?.timeIntervalSince1970 == entry["created"] as? Double, "\(path) created")
            #expect(item.modified?.timeIntervalSince1970 == entry["modified"] as? Double, "\(path) modified")
        }
        #expect(items.first { $0.label == "Mail" }?.attributes["Notes"] == "line one\nline two")
        #expect(!items.contains { $0.secret == Data("old-mail-password".utf8) || $0.label == "Old" })
    }

    @Test("a wrong password opens nothing; every altered byte and every cut is refused (randomized)")
    func refusals() throws {
        let database = try Database(cipher: "")
        let contents = try Data(contentsOf: URL(fileURLWithPath: database.path))
        let file = try KeePassFile(contentsOf: contents)
        #expect(throws: KeyringFileError.wrongPassword) { try file.items(password: Data("not it".utf8)) }

        let seed = UInt64.random(in: 0 ... .max)
        var random = SplitMix64(seed: seed)
        for trial in 0..<200 {
            var altered = contents
            let offset = Int.random(in: 0..<contents.count, using: &random)
            altered[offset] ^= UInt8.random(in: 1...255, using: &random)
            #expect(throws: KeyringFileError.self, "seed \(seed), trial \(trial), byte \(offset)") {
                try KeePassFile(contentsOf: altered).items(password: Data(Self.password.utf8))
            }
        }
        for length in Set([0, 8, 12, 100, contents.count / 2, contents.count - 40, contents.count - 1]) {
            #expect(throws: KeyringFileError.self, "cut at \(length)") {
                try KeePassFile(contentsOf: contents.prefix(length)).items(password: Data(Self.password.utf8))
            }
        }
        // A KDBX 3.1 file, as keepassxc-cli creates one: refused with the way forward.
        let old = database.directory + "/old.kdbx"
        let made = try runTool(
            try requireTool("/usr/bin/keepassxc-cli"), ["db-create", "-q", "-p", old],
            stdin: Data("pw\npw\n".utf8), environment: ["HOME": database.directory, "QT_QPA_PLATFORM": "offscreen"])
        try #require(made.status == 0, "\(made)")
        #expect(throws: KeyringFileError.self) {
            try KeePassFile(contentsOf: Data(contentsOf: URL(fileURLWithPath: old)))
        }
        do {
            _ = try KeePassFile(contentsOf: Data(contentsOf: URL(fileURLWithPath: old)))
        } catch {
            #expect("\(error)".contains("KDBX 3.1") && "\(error)".contains("Argon2"), "\(error)")
        }
    }

    @Test(
        "security import-keyring moves a .kdbx in: a wrong password stores nothing; again adds nothing; secret-tool finds it"
    )
    func importKeyringCommand() throws {
        let database = try Database(cipher: "")
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let environment = bus.environment

        let wrong = try runTool(
            security, ["import-keyring", database.path], stdin: Data("nope\n".utf8), environment: environment)
        #expect(wrong.status == 1 && wrong.out.isEmpty, "\(wrong)")
        #expect(String(decoding: wrong.stderr, as: UTF8.self).contains("the password does not open the keyring file"))

        let imported = try runTool(
            security, ["import-keyring", database.path], stdin: Data((Self.password + "\n").utf8),
            environment: environment)
        #expect(
            imported.out == "\(database.path): 2 imported, 0 updated, 0 already present, 0 left out\n",
            "\(imported) \(imported.out)")
        let again = try runTool(
            security, ["import-keyring", "-p", Self.password, database.path], environment: environment)
        #expect(again.out.hasSuffix(": 0 imported, 0 updated, 2 already present, 0 left out\n"), "\(again)")
        #expect(MoveInStamps(keychainsDirectory: bus.root + "/data/keychains").hasMovedIn(database.path))

        // As KeePassXC's own Secret Service would give them: by Title, UserName, Path.
        let tool = try requireTool("/usr/bin/secret-tool")
        let vpn = try runTool(tool, ["lookup", "Path", "Work/VPN"], environment: environment)
        #expect(vpn.status == 0 && vpn.out == "vpn-secret", "\(vpn)")
        let mail = try runTool(tool, ["lookup", "Title", "Mail", "UserName", "alice"], environment: environment)
        #expect(mail.status == 0 && mail.out == "new-mail-password", "\(mail)")
    }

    @Test(
        "security export-keyring writes a database KeePassXC opens with every password, field and date; our reader and pykeepass read the same; it never overwrites a file"
    )
    func exportKeyringCommand() throws {
        let database = try Database(cipher: "")
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let tool = try requireTool(productsDirectory + "/security")
        let environment = bus.environment
        func security(_ arguments: [String], _ input: String = "") throws -> ToolResult {
            let done = try runTool(tool, arguments, stdin: Data(input.utf8), environment: environment)
            #expect(done.status == 0, "security \(arguments.first ?? ""): \(done)")
            return done
        }
        // A KeePass database moved in, a generic password with markup in its label and a line
        // break in its comment, an internet password, and a secret that is not text.
        _ = try security(["import-keyring", "-p", Self.password, database.path])
        _ = try security(
            [
                "add-generic-password", "-s", "demo", "-a", "me", "-l", "Demo & <Co> \"x\"", "-j", "line one\nline two",
                "-w",
            ],
            "s3cret\n")
        _ = try security(
            [
                "add-internet-password", "-s", "git.example.com", "-a", "dev", "-r", "htps", "-P", "8443", "-p",
                "/repo", "-w",
            ],
            "inet-pw\n")
        _ = try security(["add-generic-password", "-s", "binary", "-a", "me", "-X", "fffe00"])

        let output = database.directory + "/exported.kdbx"
        let exported = try security(["export-keyring", "-o", output], "export password\n")
        #expect(exported.out == "\(output): 4 exported, 1 left out (not text)\n", "\(exported.out)")
        var status = stat()
        #expect(stat(output, &status) == 0 && status.st_mode & 0o777 == 0o600, "written with mode 600")

        // KeePassXC opens it and shows each entry as it was in the keychain.
        let cli = try requireTool("/usr/bin/keepassxc-cli")
        func show(_ entry: String) throws -> String {
            let shown = try runTool(
                cli,
                ["show", "-q", "-s", "-a", "UserName", "-a", "Password", "-a", "URL", "-a", "Notes", output, entry],
                stdin: Data("export password\n".utf8),
                environment: ["HOME": database.directory, "QT_QPA_PLATFORM": "offscreen"])
            #expect(shown.status == 0, "keepassxc-cli show \(entry): \(shown)")
            return shown.out
        }
        #expect(try show("Demo & <Co> \"x\"") == "me\ns3cret\n\nline one\nline two\n")
        #expect(try show("git.example.com") == "dev\ninet-pw\nhttps://git.example.com:8443/repo\n\n")
        #expect(try show("VPN") == "bob\nvpn-secret\n\n\n")
        #expect(try show("Mail") == "alice\nnew-mail-password\nhttps://mail.example.com\nline one\nline two\n")

        // pykeepass reads the same, with the keychain's dates; so does this reader, with the
        // UUIDs of the entries that came from KeePass kept.
        let reference = try runTool(
            try requireTool(PythonClientTests.python), [Self.client, "dump", output],
            stdin: Data("export password\n".utf8), environment: ["HOME": database.directory])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(reference.out.utf8)) as? [[String: Any]])
        #expect(entries.count == 4, "\(reference)")
        let read = try KeePassFile(contentsOf: Data(contentsOf: URL(fileURLWithPath: output)))
            .items(password: Data("export password".utf8))
        let original = try database.reference()
        for entry in original {
            #expect(read.contains { $0.attributes["Uuid"] == entry["uuid"] as? String }, "\(entry["path"] ?? "")")
        }
        for entry in entries {
            let item = try #require(read.first { $0.attributes["Uuid"] == entry["uuid"] as? String })
            #expect(item.secret == Data((entry["password"] as? String ?? "").utf8))
            #expect(item.created?.timeIntervalSince1970 == entry["created"] as? Double)
            #expect(item.modified?.timeIntervalSince1970 == entry["modified"] as? Double)
        }
        let vpn = try #require(entries.first { $0["title"] as? String == "VPN" })
        let vpnBefore = try #require(original.first { $0["title"] as? String == "VPN" })
        #expect(vpn["created"] as? Double == vpnBefore["created"] as? Double, "KeePass's own date went round")

        // Never over an existing file.
        let before = try Data(contentsOf: URL(fileURLWithPath: output))
        let again = try runTool(
            tool, ["export-keyring", "-p", "other", "-o", output], environment: environment)
        #expect(again.status != 0 && String(decoding: again.stderr, as: UTF8.self).contains("exists"), "\(again)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output)) == before)
    }

    @Test(
        "security export-keyring --format cxf writes CXF 1.0 into the importing program: every member an importer needs, each password, URL, note, attribute and date; never into a file or onto a non-pipe"
    )
    func exportCredentialExchange() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let tool = try requireTool(productsDirectory + "/security")
        let shell = try requireTool("/bin/sh")
        let environment = bus.environment
        func security(_ arguments: [String], _ input: String = "") throws {
            let done = try runTool(tool, arguments, stdin: Data(input.utf8), environment: environment)
            #expect(done.status == 0, "security \(arguments.first ?? ""): \(done)")
        }
        try security(
            ["add-generic-password", "-s", "demo", "-a", "me", "-l", "Demo & <Co>", "-j", "line one\nline two", "-w"],
            "s3cret\n")
        try security(
            [
                "add-internet-password", "-s", "git.example.com", "-a", "dev", "-r", "htps", "-P", "8443", "-p",
                "/repo", "-w",
            ],
            "inet-pw\n")
        try security(["add-generic-password", "-s", "binary", "-a", "me", "-X", "fffe00"])

        // Into a program: the checker reads it as an importer would.
        let checker = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/cxf_check.py"
        let piped = try runTool(
            shell, ["-c", "\"$0\" export-keyring --format cxf -o - | /usr/bin/python3 \"$1\"", tool, checker],
            environment: environment)
        #expect(piped.status == 0, "\(piped)")
        #expect(String(decoding: piped.stderr, as: UTF8.self).contains("2 exported, 1 left out (not text)"), "\(piped)")
        let read = try #require(try JSONSerialization.jsonObject(with: Data(piped.out.utf8)) as? [String: Any])
        #expect((read["errors"] as? [String]) == [], "\(read)")
        let items = read["items"] as? [[String: Any]] ?? []
        #expect(items.count == 2, "\(items)")
        let demo = try #require(items.first { $0["title"] as? String == "Demo & <Co>" }, "\(items)")
        #expect(demo["username"] as? String == "me" && demo["password"] as? String == "s3cret")
        #expect(demo["notes"] as? String == "line one\nline two")
        #expect((demo["fields"] as? [String: String])?["service"] == "demo", "\(demo)")
        #expect((demo["created"] as? Int ?? 0) > 1_700_000_000 && demo["modified"] != nil, "\(demo)")
        let web = try #require(items.first { $0["title"] as? String == "git.example.com" }, "\(items)")
        #expect(web["username"] as? String == "dev" && web["password"] as? String == "inet-pw")
        #expect(web["urls"] as? [String] == ["https://git.example.com:8443/repo"], "\(web)")

        // Never into a file: named, or as standard output; the file stays empty.
        let file = bus.root + "/export.json"
        let named = try runTool(tool, ["export-keyring", "--format", "cxf", "-o", file], environment: environment)
        #expect(named.status != 0 && !FileManager.default.fileExists(atPath: file), "\(named)")
        let redirected = try runTool(
            shell, ["-c", "\"$0\" export-keyring --format cxf -o - > \"$1\"", tool, file], environment: environment)
        #expect(redirected.status != 0, "\(redirected)")
        #expect(String(decoding: redirected.stderr, as: UTF8.self).contains("not a pipe"), "\(redirected)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)).isEmpty)
        let unknown = try runTool(tool, ["export-keyring", "--format", "csv", "-o", "-"], environment: environment)
        #expect(unknown.status != 0, "\(unknown)")
    }
}
