import Foundation
import KeychainTestSupport
import KeychainLibc
import Testing

/// The install loop of docs/security-tool.md ("Installing"), run as written on an account that
/// has never had a `~/.local/bin` (issue 56, item 10: the loop failed there after an hour of
/// building).
///
/// The one stand-in is `swift` itself: the loop's release builds take about an hour on two cores,
/// so a `swift` first on `PATH` records each `swift build` the loop runs and answers
/// `--show-bin-path` with the products this test bundle was built with. `mkdir`, `install -s`, the
/// shell and the installed tools are the real ones.
@Suite struct InstallLoopTests {
    /// The first `sh` block under "## Installing" in docs/security-tool.md.
    static func installLoop() throws -> String {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/security-tool.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let section = try #require(text.range(of: "## Installing"))
        let fence = try #require(text.range(of: "```sh\n", range: section.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "```", range: fence.upperBound..<text.endIndex))
        return String(text[fence.upperBound..<close.lowerBound])
    }

    /// A `swift` that stands in for the release builds: it logs each call and answers
    /// `build -c release --show-bin-path` with `products`.
    static func swiftStandIn(in directory: String, products: String, log: String) throws {
        let script = """
            #!/bin/bash
            printf '%s\\n' "$*" >> '\(log)'
            case "$*" in
            "build -c release --show-bin-path") echo '\(products)' ;;
            "build -c release --static-swift-stdlib --product "*) [ -x '\(products)'/"${@: -1}" ] ;;
            *) echo "unexpected: swift $*" >&2; exit 2 ;;
            esac
            """
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/swift"
        try ExecutableFile.write(script, to: path)
    }

    @Test("the documented install loop works on an account without ~/.local/bin, and the tools it installs run")
    func installLoopWorksOnAFreshAccount() throws {
        let sandbox = try Sandbox(cheapKeyDerivation: false, setsXDG: false)
        sandbox.agentMode = "auto"
        let bin = sandbox.home + "/.local/bin"
        #expect(!FileManager.default.fileExists(atPath: sandbox.home + "/.local"))
        let products = URL(fileURLWithPath: securityPath).deletingLastPathComponent().path
        let standIn = sandbox.root + "/stand-in"
        let log = sandbox.root + "/swift-calls"
        try Self.swiftStandIn(in: standIn, products: products, log: log)
        let socket = sandbox.root + "/agent/agent.sock"
        defer { stopAgent(at: socket) }

        let install = try sandbox.run(
            ["-e", "-c", try Self.installLoop()], environment: ["PATH": standIn + ":/usr/bin:/bin"],
            executable: "/bin/bash")
        #expect(install.status == 0, "\(install)")
        let calls = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        for tool in ["security", "security-linux", "keychaind"] {
            #expect(calls.contains("build -c release --static-swift-stdlib --product \(tool)\n"), "\(calls)")
            let installed = bin + "/" + tool
            #expect(FileManager.default.isExecutableFile(atPath: installed), "\(installed)")
            // `install -s` stripped it: smaller than the built file.
            let size = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            }
            #expect(size(installed) > 0 && size(installed) < size(products + "/" + tool), "\(tool) is stripped")
        }

        // The docs' PATH line, then the README's first command with the installed tools: the
        // keychaind beside the installed `security` serves it.
        let path = ["PATH": bin + ":/usr/bin:/bin", "KEYCHAIN_AGENT_SOCK": socket]
        let add = try sandbox.run(
            ["-c", "printf 's3cret\\n' | security add-generic-password -U -s demo -a me -w"], environment: path,
            executable: "/bin/bash")
        #expect(add.status == 0, "\(add)")
        let find = try sandbox.run(
            ["-c", "security find-generic-password -s demo -a me -w"], environment: path, executable: "/bin/bash")
        #expect(find.status == 0 && find.out == "s3cret\n", "\(find)")
        let agent = try #require(agentPid(at: socket), "the installed security started an agent")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(agent)/exe") == bin + "/keychaind")
        // security-linux was installed beside it: `security sync` reaches it (and says sync is
        // not set up) instead of saying it is missing.
        let sync = try sandbox.run(["-c", "security sync status"], environment: path, executable: "/bin/bash")
        #expect(!sync.err.contains("not installed beside security"), "\(sync)")
        #expect(sync.err.contains("sync"), "\(sync)")
    }
}
