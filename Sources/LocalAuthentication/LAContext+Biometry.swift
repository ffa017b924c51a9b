import Foundation
import KeychainClient
import KeychainModel
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

    /// Has the person touch the reader where this process's keychain is kept (keychaind, or this
    /// process), blocking this thread: one of their enrolled fingers must match within three
    /// tries. The proof answers the context's reads of items a finger answers for `lifetime`.
    /// - Returns: The proof, and the domain state the match was made in.
    /// - Throws: ``LAError``: `authenticationFailed` after three fingers that did not match,
    ///   `systemCancel` when nobody touched the reader in time, `biometryNotAvailable` when there
    ///   is no reader, it went away or fprintd refused, `biometryNotEnrolled` with nothing enrolled.
    func evaluateFinger(reason: String, lifetime: Duration) throws -> (proof: Data, state: Data) {
        let enrolment = try Self.usable(Self.enrolment(environment: ProcessInfo.processInfo.environment))
        do {
            return try Keychains.authenticateWithFinger(lifetime: lifetime) {
                TerminalHint.write(Self.hint(enrolment.reader, reason))
            }
        } catch let error as KeychainError {
            switch error.code {
            case .authFailed: throw LAError(.authenticationFailed, "no enrolled finger matched")
            case .userCanceled: throw LAError(.systemCancel, "nobody touched the reader in time")
            default: throw LAError(.biometryNotAvailable, "the reader cannot be used: \(error.message)")
            }
        } catch {
            throw LAError(.biometryNotAvailable, "the reader cannot be used: \(error)")
        }
    }

    /// What the terminal is told while the reader waits.
    private static func hint(_ reader: FingerprintReader, _ reason: String) -> String {
        "Touch the fingerprint reader (\(reader.name)): \(reason)\n"
    }
}
