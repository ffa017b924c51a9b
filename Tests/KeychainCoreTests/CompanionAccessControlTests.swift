import Crypto
import Foundation
@testable import KeychainCore
import Synchronization
import Testing

/// `.companion` items: bound to the security keys paired when they were made
/// (``StoredAccessControl/companions``), answered by a touch of one of them.
@Suite("Items that ask for a companion (a security key)")
struct CompanionAccessControlTests {
    static let keyA = CompanionKey(credentialID: Data(repeating: 0xA1, count: 32), publicKey: point(0xA2))
    static let keyB = CompanionKey(credentialID: Data(repeating: 0xB1, count: 48), publicKey: point(0xB2))
    static let state = Data(repeating: 1, count: 32)

    static func point(_ byte: UInt8) -> Data { Data([4]) + Data(repeating: byte, count: 64) }

    static let companion: UInt64 = 1 << 5
    static let or: UInt64 = 1 << 14
    static let and: UInt64 = 1 << 15

    /// (flags, keys the item is bound to, the owner authenticated, a finger matched, the key
    /// touched, answered).
    static let answers: [(UInt64, [CompanionKey], Bool, Bool, Data?, Bool)] = [
        (companion, [keyA], false, false, keyA.publicKey, true),
        (companion, [keyA, keyB], false, false, keyB.publicKey, true),
        (companion, [keyA], false, false, keyB.publicKey, false),
        (companion, [keyA], true, true, nil, false),
        (companion, [], true, true, keyA.publicKey, false),
        (companion | or | 1 << 4, [keyA], true, false, nil, true),
        (companion | or | 1 << 1, [keyA], false, true, nil, true),
        (companion | and | 1 << 4, [keyA], true, false, keyA.publicKey, true),
        (companion | and | 1 << 4, [keyA], false, false, keyA.publicKey, false),
        (companion | and | 1 << 3, [keyA], false, true, keyA.publicKey, true),
        (1 << 4, [keyA], false, false, keyA.publicKey, false),
    ]

    @Test(
        "a touch answers .companion only with a key the item was bound to; .or takes any answer, .and all; the stored form keeps the keys",
        arguments: answers.indices)
    func whatAnswers(index: Int) {
        let (flags, keys, owner, finger, touched, answered) = Self.answers[index]
        let control = StoredAccessControl(
            flags: flags, protection: "ak", biometryState: Self.state, companions: keys)
        let matched = finger ? FingerAnswer.matched(state: Self.state) : nil
        #expect(control.isAnswered(owner: owner, finger: matched, companion: touched) == answered, "\(index)")
        #expect(StoredAccessControl(serialized: control.serialized) == control)
    }

    /// (flags, keys, owner, finger, key touched, what is asked next).
    static let questions: [(UInt64, [CompanionKey], Bool, Bool, Data?, StoredAccessControl.Question?)] = [
        (companion, [keyA], false, false, nil, .companion),
        (companion, [], false, false, nil, nil),
        (companion, [keyA], false, false, keyB.publicKey, nil),
        (companion | or | 1 << 4, [keyA], false, false, nil, .owner),
        (companion | or | 1 << 1, [keyA], false, false, nil, .finger),
        (companion | and | 1 << 4, [keyA], false, false, nil, .owner),
        (companion | and | 1 << 4, [keyA], true, false, nil, .companion),
        (companion | and | 1 << 1, [keyA], false, false, nil, .finger),
        (companion | and | 1 << 1 | 1 << 4, [keyA], false, false, nil, .owner),
        (companion | and | 1 << 1 | 1 << 4, [keyA], true, true, nil, .companion),
    ]

    @Test(
        "what is asked next: the fewest questions that complete the item, the owner first, then a finger, then a key; nothing when no key was paired or the one touched is not the item's",
        arguments: questions.indices)
    func nextQuestion(index: Int) {
        let (flags, keys, owner, finger, touched, next) = Self.questions[index]
        let control = StoredAccessControl(flags: flags, protection: "ak", companions: keys)
        let matched = finger ? FingerAnswer.matched(state: Data("any finger".utf8)) : nil
        #expect(control.nextQuestion(owner: owner, finger: matched, companion: touched) == next, "\(index)")
    }

    @Test("the stored form: the first form still reads; truncated or unknown records are refused, randomly cut")
    func storedForm() {
        let legacy = StoredAccessControl(flags: 1 << 3, protection: "ak", biometryState: Self.state)
        #expect(legacy.serialized.count == 8 + 2 + 1 + 32)
        #expect(StoredAccessControl(serialized: legacy.serialized) == legacy)
        let bound = StoredAccessControl(
            flags: Self.companion | 1 << 3, protection: "cku", biometryState: Self.state,
            companions: [Self.keyA, Self.keyB])
        let bytes = bound.serialized
        #expect(StoredAccessControl(serialized: bytes) == bound)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            // A cut inside the records (after the protection and its mark) is refused.
            let cut = Int.random(in: (8 + 3 + 2)..<bytes.count, using: &generator)
            #expect(StoredAccessControl(serialized: bytes.prefix(cut)) == nil, "cut at \(cut)")
        }
        var unknown = bytes
        unknown[8 + 3 + 2] = 9
        #expect(StoredAccessControl(serialized: unknown) == nil)
        // A record too many, or one left out, is refused too (the count says how many).
        #expect(StoredAccessControl(serialized: bytes + Data([1, 0, 0])) == nil)
        var fewer = bytes
        fewer[8 + 3 + 1] -= 1
        #expect(StoredAccessControl(serialized: fewer) == nil)
        #expect(CompanionKey(serialized: Data([0, 1, 7]) + Self.point(1).dropFirst()) == nil)
        #expect(CompanionKey(serialized: Data([0, 0]) + Self.point(1)) == nil)
    }

    @Test(
        "in process: one touch reads the item, a key the item was not bound to is errSecAuthFailed, a key proof answers unasked",
        arguments: Backend.allCases)
    func engine(backend: Backend) throws {
        for (touched, proof, read, touches) in [
            (Self.keyA.publicKey, nil, true, 1), (Self.keyB.publicKey, nil, false, 1),
            (Self.keyB.publicKey, Data(repeating: 0xC0, count: 32), true, 0),
        ] as [(Data, Data?, Bool, Int)] {
            let verifier = KeyVerifier(
                touched: touched, proofs: [Data(repeating: 0xC0, count: 32): .companion(publicKey: Self.keyA.publicKey)]
            )
            var configuration = KeychainConfiguration.testing()
            configuration.userVerifier = verifier
            let temporary: TemporaryKeychain? =
                backend == .file ? try TemporaryKeychain(configuration: configuration) : nil
            let keychain = try temporary?.keychain ?? KeychainDatabase.inMemory(configuration: configuration)
            var guarded = genericPassword("guarded", data: "guarded secret")
            guarded.attributes[.accessControl] = .data(
                StoredAccessControl(flags: Self.companion, protection: "ak", companions: [Self.keyA]).serialized)
            _ = try keychain.add(guarded)
            var query = genericPasswordQuery(.allow)
            query.ownerProof = proof
            if read {
                #expect(try keychain.find(query, includeData: true).compactMap(\.data) == [Data("guarded secret".utf8)])
            } else {
                #expect(refusal { try keychain.find(query, includeData: true) }?.code == .authFailed)
            }
            #expect(verifier.touches.withLock { $0 } == touches)
        }
    }
}

/// A security key that answers every touch as the key whose public key is `touched`; it knows
/// `proofs`.
final class KeyVerifier: UserVerifier {
    let touched: Data
    let proofs: [Data: ProofAnswer]
    let touches = Mutex(0)
    init(touched: Data, proofs: [Data: ProofAnswer]) { (self.touched, self.proofs) = (touched, proofs) }

    func answer(to proof: Data) -> ProofAnswer? { proofs[proof] }
    func verifyUser() throws { throw KeychainError(.authFailed, "no owner here") }
    func verifyCompanion() throws -> Data {
        touches.withLock { $0 += 1 }
        return touched
    }
}

/// A Secure Enclave key whose access control asks for the person, as Apple's: finding it asks
/// nothing (the caller gets its public key and handle), each use asks.
@Suite("Token keys whose access control asks for the person")
struct TokenKeyAccessControlTests {
    static let digest = Data(SHA256.hash(data: Data("m".utf8)))

    /// A keychain in memory whose person is `verifier`, holding a token key labelled "guarded
    /// key", its access control `flags` and `privateKeyUsage`; the key's public key and handle.
    static func guardedKey(flags: UInt64, asking verifier: any UserVerifier) throws -> (
        KeychainDatabase, publicKey: Data, handle: Data
    ) {
        var configuration = KeychainConfiguration.testing()
        configuration.userVerifier = verifier
        let keychain = try KeychainDatabase.inMemory(configuration: configuration)
        var template = Item(class: .key, attributes: [.label: .string("guarded key")])
        template.attributes[.accessControl] = .data(
            StoredAccessControl(flags: flags | TokenKeys.privateKeyUsageFlag, protection: "aku").serialized)
        let (publicKey, handle) = try keychain.createTokenKey(storing: template)
        return (keychain, publicKey, handle)
    }

    /// (flags beside privateKeyUsage, what the verifier answers, asked per use, the use's error).
    static let uses: [(UInt64, KeychainError.Code?, Int, KeychainError.Code?)] = [
        (0, nil, 0, nil),  // privateKeyUsage alone asks nothing
        (1 << 0, nil, 1, nil),  // userPresence: the owner, each use
        (1 << 0, .userCanceled, 1, .userCanceled), (1 << 0, .authFailed, 1, .authFailed),
        (1 << 5, nil, 0, .interactionNotAllowed),  // companion, no key paired when it was made
    ]

    @Test(
        "finding the key asks nothing; each use asks what its access control asks, and the person's refusal is the use's",
        arguments: uses.indices)
    func useAsks(index: Int) throws {
        let (flags, answer, asked, failure) = Self.uses[index]
        let verifier = CountingVerifier()
        verifier.answer.withLock { $0 = answer }
        let (keychain, publicKey, handle) = try Self.guardedKey(flags: flags, asking: verifier)
        var lookup = ItemQuery(class: .key, attributes: [.label: .string("guarded key")])
        lookup.authenticationUI = .allow
        let found = try keychain.find(lookup, includeData: true)
        #expect(found.map(\.data) == [publicKey])
        #expect(verifier.asked == 0)
        for use in 1...2 {
            let request = TokenKeyRequest(.sign, input: Self.digest)
            if let failure {
                #expect(refusal { try keychain.useTokenKey(handle, request) }?.code == failure)
            } else {
                let signature = try keychain.useTokenKey(handle, request)
                let key = try P256.Signing.PublicKey(x963Representation: publicKey)
                #expect(
                    key.isValidSignature(
                        try P256.Signing.ECDSASignature(rawRepresentation: signature),
                        for: SHA256.hash(data: Data("m".utf8))))
            }
            #expect(verifier.asked == asked * use)
        }
    }
}

extension TokenKeyAccessControlTests {
    @Test(
        "a use offering a proof its maker knows is not asked; one offering a proof made up is",
        arguments: [true, false])
    func proofSparesTheUse(known: Bool) throws {
        let proof = Data(repeating: 0x0A, count: 32)
        let verifier = ProvingVerifier(state: Data(), proofs: [proof: .owner])
        let (keychain, _, handle) = try Self.guardedKey(flags: 1 << 0, asking: verifier)
        var request = TokenKeyRequest(.sign, input: Self.digest)
        request.ownerProof = known ? proof : Data(repeating: 7, count: 32)
        _ = try keychain.useTokenKey(handle, request)
        #expect(verifier.asked.withLock { $0 } == (known ? 0 : 1))
    }
}

extension TokenKeyAccessControlTests {
    @Test("copying a stored key that asks into a new item asks as a use does: a refusal copies nothing")
    func copyAsks() throws {
        let verifier = CountingVerifier()
        let (keychain, _, handle) = try Self.guardedKey(flags: 1 << 0, asking: verifier)
        verifier.answer.withLock { $0 = .userCanceled }
        let copy = Item(class: .key, attributes: [.label: .string("copy")])
        #expect(refusal { try keychain.storeTokenKey(handle, as: copy) }?.code == .userCanceled)
        #expect(verifier.asked == 1)
        let copies = ItemQuery(class: .key, attributes: [.label: .string("copy")])
        #expect(try keychain.find(copies, includeData: false).isEmpty)
    }
}
