import Foundation
import NIOPosix
import Testing

@testable import DBusNIO
@testable import DBusWire

/// Methods answered on the connection's event loop (``DBusMethod/wireHandler``), and what
/// a server keeps per connection (``DBusConnection/attachment``).
@Suite("Immediate handlers and connection attachments")
struct ImmediateHandlerTests {
    static func objects() throws -> DBusObjectTree {
        let tree = DBusObjectTree()
        try tree.register(
            DBusInterface(
                "org.example.Quick",
                methods: [
                    DBusMethod(
                        "Echo", inputs: [.init("text", .string)],
                        outputs: [.init("where", .string), .init("text", .string)],
                        wireHandler: { call, body in
                            let text = try body.readString()
                            try body.finish()
                            if text == "decline" { return nil }
                            if text == "fail" { throw DBusError.method("org.example.Error.Nope", "as requested") }
                            if text == "wrong" { return [.int32(1)] }
                            let seen = call.connection.attachment as? Int ?? 0
                            call.connection.attach(seen + 1)
                            let onLoop = MultiThreadedEventLoopGroup.currentEventLoop != nil
                            return [.string(onLoop ? "event loop" : "elsewhere"), .string(text)]
                        }
                    ) { call in
                        [.string("task"), call.arguments[0]]
                    },
                    DBusMethod(
                        "Pair", inputs: [.init("text", .string), .init("flag", .boolean)],
                        outputs: [.init("where", .string), .init("text", .string)],
                        wireHandler: { call, body in
                            #expect(call.arguments.isEmpty)
                            let text = try body.readString()
                            let flag = try body.readBoolean()
                            try body.finish()
                            if text == "decline" { return nil }
                            if text == "fail" { throw DBusError.method("org.example.Error.Nope", "as requested") }
                            return [.string("wire"), .string(flag ? text.uppercased() : text)]
                        }
                    ) { call in
                        [.string("task"), call.arguments[0]]
                    },
                    DBusMethod("Count", outputs: [.init("count", .int32)]) { call in
                        [.int32(Int32(call.connection.attachment as? Int ?? 0))]
                    },
                ]),
            at: "/org/example/Quick")
        return tree
    }

    static func echo(_ connection: DBusConnection, _ text: String) async throws -> [DBusValue] {
        try await connection.call(
            .methodCall(
                path: "/org/example/Quick", interface: "org.example.Quick", member: "Echo", body: [.string(text)])
        ).body
    }

    static func count(_ connection: DBusConnection) async throws -> [DBusValue] {
        try await connection.call(
            .methodCall(path: "/org/example/Quick", interface: "org.example.Quick", member: "Count")
        ).body
    }

    @Test("answered on the event loop, declined to the task, errors and wrong types as error replies")
    func immediate() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/quick.sock"
        let server = try await DBusServer.bind(unixPath: path, objects: try Self.objects())
        let connection = try await DBusConnection.connect(to: .unixPath(path))
        #expect(try await Self.echo(connection, "hi") == [.string("event loop"), .string("hi")])
        #expect(try await Self.echo(connection, "decline") == [.string("task"), .string("decline")])
        do {
            _ = try await Self.echo(connection, "fail")
            Issue.record("an error reply was expected")
        } catch let error as DBusError {
            #expect(error.errorName == "org.example.Error.Nope" && error.message == "as requested")
        }
        do {
            _ = try await Self.echo(connection, "wrong")
            Issue.record("an error reply was expected")
        } catch let error as DBusError {
            #expect(error.errorName == DBusErrorName.failed)
        }
        // A call of the wrong signature never reaches the wire handler.
        do {
            _ = try await connection.call(
                .methodCall(
                    path: "/org/example/Quick", interface: "org.example.Quick", member: "Echo", body: [.int32(1)]))
            Issue.record("an error reply was expected")
        } catch let error as DBusError {
            #expect(error.errorName == DBusErrorName.invalidArgs)
        }
        #expect(try await Self.echo(connection, "again") == [.string("event loop"), .string("again")])
        // The attachment lasts across the connection's calls, and belongs to it alone.
        #expect(try await Self.count(connection) == [.int32(2)])
        let other = try await DBusConnection.connect(to: .unixPath(path))
        #expect(try await Self.count(other) == [.int32(0)])
        await other.close()
        await connection.close()
        try await server.close()
    }

    static func pair(_ connection: DBusConnection, _ body: [DBusValue]) async throws -> [DBusValue] {
        try await connection.call(
            .methodCall(path: "/org/example/Quick", interface: "org.example.Quick", member: "Pair", body: body)
        ).body
    }

    @Test(
        "a wire handler reads the arguments as bytes: it answers, or declines to the task; errors are replies; a malformed body closes the connection"
    )
    func wireHandler() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/wire.sock"
        let server = try await DBusServer.bind(unixPath: path, objects: try Self.objects())
        let connection = try await DBusConnection.connect(to: .unixPath(path))
        #expect(try await Self.pair(connection, [.string("hi"), .boolean(true)]) == [.string("wire"), .string("HI")])
        #expect(
            try await Self.pair(connection, [.string("hé ✓"), .boolean(false)]) == [.string("wire"), .string("hé ✓")])
        // Declined: the arguments are decoded and the task answers.
        #expect(
            try await Self.pair(connection, [.string("decline"), .boolean(true)])
                == [.string("task"), .string("decline")])
        do {
            _ = try await Self.pair(connection, [.string("fail"), .boolean(true)])
            Issue.record("an error reply was expected")
        } catch let error as DBusError {
            #expect(error.errorName == "org.example.Error.Nope")
        }
        // Another signature never reaches the wire handler.
        do {
            _ = try await Self.pair(connection, [.string("hi")])
            Issue.record("an error reply was expected")
        } catch let error as DBusError {
            #expect(error.errorName == DBusErrorName.invalidArgs)
        }
        #expect(
            try await Self.pair(connection, [.string("still"), .boolean(false)]) == [.string("wire"), .string("still")])

        // A boolean of 2 in a well-framed message: the bytes are bad, and the connection closes.
        var message = DBusMessage.methodCall(
            path: "/org/example/Quick", interface: "org.example.Quick", member: "Pair",
            body: [.string("x"), .boolean(true)])
        message.serial = 1
        var bytes = try message.encoded()
        #expect(bytes[bytes.count - 4] == 1)
        bytes[bytes.count - 4] = 2
        let raw = try RawSocket(path: path)
        raw.send(RawSocket.authenticate + bytes)
        #expect(raw.closedByPeer(within: 60_000))
        raw.close()
        // Other connections carry on.
        #expect(
            try await Self.pair(connection, [.string("after"), .boolean(false)]) == [.string("wire"), .string("after")])
        await connection.close()
        try await server.close()
    }
}
