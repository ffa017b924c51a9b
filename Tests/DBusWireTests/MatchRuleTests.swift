import DBusNIO
import DBusWire
import Foundation
import Testing

@Suite("Match rules, AddMatch and name owners", .timeLimit(.minutes(10)))
struct MatchRuleTests {
    @Test("a rule prints in the bus's syntax, keys in a fixed order, apostrophes escaped")
    func ruleText() {
        let rule = DBusMatchRule(
            sender: "org.example.Owner", interface: "org.example.Iface", member: "Changed", path: "/org/example",
            arguments: [1: "it's", 0: "x"])
        #expect(
            rule.description
                == "type='signal',sender='org.example.Owner',interface='org.example.Iface',member='Changed',"
                + "path='/org/example',arg0='x',arg1='it'\\''s'")
        #expect(DBusMatchRule(type: nil, member: "M").description == "member='M'")
        #expect(
            DBusMatchRule.nameOwnerChanged(of: "org.example.Owner").description
                == "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',path='/org/freedesktop/DBus',arg0='org.example.Owner'")
    }

    @Test("matches(_:) compares each key; a well-known sender never matches a message, the bus driver does")
    func localMatching() {
        var signal = DBusMessage.signal(
            path: "/org/example", interface: "org.example.Iface", member: "Changed", body: [.string("x"), .uint32(1)])
        signal.sender = ":1.7"
        #expect(DBusMatchRule(interface: "org.example.Iface", member: "Changed").matches(signal))
        #expect(DBusMatchRule(sender: ":1.7", path: "/org/example", arguments: [0: "x"]).matches(signal))
        #expect(!DBusMatchRule(sender: ":1.8").matches(signal))
        #expect(!DBusMatchRule(sender: "org.example.Owner").matches(signal), "a well-known name is the caller's check")
        #expect(!DBusMatchRule(member: "Other").matches(signal))
        #expect(!DBusMatchRule(path: "/org/example/child").matches(signal))
        #expect(!DBusMatchRule(arguments: [0: "y"]).matches(signal))
        #expect(!DBusMatchRule(arguments: [1: "1"]).matches(signal), "argN compares strings only")
        #expect(!DBusMatchRule(arguments: [5: "x"]).matches(signal))
        #expect(!DBusMatchRule(type: .methodCall).matches(signal))

        let owned = DBusMatchRule(sender: "org.example.Owner", member: "Changed")
        #expect(owned.matches(signal, senderOwner: ":1.7"), "sent by the name's owner")
        #expect(!owned.matches(signal, senderOwner: ":1.8"), "the name belongs to another connection")
        #expect(!owned.matches(signal, senderOwner: nil), "nobody owns the name")
        #expect(!DBusMatchRule(sender: "org.example.Owner", member: "Other").matches(signal, senderOwner: ":1.7"))
        #expect(DBusMatchRule(sender: ":1.7").matches(signal, senderOwner: nil), "a unique sender needs no owner")

        var changed = DBusMessage.signal(
            path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            body: [.string("org.example.Owner"), .string(""), .string(":1.9")])
        changed.sender = "org.freedesktop.DBus"
        #expect(DBusMatchRule.nameOwnerChanged(of: "org.example.Owner").matches(changed))
        #expect(!DBusMatchRule.nameOwnerChanged(of: "org.example.Other").matches(changed))
        changed.sender = ":1.3"
        #expect(!DBusMatchRule.nameOwnerChanged(of: "org.example.Owner").matches(changed), "forged by a client")
    }

    @Test("AddMatch on a real dbus-daemon: the bus routes what the rule names, from the name's owner only")
    func addMatchOnRealBus() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let addresses = try DBusAddress.parseList(bus.address)
        let listener = try await DBusConnection.connect(to: addresses)
        let owner = try await DBusConnection.connect(to: addresses)
        let other = try await DBusConnection.connect(to: addresses)
        defer {
            for connection in [listener, owner, other] { connection.closeSoon() }
        }
        let listenerName = try await listener.hello()
        let ownerName = try await owner.hello()
        try await other.hello()

        #expect(try await listener.nameOwner(of: "org.example.Owner") == nil)
        let ownerChanged = DBusMatchRule.nameOwnerChanged(of: "org.example.Owner")
        try await listener.addMatch(ownerChanged)
        let requested = try await owner.callBus("RequestName", [.string("org.example.Owner"), .uint32(4)])
        #expect(requested.body == [.uint32(1)], "primary owner")
        #expect(try await listener.nameOwner(of: "org.example.Owner") == ownerName)

        let changed = DBusMatchRule(sender: "org.example.Owner", interface: "org.example.Iface", member: "Changed")
        try await listener.addMatch(changed)
        let done = DBusMatchRule(interface: "org.example.Iface", member: "Done")
        try await listener.addMatch(done)

        // Not routed: another member, and the watched member from a connection that does not own the name.
        try await owner.send(.signal(path: "/org/example", interface: "org.example.Iface", member: "Unwatched"))
        try await other.send(.signal(path: "/org/example", interface: "org.example.Iface", member: "Changed"))
        _ = try await other.callBus("GetId")  // the bus has routed other's signal before anything that follows
        try await owner.send(
            .signal(path: "/org/example", interface: "org.example.Iface", member: "Changed", body: [.string("1")]))
        _ = try await owner.callBus("GetId")  // routed before the rule goes
        try await listener.removeMatch(changed)
        try await owner.send(.signal(path: "/org/example", interface: "org.example.Iface", member: "Changed"))
        try await owner.send(.signal(path: "/org/example", interface: "org.example.Iface", member: "Done"))
        _ = try await owner.callBus("GetId")
        // A signal addressed to the listener reaches it whatever its rules: the reason to check senders.
        try await other.send(
            .signal(path: "/org/example", interface: "org.example.Iface", member: "Direct", destination: listenerName))

        var received: [DBusMessage] = []
        for await signal in listener.signals {
            received.append(signal)
            if signal.member == "Direct" { break }
        }
        // NameAcquired of the listener's own unique name, sent after Hello, is not the test's.
        let members = received.compactMap { $0.member == "NameAcquired" ? nil : $0.member }
        #expect(members == ["NameOwnerChanged", "Changed", "Done", "Direct"], "\(members)")
        received.removeAll { $0.member == "NameAcquired" }
        #expect(received.first.map(ownerChanged.matches) == true)
        #expect(received.first?.body == [.string("org.example.Owner"), .string(""), .string(ownerName)])
        #expect(received.first { $0.member == "Changed" }?.sender == ownerName)
        #expect(received.first { $0.member == "Changed" }?.body == [.string("1")])

        await #expect(throws: DBusError.self) { try await listener.removeMatch(changed) }
        await #expect(throws: DBusError.self) { try await listener.addMatch(DBusMatchRule(member: "not a member")) }
    }

    @Test("the system bus address: DBUS_SYSTEM_BUS_ADDRESS, else the standard socket")
    func systemBusAddress() throws {
        #expect(try DBusAddress.systemBus(environment: [:]) == [.unixPath("/run/dbus/system_bus_socket")])
        #expect(
            try DBusAddress.systemBus(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/x;unix:path=/tmp/y"])
                == [.unixPath("/tmp/x"), .unixPath("/tmp/y")])
        #expect(throws: DBusError.self) { try DBusAddress.systemBus(environment: ["DBUS_SYSTEM_BUS_ADDRESS": "nope"]) }
    }
}
