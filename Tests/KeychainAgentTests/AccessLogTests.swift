import Foundation
@testable import KeychainAgent
import KeychainCore
import Testing

/// keychaind's access log: a line for each secret given out, the last 1,000, oldest first.
@Suite("The access log")
struct AccessLogTests {
    private func item(_ index: Int, group: String? = "com.example.app") -> Item {
        var item = Item(
            class: .genericPassword,
            attributes: [
                .service: .string("svc"), .account: .string("user\(index)"), .label: .string("Label \(index)"),
            ],
            data: Data("secret-\(index)".utf8))
        if let group { item.attributes[.accessGroup] = .string(group) }
        return item
    }

    @Test(
        "a line names the item by its attributes, the caller and what allowed it, never the secret; the owner's authentication only for an item that asked for it"
    )
    func line() throws {
        let log = AccessLog()
        var guarded = item(1)
        // SecAccessControlCreateFlags.userPresence.
        guarded.attributes[.accessControl] = .data(StoredAccessControl(flags: 1, protection: "ak").serialized)
        log.record(
            "read", [guarded, item(2, group: nil)], caller: "pid 42 (/usr/bin/app)",
            groups: AccessGroups(["default"]), verified: true)
        let lines = log.lines
        #expect(lines.count == 2)
        let first = try #require(lines.first)
        #expect(
            first.hasSuffix(
                #" read genp "Label 1" (service "svc", account "user1") by pid 42 (/usr/bin/app), allowed by access group com.example.app and the owner's authentication"#
            ), "\(first)")
        // Read in the same call, asking for nobody.
        #expect(lines.last?.hasSuffix("allowed by access group default") == true, "\(lines)")
        #expect(!lines.joined().contains("secret-"))
        #expect(ISO8601DateFormatter().date(from: String(first.prefix { $0 != " " })) != nil, "\(first)")
    }

    @Test("names a program chose cannot start a line of their own or act on the terminal")
    func controlCharacters() throws {
        let log = AccessLog()
        var forged = item(1)
        forged.attributes[.label] = .string("x\n2026-01-01T00:00:00Z read genp \"fake\"\u{1B}]0;title\u{07}")
        log.record("read", [forged], caller: "pid 7 (/tmp/a\nb)", groups: AccessGroups(["g"]), verified: false)
        let line = try #require(log.lines.first)
        #expect(!line.contains("\n") && !line.contains("\u{1B}") && !line.contains("\u{07}"), "\(line)")
        #expect(line.contains(#"x\u{a}2026-01-01T00:00:00Z read genp \"fake\"\u{1b}]0;title\u{7}"#), "\(line)")
        #expect(line.contains(#"by pid 7 (/tmp/a\u{a}b)"#), "\(line)")
    }

    @Test("the last 1,000 are kept, oldest first")
    func ring() {
        let log = AccessLog()
        for start in stride(from: 0, to: 1_005, by: 7) {
            log.record(
                "read", (start..<min(start + 7, 1_005)).map { item($0) }, caller: "c", groups: AccessGroups(["g"]),
                verified: false)
        }
        let lines = log.lines
        #expect(lines.count == AccessLog.capacity)
        #expect(lines.first?.contains(#"account "user5")"#) == true, "\(lines.first ?? "")")
        #expect(lines.last?.contains(#"account "user1004")"#) == true, "\(lines.last ?? "")")
    }
}

@Suite("What Always Allow adds to an access list")
struct AlwaysAllowedTests {
    static func caller(_ executable: String?, appID: String? = nil, service: String? = nil, digest: String? = "ab")
        -> CallingApplication
    {
        CallingApplication(
            executable: executable, flatpakAppID: appID, systemService: service, executableSHA256: { digest }, pid: 1)
    }

    @Test(
        "a program is added pinned by its digest, a Flatpak app by its app id, never a system service; an interpreter, an unreadable file or an unnamed caller never for good",
        arguments: [
            (caller("/usr/bin/tool"), TrustedApplication(.executable(path: "/usr/bin/tool", sha256: "ab"))),
            (caller(nil, appID: "org.example.App"), TrustedApplication(.flatpak(appID: "org.example.App"))),
            (caller("/usr/bin/python3.11"), nil), (caller("/usr/bin/bash"), nil), (caller("/usr/bin/node"), nil),
            (caller("/usr/bin/tool", digest: nil), nil), (CallingApplication.unnamed(pid: 1, "nobody"), nil),
            (
                caller("/usr/bin/tool", service: "ssh.service"),
                TrustedApplication(.executable(path: "/usr/bin/tool", sha256: "ab"))
            ),
            (caller("/usr/bin/python3.11", service: "ssh.service"), nil), (caller(nil, service: "ssh.service"), nil),
        ])
    func alwaysAllowed(caller: CallingApplication, expected: TrustedApplication?) {
        #expect(caller.alwaysAllowed == expected)
    }
}
