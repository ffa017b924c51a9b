import Foundation
import KeychainLibc

/// The result of one trial run in a worker process.
struct TrialLine {
    var index: Int
    var outcome: String
    var detail: String
}

/// Runs trials in worker processes, so that a crash ends one trial and not the run.
///
/// The worker is started as `keychain-stress worker <command…> <from> <count>`; it prints
/// `B <i>` before trial i and `R <i>\t<outcome>\t<detail>` after it. When the worker dies
/// (a signal, a trap) in the middle of a trial, that trial is recorded as a crash and a new
/// worker resumes after it; when it prints nothing for `stall` seconds it is killed and the
/// trial recorded as a hang.
func runTrials(
    _ command: [String], total: Int, batch: Int = 500, workers: Int = 1, stall: Double = 60, scratch: Scratch,
    environment: [String: String]? = nil
) -> (lines: [TrialLine], crashes: [TrialLine]) {
    let results = Mutex<([TrialLine], [TrialLine])>(([], []))
    let next = Mutex(0)
    DispatchQueue.concurrentPerform(iterations: max(1, workers)) { _ in
        while true {
            let from: Int = next.withLock { value in
                defer { value += batch }
                return value
            }
            guard from < total else { return }
            var start = from
            let end = min(total, from + batch)
            while start < end {
                let (lines, failure) = runBatch(
                    command, from: start, count: end - start, stall: stall, scratch: scratch, environment: environment)
                results.withLock { $0.0 += lines }
                guard let failure else { break }
                results.withLock { $0.1.append(failure) }
                start = failure.index + 1
            }
        }
    }
    return results.withLock { ($0.0.sorted { $0.index < $1.index }, $0.1) }
}

private func runBatch(
    _ command: [String], from: Int, count: Int, stall: Double, scratch: Scratch, environment: [String: String]?
) -> ([TrialLine], TrialLine?) {
    var lines: [TrialLine] = []
    let child: LineChild
    do {
        child = try LineChild(command + [String(from), String(count)], scratch: scratch, environment: environment)
    } catch {
        return ([], TrialLine(index: from, outcome: "CRASH", detail: "cannot start the worker: \(error)"))
    }
    let lastActivity = Mutex(monotonicSeconds())
    let finished = Mutex(false)
    let stalled = Mutex(false)
    Thread.detachNewThread {
        while !finished.withLock({ $0 }) {
            usleep(100_000)
            if monotonicSeconds() - lastActivity.withLock({ $0 }) > stall {
                stalled.withLock { $0 = true }
                _ = kill(child.pid, SIGKILL)
                return
            }
        }
    }
    var current: Int?
    while let line = child.readLine() {
        lastActivity.withLock { $0 = monotonicSeconds() }
        if line.hasPrefix("B ") {
            current = Int(line.dropFirst(2))
        } else if line.hasPrefix("R ") {
            let fields = line.dropFirst(2).split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            guard let index = fields.first.flatMap({ Int($0) }) else { continue }
            lines.append(
                TrialLine(
                    index: index, outcome: fields.count > 1 ? String(fields[1]) : "?",
                    detail: fields.count > 2 ? String(fields[2]) : ""))
            current = nil
        }
    }
    let (status, signaled, errors) = child.finish()
    finished.withLock { $0 = true }
    if let current {
        let hung = stalled.withLock { $0 }
        let why =
            hung
            ? "no progress for \(Int(stall)) s"
            : "worker ended by \(signaled ? "signal" : "exit status") \(status): \(crashSummary(errors))"
        return (lines, TrialLine(index: current, outcome: hung ? "HANG" : "CRASH", detail: why))
    }
    if status != 0 || signaled {
        let index = (lines.last?.index ?? from - 1) + 1
        if index < from + count {
            return (
                lines,
                TrialLine(index: index, outcome: "CRASH", detail: "worker failed (\(status)): \(crashSummary(errors))")
            )
        }
    }
    return (lines, nil)
}

/// The worker side: runs trials `from..<from+count`, printing the protocol lines.
func serveTrials(from: Int, count: Int, _ body: (Int) -> (String, String)) {
    for index in from..<from + count {
        emit("B \(index)")
        let (outcome, detail) = body(index)
        let clean = detail.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: "\t", with: " ")
        emit("R \(index)\t\(outcome)\t\(clean)")
    }
}

/// The lines of a crashed process's standard error that say why, and the first frames of the
/// crashed thread, without the addresses of every loaded library.
func crashSummary(_ errors: String) -> String {
    let lines = errors.split(separator: "\n").map(String.init)
    var picked: [String] = []
    for line in lines
    where line.contains("Fatal error") || line.contains("fatal error") || line.contains("Crash")
        || line.contains("error:")
        || (line.hasPrefix("0 ") || line.hasPrefix("1 ") || line.hasPrefix("2 ") || line.hasPrefix("3 ")
            || line.hasPrefix("4 ") || line.hasPrefix("5 ") || line.hasPrefix("6 "))
    {
        picked.append(line.trimmingCharacters(in: .whitespaces))
        if picked.count >= 8 { break }
    }
    return picked.isEmpty ? String(errors.suffix(300)) : picked.joined(separator: " | ")
}
