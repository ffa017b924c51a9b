import Foundation
import KeychainLibc
import UserPresence

/// Biometry on Linux: fprintd's fingerprint reader (``UserPresence/FingerprintReader``), claimed
/// by this process for its own user.
extension LAContext {
    /// What fprintd offers this process's user now: its reader and the fingers enrolled on it,
    /// `nil` without a reader, or `biometryNotAvailable` when fprintd cannot be reached or refuses
    /// this session.
    static func enrolment(environment: [String: String]) -> Result<FingerprintReader.Enrolment?, LAError> {
        do {
            return .success(try FingerprintReader.enrolment(environment: environment))
        } catch {
            return .failure(LAError(.biometryNotAvailable, "fprintd cannot be used: \(error)"))
        }
    }

    /// The enrolment biometry can be evaluated with, from what ``enrolment(environment:)`` found.
    /// - Throws: `biometryNotAvailable` without a reader (or fprintd), `biometryNotEnrolled` with
    ///   no finger enrolled.
    static func usable(_ found: Result<FingerprintReader.Enrolment?, LAError>) throws(LAError)
        -> FingerprintReader.Enrolment
    {
        guard let enrolment = try found.get() else {
            throw LAError(.biometryNotAvailable, "fprintd has no fingerprint reader")
        }
        guard !enrolment.fingers.isEmpty else {
            throw LAError(.biometryNotEnrolled, "no finger is enrolled on the reader for this user")
        }
        return enrolment
    }

    /// Has the person touch the reader, blocking this thread: one of their enrolled fingers must
    /// match within three tries.
    /// - Returns: The domain state the match was made in.
    /// - Throws: ``LAError``: `authenticationFailed` after three fingers that did not match,
    ///   `systemCancel` when nobody touched the reader in time, `biometryNotAvailable` when the
    ///   reader went away or fprintd refused, `biometryNotEnrolled` with nothing enrolled.
    func verifyFinger(reason: String) throws -> Data {
        let environment = ProcessInfo.processInfo.environment
        let enrolment = try Self.usable(Self.enrolment(environment: environment))
        let outcome: FingerprintReader.Outcome
        do {
            outcome = try enrolment.reader.verify(environment: environment) {
                Self.tellTerminal("Touch the fingerprint reader (\(enrolment.reader.name)): \(reason)\n")
            }
        } catch {
            throw LAError(.biometryNotAvailable, "fprintd cannot be used: \(error)")
        }
        switch outcome {
        case .matched: return enrolment.state
        case .failed: throw LAError(.authenticationFailed, "no enrolled finger matched")
        case .timedOut: throw LAError(.systemCancel, "nobody touched the reader in time")
        case .disconnected: throw LAError(.biometryNotAvailable, "the fingerprint reader failed")
        }
    }

    /// Writes `text` to this process's controlling terminal, when it has one: where a person at a
    /// terminal learns that the reader waits (a desktop's fprintd clients show their own hint).
    static func tellTerminal(_ text: String) {
        let descriptor = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
