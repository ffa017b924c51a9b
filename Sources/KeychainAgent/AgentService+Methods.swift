import DBusNIO
import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import UserPresence

/// The agent's methods: one handler for each method ``KeychainAgentProtocol/AgentInterface``
/// declares, with who may call it and what it does to its keychain's idle timer. Adding a
/// method is its declaration in `AgentInterface` plus one `serve` line here.
extension AgentService {
    private typealias I = AgentInterface

    /// Every method the agent serves, in the interface's order.
    var served: [ServedMethod] {
        [
            serve(I.add, idle: .use) { [self] in try using($0) { I.Stored(try $0.add($1.item)) } },
            serve(I.addMany, idle: .use, seen: { !$0.items.isEmpty }) { [self] in
                try using($0) { I.Items(try $0.add(contentsOf: $1.items)) }
            },
            serve(I.upsert, idle: .use) { [self] in
                try using($0) { keychain, arguments in
                    let (item, added) = try keychain.upsert(arguments.item)
                    return I.Upserted(item, added: added)
                }
            },
            serve(I.find, idle: .lookup, seen: { !$0.items.isEmpty }, quick: Self.fewItems) { [self] request in
                try using(request) { keychain, arguments in
                    let items = try keychain.find(arguments.query, includeData: arguments.includeData)
                    logReads(items, of: request)
                    return I.Items(items)
                }
            },
            serve(I.findReadable, idle: .lookup, seen: { !$0.items.isEmpty }, quick: Self.fewItems) { [self] request in
                try using(request) { keychain, arguments in
                    let found = try keychain.findReadable(arguments.query, includeData: arguments.includeData)
                    logReads(found.items, of: request)
                    return I.Readable(found.items, unreadable: found.unreadable.map(\.description))
                }
            },
            serve(I.update, idle: .lookup, seen: { $0.count > 0 }) { [self] in
                try using($0) { I.Count(try $0.update($1.query, attributes: $1.attributes, data: $1.data)) }
            },
            serve(I.delete, idle: .lookup, seen: { $0.count > 0 }) { [self] in
                try using($0) { I.Count(try $0.delete($1.query)) }
            },
            serve(I.unlock, idle: .reread) { [self] in
                try checkingPassword($0) { try $0.unlock(password: $1.password) }
            },
            serve(I.lock, access: .administration, idle: .reread) { [self] in try lock($0) },
            serveWithoutKeychain(I.lockAll, access: .administration, idle: .none) { [self] _ in
                lockAll()
                return DBusNoArguments()
            },
            serve(I.status, idle: .none) { [self] in try using($0) { keychain, _ in I.Status(of: keychain) } },
            serve(I.changePassword, access: .administration, idle: .reread) { [self] in
                try checkingPassword($0) { try $0.changePassword(old: $1.old, new: $1.new) }
            },
            serve(I.rotateKeys, access: .administration, idle: .reread) { [self] in
                try checkingPassword($0) { try $0.rotateKeys(password: $1.password, newPassword: $1.newPassword) }
            },
            serve(I.create, access: .administration, idle: .none) { [self] in
                try create($0.arguments.keychain, password: $0.arguments.password)
                return DBusNoArguments()
            },
            serve(I.deleteKeychain, access: .administration, idle: .none) { [self] in
                try deleteKeychain($0.arguments.keychain)
                return DBusNoArguments()
            },
            serve(I.close, idle: .none) { _ in DBusNoArguments() },
            serve(I.settings, idle: .none) { [self] in
                try using($0) { keychain, _ in I.Settings(try keychain.settings) }
            },
            serve(I.setSettings, access: .administration, idle: .reread) { [self] in
                try using($0) { keychain, arguments in
                    try keychain.setSettings(arguments.settings)
                    return DBusNoArguments()
                }
            },
            serve(I.createTokenKey, idle: .use) { [self] in
                try using($0) { keychain, arguments in
                    let created = try tokenHolder(keychain).createTokenKey(storing: arguments.template)
                    return I.CreatedTokenKey(publicKey: created.publicKey, handle: created.handle)
                }
            },
            serve(I.useTokenKey, idle: .use) { [self] request in
                try using(request) { keychain, arguments in
                    I.TokenKeyOutput(try useTokenKey(arguments, in: keychain, request.connection, request.groups))
                }
            },
            serve(I.storeTokenKey, idle: .use) { [self] in
                try using($0) { I.TokenKeyHandle(try tokenHolder($0).storeTokenKey($1.handle, as: $1.item)) }
            },
            serveWithoutKeychain(I.useAccessGroups, access: .connection, idle: .none) { [self] in
                try narrow($0.connection, to: $0.arguments.groups)
                return DBusNoArguments()
            },
            serve(I.makeRecoveryKey, access: .administration, idle: .use) { [self] in
                try using($0) { keychain, _ in
                    let recovery = try capability(
                        keychain, as: (any KeychainRecovery).self, "this keychain has no recovery key")
                    return I.RecoveryKey(Data(try recovery.makeRecoveryKey().utf8))
                }
            },
            serve(I.setUnlocksWithBootState, access: .administration, idle: .reread) { [self] in
                try checkingPassword($0) { keychain, arguments in
                    let boot = try capability(
                        keychain, as: (any KeychainBootStateUnlock).self,
                        "this keychain cannot unlock without a password")
                    try boot.setUnlocksWithBootState(arguments.enabled, password: arguments.password)
                }
            },
            serve(I.moveIn, idle: .use, seen: { !$0.items.isEmpty }) { [self] in
                try using($0) { I.Items(try $0.add(contentsOf: $1.items, keepingDates: true)) }
            },
            servedOwnerAuthentication(),
            serveWithoutKeychain(I.accessLog, access: .administration, idle: .none) { [self] _ in
                I.AccessLogEntries(accessLog.lines)
            },
            servedFingerAuthentication(),
            servedCompanionAuthentication(),
            serve(I.useTokenKeyOffering, idle: .use) { [self] request in
                // The proof is taken where the person would be asked (answer(_:_:)).
                try using(request) { keychain, arguments in
                    I.TokenKeyOutput(try useTokenKey(arguments.use, in: keychain, request.connection, request.groups))
                }
            },
        ]
    }

    /// Runs a `UseTokenKey` call's request with its key, and records the use of a stored key in
    /// the access log.
    private func useTokenKey(
        _ arguments: I.UseTokenKeyArguments, in keychain: any KeychainHandle, _ connection: DBusConnection,
        _ groups: AccessGroups
    ) throws -> Data {
        let output = try tokenHolder(keychain).useTokenKey(arguments.handle, try Self.request(arguments))
        if let item = Self.storedTokenKey(arguments.handle, in: keychain) {
            logUse(of: item, caller: callerName(connection), groups: groups)
        }
        return output
    }

    /// The key item a stored token key's handle names, its attributes only (a lookup that asks
    /// nobody); `nil` for a key that is not stored.
    package static func storedTokenKey(_ handle: Data, in keychain: any KeychainHandle) -> Item? {
        guard let identity = storedTokenKeyIdentity(handle) else { return nil }
        var query = ItemQuery(class: .key, synchronizable: .any, persistentID: identity, limit: 1)
        query.authenticationUI = .fail
        return try? keychain.find(query, includeData: false).first
    }

    /// Records in the access log that `caller` used `item` (a key signed, agreed or decrypted
    /// with it: no secret was given out), with what the person answered for the call.
    package func logUse(of item: Item, caller: String, groups: AccessGroups) {
        accessLog.record(
            "used", [item], caller: caller, groups: groups, verified: KeychainDatabase.userVerified,
            finger: KeychainDatabase.fingerAnswer, companion: KeychainDatabase.companionAnswer,
            allowed: KeychainDatabase.allowedItems)
    }

    /// Records in the access log the secrets a lookup gives out (none for a listing).
    private func logReads<R>(_ items: [Item], of request: Request<I.LookupArguments, R>) {
        guard request.arguments.includeData, !items.isEmpty else { return }
        accessLog.record(
            "read", items, caller: callerName(request.connection), groups: request.groups,
            verified: KeychainDatabase.userVerified, finger: KeychainDatabase.fingerAnswer,
            companion: KeychainDatabase.companionAnswer, allowed: KeychainDatabase.allowedItems)
    }

    /// The caller as the access log names it (``CallerDirectory/logName(for:)-(DBusConnection)``).
    private func callerName(_ connection: DBusConnection) -> String {
        callers?.logName(for: connection) ?? "pid \(connection.peerCredentials?.pid ?? 0) (not identified)"
    }

    /// The token key request a `UseTokenKey` call carries.
    /// - Throws: `.parameter` for an unknown operation.
    private static func request(_ arguments: I.UseTokenKeyArguments) throws -> TokenKeyRequest {
        guard let operation = TokenKeyRequest.Operation(rawValue: arguments.operation) else {
            throw KeychainError(.parameter, "bad token key request")
        }
        return TokenKeyRequest(
            operation, input: arguments.input, kdfHash: Int(arguments.kdfHash), sharedInfo: arguments.sharedInfo,
            outputSize: Int(arguments.outputSize))
    }

    // MARK: Serving a declaration

    /// Who may call a method.
    enum Access: Sendable {
        /// A caller with some access group: items are read and written as its groups allow.
        case items
        /// Only the user's own programs (``KeychainModel/AccessGroups/managesKeychains``): the
        /// methods that manage keychains rather than items in them.
        case administration
        /// Any caller: the method works on the connection itself (`UseAccessGroups`).
        case connection
    }

    /// A method as the agent serves it.
    struct ServedMethod: Sendable {
        /// The declaration's name, signature and flags.
        let description: DBusMethodDescription
        /// Who may call it.
        let access: Access
        /// What it does to its keychain's idle timer.
        let effect: IdleLock.Effect
        /// The method to register.
        let method: DBusMethod
    }

    /// One request, as a handler sees it.
    struct Request<Arguments: DBusArguments, Reply: DBusArguments>: Sendable {
        /// The call's arguments, decoded.
        let arguments: Arguments
        /// The caller's access groups, as it narrowed them (none for ``Access/connection``).
        let groups: AccessGroups
        /// The connection the call came on.
        let connection: DBusConnection
        /// What the method does to its keychain's idle timer.
        let effect: IdleLock.Effect
        /// Whether a reply shows the caller some of the keychain's items (for ``IdleLock``).
        let seen: @Sendable (Reply) -> Bool
    }

    /// Serves `method` with `body`: a call is decoded into its arguments once the caller may
    /// make it, and `body` runs on the engine's queue, or, for a method declared
    /// ``DBusWire/DBusMethodDescription/answersOnEventLoop``, first where it was read, when that
    /// is quick (see ``answerOnEventLoop(_:_:_:when:)``): on a keychain already open, and when
    /// `quick` says its arguments ask for little. A keychain error is the caller's D-Bus error.
    private func serve<A: AgentKeychainArguments, R: DBusArguments>(
        _ method: DBusMethodDeclaration<A, R>, access: Access = .items, idle effect: IdleLock.Effect,
        seen: @escaping @Sendable (R) -> Bool = { _ in true }, quick: @escaping @Sendable (A) -> Bool = { _ in true },
        _ body: @escaping @Sendable (Request<A, R>) throws -> R
    ) -> ServedMethod {
        let handler = Handler(access: access, effect: effect, seen: seen, body: body)
        var onEventLoop: (@Sendable (DBusMethodCall, inout DBusBodyReader) throws -> [DBusValue]?)?
        if method.description.answersOnEventLoop {
            onEventLoop = { [self] call, wire in
                try answerOnEventLoop(handler, call, &wire) { isOpen($0.keychain) && quick($0) }
            }
        }
        return served(method, handler, onEventLoop: onEventLoop)
    }

    /// Serves `method`, which names no keychain, with `body`, on the engine's queue.
    private func serveWithoutKeychain<A: DBusArguments, R: DBusArguments>(
        _ method: DBusMethodDeclaration<A, R>, access: Access = .items, idle effect: IdleLock.Effect,
        _ body: @escaping @Sendable (Request<A, R>) throws -> R
    ) -> ServedMethod {
        served(method, Handler(access: access, effect: effect, seen: { _ in true }, body: body), onEventLoop: nil)
    }

    /// The method to register for `method` and its handler.
    private func served<A, R>(
        _ method: DBusMethodDeclaration<A, R>, _ handler: Handler<A, R>,
        onEventLoop: (@Sendable (DBusMethodCall, inout DBusBodyReader) throws -> [DBusValue]?)?
    ) -> ServedMethod {
        let access = handler.access
        let effect = handler.effect
        let served = DBusMethod(
            method.name, inputs: method.inputs, outputs: method.outputs, wireHandler: onEventLoop
        ) { [self] call in try await answer(handler, call) }
        return ServedMethod(description: method.description, access: access, effect: effect, method: served)
    }

    /// A method's handler and what the agent needs to know to run it.
    struct Handler<A: DBusArguments, R: DBusArguments>: Sendable {
        let access: Access
        let effect: IdleLock.Effect
        let seen: @Sendable (R) -> Bool
        let body: @Sendable (Request<A, R>) throws -> R
    }

    /// Runs a call on the engine's queue. A call that matched an item asking for the person, and
    /// may ask (``KeychainModel/KeychainError/Reason/authenticateUser``,
    /// ``KeychainModel/KeychainError/Reason/authenticateWithFinger``), has what
    /// ``KeychainModel/CallAuthentication`` says done for the caller (its proof taken, the owner
    /// asked through polkit, the reader read or touched), off the queue, then runs again with the
    /// answers, for that call alone; an item whose access list does not name the caller has the
    /// person asked to allow it.
    private func answer<A, R>(_ handler: Handler<A, R>, _ call: DBusMethodCall) async throws -> [DBusValue] {
        let values = call.arguments
        let connection = call.connection
        return try await Self.agentErrorsAsync {
            var answers: CallAuthentication?
            var allowed: Set<UUID> = []
            while true {
                do {
                    return try await answerOnWorkQueue(
                        handler, values, connection, answers: answers ?? CallAuthentication(proof: nil),
                        allowed: allowed)
                } catch let error as KeychainError
                    where CallAuthentication.asksPerson(error)
                {
                    var call: CallAuthentication
                    if let answers {
                        call = answers
                    } else {
                        // The proof is looked up at the first refusal only, sparing every other
                        // call its decoding; a password or security-key proof answers at once.
                        call = CallAuthentication(proof: offeredProof(A.self, values, connection))
                        answers = call
                        if call.ownerVerified || call.companion != nil { continue }
                    }
                    guard let step = call.step(after: error) else { throw error }
                    try await take(step, &call, connection)
                    answers = call
                } catch let error as KeychainError where error.reason == .confirmApplication {
                    // An item whose access list does not name the caller: the person is asked,
                    // once for each such item the call matched, then the call runs again.
                    guard let pending = error.underlying as? ApplicationConfirmation, !allowed.contains(pending.item),
                        allowed.count < Self.mostApplicationQuestions
                    else { throw KeychainError.applicationNotTrusted }
                    let arguments = try? A(decoding: values)
                    try await confirmApplication(
                        pending, keychain: (arguments as? any AgentKeychainArguments)?.keychain,
                        changing: arguments is I.UpdateArguments, connection)
                    allowed.insert(pending.item)
                }
            }
        }
    }

    /// Does `step` for the caller, off the engine's queue, and records its answer in `answers`.
    private func take(
        _ step: CallAuthentication.Step, _ answers: inout CallAuthentication, _ connection: DBusConnection
    )
        async throws
    {
        try await take(step, &answers, asking: try person(of: connection, hint: true))
    }

    /// Does `step` for `person`'s process, off the engine's queue, and records its answer in
    /// `answers`: what a call does when an item asks for the person (``answer(_:_:)``), and an
    /// SSH agent's signature with a key that asks.
    package func take(
        _ step: CallAuthentication.Step, _ answers: inout CallAuthentication, asking person: PersonAsked
    ) async throws {
        switch step {
        case .askOwner:
            try await verify(person)
            answers.ownerAnswered()
        case .readFingerState:
            answers.read(fingerState: try await Self.offQueue { try PolkitUserVerifier.fingerState(environment: $0) })
        case .touchFinger:
            _ = try await touchFinger(person)
            answers.fingerMatched()
        case .touchCompanion:
            answers.companionSigned(publicKey: try await touchSecurityKey(person))
        }
    }

    /// Runs a call on the engine's queue, its caller verified by the person or not, with the
    /// items the person allowed it.
    private func answerOnWorkQueue<A, R>(
        _ handler: Handler<A, R>, _ values: [DBusValue], _ connection: DBusConnection, answers: CallAuthentication,
        allowed: Set<UUID>
    ) async throws -> [DBusValue] {
        try await onWorkQueue { [self] in
            try Self.withAnswers(answers, allowed: allowed) {
                // Arguments are decoded once the caller may make the call; the dispatcher has
                // checked their types, what they hold is checked here (`.parameter`).
                guard handler.access != .connection else {
                    return try run(handler, { try A(decoding: values) }, groups: AccessGroups([]), connection).values
                }
                defer { MemoryHygiene.scrubStack() }
                let groups = try callerGroups(connection)
                return try run(handler, { try A(decoding: values) }, groups: groups, connection).values
            }
        }
    }

    /// Runs `body` (on the engine's queue) with what the person answered for this call and the
    /// items they allowed it, where the engine looks for them.
    package static func withAnswers<T>(
        _ answers: CallAuthentication, allowed: Set<UUID> = [], _ body: () throws -> T
    ) rethrows -> T {
        try KeychainDatabase.$userVerified.withValue(answers.ownerVerified) {
            try KeychainDatabase.$fingerAnswer.withValue(answers.finger) {
                try KeychainDatabase.$companionAnswer.withValue(answers.companion) {
                    try KeychainDatabase.$allowedItems.withValue(allowed, operation: body)
                }
            }
        }
    }

    /// Runs `body`, which blocks (a D-Bus exchange that waits for the person), on a thread of its
    /// own with this process's environment, never on the concurrency pool.
    private static func offQueue<T: Sendable>(_ body: @escaping @Sendable ([String: String]) throws -> T) async throws
        -> T
    {
        let environment = ProcessInfo.processInfo.environment
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            Thread.detachNewThread { continuation.resume(with: Result { try body(environment) }) }
        }
    }

    /// Has polkit ask the person to authenticate for `person`'s process (``UserPresence/PolkitUserVerifier``),
    /// on a thread of its own: the answer may take minutes, and other calls go on meanwhile. The
    /// process is named by its kernel credentials and start time, never by what it says.
    private func verify(_ person: PersonAsked) async throws {
        // One question for each process at a time: its other calls wait for that answer.
        try await ownerQuestions.ask(person.subject) {
            try await Self.offQueue {
                try PolkitUserVerifier.verify(person.subject, environment: $0, answering: person.answering)
            }
        }
    }

    /// Has the person touch fprintd's reader, claimed for this agent's user, on a thread of its
    /// own, until an enrolled finger matches; one question for each process at a time. The
    /// person's terminal, when it has one, is told that the reader waits: a read gives no sign of
    /// its own.
    /// - Returns: The reader's domain state the finger matched in.
    private func touchFinger(_ person: PersonAsked) async throws -> Data {
        try await fingerQuestions.ask(person.subject) {
            try await Self.offQueue { environment in
                try PolkitUserVerifier.verifyFinger(environment: environment) { reader in
                    if let terminal = person.terminal {
                        TerminalHint.write(TerminalHint.touchReader(reader.name), to: terminal)
                    }
                }
            }
        }
    }

    /// Has the person touch a security key paired with this agent's user (telling their
    /// terminal, as ``touchFinger(_:)`` does).
    /// - Returns: The public key of the key that signed.
    private func touchSecurityKey(_ person: PersonAsked) async throws -> Data {
        try await Self.offQueue { environment in
            try PolkitUserVerifier.verifyCompanion(
                environment: environment,
                touchRequested: {
                    if let terminal = person.terminal {
                        TerminalHint.write(TerminalHint.touchSecurityKey, to: terminal)
                    }
                }, pin: person.pin)
        }
    }

    /// The caller as the person is asked about it: its process, and with `hint` its terminal
    /// (as pinentry finds it, for a caller that runs an executable of the host: a sandboxed
    /// caller's terminal is named in another namespace).
    private func person(of connection: DBusConnection, hint: Bool) throws -> PersonAsked {
        let subject = try Self.subject(of: connection)
        let sandboxed = callingApplication(connection).executable == nil
        let terminal = hint ? PinentryScreen(callerPID: subject.pid, sandboxed: sandboxed).terminal : nil
        return PersonAsked(
            subject: subject, terminal: terminal,
            pin: applicationPrompt.withLock { $0 }?.securityKeyPIN(forProcess: subject.pid, sandboxed: sandboxed))
    }

    /// The calling process, as polkit names it.
    private static func subject(of connection: DBusConnection) throws -> ProcessSubject {
        guard let peer = connection.peerCredentials else {
            throw KeychainError(.interactionNotAllowed, "the caller cannot be named to polkit")
        }
        do {
            return try ProcessSubject.of(pid: peer.pid, uid: peer.uid)
        } catch {
            throw KeychainError(.interactionNotAllowed, "the caller is gone: \(error)")
        }
    }

    /// What the proof a lookup or an update offers (``KeychainModel/ItemQuery/ownerProof``)
    /// answers, when this agent made it for the calling process and it is still good.
    private func offeredProof<A: DBusArguments>(_: A.Type, _ values: [DBusValue], _ connection: DBusConnection)
        -> ProofAnswer?
    {
        let arguments = try? A(decoding: values)
        let query = (arguments as? I.LookupArguments)?.query ?? (arguments as? I.UpdateArguments)?.query
        let keyProof = (arguments as? I.UseTokenKeyOfferingArguments)?.proof
        guard let proof = query?.ownerProof ?? keyProof, let subject = try? Self.subject(of: connection) else {
            return nil
        }
        return ownerProofs.answer(to: proof, for: subject)
    }

    /// `AuthenticateOwner`: polkit asks the person for the caller (``verify(_:)``).
    private func servedOwnerAuthentication() -> ServedMethod {
        servedProof(I.authenticateOwner) { [self] connection in
            let person = try person(of: connection, hint: false)
            try await verify(person)
            return (person.subject, .owner, { I.OwnerProof($0) })
        }
    }

    /// `AuthenticateWithFinger`: the person touches fprintd's reader for the caller's user; the
    /// proof answers what a finger answers, in the reader's state it matched in.
    private func servedFingerAuthentication() -> ServedMethod {
        servedProof(I.authenticateWithFinger) { [self] connection in
            let person = try person(of: connection, hint: false)
            let state = try await touchFinger(person)
            return (person.subject, .finger(state: state), { I.FingerProof($0, state: state) })
        }
    }

    /// `AuthenticateWithCompanion`: the person touches a security key paired with this agent's
    /// user; the proof answers what a touch of that key answers.
    private func servedCompanionAuthentication() -> ServedMethod {
        servedProof(I.authenticateWithCompanion) { [self] connection in
            let person = try person(of: connection, hint: false)
            let key = try await touchSecurityKey(person)
            return (person.subject, .companion(publicKey: key), { I.CompanionProof($0, publicKey: key) })
        }
    }

    /// A method that has the person answer for the caller and makes a proof of it (what an
    /// `LAContext` evaluation calls): the caller's groups are checked on the engine's queue
    /// (identifying it may read files); `ask` asks off it, naming the process answered for, with
    /// what, and the reply that carries the proof; the proof lasts the seconds asked, 300 at most.
    private func servedProof<R: DBusArguments>(
        _ method: I.Method<I.AuthenticateOwnerArguments, R>,
        ask: @escaping @Sendable (DBusConnection) async throws -> (ProcessSubject, ProofAnswer, (Data) -> R)
    ) -> ServedMethod {
        let served = DBusMethod(method.name, inputs: method.inputs, outputs: method.outputs, wireHandler: nil) {
            [self] call in
            let connection = call.connection
            let values = call.arguments
            return try await Self.agentErrorsAsync {
                let arguments = try await onWorkQueue { [self] in
                    try Self.requireSomeGroup(try callerGroups(connection))
                    return try I.AuthenticateOwnerArguments(decoding: values)
                }
                let (subject, answer, reply) = try await ask(connection)
                let seconds = arguments.seconds == 0 ? OwnerProofs.longestLifetime : .seconds(Int(arguments.seconds))
                return reply(ownerProofs.make(for: subject, answer: answer, lifetime: seconds)).values
            }
        }
        return ServedMethod(description: method.description, access: .items, effect: .none, method: served)
    }

    /// Answers a quick call where it was read, on the connection's event loop, without the two
    /// hand-offs to the engine's queue and back: a lookup of a few items (``quickLimit``), the
    /// status or settings of a keychain this agent has already opened, its arguments read
    /// straight from the wire. Anything else (a keychain to open first, an unlimited lookup, a
    /// caller not identified yet, arguments the agent refuses) is declined (`nil`) and runs on
    /// the engine's queue as every other call does; bytes that do not form the arguments close
    /// the connection.
    private func answerOnEventLoop<A, R>(
        _ handler: Handler<A, R>, _ call: DBusMethodCall, _ wire: inout DBusBodyReader, when isQuick: (A) -> Bool
    ) throws -> [DBusValue]? {
        let arguments: A
        do {
            arguments = try A(reading: &wire)
        } catch is KeychainError {
            return nil
        }
        guard isQuick(arguments) else { return nil }
        return try Self.agentErrors {
            // A caller not identified yet goes to the queue: identifying may read many files.
            guard let groups = try knownGroups(call.connection) else { return nil }
            defer { MemoryHygiene.scrubStack() }
            do {
                return try run(handler, { arguments }, groups: groups, call.connection).values
            } catch let error as KeychainError
                where CallAuthentication.asksPerson(error) || error.reason == .confirmApplication
            {
                return nil  // the person is asked from the queue's side (answer(_:_:))
            }
        }
    }

    /// The most items a lookup answered on the event loop may ask for: a larger or unlimited
    /// one may decrypt thousands of items, and goes to the engine's queue.
    static let quickLimit = 16

    /// Whether a lookup asks for few enough items (``quickLimit``) to be answered on the event loop.
    @Sendable static func fewItems(_ arguments: AgentInterface.LookupArguments) -> Bool {
        arguments.query.limit.map { $0 <= quickLimit } ?? false
    }

    /// Checks that the caller may make the call, decodes its arguments, and runs its handler.
    private func run<A, R>(
        _ handler: Handler<A, R>, _ decode: () throws -> A, groups: AccessGroups, _ connection: DBusConnection
    ) throws -> R {
        switch handler.access {
        case .connection: break
        case .items: try Self.requireSomeGroup(groups)
        case .administration:
            try Self.requireSomeGroup(groups)
            try Self.requireUserProgram(groups)
        }
        let request = Request<A, R>(
            arguments: try decode(), groups: groups, connection: connection, effect: handler.effect,
            seen: handler.seen)
        return try KeychainDatabase.$callingApplication.withValue(callingApplication(connection)) {
            try handler.body(request)
        }
    }

    /// Runs `body`, the engine's errors become the agent's D-Bus errors.
    private static func agentErrorsAsync<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as KeychainError {
            throw AgentCodec.dbusError(error)
        } catch let error as AgentError {
            throw AgentCodec.dbusError(error.keychainError)
        }
    }

    /// Runs `body`, the engine's errors become the agent's D-Bus errors.
    private static func agentErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as KeychainError {
            throw AgentCodec.dbusError(error)
        } catch let error as AgentError {
            throw AgentCodec.dbusError(error.keychainError)
        }
    }

    // MARK: What handlers share

    /// Runs `body` on the request's keychain as its caller sees it, with the method's effect on
    /// the keychain's idle timer.
    private func using<A: AgentKeychainArguments, R>(
        _ request: Request<A, R>, _ body: (any KeychainHandle, A) throws -> R
    ) throws -> R {
        let keychain = try keychain(request.arguments.keychain)
        return try idle.around(keychain, request.effect, seen: request.seen) {
            try body(keychain.acting(for: request.groups), request.arguments)
        }
    }

    /// Runs `body`, which checks a password, on the request's keychain, in its back-off after
    /// wrong passwords (``throttled(_:for:_:)``).
    private func checkingPassword<A: AgentKeychainArguments>(
        _ request: Request<A, DBusNoArguments>, _ body: (any KeychainHandle, A) throws -> Void
    ) throws -> DBusNoArguments {
        let name = request.arguments.keychain
        let keychain = try keychain(name)
        try idle.around(keychain, request.effect) {
            try throttled(keychain.path ?? name, for: request.groups) {
                try body(keychain.acting(for: request.groups), request.arguments)
            }
        }
        return DBusNoArguments()
    }

    /// `Lock`: as `security lock-keychain`, after-first-unlock items too (an idle lock keeps them).
    private func lock(_ request: Request<I.KeychainArguments, DBusNoArguments>) throws -> DBusNoArguments {
        let keychain = try keychain(request.arguments.keychain)
        idle.around(keychain, request.effect) { keychain.lock(includingAfterFirstUnlockItems: true) }
        return DBusNoArguments()
    }

    /// The method the agent serves under `name`, if any.
    func served(_ name: String) -> ServedMethod? { served.first { $0.description.name == name } }
}
