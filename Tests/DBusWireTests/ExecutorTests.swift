import DBusWire
import Foundation
import Synchronization
import Testing

@Suite("Where a server's method handlers run")
struct ExecutorTests {
    /// Every thread of Swift's global pool is held by synchronous code that waits for the
    /// server's reply (as a test runner's synchronous tests, or a program's blocking calls, can
    /// hold them): the server must still answer, because its handlers run on its event loop.
    /// With handlers on the global pool, no thread is left to run them and every waiter gives up.
    @Test("a call is answered while every thread of Swift's global pool is blocked")
    func answersWhileThePoolIsBlocked() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.server.close() } }
        let width = ProcessInfo.processInfo.activeProcessorCount
        let started = StartedCount()
        let answered = DispatchSemaphore(value: 0)
        let gdbus = try Tools.require("/usr/bin/gdbus")
        let address = server.address

        // The caller runs on a thread of its own once all the blockers hold their threads.
        let caller = Thread {
            let deadline = Date().addingTimeInterval(30)
            while started.value.load(ordering: .acquiring) < width && Date() < deadline { usleep(1_000) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: gdbus)
            process.arguments = [
                "call", "--address", address, "-d", "org.example.Test", "-o", TestObjects.path, "-m",
                "\(TestObjects.interface).Add", "2", "40",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            if (try? process.run()) != nil {
                process.waitUntilExit()
                if process.terminationStatus == 0 {
                    for _ in 0..<width { answered.signal() }
                }
            }
        }
        caller.start()

        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<width {
                group.addTask {
                    started.value.add(1, ordering: .releasing)
                    // Blocks this pool thread until the reply came (or, failing, for 90 s). Long,
                    // because another test may hold a pool thread so that the blockers run one
                    // after another: the caller then starts after its 30 s wait, and the first
                    // blocker must still be waiting when the reply comes.
                    return answered.wait(timeout: .now() + 90) == .success
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes == Array(repeating: true, count: width), "every blocked thread saw the reply")
    }
}

/// How many blockers hold a pool thread.
private final class StartedCount: Sendable {
    let value = Atomic<Int>(0)
}
