import Foundation
import KeychainLibc

/// The monotonic clock, in nanoseconds (`clock_gettime(CLOCK_MONOTONIC)`, a vDSO call), and
/// the process's CPU clock.
enum Clock {
    @inline(__always)
    static func now() -> UInt64 { read(CLOCK_MONOTONIC) }

    /// Runs `body` and returns how long it took, in nanoseconds.
    @inline(__always)
    static func time(_ body: () throws -> Void) rethrows -> UInt64 {
        let start = now()
        try body()
        return now() - start
    }

    /// The CPU time this process has used so far (every thread, in user space and in the
    /// kernel), in nanoseconds.
    @inline(__always)
    static func processCPU() -> UInt64 { read(CLOCK_PROCESS_CPUTIME_ID) }

    @inline(__always)
    private static func read(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Runs `body` and returns how long it took and how much CPU time the process used
    /// meanwhile, in nanoseconds: the difference is time spent waiting (for the disk, a lock,
    /// another process).
    @inline(__always)
    static func timeAndCPU(_ body: () throws -> Void) rethrows -> (wall: UInt64, cpu: UInt64) {
        let cpu = processCPU()
        let wall = try time(body)
        return (wall, processCPU() - cpu)
    }
}

/// The wall-clock and CPU durations of one operation's iterations, in nanoseconds.
struct Timings {
    var wall: [UInt64] = []
    var cpu: [UInt64] = []

    mutating func reserveCapacity(_ count: Int) {
        wall.reserveCapacity(count)
        cpu.reserveCapacity(count)
    }

    mutating func append(_ sample: (wall: UInt64, cpu: UInt64)) {
        wall.append(sample.wall)
        cpu.append(sample.cpu)
    }
}

/// What `--profile` reports of one operation: its wall-clock times and the CPU time the
/// process used during each iteration.
struct ProfileResult {
    var wall: Summary
    var cpu: Summary

    init(_ timings: Timings) {
        wall = Summary(nanoseconds: timings.wall)
        cpu = Summary(nanoseconds: timings.cpu)
    }
}

/// The distribution of one operation's durations.
///
/// Durations are in microseconds. The median is the mean of the two middle samples; the
/// 99th percentile is the nearest-rank value (with 1,000 samples, the 10th largest).
struct Summary: Codable, Sendable, Equatable {
    var count: Int
    var medianMicroseconds: Double
    var p99Microseconds: Double
    var minimumMicroseconds: Double
    var meanMicroseconds: Double

    init(nanoseconds samples: [UInt64]) {
        precondition(!samples.isEmpty, "a summary needs samples")
        let sorted = samples.sorted()
        let n = sorted.count
        func micro(_ value: UInt64) -> Double { Double(value) / 1_000 }
        count = n
        medianMicroseconds =
            n % 2 == 1 ? micro(sorted[n / 2]) : (micro(sorted[n / 2 - 1]) + micro(sorted[n / 2])) / 2
        let rank = Int((0.99 * Double(n)).rounded(.up))
        p99Microseconds = micro(sorted[max(0, min(n, rank) - 1)])
        minimumMicroseconds = micro(sorted[0])
        meanMicroseconds = sorted.reduce(0.0) { $0 + micro($1) } / Double(n)
    }

    /// A summary of one measurement.
    init(singleMicroseconds value: Double) {
        count = 1
        medianMicroseconds = value
        p99Microseconds = value
        minimumMicroseconds = value
        meanMicroseconds = value
    }
}

/// One measured operation: a name and a body that performs iteration `i`.
///
/// Bodies get a distinct index for every call (warm-up iterations included), so an
/// operation that adds item `i` and one that deletes item `i` can be paired.
struct BenchmarkOperation {
    var name: String
    var body: (Int) throws -> Void
}

/// Runs operations interleaved, in rounds of `chunk` iterations each, so that the load
/// other processes put on the machine weighs on every operation, and on the floor measured
/// alongside, alike.
///
/// Within a round the operations run in the order given: an operation that consumes what
/// another produced (delete after add) must come after it.
enum InterleavedRunner {
    static func run(
        _ operations: [BenchmarkOperation], warmup: Int, iterations: Int, chunk: Int = 25
    ) throws -> [String: [UInt64]] {
        precondition(iterations > 0 && chunk > 0)
        for operation in operations {
            for index in 0..<warmup { try operation.body(index) }
        }
        var samples: [String: [UInt64]] = [:]
        for operation in operations { samples[operation.name] = [] }
        for start in stride(from: warmup, to: warmup + iterations, by: chunk) {
            let end = min(start + chunk, warmup + iterations)
            for operation in operations {
                var chunkSamples: [UInt64] = []
                chunkSamples.reserveCapacity(end - start)
                for index in start..<end {
                    chunkSamples.append(try Clock.time { try operation.body(index) })
                }
                samples[operation.name, default: []] += chunkSamples
            }
        }
        return samples
    }
}

/// A failure that stops the benchmark: a wrong result is never recorded as a timing.
struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
