import DBusNIO
import DBusWire
import Foundation
import KeychainAgent
import KeychainCore
import Synchronization

/// `Unlock`, `Lock` and their prompts.
///
/// A password keychain that is locked cannot be opened by a D-Bus call: the password never
/// travels over the bus. `Unlock` answers with a prompt object; once the client calls
/// `Prompt.Prompt`, the prompt completes (`Completed(false, ao unlocked)`) as soon as the keychain
/// is unlocked by any path — `security unlock-keychain`, `SecKeychainUnlock`, another client — and
/// `Prompt.Dismiss`, or the client leaving the bus, ends it with `Completed(true, …)`
/// ([Secret Service API, Prompts](https://specifications.freedesktop.org/secret-service/latest/prompts.html)).
extension SecretServiceProvider {
    static let promptPrefix = "/org/freedesktop/secrets/prompt/"
    static let promptInterface = SecretServiceInterface.prompt

    /// How long an unlock prompt waits for the keychain to be unlocked before it is dismissed.
    static let promptLifetime: Duration = .seconds(300)

    /// How often a started unlock prompt looks at the keychain's lock state.
    static let promptPollInterval: Duration = .milliseconds(100)

    func unlock(_ call: DBusMethodCall, _ requested: [String]) async throws -> SecretServiceInterface.Unlocked {
        let groups = try await groups(call.message, call.connection)
        let collections = Set(requested.compactMap { resolve($0)?.collection })
        let locked = try await lockedCollections(collections, groups)
        guard let owner = call.message.sender else {
            return SecretServiceInterface.Unlocked(unlocked: requested, prompt: "/")
        }
        guard !locked.isEmpty else {
            // Open keychains: what stays locked is the items whose access lists keep them from
            // the caller, which the person is asked about.
            let held = try await heldItems(requested, call.message, call.connection)
            guard !held.isEmpty else { return SecretServiceInterface.Unlocked(unlocked: requested, prompt: "/") }
            let heldPaths = Set(held.map(\.path))
            let path = try registerApplicationPrompt(held, owner: owner, connection: call.connection)
            await dismissIfGone(owner, on: call.connection)
            return SecretServiceInterface.Unlocked(unlocked: requested.filter { !heldPaths.contains($0) }, prompt: path)
        }
        let path = try registerUnlockPrompt(
            objects: requested, collections: locked, groups: groups, owner: owner, connection: call.connection)
        await dismissIfGone(owner, on: call.connection)
        return SecretServiceInterface.Unlocked(unlocked: [], prompt: path)
    }

    /// Locks the password keychains of the collections asked for (and so every item in them),
    /// for every process; a password-less keychain has nothing to lock it with. Only the user's
    /// own programs lock keychains (`AccessGroups.managesKeychains`), as through the agent.
    func lock(_ call: DBusMethodCall, _ requested: [String]) async throws -> SecretServiceInterface.Locked {
        let groups = try await groups(call.message, call.connection)
        do {
            try AgentService.requireUserProgram(groups)
        } catch let error as KeychainError {
            throw SecretServiceError.dbusError(error)
        }
        var locked: [String] = []
        for path in requested {
            guard let collection = resolve(path)?.collection, collection.keychainName != nil else { continue }
            let done = try await withKeychain(collection, for: groups) { keychain -> Bool in
                guard keychain.hasPassword else { return false }
                keychain.lock()
                return true
            }
            if done { locked.append(path) }
        }
        return SecretServiceInterface.Locked(locked: locked, prompt: "/")
    }

    /// Those of `collections` whose keychains are locked.
    func lockedCollections(_ collections: Set<SecretCollection>, _ groups: AccessGroups) async throws
        -> [SecretCollection]
    {
        var locked: [SecretCollection] = []
        for collection in collections where collection.keychainName != nil {
            do {
                if try await withKeychain(collection, for: groups, { $0.isLocked }) { locked.append(collection) }
            } catch let error as DBusError where error.errorName == SecretServiceError.noSuchObjectName {
                continue  // deleted meanwhile
            }
        }
        return locked
    }

    /// The most prompts one caller may have open at once (each waits on a keychain, and may hold
    /// a pinentry dialog).
    static let promptsPerCaller = 16

    /// Registers a prompt that unlocks `objects` for `owner` once the keychains of `collections`
    /// are unlocked. The prompt is dismissed after ``promptLifetime`` if one stays locked.
    func registerUnlockPrompt(
        objects requested: [String], collections: [SecretCollection], groups: AccessGroups, owner: String,
        connection: DBusConnection
    ) throws -> String {
        try registerPrompt(kind: "u", owner: owner, result: requested, connection: connection) {
            [self] call, state, complete in
            let connection = call.connection
            // Once the keychains are open, what stays locked to the caller is the items whose
            // access lists keep them from it: asked about in the same prompt, so that one Unlock
            // reads them.
            let unlocked: @Sendable () async -> Void = { [self] in
                guard !state.unlocked.exchange(true, ordering: .relaxed) else { return }
                let held = (try? await heldItems(requested, call.message, connection)) ?? []
                let allowed =
                    held.isEmpty ? true : await askAboutApplication(held, call.message, connection, state: state)
                await complete(connection, !allowed)
            }
            let task = Task {
                while !Task.isCancelled && !state.finished.load(ordering: .relaxed) {
                    if (try? await lockedCollections(Set(collections), groups))?.isEmpty == true {
                        await unlocked()
                        return
                    }
                    try? await Task.sleep(for: Self.promptPollInterval)
                }
            }
            state.waiting.withLock { $0 = task }
            if let sender = call.message.sender {
                let caller = try? await credentials(of: sender, connection).pid
                Task {
                    let outcome = await askForPasswords(
                        on: connection, caller: caller, collections: collections, groups: groups, state: state)
                    switch outcome {
                    case .unlocked: await unlocked()
                    case .cancelled: await complete(connection, true)
                    case .noOneToAsk: break  // the prompt waits for an unlock by another path
                    }
                }
            }
        }
    }

    /// How a prompt ends: on `connection`, dismissed or not. It ends once.
    typealias PromptCompletion = @Sendable (DBusConnection, Bool) async -> Void

    /// Registers a prompt object for `owner` (`kind` starts its path's last element): its
    /// `Prompt` runs `show`, which starts the work and has it complete the prompt; `Dismiss`, the
    /// owner leaving the bus and ``promptLifetime`` end it dismissed. `Completed` carries `result`
    /// unless dismissed. A caller has at most ``promptsPerCaller`` open.
    func registerPrompt(
        kind: String, owner: String, result: [String], connection: DBusConnection,
        show: @escaping @Sendable (DBusMethodCall, PromptState, @escaping PromptCompletion) async -> Void
    ) throws -> String {
        let path = Self.promptPrefix + kind + String(nextSession.add(1, ordering: .relaxed).oldValue)
        guard prompts.withLock({ prompts in prompts.values.count { $0.owner == owner } < Self.promptsPerCaller }) else {
            throw DBusError.method(
                DBusErrorName.limitsExceeded, "too many open prompts (\(Self.promptsPerCaller)): dismiss one first")
        }
        let state = PromptState()
        let complete: PromptCompletion = { [self] connection, dismissed in
            guard !state.finished.exchange(true, ordering: .relaxed) else { return }
            state.dialog.withLock { $0?.cancel() }
            state.question.cancel()
            state.waiting.withLock { $0?.cancel() }
            state.expiry.withLock { $0?.cancel() }
            objects.unregister(path: path)
            prompts.withLock { $0[path] = nil }
            let paths: DBusValue = .variant(Self.paths(dismissed ? [] : result))
            await emit(
                "Completed", interface: Self.promptInterface, path: path, [.boolean(dismissed), paths],
                on: connection)
        }
        prompts.withLock { $0[path] = OpenPrompt(owner: owner, dismiss: { await complete($0, true) }) }
        try objects.register(
            DBusInterface(
                Self.promptInterface,
                methods: [
                    DBusMethod(SecretServiceInterface.showPrompt) { call, _ in
                        guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                        await show(call, state, complete)
                        return DBusNoArguments()
                    },
                    DBusMethod(SecretServiceInterface.dismiss) { call, _ in
                        guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                        await complete(call.connection, true)
                        return DBusNoArguments()
                    },
                ],
                signals: [
                    DBusSignalDescription(
                        "Completed", arguments: [.init("dismissed", .boolean), .init("result", .variant)])
                ]),
            at: path)
        let expiry = Task {
            try? await Task.sleep(for: Self.promptLifetime)
            if !Task.isCancelled { await complete(connection, true) }
        }
        state.expiry.withLock { $0 = expiry }
        return path
    }

    /// What asking for the passwords came to.
    enum PasswordOutcome {
        /// Every keychain is unlocked.
        case unlocked
        /// The person cancelled, or gave a wrong password three times for one keychain.
        case cancelled
        /// No prompter on the session bus, no terminal and no display to ask on, or no program
        /// that runs.
        case noOneToAsk
    }

    /// Asks for the password of each of `collections` still locked, and unlocks it in the agent
    /// (so for every process, with the agent's back-off after wrong passwords); three tries a
    /// keychain. The dialog is the desktop's own prompter when the session bus has one
    /// (``SystemPrompt``) and the caller is not a terminal's program without a display (over SSH,
    /// on a console), else `pinentry`, on the caller's terminal or the agent's display.
    /// - Parameter asker: How the dialog names who asks when it is not the caller's process (the
    ///   Secret portal names the Flatpak app); by default the caller's executable.
    func askForPasswords(
        on connection: DBusConnection, caller: Int32?, asker: String? = nil, collections: [SecretCollection],
        groups: AccessGroups, state: PromptState
    ) async -> PasswordOutcome {
        let program = asker ?? caller.flatMap(PromptedProgram.name(ofProcess:)) ?? "A program"
        let screen = caller.map { PinentryScreen(callerPID: $0) } ?? PinentryScreen(terminal: nil)
        let desktopPrompter =
            screen.isTerminalOnly
            ? nil
            : await DesktopPrompter.available(
                on: connection, desktop: screen.desktop ?? environment["XDG_CURRENT_DESKTOP"])
        for collection in collections {
            guard !state.finished.load(ordering: .relaxed) else { return .cancelled }
            guard let name = collection.keychainName,
                (try? await lockedCollections([collection], groups))?.isEmpty == false
            else { continue }
            var dialog = await desktopPrompter?.begin(on: connection, objects: objects)
            if dialog == nil, let pinentry {
                let environment = environment
                if case .success(let opened?) = await Self.offThePool({
                    try pinentry.open(on: screen, environment: environment)
                }) {
                    dialog = .pinentry(opened)
                }
            }
            guard let dialog else { return .noOneToAsk }
            state.dialog.withLock { $0 = dialog }
            defer { state.dialog.withLock { $0 = nil } }
            let asker = "\(program)\(caller.map { " (pid \($0))" } ?? "")"
            let description =
                "The keychain \"\(collection.label)\" is locked.\n\n\(asker) "
                + "wants to use it. Enter the keychain's password to unlock it."
            var error: String?
            var unlocked = false
            for _ in 0..<3 where !unlocked {
                let answer = await dialog.askPassword(
                    keychain: collection.label, asker: asker, description: description, error: error)
                guard case .success(let password?) = answer, !state.finished.load(ordering: .relaxed) else {
                    await dialog.close()
                    return .cancelled
                }
                do {
                    try await agent.unlock(keychainNamed: name, password: password, for: groups)
                    unlocked = true
                } catch let failure as KeychainError where failure.code == .authFailed {
                    error = "Wrong password. Try again."
                } catch let failure as AgentError where failure.code == .throttled {
                    error = failure.message  // too many wrong passwords: when to try again
                } catch {
                    await dialog.close()
                    return .cancelled
                }
            }
            await dialog.close()
            if !unlocked { return .cancelled }
        }
        return .unlocked
    }

    /// Runs blocking work (a dialog waiting for a person) on a thread of its own, never on
    /// the cooperative pool that serves the bus.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async -> Result<T, any Error> {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Result(catching: body)) }
        }
    }

    /// Dismisses `owner`'s prompts if it already left the bus: its `NameOwnerChanged` may have
    /// been handled before the prompt existed.
    func dismissIfGone(_ owner: String, on connection: DBusConnection) async {
        guard watching.load(ordering: .relaxed),
            let reply = try? await connection.callBus("NameHasOwner", [.string(owner)]),
            reply.body.first == .boolean(false)
        else { return }
        await dismissPrompts(of: owner, on: connection)
    }

    /// Ends the prompts of a caller that left the bus.
    func dismissPrompts(of owner: String, on connection: DBusConnection) async {
        let theirs = prompts.withLock { prompts in prompts.values.filter { $0.owner == owner } }
        for prompt in theirs { await prompt.dismiss(connection) }
    }
}

/// What one prompt shares between its methods: the task waiting for the unlock, and whether
/// it has completed (it completes once).
final class PromptState: Sendable {
    let waiting = Mutex<Task<Void, Never>?>(nil)
    /// The task that dismisses the prompt after ``SecretServiceProvider/promptLifetime``.
    let expiry = Mutex<Task<Void, Never>?>(nil)
    let finished = Atomic<Bool>(false)
    /// The dialog on screen, taken off when the prompt completes another way.
    let dialog = Mutex<PasswordDialog?>(nil)
    /// The access-list dialog, taken off likewise.
    let question = QuestionCancellation()
    /// Whether the keychains were found unlocked: what follows (the access-list questions) runs
    /// once, whichever task found it.
    let unlocked = Atomic<Bool>(false)
}

/// The desktop's own prompter an unlock dialog is shown with.
enum DesktopPrompter: Sendable {
    /// GNOME's system prompter (``SystemPrompt``).
    case gnome
    /// KDE Plasma's secret prompter (``KDEPrompt``).
    case kde

    /// The prompter of the session: KDE's in a Plasma session (`XDG_CURRENT_DESKTOP` names KDE)
    /// when the bus has it, else GNOME's when the bus has it, else KDE's when the bus has it;
    /// `nil` when the bus has neither.
    static func available(on connection: DBusConnection, desktop: String?) async -> DesktopPrompter? {
        let isPlasma = (desktop ?? "").split(separator: ":").contains { $0.uppercased() == "KDE" }
        if isPlasma, await busHas(KDEPrompt.busName, on: connection) { return .kde }
        if await busHas(SystemPrompt.busName, on: connection) { return .gnome }
        if !isPlasma, await busHas(KDEPrompt.busName, on: connection) { return .kde }
        return nil
    }

    /// Whether the session bus has a prompter of `name` running, or one it can start.
    static func busHas(_ name: String, on connection: DBusConnection) async -> Bool {
        if (try? await connection.nameOwner(of: name)) != nil { return true }
        guard let reply = try? await connection.callBus("ListActivatableNames"),
            case .array(_, let names)? = reply.body.first
        else { return false }
        return names.contains(.string(name))
    }

    /// A dialog of this prompter, or `nil` when it cannot be had (another prompt is on screen,
    /// or the prompter does not start).
    func begin(on connection: DBusConnection, objects: DBusObjectTree) async -> PasswordDialog? {
        switch self {
        case .gnome: (try? await SystemPrompt.begin(on: connection, objects: objects)).map(PasswordDialog.system)
        case .kde: (try? await KDEPrompt.begin(on: connection, objects: objects)).map(PasswordDialog.kde)
        }
    }
}

/// A dialog asking a person for a keychain's password: the desktop's prompter, or pinentry.
enum PasswordDialog: Sendable {
    case system(SystemPrompt)
    case kde(KDEPrompt)
    case pinentry(PinentryDialog)

    /// The password typed for `keychain`, `nil` when the person cancelled; `asker` names who
    /// asks, `error` says why the last one did not open it.
    func askPassword(keychain: String, asker: String, description: String, error: String?) async -> Result<
        Data?, any Error
    > {
        switch self {
        case .system(let prompt):
            var properties = [
                "title": "Unlock Keychain", "message": "Unlock the keychain \"\(keychain)\"",
                "description": description, "continue-label": "Unlock", "cancel-label": "Cancel",
            ]
            properties["warning"] = error
            do { return .success(try await prompt.password(properties)) } catch { return .failure(error) }
        case .kde(let prompt):
            // Its dialog says "to unlock the wallet …" in its own words: the name says the rest.
            let name = KDEPrompt.collectionName(keychain: keychain, asker: asker)
            do { return .success(try await prompt.password(collection: name, error: error)) } catch {
                return .failure(error)
            }
        case .pinentry(let dialog):
            return await SecretServiceProvider.offThePool {
                try dialog.askPassword(description: description, error: error)
            }
        }
    }

    /// Takes the dialog away.
    func close() async {
        switch self {
        case .system(let prompt): await prompt.close()
        case .kde(let prompt): await prompt.close()
        case .pinentry(let dialog): dialog.close()
        }
    }

    /// Takes the dialog away from another task (the prompt completed another way): whoever is
    /// waiting for an answer gets none.
    func cancel() {
        switch self {
        case .system(let prompt):
            prompt.end()
            Task { await prompt.close() }
        case .kde(let prompt):
            Task { await prompt.close() }
        case .pinentry(let dialog): dialog.cancel()
        }
    }
}

/// An unlock prompt not yet completed: the caller it was made for, and how to dismiss it.
struct OpenPrompt: Sendable {
    let owner: String
    let dismiss: @Sendable (DBusConnection) async -> Void
}
