import Foundation
import KeychainLibc
import UserPresence

/// Biometry on Linux: fprintd's fingerprint reader (``UserPresence/FingerprintReader``), claimed
/// by this process for its own user.
extension LAContext {
    /// What fprintd offers this process's user now.
    struct Biometry {
        var reader: FingerprintReader
        var fingers: [String]

        /// The domain state of these fingers on this reader.
        var stateHash: Data? {
            fingers.isEmpty ? nil : FingerprintReader.domainState(reader: reader, fingers: fingers)
        }
    }

    /// The reader and the fingers enrolled on it.
    /// - Throws: ``LAError`` `biometryNotAvailable` when there is no reader (or fprintd cannot
    ///   be reached, or refuses this session), `biometryNotEnrolled` when no finger is enrolled.
    static func availableBiometry(environment: [String: String]) throws -> Biometry {
        let reader: FingerprintReader?
        let fingers: [String]
        do {
            reader = try FingerprintReader.defaultReader(environment: environment)
            fingers = try reader?.enrolledFingers(environment: environment) ?? []
        } catch {
            throw LAError(.biometryNotAvailable, "fprintd cannot be used: \(error)")
        }
        guard let reader else { throw LAError(.biometryNotAvailable, "fprintd has no fingerprint reader") }
        guard !fingers.isEmpty else {
            throw LAError(.biometryNotEnrolled, "no finger is enrolled on the reader for this user")
        }
        return Biometry(reader: reader, fingers: fingers)
    }

    /// The biometry there is, or `nil` (no reader, or fprintd cannot be reached), with what is
    /// enrolled: for ``biometryType`` and the domain state.
    static func presentBiometry(environment: [String: String]) -> Biometry? {
        guard let reader = try? FingerprintReader.defaultReader(environment: environment) else { return nil }
        return Biometry(reader: reader, fingers: (try? reader.enrolledFingers(environment: environment)) ?? [])
    }

    /// Has the person touch the reader, blocking this thread: one of their enrolled fingers must
    /// match within three tries.
    /// - Returns: The domain state the match was made in.
    /// - Throws: ``LAError``: `authenticationFailed` after three fingers that did not match,
    ///   `systemCancel` when nobody touched the reader in time, `biometryNotAvailable` when the
    ///   reader went away or fprintd refused, `biometryNotEnrolled` with nothing enrolled.
    func verifyFinger(reason: String) throws -> Data? {
        let environment = ProcessInfo.processInfo.environment
        let biometry = try Self.availableBiometry(environment: environment)
        let outcome: FingerprintReader.Outcome
        do {
            outcome = try biometry.reader.verify(environment: environment) {
                Self.tellTerminal("Touch the fingerprint reader (\(biometry.reader.name)): \(reason)\n")
            }
        } catch {
            throw LAError(.biometryNotAvailable, "fprintd cannot be used: \(error)")
        }
        switch outcome {
        case .matched: return biometry.stateHash
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
