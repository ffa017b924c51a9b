import SecurityTool

// `security`: see SecurityTool. The Linux-only commands run in `security-linux` beside it.
SecurityTool.main()
