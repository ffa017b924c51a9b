import Foundation
import Testing

/// `security sync` and `security import-secret-service` run in `security-linux`, beside
/// `security`: the same options, messages and exit statuses as a command of `security` itself.
@Suite struct LinuxCommandTests {
    @Test("security runs sync in security-linux: its refusal, usage error and exit status come through")
    func syncRunsInTheCompanion() throws {
        let sandbox = try Sandbox()
        let unknown = try sandbox.run(["sync", "bogus"])
        #expect(unknown.status == 2, "\(unknown)")
        #expect(unknown.err.contains("security: sync: unknown action \"bogus\""), "\(unknown)")
        #expect(unknown.err.contains("Usage: security sync init"), "\(unknown)")
        // An abbreviated name is matched first, as for every command; -v echoes the line once.
        let verbose = try sandbox.run(["-v", "syn", "bogus"])
        #expect(verbose.status == 2, "\(verbose)")
        #expect(verbose.err.components(separatedBy: "sync \"bogus\"").count == 2, "\(verbose)")
    }

    @Test("help lists and explains the Linux-only commands without starting security-linux")
    func helpNeedsNoCompanion() throws {
        let sandbox = try Sandbox()
        let alone = try lonelyCopy()
        defer { try? FileManager.default.removeItem(atPath: (alone as NSString).deletingLastPathComponent) }
        let help = try sandbox.run(["help", "sync"], executable: alone)
        #expect(help.status == 0, "\(help)")
        #expect(help.out.contains("security sync invite"), "\(help)")
        let list = try sandbox.run(["help"], executable: alone)
        #expect(list.out.contains("import-secret-service") && list.out.contains("sync "), "\(list)")
    }

    @Test("without security-linux beside it, security says which file is missing and exits 1")
    func missingCompanionIsAClearError() throws {
        let sandbox = try Sandbox()
        let alone = try lonelyCopy()
        defer { try? FileManager.default.removeItem(atPath: (alone as NSString).deletingLastPathComponent) }
        for arguments in [["sync", "status"], ["import-secret-service"]] {
            let run = try sandbox.run(arguments, executable: alone)
            #expect(run.status == 1, "\(run)")
            #expect(run.err.contains("security-linux, which is not installed beside security"), "\(run)")
        }
    }

    @Test("in security -i reading a file, a Linux-only command reads its input where the previous line ended")
    func interactiveInputContinuesInTheCompanion() throws {
        let sandbox = try Sandbox()
        let commands = sandbox.root + "/commands"
        // `sync join -` reads its code from standard input: the next line, read by security-linux;
        // `error 0` after it is then the next command of this process.
        try Data("sync join -\nNOTACODE\nerror 0\n".utf8).write(to: URL(fileURLWithPath: commands))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: securityPath)
        process.arguments = ["-i"]
        process.environment = sandbox.environment
        process.currentDirectoryURL = URL(fileURLWithPath: sandbox.home)
        process.standardInput = FileHandle(forReadingAtPath: commands)
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let error = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(error.contains("security: sync join: not an invitation code"), "\(error)")
        #expect(output.contains("Error: 0x00000000 0 No error."), "\(output)\n\(error)")
        #expect(!error.contains("NOTACODE"), "\(error)")
    }

    /// `security` in a directory of its own, without `security-linux`: a hard link beside the
    /// build's (the same file system), never a copy. A copy is open for writing while it is made,
    /// and a process another test forks meanwhile inherits that descriptor until it execs, so
    /// running the copy could fail with "text file busy".
    private func lonelyCopy() throws -> String {
        let build = (securityPath as NSString).deletingLastPathComponent
        let directory = build + "/lonely-security-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: securityPath, toPath: directory + "/security")
        return directory + "/security"
    }
}
