import DBusNIO
import DBusWire
import Foundation
import SecretService
import SeededRandom
import Testing

/// 10^5 random and half-right calls to the real `keychaind --secret-service` on a private bus,
/// 32 at a time on one connection: every one is answered (a reply or an error), none crashes or stalls the
/// provider, and real clients work afterwards.
@Suite("Secret Service fuzzing")
struct FuzzTests {
    static let paths = [
        "/org/freedesktop/secrets", "/org/freedesktop/secrets/collection/login",
        "/org/freedesktop/secrets/aliases/default", "/org/freedesktop/secrets/collection/session",
        "/org/freedesktop/secrets/session/1", "/org/freedesktop/secrets/prompt/u1",
        "/org/freedesktop/secrets/collection/login/00000000000000000000000000000000", "/", "/x/y",
    ]
    static let members: [(interface: String, member: String)] = [
        ("org.freedesktop.Secret.Service", "OpenSession"), ("org.freedesktop.Secret.Service", "SearchItems"),
        ("org.freedesktop.Secret.Service", "GetSecrets"), ("org.freedesktop.Secret.Service", "Unlock"),
        ("org.freedesktop.Secret.Service", "Lock"), ("org.freedesktop.Secret.Service", "ReadAlias"),
        ("org.freedesktop.Secret.Service", "SetAlias"), ("org.freedesktop.Secret.Service", "CreateCollection"),
        ("org.freedesktop.Secret.Collection", "CreateItem"), ("org.freedesktop.Secret.Collection", "SearchItems"),
        ("org.freedesktop.Secret.Collection", "Delete"), ("org.freedesktop.Secret.Item", "GetSecret"),
        ("org.freedesktop.Secret.Item", "SetSecret"), ("org.freedesktop.Secret.Item", "Delete"),
        ("org.freedesktop.Secret.Session", "Close"), ("org.freedesktop.Secret.Prompt", "Prompt"),
        ("org.freedesktop.DBus.Properties", "Get"), ("org.freedesktop.DBus.Properties", "GetAll"),
        ("org.freedesktop.DBus.Properties", "Set"), ("org.freedesktop.DBus.Introspectable", "Introspect"),
        ("org.freedesktop.Secret.Service", "Nonexistent"),
    ]

    struct Generator {
        var random: SplitMix64

        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

        mutating func string() -> String {
            let pieces = [
                "service", "account", "username", "xdg:schema", "", "é", "🔑", "a b", "\\", "{\"", "Label",
                "org.freedesktop.Secret.Item.Label", "org.freedesktop.Secret.Item.Attributes", "plain",
                "dh-ietf1024-sha256-aes128-cbc-pkcs7", "default", "login", "session",
            ]
            return (0..<int(0...3)).map { _ in pieces[int(0...pieces.count - 1)] }.joined()
        }

        mutating func bytes() -> [UInt8] { (0..<int(0...40)).map { _ in UInt8(int(0...255)) } }

        mutating func path() -> String { FuzzTests.paths[int(0...FuzzTests.paths.count - 1)] }

        mutating func stringMap() -> DBusValue {
            .dictionary(
                key: .string, value: .string,
                (0..<int(0...4)).map { _ in DBusDictEntry(.string(string()), .string(string())) })
        }

        mutating func secret() -> DBusValue {
            .structure([.objectPath(path()), .bytes(bytes()), .bytes(bytes()), .string(string())])
        }

        /// A value of any shape, nested at most `depth` deep.
        mutating func value(depth: Int = 2) -> DBusValue {
            switch int(0...(depth > 0 ? 11 : 7)) {
            case 0: return .string(string())
            case 1: return .objectPath(path())
            case 2: return .bytes(bytes())
            case 3: return .boolean(int(0...1) == 1)
            case 4: return .uint32(UInt32(int(0...Int(Int32.max))))
            case 5: return .int64(Int64(int(-1000...1000)))
            case 6: return stringMap()
            case 7: return secret()
            case 8: return .variant(value(depth: depth - 1))
            case 9: return .array(.objectPath, (0..<int(0...3)).map { _ in .objectPath(path()) })
            case 10:
                return .dictionary(
                    key: .string, value: .variant,
                    (0..<int(0...3)).map { _ in DBusDictEntry(.string(string()), .variant(value(depth: depth - 1))) })
            default: return .structure((0..<int(1...3)).map { _ in value(depth: depth - 1) })
            }
        }

        /// Arguments shaped like the member's, with random contents, half the time; else anything.
        mutating func arguments(for member: String) -> [DBusValue] {
            guard int(0...1) == 0 else { return (0..<int(0...4)).map { _ in value() } }
            switch member {
            case "OpenSession": return [.string(string()), .variant(int(0...1) == 0 ? .bytes(bytes()) : value())]
            case "SearchItems": return [stringMap()]
            case "GetSecrets": return [.array(.objectPath, [.objectPath(path())]), .objectPath(path())]
            case "Unlock", "Lock": return [.array(.objectPath, (0..<int(0...2)).map { _ in .objectPath(path()) })]
            case "CreateItem":
                return [
                    .dictionary(
                        key: .string, value: .variant,
                        [
                            DBusDictEntry(.string("org.freedesktop.Secret.Item.Label"), .variant(value(depth: 1))),
                            DBusDictEntry(.string("org.freedesktop.Secret.Item.Attributes"), .variant(stringMap())),
                        ]), secret(), .boolean(int(0...1) == 1),
                ]
            case "SetSecret": return [secret()]
            case "GetSecret", "Prompt": return [.objectPath(path())]
            case "Get", "GetAll", "Set":
                return [
                    .string("org.freedesktop.Secret.Item"),
                    .string(["Label", "Attributes", "Locked", string()][int(0...3)]),
                    .variant(value(depth: 1)),
                ].prefix(member == "GetAll" ? 1 : member == "Get" ? 2 : 3).map { $0 }
            default: return [.string(string())]
            }
        }
    }

    /// How many calls, and how many are in flight at once (pipelined on one connection, as a
    /// busy client's are).
    static let calls = 100_000
    static let inFlight = 32

    @Test("10^5 random and half-right calls are each answered; the provider and real clients carry on")
    func randomCalls() async throws {
        let bus = try PrivateSessionBus(
            serviceFile: SecretToolTests.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let tool = try requireTool("/usr/bin/secret-tool")
        let stored = try await runToolAsync(
            tool, ["store", "--label=Before", "service", "fuzz", "account", "a"], stdin: Data("kept".utf8),
            environment: bus.environment)
        #expect(stored.status == 0, "\(stored)")
        let provider = try #require(try bus.ownerPID(of: SecretServiceProvider.busName))

        var configuration = DBusConnection.Configuration()
        configuration.callTimeout = .seconds(60)
        let connection = try await DBusConnection.connect(
            to: try DBusAddress.sessionBus(environment: bus.environment), configuration: configuration)
        _ = try await connection.hello()
        var generator = Generator(random: SplitMix64(seed: 0x5EC2_E75E))
        var messages: [DBusMessage] = []
        messages.reserveCapacity(Self.calls)
        for _ in 0..<Self.calls {
            let (interface, member) = Self.members[generator.int(0...Self.members.count - 1)]
            messages.append(
                .methodCall(
                    path: generator.path(), interface: interface, member: member,
                    destination: SecretServiceProvider.busName, body: generator.arguments(for: member)))
        }
        /// One call's outcome: a reply, an error reply (its text checked for the secret), or none.
        enum Outcome: Sendable { case reply, error(leaks: Bool), unanswered(String) }
        var replies = 0
        var errors = 0
        var unanswered: [String] = []
        var leaks = 0
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            var next = 0
            func record(_ outcome: Outcome) {
                switch outcome {
                case .reply: replies += 1
                case .error(let leaked):
                    errors += 1
                    if leaked { leaks += 1 }
                case .unanswered(let what): unanswered.append(what)
                }
            }
            while next < messages.count || !group.isEmpty {
                while next < messages.count && next - replies - errors - unanswered.count < Self.inFlight {
                    let message = messages[next]
                    next += 1
                    group.addTask {
                        do {
                            _ = try await connection.call(message)
                            return .reply
                        } catch let error as DBusError where error.errorName != nil && error.code != .timedOut {
                            return .error(leaks: error.message.contains("kept"))
                        } catch {
                            return .unanswered("\(message.member ?? ""): \(error)")
                        }
                    }
                }
                if let outcome = try await group.next() { record(outcome) }
            }
        }
        #expect(leaks == 0, "no secret in an error text")
        await connection.close()
        #expect(unanswered.isEmpty, "\(unanswered.count) unanswered: \(unanswered.prefix(5))")
        #expect(replies + errors == Self.calls, "every call answered: \(replies) replies, \(errors) errors")
        #expect(replies >= 500 && errors >= 30_000, "both kinds of answer: \(replies) replies, \(errors) errors")
        #expect(try bus.ownerPID(of: SecretServiceProvider.busName) == provider, "the same provider still serves")
        let found = try await runToolAsync(
            tool, ["lookup", "service", "fuzz", "account", "a"], environment: bus.environment)
        #expect(found.status == 0 && found.out == "kept", "\(found)")
    }
}
