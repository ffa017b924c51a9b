import Foundation
@testable import KeychainAgent
import Synchronization
import Testing

/// keychaind asks the person at most one question for each process at a time (polkit for items
/// that ask for their owner, pinentry for an access list): its other calls share the answer.
@Suite("One open question for each asker")
struct SharedQuestionsTests {
    /// Holds every question until it is opened.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.open { return true }
                    state.waiting.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }

        func open() {
            let waiting = state.withLock { state in
                state.open = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    struct Refused: Error {}

    /// The askers whose questions were asked, in order.
    final class Asked: Sendable {
        let list = Mutex<[Int]>([])
        var count: Int { list.withLock { $0.count } }
    }

    /// Waits (a bounded number of turns) until `condition` holds.
    func eventually(_ condition: () -> Bool) async {
        for _ in 0..<10_000 where !condition() { try? await Task.sleep(for: .milliseconds(1)) }
    }

    /// A question for `asker` that records it was asked, waits for `gate`, and answers how many
    /// questions had been asked by then.
    static func question(_ asker: Int, _ asked: Asked, _ gate: Gate) -> @Sendable () async throws -> Int {
        {
            let number = asked.list.withLock { asked in
                asked.append(asker)
                return asked.count
            }
            await gate.wait()
            return number
        }
    }

    @Test(
        "calls for one asker while its question is open share the answer; another asker is asked its own; the next call asks again"
    )
    func callsShareTheOpenQuestion() async throws {
        let questions = SharedQuestions<Int, Int>()
        let asked = Asked()
        let gate = Gate()
        let first = Task { try await questions.ask(1, Self.question(1, asked, gate)) }
        await eventually { asked.count == 1 }
        let second = Task { try await questions.ask(1, Self.question(1, asked, gate)) }
        let third = Task { try await questions.ask(1, Self.question(1, asked, gate)) }
        let other = Task { try await questions.ask(2, Self.question(2, asked, gate)) }
        await eventually { asked.count == 2 && questions.waitingCalls == 4 }
        #expect(questions.count == 2 && questions.waitingCalls == 4)
        gate.open()
        let answers = [try await first.value, try await second.value, try await third.value]
        #expect(Set(answers).count == 1, "the three calls of asker 1 shared one answer: \(answers)")
        _ = try await other.value
        #expect(asked.list.withLock { $0.sorted() } == [1, 2], "one question for each asker")
        #expect(questions.count == 0)
        _ = try await questions.ask(1, Self.question(1, asked, gate))
        #expect(asked.count == 3, "once answered, the next call asks again")
    }

    @Test("a refusal reaches every call that shared the question")
    func refusalIsShared() async throws {
        let questions = SharedQuestions<Int, Void>()
        let gate = Gate()
        let asked = Mutex(0)
        let question: @Sendable () async throws -> Void = {
            asked.withLock { $0 += 1 }
            await gate.wait()
            throw Refused()
        }
        let first = Task { try await questions.ask(7, question) }
        await eventually { asked.withLock { $0 } == 1 }
        let second = Task { try await questions.ask(7, question) }
        await eventually { questions.waitingCalls == 2 }
        gate.open()
        await #expect(throws: Refused.self) { try await first.value }
        await #expect(throws: Refused.self) { try await second.value }
        #expect(asked.withLock { $0 } == 1)
    }
}
