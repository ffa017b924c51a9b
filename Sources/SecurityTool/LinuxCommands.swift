import Foundation
import KeychainClient
import KeychainLibc

/// How a command that macOS's `security` has not (`sync`, `import-secret-service`) is run in
/// this process: the `security-linux` executable passes its implementations to
/// ``SecurityTool/main(runningLinuxCommands:)``.
///
/// Those commands are declared in this module, with their options and help, so that `security`
/// lists, explains and checks them like any other; what they do lives in `security-linux`,
/// which links PostgreSQL's and D-Bus's clients. `security` itself then loads none of that code,
/// and every short-lived `security` process starts faster: the Swift runtime's first lookup of
/// each protocol conformance scans every conformance record loaded, and those clients brought
/// about 1,300 of the 9,800.
package typealias LinuxCommandRunner = (any ToolCommand, Session) throws -> Int32

/// The `security-linux` executable beside `security`, run for one command line.
enum LinuxCompanion {
    /// Its file name, in the directory of the running `security`.
    static let executableName = "security-linux"

    /// Runs `arguments` (a command line, its command's name first) in `security-linux` with this
    /// process's standard input, output, error and environment, and returns its exit status.
    static func run(_ arguments: [String], session: Session) throws -> Int32 {
        let name = arguments.first ?? ""
        guard let companion = Executables.besideThisOne(executableName) else {
            throw CommandFailure.failure("\(name): the path of this executable cannot be read")
        }
        guard access(companion, X_OK) == 0 else {
            throw CommandFailure.failure(
                "\(name): this command is run by \(executableName), which is not installed beside security "
                    + "(\(companion))")
        }
        // What this process read ahead of its last line goes back to a file on standard input
        // (`security -i < commands`), so that the command reads on from where it should; input
        // from a pipe cannot be given back.
        session.input.returnUnreadInput()
        let flags = (session.quiet ? ["-q"] : []) + (session.verbose ? ["-v"] : [])
        let argv = (["security"] + flags + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, companion, nil, nil, argv, environ)
        guard spawned == 0 else {
            throw CommandFailure.failure("\(name): \(companion) cannot be started (errno \(spawned))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw CommandFailure.failure("\(name): waitpid: errno \(errno)") }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (macros).
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

extension Session {
    /// Runs a command of ``SecurityTool/companionCommandNames``: with the implementations
    /// `security-linux` gave, or else in `security-linux`.
    func runLinuxCommand(_ command: some ToolCommand) throws -> Int32 {
        if let linuxCommandRunner { return try linuxCommandRunner(command, self) }
        return try LinuxCompanion.run(commandLine, session: self)
    }
}
