import DBusWire
import Foundation
import KeychainAgentProtocol
import KeychainCore
import SeededRandom
import Testing

/// Items, queries and errors cross the agent's socket as D-Bus values and come back exactly;
/// anything malformed is errSecParam, never a trap.
@Suite("Agent codec")
struct AgentCodecTests {
    /// Through a real D-Bus message, encoded and decoded in both byte orders.
    static func wire(_ values: [DBusValue], bigEndian: Bool) throws -> [DBusValue] {
        var message = DBusMessage.methodCall(
            path: AgentInterface.objectPath, interface: AgentInterface.name, member: "Add", body: values)
        message.serial = 1
        let bytes = try message.encoded(byteOrder: bigEndian ? .bigEndian : .littleEndian)
        return try DBusMessage(decoding: bytes).body
    }

    static func randomValue(_ random: inout SplitMix64) -> AttributeValue {
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            let scalars = (0..<Int.random(in: 0...24, using: &random)).map { _ in
                Character(Unicode.Scalar(UInt32.random(in: 0x20...0x7E, using: &random))!)
            }
            return .string(String(scalars) + (Bool.random(using: &random) ? "é✓" : ""))
        case 1:
            return .data(
                Data(
                    (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            )
        case 2: return .number(Int64.random(in: Int64.min...Int64.max, using: &random))
        default:
            return .date(
                Date(
                    timeIntervalSince1970: Double(Int64.random(in: -1_000_000_000...4_000_000_000, using: &random)) / 8)
            )
        }
    }

    static func randomItem(_ random: inout SplitMix64) -> Item {
        let itemClass = [ItemClass.genericPassword, .internetPassword, .certificate, .key][
            Int.random(in: 0..<4, using: &random)]
        var attributes: Attributes = [:]
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            let name = [
                "svce", "acct", "labl", "srvr", "port", "cdat", "gena", "atag",
                "x\(Int.random(in: 0...99, using: &random))",
            ]
            attributes[AttributeName(rawValue: name[Int.random(in: 0..<name.count, using: &random)])] = randomValue(
                &random)
        }
        let data =
            Bool.random(using: &random)
            ? Data((0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            : nil
        return Item(class: itemClass, attributes: attributes, data: data)
    }

    @Test(
        "random items come back with the same class, attributes and secret, in both byte orders",
        arguments: [false, true])
    func itemsRoundTrip(bigEndian: Bool) throws {
        var random = SplitMix64(seed: bigEndian ? 0xA9E7 : 0x7E9A)
        for _ in 0..<500 {
            let item = Self.randomItem(&random)
            let back = try AgentCodec.decodeItem(try Self.wire([AgentCodec.encode(item)], bigEndian: bigEndian)[0])
            #expect(back.itemClass == item.itemClass)
            #expect(back.attributes == item.attributes)
            #expect(back.data == item.data)
        }
    }

    @Test("a date comes back bit for bit, as a creation date must for an exact-date query to match")
    func datesRoundTripExactly() throws {
        var random = SplitMix64(seed: 0xDA7E)
        let dates =
            [Date(), Date(timeIntervalSinceReferenceDate: 0.1), Date(timeIntervalSinceReferenceDate: -1e-7)]
            + (0..<1_000).map { _ in
                Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9...2e9, using: &random))
            }
        for date in dates {
            let item = Item(class: .key, attributes: [.creationDate: .date(date)])
            let back = try AgentCodec.decodeItem(try Self.wire([AgentCodec.encode(item)], bigEndian: false)[0])
            guard case .date(let returned)? = back.attributes[.creationDate] else {
                Issue.record("no date came back")
                return
            }
            #expect(returned.timeIntervalSinceReferenceDate == date.timeIntervalSinceReferenceDate)
        }
    }

    @Test("a found item keeps its persistent identity across the socket")
    func identityRoundTrip() throws {
        let keychain = try KeychainDatabase.inMemory(configuration: .testing())
        let stored = try keychain.add(
            Item(class: .genericPassword, attributes: [.service: .string("s")], data: Data("x".utf8)))
        let back = try AgentCodec.decodeItems(try Self.wire([AgentCodec.encode([stored])], bigEndian: false)[0])
        #expect(back.count == 1)
        #expect(back.first?.persistentID == stored.persistentID && stored.persistentID != nil)
        let query = ItemQuery(class: nil, persistentID: stored.persistentID)
        let found = try keychain.find(try AgentCodec.decodeQuery(AgentCodec.encode(query)), includeData: true)
        #expect(found.first?.data == Data("x".utf8))
    }

    @Test("every field of a query comes back")
    func queryRoundTrip() throws {
        var query = ItemQuery(
            class: .internetPassword, attributes: [.server: .string("example.com"), .port: .number(443)],
            synchronizable: .any, persistentID: UUID(), limit: 7, includesTombstones: true)
        query.authenticationUI = .skip
        query.hostOrSubdomain = "example.com"
        query.ownerProof = Data((0..<32).map { UInt8($0) })
        let back = try AgentCodec.decodeQuery(try Self.wire([AgentCodec.encode(query)], bigEndian: true)[0])
        #expect(back.ownerProof == query.ownerProof)
        for mode in [ItemQuery.AuthenticationUI.ignore, .fail, .skip, .allow] {
            query.authenticationUI = mode
            #expect(try AgentCodec.decodeQuery(AgentCodec.encode(query)).authenticationUI == mode)
        }
        query.authenticationUI = .skip
        #expect(back.itemClass == query.itemClass)
        #expect(back.attributes == query.attributes)
        #expect(back.synchronizable == .any)
        #expect(back.persistentID == query.persistentID)
        #expect(back.limit == 7)
        #expect(back.includesTombstones)
        #expect(back.authenticationUI == .skip)
        #expect(back.hostOrSubdomain == "example.com")
        let defaults = try AgentCodec.decodeQuery(AgentCodec.encode(ItemQuery(class: .genericPassword)))
        #expect(defaults.synchronizable == .no && defaults.limit == nil && defaults.authenticationUI == .ignore)
        #expect(AgentCodec.queryLimit(AgentCodec.encode(query)) == 7)
        #expect(AgentCodec.queryLimit(AgentCodec.encode(ItemQuery(class: .genericPassword))) == nil)
    }

    @Test("a keychain error keeps its status, message, set-up flag and reason; its D-Bus name says what it is")
    func errorsRoundTrip() throws {
        for error in [
            KeychainError(.itemNotFound, "no such item"), KeychainError(.missingEntitlement, "group x"),
            KeychainError(.databaseLocked, "busy", isSetupProblem: true),
            KeychainError(KeychainError.Code(rawValue: -1234), "odd"),
            KeychainError(.authFailed, "sealed elsewhere", isSetupProblem: true).because(.sealedToAnotherTPM),
            KeychainError(.authFailed, "boot", isSetupProblem: true).because(.bootStateChanged),
        ] {
            let name = AgentCodec.errorName(of: error)
            #expect(name.hasPrefix(AgentInterface.errorPrefix))
            let back = try #require(AgentCodec.keychainError(AgentCodec.dbusError(error)))
            #expect(
                back.code == error.code && back.message == error.message && back.isSetupProblem == error.isSetupProblem)
            #expect(back.reason == error.reason)
        }
        #expect(AgentCodec.errorName(of: KeychainError(.itemNotFound)) == "org.keychainlinux.Error.ItemNotFound")
        #expect(
            AgentCodec.keychainError(DBusError.method("org.freedesktop.DBus.Error.Failed", "x", details: [.int32(1)]))
                == nil)
    }

    static let malformed: [(String, DBusValue)] = [
        ("not a dictionary", .string("genp")),
        ("no class", .stringVariantDictionary(["svce": .string("s")])),
        ("unknown class", .stringVariantDictionary(["class": .string("nope")])),
        ("class as a number", .stringVariantDictionary(["class": .int64(1)])),
        ("secret as text", .stringVariantDictionary(["class": .string("genp"), "v_Data": .string("pw")])),
        ("short identity", .stringVariantDictionary(["class": .string("genp"), "uuid": .bytes([1, 2, 3])])),
        ("attribute as a boolean", .stringVariantDictionary(["class": .string("genp"), "svce": .boolean(true)])),
        ("attribute as an array", .stringVariantDictionary(["class": .string("genp"), "svce": .array(.string, [])])),
        ("NaN date", .stringVariantDictionary(["class": .string("genp"), "cdat": .double(.nan)])),
        (
            "duplicated key",
            .dictionary(
                key: .string, value: .variant,
                [
                    DBusDictEntry(.string("class"), .variant(.string("genp"))),
                    DBusDictEntry(.string("class"), .variant(.string("genp"))),
                ])
        ),
    ]

    /// An `a{sv}` with the entries given, in order (duplicates kept).
    static func entries(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, pairs.map { DBusDictEntry(.string($0.0), .variant($0.1)) })
    }

    static let duplicated: [(String, DBusValue)] = [
        ("an attribute twice", entries([("class", .string("genp")), ("svce", .string("a")), ("svce", .string("b"))])),
        ("the secret twice", entries([("class", .string("genp")), ("v_Data", .bytes([1])), ("v_Data", .bytes([2]))])),
        (
            "the identity twice",
            entries([
                ("class", .string("genp")), ("uuid", .bytes(Array(repeating: 1, count: 16))),
                ("uuid", .bytes(Array(repeating: 2, count: 16))),
            ])
        ),
        (
            "the class after an attribute, twice",
            entries([("svce", .string("a")), ("class", .string("genp")), ("class", .string("inet"))])
        ),
    ]

    @Test("an item with a key given twice is errSecParam, wherever the second one is", arguments: duplicated.indices)
    func duplicatedItemKeys(index: Int) {
        let (what, value) = Self.duplicated[index]
        do {
            _ = try AgentCodec.decodeItem(value)
            Issue.record("accepted \(what)")
        } catch let error as KeychainError {
            #expect(error.code == .parameter, "\(what)")
        } catch { Issue.record("\(what): \(error)") }
    }

    @Test("a query sends only the fields that differ from the defaults, and reads back the same")
    func queryLeavesDefaultsOut() throws {
        func keys(_ value: DBusValue) -> [String] {
            guard case .dictionary(_, _, let pairs) = value else { return [] }
            return pairs.compactMap(\.key.stringValue)
        }
        let plain = ItemQuery(class: .genericPassword, attributes: [.service: .string("s")])
        #expect(keys(AgentCodec.encode(plain)) == ["class", "attributes"])
        #expect(keys(AgentCodec.encode(ItemQuery(class: nil))) == [])
        let back = try AgentCodec.decodeQuery(AgentCodec.encode(plain))
        #expect(back.itemClass == .genericPassword && back.attributes == plain.attributes)
        #expect(back.synchronizable == plain.synchronizable && back.includesTombstones == plain.includesTombstones)
        #expect(back.authenticationUI == plain.authenticationUI && back.limit == nil)
        var changed = plain
        changed.synchronizable = .yes
        #expect(keys(AgentCodec.encode(changed)).contains("sync"))
        #expect(try AgentCodec.decodeQuery(AgentCodec.encode(changed)).synchronizable == .yes)
    }

    @Test("a malformed item is errSecParam", arguments: malformed.indices)
    func malformedItems(index: Int) {
        let (what, value) = Self.malformed[index]
        #expect(throws: KeychainError.self, "\(what)") { try AgentCodec.decodeItem(value) }
        do { _ = try AgentCodec.decodeItem(value) } catch let error as KeychainError {
            #expect(error.code == .parameter, "\(what)")
        } catch { Issue.record("\(what): \(error)") }
    }

    @Test(
        "a malformed query is errSecParam",
        arguments: [
            DBusValue.stringVariantDictionary(["limit": .int64(-1)]),
            .stringVariantDictionary(["sync": .string("maybe")]),
            .stringVariantDictionary(["authUI": .string("ask")]),
            .stringVariantDictionary(["unknown": .string("x")]),
            .stringVariantDictionary(["limit": .string("7")]),
            entries([("limit", .int64(1)), ("limit", .int64(2))]),
            entries([("attributes", entries([("svce", .string("a")), ("svce", .string("b"))]))]),
            .int32(1),
        ])
    func malformedQueries(value: DBusValue) {
        do {
            _ = try AgentCodec.decodeQuery(value)
            Issue.record("accepted \(value.type)")
        } catch let error as KeychainError {
            #expect(error.code == .parameter)
        } catch { Issue.record("\(error)") }
    }

    @Test("random D-Bus values given as items or queries never trap: each decodes or is errSecParam")
    func randomValuesNeverTrap() {
        var random = SplitMix64(seed: 0xC0DEC)
        func value(_ depth: Int) -> DBusValue {
            switch Int.random(in: 0..<(depth > 2 ? 6 : 8), using: &random) {
            case 0:
                return .string(["genp", "svce", "class", "v_Data", "uuid", "x"][Int.random(in: 0..<6, using: &random)])
            case 1: return .int64(Int64.random(in: -5...5, using: &random))
            case 2: return .bytes((0..<Int.random(in: 0...20, using: &random)).map { _ in 0 })
            case 3: return .boolean(Bool.random(using: &random))
            case 4: return .double([0, .nan, .infinity, 1e300][Int.random(in: 0..<4, using: &random)])
            case 5: return .int32(7)
            case 6:
                let keys = ["class", "svce", "v_Data", "uuid", "attributes", "limit", "sync", "authUI", "host"]
                return .dictionary(
                    key: .string, value: .variant,
                    (0..<Int.random(in: 0...5, using: &random)).map { _ in
                        DBusDictEntry(
                            .string(keys[Int.random(in: 0..<keys.count, using: &random)]), .variant(value(depth + 1)))
                    })
            default: return .array(.variant, [.variant(value(depth + 1))])
            }
        }
        for _ in 0..<5_000 {
            let input = value(0)
            for decode in [{ _ = try AgentCodec.decodeItem(input) }, { _ = try AgentCodec.decodeQuery(input) }]
                as [() throws -> Void]
            {
                do { try decode() } catch let error as KeychainError {
                    #expect(error.code == .parameter)
                } catch { Issue.record("\(error)") }
            }
            // The agent's quick look at the limit agrees with the whole decoding.
            if let query = try? AgentCodec.decodeQuery(input) { #expect(AgentCodec.queryLimit(input) == query.limit) }
        }
    }

    @Test(
        "lock settings cross the wire and come back exactly; 0 is no timeout",
        arguments: [
            KeychainSettings(), KeychainSettings(lockInterval: 300, locksOnSleep: true),
            KeychainSettings(lockInterval: 1), KeychainSettings(locksOnSleep: true),
            KeychainSettings(lockInterval: KeychainSettings.maximumLockInterval),
        ])
    func settingsRoundTrip(settings: KeychainSettings) throws {
        for bigEndian in [false, true] {
            let back = try Self.wire([AgentCodec.encode(settings)], bigEndian: bigEndian)
            #expect(try AgentCodec.decodeSettings(back[0]) == settings)
        }
        let encoded = AgentCodec.encode(settings).stringKeyedEntries
        #expect(encoded?["lockInterval"] == .variant(.uint32(UInt32(settings.lockInterval ?? 0))))
        #expect(encoded?["locksOnSleep"] == .variant(.boolean(settings.locksOnSleep)))
        let signature = AgentInterface.setSettings.inputs.map(\.type.signature).joined()
        #expect(signature == "sa{sv}")
        #expect(AgentInterface.settings.outputs.map(\.type.signature).joined() == "a{sv}")
    }

    @Test("the token key methods: their D-Bus signatures, and nothing in them carries a private key to the client")
    func tokenKeyMethodSignatures() {
        let signature = { (arguments: [DBusArgument]) in arguments.map(\.type.signature).joined() }
        #expect(signature(AgentInterface.createTokenKey.inputs) == "sba{sv}")
        #expect(signature(AgentInterface.createTokenKey.outputs) == "ayay")
        #expect(AgentInterface.createTokenKey.outputs.map(\.name) == ["publicKey", "handle"])
        #expect(signature(AgentInterface.useTokenKey.inputs) == "sayyayuayu")
        #expect(signature(AgentInterface.useTokenKey.outputs) == "ay")
        #expect(AgentInterface.createTokenKey.name == "CreateTokenKey")
        #expect(AgentInterface.useTokenKey.name == "UseTokenKey")
        #expect(signature(AgentInterface.storeTokenKey.inputs) == "saya{sv}")
        #expect(signature(AgentInterface.storeTokenKey.outputs) == "ay")
    }

    @Test("malformed lock settings are errSecParam: an unknown field, a wrong type, an interval past the maximum")
    func malformedSettingsAreRefused() throws {
        #expect(try AgentCodec.decodeSettings(.stringVariantDictionary([:])) == KeychainSettings())
        for entries: [String: DBusValue] in [
            ["lockInterval": .int32(5)], ["locksOnSleep": .uint32(1)], ["timeout": .uint32(5)],
            ["lockInterval": .uint32(UInt32(Int32.max))],
        ] {
            let error = #expect(throws: KeychainError.self) {
                try AgentCodec.decodeSettings(.stringVariantDictionary(entries))
            }
            #expect(error?.code == .parameter, "\(entries)")
        }
        #expect(throws: KeychainError.self) { try AgentCodec.decodeSettings(.string("x")) }
    }

    @Test("every method has a valid name and signatures the wire layer accepts")
    func methodTable() throws {
        #expect(AgentInterface.all.count == Set(AgentInterface.all.map(\.name)).count)
        for method in AgentInterface.all {
            #expect(DBusNames.isValidMemberName(method.name), "\(method)")
            for error in [
                KeychainError(.itemNotFound), KeychainError(.missingEntitlement),
                KeychainError(KeychainError.Code(rawValue: 5)),
            ] {
                #expect(DBusNames.isValidErrorName(AgentCodec.errorName(of: error)))
            }
            for argument in method.inputs + method.outputs {
                #expect(throws: Never.self) { _ = try DBusSignature(argument.type.signature) }
            }
        }
    }

    @Test("printing an item's D-Bus form or its message shows types and sizes, never the secret")
    func descriptionsHideContents() {
        let item = Item(
            class: .genericPassword, attributes: [.account: .string("alice-account")], data: Data("hunter2-secret".utf8)
        )
        var message = DBusMessage.methodCall(
            path: AgentInterface.objectPath, interface: AgentInterface.name, member: "Add",
            body: [.string("/home/k"), AgentCodec.encode(item), .bytes(Array("pw-bytes".utf8))])
        message.serial = 3
        for text in ["\(message)", String(reflecting: message), "\(AgentCodec.encode(item))", "\(message.body)"] {
            for secret in ["hunter2", "alice-account", "pw-bytes"] { #expect(!text.contains(secret), "\(text)") }
        }
        #expect("\(message)".contains("Add") && "\(DBusValue.bytes([1, 2, 3]))" == "ay[3]")
    }
}
