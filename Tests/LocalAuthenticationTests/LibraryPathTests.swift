import Foundation
import KeychainTestSupport
import Testing

/// The calls SimpleKeychain and KeychainAccess make for an item whose access control asks for
/// user presence (Tests/LAWorker/LibraryPaths.swift), through the real polkit, in the app's
/// process and through keychaind: making and deleting the item ask nothing, reading it and
/// changing it ask on the terminal, and each library's own checks give what they give on iOS.
extension PolkitTests {
    /// The app running one library's calls as the test account, whose password is new, with two
    /// files of secrets to store.
    struct LibraryApp {
        let polkit: PolkitFixture
        let library: String
        let environment: [String: String]
        let password: String
        let first: String
        let second: String

        init(_ library: String, _ backend: Backend) throws {
            polkit = try PolkitFixture()
            self.library = library
            password = try polkit.newPassword()
            environment = backend.environment(polkit)
            first = try polkit.accountFile("first", "first-secret")
            second = try polkit.accountFile("second", "second-secret")
        }

        /// The library's call, with no terminal.
        func run(_ arguments: [String]) throws -> String {
            try polkit.runAsUser(polkit.worker, [library] + arguments, environment: environment).output
        }

        /// The library's call on a terminal, where the person types `typing` at "Password:", at
        /// each of the `tries` it is asked.
        func asked(_ arguments: [String], typing: String, tries: Int = 1) throws -> String {
            try polkit.onTerminal(
                [library] + arguments, steps: Array(repeating: ("Password:", typing), count: tries),
                environment: environment
            ).output
        }
    }

    /// Expects `output` to contain `text`, showing it when it does not.
    func expect(
        _ output: String, contains text: String, _ comment: Comment? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(output.contains(text), "\(comment.map { "\($0): " } ?? "")\(output)", sourceLocation: sourceLocation)
    }

    /// Expects `output` to be `text`.
    func expect(
        _ output: String, is text: String, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(output == text, "\(comment.map { "\($0): " } ?? "")\(output)", sourceLocation: sourceLocation)
    }

    @Test(
        "SimpleKeychain(accessControlFlags: .userPresence): set asks nothing, hasItem/data/update ask for the password, a wrong one is errSecAuthFailed, deleteItem asks nothing",
        arguments: Backend.allCases)
    func simpleKeychainPaths(backend: Backend) throws {
        let app = try LibraryApp("simplekeychain", backend)
        let (password, first, second) = (app.password, app.first, app.second)

        expect(try app.run(["set", "vault", first]), is: "ok\n", "adding asks nothing")
        expect(try app.run(["has", "vault"]), is: "error -25308\n", "with nobody to ask, hasItem throws")
        expect(try app.asked(["has", "vault"], typing: password), contains: "true\r\n")
        expect(try app.asked(["get", "vault"], typing: password), contains: "data first-secret\r\n")
        expect(try app.asked(["get", "vault"], typing: "not-the-password", tries: 3), contains: "error -25293\r\n")
        // A second set is SecItemAdd's errSecDuplicateItem, then an update of the data, which asks.
        expect(try app.asked(["set", "vault", second], typing: password), contains: "ok\r\n")
        expect(try app.asked(["get", "vault"], typing: password), contains: "data second-secret\r\n")
        expect(try app.asked(["keys"], typing: password), contains: "keys vault\r\n")
        expect(try app.run(["delete", "vault"]), is: "deleted\n", "deleting asks nothing")
        expect(try app.run(["has", "vault"]), is: "false\n")
    }

    @Test(
        "KeychainAccess .accessibility(_:authenticationPolicy: .userPresence): set adds unasked, contains(withoutAuthenticationUI:) is true unasked, get and a second set ask, remove asks nothing",
        arguments: Backend.allCases)
    func keychainAccessPaths(backend: Backend) throws {
        let app = try LibraryApp("keychainaccess", backend)
        let (password, first, second) = (app.password, app.first, app.second)

        expect(try app.run(["contains", "vault"]), is: "false\n")
        expect(try app.run(["set", "vault", first]), is: "added\n", "adding asks nothing")
        expect(try app.run(["contains", "vault"]), is: "true\n", "its check without UI says it is there")
        expect(try app.run(["get", "vault"]), is: "error -25308\n", "with nobody to ask, get throws")
        expect(try app.asked(["get", "vault"], typing: password), contains: "data first-secret\r\n")
        // The second set finds the item unasked (errSecInteractionNotAllowed), then updates it,
        // sending its access control again, which asks.
        expect(try app.asked(["set", "vault", second], typing: password), contains: "updated\r\n")
        expect(try app.asked(["get", "vault"], typing: password), contains: "data second-secret\r\n")
        expect(try app.run(["remove", "vault"]), is: "removed\n", "removing asks nothing")
        expect(try app.run(["contains", "vault"]), is: "false\n")
    }
}
