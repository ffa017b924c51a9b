import Foundation
import KeychainCore
import KeychainLibc
import SeededRandom

/// One run of the `security` tool: its output, and what `/proc/<pid>/cmdline` showed while
/// it ran.
private struct ToolRun {
    var status: Int32
    var output: String
    var errors: String
    /// Every distinct command line seen while the process was alive.
    var commandLines: Set<String>
}

/// Runs `security` in a new session (no controlling terminal, so prompts read standard
/// input), feeding `input` after a pause, while another thread reads its command line.
private func runTool(
    _ tool: String, _ arguments: [String], input: String? = nil, environment: [String: String]
) throws -> ToolRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
    process.arguments = ["-w", tool] + arguments
    process.environment = environment
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    let seen = Mutex(Set<String>())
    let finished = Mutex(false)
    try process.run()
    let parent = process.processIdentifier
    let poller = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        // setsid forks or execs the tool: watch the process and its children.
        while !finished.withLock({ $0 }) {
            var pids = [parent]
            if let children = try? String(contentsOfFile: "/proc/\(parent)/task/\(parent)/children", encoding: .utf8) {
                pids += children.split(separator: " ").compactMap { pid_t($0) }
            }
            for pid in pids {
                if let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty {
                    let line = String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
                    seen.withLock { _ = $0.insert(line) }
                }
            }
            usleep(500)
        }
        poller.signal()
    }
    let outputs = Mutex((Data(), Data()))
    let readers = DispatchGroup()
    for (index, pipe) in [stdout, stderr].enumerated() {
        readers.enter()
        Thread.detachNewThread {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            outputs.withLock { if index == 0 { $0.0 = data } else { $0.1 = data } }
            readers.leave()
        }
    }
    if let input {
        usleep(30_000)  // let the poller see the process waiting for its input
        try? stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
    }
    try? stdin.fileHandleForWriting.close()
    let deadline = Date().addingTimeInterval(120)
    while process.isRunning && Date() < deadline { usleep(1_000) }
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
    readers.wait()
    finished.withLock { $0 = true }
    poller.wait()
    let (out, err) = outputs.withLock { $0 }
    return ToolRun(
        status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
        errors: String(decoding: err, as: UTF8.self), commandLines: seen.withLock { $0 })
}

/// The `security` tool: secrets appear on its output only when asked for, and never on its
/// command line when they are passed the recommended way (a prompt read from standard input,
/// or `KEYCHAIN_PASSWORD`).
func commandLineAttacks(_ context: StressContext) throws -> [StressRow] {
    let group = "Leakage"
    let required = "0 canaries on stdout/stderr unless asked for (-w, -g, -d); 0 in /proc/<pid>/cmdline"
    let attack = "`security` tool: output and /proc/<pid>/cmdline"
    guard let tool = siblingExecutable("security") else {
        return [
            .notRun(
                group: group, attack: attack, required: required,
                reason: "no `security` binary next to this one (swift build --product security)")
        ]
    }
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setsid") else {
        return [.notRun(group: group, attack: attack, required: required, reason: "/usr/bin/setsid is missing")]
    }
    let scratch = try Scratch("cli")
    var environment = scratch.environment
    environment["KEYCHAIN_UNSAFE_TEST_KDF"] = "1"
    environment[StressKeys.deviceKeyVariable] = nil
    let probe = try runTool(tool, ["help"], environment: environment)
    guard probe.status == 0, probe.output.contains("add-generic-password") else {
        return [
            .notRun(
                group: group, attack: attack, required: required,
                reason: "the `security` binary is not functional yet (\(probe.output.prefix(60)))")
        ]
    }
    var random = SplitMix64(seed: context.seed)
    var scanner = CanaryScanner()
    func canary(_ tag: String) -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
        let value = "CLIK" + String((0..<16).map { _ in alphabet[random.int(alphabet.count)] }) + tag
        scanner.add(value)
        return value
    }
    var runs = 0
    var outputLeaks: [String] = []
    var commandLineLeaks: [String] = []
    var controls: [String] = []
    func check(_ name: String, _ run: ToolRun, expectStatus: Int32? = 0) {
        runs += 1
        if let expectStatus, run.status != expectStatus {
            controls.append("\(name) exited \(run.status), expected \(expectStatus): \(run.errors.prefix(160))")
        }
        let outputText = run.output + "\n" + run.errors
        let outputHits = scanner.canaries.filter { canary in
            let bytes = Data(canary.utf8)
            return [canary, hex(bytes), hex(bytes).uppercased(), bytes.base64EncodedString()].contains {
                outputText.contains($0)
            }
        }
        if !outputHits.isEmpty {
            outputLeaks.append("\(name): \(outputHits.count) canaries on its output")
        }
        for line in run.commandLines {
            if let hit = scanner.canaries.first(where: { line.contains($0) }) {
                commandLineLeaks.append("\(name): \(hit.prefix(10))… in /proc/<pid>/cmdline")
            }
        }
    }

    // A password keychain, its password typed at the prompt (here: standard input).
    let keychainPath = scratch.file("data/keychains/work.keychain-db")
    var keychainPassword = canary("kcpw")
    check(
        "create-keychain (password at the prompt)",
        try runTool(
            tool, ["create-keychain", keychainPath], input: "\(keychainPassword)\n\(keychainPassword)\n",
            environment: environment))
    let items = context.mode.pick(quick: 4, long: 40)
    var secrets: [String] = []
    for index in 0..<items {
        let secret = canary("gp\(index)")
        secrets.append(secret)
        check(
            "add-generic-password -w (prompt)",
            try runTool(
                tool, ["add-generic-password", "-a", "acct\(index)", "-s", "svc", "-w"],
                input: "\(secret)\n\(secret)\n",
                environment: environment))
        let internet = canary("ip\(index)")
        check(
            "add-internet-password -w (prompt)",
            try runTool(
                tool, ["add-internet-password", "-a", "acct\(index)", "-s", "host\(index).example", "-w"],
                input: "\(internet)\n\(internet)\n", environment: environment))
        // A duplicate: the error must not repeat the secret.
        check(
            "add-generic-password duplicate",
            try runTool(
                tool, ["add-generic-password", "-a", "acct\(index)", "-s", "svc", "-w"],
                input: "\(secret)\n\(secret)\n",
                environment: environment), expectStatus: 45)
        check(
            "find-generic-password (attributes only)",
            try runTool(tool, ["find-generic-password", "-a", "acct\(index)", "-s", "svc"], environment: environment))
        check(
            "find-internet-password (attributes only)",
            try runTool(tool, ["find-internet-password", "-s", "host\(index).example"], environment: environment))
    }
    var withPassword = environment
    withPassword["KEYCHAIN_PASSWORD"] = keychainPassword
    let quiet: [(String, [String], String?, [String: String], Int32?)] = [
        ("dump-keychain", ["dump-keychain"], nil, environment, 0),
        ("dump-keychain of the password keychain", ["dump-keychain", keychainPath], nil, withPassword, 0),
        ("list-keychains", ["list-keychains"], nil, environment, 0),
        ("show-keychain-info", ["show-keychain-info", keychainPath], nil, environment, nil),
        ("unlock-keychain (prompt)", ["unlock-keychain", keychainPath], "\(keychainPassword)\n", environment, 0),
        (
            "unlock-keychain, wrong password", ["unlock-keychain", keychainPath], "\(canary("wrong"))\n", environment,
            nil
        ),
        (
            "find in the password keychain (KEYCHAIN_PASSWORD)", ["find-generic-password", "-a", "none", keychainPath],
            nil, withPassword, nil
        ),
        ("lock-keychain", ["lock-keychain", keychainPath], nil, environment, nil),
        ("find-generic-password, missing item", ["find-generic-password", "-a", "missing"], nil, environment, 44),
        ("security -v dump-keychain", ["-v", "dump-keychain"], nil, environment, 0),
    ]
    for (name, arguments, input, env, status) in quiet {
        check(name, try runTool(tool, arguments, input: input, environment: env), expectStatus: status)
    }
    let newPassword = canary("kcpw2")
    check(
        "set-keychain-password (prompts)",
        try runTool(
            tool, ["set-keychain-password", keychainPath],
            input: "\(keychainPassword)\n\(newPassword)\n\(newPassword)\n",
            environment: environment), expectStatus: nil)
    keychainPassword = newPassword
    for index in stride(from: 0, to: items, by: 2) {
        check(
            "delete-generic-password",
            try runTool(tool, ["delete-generic-password", "-a", "acct\(index)", "-s", "svc"], environment: environment))
    }
    // Positive controls: asked for, the secret is printed, and a secret put on the command
    // line is seen there; the checks above can therefore fail.
    let shown = try runTool(
        tool, ["find-generic-password", "-a", "acct1", "-s", "svc", "-w"], environment: environment)
    if !shown.output.contains(secrets[1]) { controls.append("find-generic-password -w did not print the secret") }
    let shownG = try runTool(
        tool, ["find-generic-password", "-a", "acct1", "-s", "svc", "-g"], environment: environment)
    if !(shownG.output + shownG.errors).contains(secrets[1]) { controls.append("-g did not print the secret") }
    let dumped = try runTool(tool, ["dump-keychain", "-d"], environment: environment)
    if !(dumped.output + dumped.errors).contains(secrets[1]) {
        controls.append("dump-keychain -d did not print the secret")
    }
    let visible = canary("argv")
    let discouraged = try runTool(
        tool, ["add-generic-password", "-a", "argv", "-s", "svc", "-w", visible], environment: environment)
    if !discouraged.commandLines.contains(where: { $0.contains(visible) }) {
        controls.append("a secret given with -w <secret> was not seen in /proc/<pid>/cmdline (poller blind)")
    }
    runs += 4
    return [
        try standardInputRow(tool, environment: environment, context: context),
        StressRow(
            group: group, attack: "`security` tool: \(runs) runs adding, finding, dumping, (un)locking, re-passwording",
            trials: runs, required: required,
            measured:
                "\(outputLeaks.count) runs with canaries on their output, \(commandLineLeaks.count) in cmdline; \(controls.count) control or status problems (-w, -g, -d must print the secret; argv must show it)",
            passed: outputLeaks.isEmpty && commandLineLeaks.isEmpty && controls.isEmpty,
            evidence: outputLeaks + commandLineLeaks + controls),
    ]
}

/// Secrets piped on standard input: the documented 4 MiB maximum round-trips, and an endless
/// input is refused with errSecParam once past it, without being read to its end.
private func standardInputRow(_ tool: String, environment: [String: String], context: StressContext) throws
    -> StressRow
{
    let trials = context.mode.pick(quick: 1, long: 5)
    let limit = 4 << 20
    var failures: [String] = []
    var slowest = 0.0
    var mostRead = 0
    for trial in 0..<trials {
        let secret = String(repeating: "0123456789abcdef", count: limit / 16)
        let started = monotonicSeconds()
        let added = try pipeTo(tool, ["add-generic-password", "-a", "big\(trial)", "-s", "stdin", "-w"], environment) {
            write in write(Data((secret + "\n").utf8))
        }
        let found = try pipeTo(tool, ["find-generic-password", "-a", "big\(trial)", "-s", "stdin", "-w"], environment) {
            _ in
        }
        slowest = max(slowest, monotonicSeconds() - started)
        if added.status != 0 || found.output != secret + "\n" {
            failures.append("trial \(trial): 4 MiB secret: add \(added.status), read back \(found.output.count) bytes")
        }
        var written = 0
        let endless = try pipeTo(
            tool, ["add-generic-password", "-a", "endless\(trial)", "-s", "stdin", "-w"], environment
        ) {
            write in
            let block = Data(repeating: 0x61, count: 1 << 16)
            // Bounded: stop at 64 MiB whatever happens (the tool should stop reading long before).
            while written < 64 << 20, write(block) { written += block.count }
        }
        mostRead = max(mostRead, written)
        if endless.status != 206 || written >= 64 << 20 {
            failures.append("trial \(trial): endless input: exit \(endless.status) after \(written) bytes written")
        }
    }
    return StressRow(
        group: "Bad input", attack: "secrets on standard input: the 4 MiB maximum, and an endless input",
        trials: trials * 2,
        required:
            "4 MiB round-trips; an endless input is refused with errSecParam (exit 206) without being read to its end",
        measured: failures.isEmpty
            ? "\(trials)/\(trials) round-trips (slowest add + find \(String(format: "%.2f", slowest)) s); endless input refused after at most \(mostRead >> 20) MiB written"
            : "\(failures.count) failures",
        passed: failures.isEmpty, evidence: failures)
}

/// Runs the tool with `feed` writing to its standard input (`write` returns false once the
/// tool has closed it), and returns its status and standard output.
private func pipeTo(
    _ tool: String, _ arguments: [String], _ environment: [String: String],
    feed: (_ write: (Data) -> Bool) -> Void
) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    process.environment = environment
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    signal(SIGPIPE, SIG_IGN)
    try process.run()
    let collected = Mutex(Data())
    let reader = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let data = output.fileHandleForReading.readDataToEndOfFile()
        collected.withLock { $0 = data }
        reader.signal()
    }
    let fd = input.fileHandleForWriting.fileDescriptor
    feed { data in
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
    }
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
    reader.wait()
    return (process.terminationStatus, String(decoding: collected.withLock { $0 }, as: UTF8.self))
}
