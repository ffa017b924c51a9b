import Foundation

/// Parses the command line and runs the suite; returns the exit status.
func runStressCommandLine(_ arguments: [String]) -> Int32 {
    var mode: StressMode?
    var seed: UInt64 = 20_261_122
    var workers = 1
    var only: [String]?
    var verbose = false
    var index = 0
    func value() -> String? {
        index += 1
        return index < arguments.count ? arguments[index] : nil
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--quick": mode = .quick
        case "--long": mode = .long
        case "--seed": seed = value().flatMap { UInt64($0) } ?? seed
        case "--workers": workers = value().flatMap { Int($0) } ?? workers
        case "--only": only = value()?.split(separator: ",").map(String.init)
        case "--verbose", "-v": verbose = true
        case "--list":
            print(StressSuite.names.joined(separator: "\n"))
            return 0
        default:
            FileHandle.standardError.write(
                Data(
                    """
                    usage: keychain-stress --quick | --long [--seed N] [--workers N] [--only a,b] [--verbose]
                           keychain-stress --list

                    """.utf8))
            return 2
        }
        index += 1
    }
    guard let mode else {
        FileHandle.standardError.write(Data("keychain-stress: say --quick or --long\n".utf8))
        return 2
    }
    let context = StressContext(mode: mode, seed: seed, workers: workers, verbose: verbose)
    let started = monotonicSeconds()
    var rows: [StressRow] = []
    for name in only ?? StressSuite.names {
        context.log("running \(name)")
        let result = StressSuite.run(name, context: context)
        for row in result where !row.passed { context.log(row.description) }
        rows += result
    }
    print(renderTable(rows, mode: mode, seconds: monotonicSeconds() - started))
    let failures = rows.filter { !$0.passed }
    if !failures.isEmpty {
        print("\nDetails of rows that did not pass:")
        for row in failures { print(row.description) }
    }
    return failures.isEmpty ? 0 : 1
}
