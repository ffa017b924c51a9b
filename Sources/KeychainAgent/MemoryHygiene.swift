import CKeychainAgent
import KeychainLibc

/// Keeps the agent's memory free of secrets it no longer needs: after `lock-keychain`, a scan
/// of `/proc/PID/mem` finds neither the keychain's password nor its items' secrets.
///
/// Swift copies a secret wherever a value goes (the D-Bus message it came in, the decoded
/// arguments, the engine's buffers, the reply), and frees those copies without clearing them.
/// Two measures reach them all without tracking each:
/// - **Freed heap memory is overwritten.** glibc's allocator does so when `MALLOC_PERTURB_` is
///   set (every `free` fills the block with that byte), except in its per-thread cache, which
///   `glibc.malloc.tcache_count=0` turns off. Both are read when the process starts, so
///   ``reexecWithWipingAllocator(arguments:)`` starts the agent again with them, once, and
///   removes them from its environment afterwards so that its children do not inherit them.
/// - **Each request's stack is cleared.** The locals of the calls that served a request stay
///   below the stack pointer until another call overwrites them; ``scrubStack()`` zeroes them
///   after every request, on the thread that ran it.
///
/// Live copies are the engine's: its keys are in swift-crypto's `SymmetricKey`, which zeroes
/// its storage when freed, and are dropped when a keychain locks.
public enum MemoryHygiene {
    /// The environment variable that marks the agent started again by
    /// ``reexecWithWipingAllocator(arguments:)``.
    static let marker = "KEYCHAIND_WIPING_ALLOCATOR"
    static let tunable = "glibc.malloc.tcache_count=0"
    /// The byte freed memory is filled with.
    static let perturbByte = "90"

    /// Starts this program again (same pid, arguments and descriptors) with glibc's allocator
    /// set to overwrite freed memory; in the program started again, removes those settings
    /// from the environment and returns. Returns too when `execv` fails (the agent then runs
    /// without it, as on a libc other than glibc).
    /// - Parameter arguments: The program's arguments (`CommandLine.arguments`).
    public static func reexecWithWipingAllocator(arguments: [String]) {
        if getenv(marker) != nil {
            unsetenv(marker)
            unsetenv("MALLOC_PERTURB_")
            if let tunables = getenv("GLIBC_TUNABLES").map({ String(cString: $0) }) {
                let rest = tunables.split(separator: ":").filter { $0 != tunable }.joined(separator: ":")
                if rest.isEmpty { unsetenv("GLIBC_TUNABLES") } else { setenv("GLIBC_TUNABLES", rest, 1) }
            }
            restoreProcessName(arguments.first ?? "keychaind")
            return
        }
        let tunables = getenv("GLIBC_TUNABLES").map { String(cString: $0) + ":" } ?? ""
        setenv("GLIBC_TUNABLES", tunables + tunable, 1)
        setenv("MALLOC_PERTURB_", perturbByte, 1)
        setenv(marker, "1", 1)
        let argv = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", argv)
        // Not replaced: run on as we are.
        for pointer in argv { free(pointer) }
        unsetenv(marker)
        unsetenv("MALLOC_PERTURB_")
    }

    /// Gives the process started again through `/proc/self/exe` its name back (the kernel names
    /// it `exe`), so that `ps`, `top` and `pkill keychaind` find it: the last component of
    /// `program`, at most 15 bytes, written to `/proc/self/comm` (the main thread's name, which
    /// is the process's; no other thread runs yet).
    static func restoreProcessName(_ program: String) {
        let last = program.split(separator: "/").last.map(String.init) ?? "keychaind"
        let name = String(decoding: Array(last.utf8).prefix(15), as: UTF8.self)
        let fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = name.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    /// Zeroes the stack below the caller's frame (64 KiB, deeper than a request's calls go).
    public static func scrubStack() { ck_scrub_stack(64 << 10) }
}
