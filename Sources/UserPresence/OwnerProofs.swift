import Foundation
import KeychainModel
import Synchronization

/// Proofs that the person answered for a process: what an evaluated `LAContext` carries
/// (`kSecUseAuthenticationContext`), so that the reads it is given to within its lifetime do not
/// ask again. A proof is 32 random bytes, kept only where it was made (keychaind for its callers,
/// or the process that hosts its own keychain) and good only for the process it was made for,
/// named by its user, pid and start time, until it expires. Each says what the person answered
/// with (``KeychainModel/ProofAnswer``): their password, or a finger in the reader's state then.
public final class OwnerProofs: Sendable {
    /// The longest a proof lasts: Apple's `LATouchIDAuthenticationMaximumAllowableReuseDuration`.
    public static let longestLifetime: Duration = .seconds(300)
    /// The most proofs kept; the oldest goes first.
    static let capacity = 256

    private struct Proof {
        var subject: ProcessSubject
        var answer: ProofAnswer
        var expiry: ContinuousClock.Instant
    }

    private let proofs = Mutex<[Data: Proof]>([:])

    /// An empty set of proofs.
    public init() {}

    /// The proofs of this process's own keychain (``PolkitUserVerifier``, and an `LAContext`
    /// evaluated where no keychaind serves the process).
    public static let thisProcess = OwnerProofs()

    /// Makes a proof that the person answered for `subject` with `answer`, good for `lifetime`
    /// (at most ``longestLifetime``).
    public func make(for subject: ProcessSubject, answer: ProofAnswer = .owner, lifetime: Duration) -> Data {
        var generator = SystemRandomNumberGenerator()
        let proof = Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let now = ContinuousClock.now
        let kept = Proof(
            subject: subject, answer: answer, expiry: now + min(max(lifetime, .zero), Self.longestLifetime))
        proofs.withLock { proofs in
            proofs = proofs.filter { $0.value.expiry > now }
            if proofs.count >= Self.capacity, let oldest = proofs.min(by: { $0.value.expiry < $1.value.expiry }) {
                proofs[oldest.key] = nil
            }
            proofs[proof] = kept
        }
        return proof
    }

    /// What `proof` answers, when it was made here for `subject` and has not expired.
    public func answer(to proof: Data, for subject: ProcessSubject) -> ProofAnswer? {
        proofs.withLock { proofs in
            guard let kept = proofs[proof] else { return nil }
            guard kept.expiry > ContinuousClock.now else {
                proofs[proof] = nil
                return nil
            }
            return kept.subject == subject ? kept.answer : nil
        }
    }

    /// Forgets every proof.
    public func removeAll() { proofs.withLock { $0 = [:] } }
}
