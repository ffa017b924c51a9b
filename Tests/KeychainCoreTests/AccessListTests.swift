import Foundation
@testable import KeychainCore
import Testing

/// Items with an access list (`kSecAttrAccess`): whatever mode a caller asks in, a caller the list
/// does not name gets such an item's secret, or changes it, only once the person allowed it for
/// that call; listings, deletes and in-process calls are not bound by it.
@Suite("Access lists in the engine")
struct AccessListTests {
    static let tool = "/usr/bin/tool"
    static let digest = String(repeating: "ab", count: 32)

    /// A caller running `executable` (whose file has `digest`), in the system service `service`
    /// when given, or a Flatpak app.
    static func caller(
        executable: String? = tool, digest: String? = digest, appID: String? = nil, service: String? = nil
    ) -> CallingApplication {
        CallingApplication(
            executable: executable, flatpakAppID: appID, systemService: service, executableSHA256: { digest }, pid: 1)
    }

    /// Keychains holding `listed` (trusting `applications`) and `plain`.
    private func keychain(_ backend: Backend, trusting applications: [TrustedApplication]) throws -> (
        KeychainDatabase, AnyObject?
    ) {
        let (keychain, owner): (KeychainDatabase, AnyObject?)
        switch backend {
        case .memory: (keychain, owner) = (try KeychainDatabase.inMemory(configuration: .testing()), nil)
        case .file:
            let temporary = try TemporaryKeychain(configuration: .testing())
            (keychain, owner) = (temporary.keychain, temporary)
        }
        var listed = genericPassword("listed", data: "listed secret")
        listed.attributes[.access] = .data(AccessList(applications: applications).serialized)
        _ = try keychain.add(listed)
        _ = try keychain.add(genericPassword("plain", data: "plain secret"))
        return (keychain, owner)
    }

    /// Entries, callers, and whether the entry names the caller.
    static let matches: [(String, TrustedApplication, CallingApplication, Bool)] = [
        ("same path", TrustedApplication(.executable(path: tool, sha256: nil)), caller(), true),
        ("another path", TrustedApplication(.executable(path: "/usr/bin/other", sha256: nil)), caller(), false),
        ("pinned, same file", TrustedApplication(.executable(path: tool, sha256: digest)), caller(), true),
        (
            "pinned, changed file", TrustedApplication(.executable(path: tool, sha256: digest)),
            caller(digest: String(repeating: "cd", count: 32)), false
        ),
        (
            "pinned, unreadable file", TrustedApplication(.executable(path: tool, sha256: digest)),
            caller(digest: nil), false
        ),
        (
            "a path in a sandbox", TrustedApplication(.executable(path: tool, sha256: nil)),
            caller(executable: nil, appID: "org.example.App"), false
        ),
        (
            "same app id", TrustedApplication(.flatpak(appID: "org.example.App")),
            caller(executable: nil, appID: "org.example.App"), true
        ),
        (
            "another app id", TrustedApplication(.flatpak(appID: "org.example.App")),
            caller(executable: nil, appID: "org.example.Other"), false
        ),
        ("an app id, a host program", TrustedApplication(.flatpak(appID: "org.example.App")), caller(), false),
        ("nobody", TrustedApplication(.executable(path: tool, sha256: nil)), .unnamed(pid: 1, "nobody"), false),
        (
            "same system service", TrustedApplication(.systemService(unit: "backup.service")),
            caller(service: "backup.service"), true
        ),
        (
            "a system service in a root of its own", TrustedApplication(.systemService(unit: "backup.service")),
            caller(executable: nil, service: "backup.service"), true
        ),
        (
            "another system service", TrustedApplication(.systemService(unit: "backup.service")),
            caller(service: "other.service"), false
        ),
        (
            "a system service, a program outside it", TrustedApplication(.systemService(unit: "backup.service")),
            caller(), false
        ),
        (
            "a path, the same program in a system service", TrustedApplication(.executable(path: tool, sha256: nil)),
            caller(service: "backup.service"), true
        ),
    ]

    @Test(
        "an entry names a caller by its executable (and file digest when pinned), its Flatpak app id or its system service",
        arguments: matches)
    func entriesMatchCallers(_ name: String, entry: TrustedApplication, caller: CallingApplication, expected: Bool) {
        #expect(entry.matches(caller) == expected, "\(name)")
        #expect(AccessList(applications: [entry]).trusts(caller) == expected, "\(name)")
    }

    @Test("the stored list reads back; a damaged or unknown one trusts nobody")
    func storedListsReadBackOrTrustNobody() {
        let list = AccessList(applications: [
            TrustedApplication(.executable(path: Self.tool, sha256: nil)),
            TrustedApplication(.executable(path: "/opt/app/bin/app", sha256: Self.digest)),
            TrustedApplication(.flatpak(appID: "org.example.App")),
            TrustedApplication(.systemService(unit: "getty@tty1.service")),
        ])
        #expect(AccessList(serialized: list.serialized) == list)
        #expect(AccessList(serialized: AccessList(applications: []).serialized).applications.isEmpty)
        for damaged in [
            "", "exe /usr/bin/tool\n", "keychain-access-list 2\nexe /usr/bin/tool\n",
            "keychain-access-list 1\nexe /usr/bin/tool\nfirewall /usr/bin/x\n",
            "keychain-access-list 1\nexe relative/path\n", "keychain-access-list 1\nexe sha256:12 /usr/bin/tool\n",
            "keychain-access-list 1\nflatpak not-an-app-id\n", "keychain-access-list 1\nexe /usr/../bin/tool\n",
            "keychain-access-list 1\nsystemd-system backup.socket\n",
            "keychain-access-list 1\nsystemd-system ../x.service\n",
        ] {
            #expect(AccessList(serialized: Data(damaged.utf8)).applications.isEmpty, "\(damaged)")
        }
        #expect(TrustedApplication(argument: "flatpak:org.example.App") != nil)
        #expect(TrustedApplication(argument: "relative") == nil && TrustedApplication(argument: "flatpak:x") == nil)
        #expect(
            TrustedApplication(argument: "systemd:backup.service")?.identity == .systemService(unit: "backup.service"))
        for unit in ["systemd:", "systemd:.service", "systemd:backup", "systemd:a b.service", "systemd:a/b.service"] {
            #expect(TrustedApplication(argument: unit) == nil, "\(unit)")
        }
    }

    @Test(
        "a caller the list names reads; any other lists the item but gets its secret only as the person allows",
        arguments: Backend.allCases)
    func untrustedCallersAreRefusedOrAsked(backend: Backend) throws {
        let (keychain, owner) = try keychain(
            backend, trusting: [TrustedApplication(.executable(path: Self.tool, sha256: Self.digest))])
        defer { withExtendedLifetime(owner) {} }
        // In-process: no caller, no list applies.
        #expect(try keychain.find(genericPasswordQuery(.ignore), includeData: true).count == 2)
        // The named caller.
        try KeychainDatabase.$callingApplication.withValue(Self.caller()) { () throws in
            #expect(try keychain.find(genericPasswordQuery(.fail), includeData: true).count == 2)
        }
        let stranger = Self.caller(executable: "/usr/bin/other")
        try KeychainDatabase.$callingApplication.withValue(stranger) { () throws in
            let listed = try keychain.find(genericPasswordQuery(.ignore), includeData: false)
            #expect(listed.count == 2 && listed.allSatisfy { $0.data == nil })
            for mode in [ItemQuery.AuthenticationUI.ignore, .fail] {
                let error = refusal { try keychain.find(genericPasswordQuery(mode), includeData: true) }
                #expect(error?.code == .interactionNotAllowed && error?.reason == .applicationNotTrusted)
            }
            #expect(
                try keychain.find(genericPasswordQuery(.skip), includeData: true).map(\.data) == [
                    Data("plain secret".utf8)
                ])
            let readable = try keychain.findReadable(genericPasswordQuery(.fail), includeData: true)
            #expect(readable.items.count == 1 && readable.unreadable.first?.error.reason == .applicationNotTrusted)
            #expect(
                UnreadableItem(parsing: try #require(readable.unreadable.first).description).error.reason
                    == .applicationNotTrusted)
            // May ask: the error says which item, and nothing of its secret.
            let asked = refusal { try keychain.find(genericPasswordQuery(.allow), includeData: true) }
            #expect(asked?.reason == .confirmApplication)
            let pending = try #require(asked?.underlying as? ApplicationConfirmation)
            #expect(pending.item == listed.first?.persistentID && pending.itemName.contains("listed"))
            #expect(!"\(asked!)".contains("listed secret"))
            // Allowed by the person for this call.
            try KeychainDatabase.$allowedItems.withValue([pending.item]) { () throws in
                #expect(try keychain.find(genericPasswordQuery(.allow), includeData: true).count == 2)
            }
        }
    }

    @Test(
        "a caller the list does not name cannot change the item or its list unasked, and deletes it as anyone may",
        arguments: Backend.allCases)
    func untrustedCallersCannotChangeTheList(backend: Backend) throws {
        let (keychain, owner) = try keychain(backend, trusting: [])
        defer { withExtendedLifetime(owner) {} }
        var listed = ItemQuery(class: .genericPassword, attributes: [.account: .string("listed")])
        listed.authenticationUI = .ignore
        try KeychainDatabase.$callingApplication.withValue(Self.caller()) { () throws in
            let opened = AccessList(applications: [TrustedApplication(.executable(path: Self.tool, sha256: nil))])
            let stripped = refusal {
                try keychain.update(listed, attributes: [.access: .data(opened.serialized)], data: nil)
            }
            #expect(stripped?.reason == .applicationNotTrusted)
            #expect(refusal { try keychain.update(listed, attributes: [:], data: Data("new".utf8)) } != nil)
        }
        let kept = try #require(try keychain.find(listed, includeData: true).first)
        #expect(kept.data == Data("listed secret".utf8))
        #expect(kept.attributes[.access]?.dataValue.map(AccessList.init(serialized:))?.applications.isEmpty == true)
        try KeychainDatabase.$callingApplication.withValue(Self.caller()) { () throws in
            #expect(try keychain.delete(listed) == 1)
        }
    }

    /// Lists before and after an update by a caller none of them names, and whether that caller
    /// may make it unasked (only taking entries off is).
    static let narrowings: [(String, [TrustedApplication], [TrustedApplication], Bool)] = {
        let a = TrustedApplication(.executable(path: "/usr/bin/a", sha256: nil))
        let pinned = TrustedApplication(.executable(path: "/usr/bin/b", sha256: digest))
        let app = TrustedApplication(.flatpak(appID: "org.example.App"))
        let unpinned = TrustedApplication(.executable(path: "/usr/bin/b", sha256: nil))
        return [
            ("one entry off", [a, pinned, app], [a, app], true),
            ("every entry off", [a, pinned], [], true),
            ("nothing changed", [a, pinned], [a, pinned], true),
            ("an entry added", [a], [a, app], false),
            ("a pinned entry unpinned", [pinned], [unpinned], false),
            ("the caller put on", [a], [a, TrustedApplication(.executable(path: tool, sha256: nil))], false),
        ]
    }()

    @Test(
        "a caller the list does not name takes entries off it unasked (as it may delete the item), and nothing more",
        arguments: Backend.allCases, narrowings)
    func takingEntriesOffNeedsNoTrust(
        backend: Backend, change: (String, [TrustedApplication], [TrustedApplication], Bool)
    ) throws {
        let (name, before, after, unasked) = change
        let (keychain, owner) = try keychain(backend, trusting: before)
        defer { withExtendedLifetime(owner) {} }
        var listed = ItemQuery(class: .genericPassword, attributes: [.account: .string("listed")])
        listed.authenticationUI = .fail
        let changed = AccessList(applications: after).serialized
        let refused = KeychainDatabase.$callingApplication.withValue(Self.caller()) {
            refusal { try keychain.update(listed, attributes: [.access: .data(changed)], data: nil) }
        }
        #expect((refused == nil) == unasked, "\(name): \(String(describing: refused))")
        #expect(refused == nil || refused?.reason == .applicationNotTrusted, "\(name)")
        let stored = try #require(try keychain.find(listed, includeData: false).first?.attributes[.access]?.dataValue)
        #expect(AccessList(serialized: stored).applications == (unasked ? after : before), "\(name)")
        // The secret with it is still a change that needs trust.
        let withSecret = KeychainDatabase.$callingApplication.withValue(Self.caller()) {
            refusal { try keychain.update(listed, attributes: [.access: .data(stored)], data: Data("new".utf8)) }
        }
        #expect(withSecret?.reason == .applicationNotTrusted, "\(name)")
    }

    @Test("removing a program takes off each of its entries, pinned or not, and no other program's")
    func removingNamesEveryEntryOfAProgram() {
        let b = "/usr/bin/b"
        let list = AccessList(applications: [
            TrustedApplication(.executable(path: b, sha256: nil)),
            TrustedApplication(.executable(path: b, sha256: Self.digest)),
            TrustedApplication(.executable(path: "/usr/bin/bb", sha256: nil)),
            TrustedApplication(.flatpak(appID: "org.example.App")),
        ])
        #expect(
            list.removing(TrustedApplication(.executable(path: b, sha256: nil))).applications.map { $0.description }
                == [
                    "/usr/bin/bb", "Flatpak app org.example.App",
                ])
        #expect(
            list.removing(TrustedApplication(.flatpak(appID: "org.example.App"))).applications.count == 3)
        #expect(list.removing(TrustedApplication(.flatpak(appID: "org.example.Other"))) == list)
        #expect(list.isNarrowed(to: list.removing(TrustedApplication(.executable(path: b, sha256: nil)))))
    }
}
