import Foundation

/// Writes an executable (a script, or a copy of a built program) that a test then starts.
///
/// A file this process has open for writing cannot be started (`execve` fails with `ETXTBSY`,
/// which a shell reports as status 126) for as long as any process holds a copy of that
/// descriptor, and every child that a parallel test spawns meanwhile gets a copy of this process's
/// descriptors until it has closed them (Foundation's `Process` closes them one by one, up to the
/// descriptor limit) or for its whole life (a spawn that closes nothing). So the file is written
/// by a process of its own, `install(1)`: no descriptor of it ever exists in this process.
public enum ExecutableFile {
    /// Writes `text` to `path` (replacing it), mode 0755.
    /// - Throws: When `install` cannot write it.
    public static func write(_ text: String, to path: String) throws {
        try install(from: "/dev/stdin", to: path, input: Data(text.utf8))
    }

    /// Copies the program at `source` to `path` (replacing it), mode 0755.
    /// - Throws: When `install` cannot copy it.
    public static func copy(_ source: String, to path: String) throws {
        try install(from: source, to: path, input: nil)
    }

    private static func install(from source: String, to path: String, input: Data?) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/install")
        process.arguments = ["-m", "0755", source, path]
        let pipe = input.map { _ in Pipe() }
        process.standardInput = pipe ?? FileHandle.nullDevice
        try process.run()
        if let pipe, let input {
            try pipe.fileHandleForWriting.write(contentsOf: input)
            try pipe.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}

/// The directory of the test bundle's build products (`keychaind`, `security`, the workers).
public var buildProductsDirectory: String {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var directory = URL(fileURLWithPath: exe).deletingLastPathComponent()
    for _ in 0..<4 where !FileManager.default.isExecutableFile(atPath: directory.path + "/keychaind") {
        directory = directory.deletingLastPathComponent()
    }
    return directory.path
}
