import UserPresence

/// Who the person is asked for, and where: a caller's process (as polkit names it), the terminal
/// a hint that a device waits goes to, and who answers polkit's questions for it when no
/// authentication agent can (``UserPresence/PolkitAnswering``).
package struct PersonAsked: Sendable {
    /// The process the person answers for.
    package var subject: ProcessSubject
    /// Its terminal, when a line may be written there.
    package var terminal: String?
    /// Who answers for a process that polkit has no agent for; `nil` to leave it unasked.
    package var answering: PolkitAnswering?
    /// Who gives a security key's PIN when it asks; `nil` refuses such a key.
    package var pin: SecurityKeyPINSource?

    /// A person asked for `subject`.
    package init(
        subject: ProcessSubject, terminal: String? = nil, answering: PolkitAnswering? = nil,
        pin: SecurityKeyPINSource? = nil
    ) {
        self.subject = subject
        self.terminal = terminal
        self.answering = answering
        self.pin = pin
    }
}
