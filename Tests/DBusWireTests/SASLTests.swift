import Testing

@testable import DBusWire

@Suite("SASL state machines")
struct SASLTests {
    static let guid = "0123456789abcdef0123456789abcdef"

    func server(peer: UInt32 = 1000) -> SASLServer {
        SASLServer(guid: Self.guid, peerUID: peer, isAuthorized: { $0 == 1000 })
    }

    func run(_ lines: [String], peer: UInt32 = 1000) -> [SASLServer.Action] {
        var machine = server(peer: peer)
        return lines.map { machine.receive(line: $0) }
    }

    @Test("libdbus: AUTH EXTERNAL <hex uid>, NEGOTIATE_UNIX_FD, BEGIN")
    func libdbus() {
        #expect(
            run(["AUTH EXTERNAL 31303030", "NEGOTIATE_UNIX_FD", "BEGIN"]) == [
                .reply("OK \(Self.guid)"), .reply("ERROR \"Unix fd passing not supported\""), .begin,
            ])
    }

    @Test("GDBus: bare AUTH first, answered REJECTED EXTERNAL")
    func gdbus() {
        #expect(
            run(["AUTH", "AUTH EXTERNAL 31303030", "NEGOTIATE_UNIX_FD", "BEGIN"]) == [
                .reply("REJECTED EXTERNAL"), .reply("OK \(Self.guid)"),
                .reply("ERROR \"Unix fd passing not supported\""),
                .begin,
            ])
    }

    @Test("sd-bus: AUTH EXTERNAL without response, then empty DATA means the kernel's uid")
    func sdbus() {
        #expect(
            run(["AUTH EXTERNAL", "DATA", "NEGOTIATE_UNIX_FD", "BEGIN"]) == [
                .reply("DATA"), .reply("OK \(Self.guid)"), .reply("ERROR \"Unix fd passing not supported\""), .begin,
            ])
    }

    @Test("A claimed uid other than SO_PEERCRED's, or an unauthorized uid, is rejected")
    func mismatch() {
        #expect(run(["AUTH EXTERNAL 30"]) == [.reply("REJECTED EXTERNAL")])
        #expect(run(["AUTH EXTERNAL", "DATA 30"]) == [.reply("DATA"), .reply("REJECTED EXTERNAL")])
        #expect(run(["AUTH EXTERNAL 30"], peer: 0) == [.reply("REJECTED EXTERNAL")])
        #expect(run(["AUTH EXTERNAL zz", "BEGIN"]) == [.reply("REJECTED EXTERNAL"), .close])
        #expect(run(["AUTH DBUS_COOKIE_SHA1 31"]) == [.reply("REJECTED EXTERNAL")])
        var machine = server()
        let answers = (0..<10).map { _ in machine.receive(line: "AUTH EXTERNAL 30") }
        #expect(answers.last == .close)
    }

    @Test("uid hex encoding matches libdbus's")
    func uidEncoding() {
        #expect(SASLServer.encodeUID(0) == "30")
        #expect(SASLServer.encodeUID(1000) == "31303030")
        #expect(SASLServer.decodeUID(hex: "31303030") == 1000)
        #expect(SASLServer.decodeUID(hex: "3") == nil && SASLServer.decodeUID(hex: "41") == nil)
    }
}
