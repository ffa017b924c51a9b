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
        #expect(proofs.accepts(proof, for: subject))
        for other in [
            ProcessSubject(pid: 4243, startTime: 987_654, uid: 1000),
            ProcessSubject(pid: 4242, startTime: 987_655, uid: 1000),
            ProcessSubject(pid: 4242, startTime: 987_654, uid: 1001),
        ] {
            #expect(!proofs.accepts(proof, for: other), "\(other)")
        }
        // Made elsewhere, or made up: refused.
        #expect(!OwnerProofs().accepts(proof, for: subject))
        var forged = proof
        forged[0] ^= 1
        #expect(!proofs.accepts(forged, for: subject))
        #expect(!proofs.accepts(Data(), for: subject))
    }

    @Test("an expired proof is refused; every proof is new")
    func expiry() {
        let proofs = OwnerProofs()
        let expired = proofs.make(for: subject, lifetime: .zero)
        #expect(!proofs.accepts(expired, for: subject))
        let made = Set((0..<100).map { _ in proofs.make(for: subject, lifetime: .seconds(60)) })
        #expect(made.count == 100)
    }

    @Test("at most 256 are kept: the one closest to expiring goes first")
    func bounded() {
        let proofs = OwnerProofs()
        let first = proofs.make(for: subject, lifetime: .seconds(10))
        let rest = (0..<256).map { _ in proofs.make(for: subject, lifetime: .seconds(60)) }
        #expect(!proofs.accepts(first, for: subject))
        #expect(rest.allSatisfy { proofs.accepts($0, for: subject) })
    }
}
