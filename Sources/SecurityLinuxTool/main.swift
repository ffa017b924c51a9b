import SecurityTool

// `security-linux`: the `security` tool with the Linux-only commands' implementations, which
// `security` runs here (see LinuxCommandRunner) so that it does not load their clients.
SecurityTool.main { command, session in
    switch command {
    case let sync as SyncCommand: return try sync.run(in: session)
    case let importing as ImportSecretService: return try importing.run(in: session)
    default: return try command.execute(in: session)
    }
}
