import Foundation

/// The `keychain-bench` command: parses the command line, runs, prints the table or JSON.
enum KeychainBench {
    /// Runs the command and returns its exit status.
    static func main(_ arguments: [String]) -> Int32 {
        let command: BenchmarkOptions.Command
        do {
            command = try BenchmarkOptions.parse(arguments)
        } catch {
            printError("keychain-bench: \(error)\n\n\(BenchmarkOptions.usage)")
            return 2
        }
        do {
            switch command {
            case .help:
                print(BenchmarkOptions.usage)
            case .noop:
                break
            case .echo:
                return SocketEcho.serve()
            case .memoryProbe(let request):
                let probe = try MemoryProbe.measure(request)
                print(String(decoding: try JSONEncoder().encode(probe), as: UTF8.self))
            case .profile(var options, let operation, let against):
                options.probeExecutable = ChildProcess.currentExecutable
                let runner = BenchmarkRunner(options: options)
                let names = [operation] + (against.map { [$0] } ?? [])
                let results = try runner.profile(names)
                for (name, result) in zip(names, results) {
                    let summary = result.wall
                    print(
                        "\(name): median \(Format.duration(summary.medianMicroseconds)), "
                            + "p99 \(Format.duration(summary.p99Microseconds)), "
                            + "mean \(Format.duration(summary.meanMicroseconds)), "
                            + "on CPU median \(Format.duration(result.cpu.medianMicroseconds)), "
                            + "\(summary.count) iterations")
                }
                if results.count == 2 {
                    func ratio(_ median: (ProfileResult) -> Double) -> String {
                        String(format: "%.2f", median(results[0]) / median(results[1]))
                    }
                    print(
                        "\(operation) ÷ \(names[1]): \(ratio { $0.wall.medianMicroseconds })× "
                            + "(medians, alternating every iteration); on CPU \(ratio { $0.cpu.medianMicroseconds })×")
                }
            case .run(var options):
                options.probeExecutable = ChildProcess.currentExecutable
                let report = try BenchmarkRunner(options: options).run()
                print(options.json ? try json(report) : TableRenderer.render(report))
            }
            return 0
        } catch {
            printError("keychain-bench: \(error)")
            return 1
        }
    }

    static func json(_ report: BenchmarkReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
