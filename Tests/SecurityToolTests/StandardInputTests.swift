import Foundation
import KeychainLibc
import Testing

@testable import SecurityTool

/// Standard input is read in blocks, and a line longer than the largest secret is refused
/// without reading the rest of the input.
@Suite struct StandardInputTests {
    /// A file of `lines` joined by newlines (and `tail` without one), opened for reading.
    private func openFile(_ contents: [UInt8]) throws -> (Int32, String) {
        let path = FileManager.default.temporaryDirectory.path + "/stdin-\(UUID().uuidString)"
        try Data(contents).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        return (fd, path)
    }

    @Test func linesAreReadInBlocksNotByteByByte() throws {
        let first = [UInt8](repeating: 0x61, count: 150_000)
        let second = [UInt8](repeating: 0x62, count: 70_000)
        let contents = first + [0x0A] + second + [0x0A] + Array("tail".utf8)
        let (fd, path) = try openFile(contents)
        defer {
            close(fd)
            unlink(path)
        }
        let input = StandardInput(fd: fd)
        #expect(try input.readLine() == first)
        #expect(try input.readLine() == second)
        #expect(try input.readLine() == Array("tail".utf8))
        #expect(try input.readLine() == nil)
        #expect(input.bytesRead == contents.count)
        #expect(input.reads == (contents.count + StandardInput.blockSize - 1) / StandardInput.blockSize)
    }

    @Test func whatWasReadPastTheLastLineIsGivenBackToAFile() throws {
        let (fd, path) = try openFile(Array("first\nsecond\nthird\n".utf8))
        defer {
            close(fd)
            unlink(path)
        }
        let input = StandardInput(fd: fd)
        #expect(try input.readLine() == Array("first".utf8))
        input.returnUnreadInput()
        #expect(lseek(fd, 0, SEEK_CUR) == 6)
    }

    @Test func aLineLongerThanTheLimitIsRefusedWithoutReadingTheRest() throws {
        var sockets: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        let writeEnd = sockets[1]
        let writer = Thread {
            // An endless line: writes until the reader closes its end.
            let block = [UInt8](repeating: 0x61, count: 4096)
            while block.withUnsafeBytes({ send(writeEnd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 {}
            close(writeEnd)
        }
        writer.start()
        let limit = 1 << 20
        let input = StandardInput(fd: sockets[0], limit: limit)
        #expect(throws: CommandFailure.self) { try input.readLine() }
        #expect(input.bytesRead <= limit + StandardInput.blockSize)
        close(sockets[0])
        do {
            _ = try input.readLine()
        } catch let failure as CommandFailure {
            #expect(failure.result == -50)
            #expect(failure.messages == ["standard input: a line is longer than \(limit) bytes (the largest secret)"])
        }
    }

    @Test func aFourMiBSecretPipedToAddRoundTrips() throws {
        let sandbox = try Sandbox()
        let secret = (0..<StandardInput.lineLimit).map { UInt8(0x21 + $0 % 94) }
        let add = try sandbox.run(
            ["add-generic-password", "-a", "ci", "-s", "big", "-w"], stdin: Data(secret + [0x0A]))
        #expect(add.status == 0, "\(add.status) \(add.err)")
        let find = try sandbox.run(["find-generic-password", "-a", "ci", "-s", "big", "-w"])
        #expect(find.status == 0)
        #expect(find.stdout == Data(secret + [0x0A]))
    }

    @Test func anEndlessSecretOnStandardInputEndsWithTheLimitsError() throws {
        let sandbox = try Sandbox()
        var sockets: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: securityPath)
        process.arguments = ["add-generic-password", "-a", "ci", "-s", "endless", "-w"]
        process.environment = sandbox.environment
        process.currentDirectoryURL = URL(fileURLWithPath: sandbox.home)
        process.standardInput = FileHandle(fileDescriptor: sockets[0], closeOnDealloc: false)
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        close(sockets[0])  // The tool has its copy; the writer sees EPIPE once the tool closes it.
        let writeEnd = sockets[1]
        let written = WrittenCount()
        let writer = Thread {
            let block = [UInt8](repeating: 0x61, count: 65536)
            // At most 256 MiB, so that a tool that reads everything still ends (and fails below).
            while written.value < 256 << 20 {
                let sent = block.withUnsafeBytes { send(writeEnd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break }
                written.add(sent)
            }
            close(writeEnd)
        }
        writer.start()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 206, "\(stderr)")
        #expect(
            stderr == "security: standard input: a line is longer than 4194304 bytes (the largest secret)\n")
        while !writer.isFinished { usleep(1000) }
        #expect(written.value < 64 << 20, "the tool stopped reading past the maximum")
    }
}

/// Bytes written by a writer thread.
private final class WrittenCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add(_ n: Int) { lock.withLock { count += n } }
}
