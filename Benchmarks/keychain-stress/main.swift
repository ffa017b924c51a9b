// keychain-stress: the long adversarial suite of issue 6.
//
//   keychain-stress --quick | --long [--seed N] [--workers N] [--only a,b] [--verbose]
//   keychain-stress --list
//   keychain-stress worker <command> …     (the suite's own helper processes)
//
// Prints one Markdown table: attack, trials, figure required, figure measured, result.
// Exits 1 when a row fails or could not run.

import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "worker" {
    exit(runWorkerCommand(Array(arguments.dropFirst())))
}
exit(runStressCommandLine(arguments))
