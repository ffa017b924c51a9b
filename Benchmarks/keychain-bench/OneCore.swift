import CKeychainAgent
import Foundation

/// Runs work with the calling thread held on the one CPU it is running on, as `taskset -c N`
/// would hold a process: a child started meanwhile (a `keychaind`) inherits that one CPU, so the
/// two take turns on it and wake each other without waking another core. On a virtual machine
/// that halts an idle vCPU, a wake-up on the other core costs tens of microseconds; a lookup
/// through the agent measured both ways shows what the agent costs apart from that.
enum OneCore {
    /// Calls `body` with this thread limited to the CPU it is on, then restores its CPU set.
    /// - Throws: ``BenchmarkFailure`` when the CPU set cannot be read or changed; what `body` throws.
    static func run<T>(_ body: (_ cpu: Int32) throws -> T) throws -> T {
        let size = ck_affinity_size()
        let saved = try cpuSet()
        let cpu = ck_current_cpu()
        guard cpu >= 0, Int(cpu) < size * 8 else { throw BenchmarkFailure("sched_getcpu failed: errno \(errno)") }
        var one = [UInt8](repeating: 0, count: size)
        one[Int(cpu) / 8] = UInt8(1) << UInt8(cpu % 8)
        guard ck_set_affinity(one, size) == 0 else {
            throw BenchmarkFailure("sched_setaffinity to CPU \(cpu) failed: errno \(errno)")
        }
        defer { _ = ck_set_affinity(saved, size) }
        return try body(cpu)
    }

    /// The calling thread's CPU set: a `cpu_set_t`'s bytes, bit `n` for CPU `n`.
    /// - Throws: ``BenchmarkFailure`` when it cannot be read.
    static func cpuSet() throws -> [UInt8] {
        let size = ck_affinity_size()
        var set = [UInt8](repeating: 0, count: size)
        guard ck_get_affinity(&set, size) == 0 else {
            throw BenchmarkFailure("sched_getaffinity failed: errno \(errno)")
        }
        return set
    }
}
