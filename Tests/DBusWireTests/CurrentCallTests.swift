import DBusNIO
import DBusWire
import Foundation
import Testing

@Suite("DBusCurrentCall", .timeLimit(.minutes(10)))
struct CurrentCallTests {
    @Test("A property getter sees the message being served (Get and GetAll), and nothing outside a call")
    func propertyGetterSeesTheCall() async throws {
        #expect(DBusCurrentCall.message == nil)
        let directory = try TemporaryDirectory()
        let objects = DBusObjectTree()
        try objects.register(
            DBusInterface(
                "org.example.Current",
                properties: [
                    DBusProperty("Member", type: .string) { _ in .string(DBusCurrentCall.message?.member ?? "none") }
                ]),
            at: "/org/example/Current")
        let server = try await DBusServer.bind(unixPath: directory.path + "/p2p.sock", objects: objects)
        defer { Task { try? await server.close() } }
        let connection = try await DBusConnection.connect(
            to: try DBusAddress.parseList("unix:path=\(directory.path)/p2p.sock"))
        defer { Task { await connection.close() } }
        for member in ["Get", "GetAll"] {
            let body: [DBusValue] =
                member == "Get"
                ? [.string("org.example.Current"), .string("Member")] : [.string("org.example.Current")]
            let reply = try await connection.call(
                .methodCall(
                    path: "/org/example/Current", interface: "org.freedesktop.DBus.Properties", member: member,
                    body: body))
            let value = member == "Get" ? reply.body.first : reply.body.first?.stringKeyedEntries?["Member"]
            #expect(value == .variant(.string(member)), "\(reply.body)")
        }
    }
}
