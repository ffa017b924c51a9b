import Foundation
import KeychainLibc
import Testing

/// No input crashes the tool, and a crash never prints registers or memory.
@Suite struct CrashTests {
    /// A port argument and the port macOS stores: `atoi` is `(int)strtol`, which clamps to
    /// the range of a `long`; the port keeps the low 16 bits; 0 means no port.
    static let ports: [(String, Int?)] = [
        ("-9223372036854775808", nil), ("-9223372036854775809", nil), ("9223372036854775807", 65535),
        ("99999999999999999999", 65535), ("-1", 65535), ("70000", 4464), ("+443x", 443), (" 8080", 8080),
    ]

    @Test(arguments: ports)
    func portArgumentsPastTheRangeOfALongDoNotTrap(_ argument: String, _ port: Int?) throws {
        let sandbox = try Sandbox()
        let add = try sandbox.run(["add-internet-password", "-a", "a", "-s", "example.com", "-P", argument, "-w", "x"])
        #expect(add.status == 0 && add.err.isEmpty, "\(add)")
        let findByArgument = try sandbox.run(["find-internet-password", "-s", "example.com", "-P", argument, "-w"])
        #expect(findByArgument.status == 0 && findByArgument.out == "x\n", "\(findByArgument)")
        let delete = try sandbox.run(["delete-internet-password", "-P", argument])
        #expect(delete.status == (port == nil ? 2 : 0), "\(delete)")
        if let port {
            #expect(!delete.out.isEmpty, "\(delete)")
            #expect(try sandbox.run(["find-internet-password", "-s", "example.com", "-P", String(port)]).status == 44)
        }
    }

    /// SIGILL is what a Swift trap raises. (The test runner's threads block SIGQUIT and
    /// SIGABRT, and its children inherit that mask, so those cannot be sent here.)
    @Test(arguments: [SIGILL, SIGSEGV])
    func aFatalSignalPrintsNoRegistersOrMemory(_ signalNumber: Int32) throws {
        let sandbox = try Sandbox()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: securityPath)
        process.arguments = ["add-generic-password", "-a", "ci", "-s", "deploy", "-w"]
        process.environment = sandbox.environment
        let input = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        // Part of a secret, then wait until the tool has read it (the pipe is empty) and is
        // waiting for the rest of the line.
        let writeEnd = input.fileHandleForWriting.fileDescriptor
        _ = "TOPSECRET-PART".withCString { write(writeEnd, $0, strlen($0)) }
        var unread: CInt = 1
        while unread > 0 {
            _ = ioctl(writeEnd, 0x541B, &unread)  // FIONREAD
            if unread > 0 { usleep(1000) }
        }
        kill(process.processIdentifier, signalNumber)
        // Were the signal not fatal, the end of input would let the tool finish.
        try input.fileHandleForWriting.close()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == signalNumber)
        #expect(
            !stderr.contains("Registers") && !stderr.contains("Thread 0") && !stderr.contains("Backtrac"), "\(stderr)")
        #expect(!stderr.contains("TOPSECRET"))
        #expect(stderr.hasPrefix("security: the process crashed"), "\(stderr)")
    }
}
