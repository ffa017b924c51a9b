import Foundation
import KeychainTestSupport
import LocalAuthentication
import Testing

/// `LARight` and `LARightStore`: an app keeps a token and a key behind a right, through the real
/// polkit (the owner's password on the app's terminal) and the real fprintd (a finger), with the
/// keychain in the app's process and in keychaind. In ``PolkitTests``, one test at a time.
extension PolkitTests {
    /// Saves a right `identifier` of `requirement` (the worker's name) holding a new secret, through
    /// `backend`: the worker's answer, and the secret.
    static func saveRight(
        _ identifier: String, _ requirement: String, _ polkit: PolkitFixture, _ backend: Backend
    ) throws -> (answer: String, secret: String) {
        let secret = "token-" + UUID().uuidString.prefix(12)
        let file = try polkit.accountFile("token-\(identifier)", secret)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let saved = try polkit.runAsUser(
            polkit.worker, ["right-save", identifier, file, requirement], environment: backend.environment(polkit))
        return (saved.output + saved.errors, secret)
    }

    @Suite("LARightStore: rights kept with their key and secret")
    struct RightTests {
        /// What `right-use` prints for a right whose secret is `secret`, asked once.
        private func used(_ secret: String) -> [String] {
            [
                "state \(LARight.State.unknown.rawValue)", "unauthorized \(LAError.Code.notInteractive.rawValue)",
                "authorized \(LARight.State.authorized.rawValue)", "secret \(secret)",
                "verified by a public key of 65 bytes", "decrypted sealed", "agreed",
                "deauthorized \(LARight.State.notAuthorized.rawValue) \(LAError.Code.notInteractive.rawValue)",
            ]
        }

        @Test(
            "a default right: found unauthorized and reading nothing, authorized with one password question, then its secret, key and public key work until deauthorized; a second save is errSecDuplicateItem; removed, it is errSecItemNotFound",
            arguments: Backend.allCases)
        func defaultRight(backend: Backend) throws {
            let polkit = try PolkitFixture()
            let password = try polkit.newPassword()
            let environment = backend.environment(polkit)
            let (answer, secret) = try PolkitTests.saveRight("token", "default", polkit, backend)
            #expect(answer == "saved \(LARight.State.unknown.rawValue)\n", "\(answer)")
            let (again, _) = try PolkitTests.saveRight("token", "default", polkit, backend)
            #expect(again == "error -25299\n", "\(again)")

            let run = try polkit.onTerminal(
                ["right-use", "token"], steps: [("Password:", password)], environment: environment)
            #expect(run.output.components(separatedBy: "Password:").count == 2, "one question: \(run)")
            // In order, among polkit's agent's own lines.
            var rest = Substring(run.output)
            for line in used(secret) {
                let found = rest.range(of: line + "\r\n")
                #expect(found != nil, "\(line): \(run)")
                rest = found.map { rest[$0.upperBound...] } ?? rest
            }
            #expect(
                run.output.firstRange(of: "Password:").map {
                    $0.lowerBound > run.output.firstRange(of: "unauthorized")!.lowerBound
                } == true, "asked after the refusal: \(run)")
            #expect(!run.output.contains(password))

            // Nobody to ask: the authorization fails, and nothing is read.
            let alone = try polkit.runAsUser(polkit.worker, ["right-use", "token"], environment: environment)
            #expect(alone.output.contains("error \(LAError.Code.notInteractive.rawValue)\n"), "\(alone)")
            #expect(!alone.output.contains(secret))

            // Apple's own example, unchanged: one question for the fetch.
            let token = try polkit.accountFile("access-token", "apple-" + secret)
            let stored = try polkit.runAsUser(
                polkit.worker, ["apple-sample", "token-store", token], environment: environment)
            #expect(stored.output == "stored\n", "\(stored)")
            let fetched = try polkit.onTerminal(
                ["apple-sample", "token-fetch"], steps: [("Password:", password)], environment: environment)
            #expect(fetched.output.contains("token apple-\(secret)\r\n"), "\(fetched)")

            let removed = try polkit.runAsUser(polkit.worker, ["right-remove", "token"], environment: environment)
            #expect(removed.output == "removed\ngone -25300\n", "\(removed)")
            let missing = try polkit.runAsUser(polkit.worker, ["right-use", "token"], environment: environment)
            #expect(missing.output == "error -25300\n", "\(missing)")
            let twice = try polkit.runAsUser(polkit.worker, ["right-remove", "token"], environment: environment)
            #expect(twice.output == "error -25300\ngone -25300\n", "\(twice)")
        }
    }
}

extension PolkitTests.BiometryTests {
    @Test(
        "a .biometryCurrentSet right: one touch authorizes it for its secret and key; once another finger is enrolled its key and secret are gone",
        arguments: PolkitTests.Backend.allCases)
    func biometricRight(backend: PolkitTests.Backend) throws {
        let polkit = try fixtureWithFinger()
        let environment = backend.environment(polkit)
        let (saved, secret) = try PolkitTests.saveRight("token", "current", polkit, backend)
        #expect(saved == "saved 0\n", "\(saved)")

        let person = try polkit.touch(["own-right"])
        let run = try polkit.runAsUser(polkit.worker, ["right-use", "token"], environment: environment)
        #expect(finished(person).contains("touched"))
        #expect(
            run.output
                == "state 0\nunauthorized -1004\nauthorized 2\nsecret \(secret)\nverified by a public key of 65 bytes\ndecrypted sealed\nagreed\ndeauthorized 3 -1004\n",
            "\(run)")

        #expect(try polkit.enroll("left-index-finger", print: "own-left") == "enroll-completed")
        let later = try polkit.touch(["own-right"])
        let gone = try polkit.runAsUser(polkit.worker, ["right-use", "token"], environment: environment)
        #expect(finished(later).contains("touched"))
        #expect(
            gone.output == "state 0\nunauthorized -1004\nauthorized 2\nerror -25300\ndeauthorized 3 -1004\n", "\(gone)")
    }

    @Test(
        "a right that falls back to the passcode: with no finger enrolled, the owner's password authorizes it",
        arguments: PolkitTests.Backend.allCases)
    func fallbackRight(backend: PolkitTests.Backend) throws {
        let polkit = try PolkitFixture(fingerprintReader: true)
        let password = try polkit.newPassword()
        let environment = backend.environment(polkit)
        let (saved, secret) = try PolkitTests.saveRight("token", "fallback", polkit, backend)
        #expect(saved == "saved 0\n", "\(saved)")
        let run = try polkit.onTerminal(
            ["right-use", "token"], steps: [("Password:", password)], environment: environment)
        #expect(run.output.contains("secret \(secret)\r\n"), "\(run)")
        #expect(run.output.contains("decrypted sealed\r\n"), "\(run)")
    }
}

extension PolkitTests.BiometryTests {
    @Test(
        "LAEnvironment: the password through polkit and fprintd's reader, enrolled or not; an observer is told when a finger is enrolled"
    )
    func environment() throws {
        let polkit = try PolkitFixture(fingerprintReader: true)
        let before = try polkit.runAsUser(polkit.worker, ["environment"])
        let lines = before.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "password yes", "\(before)")
        #expect(
            lines.count == 3 && lines[1].hasPrefix("biometry ") && lines[1].hasSuffix(" enrolled 0 usable 0 hash none"),
            "\(before)")
        #expect(lines.last == "mechanisms 2", "\(before)")

        let watcher = try polkit.startAsUser(polkit.worker, ["environment-watch", "60"])
        defer { watcher.stop() }
        #expect(watcher.firstLine(within: 60) == "watching", "\(watcher.output) \(watcher.errors)")
        #expect(try polkit.enroll("right-index-finger", print: "own-right") == "enroll-completed")
        let end = Date().addingTimeInterval(60)
        while watcher.isRunning && Date() < end { usleep(50_000) }
        let told = watcher.output
        #expect(
            told.contains("old password yes; biometry ") && told.contains(" enrolled 0 usable 0 hash none;"), "\(told)")
        #expect(told.contains(" enrolled 1 usable 1 hash "), "\(told)")
        #expect(!told.contains("unchanged"), "\(told)")

        let after = try polkit.runAsUser(polkit.worker, ["environment"])
        let domain = try biometryDomain(polkit)
        #expect(after.output.contains(" enrolled 1 usable 1 hash \(domain)\n"), "\(after) \(domain)")
    }

    /// The domain state `LAContext` reports.
    private func biometryDomain(_ polkit: PolkitFixture) throws -> String {
        let run = try polkit.runAsUser(polkit.worker, ["biometry"])
        let line = run.output.split(separator: "\n").first { $0.hasPrefix("domain ") }
        return line.map { String($0.dropFirst("domain ".count)) } ?? ""
    }
}
