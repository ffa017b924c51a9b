import Foundation
@testable import KeychainCore
import Synchronization
import Testing

/// Items whose access control asks for their owner's authentication: whatever mode a caller
/// asks in, such an item's secret reaches it only once the person has answered for the call.
@Suite("Items that ask for their owner's authentication")
struct OwnerAuthenticationTests {
    /// Flags that ask for the person, as `SecAccessControlCreateFlags` spells them, one this
    /// version does not know (which must ask too), whether the owner's own authentication
    /// answers them, and what a call that may ask asks first.
    static let asking: [(name: String, flags: UInt64, answeredByOwner: Bool, first: KeychainError.Reason?)] = [
        ("userPresence", 1 << 0, true, .authenticateUser), ("devicePasscode", 1 << 4, true, .authenticateUser),
        ("userPresence | applicationPassword", 1 << 0 | 1 << 31, true, .authenticateUser),
        ("biometryAny | or | devicePasscode", 1 << 1 | 1 << 14 | 1 << 4, true, .authenticateUser),
        ("biometryAny", 1 << 1, false, .authenticateWithFinger),
        // Made without a reader's state (here): nothing answers it.
        ("biometryCurrentSet", 1 << 3, false, nil), ("companion", 1 << 5, false, nil),
        // Both: the owner first, a finger next.
        ("biometryAny | and | devicePasscode", 1 << 1 | 1 << 15 | 1 << 4, false, .authenticateUser),
        ("an unknown flag", 1 << 20, false, nil),
    ]
    /// Flags that ask for nothing when reading a password.
    static let notAsking: [(String, UInt64)] = [
        ("none", 0), ("privateKeyUsage", 1 << 30), ("or | and", 1 << 14 | 1 << 15),
    ]

    /// A keychain holding `guarded` (asking with `flags`, bound to the reader's state
    /// `biometryState`) and `plain`; the secrets' texts.
    private func keychain(
        _ backend: Backend, flags: UInt64, biometryState: Data? = nil, verifier: (any UserVerifier)? = nil
    ) throws -> (KeychainDatabase, AnyObject?) {
        var configuration = KeychainConfiguration.testing()
        configuration.userVerifier = verifier
        let (keychain, owner): (KeychainDatabase, AnyObject?)
        switch backend {
        case .memory: (keychain, owner) = (try KeychainDatabase.inMemory(configuration: configuration), nil)
        case .file:
            let temporary = try TemporaryKeychain(configuration: configuration)
            (keychain, owner) = (temporary.keychain, temporary)
        }
        var guarded = genericPassword("guarded", data: "guarded secret")
        guarded.attributes[.accessControl] = .data(
            StoredAccessControl(flags: flags, protection: "ak", biometryState: biometryState).serialized)
        _ = try keychain.add(guarded)
        _ = try keychain.add(genericPassword("plain", data: "plain secret"))
        return (keychain, owner)
    }

    @Test(
        "a listing shows the item's attributes but never opens its secret: find fails, findReadable reports it",
        arguments: Backend.allCases, asking.map(\.flags))
    func listingNeverOpensTheSecret(backend: Backend, flags: UInt64) throws {
        let (keychain, owner) = try keychain(backend, flags: flags)
        defer { withExtendedLifetime(owner) {} }
        let listed = try keychain.find(genericPasswordQuery(.ignore), includeData: false)
        #expect(listed.compactMap { $0.attributes[.account]?.stringValue } == ["guarded", "plain"])
        #expect(listed.allSatisfy { $0.data == nil })
        let error = refusal { try keychain.find(genericPasswordQuery(.ignore), includeData: true) }
        #expect(error?.code == .interactionNotAllowed && error?.reason == .userAuthenticationNeeded)
        #expect(error.map { !"\($0)".contains("guarded secret") } ?? false)
        let readable = try keychain.findReadable(genericPasswordQuery(.ignore), includeData: true)
        #expect(readable.items.map(\.data) == [Data("plain secret".utf8)])
        #expect(readable.unreadable.count == 1)
        let row = try #require(readable.unreadable.first)
        #expect(row.error.reason == .userAuthenticationNeeded && row.persistentID == listed.first?.persistentID)
        // As the agent sends it, and reads it back.
        #expect(UnreadableItem(parsing: row.description).error.reason == .userAuthenticationNeeded)
        #expect(!row.description.contains("guarded secret"))
    }

    @Test(
        "fail refuses even an attribute-only search (Apple's rule); skip leaves the item out; allow with nobody to ask refuses for the host to ask what comes first, and refuses what nothing answers outright",
        arguments: Backend.allCases, asking.indices)
    func modes(backend: Backend, index: Int) throws {
        let (_, flags, answeredByOwner, first) = Self.asking[index]
        let verifier = CountingVerifier()
        let (keychain, owner) = try keychain(backend, flags: flags)
        defer { withExtendedLifetime(owner) {} }
        #expect(
            StoredAccessControl(flags: flags, protection: "ak").isAnsweredByOwnerAuthentication == answeredByOwner)
        for includeData in [false, true] {
            let failed = refusal { try keychain.find(genericPasswordQuery(.fail), includeData: includeData) }
            #expect(failed?.code == .interactionNotAllowed && failed?.reason == .userAuthenticationNeeded)
            let allowed = refusal { try keychain.find(genericPasswordQuery(.allow), includeData: includeData) }
            #expect(allowed?.code == .interactionNotAllowed)
            #expect(allowed?.reason == first)
            let skipped = try keychain.find(genericPasswordQuery(.skip), includeData: includeData)
            #expect(skipped.compactMap { $0.attributes[.account]?.stringValue } == ["plain"])
        }
        // With someone to ask for the owner and no reader, only what the owner's authentication
        // answers is read.
        let (asking, _) = try self.keychain(.memory, flags: flags, verifier: verifier)
        let read = refusal { try asking.find(genericPasswordQuery(.allow), includeData: true) }
        #expect((read == nil) == answeredByOwner && verifier.asked == (first == .authenticateUser ? 1 : 0))
    }

    @Test("flags that ask for nothing leave the secret readable in every mode", arguments: notAsking.map(\.1))
    func flagsThatAskForNothing(flags: UInt64) throws {
        let (keychain, _) = try keychain(.memory, flags: flags)
        for mode in [ItemQuery.AuthenticationUI.ignore, .fail, .skip, .allow] {
            let found = try keychain.find(genericPasswordQuery(mode), includeData: true)
            #expect(found.map(\.data) == [Data("guarded secret".utf8), Data("plain secret".utf8)], "\(mode)")
        }
    }

    @Test("allow asks the configured verifier once per call, then returns the secret; its refusal is the call's")
    func verifierIsAskedOncePerCall() throws {
        let verifier = CountingVerifier()
        let (keychain, _) = try keychain(.memory, flags: 1 << 0, verifier: verifier)
        #expect(
            try keychain.find(genericPasswordQuery(.allow), includeData: true).map(\.data).contains(
                Data("guarded secret".utf8)))
        #expect(verifier.asked == 1)
        #expect(try keychain.findReadable(genericPasswordQuery(.allow), includeData: true).items.count == 2)
        #expect(verifier.asked == 2)
        // Other modes never ask.
        _ = try? keychain.find(genericPasswordQuery(.fail), includeData: true)
        _ = try keychain.find(genericPasswordQuery(.skip), includeData: true)
        _ = try keychain.findReadable(genericPasswordQuery(.ignore), includeData: true)
        #expect(verifier.asked == 2)
        // A call with no guarded match never asks either.
        var plainOnly = genericPasswordQuery(.allow)
        plainOnly.attributes[.account] = .string("plain")
        _ = try keychain.find(plainOnly, includeData: true)
        #expect(verifier.asked == 2)
        for answer in [KeychainError.Code.userCanceled, .authFailed, .interactionNotAllowed] {
            verifier.answer.withLock { $0 = answer }
            #expect(refusal { try keychain.find(genericPasswordQuery(.allow), includeData: true) }?.code == answer)
        }
    }

    @Test(
        "a call run as verified (what keychaind does once the person answered) returns the secret without asking; the owner's authentication never answers biometry"
    )
    func verifiedCall() throws {
        let verifier = CountingVerifier()
        let (keychain, _) = try keychain(.file, flags: 1 << 0, verifier: verifier)
        let found = try KeychainDatabase.$userVerified.withValue(true) {
            try keychain.find(genericPasswordQuery(.allow), includeData: true)
        }
        #expect(found.map(\.data) == [Data("guarded secret".utf8), Data("plain secret".utf8)])
        #expect(verifier.asked == 0)
        let (biometric, _) = try self.keychain(.file, flags: 1 << 1)
        let refused = refusal {
            try KeychainDatabase.$userVerified.withValue(true) {
                try biometric.find(genericPasswordQuery(.allow), includeData: true)
            }
        }
        #expect(refused?.reason == .authenticateWithFinger)
        // Once out of it, the next call is not.
        #expect(
            refusal { try keychain.find(genericPasswordQuery(.fail), includeData: true) }?.code
                == .interactionNotAllowed)
    }

    @Test(
        "an update needs the owner as a read does (else it could take the access control away and leave the secret to the next read); deleting asks for nothing in any mode, as Apple's flag-based access controls allow",
        arguments: [ItemQuery.AuthenticationUI.ignore, .fail, .skip, .allow])
    func updateAndDelete(mode: ItemQuery.AuthenticationUI) throws {
        let verifier = CountingVerifier()
        let (keychain, _) = try keychain(.memory, flags: 1 << 0, verifier: verifier)
        var guarded = genericPasswordQuery(mode)
        guarded.attributes[.account] = .string("guarded")
        let stripped: Attributes = [.accessControl: .data(Data()), .label: .string("renamed")]
        if mode == .allow {
            #expect(try keychain.update(guarded, attributes: stripped) == 1)
            #expect(verifier.asked == 1)
        } else {
            // Skip leaves the item out, so nothing matches.
            let refused = refusal { try keychain.update(guarded, attributes: stripped) }
            #expect(refused?.code == (mode == .skip ? .itemNotFound : .interactionNotAllowed), "\(mode)")
            #expect(verifier.asked == 0)
            // Nothing changed: the next read is still refused.
            #expect(
                refusal { try keychain.find(genericPasswordQuery(.fail), includeData: true) }?.code
                    == .interactionNotAllowed)
        }
        let plain = try keychain.find(genericPasswordQuery(.ignore), includeData: false).first {
            $0.attributes[.account] == .string("plain")
        }
        #expect(plain != nil)
        let asked = verifier.asked
        #expect(try keychain.delete(guarded) == 1)
        #expect(try keychain.find(genericPasswordQuery(.ignore), includeData: true).count == 1)
        #expect(verifier.asked == asked)
    }
}

extension OwnerAuthenticationTests {
    static let stateNow = Data(repeating: 1, count: 32)
    static let stateBefore = Data(repeating: 2, count: 32)

    /// What answers each flag: (flags, the item's reader state, the owner authenticated, the
    /// finger's answer, answered).
    static let answers: [(UInt64, Data?, Bool, FingerAnswer?, Bool)] = [
        (1 << 0, nil, true, nil, true), (1 << 0, nil, false, .matched(state: stateNow), true),
        (1 << 0, nil, false, .enrolled(state: stateNow), false), (1 << 4, nil, false, .matched(state: stateNow), false),
        (1 << 4, nil, true, nil, true), (1 << 1, nil, true, nil, false),
        (1 << 1, nil, false, .matched(state: stateNow), true),
        (1 << 3, stateNow, false, .matched(state: stateNow), true),
        (1 << 3, stateBefore, false, .matched(state: stateNow), false),
        (1 << 3, nil, false, .matched(state: stateNow), false),
        (1 << 3, stateNow, true, nil, false), (1 << 3 | 1 << 14 | 1 << 4, stateBefore, true, nil, true),
        (1 << 3 | 1 << 14 | 1 << 4, stateNow, false, .matched(state: stateNow), true),
        (1 << 1 | 1 << 15 | 1 << 4, nil, true, nil, false),
        (1 << 1 | 1 << 15 | 1 << 4, nil, false, .matched(state: stateNow), false),
        (1 << 5, nil, true, .matched(state: stateNow), false), (1 << 20, nil, true, .matched(state: stateNow), false),
    ]

    @Test(
        "what answers each flag: the owner's authentication userPresence and devicePasscode, a finger userPresence, biometryAny and biometryCurrentSet in its own state; .or either, .and both; nothing a companion",
        arguments: answers.indices)
    func whatAnswers(index: Int) {
        let (flags, state, owner, finger, answered) = Self.answers[index]
        let control = StoredAccessControl(flags: flags, protection: "ak", biometryState: state)
        #expect(control.isAnswered(owner: owner, finger: finger) == answered, "\(Self.answers[index])")
        // The stored form keeps the state.
        #expect(StoredAccessControl(serialized: control.serialized) == control)
    }

    @Test(
        "with a reader here: a finger is asked once and reads the item; fingers changed since the item was made leave a biometryCurrentSet item out unasked, but not a biometryAny one",
        arguments: Backend.allCases)
    func fingerInProcess(backend: Backend) throws {
        let same = FingerVerifier(state: Self.stateNow)
        let (keychain, owner) = try keychain(backend, flags: 1 << 3, biometryState: Self.stateNow, verifier: same)
        defer { withExtendedLifetime(owner) {} }
        #expect(
            try keychain.find(genericPasswordQuery(.allow), includeData: true).map(\.data).contains(
                Data("guarded secret".utf8)))
        #expect(same.touches.withLock { $0 } == 1)

        let changed = FingerVerifier(state: Self.stateNow)
        let (before, _) = try self.keychain(.memory, flags: 1 << 3, biometryState: Self.stateBefore, verifier: changed)
        let left = try before.find(genericPasswordQuery(.allow), includeData: true)
        #expect(left.compactMap { $0.attributes[.account]?.stringValue } == ["plain"])
        #expect(changed.touches.withLock { $0 } == 0)

        let any = FingerVerifier(state: Self.stateNow)
        let (anyFinger, _) = try self.keychain(.memory, flags: 1 << 1, verifier: any)
        #expect(try anyFinger.find(genericPasswordQuery(.allow), includeData: true).count == 2)
        #expect(any.touches.withLock { $0 } == 1)
    }
}

extension OwnerAuthenticationTests {
    static let fingerProof = Data(repeating: 0xF1, count: 32)
    static let passwordProof = Data(repeating: 0x0A, count: 32)

    /// (flags, the item's reader state, the proof offered, the owner asked, touches, read).
    static let proofReads: [(UInt64, Data?, Data, Int, Int, Bool)] = [
        (1 << 1, nil, fingerProof, 0, 0, true), (1 << 3, stateNow, fingerProof, 0, 0, true),
        (1 << 0, nil, fingerProof, 0, 0, true), (1 << 4, nil, fingerProof, 1, 0, true),
        (1 << 3, stateNow, passwordProof, 0, 1, true), (1 << 0, nil, passwordProof, 0, 0, true),
        (1 << 1 | 1 << 15 | 1 << 4, nil, fingerProof, 1, 0, true),
        (1 << 1 | 1 << 15 | 1 << 4, nil, passwordProof, 0, 1, true),
        // A proof made up, or made for another process: as none.
        (1 << 1, nil, Data(repeating: 7, count: 32), 0, 1, true),
        (1 << 1 | 1 << 15 | 1 << 4, nil, Data(repeating: 7, count: 32), 1, 1, true),
    ]

    @Test(
        "an evaluated context's proof spares what it answers: a finger proof reads biometry and userPresence items unasked, a devicePasscode item still asks its owner; a password proof never answers a finger; .and asks for both",
        arguments: Backend.allCases, proofReads.indices)
    func proofsInProcess(backend: Backend, index: Int) throws {
        let (flags, state, proof, ownerAsked, touches, read) = Self.proofReads[index]
        let verifier = ProvingVerifier(
            state: Self.stateNow, proofs: [Self.fingerProof: .finger(state: Self.stateNow), Self.passwordProof: .owner])
        let (keychain, owner) = try keychain(backend, flags: flags, biometryState: state, verifier: verifier)
        defer { withExtendedLifetime(owner) {} }
        var query = genericPasswordQuery(.allow)
        query.ownerProof = proof
        let found = try keychain.find(query, includeData: true).compactMap(\.data)
        #expect(found.contains(Data("guarded secret".utf8)) == read, "\(Self.proofReads[index])")
        #expect(verifier.asked.withLock { $0 } == ownerAsked, "\(Self.proofReads[index])")
        #expect(verifier.touches.withLock { $0 } == touches, "\(Self.proofReads[index])")
    }
}

/// A reader whose fingers are in `state`, where every touch matches, and an owner who always
/// authenticates; it knows `proofs`.
final class ProvingVerifier: UserVerifier {
    let state: Data
    let proofs: [Data: ProofAnswer]
    let asked = Mutex(0)
    let touches = Mutex(0)
    init(state: Data, proofs: [Data: ProofAnswer]) { (self.state, self.proofs) = (state, proofs) }

    func answer(to proof: Data) -> ProofAnswer? { proofs[proof] }
    func verifyUser() throws { asked.withLock { $0 += 1 } }
    func fingerState() throws -> Data { state }
    func verifyFinger() throws { touches.withLock { $0 += 1 } }
}

/// A reader whose fingers are in `state`, where every touch matches.
final class FingerVerifier: UserVerifier {
    let state: Data
    let touches = Mutex(0)
    init(state: Data) { self.state = state }

    func verifyUser() throws { throw KeychainError(.authFailed, "the owner is not asked here") }
    func fingerState() throws -> Data { state }
    func verifyFinger() throws { touches.withLock { $0 += 1 } }
}

/// Counts the calls; answers with `answer` (nil: the person authenticated).
final class CountingVerifier: UserVerifier {
    let calls = Mutex(0)
    let answer = Mutex<KeychainError.Code?>(nil)
    var asked: Int { calls.withLock { $0 } }

    func verifyUser() throws {
        calls.withLock { $0 += 1 }
        if let code = answer.withLock({ $0 }) { throw KeychainError(code, "refused") }
    }
}
