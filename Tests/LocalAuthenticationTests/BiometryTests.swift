import Foundation
import KeychainTestSupport
import LocalAuthentication
import Testing

/// Biometry through the real fprintd on libfprint's virtual reader, on the private system bus of
/// ``PolkitFixture``, for its throw-away account: enrolled and matched as fprintd's own tests do.
/// Nested in ``PolkitTests``, whose tests it takes turns with: they share the account.
extension PolkitTests {
    @Suite("LocalAuthentication's biometry through the real fprintd")
    struct BiometryTests {
        /// A fixture whose account has its right index finger enrolled, as the print `own-right`.
        func fixtureWithFinger() throws -> PolkitFixture {
            let polkit = try PolkitFixture(fingerprintReader: true)
            #expect(try polkit.enroll("right-index-finger", print: "own-right") == "enroll-completed")
            return polkit
        }

        /// A person's touches of the reader, ended within a minute; what they said.
        func finished(_ person: TestDaemon) -> String {
            let end = Date().addingTimeInterval(60)
            while person.isRunning && Date() < end { usleep(50_000) }
            person.stop()
            return person.output + person.errors
        }

        /// The worker's `biometry` lines, by their first word.
        private func biometry(_ polkit: PolkitFixture) throws -> [String: String] {
            let run = try polkit.runAsUser(polkit.worker, ["biometry"])
            var lines: [String: String] = [:]
            for line in run.output.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                lines[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
            return lines
        }

        @Test(
            "a reader with no finger enrolled: biometryType is touchID, canEvaluatePolicy is biometryNotEnrolled, no domain state"
        )
        func nothingEnrolled() throws {
            let polkit = try PolkitFixture(fingerprintReader: true)
            let lines = try biometry(polkit)
            #expect(lines["no"] == "\(LAError.Code.biometryNotEnrolled.rawValue)", "\(lines)")
            #expect(lines["type"] == "\(LABiometryType.touchID.rawValue)", "\(lines)")
            #expect(lines["evaluated"] == "none" && lines["domain"] == "none", "\(lines)")
            let run = try polkit.runAsUser(polkit.worker, ["evaluate", "--biometrics"])
            #expect(run.output == "error \(LAError.Code.biometryNotEnrolled.rawValue)\n", "\(run)")
        }

        @Test(
            "an enrolled finger evaluates .deviceOwnerAuthenticationWithBiometrics: the terminal asks for a touch, and the evaluated domain state is the reader's"
        )
        func matchingFinger() throws {
            let polkit = try fixtureWithFinger()
            let lines = try biometry(polkit)
            #expect(lines["yes"] != nil, "\(lines)")
            let state = try #require(lines["domain"])
            #expect(state.count == 64 && lines["evaluated"] == state, "\(lines)")
            let person = try polkit.touch(["own-right"])
            let run = try polkit.onTerminal(["evaluate", "--biometrics"], steps: [])
            #expect(finished(person).contains("touched"))
            #expect(run.output.contains("Touch the fingerprint reader"), "\(run)")
            #expect(run.output.contains("Log in to your account"), "\(run)")
            #expect(run.output.contains("success\r\nstate \(state)\r\n"), "\(run)")
        }

        @Test("three fingers that do not match are LAError.authenticationFailed; a match at the third try succeeds")
        func tries() throws {
            let polkit = try fixtureWithFinger()
            let strangers = try polkit.touch(["stranger-1", "stranger-2", "stranger-3"])
            let failed = try polkit.runAsUser(polkit.worker, ["evaluate", "--biometrics"])
            #expect(finished(strangers).contains("touched"))
            #expect(failed.output == "error \(LAError.Code.authenticationFailed.rawValue)\n", "\(failed)")
            let late = try polkit.touch(["stranger-1", "stranger-2", "own-right"])
            let succeeded = try polkit.runAsUser(polkit.worker, ["evaluate", "--biometrics"])
            #expect(finished(late).contains("touched"))
            #expect(succeeded.output.hasPrefix("success\nstate "), "\(succeeded)")
        }

        @Test("enrolling another finger changes the domain state; deleting them all leaves biometryNotEnrolled")
        func domainStateFollowsFingers() throws {
            let polkit = try fixtureWithFinger()
            let first = try #require(try biometry(polkit)["domain"])
            // Read again, unchanged: the state is a function of the fingers, not of the time.
            #expect(try biometry(polkit)["domain"] == first)
            #expect(try polkit.enroll("left-index-finger", print: "own-left") == "enroll-completed")
            let second = try #require(try biometry(polkit)["domain"])
            #expect(second != first && second.count == 64)
            #expect(try polkit.deleteFingers().output.contains("deleted"))
            let none = try biometry(polkit)
            #expect(none["no"] == "\(LAError.Code.biometryNotEnrolled.rawValue)" && none["domain"] == "none", "\(none)")
        }

        @Test("a context that may not ask fails with notInteractive at once")
        func notInteractive() throws {
            let polkit = try fixtureWithFinger()
            let run = try polkit.runAsUser(polkit.worker, ["evaluate", "--biometrics", "--not-interactive"])
            #expect(run.output == "error \(LAError.Code.notInteractive.rawValue)\n", "\(run)")
        }

        /// `SecAccessControlCreateFlags.biometryCurrentSet` and `.biometryAny`.
        static let currentSet = "8"
        static let anyFinger = "2"

        /// Stores a password `service` for the account through `backend`, its access control of
        /// `flags`; the worker's answer, and the secret.
        private func store(
            _ service: String, flags: String, _ polkit: PolkitFixture, _ backend: Backend
        ) throws -> (answer: String, secret: String) {
            let secret = "finger-" + UUID().uuidString.prefix(12)
            let file = try polkit.accountFile("secret-\(service)", secret)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let stored = try polkit.runAsUser(
                polkit.worker, ["store", service, file, flags], environment: backend.environment(polkit))
            return (stored.output + stored.errors, secret)
        }

        /// Stores `service` as ``store(_:flags:_:_:)`` does, and requires it stored; its secret.
        private func stored(
            _ service: String, flags: String, _ polkit: PolkitFixture, _ backend: Backend
        ) throws -> String {
            let (answer, secret) = try store(service, flags: flags, polkit, backend)
            try #require(answer == "stored\n", "\(answer)")
            return secret
        }

        @Test(
            "a .biometryCurrentSet item is read after a matching finger; strangers' fingers are errSecAuthFailed; Fail is errSecInteractionNotAllowed unasked",
            arguments: Backend.allCases)
        func fingerReadsItem(backend: Backend) throws {
            let polkit = try fixtureWithFinger()
            let environment = backend.environment(polkit)
            let secret = try stored("vault", flags: Self.currentSet, polkit, backend)

            let owner = try polkit.touch(["own-right"])
            let read = try polkit.runAsUser(polkit.worker, ["read", "vault"], environment: environment)
            #expect(finished(owner).contains("touched"))
            #expect(read.output == "secret \(secret)\n", "\(read)")

            let strangers = try polkit.touch(["stranger-1", "stranger-2", "stranger-3"])
            let refused = try polkit.runAsUser(polkit.worker, ["read", "vault"], environment: environment)
            #expect(finished(strangers).contains("touched"))
            #expect(refused.output == "error -25293\n", "\(refused)")

            let barred = try polkit.runAsUser(polkit.worker, ["read", "vault", "fail"], environment: environment)
            #expect(barred.output == "error -25308\n", "\(barred)")

            if backend == .keychaind {
                let log = try polkit.runAsUser(polkit.securityTool, ["access-log"], environment: environment)
                let reads = log.output.split(separator: "\n").filter {
                    $0.contains(" read genp ") && $0.contains("(service \"vault\", account \"owner\")")
                }
                #expect(reads.count == 1 && reads[0].hasSuffix(" and a finger on the reader"), "\(log)")
                #expect(!log.output.contains(secret))
            }
        }

        @Test(
            "two programs reading a finger's item at once take turns at the reader: each is asked for its own touch, and both read it",
            arguments: Backend.allCases)
        func twoReadersTakeTurns(backend: Backend) throws {
            let polkit = try fixtureWithFinger()
            let environment = backend.environment(polkit)
            let secret = try stored("vault", flags: Self.anyFinger, polkit, backend)

            // One touch for each verification fprintd starts: the second program's starts only
            // once the first's claim of the reader has ended.
            let owner = try polkit.touch(["own-right", "own-right"], onePerVerification: true)
            let first = try polkit.startAsUser(polkit.worker, ["read", "vault"], environment: environment)
            let second = try polkit.startAsUser(polkit.worker, ["read", "vault"], environment: environment)
            let touched = finished(owner)
            let answers = [finished(first), finished(second)]
            #expect(touched.contains("touched"), "\(touched)")
            #expect(answers.allSatisfy { $0 == "secret \(secret)\n" }, "\(answers) \(touched)")
        }

        @Test(
            "a new finger invalidates a .biometryCurrentSet item (errSecItemNotFound, nobody asked) but not a .biometryAny one",
            arguments: Backend.allCases)
        func newFingerInvalidatesCurrentSet(backend: Backend) throws {
            let polkit = try fixtureWithFinger()
            let environment = backend.environment(polkit)
            _ = try stored("current", flags: Self.currentSet, polkit, backend)
            let secret = try stored("any", flags: Self.anyFinger, polkit, backend)
            #expect(try polkit.enroll("left-index-finger", print: "own-left") == "enroll-completed")

            // Nobody touches the reader: had it asked, the read would wait, then fail otherwise.
            let gone = try polkit.runAsUser(polkit.worker, ["read", "current"], environment: environment)
            #expect(gone.output == "error -25300\n", "\(gone)")
            // fprintd matches "any finger" against the first one enrolled on a reader that
            // cannot identify among several, as the virtual one cannot.
            let owner = try polkit.touch(["own-right"])
            let kept = try polkit.runAsUser(polkit.worker, ["read", "any"], environment: environment)
            let touched = finished(owner)
            #expect(touched.contains("touched"), "\(touched)")
            #expect(kept.output == "secret \(secret)\n", "\(kept) \(touched)")
        }

        @Test(
            "SecItemUpdate to a .biometryCurrentSet access control binds the item to the enrolled fingers, as adding does",
            arguments: Backend.allCases)
        func updateBindsToFingers(backend: Backend) throws {
            let polkit = try fixtureWithFinger()
            let environment = backend.environment(polkit)
            let secret = try stored("vault", flags: "0", polkit, backend)
            let rebound = try polkit.runAsUser(
                polkit.worker, ["rebind", "vault", Self.currentSet], environment: environment)
            #expect(rebound.output == "rebound\n", "\(rebound)")
            let owner = try polkit.touch(["own-right"])
            let read = try polkit.runAsUser(polkit.worker, ["read", "vault"], environment: environment)
            #expect(finished(owner).contains("touched"))
            #expect(read.output == "secret \(secret)\n", "\(read)")
        }

        @Test(
            "an evaluated biometric context reads biometry and userPresence items without another touch, not a devicePasscode one; without it a read asks again",
            arguments: Backend.allCases)
        func evaluatedContextSparesTouches(backend: Backend) throws {
            let polkit = try fixtureWithFinger()
            let environment = backend.environment(polkit)
            var secrets: [String: String] = [:]
            for (service, flags) in [
                ("any", Self.anyFinger), ("current", Self.currentSet), ("presence", "1"), ("passcode", "16"),
            ] {
                secrets[service] = try stored(service, flags: flags, polkit, backend)
            }
            // One touch, for the evaluation: a read that asked again would wait for another.
            let person = try polkit.touch(["own-right"])
            let run = try polkit.runAsUser(
                polkit.worker, ["evaluate-and-read", "any,current,presence,passcode", "2", "--biometrics"],
                environment: environment)
            let touched = finished(person)
            #expect(touched.contains("touched"), "\(touched)")
            var expected = "success\n"
            for service in ["any", "current", "presence"] {
                let line = "secret \(secrets[service] ?? "")\n"
                expected += line + line
            }
            // The owner is asked for the passcode item, and polkit has nobody to ask with here.
            expected += "error -25308\nerror -25308\nwithout the context\nerror -25308\n"
            #expect(run.output == expected, "\(run)")

            if backend == .keychaind {
                let log = try polkit.runAsUser(polkit.securityTool, ["access-log"], environment: environment)
                let byFinger = log.output.split(separator: "\n").filter {
                    $0.contains(" read genp ") && $0.hasSuffix(" and a finger on the reader")
                }
                #expect(byFinger.count == 6, "\(log)")
            }
        }

        @Test(
            "an item that asks for a finger and the passcode (.and) is read after the owner's password and a finger, one each",
            arguments: Backend.allCases)
        func fingerAndPasscode(backend: Backend) throws {
            let polkit = try fixtureWithFinger()
            let password = try polkit.newPassword()
            let environment = backend.environment(polkit)
            // biometryAny | and | devicePasscode.
            let secret = try stored("both", flags: "\(2 | 1 << 15 | 16)", polkit, backend)
            let person = try polkit.touch(["own-right"])
            let run = try polkit.onTerminal(
                ["read", "both"], steps: [("Password:", password)], environment: environment)
            let touched = finished(person)
            #expect(touched.contains("touched"), "\(touched)")
            #expect(run.output.components(separatedBy: "Password:").count == 2, "\(run)")
            #expect(run.output.contains("secret \(secret)"), "\(run)")
            // The terminal is told the reader waits: by keychaind, or by the app's own keychain.
            #expect(run.output.contains("keychain: touch the fingerprint reader ("), "\(run)")

            if backend == .keychaind {
                let log = try polkit.runAsUser(polkit.securityTool, ["access-log"], environment: environment)
                let reads = log.output.split(separator: "\n").filter {
                    $0.contains(" read genp ")
                        && $0.hasSuffix(" and the owner's authentication and a finger on the reader")
                }
                #expect(reads.count == 1, "\(log)")
            }
        }

        @Test("adding a .biometryCurrentSet item with no finger enrolled is errSecAuthFailed")
        func currentSetNeedsAFinger() throws {
            let polkit = try PolkitFixture(fingerprintReader: true)
            let (answer, _) = try store("vault", flags: Self.currentSet, polkit, .keychaind)
            #expect(answer == "error -25293\n", "\(answer)")
        }
    }
}
