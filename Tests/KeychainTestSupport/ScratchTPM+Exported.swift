// The tests start swtpm and their daemons through ScratchTPM (SoftwareTPM, spawnWithDefaultSignals).
@_exported import ScratchTPM
