import DBusNIO
import Foundation
import KeychainAgentProtocol
import KeychainCore
import KeychainLibc
import Synchronization
import UserPresence

// Per-app access: an item's access list (`KeychainModel.AccessList`) names the applications that
// use it without being asked; keychaind asks the person about any other caller, Deny / Allow /
// Always Allow, as macOS does, and "Always Allow" adds the caller to the list.

extension CallerDirectory {
    /// The caller behind `connection` as an access list matches it, from what was read when it
    /// was identified; a caller nothing names when it cannot be identified.
    package func callingApplication(for connection: DBusConnection) -> CallingApplication {
        let checked = connection.attachment as? Entry
        guard let entry = checked ?? (try? entry(for: connection.peerCredentials, resolving: true)) else {
            return .unnamed(pid: connection.peerCredentials?.pid ?? 0, "not identified")
        }
        return application(entry)
    }

    /// The caller behind `credentials` as an access list matches it.
    package func callingApplication(for credentials: DBusPeerCredentials) -> CallingApplication {
        guard let entry = try? entry(for: credentials, resolving: true) else {
            return .unnamed(pid: credentials.pid, "not identified")
        }
        return application(entry)
    }

    /// An identified caller: a Flatpak app by its app id; a program in the agent's own root by
    /// its executable (and, when an entry pins it, that file's digest, read through
    /// `/proc/PID/exe` so that what is hashed is what runs) and the system service it runs in;
    /// a system service in a root of its own (`ProtectSystem=`, `PrivateTmp=`) by that service
    /// alone; anything else by nothing.
    private func application(_ entry: Entry) -> CallingApplication {
        let pid = entry.peer.pid
        let service = entry.peer.systemService
        switch entry.identity.tier {
        case .sandboxed(let appID):
            return CallingApplication(
                executable: nil, flatpakAppID: appID, executableSHA256: { nil }, pid: pid)
        case .invalidSandbox:
            return .unnamed(pid: pid, "a sandbox that names no app")
        case .manifestBound, .unidentified:
            guard entry.inAgentRoot, let executable = entry.peer.executable else {
                guard let service else { return .unnamed(pid: pid, "in a sandbox that names no app") }
                return CallingApplication(
                    executable: nil, flatpakAppID: nil, systemService: service, executableSHA256: { nil }, pid: pid)
            }
            let cache = resolver.hashCache
            return CallingApplication(
                executable: executable.path, flatpakAppID: nil, systemService: service,
                executableSHA256: { Self.digest(pid: pid, executable: executable, cache: cache) }, pid: pid)
        }
    }

    /// The SHA-256 of the file process `pid` runs, when it is still `executable`.
    private static func digest(pid: Int32, executable: ExecutableIdentity, cache: ExecutableHashCache) -> String? {
        let fd = open("/proc/\(pid)/exe", O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, executable.matches(info), info.st_mode & S_IFMT == S_IFREG else { return nil }
        return try? cache.digest(of: fd, info: info)
    }
}

extension CallingApplication {
    /// What "Always Allow" adds to an access list for this caller: its Flatpak app id, or its
    /// executable pinned by digest (a changed or replaced file is asked about again); `nil` when
    /// nothing names it well enough to be trusted for good: an interpreter (which runs whatever
    /// script it is given), an executable that cannot be read, a sandbox that names no app.
    ///
    /// Never the system service a caller runs in: a unit may run far more than the program
    /// asking (every login of `ssh.service` where logins get no session of their own, every job
    /// of `cron.service`), so a service is trusted only when named (`-T systemd:UNIT`).
    var alwaysAllowed: TrustedApplication? {
        if let appID = flatpakAppID { return TrustedApplication(.flatpak(appID: appID)) }
        guard let path = executable, !IdentityResolver.isInterpreter(path), let digest = executableSHA256() else {
            return nil
        }
        return TrustedApplication(.executable(path: path, sha256: digest))
    }
}

/// The question keychaind asks when an item's access list does not name the caller, through
/// pinentry on the caller's terminal, else on the session's display: "Allow" (Enter), "Always
/// Allow" (when the caller can be named for good), "Deny" (Escape).
package struct ApplicationAccessPrompt: Sendable {
    /// The person's answer.
    package enum Answer: Sendable, Hashable {
        case deny, allowOnce, alwaysAllow
    }

    let pinentry: Pinentry
    let environment: [String: String]

    /// Asks about `caller` (process `pid`) reading or changing `item`. Blocks until the person
    /// answers: call it on a thread of its own.
    /// - Returns: `nil` when there is nobody to ask (no terminal, no display).
    /// - Parameter cancellation: Takes the dialog away when whoever asked no longer waits (a
    ///   Secret Service prompt dismissed); the answer is then "Deny".
    func ask(
        caller: CallingApplication, pid: Int32, item: String, changing: Bool, offersAlways: Bool,
        cancellation: QuestionCancellation? = nil
    ) throws -> Answer? {
        let screen = PinentryScreen(callerPID: pid, sandboxed: caller.executable == nil)
        guard let dialog = try pinentry.open(on: screen, environment: environment) else { return nil }
        defer {
            cancellation?.detach()
            dialog.close()
        }
        guard cancellation?.attach(dialog) ?? true else { return .deny }
        let wants = changing ? "wants to change" : "wants to read the secret of"
        let description =
            "keychain: \(caller.displayName.printable) \(wants) \(item.printable). The item's access list "
            + "does not name this application."
            + (offersAlways ? "" : " It runs code it does not contain, so it can be allowed only once.")
        switch try dialog.confirm(
            description: description, ok: "Allow", notOK: offersAlways ? "Always Allow" : nil, cancel: "Deny")
        {
        case .ok: return .allowOnce
        case .notOK: return .alwaysAllow
        case .cancel: return .deny
        }
    }
}

extension ApplicationAccessPrompt {
    /// A security key's PIN for process `pid`, asked with the same pinentry, on its terminal
    /// (not a sandboxed caller's, whose terminal is named in another namespace) or the
    /// session's display; `nil` when nobody can be asked or the person cancels.
    package func securityKeyPIN(forProcess pid: Int32, sandboxed: Bool) -> SecurityKeyPINSource {
        { [pinentry, environment] question in
            let screen = PinentryScreen(callerPID: pid, sandboxed: sandboxed)
            guard let dialog = try? pinentry.open(on: screen, environment: environment) else { return nil }
            defer { dialog.close() }
            return dialog.askSecurityKeyPIN(question, forProcess: pid)
        }
    }
}

extension PinentryDialog {
    /// Asks for a security key's PIN for process `pid`: its bytes (the dialog's copy wiped), or
    /// `nil` when the person cancels or the dialog fails.
    package func askSecurityKeyPIN(_ question: SecurityKeyPINQuestion, forProcess pid: Int32) -> [UInt8]? {
        guard
            var typed = try? askPassword(
                title: "Security key", description: SecurityKeyPINQuestion.dialogText(question, forProcess: pid),
                prompt: "PIN:", error: question.afterWrongPIN ? "Wrong PIN." : nil)
        else { return nil }
        defer { typed.resetBytes(in: 0..<typed.count) }
        return [UInt8](typed)
    }
}

extension SecurityKeyPINQuestion {
    /// What a dialog asking for the PIN says: who wants the key, and the tries left.
    package static func dialogText(_ question: SecurityKeyPINQuestion, forProcess pid: Int32) -> String {
        let program = PromptedProgram.name(ofProcess: pid) ?? "A program"
        let left = question.triesLeft.map { " The key locks its PIN after \($0) more wrong tries." } ?? ""
        return "\(program) (pid \(pid)) wants to use your security key, which asks for its PIN.\(left)"
    }
}

/// A way to take an access-list dialog off the screen from another task, before or while it
/// shows: what a Secret Service prompt holds, so that dismissing the prompt closes its dialog.
package final class QuestionCancellation: Sendable {
    private let state = Mutex<(cancelled: Bool, dialog: PinentryDialog?)>((false, nil))

    /// A handle no dialog is attached to yet.
    package init() {}

    /// Takes the dialog away, now or as soon as it opens.
    package func cancel() {
        state.withLock {
            $0.cancelled = true
            $0.dialog?.cancel()
        }
    }

    /// Attaches the dialog on screen; `false` when cancelled already.
    func attach(_ dialog: PinentryDialog) -> Bool {
        state.withLock {
            guard !$0.cancelled else { return false }
            $0.dialog = dialog
            return true
        }
    }

    /// Detaches the dialog, once answered.
    func detach() { state.withLock { $0.dialog = nil } }
}

/// Whom an access-list dialog asks about: a process (its pid and start time) and an item.
struct ApplicationQuestion: Hashable, Sendable {
    var pid: Int32
    var startTime: UInt64
    var item: UUID
    var changing: Bool
}

/// What the person answered, and what "Always Allow" adds for that caller.
struct ApplicationVerdict: Sendable {
    var answer: ApplicationAccessPrompt.Answer?
    var always: TrustedApplication?
}

extension AgentService {
    /// The most items one call asks about; past it the call fails (`errSecInteractionNotAllowed`).
    package static let mostApplicationQuestions = 8

    /// The caller behind `connection` as access lists match it.
    func callingApplication(_ connection: DBusConnection) -> CallingApplication {
        callers?.callingApplication(for: connection)
            ?? .unnamed(pid: connection.peerCredentials?.pid ?? 0, "not identified")
    }

    /// Asks the person whether the caller behind `connection` may use the item `pending` names,
    /// off the engine's queue; stores "Always Allow" in the item's access list.
    /// - Throws: `.authFailed` when the person denies it; `.interactionNotAllowed`
    ///   (``KeychainModel/KeychainError/Reason/applicationNotTrusted``) when nobody can be asked.
    func confirmApplication(
        _ pending: ApplicationConfirmation, keychain name: String?, changing: Bool, _ connection: DBusConnection
    ) async throws {
        guard let pid = connection.peerCredentials?.pid else { throw KeychainError.applicationNotTrusted }
        try await confirmApplication(
            pending, keychain: name, changing: changing, caller: callingApplication(connection), pid: pid
        ) { [self] in try callerGroups(connection) }
    }

    /// Asks the person whether `caller` (process `pid`, whose access groups `groups` gives) may
    /// use the item `pending` names, as ``confirmApplication(_:keychain:changing:_:)`` does for
    /// an agent client: for a Secret Service client, whose calls come over the session bus.
    /// - Throws: `.authFailed` when the person denies it; `.interactionNotAllowed`
    ///   (``KeychainModel/KeychainError/Reason/applicationNotTrusted``) when nobody can be asked.
    package func confirmApplication(
        _ pending: ApplicationConfirmation, keychain name: String?, changing: Bool, caller: CallingApplication,
        pid: Int32, cancellation: QuestionCancellation? = nil, groups: @escaping @Sendable () throws -> AccessGroups
    ) async throws {
        guard let prompt = applicationPrompt.withLock({ $0 }) else { throw KeychainError.applicationNotTrusted }
        let start = (try? ProcFS.startTime(pid: pid)) ?? 0
        // One dialog for each process and item at a time: its other calls share the answer. On
        // a thread of its own: naming the caller for good reads its executable, and the person
        // may take minutes.
        let verdict = try await applicationQuestions.ask(
            ApplicationQuestion(pid: pid, startTime: start, item: pending.item, changing: changing)
        ) {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<ApplicationVerdict, any Error>) in
                Thread.detachNewThread {
                    continuation.resume(
                        with: Result {
                            let always = caller.alwaysAllowed
                            let answer = try prompt.ask(
                                caller: caller, pid: pid, item: pending.itemName, changing: changing,
                                offersAlways: always != nil, cancellation: cancellation)
                            return ApplicationVerdict(answer: answer, always: always)
                        })
                }
            }
        }
        switch verdict.answer {
        case nil: throw KeychainError.applicationNotTrusted
        case .deny?: throw KeychainError(.authFailed, "the person denied this application the item")
        case .allowOnce?: return
        case .alwaysAllow?:
            guard let always = verdict.always, let name else { return }
            let groups = try await onWorkQueue { try groups() }
            try await onWorkQueue { [self] in
                try withKeychainOnWorkQueue(named: name, for: groups) { keychain in
                    try Self.trust(always, forItem: pending.item, in: keychain)
                }
            }
        }
    }

    /// Adds `application` to the access list of the item `id`: keychaind's own change, made
    /// after the person chose "Always Allow" (so neither the list nor the owner is asked again).
    private static func trust(_ application: TrustedApplication, forItem id: UUID, in keychain: any KeychainHandle)
        throws
    {
        try KeychainDatabase.$callingApplication.withValue(nil) {
            try KeychainDatabase.$userVerified.withValue(true) {
                var query = ItemQuery(class: nil, persistentID: id)
                query.synchronizable = .any
                guard let item = try keychain.find(query, includeData: false).first,
                    let stored = item.attributes[.access]?.dataValue
                else { return }
                var exact = ItemQuery(class: item.itemClass, persistentID: id)
                exact.synchronizable = .any
                let list = AccessList(serialized: stored).adding(application)
                try keychain.update(exact, attributes: [.access: .data(list.serialized)], data: nil)
            }
        }
    }

    /// Has callers that an item's access list does not name asked about through `pinentry`
    /// (`nil`: never asked; such reads fail with `errSecInteractionNotAllowed`).
    public func askAboutApplications(through pinentry: Pinentry?, environment: [String: String]) {
        applicationPrompt.withLock {
            $0 = pinentry.map { ApplicationAccessPrompt(pinentry: $0, environment: environment) }
        }
    }
}
