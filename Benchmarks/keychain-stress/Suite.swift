import Foundation

/// What every attack is given: the mode, the seed that reproduces the run, and a logger.
package struct StressContext: Sendable {
    package var mode: StressMode
    package var seed: UInt64
    /// How many worker processes run trials at once.
    package var workers: Int
    /// Whether to print progress on standard error.
    package var verbose: Bool

    package init(mode: StressMode, seed: UInt64 = 20_261_122, workers: Int = 1, verbose: Bool = false) {
        self.mode = mode
        self.seed = seed
        self.workers = workers
        self.verbose = verbose
    }

    func log(_ text: String) {
        if verbose { progress(text) }
    }
}

/// The adversarial suite: each attack returns one or more rows of the results table.
package enum StressSuite {
    /// A named group of attacks.
    package struct Attack: Sendable {
        package let name: String
        let run: @Sendable (StressContext) throws -> [StressRow]
    }

    /// Every attack, in the order of the issue.
    package static let attacks: [Attack] = [
        Attack(name: "tampering", run: tamperAttacks),
        Attack(name: "foreign-files", run: foreignFileAttacks),
        Attack(name: "kdf", run: keyDerivationAttacks),
        Attack(name: "leakage", run: leakageAttacks),
        Attack(name: "cli", run: commandLineAttacks),
        Attack(name: "crashes", run: crashAttacks),
        Attack(name: "password-change", run: passwordChangeCrashAttacks),
        Attack(name: "concurrency", run: concurrencyAttacks),
        Attack(name: "lock-during-reads", run: lockDuringReadsAttack),
        Attack(name: "fuzz", run: fuzzAttacks),
        Attack(name: "oversized", run: oversizedInputAttacks),
        Attack(name: "passwords", run: passwordAttacks),
        Attack(name: "file-system", run: fileSystemAttacks),
        Attack(name: "known-answers", run: knownAnswerAttacks),
    ]

    package static var names: [String] { attacks.map(\.name) }

    /// Runs one attack; an attack that cannot even set up gives a failing row, never a crash.
    package static func run(_ name: String, context: StressContext) -> [StressRow] {
        guard let attack = attacks.first(where: { $0.name == name }) else {
            return [
                StressRow(
                    group: name, attack: "unknown attack", trials: 0, required: "-", measured: "-", passed: false)
            ]
        }
        let started = monotonicSeconds()
        defer { context.log("\(name) done in \(String(format: "%.1f", monotonicSeconds() - started)) s") }
        do {
            return try attack.run(context)
        } catch {
            return [
                StressRow(
                    group: name, attack: "setup", trials: 0, required: "the attack runs",
                    measured: "setup failed: \(error)", passed: false)
            ]
        }
    }
}
