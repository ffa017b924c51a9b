import Foundation
import Testing

/// Keychain paths as macOS scripts write them: `~/Library/Keychains/NAME[-db]` names the
/// keychain that `create-keychain NAME` made in the keychains directory.
@Suite struct MacOSKeychainPathTests {
    /// The defect: `~/Library/Keychains/build.keychain-db` was taken as a file of that path, which
    /// does not exist on Linux, so fastlane's sequence failed with errSecNoSuchKeychain (exit 50).
    @Test func fastlaneStyleSequenceWithLibraryKeychainsPathsRunsInSeparateProcesses() throws {
        let sandbox = try Sandbox()
        let library = sandbox.home + "/Library/Keychains/"
        let keychain = sandbox.keychainsDirectory + "/build.keychain-db"
        let steps: [([String], [String: String])] = [
            (["create-keychain", "-p", "pw", "build.keychain"], [:]),
            (["list-keychains", "-s", library + "build.keychain-db"], [:]),
            (["default-keychain", "-s", "build.keychain"], [:]),
            (["unlock-keychain", "-p", "pw", library + "build.keychain-db"], [:]),
            // Each process starts with the keychain locked, and settings change only unlocked.
            (
                ["set-keychain-settings", "-lut", "21600", library + "build.keychain-db"],
                ["KEYCHAIN_PASSWORD": "pw"]
            ),
            (
                ["add-generic-password", "-a", "ci", "-s", "deploy", "-w", "s3cret", library + "build.keychain-db"],
                ["KEYCHAIN_PASSWORD": "pw"]
            ),
        ]
        for (arguments, environment) in steps {
            let run = try sandbox.run(arguments, environment: environment)
            #expect(run.status == 0 && run.err.isEmpty, "\(arguments): \(run)")
        }
        #expect(try sandbox.listedKeychains() == [keychain])
        #expect(try sandbox.run(["default-keychain"]).out == "    \"\(keychain)\"\n")
        let info = try sandbox.run(
            ["show-keychain-info", library + "build.keychain-db"], environment: ["KEYCHAIN_PASSWORD": "pw"])
        #expect(info.status == 0, "\(info)")
        #expect(info.err == "Keychain \"\(library)build.keychain-db\" lock-on-sleep timeout=21600s\n", "\(info)")

        // Every spelling reaches the same keychain (its password and its item).
        for spelling in ["build.keychain", "build.keychain-db", "build", "build-db"] {
            let found = try sandbox.run(
                ["find-generic-password", "-a", "ci", "-s", "deploy", "-w", library + spelling],
                environment: ["KEYCHAIN_PASSWORD": "pw"])
            #expect(found.status == 0 && found.out == "s3cret\n", "\(spelling): \(found)")
            try sandbox.lock(library + spelling)
            let wrong = try sandbox.run(["unlock-keychain", "-p", "wrong", library + spelling])
            #expect(wrong.status == 51, "\(spelling): \(wrong)")
        }

        let deleted = try sandbox.run(["delete-keychain", library + "build.keychain-db"])
        #expect(deleted.status == 0, "\(deleted)")
        #expect(!FileManager.default.fileExists(atPath: keychain))
        #expect(try sandbox.listedKeychains().isEmpty, "the search list held build.keychain alone")
        #expect(!FileManager.default.fileExists(atPath: sandbox.home + "/Library"), "nothing is made in ~/Library")
    }

    /// The defect: on a fresh home, `unlock-keychain ~/Library/Keychains/login.keychain-db` and
    /// `set-keychain-settings` (no keychain) failed with errSecNoSuchKeychain (exit 50), though
    /// the login keychain is created on first use and macOS scripts start with them.
    @Test(arguments: [
        ["unlock-keychain", "-p", "", "~/Library/Keychains/login.keychain-db"], ["set-keychain-settings"],
        ["set-keychain-settings", "-t", "3600", "~/Library/Keychains/login.keychain"],
    ])
    func loginKeychainIsCreatedOnFirstUseHoweverItIsNamed(command: [String]) throws {
        let sandbox = try Sandbox()
        let arguments = command.map { $0.replacingOccurrences(of: "~", with: sandbox.home) }
        let run = try sandbox.run(arguments)
        #expect(run.status == 0 && run.err.isEmpty, "\(run)")
        #expect(FileManager.default.fileExists(atPath: sandbox.keychainsDirectory + "/login.keychain-db"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.home + "/Library"), "nothing is made in ~/Library")
        let other = try sandbox.run([
            "unlock-keychain", "-p", "", sandbox.home + "/Library/Keychains/other.keychain-db",
        ])
        #expect(other.status == 50, "only the login keychain is created implicitly: \(other)")
    }

    /// macOS keeps the keychain `X` in the file `X-db`: both of its paths name the keychain
    /// `create-keychain X` made, whichever way it was created.
    @Test(
        arguments: [
            ("build", ["build", "build-db"]),
            ("build.keychain", ["build.keychain", "build.keychain-db"]),
            ("~/Library/Keychains/ci.keychain", ["ci.keychain", "ci.keychain-db"]),
            ("~/Library/Keychains/ci", ["ci", "ci-db"]),
        ])
    func libraryKeychainsPathsNameTheKeychainCreateKeychainMade(created: String, paths: [String]) throws {
        let sandbox = try Sandbox()
        let library = sandbox.home + "/Library/Keychains/"
        let name = created.replacingOccurrences(of: "~/", with: sandbox.home + "/")
        let create = try sandbox.run(["create-keychain", "-p", "pw", name])
        #expect(create.status == 0, "\(create)")
        for path in paths {
            let unlock = try sandbox.run(["unlock-keychain", "-p", "pw", library + path])
            #expect(unlock.status == 0 && unlock.err.isEmpty, "\(path): \(unlock)")
            let info = try sandbox.run(
                ["set-keychain-settings", library + path], environment: ["KEYCHAIN_PASSWORD": "pw"])
            #expect(info.status == 0, "\(path): \(info)")
        }
        // Created by a ~/Library/Keychains path, the keychain has macOS's name there too, a link
        // to its file (fastlane looks for it); created by a bare name, nothing is made there.
        let made = (try? FileManager.default.contentsOfDirectory(atPath: library)) ?? []
        if created.hasPrefix("~/Library/Keychains/") {
            #expect(made == [paths[1]], "macOS's file name, NAME-db: \(made)")
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: library + paths[1])
            #expect(target?.hasPrefix(sandbox.keychainsDirectory + "/") == true, "\(String(describing: target))")
        } else {
            #expect(!FileManager.default.fileExists(atPath: sandbox.home + "/Library"))
        }
    }

    /// Only files directly in `~/Library/Keychains` are mapped; anything else is a path.
    @Test(arguments: ["Library/Keychains/sub/build.keychain-db", "Library/build.keychain-db"])
    func otherPathsUnderHomeStayPaths(_ relative: String) throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.run(["create-keychain", "-p", "pw", "build.keychain"]).status == 0)
        let run = try sandbox.run(["unlock-keychain", "-p", "pw", sandbox.home + "/" + relative])
        #expect(run.status == 50, "\(run)")
    }
}
