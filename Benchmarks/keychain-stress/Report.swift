import Foundation

/// How hard the suite attacks: `quick` is what `swift test` runs, `long` the full figures.
package enum StressMode: String, Sendable {
    case quick
    case long

    /// Picks the quick or the long value.
    package func pick<T>(quick: T, long: T) -> T { self == .quick ? quick : long }
}

/// Whether a row met its figure.
package enum Verdict: String, Sendable {
    case pass = "pass"
    case fail = "FAIL"
    /// The attack could not run here (a missing binary or tool); never counted as a pass.
    case notRun = "not run"
}

/// One line of the results table: an attack, how many trials, the figure it must reach and
/// the figure it reached.
package struct StressRow: Sendable, CustomStringConvertible {
    package var group: String
    package var attack: String
    package var trials: Int
    package var required: String
    package var measured: String
    package var verdict: Verdict
    /// Details for a failure: the first counter-examples, with seeds to reproduce them.
    package var evidence: [String]

    package init(
        group: String, attack: String, trials: Int, required: String, measured: String, passed: Bool,
        evidence: [String] = []
    ) {
        self.group = group
        self.attack = attack
        self.trials = trials
        self.required = required
        self.measured = measured
        self.verdict = passed ? .pass : .fail
        self.evidence = evidence
    }

    /// A row for an attack that could not run, saying why.
    package static func notRun(group: String, attack: String, required: String, reason: String) -> StressRow {
        var row = StressRow(
            group: group, attack: attack, trials: 0, required: required, measured: reason, passed: false)
        row.verdict = .notRun
        return row
    }

    package var passed: Bool { verdict == .pass }

    package var description: String {
        "[\(verdict.rawValue)] \(group) / \(attack): \(trials) trials; required \(required); measured \(measured)"
            + (evidence.isEmpty ? "" : "\n    " + evidence.prefix(5).joined(separator: "\n    "))
    }
}

/// Renders rows as one Markdown table.
package func renderTable(_ rows: [StressRow], mode: StressMode, seconds: Double) -> String {
    func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
    var lines = [
        "| Attack | Trials | Figure required | Figure measured | Result |",
        "|---|---:|---|---|---|",
    ]
    for row in rows {
        let trials = row.trials.formatted(.number.grouping(.automatic))
        lines.append(
            "| \(cell(row.group)): \(cell(row.attack)) | \(trials) | \(cell(row.required)) | \(cell(row.measured)) | \(row.verdict.rawValue) |"
        )
    }
    let failed = rows.filter { $0.verdict == .fail }.count
    let notRun = rows.filter { $0.verdict == .notRun }.count
    lines.append("")
    lines.append(
        "keychain-stress --\(mode.rawValue): \(rows.count) rows, \(rows.count - failed - notRun) passed, "
            + "\(failed) failed, \(notRun) not run, \(String(format: "%.0f", seconds)) s")
    return lines.joined(separator: "\n")
}

/// Counts outcomes by name, keeping the first few examples of each.
struct Tally: Sendable {
    private(set) var counts: [String: Int] = [:]
    private(set) var examples: [String: [String]] = [:]

    mutating func add(_ outcome: String, example: @autoclosure () -> String? = nil) {
        counts[outcome, default: 0] += 1
        if (examples[outcome]?.count ?? 0) < 3, let example = example() {
            examples[outcome, default: []].append(example)
        }
    }

    subscript(_ outcome: String) -> Int { counts[outcome, default: 0] }

    var total: Int { counts.values.reduce(0, +) }

    func evidence(for outcomes: [String]) -> [String] {
        outcomes.flatMap { outcome in (examples[outcome] ?? []).map { "\(outcome): \($0)" } }
    }

    /// "name n, name n" for the outcomes that occurred, in the order given, then the others.
    func summary(order: [String] = []) -> String {
        let rest = counts.keys.filter { !order.contains($0) }.sorted()
        return (order + rest).compactMap { name in counts[name].map { "\(name) \($0)" } }.joined(separator: ", ")
    }
}
