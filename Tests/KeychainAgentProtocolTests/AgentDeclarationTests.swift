import DBusWire
import Foundation
import KeychainCore
import SeededRandom
import Testing

@testable import KeychainAgentProtocol

/// The agent's methods, each declared once (`AgentInterface`): the wire protocol they make is
/// the one `org.keychainlinux.Agent1` has always had, and a malformed argument list is refused.
struct AgentDeclarationTests {
    /// Every method of `org.keychainlinux.Agent1` as released: name, input signature and names,
    /// output signature and names. The declarations must make exactly these (gdbus and busctl
    /// callers, and older clients, depend on them).
    static let released: [(String, String, [String], String, [String])] = [
        ("Add", "sa{sv}", ["keychain", "item"], "a{sv}", ["stored"]),
        ("AddMany", "saa{sv}", ["keychain", "items"], "aa{sv}", ["items"]),
        ("Upsert", "sa{sv}", ["keychain", "item"], "a{sv}b", ["stored", "added"]),
        ("Find", "sa{sv}b", ["keychain", "query", "includeData"], "aa{sv}", ["items"]),
        ("FindReadable", "sa{sv}b", ["keychain", "query", "includeData"], "aa{sv}as", ["items", "unreadable"]),
        (
            "Update", "sa{sv}a{sv}bay", ["keychain", "query", "attributes", "replacesData", "data"], "u",
            ["count"]
        ),
        ("Delete", "sa{sv}", ["keychain", "query"], "u", ["count"]),
        ("Unlock", "sbay", ["keychain", "hasPassword", "password"], "", []),
        ("Lock", "s", ["keychain"], "", []),
        ("LockAll", "", [], "", []),
        ("Status", "s", ["keychain"], "a{sv}", ["status"]),
        ("ChangePassword", "sbayay", ["keychain", "hasOld", "old", "new"], "", []),
        ("RotateKeys", "sbaybay", ["keychain", "hasPassword", "password", "hasNew", "new"], "", []),
        ("Create", "sbay", ["keychain", "hasPassword", "password"], "", []),
        ("DeleteKeychain", "s", ["keychain"], "", []),
        ("Close", "s", ["keychain"], "", []),
        ("Settings", "s", ["keychain"], "a{sv}", ["settings"]),
        ("SetSettings", "sa{sv}", ["keychain", "settings"], "", []),
        ("CreateTokenKey", "sba{sv}", ["keychain", "permanent", "item"], "ayay", ["publicKey", "handle"]),
        (
            "UseTokenKey", "sayyayuayu",
            ["keychain", "handle", "operation", "input", "kdfHash", "sharedInfo", "outputSize"], "ay", ["output"]
        ),
        ("StoreTokenKey", "saya{sv}", ["keychain", "handle", "item"], "ay", ["handle"]),
        ("UseAccessGroups", "as", ["groups"], "", []),
        ("MakeRecoveryKey", "s", ["keychain"], "ay", ["key"]),
        ("SetUnlocksWithBootState", "sbbay", ["keychain", "enabled", "hasPassword", "password"], "", []),
        ("MoveIn", "saa{sv}", ["keychain", "items"], "aa{sv}", ["items"]),
        ("AuthenticateOwner", "u", ["seconds"], "ay", ["proof"]),
        ("AccessLog", "", [], "as", ["entries"]),
        ("AuthenticateWithFinger", "u", ["seconds"], "ayay", ["proof", "state"]),
        ("AuthenticateWithCompanion", "u", ["seconds"], "ayay", ["proof", "key"]),
        (
            "UseTokenKeyOffering", "sayyayuayuay",
            ["keychain", "handle", "operation", "input", "kdfHash", "sharedInfo", "outputSize", "proof"], "ay",
            ["output"]
        ),
    ]

    static func signature(_ arguments: [DBusArgument]) -> String { arguments.map(\.type.signature).joined() }

    @Test("the declarations make Agent1's released methods: same names, order, signatures and argument names")
    func declarationsAreTheReleasedInterface() {
        #expect(AgentInterface.all.map(\.name) == Self.released.map(\.0))
        for (method, released) in zip(AgentInterface.all, Self.released) {
            #expect(method.interface == AgentInterface.name)
            #expect(Self.signature(method.inputs) == released.1, "\(released.0)")
            #expect(method.inputs.map(\.name) == released.2.map { Optional($0) }, "\(released.0)")
            #expect(Self.signature(method.outputs) == released.3, "\(released.0)")
            #expect(method.outputs.map(\.name) == released.4.map { Optional($0) }, "\(released.0)")
        }
        let quick = AgentInterface.all.filter(\.answersOnEventLoop).map(\.name)
        #expect(quick == ["Find", "FindReadable", "Status", "Settings"])
    }

    /// keychaind's hand-off of the Secret Service: the wire form every `keychaind` has sent and
    /// served (an older one started by the bus hands over to a newer agent, and the reverse),
    /// and one declaration that both its sides use.
    @Test("SecretService1.Serve(s address, b replace) → b served: one declaration, the call it makes is what it serves")
    func secretServiceHandoffIsDeclaredOnce() throws {
        typealias H = SecretServiceHandoffInterface
        let method = H.serve.description
        #expect(method.interface == "org.keychainlinux.SecretService1" && method.name == "Serve")
        #expect(Self.signature(method.inputs) == "sb")
        #expect(method.inputs.map(\.name) == ["address", "replace"])
        #expect(Self.signature(method.outputs) == "b")
        #expect(method.outputs.map(\.name) == ["served"])
        #expect(!method.answersOnEventLoop)
        // What keychaind sends is what the agent reads, from values and from the wire.
        let sent = H.ServeArguments(address: "unix:path=/run/user/1000/bus", replace: true)
        var message = H.serve.call(sent, path: AgentInterface.objectPath)
        #expect(message.interface == H.name && message.member == "Serve" && message.path == AgentInterface.objectPath)
        #expect(try H.ServeArguments(decoding: message.body) == sent)
        message.serial = 1
        var (_, body) = try DBusMessage.decodeHeader(try message.encoded())
        #expect(try H.ServeArguments(reading: &body) == sent)
        // What the agent answers is what keychaind reads; the body an older keychaind sent decodes.
        #expect(try H.serve.reply(decoding: H.Served(served: true).values) == H.Served(served: true))
        #expect(try H.ServeArguments(decoding: [.string(""), .boolean(false)]) == H.ServeArguments())
        #expect(throws: DBusError.self) { try H.ServeArguments(decoding: [.boolean(true), .string("")]) }
    }

    /// Decoding tests of one declaration, whatever its types.
    struct Case {
        let name: String
        let inputs: [DBusArgument]
        /// Decodes a call's values (as the agent does).
        let decodeCall: @Sendable ([DBusValue]) throws -> Void
        /// Encodes placeholder arguments, decodes them back, from values and from the wire, and
        /// returns both re-encodings.
        let roundTrip: @Sendable () throws -> ([DBusValue], [DBusValue], [DBusValue])
    }

    static func testCase<A, R>(_ method: DBusMethodDeclaration<A, R>, _ sample: A) -> Case {
        Case(
            name: method.name, inputs: method.inputs, decodeCall: { _ = try A(decoding: $0) },
            roundTrip: {
                let values = sample.values
                let fromValues = try A(decoding: values)
                var message = method.call(sample, path: AgentInterface.objectPath)
                message.serial = 1
                let bytes = try message.encoded()
                var (_, body) = try DBusMessage.decodeHeader(bytes)
                let fromWire = try A(reading: &body)
                return (values, fromValues.values, fromWire.values)
            })
    }

    static let item = Item(
        class: .genericPassword, attributes: [.service: .string("svc"), .account: .string("acct")],
        data: Data("secret".utf8))

    static var query: ItemQuery {
        var query = ItemQuery(class: .genericPassword, attributes: [.service: .string("svc")])
        query.limit = 3
        return query
    }

    typealias I = AgentInterface

    static let cases: [Case] = [
        testCase(I.add, .init(keychain: "/k", item: item)),
        testCase(I.addMany, .init(keychain: "", items: [item, item])),
        testCase(I.upsert, .init(keychain: "/k", item: item)),
        testCase(I.find, .init(keychain: "", query: query, includeData: true)),
        testCase(I.findReadable, .init(keychain: "/k", query: query, includeData: false)),
        testCase(
            I.update,
            .init(keychain: "", query: query, attributes: [.label: .string("l")], data: Data("new".utf8))),
        testCase(I.delete, .init(keychain: "/k", query: query)),
        testCase(I.unlock, .init(keychain: "/k", password: Data("pw".utf8))),
        testCase(I.lock, .init(keychain: "/k")),
        testCase(I.lockAll, DBusNoArguments()),
        testCase(I.status, .init(keychain: "")),
        testCase(I.changePassword, .init(keychain: "/k", old: nil, new: Data("n".utf8))),
        testCase(I.rotateKeys, .init(keychain: "/k", password: Data("o".utf8), newPassword: nil)),
        testCase(I.create, .init(keychain: "/k", password: nil)),
        testCase(I.deleteKeychain, .init(keychain: "/k")),
        testCase(I.close, .init(keychain: "/k")),
        testCase(I.settings, .init(keychain: "/k")),
        testCase(
            I.setSettings, .init(keychain: "/k", settings: KeychainSettings(lockInterval: 60, locksOnSleep: true))),
        testCase(I.createTokenKey, .init(keychain: "/k", template: Item(class: .key))),
        testCase(
            I.useTokenKey,
            .init(keychain: "/k", handle: Data([1, 2]), request: TokenKeyRequest(.sign, input: Data([3])))),
        testCase(I.storeTokenKey, .init(keychain: "/k", handle: Data([9]), item: Item(class: .key))),
        testCase(I.useAccessGroups, .init(groups: ["a", "b"])),
        testCase(I.makeRecoveryKey, .init(keychain: "/k")),
        testCase(I.setUnlocksWithBootState, .init(keychain: "/k", enabled: true, password: Data([7]))),
        testCase(I.moveIn, .init(keychain: "", items: [item])),
        testCase(I.authenticateOwner, .init(seconds: 300)),
        testCase(I.accessLog, DBusNoArguments()),
        testCase(I.authenticateWithFinger, .init(seconds: 30)),
        testCase(I.authenticateWithCompanion, .init(seconds: 30)),
        testCase(
            I.useTokenKeyOffering,
            .init(
                keychain: "/k", handle: Data([1, 2]),
                request: {
                    var request = TokenKeyRequest(.sign, input: Data([3]))
                    request.ownerProof = Data(repeating: 5, count: 32)
                    return request
                }())),
    ]

    @Test("every declaration's arguments come back as they went, from values and from the wire")
    func argumentsRoundTrip() throws {
        #expect(Self.cases.map(\.name) == AgentInterface.all.map(\.name))
        for testCase in Self.cases {
            let (values, fromValues, fromWire) = try testCase.roundTrip()
            #expect(DBusValue.have(values, typesOf: testCase.inputs), "\(testCase.name)")
            #expect(fromValues.map(Self.sorted) == values.map(Self.sorted), "\(testCase.name)")
            #expect(fromWire.map(Self.sorted) == values.map(Self.sorted), "\(testCase.name)")
        }
    }

    /// `value` with its dictionaries' entries in the order of their keys (an item's attributes
    /// are a Swift dictionary: their order is not kept).
    static func sorted(_ value: DBusValue) -> DBusValue {
        switch value {
        case .dictionary(let key, let type, let entries):
            let sortedEntries = entries.map { DBusDictEntry($0.key, sorted($0.value)) }
                .sorted { "\($0.key.stringValue ?? "")" < "\($1.key.stringValue ?? "")" }
            return .dictionary(key: key, value: type, sortedEntries)
        case .array(let type, let values): return .array(type, values.map(sorted))
        case .variant(let inner): return .variant(sorted(inner))
        default: return value
        }
    }

    @Test("optional values travel as a flag and bytes, never as text: a password and its absence")
    func optionalPasswords() throws {
        let with = AgentInterface.PasswordArguments(keychain: "/k", password: Data("pw".utf8)).values
        #expect(with == [.string("/k"), .boolean(true), .bytes(Array("pw".utf8))])
        let without = AgentInterface.PasswordArguments(keychain: "/k", password: nil).values
        #expect(without == [.string("/k"), .boolean(false), .bytes([])])
        #expect(try AgentInterface.PasswordArguments(decoding: without).password == nil)
        let stale = [DBusValue.string("/k"), .boolean(false), .bytes(Array("ignored".utf8))]
        #expect(try AgentInterface.PasswordArguments(decoding: stale).password == nil)
    }

    @Test("what follows a false flag is not decoded: CreateTokenKey without permanent takes any a{sv}")
    func absentValueIsNotDecoded() throws {
        let values: [DBusValue] = [.string("/k"), .boolean(false), .stringVariantDictionary([:])]
        #expect(try AgentInterface.CreateTokenKeyArguments(decoding: values).template == nil)
        var message = DBusMessage.methodCall(
            path: AgentInterface.objectPath, interface: AgentInterface.name, member: "CreateTokenKey", body: values)
        message.serial = 1
        var (_, body) = try DBusMessage.decodeHeader(try message.encoded())
        #expect(try AgentInterface.CreateTokenKeyArguments(reading: &body).template == nil)
        let permanent: [DBusValue] = [.string("/k"), .boolean(true), .stringVariantDictionary([:])]
        let error = #expect(throws: KeychainError.self) {
            try AgentInterface.CreateTokenKeyArguments(decoding: permanent)
        }
        #expect(error?.code == .parameter, "a template without a class")
    }

    /// A value of a type other than `type`.
    static func wrongValue(for type: DBusType, _ random: inout SplitMix64) -> DBusValue {
        let candidates: [DBusValue] = [
            .string("hunter2"), .boolean(true), .byte(7), .uint32(9), .int64(-1), .int32(4),
            .bytes(Array("hunter2".utf8)), .array(.string, [.string("hunter2")]),
            .stringVariantDictionary(["x": .string("hunter2")]), .variant(.string("hunter2")),
            .structure([.string("hunter2")]), .double(1.5),
        ]
        let others = candidates.filter { !DBusValue.have([$0], typesOf: [DBusArgument(nil, type)]) }
        return others[Int.random(in: 0..<others.count, using: &random)]
    }

    @Test("a malformed argument list is refused by name, never read by position or echoed (randomized)")
    func malformedArgumentsAreRefused() throws {
        var random = SplitMix64(seed: 51)
        for testCase in Self.cases {
            let good = try testCase.roundTrip().0
            for _ in 0..<24 {
                var values = good
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where !values.isEmpty:
                    let index = Int.random(in: 0..<values.count, using: &random)
                    values[index] = Self.wrongValue(for: testCase.inputs[index].type, &random)
                case 1 where !values.isEmpty:
                    values.remove(at: Int.random(in: 0..<values.count, using: &random))
                default:
                    values.insert(.string("hunter2"), at: Int.random(in: 0...values.count, using: &random))
                }
                guard !DBusValue.have(values, typesOf: testCase.inputs) else { continue }
                let error = #expect(throws: DBusError.self, "\(testCase.name)") { try testCase.decodeCall(values) }
                #expect(error?.code == .typeMismatch, "\(testCase.name)")
                #expect(error?.message.contains("hunter2") == false, "\(testCase.name)")
            }
        }
    }

    @Test("a reply read from a body of another signature is refused")
    func replyOfAnotherSignature() throws {
        var reply = DBusMessage.methodCall(path: "/", interface: nil, member: "X", body: [.string("x")])
        reply.serial = 1
        var (_, body) = try DBusMessage.decodeHeader(try reply.encoded())
        let error = #expect(throws: DBusError.self) { try AgentInterface.find.reply(reading: &body) }
        #expect(error?.code == .typeMismatch)
        var (_, empty) = try DBusMessage.decodeHeader(try reply.encoded())
        #expect(throws: DBusError.self) { try AgentInterface.lock.reply(reading: &empty) }
    }

    @Test("what a value holds is still the codec's to refuse: an item without a class is errSecParam")
    func codecChecksStillApply() {
        let values: [DBusValue] = [.string("/k"), .stringVariantDictionary(["svce": .string("x")])]
        let error = #expect(throws: KeychainError.self) { try AgentInterface.ItemArguments(decoding: values) }
        #expect(error?.code == .parameter)
    }
}
