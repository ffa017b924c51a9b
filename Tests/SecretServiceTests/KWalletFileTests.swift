import Foundation
import KeyringImport
import SecretService
import SeededRandom
import Testing

/// KWallet files moved in: wallets made by the real `kwalletd5` (Debian's `libkf5wallet-bin`),
/// opened as a login with pam_kwallet opens one (`--pam-login`: the PBKDF2 key on a pipe, so no
/// dialog), its entries written through kwalletd5's own D-Bus methods, on a private bus.
@Suite("Moving in from KWallet files")
struct KWalletFileTests {
    static let password = "kwallet pässword"
    static let fixture = SecretToolTests.repository + "/Tests/SecretServiceTests/Clients/kwallet_fixture.py"

    /// The entries written: passwords (one in UTF-8 beyond ASCII), a map as a browser's form data
    /// is kept, a binary stream, in three folders.
    static var entries: [[String: Any]] {
        [
            ["folder": "Passwords", "key": "mail.example.org", "type": "password", "value": "mail-sécret"],
            ["folder": "Passwords", "key": "vpn", "type": "password", "value": "vpn-secret"],
            [
                "folder": "Form Data", "key": "https://shop.example.org/login", "type": "map",
                "value": ["user": "alice", "password": "shop-secret"],
            ],
            ["folder": "Network Management", "key": "{6f1c}", "type": "stream", "value": "00ff7f80"],
        ]
    }

    /// A wallet kwalletd5 made, in a directory of its own.
    final class Wallet {
        let root = FileManager.default.temporaryDirectory.path + "/kwallet-\(UUID().uuidString.prefix(8))"
        let path: String

        init() throws {
            for directory in ["home", "data", "config", "run"] {
                try FileManager.default.createDirectory(
                    atPath: root + "/" + directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            }
            let environment = [
                "HOME": root + "/home", "XDG_DATA_HOME": root + "/data", "XDG_CONFIG_HOME": root + "/config",
                "XDG_RUNTIME_DIR": root + "/run", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            ]
            let entries = try JSONSerialization.data(withJSONObject: KWalletFileTests.entries)
            let made = try runTool(
                try requireTool("/usr/bin/dbus-run-session"), ["--", "/usr/bin/python3", KWalletFileTests.fixture],
                stdin: Data((KWalletFileTests.password + "\n").utf8) + entries, environment: environment)
            try #require(made.status == 0, "\(made)")
            path = made.out.trimmingCharacters(in: .whitespacesAndNewlines)
            try #require(path == root + "/data/kwalletd/kdewallet.kwl", "\(made.out)")
        }

        deinit { try? FileManager.default.removeItem(atPath: root) }

        var contents: Data { get throws { try Data(contentsOf: URL(fileURLWithPath: path)) } }
        var salt: Data {
            get throws { try Data(contentsOf: URL(fileURLWithPath: KWalletFile.saltPath(forWalletAt: path))) }
        }
    }

    @Test("every entry kwalletd5 wrote is read back: passwords, a map, a stream, in their folders")
    func entriesAreReadBack() throws {
        let wallet = try Wallet()
        let file = try KWalletFile(contentsOf: try wallet.contents, name: "kdewallet")
        let items = try file.items(password: Data(Self.password.utf8), salt: try wallet.salt)
        let byKey = Dictionary(uniqueKeysWithValues: items.map { ($0.label, $0) })
        #expect(items.count == 4, "\(items.map(\.label))")
        let mail = try #require(byKey["mail.example.org"])
        #expect(String(decoding: mail.secret, as: UTF8.self) == "mail-sécret")
        #expect(
            mail.attributes == [
                "xdg:schema": "org.kde.KWallet.Password", "kwallet:folder": "Passwords",
                "kwallet:key": "mail.example.org",
            ])
        #expect(String(decoding: try #require(byKey["vpn"]).secret, as: UTF8.self) == "vpn-secret")
        let form = try #require(byKey["https://shop.example.org/login"])
        #expect(form.attributes["xdg:schema"] == "org.kde.KWallet.Map")
        #expect(form.attributes["kwallet:folder"] == "Form Data")
        let map = try JSONSerialization.jsonObject(with: form.secret) as? [String: String]
        #expect(map == ["user": "alice", "password": "shop-secret"])
        let stream = try #require(byKey["{6f1c}"])
        #expect(stream.secret == Data([0x00, 0xFF, 0x7F, 0x80]))
        #expect(stream.attributes["kwallet:folder"] == "Network Management")
    }

    @Test("a wrong password opens nothing; every altered byte and every cut is refused (randomized)")
    func refusals() throws {
        let wallet = try Wallet()
        let contents = try wallet.contents
        let salt = try wallet.salt
        let file = try KWalletFile(contentsOf: contents, name: "kdewallet")
        #expect(throws: KeyringFileError.wrongPassword) { try file.items(password: Data("not it".utf8), salt: salt) }
        var otherSalt = salt
        otherSalt[0] ^= 1
        #expect(throws: KeyringFileError.wrongPassword) {
            try file.items(password: Data(Self.password.utf8), salt: otherSalt)
        }

        let seed = UInt64.random(in: 0 ... .max)
        var random = SplitMix64(seed: seed)
        for trial in 0..<100 {
            var altered = contents
            let offset = Int.random(in: 0..<contents.count, using: &random)
            altered[offset] ^= UInt8.random(in: 1...255, using: &random)
            #expect(throws: KeyringFileError.self, "seed \(seed), trial \(trial), byte \(offset)") {
                try KWalletFile(contentsOf: altered, name: "kdewallet").items(
                    password: Data(Self.password.utf8), salt: salt)
            }
        }
        for length in Set([0, 12, 16, 20, 60, contents.count / 2, contents.count - 8, contents.count - 1]) {
            #expect(throws: KeyringFileError.self, "cut at \(length)") {
                try KWalletFile(contentsOf: contents.prefix(length), name: "kdewallet").items(
                    password: Data(Self.password.utf8), salt: salt)
            }
        }
        // A GnuPG wallet (cipher 2) is refused before a password is asked, with the way forward.
        var gpg = contents
        gpg[14] = 2
        #expect(throws: KeyringFileError.self) { try KWalletFile(contentsOf: gpg, name: "kdewallet") }
    }

    @Test(
        "security import-keyring moves a .kwl in: a wrong password stores nothing; again adds nothing; secret-tool finds it"
    )
    func importKeyringCommand() throws {
        let wallet = try Wallet()
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let security = try requireTool(productsDirectory + "/security")
        let environment = bus.environment

        let wrong = try runTool(
            security, ["import-keyring", wallet.path], stdin: Data("nope\n".utf8), environment: environment)
        #expect(wrong.status == 1 && wrong.out.isEmpty, "\(wrong)")
        #expect(String(decoding: wrong.stderr, as: UTF8.self).contains("the password does not open the keyring file"))

        let imported = try runTool(
            security, ["import-keyring", wallet.path], stdin: Data((Self.password + "\n").utf8),
            environment: environment)
        #expect(
            imported.out == "\(wallet.path): 4 imported, 0 updated, 0 already present, 0 left out\n",
            "\(imported) \(imported.out)")
        let again = try runTool(
            security, ["import-keyring", "-p", Self.password, wallet.path], environment: environment)
        #expect(again.out.hasSuffix(": 0 imported, 0 updated, 4 already present, 0 left out\n"), "\(again)")
        #expect(MoveInStamps(keychainsDirectory: bus.root + "/data/keychains").hasMovedIn(wallet.path))

        let tool = try requireTool("/usr/bin/secret-tool")
        let mail = try runTool(
            tool, ["lookup", "kwallet:folder", "Passwords", "kwallet:key", "mail.example.org"], environment: environment
        )
        #expect(mail.status == 0 && mail.out == "mail-sécret", "\(mail)")
        // The wallet and its salt are only read.
        #expect(try wallet.contents == (try Data(contentsOf: URL(fileURLWithPath: wallet.path))))
    }
}
