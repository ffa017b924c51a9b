import DBusNIO
import DBusWire
import Foundation
import KeychainLibc
import KeyringImport
import SecretService
import SeededRandom
import Testing

/// Moving in from other keyrings' files on disk: GNOME Keyring's, written by the real
/// `gnome-keyring-daemon` (items stored with `secret-tool`) and read without it, and a `pass`
/// store made by the real `pass` with a throwaway GnuPG key.
@Suite("Moving in from other keyrings' files")
struct KeyringFileTests {
    /// Items stored with `secret-tool`: a plain one, libsecret's network schema, a multi-line secret.
    static let items: [(label: String, attributes: [String], secret: String)] = [
        ("Mail", ["service", "mail", "account", "alice"], "mail-secret"),
        ("Wi-Fi «home»", ["xdg:schema", "org.gnome.keyring.NetworkPassword", "server", "ap", "user", "bob"], "wifi"),
        ("Note", ["service", "notes", "account", "carol", "extra", "x y"], "note\nwith lines"),
    ]

    /// A private bus with GNOME Keyring on it, its login keyring made with `password` and holding
    /// ``items``; then stopped, so that only its files remain.
    final class GnomeKeyring {
        let bus: PrivateSessionBus
        let gnome: LaunchedTool
        private(set) var file: String

        /// With an empty `password`, the items go to a collection GNOME Keyring is asked to make
        /// with an empty master password (its login keyring is made with another).
        init(password: String) async throws {
            bus = try PrivateSessionBus.activatingKeychaind()
            gnome = try LaunchedTool(
                try requireTool("/usr/bin/gnome-keyring-daemon"), ["--foreground", "--unlock", "--components=secrets"],
                stdin: Data((password.isEmpty ? "login-password" : password).utf8), environment: bus.environment,
                deadline: 300)
            file = bus.root + "/data/keyrings/login.keyring"
            var owner: Int32?
            for _ in 0..<600 where owner != gnome.process.processIdentifier {
                owner = try bus.ownerPID(of: SecretServiceProvider.busName)
                usleep(50_000)
            }
            guard owner == gnome.process.processIdentifier else {
                throw ToolMissing(description: "gnome-keyring-daemon did not take org.freedesktop.secrets")
            }
            // It takes the name before it has made its login keyring from the password on its
            // standard input: an item stored meanwhile would wait for a prompter this bus cannot
            // start. The default alias names a collection once the keyring is there.
            try waitForDefaultCollection(environment: bus.environment)
            var collection: [String] = []
            if password.isEmpty {
                let path = try await createCollectionWithoutPassword(label: "Plain")
                collection = ["--collection=\(path)"]
                file = bus.root + "/data/keyrings/Plain.keyring"
            }
            let tool = try requireTool("/usr/bin/secret-tool")
            for item in KeyringFileTests.items {
                let stored = try await runToolAsync(
                    tool, ["store", "--label=\(item.label)"] + collection + item.attributes,
                    stdin: Data(item.secret.utf8), environment: bus.environment)
                guard stored.status == 0 else { throw ToolMissing(description: "secret-tool store: \(stored)") }
            }
        }

        /// GNOME Keyring's own call for a collection with a given master password, without a
        /// prompt (`org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface`, as Seahorse uses it).
        private func createCollectionWithoutPassword(label: String) async throws -> String {
            let connection = try await DBusConnection.connectToSessionBus(environment: bus.environment)
            defer { connection.closeSoon() }
            let opened = try await connection.call(
                .methodCall(
                    path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                    member: "OpenSession",
                    destination: SecretServiceProvider.busName, body: [.string("plain"), .variant(.string(""))]))
            guard case .objectPath(let session)? = opened.body.last else {
                throw ToolMissing(description: "no session")
            }
            let created = try await connection.call(
                .methodCall(
                    path: "/org/freedesktop/secrets",
                    interface: "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface",
                    member: "CreateWithMasterPassword", destination: SecretServiceProvider.busName,
                    body: [
                        .dictionary(
                            key: .string, value: .variant,
                            [
                                DBusDictEntry(
                                    .string("org.freedesktop.Secret.Collection.Label"), .variant(.string(label)))
                            ]),
                        .structure([.objectPath(session), .bytes([]), .bytes([]), .string("text/plain")]),
                    ]))
            guard case .objectPath(let path)? = created.body.first else {
                throw ToolMissing(description: "no collection")
            }
            return path
        }

        /// What GNOME Keyring serves over D-Bus, read as `security import-secret-service` reads it.
        func servedItems() async throws -> [ForeignSecretItem] {
            let connection = try await DBusConnection.connectToSessionBus(environment: bus.environment)
            defer { connection.closeSoon() }
            return try await SecretServiceImport.read(from: connection).items
        }

        func stop() {
            gnome.stop()  // SIGKILL: it ignores SIGTERM
            bus.stop()
        }
    }

    /// Items compared without the D-Bus collection they came from, in a fixed order, and
    /// without a generic secret's `xdg:schema`: GNOME Keyring shows it for the items it has
    /// reloaded from its file (where a generic secret has none), not for those it has just made.
    static func comparable(_ items: [ForeignSecretItem]) -> [ForeignSecretItem] {
        items.map { item in
            var item = item
            item.collection = ""
            if item.attributes["xdg:schema"] == "org.freedesktop.Secret.Generic" { item.attributes["xdg:schema"] = nil }
            return item
        }.sorted { $0.label < $1.label }
    }

    @Test("a keyring file with a password reads as gnome-keyring-daemon serves it: labels, attributes, secrets, dates")
    func fileMatchesTheDaemon() async throws {
        let gnome = try await GnomeKeyring(password: "gnome-password")
        defer { gnome.stop() }
        let served = try await gnome.servedItems()
        let file = try GnomeKeyringFile(contentsOf: try Data(contentsOf: URL(fileURLWithPath: gnome.file)))
        #expect(file.form == .encrypted && file.label == "Login")
        let read = try file.items(password: Data("gnome-password".utf8))
        #expect(read.count == Self.items.count)
        #expect(Self.comparable(read) == Self.comparable(served))
        #expect(read.allSatisfy { $0.created != nil && $0.modified != nil })
        #expect(throws: KeyringFileError.wrongPassword) { try file.items(password: Data("gnome-passwore".utf8)) }
    }

    @Test("a keyring with an empty password (GNOME Keyring's textual file) reads without one")
    func plainKeyring() async throws {
        let gnome = try await GnomeKeyring(password: "")
        defer { gnome.stop() }
        let served = try await gnome.servedItems()
        let file = try GnomeKeyringFile(contentsOf: try Data(contentsOf: URL(fileURLWithPath: gnome.file)))
        #expect(file.form == .plain)
        #expect(Self.comparable(try file.items(password: Data())) == Self.comparable(served))
    }

    @Test(
        "security import-keyring moves the items in with their dates; a second run adds nothing; secret-tool finds them"
    )
    func importKeyringCommand() async throws {
        let gnome = try await GnomeKeyring(password: "gnome-password")
        defer { gnome.stop() }
        let served = try await gnome.servedItems()
        gnome.gnome.stop()
        let environment = gnome.bus.environment
        let security = try requireTool(productsDirectory + "/security")

        // A wrong password: refused, nothing stored.
        let wrong = try runTool(security, ["import-keyring"], stdin: Data("nope\n".utf8), environment: environment)
        #expect(wrong.status == 1 && wrong.out.isEmpty, "\(wrong)")
        #expect(String(decoding: wrong.stderr, as: UTF8.self).contains("the password does not open the keyring file"))
        let none = try runTool(security, ["find-generic-password", "-s", "mail"], environment: environment)
        #expect(none.status != 0, "nothing was stored: \(none.out)")

        let imported = try runTool(
            security, ["import-keyring"], stdin: Data("gnome-password\n".utf8), environment: environment)
        #expect(
            imported.status == 0 && imported.out.hasSuffix(": 3 imported, 0 updated, 0 already present, 0 left out\n"),
            "\(imported) \(imported.out)")
        let again = try runTool(
            security, ["import-keyring", "-p", "gnome-password", gnome.file], environment: environment)
        #expect(
            again.status == 0 && again.out.hasSuffix(": 0 imported, 0 updated, 3 already present, 0 left out\n"),
            "\(again) \(again.out)")
        let stamps = MoveInStamps(keychainsDirectory: gnome.bus.root + "/data/keychains")
        #expect(stamps.hasMovedIn(gnome.file))

        // The dates are GNOME Keyring's, not the import's.
        let mail = try #require(served.first { $0.label == "Mail" })
        let created = try #require(mail.created)
        let shown = try runTool(
            security, ["find-generic-password", "-s", "mail", "-a", "alice"], environment: environment)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        #expect(
            shown.out.contains("\"cdat\"<timedate>=") && shown.out.contains(formatter.string(from: created)),
            "\(shown.out)")

        // secret-tool, served by keychaind now, finds them by GNOME Keyring's attributes.
        let tool = try requireTool("/usr/bin/secret-tool")
        let note = try runTool(tool, ["lookup", "extra", "x y"], environment: environment)
        #expect(note.status == 0 && note.out == "note\nwith lines", "\(note)")
        let wifi = try runTool(
            security, ["find-internet-password", "-s", "ap", "-a", "bob", "-w"], environment: environment)
        #expect(wifi.status == 0 && wifi.out == "wifi\n", "\(wifi)")
    }

    @Test("a truncated keyring file is refused whole, wherever it is cut")
    func truncated() async throws {
        let gnome = try await GnomeKeyring(password: "pw")
        defer { gnome.stop() }
        let contents = try Data(contentsOf: URL(fileURLWithPath: gnome.file))
        for length in Set([0, 8, 16, 20, 40, contents.count / 2, contents.count - 16, contents.count - 1]) {
            #expect(throws: KeyringFileError.self, "cut at \(length)") {
                try GnomeKeyringFile(contentsOf: contents.prefix(length)).items(password: Data("pw".utf8))
            }
        }
    }

    /// `items` without the `xdg:schema` values that GNOME Keyring's item types stand for.
    static func withoutTypeSchemas(_ items: [ForeignSecretItem]) -> [ForeignSecretItem] {
        let typeSchemas = Set((0..<0x101).compactMap { GnomeKeyringFile.schema(forItemType: UInt32($0)) })
        return items.map { item in
            var item = item
            if let schema = item.attributes["xdg:schema"], typeSchemas.contains(schema) {
                item.attributes["xdg:schema"] = nil
            }
            return item
        }
    }

    @Test("an altered byte anywhere is refused, or changes nothing that is imported (randomized)")
    func alteredBytes() async throws {
        let gnome = try await GnomeKeyring(password: "pw")
        defer { gnome.stop() }
        let contents = try Data(contentsOf: URL(fileURLWithPath: gnome.file))
        let original = try GnomeKeyringFile(contentsOf: contents).items(password: Data("pw".utf8))
        let encrypted = try #require(Self.encryptedPart(of: contents))
        let seed = UInt64.random(in: 0 ... .max)
        var random = SplitMix64(seed: seed)
        for trial in 0..<400 {
            var altered = contents
            let offset = Int.random(in: 0..<contents.count, using: &random)
            altered[offset] ^= UInt8.random(in: 1...255, using: &random)
            let context = "seed \(seed), trial \(trial), byte \(offset)"
            do {
                let items = try GnomeKeyringFile(contentsOf: altered).items(password: Data("pw".utf8))
                #expect(!encrypted.contains(offset), "an altered encrypted byte is detected: \(context)")
                // The one clear field GNOME Keyring's format leaves unauthenticated is an item's
                // type, from which an old item's compatibility `xdg:schema` comes (GNOME Keyring
                // reads it the same way): nothing else may change.
                #expect(
                    Self.withoutTypeSchemas(items) == Self.withoutTypeSchemas(original),
                    "an altered clear byte changes nothing imported but an item type's schema: \(context)")
            } catch is KeyringFileError {
            }
        }
        // The round count set to 2³² − 1: refused as damage, not hashed for hours.
        var rounds = contents
        let at = 16 + 4 + 4 + "Login".utf8.count + 8 + 8 + 4 + 4  // magic, version, label, dates, flags, timeout
        rounds.replaceSubrange(at..<(at + 4), with: [0xff, 0xff, 0xff, 0xff])
        #expect(
            throws: KeyringFileError.damaged("its key derivation's round count (4294967295) is not GNOME Keyring's")
        ) {
            try GnomeKeyringFile(contentsOf: rounds)
        }
    }

    @Test("a pass store moves in through gpg: each entry by its path, all or none; an altered entry stores nothing")
    func passStore() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let gnupg = bus.root + "/gnupg"
        let store = bus.root + "/password-store"
        try FileManager.default.createDirectory(
            atPath: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var environment = bus.environment
        environment["GNUPGHOME"] = gnupg
        environment["PASSWORD_STORE_DIR"] = store
        let gpg = try requireTool("/usr/bin/gpg")
        defer { _ = try? runTool("/usr/bin/gpgconf", ["--kill", "all"], environment: environment) }
        let made = try runTool(
            gpg,
            [
                "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key",
                "Keychain Test <test@keychain.invalid>", "future-default", "default", "never",
            ], environment: environment)
        #expect(made.status == 0, "\(made)")
        let keys = try runTool(gpg, ["--list-keys", "--with-colons"], environment: environment)
        let fingerprint = try #require(
            keys.out.split(separator: "\n").first { $0.hasPrefix("fpr:") }?.split(separator: ":").last.map(String.init))
        let pass = try requireTool("/usr/bin/pass")
        #expect(try runTool(pass, ["init", fingerprint], environment: environment).status == 0)
        let multiline = "hunter2\nlogin: alice\nurl: https://mail.example\n"
        #expect(
            try runTool(pass, ["insert", "-m", "Email/alice"], stdin: Data(multiline.utf8), environment: environment)
                .status == 0)
        #expect(
            try runTool(pass, ["insert", "-e", "Web/shop"], stdin: Data("shop-pw\n".utf8), environment: environment)
                .status == 0)
        let security = try requireTool(productsDirectory + "/security")

        // An altered entry: gpg refuses it, and the other entry is not stored either.
        let altered = bus.root + "/altered-store"
        try FileManager.default.copyItem(atPath: store, toPath: altered)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: altered + "/Web/shop.gpg"))
        bytes[bytes.count - 8] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: altered + "/Web/shop.gpg"))
        let refused = try runTool(security, ["import-keyring", altered], environment: environment)
        #expect(refused.status == 1, "\(refused)")
        #expect(String(decoding: refused.stderr, as: UTF8.self).contains("gpg cannot decrypt the entry Web/shop"))
        #expect(
            try runTool(security, ["find-generic-password", "-s", "Email/alice"], environment: environment).status != 0)

        let imported = try runTool(security, ["import-keyring", store], environment: environment)
        #expect(imported.out == "\(store): 2 imported, 0 updated, 0 already present, 0 left out\n", "\(imported)")
        let shop = try runTool(security, ["find-generic-password", "-s", "Web/shop", "-w"], environment: environment)
        #expect(shop.status == 0 && shop.out == "shop-pw\n", "\(shop)")
        let alice = try runTool(
            security, ["find-generic-password", "-s", "Email/alice", "-a", "alice", "-w"], environment: environment)
        // The whole entry, less its last line break; printed in hexadecimal, as macOS's -w prints a
        // secret with a line break in it.
        let hex = multiline.dropLast().utf8.map { String(format: "%02x", $0) }.joined()
        #expect(alice.status == 0 && alice.out == hex + "\n", "\(alice) \(alice.out)")
        let again = try runTool(security, ["import-keyring", store], environment: environment)
        #expect(again.out.hasSuffix(": 0 imported, 0 updated, 2 already present, 0 left out\n"), "\(again)")
        #expect(MoveInStamps(keychainsDirectory: bus.root + "/data/keychains").hasMovedIn(store))
    }

    /// The encrypted part of a binary keyring file: its last bytes, their length written just before them.
    static func encryptedPart(of contents: Data) -> Range<Int>? {
        for size in stride(from: 16, through: contents.count - 4, by: 16) {
            let at = contents.count - size - 4
            let written = contents[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) }
            if written == size { return (contents.count - size)..<contents.count }
        }
        return nil
    }
}
