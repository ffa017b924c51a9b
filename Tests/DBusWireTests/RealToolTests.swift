import DBusNIO
import DBusWire
import Foundation
import Testing

@Suite("Real D-Bus tools against DBusWire", .timeLimit(.minutes(10)))
struct RealToolTests {
    @Test("Our client: Hello, ListNames and GetConnectionCredentials on a real dbus-daemon")
    func clientAgainstDBusDaemon() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stop() }
        let connection = try await DBusConnection.connect(to: try DBusAddress.parseList(bus.address))
        defer { Task { await connection.close() } }
        let name = try await connection.hello()
        #expect(name.hasPrefix(":1."))
        #expect(connection.serverGUID?.count == 32)
        #expect(bus.address.contains("guid=\(connection.serverGUID ?? "-")"))

        let names = try await connection.callBus("ListNames")
        let listed = names.body.first?.arrayElements?.compactMap(\.stringValue) ?? []
        #expect(listed.contains("org.freedesktop.DBus"))
        #expect(listed.contains(name))

        let credentials = try await connection.callBus("GetConnectionCredentials", [.string(name)])
        let entries = try #require(credentials.body.first?.stringKeyedEntries)
        #expect(entries["UnixUserID"] == .variant(.uint32(getuid())))
        #expect(entries["ProcessID"] == .variant(.uint32(UInt32(getpid()))))

        let missing = await #expect(throws: DBusError.self) {
            try await connection.callBus("GetNameOwner", [.string("org.example.Nobody")])
        }
        #expect(missing?.errorName == "org.freedesktop.DBus.Error.NameHasNoOwner")
    }

    @Test("gdbus call on our peer-to-peer server: nested types, integers, empty arrays, errors")
    func gdbusCallsOurServer() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.server.close() } }
        func call(_ member: String, _ args: [String] = []) async throws -> ProcessResult {
            try await Tools.run(
                "/usr/bin/gdbus",
                [
                    "call", "--address", server.address, "-d", "org.example.Test", "-o", TestObjects.path, "-m",
                    "\(TestObjects.interface).\(member)",
                ]
                    + args)
        }
        let add = try await call("Add", ["2", "40"])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "(42,)")

        let ints = try await call(
            "Integers",
            [
                "--", "255", "-32768", "65535", "-2147483648", "4294967295",
                "-9223372036854775808", "18446744073709551615", "2.5", "true",
            ])
        #expect(ints.status == 0, "\(ints.stderr)")
        #expect(
            ints.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "(byte 0xff, int16 -32768, uint16 65535, -2147483648, uint32 4294967295, int64 -9223372036854775808, uint64 18446744073709551615, 2.5, true)"
        )

        let secrets = try await call("GetSecrets", ["['/item/1', '/item/2']"])
        #expect(secrets.status == 0, "\(secrets.stderr)")
        #expect(
            secrets.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "({objectpath '/item/1': (objectpath '/session/1', [byte 0x01, 0x02, 0x03], [byte 0x70, 0xc3, 0xa4, 0x73, 0x73, 0x77, 0xc3, 0xb6, 0x72, 0x64], 'text/plain'), '/item/2': ('/session/1', [0x01, 0x02, 0x03], [0x70, 0xc3, 0xa4, 0x73, 0x73, 0x77, 0xc3, 0xb6, 0x72, 0x64], 'text/plain')},)"
        )

        let props = try await call("Properties")
        #expect(props.status == 0, "\(props.stderr)")
        #expect(props.stdout.contains("'Attributes': <{'service': 'demo'}>"))
        #expect(props.stdout.contains("'Created': <uint64 1700000000>"))
        #expect(props.stdout.contains("'Nested': <<[-1, 2]>>"))

        let empty = try await call("Empty")
        #expect(
            empty.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "(@as [], @a{sv} {}, @ay [], @a(ss) [])")

        let echo = try await call("Echo", ["<(uint16 7, [<'x'>, <@ay []>])>"])
        #expect(echo.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "(<(uint16 7, [<'x'>, <@ay []>])>,)")

        let fail = try await call("Fail")
        #expect(fail.status != 0)
        #expect(fail.stderr.contains("org.example.Error.Nope"))

        let unknown = try await call("NoSuchMethod")
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("org.freedesktop.DBus.Error.UnknownMethod"))
    }

    @Test("gdbus introspect parses our XML, with properties and child nodes")
    func gdbusIntrospect() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.server.close() } }
        let result = try await Tools.run(
            "/usr/bin/gdbus",
            ["introspect", "--address", server.address, "-d", "org.example.Test", "-o", TestObjects.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("interface org.example.Test {"))
        #expect(result.stdout.contains("GetSecrets(in  ao items,"))
        #expect(result.stdout.contains("out a{o(oayays)} secrets);"))
        #expect(result.stdout.contains("interface org.freedesktop.DBus.Properties {"))
        #expect(result.stdout.contains("Changed(s what);"))
        #expect(result.stdout.contains("readwrite s Label = 'initial';"))
        #expect(result.stdout.contains("readonly u Count = 42;"))
        #expect(result.stdout.contains("node child"))
        let root = try await Tools.run(
            "/usr/bin/gdbus", ["introspect", "--address", server.address, "-d", "org.example.Test", "-o", "/", "-r"])
        #expect(root.status == 0, "\(root.stderr)")
        #expect(root.stdout.contains("node /org/example/Test/child {"))

        let get = try await Tools.run(
            "/usr/bin/gdbus",
            [
                "call", "--address", server.address, "-d", "org.example.Test", "-o", TestObjects.path, "-m",
                "org.freedesktop.DBus.Properties.Set",
                TestObjects.interface, "Label", "<'changed'>",
            ])
        #expect(get.status == 0, "\(get.stderr)")
        let all = try await Tools.run(
            "/usr/bin/gdbus",
            [
                "call", "--address", server.address, "-d", "org.example.Test", "-o", TestObjects.path, "-m",
                "org.freedesktop.DBus.Properties.GetAll",
                TestObjects.interface,
            ])
        #expect(
            all.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == "({'Label': <'changed'>, 'Count': <uint32 42>},)")
        let ping = try await Tools.run(
            "/usr/bin/gdbus",
            [
                "call", "--address", server.address, "-d", "org.example.Test", "-o", "/", "-m",
                "org.freedesktop.DBus.Peer.GetMachineId",
            ])
        #expect(ping.status == 0, "\(ping.stderr)")
    }

    @Test("busctl (sd-bus, pipelined SASL) calls our server")
    func busctlCallsOurServer() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.server.close() } }
        func busctl(_ args: [String]) async throws -> ProcessResult {
            try await Tools.run(
                "/usr/bin/busctl",
                [
                    "--address=\(server.address)", "--json=short", "--", "call",
                    "org.example.Test", TestObjects.path, TestObjects.interface,
                ] + args)
        }
        let add = try await busctl(["Add", "ii", "20", "22"])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("\"type\":\"i\",\"data\":[42]"))

        let ints = try await busctl(["Integers", "ynqiuxtdb", "1", "-2", "3", "-4", "5", "-6", "7", "0.25", "true"])
        #expect(ints.status == 0, "\(ints.stderr)")
        #expect(ints.stdout.contains("\"data\":[1,-2,3,-4,5,-6,7,2.500000000000000000000e-01,true]"))

        let secrets = try await busctl(["GetSecrets", "ao", "1", "/item/9"])
        #expect(secrets.status == 0, "\(secrets.stderr)")
        #expect(
            secrets.stdout.contains(
                "\"/item/9\":[\"/session/1\",[1,2,3],[112,195,164,115,115,119,195,182,114,100],\"text/plain\"]"))

        let props = try await busctl(["Properties"])
        #expect(props.stdout.contains("\"Label\":{\"type\":\"s\",\"data\":\"Work\"}"))
        let empty = try await busctl(["Empty"])
        #expect(empty.stdout.contains("\"data\":[[],{},[],[]]"))
    }

    @Test("dbus-send --peer (libdbus) calls our server")
    func dbusSendCallsOurServer() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.server.close() } }
        let add = try await Tools.run(
            "/usr/bin/dbus-send",
            [
                "--peer=\(server.address)", "--print-reply", "--dest=org.example.Test", TestObjects.path,
                "\(TestObjects.interface).Add", "int32:-5", "int32:47",
            ])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("int32 42"))
        let echo = try await Tools.run(
            "/usr/bin/dbus-send",
            [
                "--peer=\(server.address)", "--print-reply", "--dest=org.example.Test", TestObjects.path,
                "\(TestObjects.interface).Echo", "variant:uint64:18446744073709551615",
            ])
        #expect(echo.stdout.contains("variant       uint64 18446744073709551615"))
        let noInterface = try await Tools.run(
            "/usr/bin/dbus-send",
            ["--peer=\(server.address)", "--print-reply", TestObjects.path, "Hello"])
        #expect(noInterface.status != 0)
    }
}
