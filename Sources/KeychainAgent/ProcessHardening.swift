import CKeychainAgent
import KeychainLibc

/// Process-wide hardening for the process that holds keys, applied at startup before any
/// secret is read.
///
/// `PR_SET_DUMPABLE 0` stops other processes of the same user (without `CAP_SYS_PTRACE`) from
/// attaching with ptrace, opening `/proc/PID/mem`, using `process_vm_readv` or reading
/// `/proc/PID/exe`; `RLIMIT_CORE 0` means a crash writes no core file.
///
/// ```swift
/// let report = try ProcessHardening.apply()
/// ```
public enum ProcessHardening {
    /// What ``apply()`` did.
    public struct Report: Sendable, Hashable {
        /// Whether the process is now non-dumpable.
        public var isNonDumpable: Bool
        /// The soft and hard core-file size limits after the change (both 0 on success).
        public var coreLimit: (soft: UInt64, hard: UInt64)

        /// Compares two reports.
        public static func == (lhs: Report, rhs: Report) -> Bool {
            lhs.isNonDumpable == rhs.isNonDumpable && lhs.coreLimit.soft == rhs.coreLimit.soft
                && lhs.coreLimit.hard == rhs.coreLimit.hard
        }

        /// Hashes the report.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(isNonDumpable)
            hasher.combine(coreLimit.soft)
            hasher.combine(coreLimit.hard)
        }
    }

    /// Makes this process non-dumpable and sets its core-file limit to zero.
    /// - Returns: The resulting state, read back from the kernel.
    /// - Throws: ``AgentError/Code/system`` if either call fails (the agent must then not start).
    @discardableResult
    public static func apply() throws -> Report {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        guard setrlimit(RLIMIT_CORE_VALUE, &limit) == 0 else {
            throw AgentError.system("setrlimit", "RLIMIT_CORE")
        }
        guard ck_set_dumpable(0) == 0 else { throw AgentError.system("prctl", "PR_SET_DUMPABLE") }
        return try current()
    }

    /// The current state, without changing anything.
    public static func current() throws -> Report {
        var limit = rlimit()
        guard getrlimit(RLIMIT_CORE_VALUE, &limit) == 0 else {
            throw AgentError.system("getrlimit", "RLIMIT_CORE")
        }
        let dumpable = ck_get_dumpable()
        guard dumpable >= 0 else { throw AgentError.system("prctl", "PR_GET_DUMPABLE") }
        return Report(isNonDumpable: dumpable == 0, coreLimit: (UInt64(limit.rlim_cur), UInt64(limit.rlim_max)))
    }

    private static var RLIMIT_CORE_VALUE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_CORE.rawValue) }
}
