import Foundation
import KeychainClient
import KeychainCore
import KeychainLibc
import Testing

/// `KeychainSelection` is the one place that says which file a keychain name, a path or "the
/// default keychain" means: the `security` tool and `Security` both ask it.
@Suite("Which keychain a call uses")
struct KeychainSelectionTests {
    /// A home with its keychains directory and a link to it (to see one spelling per file).
    final class Home {
        let directory: TemporaryDirectory
        var root: String { directory.path }
        var keychains: String { root + "/data/keychains" }

        init() throws {
            directory = try TemporaryDirectory(mode: 0o700)
            for name in ["home", "data", "data/keychains", "config", "system"] {
                _ = try directory.make(name, mode: 0o700)
            }
            symlink(root + "/data", root + "/linked-data")
        }

        func selection(_ extra: [String: String] = [:]) -> KeychainSelection {
            KeychainSelection(
                environment: [
                    "HOME": root + "/home", "XDG_DATA_HOME": root + "/data", "XDG_CONFIG_HOME": root + "/config",
                    "KEYCHAIN_SYSTEM_DIRECTORY": root + "/system",
                ].merging(extra) { $1 })
        }

        func touch(_ name: String) { close(open(keychains + "/" + name, O_CREAT | O_WRONLY, 0o600)) }
    }

    /// A keychain argument, the files present, and the file it names (relative to the keychains
    /// directory, `SYSTEM/` for the System keychain's directory, `HOME/` for the home).
    static let names: [(name: String, present: [String], expected: String)] = [
        ("build", [], "build.keychain-db"),
        ("build.keychain-db", [], "build.keychain-db"),
        ("build.keychain", [], "build.keychain"),
        ("build.keychain", ["build.keychain-db"], "build.keychain-db"),
        ("build.keychain", ["build.keychain", "build.keychain-db"], "build.keychain"),
        ("login.keychain", [], "login.keychain-db"),
        ("/Library/Keychains/System.keychain", [], "SYSTEM/System.keychain-db"),
        ("/Library/Keychains/System.keychain-db", [], "SYSTEM/System.keychain-db"),
        ("HOME/Library/Keychains/ci-db", [], "ci.keychain-db"),
        ("HOME/Library/Keychains/ci.keychain-db", [], "ci.keychain-db"),
        ("LINKED/keychains/other.keychain-db", [], "other.keychain-db"),
        ("LINKED/keychains/../keychains/./other.keychain-db", [], "other.keychain-db"),
    ]

    @Test("a name or a path names one file, in one spelling", arguments: names)
    func namesResolve(_ entry: (name: String, present: [String], expected: String)) throws {
        let home = try Home()
        for file in entry.present { home.touch(file) }
        let name = entry.name.replacingOccurrences(of: "HOME/", with: home.root + "/home/")
            .replacingOccurrences(of: "LINKED/", with: home.root + "/linked-data/")
        let expected =
            entry.expected.hasPrefix("SYSTEM/")
            ? home.root + "/system/" + entry.expected.dropFirst("SYSTEM/".count)
            : home.keychains + "/" + entry.expected
        #expect(home.selection().keychain(named: name) == expected)
    }

    @Test("the default keychain: KEYCHAIN_DEFAULT_PATH, else the user's choice, else the login keychain")
    func defaultKeychainPrecedence() throws {
        let home = try Home()
        var preferences = KeychainPreferences()
        #expect(home.selection().defaultKeychain(preferences: nil) == home.keychains + "/login.keychain-db")
        #expect(home.selection().defaultKeychain(preferences: preferences) == home.keychains + "/login.keychain-db")
        preferences.defaultKeychain = ""
        #expect(home.selection().defaultKeychain(preferences: preferences) == home.keychains + "/login.keychain-db")
        preferences.defaultKeychain = home.keychains + "/chosen.keychain-db"
        #expect(home.selection().defaultKeychain(preferences: preferences) == home.keychains + "/chosen.keychain-db")
        let pointed = home.selection(["KEYCHAIN_DEFAULT_PATH": home.root + "/linked-data/keychains/env.keychain-db"])
        #expect(pointed.chosenDefault == home.keychains + "/env.keychain-db", "in its one spelling")
        #expect(pointed.defaultKeychain(preferences: preferences) == home.keychains + "/env.keychain-db")
        #expect(pointed.implicitDefault == home.keychains + "/env.keychain-db")
        #expect(
            home.selection().implicitDefault == home.keychains + "/login.keychain-db",
            "a choice is never made implicitly")
    }

    @Test("the search list: the user's list, else the default keychain")
    func searchList() throws {
        let home = try Home()
        var preferences = KeychainPreferences()
        #expect(home.selection().searchList(preferences: preferences) == [home.keychains + "/login.keychain-db"])
        preferences.searchList = [home.keychains + "/a.keychain-db", home.keychains + "/b.keychain-db"]
        #expect(home.selection().searchList(preferences: preferences) == preferences.searchList)
    }

    /// The process's default keychain is remembered, yet follows every change of the preferences
    /// file (each write, however small) and of the variables it depends on.
    @Test func theProcesssDefaultKeychainFollowsThePreferencesFileAndItsVariables() throws {
        let home = try Home()
        var variables = [
            "HOME": home.root + "/home", "XDG_DATA_HOME": home.root + "/data", "XDG_CONFIG_HOME": home.root + "/config",
        ]
        let preferencesFile = home.root + "/config/keychain/preferences.json"
        func current() -> String { KeychainSelection.processDefaultKeychain { variables[$0] } }
        let login = home.keychains + "/login.keychain-db"
        #expect(current() == login)
        // Names of one length, so that only the file's time and inode tell the versions apart.
        for name in ["a.keychain-db", "b.keychain-db", "c.keychain-db", "a.keychain-db"] {
            var preferences = KeychainPreferences()
            preferences.defaultKeychain = home.keychains + "/" + name
            try preferences.save(to: preferencesFile)
            #expect(current() == home.keychains + "/" + name)
        }
        try FileManager.default.removeItem(atPath: preferencesFile)
        #expect(current() == login)
        variables["KEYCHAIN_DEFAULT_PATH"] = home.keychains + "/mine.keychain-db"
        #expect(current() == home.keychains + "/mine.keychain-db")
        variables["KEYCHAIN_DEFAULT_PATH"] = nil
        variables["XDG_DATA_HOME"] = home.root + "/elsewhere"
        #expect(current() == home.root + "/elsewhere/keychains/login.keychain-db")
    }
}
