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
        /// A person's touches of the reader, ended within a minute; what they said.
        private func finished(_ person: TestDaemon) -> String {
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
            let polkit = try PolkitFixture(fingerprintReader: true)
            #expect(try polkit.enroll("right-index-finger", print: "own-right") == "enroll-completed")
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
            let polkit = try PolkitFixture(fingerprintReader: true)
            #expect(try polkit.enroll("right-index-finger", print: "own-right") == "enroll-completed")
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
            let polkit = try PolkitFixture(fingerprintReader: true)
            #expect(try polkit.enroll("right-index-finger", print: "own-right") == "enroll-completed")
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
            let polkit = try PolkitFixture(fingerprintReader: true)
            #expect(try polkit.enroll("right-index-finger", print: "own-right") == "enroll-completed")
            let run = try polkit.runAsUser(polkit.worker, ["evaluate", "--biometrics", "--not-interactive"])
            #expect(run.output == "error \(LAError.Code.notInteractive.rawValue)\n", "\(run)")
        }
    }
}
