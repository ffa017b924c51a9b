import Foundation

/// The command line of `keychain-bench`.
///
/// ```
/// keychain-bench [--sizes 1000,10000,100000] [--iterations N] [--json] [--quick]
///                [--test-kdf] [--directory PATH] [--security PATH] [--script-sizes A,B]
/// ```
struct BenchmarkOptions: Sendable {
    /// Keychain sizes, in items.
    var sizes = [1_000, 10_000, 100_000]
    /// Timed iterations of every operation, at every size.
    var iterations = 1_000
    /// Untimed iterations run first.
    var warmup: Int { max(3, min(50, iterations / 20)) }
    /// Print JSON instead of the table.
    var json = false
    /// Use the cheap test key derivation where the real one would be timed (for smoke tests).
    var testKeyDerivation = false
    /// Where to create the scratch directory (default: the system temporary directory).
    var directory: String?
    /// The `security` executable (default: next to this executable).
    var securityTool: String?
    /// How many times to open a keychain, spawn a process, change a password cheaply.
    var openRepetitions = 20
    var processRepetitions = 30
    /// Rounds of the lookup processes against their floor and `secret-tool` (their ratios are
    /// targets, and a median of 30 process times moved by 0.1× between two sizes of one run).
    var lookupProcessRounds = 100
    /// How many times to run an operation that includes the real key derivation.
    var keyDerivationRepetitions = 3
    /// The size at which the password change and the `security` round trips are timed.
    var referenceSize = 10_000
    /// The sizes of the keychains filled by separate `security` processes, on which lookup
    /// processes are timed against the Swift floor and GNOME Keyring (``ScriptComparison``).
    var scriptSizes = [1_000, 10_000]
    /// The size of the keychain on which the agent's resident memory is read.
    var agentMemoryItems = 100_000
    /// How many client connections are open to the agent at once in its concurrency row.
    var agentConnections = 1_000
    /// Only the session agent's rows (`--only agent`): the reference keychain is seeded but
    /// no engine operation is timed on it.
    var agentOnly = false
    /// `--only ssh`: the SSH agent's rows alone.
    var sshOnly = false
    /// Items in the default keychain served by `keychaind --secret-service` and in GNOME
    /// Keyring's `session` collection for the Secret Service rows (0: no such rows).
    var secretServiceItems = 10_000
    /// Only the Secret Service rows (`--only secret-service`).
    var secretServiceOnly = false
    /// Adds pushed by one machine and pulled by another in the sync rows (0: no sync rows).
    var syncItems = 1_000
    /// One-item propagations timed in the sync rows.
    var syncPropagations = 50
    /// Only the sync rows (`--only sync`).
    var syncOnly = false
    /// Progress lines on standard error.
    var progress = true
    /// The executable that runs the fresh-process probes (memory, the Swift process floor):
    /// `keychain-bench` itself when it runs the benchmark, whatever its file is named; `nil`
    /// when the benchmark runs inside another process (the tests), which then looks for
    /// `keychain-bench` next to its own executable.
    var probeExecutable: String?

    static let usage = """
        usage: keychain-bench [options]

        Measures the keychain engine and SecItem* against plain SQLite and AES-GCM measured
        in the same run, for keychains of several sizes, in a temporary directory.

          --sizes A,B,C      keychain sizes in items (default 1000,10000,100000)
          --iterations N     timed iterations per operation and size (default 1000)
          --quick            sizes 1000,10000 and 200 iterations, unless given
          --json             print the report as JSON instead of a table
          --test-kdf         time key derivation with the cheap test derivation (smoke tests)
          --directory PATH   where to create the scratch directory (default: $TMPDIR or /tmp)
          --security PATH    the security executable (default: next to keychain-bench)
          --script-sizes A,B keychains filled by separate security processes, for the
                             lookup processes timed against secret-tool (default 1000,10000;
                             0 for none)
          --only agent       only the rows of keychaind: lookups through it, its memory on
                             100,000 items, 1,000 connections at once, a lookup under a
                             hostile load against an idle agent, and the lookup
                             processes it serves (with their floor and secret-tool)
          --only secret-service
                             only the Secret Service rows: keychaind --secret-service
                             against GNOME Keyring, each on a private bus
          --only ssh         only the SSH agent's rows: an Ed25519 signature through
                             keychaind's agent and OpenSSH's ssh-agent
          --only sync        only the sync rows: two machines in one zone on a private
                             PostgreSQL (push, pull, one item's propagation, and the
                             plain INSERT and SELECT floor)
          --sync-items N     adds pushed and pulled in the sync rows (default 1000; 0: none)
          --secret-service-items N
                             items served by each Secret Service for those rows
                             (default 10000; 0 for none)
          --agent-memory-items N
                             the keychain size keychaind's memory is read on (default 100000)
          --agent-connections N
                             connections open to keychaind at once (default 1000)
          --quiet            no progress on standard error
          --profile OP       run one operation alone (engine.find, secitem.add, floor.select, …)
                             at the first size, for valgrind --tool=callgrind
                             --toggle-collect='*profiledLoop*'; agent.find is the engine's
                             find served by a keychaind of its own (for perf on both)
          --against OP       with --profile: alternate OP with it on every iteration and print
                             both medians and their ratio (e.g. --profile engine.add
                             --against floor.insert), a steadier ratio on a noisy machine
          --help             this text
        """

    /// What the command line asks for.
    enum Command {
        case run(BenchmarkOptions)
        case help
        /// Internal: open a keychain in this fresh process and report resident memory.
        case memoryProbe(MemoryProbe.Request)
        /// Internal: exit at once (the cost of starting this executable).
        case noop
        /// Internal: write back what standard input reads (``SocketEcho``).
        case echo
        /// Runs one operation alone, for a profiler, or alternating with a second one.
        case profile(BenchmarkOptions, operation: String, against: String?)
    }

    static func parse(_ arguments: [String]) throws -> Command {
        var options = BenchmarkOptions()
        var sizesGiven = false
        var iterationsGiven = false
        var quick = false
        var scriptSizesGiven = false
        var profiled: String?
        var against: String?
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchmarkFailure("\(flag) needs a value") }
            return arguments[index]
        }
        func positive(_ text: String, _ flag: String) throws -> Int {
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number > 0 else {
                throw BenchmarkFailure("\(flag): \(text) is not a positive number")
            }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--sizes":
                let text = try value(argument)
                options.sizes = try text.split(separator: ",").map { try positive(String($0), argument) }
                guard !options.sizes.isEmpty else { throw BenchmarkFailure("--sizes needs at least one size") }
                options.sizes = Array(Set(options.sizes)).sorted()
                sizesGiven = true
            case "--iterations":
                options.iterations = try positive(try value(argument), argument)
                iterationsGiven = true
            case "--json": options.json = true
            case "--quick": quick = true
            case "--test-kdf": options.testKeyDerivation = true
            case "--directory": options.directory = try value(argument)
            case "--security": options.securityTool = try value(argument)
            case "--script-sizes":
                let text = try value(argument)
                options.scriptSizes =
                    text == "0" ? [] : try text.split(separator: ",").map { try positive(String($0), argument) }
                scriptSizesGiven = true
            case "--quiet": options.progress = false
            case "--agent-memory-items": options.agentMemoryItems = try positive(try value(argument), argument)
            case "--agent-connections": options.agentConnections = try positive(try value(argument), argument)
            case "--only":
                let text = try value(argument)
                switch text {
                case "agent": options.agentOnly = true
                case "secret-service": options.secretServiceOnly = true
                case "sync": options.syncOnly = true
                case "ssh": options.sshOnly = true
                default:
                    throw BenchmarkFailure(
                        "--only: \"agent\", \"secret-service\", \"ssh\" or \"sync\", not \(text)")
                }
            case "--sync-items":
                let text = try value(argument)
                options.syncItems = text == "0" ? 0 : try positive(text, argument)
            case "--secret-service-items":
                let text = try value(argument)
                options.secretServiceItems = text == "0" ? 0 : try positive(text, argument)
            case "--profile": profiled = try value(argument)
            case "--against": against = try value(argument)
            case "--help", "-h": return .help
            case "--internal-memory-probe":
                return .memoryProbe(try MemoryProbe.Request(arguments: Array(arguments[(index + 1)...])))
            case "--internal-noop":
                return .noop
            case "--internal-echo":
                return .echo
            default:
                throw BenchmarkFailure("unknown argument \(argument)")
            }
            index += 1
        }
        if quick {
            if !sizesGiven { options.sizes = [1_000, 10_000] }
            if !iterationsGiven { options.iterations = 200 }
            if !scriptSizesGiven { options.scriptSizes = [1_000] }
            options.openRepetitions = 10
            options.processRepetitions = 10
            options.lookupProcessRounds = 10
            options.keyDerivationRepetitions = 1
        }
        if options.iterations < 20 {
            options.openRepetitions = min(options.openRepetitions, 5)
            options.processRepetitions = min(options.processRepetitions, 3)
            options.lookupProcessRounds = min(options.lookupProcessRounds, 3)
            options.keyDerivationRepetitions = 1
        }
        if let profiled { return .profile(options, operation: profiled, against: against) }
        guard against == nil else { throw BenchmarkFailure("--against needs --profile") }
        return .run(options)
    }
}
