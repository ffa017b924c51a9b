import Foundation

/// How a prompt names the program that asks (the Secret Service's unlock dialog, the SSH agent's):
/// by what the kernel vouches for, its executable's path (`/proc/PID/exe`) and, when it runs in a
/// systemd unit of its own, that unit (`/proc/PID/cgroup`); never by `/proc/PID/comm`, which any
/// process sets to anything.
public enum PromptedProgram {
    /// `/usr/bin/ssh`, or `/usr/bin/python3 (app-x.service)`; `nil` when the process is gone or
    /// not ours to inspect.
    public static func name(ofProcess pid: Int32) -> String? {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"),
            !executable.isEmpty
        else { return nil }
        return systemdUnit(pid).map { "\(executable) (\($0))" } ?? executable
    }

    /// The systemd unit (service or scope) process `pid` runs in, from its cgroup v2 path;
    /// nil for the user manager's own and a login session's, which name no program.
    static func systemdUnit(_ pid: Int32) -> String? {
        guard let cgroups = try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8),
            let line = cgroups.split(separator: "\n").first(where: { $0.hasPrefix("0::") }),
            let unit = line.dropFirst(3).split(separator: "/").last.map(String.init),
            unit.hasSuffix(".service") || unit.hasSuffix(".scope"),
            !unit.hasPrefix("user@"), !unit.hasPrefix("session-"), unit != "init.scope"
        else { return nil }
        return unit
    }
}
