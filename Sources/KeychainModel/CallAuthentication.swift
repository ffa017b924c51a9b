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
    /// A paired security key signed, its public key `publicKey`: it answers what a touch of
    /// that key answers.
    case companion(publicKey: Data)
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
    /// The public key of the security key touched for the call.
    package private(set) var companion: Data?
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
        /// Have the person touch a paired security key, then ``companionSigned(publicKey:)``.
        case touchCompanion
    }

    /// The answers of a call that has had `ownerVerified`, `finger` and `companion` already (a
    /// call run inside one that asked), offering `proof`. A password or security-key proof
    /// answers before the call first runs, sparing it a pass; a finger proof waits for a
    /// finger's question, since reading the reader's state costs a D-Bus exchange.
    package init(
        ownerVerified: Bool = false, finger: FingerAnswer? = nil, companion: Data? = nil, proof: ProofAnswer?
    ) {
        self.ownerVerified = ownerVerified || proof == .owner
        self.finger = finger
        if case .companion(let key)? = proof {
            self.companion = key
        } else {
            self.companion = companion
        }
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
        case .authenticateWithCompanion?:
            return companion == nil ? .touchCompanion : nil
        case .authenticateUser? where !ownerVerified:
            if case .finger? = proof, finger == nil { return .readFingerState }
            return .askOwner
        default:
            return nil
        }
    }

    /// Whether `error` is a refusal this policy answers: an item asks for the owner, a finger or
    /// a security key, and the call may ask.
    package static func asksPerson(_ error: KeychainError) -> Bool {
        error.reason == .authenticateUser || error.reason == .authenticateWithFinger
            || error.reason == .authenticateWithCompanion
    }

    /// Records the owner's authentication.
    package mutating func ownerAnswered() { ownerVerified = true }

    /// Records the reader's domain state: a finger proof made in that state answers as a match.
    package mutating func read(fingerState state: Data) {
        finger = proof == .finger(state: state) ? .matched(state: state) : .enrolled(state: state)
    }

    /// Records a touch of the security key whose public key is `publicKey`.
    package mutating func companionSigned(publicKey: Data) { companion = publicKey }

    /// Records a match of an enrolled finger, in the state read before.
    package mutating func fingerMatched() {
        if case .enrolled(let state)? = finger { finger = .matched(state: state) }
    }
}
