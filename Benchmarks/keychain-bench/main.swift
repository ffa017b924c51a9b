import Foundation

// keychain-bench: see BenchmarkRunner.swift for what is measured and BenchmarkOptions.usage
// for the command line.
exit(KeychainBench.main(Array(CommandLine.arguments.dropFirst())))
