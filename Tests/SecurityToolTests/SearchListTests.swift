import Foundation
import Testing

extension Sandbox {
    /// Starts `security` without waiting for it (standard input /dev/null); `finish` waits.
    func start(_ arguments: [String]) throws -> (process: Process, output: Pipe, errors: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: securityPath)
        process.arguments = arguments
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: home)
        let (output, errors) = (Pipe(), Pipe())
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, output, errors)
    }

    /// Starts every command at once, then waits for all of them.
    func runConcurrently(_ commands: [[String]]) throws -> [RunResult] {
        let started = try commands.map(start)
        return started.map { process, output, errors in
            // The outputs are a few lines: they fit in the pipes while the others finish.
            process.waitUntilExit()
            return RunResult(
                status: process.terminationStatus, stdout: output.fileHandleForReading.readDataToEndOfFile(),
                stderr: errors.fileHandleForReading.readDataToEndOfFile())
        }
    }

    /// The search list as `list-keychains` prints it (one quoted path a line).
    func listedKeychains() throws -> [String] {
        let listed = try run(["list-keychains"])
        #expect(listed.status == 0, "\(listed)")
        return listed.out.split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
    }
}

/// The search list and default keychain under concurrent `security` processes.
@Suite struct SearchListTests {
    /// The defect: create-keychain loaded the preferences, added its keychain and saved them
    /// with no lock, so concurrent processes overwrote each other (8 created, 4 listed).
    @Test("concurrent create-keychain and delete-keychain processes keep every change", arguments: 0..<3)
    func concurrentCreateKeychainKeepsEveryKeychainInTheSearchList(trial: Int) throws {
        let sandbox = try Sandbox()
        let count = 12
        let path = { (index: Int) in sandbox.keychainsDirectory + "/t\(trial)-k\(index).keychain-db" }
        // A fresh home: the processes also race to create the device key and the directories.
        let created = try sandbox.runConcurrently(
            (0..<count).map { ["create-keychain", "-p", "pw", "t\(trial)-k\($0).keychain"] })
        for result in created { #expect(result.status == 0 && result.err.isEmpty, "\(result)") }
        var listed = try sandbox.listedKeychains()
        #expect(listed.first == sandbox.loginKeychain, "trial \(trial): \(listed)")
        #expect(listed.count == count + 1, "trial \(trial): \(listed.count - 1) of \(count) keychains listed")
        #expect(Set(listed) == Set([sandbox.loginKeychain] + (0..<count).map(path)), "trial \(trial)")

        // Half of them deleted while as many others are created: each change lands.
        let mixed = try sandbox.runConcurrently(
            (0..<count / 2).map { ["delete-keychain", "t\(trial)-k\($0).keychain"] }
                + (count..<count + count / 2).map { ["create-keychain", "-p", "pw", "t\(trial)-k\($0).keychain"] })
        for result in mixed { #expect(result.status == 0 && result.err.isEmpty, "\(result)") }
        listed = try sandbox.listedKeychains()
        #expect(listed.count == count + 1, "trial \(trial): \(listed)")
        #expect(
            Set(listed) == Set([sandbox.loginKeychain] + (count / 2..<count + count / 2).map(path)), "trial \(trial)")
    }
}
