import DBusWire
import Foundation
import Synchronization
import Testing

@testable import UserPresence

/// keychaind's own polkit agent refuses what polkit's agent protocol should never bring it: a
/// call for another action, for another user, a malformed cookie, or from anyone but polkit;
/// and it reads the helper's escaped lines back as polkit's own agents do.
@Suite("The keychain's own polkit agent")
struct PolkitFallbackAgentTests {
    static let process = ProcessSubject(pid: getpid(), startTime: 1, uid: getuid())

    static func identity(_ uid: UInt32) -> DBusValue {
        .structure([
            .string("unix-user"),
            .dictionary(key: .string, value: .variant, [DBusDictEntry(.string("uid"), .variant(.uint32(uid)))]),
        ])
    }

    static func begin(action: String = PolkitAuthority.authenticateAction, cookie: String = "1-abc", uid: UInt32)
        -> [DBusValue]
    {
        [
            .string(action), .string("Authenticate"), .string(""), .dictionary(key: .string, value: .string, []),
            .string(cookie),
            .array(.structure([.string, .dictionary(key: .string, value: .variant)]), [identity(uid)]),
        ]
    }

    @Test(
        "BeginAuthentication is refused, and nobody asked, for another action, another user, a bad cookie or a malformed call",
        arguments: [
            ("another action", begin(action: "org.freedesktop.systemd1.manage-units", uid: getuid())),
            ("another user", begin(uid: getuid() &+ 1)),
            ("a cookie with a newline", begin(cookie: "1-abc\nPAM", uid: getuid())),
            ("an empty cookie", begin(cookie: "", uid: getuid())),
            ("too few arguments", Array(begin(uid: getuid()).prefix(4))),
        ])
    func refusals(_ name: String, body: [DBusValue]) {
        let asked = Atomic(false)
        let result = PolkitFallbackAgent.begin(body, Self.process) { _ in
            asked.store(true, ordering: .relaxed)
            return nil
        }
        guard case .failure = result else {
            Issue.record("\(name): \(result)")
            return
        }
        let wasAsked = asked.load(ordering: .relaxed)
        #expect(!wasAsked, "\(name): the person was asked")
    }

    @Test("a call from anyone but polkit, or to another interface, is refused without running anything")
    func onlyPolkitMayCall() {
        var call = DBusMessage.methodCall(
            path: PolkitFallbackAgent.objectPath, interface: PolkitFallbackAgent.interface,
            member: "BeginAuthentication", destination: ":1.1", body: Self.begin(uid: getuid()))
        call.serial = 7
        call.sender = ":1.99"
        let asked = Atomic(false)
        let reply = PolkitFallbackAgent.reply(to: call, polkit: ":1.2", Self.process) { _ in
            asked.store(true, ordering: .relaxed)
            return nil
        }
        #expect(reply.type == .error && reply.errorName == "org.freedesktop.DBus.Error.AccessDenied")
        call.sender = ":1.2"
        call.interface = "org.example.Other"
        #expect(PolkitFallbackAgent.reply(to: call, polkit: ":1.2", Self.process) { _ in nil }.type == .error)
        let wasAsked = asked.load(ordering: .relaxed)
        #expect(!wasAsked)
    }

    @Test(
        "the helper's lines are read back as g_strescape wrote them",
        arguments: [
            ("PAM_PROMPT_ECHO_OFF Password: ", "PAM_PROMPT_ECHO_OFF", "Password: "),
            ("PAM_ERROR_MSG line one\\nline \\\"two\\\"", "PAM_ERROR_MSG", "line one\nline \"two\""),
            ("PAM_TEXT_INFO caf\\303\\251 \\\\ tab\\t", "PAM_TEXT_INFO", "café \\ tab\t"),
            ("SUCCESS", "SUCCESS", ""),
        ])
    func unescaping(_ line: String, kind: String, text: String) {
        let (readKind, readText) = PolkitHelperRun.split(Array(line.utf8))
        #expect(readKind == kind && readText == text)
    }
}
