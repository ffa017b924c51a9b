import Synchronization

/// At most one open question to the person for each asker: a call that needs the same answer
/// while one is being asked waits for it and shares its outcome, rather than stacking a second
/// dialog (a program reading three guarded items at once gets one polkit question, not three).
/// Once answered, the next call asks again.
final class SharedQuestions<Asker: Hashable & Sendable, Answer: Sendable>: Sendable {
    private let open = Mutex<[Asker: Task<Answer, any Error>]>([:])
    private let waiting = Atomic<Int>(0)

    /// Runs `question` for `asker`, or waits for the one already open for it.
    /// - Returns: Its answer, to every call that shared it.
    /// - Throws: What the question threw, to every call that shared it.
    func ask(_ asker: Asker, _ question: @escaping @Sendable () async throws -> Answer) async throws -> Answer {
        let task = open.withLock { open in
            if let asked = open[asker] { return asked }
            let task = Task { try await question() }
            open[asker] = task
            return task
        }
        waiting.add(1, ordering: .relaxed)
        defer {
            waiting.subtract(1, ordering: .relaxed)
            open.withLock { if $0[asker] == task { $0[asker] = nil } }
        }
        return try await task.value
    }

    /// How many questions are open (for tests).
    var count: Int { open.withLock { $0.count } }

    /// How many calls wait for an answer (for tests).
    var waitingCalls: Int { waiting.load(ordering: .relaxed) }
}
