import Crypto
import CryptoExtras
import Foundation
import KeychainLibc
import Testing
import DBusNIO
import DBusWire

@testable import SecretService

/// `dh-ietf1024-sha256-aes128-cbc-pkcs7`: the key agreement and the secret encoding, against
/// known answers computed independently with Python (secretstorage's `dhcrypto` construction).
@Suite("Secret Service session encryption")
struct SessionEncryptionTests {
    static func exponent(_ seed: String) -> Data { Data(SHA256.hash(data: Data(seed.utf8))) }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func key(_ key: SymmetricKey) -> String { key.withUnsafeBytes { hex($0) } }

    @Test(
        "Known answers: both ends derive the same AES key, including when the shared secret starts with a zero byte",
        arguments: [
            ("kat-server", "1cda7982fbea2dbc17bc92997f976d30"),
            // This shared secret starts with 0x00: without the left padding the key is bc6e56a2…
            ("kat-server-287", "37ba29bc214c68e4e546a41bed82204b"),
        ])
    func knownAnswerKeys(server: String, expected: String) throws {
        let client = FiniteFieldAgreement(group: .oakley2, privateExponent: Self.exponent("kat-client"))
        let provider = FiniteFieldAgreement(group: .oakley2, privateExponent: Self.exponent(server))
        #expect(client.publicKey.count == 128 && provider.publicKey.count == 128)
        let serverKey = try #require(provider.sessionKey(peerPublicKey: client.publicKey))
        let clientKey = try #require(client.sessionKey(peerPublicKey: provider.publicKey))
        #expect(Self.key(serverKey) == expected)
        #expect(Self.key(clientKey) == expected)
        // libsecret sends its public value without leading zero bytes: the same key.
        let minimal = Array(client.publicKey.drop { $0 == 0 })
        #expect(provider.sessionKey(peerPublicKey: minimal).map(Self.key) == expected)
    }

    @Test(
        "Known answers: AES-128-CBC with PKCS#7 padding under the agreed key",
        arguments: [
            ("pässwörd", "b08a25a970fd4349bfa1eb0f3ff65d70"),
            ("", "e33e37d2f257936617df359d1f14d039"),
        ])
    func knownAnswerCiphertexts(plaintext: String, expected: String) throws {
        let client = FiniteFieldAgreement(group: .oakley2, privateExponent: Self.exponent("kat-client"))
        let provider = FiniteFieldAgreement(group: .oakley2, privateExponent: Self.exponent("kat-server"))
        let key = try #require(provider.sessionKey(peerPublicKey: client.publicKey))
        let session = SecretSession(owner: ":1.1", key: key)
        let iv = try AES._CBC.IV(ivBytes: Array(0..<16 as Range<UInt8>))
        let sealed = try session.seal(Data(plaintext.utf8), iv: iv)
        #expect(sealed.parameters == Array(0..<16))
        #expect(Self.hex(sealed.value) == expected)
        #expect(session.open(parameters: sealed.parameters, value: sealed.value) == Data(plaintext.utf8))
    }

    @Test(
        "Public values outside 2…p−2, or longer than any client sends, are refused",
        arguments: ["empty", "zero", "one", "p-1", "p", "2^1024", "2^1600-1"])
    func outOfRangePublicValues(name: String) {
        let prime = FiniteFieldAgreement.Group.oakley2.prime
        let value: [UInt8] =
            switch name {
            case "empty": []
            case "zero": [0, 0, 0]
            case "one": [1]
            case "p-1": prime.dropLast() + [prime[prime.count - 1] - 1]
            case "p": prime
            case "2^1024": [1] + [UInt8](repeating: 0, count: 128)
            default: [UInt8](repeating: 0xFF, count: 200)
            }
        let agreement = FiniteFieldAgreement(group: .oakley2)
        #expect(agreement.sessionKey(peerPublicKey: value) == nil)
        #expect(agreement.sessionKey(peerPublicKey: [2]) != nil, "2 is in range")
    }

    @Test("Malformed secrets are refused: wrong IV size, empty or partial blocks, bad padding, wrong key")
    func malformedSecrets() throws {
        let key = SymmetricKey(size: .bits128)
        let session = SecretSession(owner: ":1.1", key: key)
        let sealed = try session.seal(Data("secret".utf8))
        #expect(session.open(parameters: sealed.parameters, value: sealed.value) == Data("secret".utf8))
        #expect(session.open(parameters: Array(sealed.parameters.prefix(15)), value: sealed.value) == nil)
        #expect(session.open(parameters: sealed.parameters, value: []) == nil)
        #expect(session.open(parameters: sealed.parameters, value: Array(sealed.value.prefix(15))) == nil)
        let other = SecretSession(owner: ":1.1", key: SymmetricKey(size: .bits128))
        // Under another key the padding is wrong in all but about 1 case in 256; try several IVs.
        var refused = 0
        for _ in 0..<8 {
            let again = try session.seal(Data("secret".utf8))
            if other.open(parameters: again.parameters, value: again.value) == nil { refused += 1 }
        }
        #expect(refused >= 6)
        // A plain session takes no parameters.
        let plain = SecretSession(owner: ":1.1", key: nil)
        #expect(plain.open(parameters: [], value: [1, 2]) == Data([1, 2]))
        #expect(plain.open(parameters: [0], value: [1, 2]) == nil)
    }

    @Test("Random secrets of every length up to three blocks cross a fresh session both ways")
    func randomRoundTrips() throws {
        let client = FiniteFieldAgreement(group: .oakley2)
        let provider = FiniteFieldAgreement(group: .oakley2)
        let providerKey = try #require(provider.sessionKey(peerPublicKey: client.publicKey))
        let clientKey = try #require(client.sessionKey(peerPublicKey: provider.publicKey))
        #expect(Self.key(providerKey) == Self.key(clientKey))
        let sender = SecretSession(owner: ":1.1", key: providerKey)
        let receiver = SecretSession(owner: ":1.2", key: clientKey)
        for length in 0...48 {
            let secret = Data((0..<length).map { _ in UInt8.random(in: 0...255) })
            let sealed = try sender.seal(secret)
            #expect(sealed.value.count == (length / 16 + 1) * 16)
            #expect(receiver.open(parameters: sealed.parameters, value: sealed.value) == secret)
        }
    }
}

/// What a bus monitor sees of secrets: `secret-tool` (libsecret, which opens a DH session)
/// against the built provider on a private bus, watched by the real `dbus-monitor --binary`.
@Suite("Secret Service session encryption on the bus")
struct SessionEncryptionOnTheBusTests {
    @Test("secret-tool's secrets cross the bus encrypted; a plain session's secret is visible to the same monitor")
    func monitoredTransfer() async throws {
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let monitor = try LaunchedTool(
            try requireTool("/usr/bin/dbus-monitor"), ["--session", "--binary"], stdin: nil,
            environment: bus.environment, deadline: 300)
        defer { monitor.stop() }
        let capture = monitor.directory + "/out"
        func captured() -> Data { FileManager.default.contents(atPath: capture) ?? Data() }
        /// Calls the bus with a unique marker until the monitor has written it: everything sent
        /// before the marker is then in the capture.
        func mark(_ name: String) async throws {
            let marker = Data("marker-\(name)-\(UUID().uuidString)".utf8)
            for _ in 0..<300 {
                _ = try await runToolAsync(
                    try requireTool("/usr/bin/gdbus"),
                    [
                        "call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                        "--method", "org.freedesktop.DBus.NameHasOwner", String(decoding: marker, as: UTF8.self),
                    ], environment: bus.environment)
                if captured().range(of: marker) != nil { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            Issue.record("the monitor never wrote the marker")
        }
        try await mark("start")

        let secret = Data("tr4nsfer-s3cret-\(UUID().uuidString)".utf8)
        let tool = try requireTool("/usr/bin/secret-tool")
        let stored = try await runToolAsync(
            tool, ["store", "--label=Monitored", "service", "monitored", "account", "a"], stdin: secret,
            environment: bus.environment)
        #expect(stored.status == 0, "\(stored)")
        let found = try await runToolAsync(
            tool, ["lookup", "service", "monitored", "account", "a"], environment: bus.environment)
        #expect(found.status == 0 && found.stdout == secret, "\(found)")
        try await mark("after-secret-tool")
        let encrypted = captured()
        #expect(
            encrypted.range(of: Data(FiniteFieldAgreement.secretServiceAlgorithm.utf8)) != nil,
            "secret-tool asked for DH")
        #expect(encrypted.range(of: Data("Monitored".utf8)) != nil, "the monitor saw CreateItem")
        #expect(encrypted.range(of: Data("ItemCreated".utf8)) != nil, "ItemCreated was signalled")
        #expect(encrypted.range(of: Data("PropertiesChanged".utf8)) != nil, "the collection's Items were invalidated")
        #expect(encrypted.range(of: secret) == nil, "the secret crossed the bus in the clear")

        // The control: the same monitor sees a plain session's secret.
        let connection = try await DBusConnection.connectToSessionBus(environment: bus.environment)
        func call(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue]) async throws
            -> DBusMessage
        {
            try await connection.call(
                .methodCall(
                    path: path, interface: interface, member: member, destination: SecretServiceProvider.busName,
                    body: body))
        }
        let opened = try await call(
            "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession",
            [.string("plain"), .variant(.string(""))])
        let session = try #require(opened.body.last?.objectPathValue)
        let searched = try await call(
            "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
            [.dictionary(key: .string, value: .string, [DBusDictEntry(.string("service"), .string("monitored"))])])
        let item = try #require(searched.body.first?.arrayElements?.first)
        let secrets = try await call(
            "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "GetSecrets",
            [.array(.objectPath, [item]), .objectPath(session)])
        guard case .dictionary(_, _, let entries)? = secrets.body.first, entries.count == 1,
            case .structure(let fields) = entries[0].value, fields.count == 4
        else {
            Issue.record("GetSecrets answered \(secrets.body.map(\.type))")
            return
        }
        #expect(fields[1] == .bytes([]) && fields[2] == .bytes(Array(secret)))
        try await mark("after-plain")
        #expect(captured().range(of: secret) != nil, "the monitor sees a plain session's secret")
        await connection.close()
    }

    /// The defects: a flood of Diffie-Hellman `OpenSession` calls from one client ran one after
    /// another on the bus connection's event loop (38 ms each), stalling every other client, and
    /// nothing bounded a client's sessions. Now one client has at most four agreements under
    /// way (the rest are refused with `LimitsExceeded`, never queued behind each other) and 64
    /// sessions open; another client's calls are answered meanwhile.
    @Test func oneClientsSessionFloodIsBoundedAndOthersAreServed() async throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        // The provider is activated (by a call of another process) before the two clients connect.
        let ping = try runTool(
            try requireTool("/usr/bin/dbus-send"),
            [
                "--session", "--print-reply", "--dest=\(SecretServiceProvider.busName)", "/org/freedesktop/secrets",
                "org.freedesktop.DBus.Peer.Ping",
            ], environment: bus.environment)
        try #require(ping.status == 0, "activation: \(ping)")
        let flooder = try await DBusConnection.connectToSessionBus(environment: bus.environment)
        let other = try await DBusConnection.connectToSessionBus(environment: bus.environment)
        func openSession(on connection: DBusConnection, diffieHellman: Bool) async -> Result<String, DBusError> {
            let input: [DBusValue] =
                diffieHellman
                ? [
                    .string(FiniteFieldAgreement.secretServiceAlgorithm),
                    .variant(.bytes(FiniteFieldAgreement(group: .oakley2).publicKey)),
                ]
                : [.string("plain"), .variant(.string(""))]
            do {
                let reply = try await connection.call(
                    .methodCall(
                        path: "/org/freedesktop/secrets", interface: "org.freedesktop.Secret.Service",
                        member: "OpenSession", destination: SecretServiceProvider.busName, body: input))
                return .success(reply.body.last?.objectPathValue ?? "")
            } catch let error as DBusError {
                return .failure(error)
            } catch {
                return .failure(DBusError(.remoteError, "\(error)"))
            }
        }
        let first = await openSession(on: other, diffieHellman: false)
        try #require((try? first.get()) != nil, "\(first)")

        let results = await withTaskGroup(of: Result<String, DBusError>.self) { group in
            for _ in 0..<40 { group.addTask { await openSession(on: flooder, diffieHellman: true) } }
            group.addTask { await openSession(on: other, diffieHellman: true) }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let opened = results.compactMap { try? $0.get() }
        let refused = results.compactMap { result -> DBusError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        #expect(opened.count >= 5, "the other client's session and at least four of the flood's")
        #expect(refused.allSatisfy { $0.errorName == DBusErrorName.limitsExceeded }, "\(refused)")
        // The other client keeps being served after the flood.
        #expect((try? await openSession(on: other, diffieHellman: true).get()) != nil)

        // At most 64 sessions of one client are open at once.
        var flooderSessions = opened.count - 1
        var refusal: DBusError?
        while refusal == nil, flooderSessions <= 64 {
            switch await openSession(on: flooder, diffieHellman: false) {
            case .success: flooderSessions += 1
            case .failure(let error): refusal = error
            }
        }
        #expect(flooderSessions == 64)
        #expect(refusal?.errorName == DBusErrorName.limitsExceeded, "\(String(describing: refusal))")
        #expect((try? await openSession(on: other, diffieHellman: false).get()) != nil, "another client still opens")
        await flooder.close()
        await other.close()
    }
}
