import DBusNIO
import DBusWire
import Foundation
import Synchronization

/// A password prompt of KDE Plasma's own: its secret prompter (`org.kde.secretprompter` on the
/// session bus, which `ksecretprompter` serves since Plasma 6.5), as Plasma's `ksecretd` and
/// oo7 ask for a wallet's password in a Plasma session.
///
/// The protocol is ksecretprompter's (KDE/plasma-workspace `ksecretprompter/ksecretprompter.cpp`):
/// the agent exports a request object and calls the prompter's
/// `UnlockCollectionPrompt(o request, s window, s activation token, s collection)`; the prompter
/// shows its dialog and calls back on the request: `Accepted(h)` with the typed password written
/// to one end of a socket pair it then closes, or `Rejected()`. Each answers `i`: 0 to take the
/// dialog away, 1 to keep it, after the agent's `Retry(s reason)` signal on the request (a wrong
/// password). The `Dismiss()` signal takes the dialog away when the prompt ends another way.
///
/// The password crosses the bus as a descriptor, never as bytes in a message. Only the
/// connection that owned the prompter's name when the prompt began may call back.
final class KDEPrompt: Sendable {
    static let busName = KDEPrompterInterface.prompter
    static let prompterPath = "/SecretPrompter"

    /// What the prompter said.
    enum Answer: Sendable {
        /// A password: the prompter waits for the decision to keep or take away its dialog.
        case password(Data)
        /// The person cancelled, or the prompter took its dialog away.
        case rejected
    }

    let connection: DBusConnection
    let objects: DBusObjectTree
    let path: String
    /// The prompter's unique name, the only one that may answer.
    private let owner: String
    private let answers: AsyncStream<Answer>
    private let feed: AsyncStream<Answer>.Continuation
    /// The prompter's `Accepted` call waiting to hear whether the dialog stays.
    private let decision = Mutex<CheckedContinuation<Int32, Never>?>(nil)
    private let shown = Atomic<Bool>(false)
    /// Whether the prompter's dialog is up, as far as the agent knows.
    private let onScreen = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)

    private static let counter = Atomic<Int>(0)
    /// A password read from the prompter is at most this long.
    static let maximumPassword = 64 << 10

    private init(connection: DBusConnection, objects: DBusObjectTree, owner: String) {
        self.connection = connection
        self.objects = objects
        self.owner = owner
        path = "/org/keychain/Prompt/k\(Self.counter.add(1, ordering: .relaxed).newValue)"
        (answers, feed) = AsyncStream.makeStream(of: Answer.self)
    }

    /// Starts the prompter (by the bus if need be) and exports the request object it answers on.
    /// - Throws: ``DBusNIO/DBusError`` when there is no prompter.
    static func begin(on connection: DBusConnection, objects: DBusObjectTree) async throws -> KDEPrompt {
        // Started first, so that its unique name is known before any call back.
        _ = try await connection.call(
            .methodCall(path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping", destination: busName))
        guard let owner = try await connection.nameOwner(of: busName) else {
            throw DBusError.method("org.freedesktop.DBus.Error.ServiceUnknown", "no KDE secret prompter")
        }
        let prompt = KDEPrompt(connection: connection, objects: objects, owner: owner)
        try objects.register(prompt.requestInterface(), at: prompt.path)
        return prompt
    }

    /// `org.kde.secretprompter.request`, answered for the prompter's connection only.
    private func requestInterface() -> DBusInterface {
        DBusInterface(
            KDEPrompterInterface.request,
            methods: [
                DBusMethod(KDEPrompterInterface.accepted) { [self] call, arguments in
                    // Taken at once, so that it is closed when this call is done, whatever happens.
                    let descriptor = call.descriptors?.take(arguments.fd)
                    defer { if let descriptor { Glibc.close(descriptor) } }
                    guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                    guard let descriptor else {
                        throw DBusError.method(
                            "org.freedesktop.DBus.Error.InvalidArgs", "Accepted carried no descriptor")
                    }
                    let read = await SecretServiceProvider.offThePool { try Self.readPassword(from: descriptor) }
                    guard case .success(let password) = read else {
                        // Refused: the prompt ends as if cancelled, and the prompter drops its dialog.
                        dropped()
                        throw DBusError.method("org.freedesktop.DBus.Error.Failed", "the password could not be read")
                    }
                    return KDEPrompterInterface.Decision(action: await decide(after: password))
                },
                DBusMethod(KDEPrompterInterface.rejected) { [self] call, _ in
                    guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                    dropped()
                    return KDEPrompterInterface.Decision(action: KDEPrompterInterface.takeAway)
                },
                DBusMethod(KDEPrompterInterface.dismissed) { [self] call, _ in
                    guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                    dropped()
                    return DBusNoArguments()
                },
            ],
            signals: [
                DBusSignalDescription("Retry", arguments: [.init("reason", .string)]),
                DBusSignalDescription("Dismiss"),
            ])
    }

    /// The prompter's dialog is gone (cancelled, dismissed, or an answer refused): whoever waits
    /// for a password gets none.
    private func dropped() {
        onScreen.store(false, ordering: .relaxed)
        feed.yield(.rejected)
    }

    /// Hands `password` to whoever waits in ``password(collection:error:)`` and waits for the
    /// decision: 1 when it asks again, 0 when the prompt is done.
    private func decide(after password: Data) async -> Int32 {
        await withCheckedContinuation { continuation in
            let stale = decision.withLock { pending in
                let stale = pending
                pending = continuation
                return stale
            }
            stale?.resume(returning: KDEPrompterInterface.takeAway)
            // Ended meanwhile: nobody will decide, so the dialog is taken away now.
            if ended.load(ordering: .relaxed) {
                resolve(KDEPrompterInterface.takeAway)
            } else {
                feed.yield(.password(password))
            }
        }
    }

    /// Asks for the password of `collection` (what the dialog names), the first time by showing
    /// the dialog, afterwards by saying `error` in it; the password typed, or `nil` when the
    /// person cancelled.
    /// - Throws: ``DBusNIO/DBusError`` when the prompter refuses the prompt.
    func password(collection: String, error: String?) async throws -> Data? {
        if !shown.exchange(true, ordering: .relaxed) {
            onScreen.store(true, ordering: .relaxed)
            // ksecretprompter answers once its dialog is up; the person's answer comes later.
            let prompter = KDEPrompterInterface.unlockCollectionPrompt.call(
                .init(request: path, collection: collection), path: Self.prompterPath, destination: Self.busName)
            _ = try await connection.call(prompter)
        } else {
            try? await connection.send(
                .signal(
                    path: path, interface: KDEPrompterInterface.request, member: "Retry",
                    body: [.string(error ?? "Try again.")]))
            resolve(KDEPrompterInterface.keep)
        }
        var iterator = answers.makeAsyncIterator()
        guard case .password(let password)? = await iterator.next() else { return nil }
        return password
    }

    /// Takes the dialog away (the answer to its last `Accepted`, or `Dismiss`) and stops listening.
    func close() async {
        let answered = resolve(KDEPrompterInterface.takeAway)
        if onScreen.exchange(false, ordering: .relaxed), !answered {
            try? await connection.send(
                .signal(path: path, interface: KDEPrompterInterface.request, member: "Dismiss", body: []))
        }
        end()
    }

    /// Stops listening: a prompt waiting for an answer gets none, and a waiting `Accepted` is
    /// told to take the dialog away.
    func end() {
        ended.store(true, ordering: .relaxed)
        resolve(KDEPrompterInterface.takeAway)
        feed.finish()
        objects.unregister(path: path)
    }

    /// Answers the waiting `Accepted`, if any; whether one waited.
    @discardableResult
    private func resolve(_ action: Int32) -> Bool {
        guard
            let pending = decision.withLock({ pending in
                defer { pending = nil }; return pending
            })
        else {
            return false
        }
        pending.resume(returning: action)
        return true
    }

    /// The password the prompter wrote to `descriptor` (a socket it closes after writing), read
    /// to its end: at most ``maximumPassword`` bytes, and within 10 seconds.
    /// - Throws: ``DBusNIO/DBusError`` when it is longer, or does not end in time.
    static func readPassword(from descriptor: Int32) throws -> Data {
        var password = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var finished = false
        defer {
            for index in buffer.indices { buffer[index] = 0 }
            // A password given up on (too long, too late) is wiped, whatever the reason.
            if !finished { password.resetBytes(in: 0..<password.count) }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw SystemPrompt.failure("the prompter's password did not end in time") }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(
                left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            let ready = poll(&poller, 1, max(1, milliseconds))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw SystemPrompt.failure("the prompter's descriptor cannot be read") }
            if ready == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count >= 0 else { throw SystemPrompt.failure("the prompter's descriptor cannot be read") }
            if count == 0 {
                finished = true
                return password
            }
            password.append(contentsOf: buffer[..<count])
            guard password.count <= maximumPassword else {
                throw SystemPrompt.failure("the prompter's password is too long")
            }
        }
    }

    /// What the dialog names: the keychain and who asks, without the markup characters
    /// ksecretprompter's text is written in.
    static func collectionName(keychain: String, asker: String) -> String {
        let text = "\"\(keychain)\", for \(asker)"
        return String(
            text.unicodeScalars.filter { !"<>&".unicodeScalars.contains($0) && $0.value >= 0x20 }.map(Character.init))
    }
}

/// KDE's secret prompter's interfaces (KDE/plasma-workspace
/// `ksecretprompter/org.kde.secretprompter.xml` and the request its dialog calls back), declared
/// once: what ``KDEPrompt`` calls, answers and introspects.
enum KDEPrompterInterface {
    static let prompter = "org.kde.secretprompter"
    static let request = "org.kde.secretprompter.request"

    /// The decision an `Accepted` or `Rejected` is answered with: take the dialog away.
    static let takeAway: Int32 = 0
    /// Keep the dialog, to ask again (after a `Retry` signal).
    static let keep: Int32 = 1

    /// `UnlockCollectionPrompt(o request, s window_id, s activation_token, s collection_name)`.
    static let unlockCollectionPrompt = DBusMethodDeclaration<PromptArguments, DBusNoArguments>(
        "UnlockCollectionPrompt", interface: prompter)
    /// `Accepted(h password) → i`.
    static let accepted = DBusMethodDeclaration<AcceptedArguments, Decision>("Accepted", interface: request)
    /// `Rejected() → i`.
    static let rejected = DBusMethodDeclaration<DBusNoArguments, Decision>("Rejected", interface: request)
    /// `Dismissed()`: the prompter took its dialog away by itself.
    static let dismissed = DBusMethodDeclaration<DBusNoArguments, DBusNoArguments>("Dismissed", interface: request)

    struct PromptArguments: DBusArguments {
        var request = "/"
        /// The window to be modal to: none (the agent has no window).
        var windowID = ""
        var activationToken = ""
        /// What the dialog names ("the wallet …").
        var collection = ""
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("request", &request, .objectPath)
            try fields.field("window_id", &windowID, .string)
            try fields.field("activation_token", &activationToken, .string)
            try fields.field("collection_name", &collection, .string)
        }
    }

    struct AcceptedArguments: DBusArguments {
        /// The index of the password's descriptor among the call's descriptors.
        var fd: DBusValue = .unixFD(0)
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("fd", &fd, .value(of: .unixFD))
        }
    }

    struct Decision: DBusArguments {
        var action: DBusValue = .int32(0)
        init() {}
        init(action: Int32) { self.action = .int32(action) }
        mutating func fields(_ fields: inout some DBusFieldVisitor) throws {
            try fields.field("action", &action, .value(of: .int32))
        }
    }
}
