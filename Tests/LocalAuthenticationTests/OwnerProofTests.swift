import Foundation
import Testing
import UserPresence

/// The proofs an evaluated `LAContext` carries: good for the process they were made for, until
/// they expire, and nowhere else.
@Suite("Owner proofs")
struct OwnerProofTests {
    let subject = ProcessSubject(pid: 4242, startTime: 987_654, uid: 1000)

    @Test("a proof is accepted for its own process only: another pid, start time (a reused pid) or user is refused")
    func boundToItsProcess() {
        let proofs = OwnerProofs()
        let proof = proofs.make(for: subject, lifetime: .seconds(60))
        #expect(proof.count == 32)
        #expect(proofs.answer(to: proof, for: subject) == .owner)
        for other in [
            ProcessSubject(pid: 4243, startTime: 987_654, uid: 1000),
            ProcessSubject(pid: 4242, startTime: 987_655, uid: 1000),
            ProcessSubject(pid: 4242, startTime: 987_654, uid: 1001),
        ] {
            #expect(proofs.answer(to: proof, for: other) == nil, "\(other)")
        }
        // Made elsewhere, or made up: refused.
        #expect(OwnerProofs().answer(to: proof, for: subject) == nil)
        var forged = proof
        forged[0] ^= 1
        #expect(proofs.answer(to: forged, for: subject) == nil)
        #expect(proofs.answer(to: Data(), for: subject) == nil)
    }

    @Test("a proof answers what the person answered with: the password, or a finger in the reader's state then")
    func answers() {
        let proofs = OwnerProofs()
        let state = Data(repeating: 3, count: 32)
        let finger = proofs.make(for: subject, answer: .finger(state: state), lifetime: .seconds(60))
        let password = proofs.make(for: subject, lifetime: .seconds(60))
        #expect(proofs.answer(to: finger, for: subject) == .finger(state: state))
        #expect(proofs.answer(to: password, for: subject) == .owner)
        #expect(proofs.answer(to: finger, for: ProcessSubject(pid: 1, startTime: 987_654, uid: 1000)) == nil)
    }

    @Test("an expired proof is refused; every proof is new")
    func expiry() {
        let proofs = OwnerProofs()
        let expired = proofs.make(for: subject, lifetime: .zero)
        #expect(proofs.answer(to: expired, for: subject) == nil)
        let made = Set((0..<100).map { _ in proofs.make(for: subject, lifetime: .seconds(60)) })
        #expect(made.count == 100)
    }

    @Test("at most 256 are kept: the one closest to expiring goes first")
    func bounded() {
        let proofs = OwnerProofs()
        let first = proofs.make(for: subject, lifetime: .seconds(10))
        let rest = (0..<256).map { _ in proofs.make(for: subject, lifetime: .seconds(60)) }
        #expect(proofs.answer(to: first, for: subject) == nil)
        #expect(rest.allSatisfy { proofs.answer(to: $0, for: subject) == .owner })
    }
}
