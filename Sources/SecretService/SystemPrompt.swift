import Crypto
import CryptoExtras
import DBusNIO
import DBusWire
import Foundation
import Synchronization

/// A password prompt of the desktop's own: GNOME's system prompter (`org.gnome.keyring.SystemPrompter`
/// on the session bus, which `gcr-prompter` serves, and GNOME Shell in a GNOME session), as GNOME
/// Keyring asks for its passwords. The dialog is the desktop's, and the password typed in it never
/// crosses the bus in the clear.
///
/// The protocol is gcr's (GNOME/gcr `gcr/gcr-system-prompt.c`, `gcr-secret-exchange.c`): the
/// agent exports a callback object and calls the prompter's `BeginPrompting(o)`; the prompter
/// answers on the callback's `PromptReady(s reply, a{sv} properties, s exchange)` with its half of
/// the secret exchange; each `PerformPrompt(o, "password", a{sv}, s)` shows the dialog and is
/// answered by `PromptReady("yes" or "no", …)`, the password enciphered in the exchange;
/// `StopPrompting(o)` takes the dialog away. The secret exchange, `sx-aes-1`: Diffie-Hellman in
/// RFC 3526's 1536-bit group, HKDF-SHA256 to an AES-128 key, the password AES-128-CBC with
/// PKCS#7 padding under a fresh IV, each value base64 in a GLib key file.
///
/// Only the connection that owned the prompter's name when the prompt began may call back.
final class SystemPrompt: Sendable {
    static let busName = "org.gnome.keyring.SystemPrompter"
    static let prompterPath = "/org/gnome/keyring/Prompter"
    static let prompterInterface = "org.gnome.keyring.internal.Prompter"
    static let callbackInterface = "org.gnome.keyring.internal.Prompter.Callback"
    static let protocolName = "sx-aes-1"

    /// What the prompter said in one `PromptReady`.
    struct Reply: Sendable {
        var answer: String
        var exchange: String
    }

    let connection: DBusConnection
    let objects: DBusObjectTree
    let path: String
    private let replies: AsyncStream<Reply>
    private let feed: AsyncStream<Reply>.Continuation
    private let agreement = FiniteFieldAgreement(group: .modp1536)
    private let key = Mutex<SymmetricKey?>(nil)

    private static let counter = Atomic<Int>(0)

    private init(connection: DBusConnection, objects: DBusObjectTree) {
        self.connection = connection
        self.objects = objects
        path = "/org/keychain/Prompt/p\(Self.counter.add(1, ordering: .relaxed).newValue)"
        (replies, feed) = AsyncStream.makeStream(of: Reply.self)
    }

    /// Begins prompting with the system prompter (started by the bus if need be), once it has
    /// sent its half of the secret exchange.
    /// - Throws: ``DBusNIO/DBusError`` when there is no prompter or it refuses (another prompt
    ///   is on screen), or when its exchange is malformed.
    static func begin(on connection: DBusConnection, objects: DBusObjectTree) async throws -> SystemPrompt {
        let prompt = SystemPrompt(connection: connection, objects: objects)
        do {
            try await prompt.start()
            return prompt
        } catch {
            prompt.end()
            throw error
        }
    }

    private func start() async throws {
        // Started first, so that its unique name is known before any call back.
        _ = try await connection.call(
            .methodCall(
                path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping", destination: Self.busName))
        guard let owner = try await connection.nameOwner(of: Self.busName) else {
            throw DBusError.method("org.freedesktop.DBus.Error.ServiceUnknown", "no system prompter")
        }
        let feed = feed
        let dictionary = DBusType.dictionary(key: .string, value: .variant)
        try objects.register(
            DBusInterface(
                Self.callbackInterface,
                methods: [
                    DBusMethod(
                        "PromptReady",
                        inputs: [.init("reply", .string), .init("properties", dictionary), .init("exchange", .string)]
                    ) { call in
                        guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                        guard call.arguments.count == 3, case .string(let answer) = call.arguments[0],
                            case .string(let exchange) = call.arguments[2]
                        else { throw DBusError.method("org.freedesktop.DBus.Error.InvalidArgs", "expected (sa{sv}s)") }
                        feed.yield(Reply(answer: answer, exchange: exchange))
                        return []
                    },
                    DBusMethod("PromptDone") { call in
                        guard call.message.sender == owner else { throw SecretServiceError.noSuchObject }
                        feed.finish()
                        return []
                    },
                ]),
            at: path)
        try await prompter("BeginPrompting", [.objectPath(path)])
        guard let first = await next() else { throw Self.failure("the system prompter went away") }
        let fields = try Self.fields(of: first.exchange)
        guard let peer = fields["public"], let agreed = agreement.sessionKey(peerPublicKey: Array(peer)) else {
            throw Self.failure("the system prompter's secret exchange has no valid public value")
        }
        key.withLock { $0 = agreed }
    }

    /// Shows a password dialog with `properties` (`title`, `message`, `description`, `warning`,
    /// `continue-label`, `cancel-label`, …); the password typed, or `nil` when the person cancelled.
    /// - Throws: ``DBusNIO/DBusError`` when the prompter fails or its answer cannot be deciphered.
    func password(_ properties: [String: String]) async throws -> Data? {
        let ours = "[\(Self.protocolName)]\npublic=\(Data(agreement.publicKey).base64EncodedString())\n"
        let values = properties.sorted { $0.key < $1.key }.map {
            DBusDictEntry(.string($0.key), .variant(.string($0.value)))
        }
        try await prompter(
            "PerformPrompt",
            [.objectPath(path), .string("password"), .dictionary(key: .string, value: .variant, values), .string(ours)])
        guard let reply = await next(), reply.answer == "yes" else { return nil }
        let fields = try Self.fields(of: reply.exchange)
        guard let key = key.withLock({ $0 }), let secret = fields["secret"], let iv = fields["iv"], iv.count == 16,
            let password = try? AES._CBC.decrypt(secret, using: key, iv: AES._CBC.IV(ivBytes: iv))
        else { throw Self.failure("the system prompter's answer does not decipher") }
        return password
    }

    /// Takes the dialog away (`StopPrompting`) and stops listening.
    func close() async {
        _ = try? await prompter("StopPrompting", [.objectPath(path)])
        end()
    }

    /// Stops listening: a prompt waiting for an answer gets none.
    func end() {
        feed.finish()
        objects.unregister(path: path)
    }

    private func next() async -> Reply? {
        var iterator = replies.makeAsyncIterator()
        return await iterator.next()
    }

    @discardableResult
    private func prompter(_ member: String, _ body: [DBusValue]) async throws -> DBusMessage {
        try await connection.call(
            .methodCall(
                path: Self.prompterPath, interface: Self.prompterInterface, member: member, destination: Self.busName,
                body: body))
    }

    /// A failure of the prompter, as an error (its text never holds a secret).
    static func failure(_ text: String) -> DBusError { .method("org.freedesktop.DBus.Error.Failed", text) }

    /// The base64 fields of an exchange (a GLib key file with one `[sx-aes-1]` group).
    static func fields(of exchange: String) throws -> [String: Data] {
        var lines = exchange.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        lines.removeAll { $0.isEmpty || $0.hasPrefix("#") }
        guard lines.first == "[\(protocolName)]" else {
            throw Self.failure("the system prompter speaks another secret exchange")
        }
        var fields: [String: Data] = [:]
        for line in lines.dropFirst() {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let name = line[..<equals].trimmingCharacters(in: .whitespaces)
            guard
                let value = Data(base64Encoded: line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces))
            else { throw Self.failure("the system prompter's \(name) is not base64") }
            fields[name] = value
        }
        return fields
    }
}
