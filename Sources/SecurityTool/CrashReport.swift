import KeychainLibc

/// Keeps the Swift runtime's crash report off standard error.
///
/// On a crash (or Ctrl-\) the runtime's backtracer prints the registers and the memory they
/// point to, where a secret being read or stored may be. A keychain tool must not print that,
/// so unless the user asks for the report (by setting `SWIFT_BACKTRACE`, which the runtime
/// reads before `main`), the fatal signals get a handler that prints one line and lets the
/// signal end the process as it would have (same signal, same exit status, no report).
enum CrashReport {
    static let signals = [SIGILL, SIGTRAP, SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGQUIT]

    /// Replaces the runtime's handlers, unless `SWIFT_BACKTRACE` is set.
    static func suppress() {
        guard getenv("SWIFT_BACKTRACE") == nil else { return }
        for number in signals { _ = signal(number, handler) }
    }

    /// Async-signal-safe: one `write(2)` of a constant, then the default action.
    private static let handler: @convention(c) (Int32) -> Void = { number in
        let message: StaticString = "security: the process crashed (no crash report: set SWIFT_BACKTRACE for one)\n"
        _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
        _ = signal(number, SIG_DFL)
        _ = raise(number)
    }
}
