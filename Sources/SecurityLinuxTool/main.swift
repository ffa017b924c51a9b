import SecurityTool

// `security-linux`: the `security` tool with the Linux-only commands' implementations, which
// `security` runs here (see LinuxCommandRunner) so that it does not load their clients.
SecurityTool.main { command, session in
    switch command {
    case let sync as SyncCommand: return try sync.run(in: session)
    case let importing as ImportSecretService: return try importing.run(in: session)
    case let importing as ImportKeyring: return try importing.run(in: session)
    case let exporting as ExportKeyring: return try exporting.run(in: session)
    default:
        // Only the commands whose execute(in:) asks for security-linux come here.
        throw CommandFailure.failure("\(type(of: command).name): not a command of security-linux")
    }
}
