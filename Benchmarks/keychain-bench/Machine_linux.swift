import Foundation
import KeychainLibc

/// The machine a run came from, read from `/proc` and `uname`, so that a table is never
/// compared with one from another machine unknowingly.
struct Machine: Codable, Sendable {
    var cpuModel: String
    var logicalCPUs: Int
    var memoryBytes: Int64
    var kernel: String
    /// The file system of the directory that holds the benchmark keychains.
    var fileSystem: String
    /// The 1-, 5- and 15-minute load averages when the run started and when it ended.
    var loadAtStart: String
    var loadAtEnd: String
    var build: String
    var swift: String

    static func current(scratchDirectory: String) -> Machine {
        Machine(
            cpuModel: cpuModel(), logicalCPUs: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))),
            memoryBytes: meminfo("MemTotal") ?? 0, kernel: kernelRelease(),
            fileSystem: fileSystemType(scratchDirectory), loadAtStart: loadAverage(), loadAtEnd: "",
            build: buildConfiguration, swift: swiftVersion)
    }

    /// A one-line description for the table.
    var summary: String {
        let gib = Double(memoryBytes) / Double(1 << 30)
        return
            "\(cpuModel), \(logicalCPUs) logical CPUs, \(String(format: "%.1f", gib)) GiB RAM, Linux \(kernel), "
            + "keychains on \(fileSystem); \(swift), \(build) build"
    }

    static var buildConfiguration: String {
        #if DEBUG
            "debug"
        #else
            "release"
        #endif
    }

    static var swiftVersion: String {
        #if compiler(>=6.4)
            "Swift 6.4 or later"
        #elseif compiler(>=6.3)
            "Swift 6.3"
        #elseif compiler(>=6.2)
            "Swift 6.2"
        #else
            "Swift 6.1"
        #endif
    }

    private static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown CPU" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown CPU"
    }

    /// A `/proc/meminfo` value in bytes.
    private static func meminfo(_ key: String) -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count >= 2, let kib = Int64(fields[1]) { return kib * 1024 }
        }
        return nil
    }

    private static func kernelRelease() -> String {
        var name = utsname()
        uname(&name)
        return withUnsafeBytes(of: &name.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The type of the file system mounted deepest above `path`, from `/proc/self/mountinfo`.
    private static func fileSystemType(_ path: String) -> String {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else {
            return "unknown file system"
        }
        let resolved = (path as NSString).resolvingSymlinksInPath
        var best: (mountPoint: String, type: String)?
        for line in text.split(separator: "\n") {
            // id parent major:minor root mount-point options [optional…] - type source options
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
            let mountPoint = fields[4].replacingOccurrences(of: "\\040", with: " ")
            let inside = mountPoint == "/" || resolved == mountPoint || resolved.hasPrefix(mountPoint + "/")
            if inside, mountPoint.count >= (best?.mountPoint.count ?? -1) {
                best = (mountPoint, fields[dash + 1])
            }
        }
        return best?.type ?? "unknown file system"
    }
}

/// The resident memory of this process, from `/proc/self/status`.
enum ResidentMemory {
    /// `VmRSS` in bytes (what is resident now).
    static func current() -> Int64 { value("VmRSS") }
    /// `VmHWM` in bytes (the peak so far).
    static func peak() -> Int64 { value("VmHWM") }

    /// `VmRSS` in bytes of another process (the agent), or `nil`.
    static func of(pid: Int32) -> Int64? {
        let bytes = value("VmRSS", file: "/proc/\(pid)/status")
        return bytes >= 0 ? bytes : nil
    }

    private static func value(_ key: String, file: String = "/proc/self/status") -> Int64 {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return -1 }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.count >= 2, let kib = Int64(fields[1]) { return kib * 1024 }
        }
        return -1
    }
}
