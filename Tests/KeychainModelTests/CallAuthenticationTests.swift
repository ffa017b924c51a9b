import Foundation
import KeychainModel
import Testing

/// The one policy by which a call's items get their answers: what is asked after each refusal,
/// and what an evaluated context's proof spares.
@Suite("What a call asks the person next")
struct CallAuthenticationTests {
    static let now = Data(repeating: 1, count: 32)
    static let before = Data(repeating: 2, count: 32)
    static let owner = KeychainError(.interactionNotAllowed, "owner").because(.authenticateUser)
    static let finger = KeychainError(.interactionNotAllowed, "finger").because(.authenticateWithFinger)
    static let companion = KeychainError(.interactionNotAllowed, "companion").because(.authenticateWithCompanion)
    static let companionKey = Data([4]) + Data(repeating: 3, count: 64)

    /// Runs the loop a host runs against a call that refuses with `refusals` in turn (one for
    /// each run, `nil` once it succeeds), the reader's state being `state`.
    /// - Returns: The steps taken, and whether the call succeeded.
    private func run(proof: ProofAnswer?, state: Data, refusals: [KeychainError?]) -> ([String], Bool) {
        var answers = CallAuthentication(proof: proof)
        var steps: [String] = []
        for refusal in refusals {
            guard let refusal else { return (steps, true) }
            guard let step = answers.step(after: refusal) else { return (steps, false) }
            steps.append("\(step)")
            switch step {
            case .askOwner: answers.ownerAnswered()
            case .readFingerState: answers.read(fingerState: state)
            case .touchFinger: answers.fingerMatched()
            case .touchCompanion: answers.companionSigned(publicKey: Self.companionKey)
            }
        }
        return (steps, false)
    }

    @Test(
        "without a proof: the owner is asked once; a finger is the reader's state read, then a touch; a refusal after each is final"
    )
    func withoutProof() {
        #expect(run(proof: nil, state: Self.now, refusals: [Self.owner, nil]) == (["askOwner"], true))
        #expect(run(proof: nil, state: Self.now, refusals: [Self.owner, Self.owner]) == (["askOwner"], false))
        #expect(
            run(proof: nil, state: Self.now, refusals: [Self.finger, Self.finger, nil])
                == (["readFingerState", "touchFinger"], true))
        #expect(
            run(proof: nil, state: Self.now, refusals: [Self.finger, Self.finger, Self.finger])
                == (["readFingerState", "touchFinger"], false))
        // Any other refusal stands.
        var answers = CallAuthentication(proof: .owner)
        #expect(answers.step(after: KeychainError(.interactionNotAllowed, "other")) == nil)
        #expect(answers.step(after: .applicationNotTrusted) == nil)
    }

    @Test(
        "a password proof answers the owner unasked, never a finger; a finger proof answers a finger in its own state unasked, and the owner's questions a finger answers"
    )
    func proofs() {
        // Answered before the call first runs: no refusal for the owner, and one after it stands.
        #expect(CallAuthentication(proof: .owner).ownerVerified)
        #expect(!CallAuthentication(proof: .finger(state: Self.now)).ownerVerified)
        #expect(run(proof: .owner, state: Self.now, refusals: [nil]) == ([], true))
        #expect(run(proof: .owner, state: Self.now, refusals: [Self.owner]) == ([], false))
        #expect(
            run(proof: .owner, state: Self.now, refusals: [Self.finger, Self.finger, nil])
                == (["readFingerState", "touchFinger"], true))

        let finger = ProofAnswer.finger(state: Self.now)
        // A biometry item: the state read, which the proof matches; no touch.
        #expect(run(proof: finger, state: Self.now, refusals: [Self.finger, nil]) == (["readFingerState"], true))
        // The fingers changed since the context was evaluated: a touch after all.
        #expect(
            run(proof: finger, state: Self.before, refusals: [Self.finger, Self.finger, nil])
                == (["readFingerState", "touchFinger"], true))
        // A userPresence item: the finger answers it unasked ...
        #expect(run(proof: finger, state: Self.now, refusals: [Self.owner, nil]) == (["readFingerState"], true))
        // ... but not a devicePasscode one, whose owner is then asked.
        #expect(
            run(proof: finger, state: Self.now, refusals: [Self.owner, Self.owner, nil])
                == (["readFingerState", "askOwner"], true))
        // Nor in another state.
        #expect(
            run(proof: finger, state: Self.before, refusals: [Self.owner, Self.owner, nil])
                == (["readFingerState", "askOwner"], true))
    }

    @Test("a call inside one that has its answers asks nothing again", arguments: [false, true])
    func nested(fingerMatched: Bool) {
        var answers = CallAuthentication(
            ownerVerified: true, finger: fingerMatched ? .matched(state: Self.now) : .enrolled(state: Self.now),
            proof: nil)
        #expect(answers.step(after: Self.owner) == nil)
        #expect(answers.step(after: Self.finger) == (fingerMatched ? nil : .touchFinger))
    }
}
