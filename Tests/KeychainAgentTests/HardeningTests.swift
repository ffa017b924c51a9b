import Foundation
import KeychainAgent
import KeychainLibc
import Testing

@Suite("Process hardening and key memory")
struct HardeningTests {
    /// Starts a key holder and a reader, both as uid 65534 (root would bypass the check), and
    /// returns what the reader saw plus the holder's own report.
    func readSecret(hardened: Bool) throws -> (reader: String, holder: [String]) {
        let directory = try TemporaryDirectory()
        let worker = try directory.copyWorker(to: "worker")
        let holder = try Child.worker(["secret", hardened ? "harden" : "plain"], asNobody: true, executable: worker)
        let report = (holder.readLine() ?? "").split(separator: " ").map(String.init)
        try #require(report.count == 4, "holder said \(report)")
        let reader = try Child.worker(["readmem", report[0], report[1], "16"], asNobody: true, executable: worker)
        let seen = reader.readLine() ?? ""
        reader.finish()
        holder.finish()
        return (seen, report)
    }

    @Test("/proc/PID/mem of a hardened process is unreadable by another process of the same uid")
    func hardenedMemoryIsUnreadable() throws {
        let (seen, report) = try readSecret(hardened: true)
        #expect(report[2] == "0", "PR_GET_DUMPABLE reads back 0")
        #expect(report[3] == "0", "RLIMIT_CORE reads back 0")
        #expect(seen == "denied \(EACCES)", "reader saw: \(seen)")
    }

    @Test("the same read succeeds when the holder is not hardened (so the check above can fail)")
    func plainMemoryIsReadable() throws {
        let (seen, report) = try readSecret(hardened: false)
        #expect(report[2] == "1")
        #expect(seen == "ok " + String(repeating: "5a", count: 16), "reader saw: \(seen)")
    }

    @Test("a SecureBuffer is zeroed, page-backed, excluded from core dumps, wiped on fork and locked")
    func secureBufferMapping() throws {
        var buffer = try SecureBuffer(count: 100)
        let (count, excluded, locked, address) = (
            buffer.count, buffer.isExcludedFromCoreDumps, buffer.isLocked, buffer.address
        )
        let zeroed = buffer.withUnsafeBytes { $0.allSatisfy { $0 == 0 } }
        buffer.withUnsafeMutableBytes { $0.copyBytes(from: [1, 2, 3]) }
        let prefix = buffer.withUnsafeBytes { Array($0.prefix(3)) }
        #expect(count == 100 && zeroed && prefix == [1, 2, 3])
        #expect(excluded)
        #expect(locked, "mlock of one page succeeds under the default 8 MiB RLIMIT_MEMLOCK")
        // The kernel's own view of the mapping: VmFlags dd (no dump), lo (locked), wf (wipe on fork).
        // (Read inside an access scope: the buffer may be destroyed right after its last use.)
        let flags = try buffer.withUnsafeBytes { _ in try vmFlags(containing: address) }
        #expect(flags.contains("dd") && flags.contains("lo") && flags.contains("wf"), "VmFlags: \(flags)")
    }

    /// The VmFlags of the mapping that starts at `address`, from /proc/self/smaps.
    func vmFlags(containing address: UInt) throws -> [String] {
        // procfs reports size 0: read to the end rather than by the announced size.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let smaps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let start = UInt(line[..<dash], radix: 16),
                let space = line.firstIndex(of: " "),
                let end = UInt(line[line.index(after: dash)..<space], radix: 16)
            {
                inside = start <= address && address < end
                continue
            }
            if inside, line.hasPrefix("VmFlags:") {
                return line.dropFirst("VmFlags:".count).split(separator: " ").map(String.init)
            }
        }
        throw AgentError(.system, "no mapping at \(String(address, radix: 16))")
    }
}

/// A clock that moves only when told to.
final class ManualClock: Clock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    var now = Instant(offset: .zero)
    var minimumResolution: Duration { .nanoseconds(1) }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        Issue.record("the throttle must never sleep")
    }
    func advance(_ duration: Duration) { now = now.advanced(by: duration) }
}

@Suite("Failed-unlock back-off")
struct UnlockThrottleTests {
    @Test("no delay for 5 failures, then 1 s, 2 s, 4 s, 8 s … capped, per keychain")
    func exponentialBackOff() throws {
        let clock = ManualClock()
        var throttle = UnlockThrottle(clock: clock)
        let keychain = "/home/u/.local/share/keychains/login.keychain-db"
        for _ in 0..<5 {
            try throttle.checkAttempt(for: keychain)
            throttle.recordFailure(for: keychain)
        }
        #expect(throttle.remainingDelay(for: keychain) == .zero)
        var observed: [Duration] = []
        for _ in 0..<6 {
            try throttle.checkAttempt(for: keychain)
            throttle.recordFailure(for: keychain)
            let wait = throttle.remainingDelay(for: keychain)
            observed.append(wait)
            #expect(throws: AgentError.self) { try throttle.checkAttempt(for: keychain) }
            clock.advance(wait - .milliseconds(1))
            #expect(throws: AgentError.self) { try throttle.checkAttempt(for: keychain) }
            clock.advance(.milliseconds(1))
        }
        #expect(observed == [1, 2, 4, 8, 16, 32].map { Duration.seconds($0) })
        #expect(throttle.remainingDelay(for: "/other.keychain-db") == .zero, "other keychains are not slowed")
        #expect(throttle.delay(afterFailures: 40) == .seconds(300), "capped at 5 minutes")
        throttle.recordSuccess(for: keychain)
        #expect(throttle.failures(for: keychain) == 0)
        throttle.recordFailure(for: keychain)
        #expect(throttle.remainingDelay(for: keychain) == .zero, "a success starts the count again")
    }

    @Test("a throttled attempt maps to errSecInteractionNotAllowed and names no secret")
    func throttledError() {
        let clock = ManualClock()
        var throttle = UnlockThrottle(freeFailures: 0, clock: clock)
        throttle.recordFailure(for: "k")
        #expect {
            try throttle.checkAttempt(for: "k")
        } throws: { error in
            let agentError = error as? AgentError
            return agentError?.code == .throttled && agentError?.osStatus == -25308
        }
    }
}
