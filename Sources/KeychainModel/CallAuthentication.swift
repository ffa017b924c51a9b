import Foundation

/// What a finger on the fingerprint reader has answered for a call: set by whoever asks the
/// person (keychaind for its caller, or a process that hosts the engine), for that call alone.
public enum FingerAnswer: Sendable, Hashable {
    /// The reader's enrolled fingers are in `state` (its domain state); nobody has touched it
    /// yet. Items made in another state that nothing else answers are left out.
    case enrolled(state: Data)
    /// An enrolled finger matched, the fingers being in `state`.
    case matched(state: Data)

    /// The reader's domain state.
    public var state: Data {
        switch self {
        case .enrolled(let state), .matched(let state): state
        }
    }
}

/// What the proof an evaluated `LAContext` carries (``ItemQuery/ownerProof``) says the person
/// answered, as whoever made it keeps it.
public enum ProofAnswer: Sendable, Hashable {
    /// The owner authenticated (polkit): it answers what their password answers.
    case owner
    /// An enrolled finger matched, the reader's fingers being in `state`: it answers what a
    /// finger answers while the same fingers are enrolled.
    case finger(state: Data)
}

/// What the person has answered for one call so far, and what to ask next: the one policy by
/// which keychaind (for its callers) and a process that hosts the engine (through
/// ``UserVerifier``) answer a call whose items ask for the person.
///
/// The call runs; when it fails for want of an answer (``KeychainError/Reason/authenticateUser``
/// or ``KeychainError/Reason/authenticateWithFinger``), ``step(after:)`` says what to do, the host
/// does it and records what it learnt, and the call runs again with ``ownerVerified`` and
/// ``finger``. Each question is asked once at most, so the loop ends.
package struct CallAuthentication: Sendable {
    /// Whether the owner has authenticated for the call.
    package private(set) var ownerVerified: Bool
    /// What the reader answered for the call.
    package private(set) var finger: FingerAnswer?
    /// What the proof the call offers answers, as its maker keeps it; `nil` without one, or one
    /// its maker does not know for the caller.
    package let proof: ProofAnswer?

    /// What the host does next.
    package enum Step: Sendable, Equatable {
        /// Ask the owner to authenticate (polkit), then ``ownerAnswered()``.
        case askOwner
        /// Read the reader's domain state, asking nobody, then ``read(fingerState:)``.
        case readFingerState
        /// Have the person touch the reader, then ``fingerMatched()``.
        case touchFinger
    }

    /// The answers of a call that has had `ownerVerified` and `finger` already (a call run
    /// inside one that asked), offering `proof`. A password proof answers the owner before the
    /// call first runs, sparing it a pass; a finger proof waits for a finger's question, since
    /// reading the reader's state costs a D-Bus exchange.
    package init(ownerVerified: Bool = false, finger: FingerAnswer? = nil, proof: ProofAnswer?) {
        self.ownerVerified = ownerVerified || proof == .owner
        self.finger = finger
        self.proof = proof
    }

    /// What to do after the call failed with `error`, or `nil` when nothing more can answer it
    /// and the error stands.
    ///
    /// A finger proof answers in the reader's state it was made in only: the state is read
    /// first, so that items whose fingers changed drop out unasked. It also answers the owner's
    /// questions a finger can (`userPresence`, "biometry or passcode"); a `devicePasscode` item
    /// still asks the owner.
    package mutating func step(after error: KeychainError) -> Step? {
        switch error.reason {
        case .authenticateWithFinger?:
            switch finger {
            case nil: return .readFingerState
            case .enrolled?: return .touchFinger
            case .matched?: return nil
            }
        case .authenticateUser? where !ownerVerified:
            if case .finger? = proof, finger == nil { return .readFingerState }
            return .askOwner
        default:
            return nil
        }
    }

    /// Records the owner's authentication.
    package mutating func ownerAnswered() { ownerVerified = true }

    /// Records the reader's domain state: a finger proof made in that state answers as a match.
    package mutating func read(fingerState state: Data) {
        finger = proof == .finger(state: state) ? .matched(state: state) : .enrolled(state: state)
    }

    /// Records a match of an enrolled finger, in the state read before.
    package mutating func fingerMatched() {
        if case .enrolled(let state)? = finger { finger = .matched(state: state) }
    }
}
