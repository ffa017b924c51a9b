import Foundation
import KeychainTestSupport
import Testing

/// Per-app access (issue 54): an item's access list names the programs that read it unasked;
/// keychaind asks about any other through a real `pinentry-curses` on the caller's terminal,
/// typed into by `Clients/terminal.py`: Deny, Allow (once), Always Allow (remembered in the item,
/// pinned by the program's digest), and the access log says what allowed each read.
@Suite("Per-app access lists: Deny, Allow, Always Allow")
struct ApplicationAccessTests {
    /// A keychaind that asks through `pinentry-curses`, the default keychain, and a copy of the
    /// `security` tool at a path of its own (another program to the agent).
    final class Fixture {
        let bus: PrivateSessionBus
        let python: String
        let security: String
        let otherTool: String

        init() throws {
            python = try requireTool(PythonClientTests.python)
            bus = try PrivateSessionBus.activatingKeychaind(environment: [
                "KEYCHAIN_PINENTRY": try requireTool("/usr/bin/pinentry-curses"), "TERM": "xterm",
            ])
            security =
                URL(fileURLWithPath: try requireTool(productsDirectory + "/security"))
                .resolvingSymlinksInPath().path
            otherTool = bus.root + "/home/other-tool"
            try FileManager.default.copyItem(atPath: security, toPath: otherTool)
        }

        /// Runs `tool` with no terminal: nobody can be asked.
        func run(_ tool: String, _ arguments: [String]) throws -> ToolResult {
            try runTool(tool, arguments, environment: bus.environment)
        }

        /// Runs `tool` on a pseudo-terminal where a person answers the dialog with `keys`.
        func onTerminal(_ tool: String, _ arguments: [String], answering keys: String) throws -> ToolResult {
            try runTool(
                python, [PinentryTests.clients + "terminal.py", tool] + arguments,
                stdin: Data("keychain:\t\(keys)\n".utf8), environment: bus.environment, deadline: 180)
        }

        func read(_ tool: String) throws -> ToolResult { try run(tool, ["find-generic-password", "-s", "acl", "-w"]) }

        func readOnTerminal(_ tool: String, answering keys: String) throws -> ToolResult {
            try onTerminal(tool, ["find-generic-password", "-s", "acl", "-w"], answering: keys)
        }

        /// Stops keychaind; the next call starts it again.
        func restartAgent() { stopAgent(at: bus.socket) }

        deinit {
            stopAgent(at: bus.socket)
            bus.stop()
        }
    }

    @Test(
        "A program the list does not name is asked about: Deny and no one to ask refuse, Allow reads once, Always Allow is remembered across a restart and pinned to the program's file"
    )
    func denyAllowAlwaysAllow() throws {
        let fixture = try Fixture()
        let secret = "acl-\(UUID().uuidString.prefix(8))"
        let trusted = URL(fileURLWithPath: "/usr/bin/true").resolvingSymlinksInPath().path
        let added = try fixture.run(
            fixture.security, ["add-generic-password", "-s", "acl", "-a", "x", "-w", secret, "-T", "/usr/bin/true"])
        try #require(added.status == 0, "\(added)")
        // Listing shows the item and its list; no secret.
        let dump = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(dump.out.contains("access list:\n    trusted: \(trusted)\n"), "\(dump.out)")

        // Nobody to ask (no terminal, no display): refused at once, never the secret.
        let alone = try fixture.read(fixture.security)
        #expect(alone.status != 0 && !alone.out.contains(secret), "\(alone)")
        // Deny (Tab, Tab, Enter: the last button).
        let denied = try fixture.readOnTerminal(fixture.security, answering: "\t\t")
        #expect(denied.status != 0 && !denied.out.contains(secret + "\r\n"), "\(denied)\n\(denied.out)")
        #expect(denied.out.contains("Always Allow") && denied.out.contains("Deny"), "\(denied.out)")
        // Allow (Enter): this once.
        let once = try fixture.readOnTerminal(fixture.security, answering: "")
        #expect(once.status == 0 && once.out.contains(secret), "\(once)\n\(once.out)")
        #expect(try fixture.read(fixture.security).status != 0, "Allow is not remembered")
        // Always Allow (Tab, Enter): remembered in the item, across a restart of keychaind.
        let always = try fixture.readOnTerminal(fixture.security, answering: "\t")
        #expect(always.status == 0 && always.out.contains(secret), "\(always)\n\(always.out)")
        fixture.restartAgent()
        let remembered = try fixture.read(fixture.security)
        #expect(remembered.status == 0 && remembered.out == secret + "\n", "\(remembered)")
        let listed = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(listed.out.contains("    trusted: \(fixture.security) (sha256 "), "\(listed.out)")

        // Another program (the same file at another path) is asked again; allowed for good, it
        // is asked again once its file changes.
        #expect(try fixture.read(fixture.otherTool).status != 0)
        let other = try fixture.readOnTerminal(fixture.otherTool, answering: "\t")
        #expect(other.status == 0 && other.out.contains(secret), "\(other)\n\(other.out)")
        #expect(try fixture.read(fixture.otherTool).status == 0)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: fixture.otherTool))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        let changed = try fixture.read(fixture.otherTool)
        #expect(
            changed.status != 0 && !changed.out.contains(secret), "a changed file is not the one allowed: \(changed)")

        // The log says what let each read through.
        let log = try fixture.run(fixture.security, ["access-log"]).out
        #expect(log.contains("the person's answer to a prompt") && log.contains("its access list"), "\(log)")
        #expect(!log.contains(secret))
    }

    @Test(
        "Changing an item's access list asks a program the list does not name; a program it names replaces it, and the programs taken off are asked again"
    )
    func revokingAndChangingTheList() throws {
        let fixture = try Fixture()
        let secret = "acl-\(UUID().uuidString.prefix(8))"
        let added = try fixture.run(
            fixture.security,
            [
                "add-generic-password", "-s", "acl", "-a", "x", "-w", secret, "-T", fixture.security, "-T",
                fixture.otherTool,
            ])
        try #require(added.status == 0, "\(added)")
        #expect(try fixture.read(fixture.security).status == 0)
        #expect(try fixture.read(fixture.otherTool).status == 0)

        // The trusted tool takes the other off the list (-U -T): the other is asked again.
        let revoked = try fixture.run(
            fixture.security, ["add-generic-password", "-U", "-s", "acl", "-a", "x", "-T", fixture.security])
        #expect(revoked.status == 0, "\(revoked)")
        #expect(try fixture.read(fixture.otherTool).status != 0)
        #expect(try fixture.read(fixture.security).out == secret + "\n", "the secret was kept")

        // The other tool cannot put itself back unasked; denied, the list stays.
        let sneaked = try fixture.run(
            fixture.otherTool, ["add-generic-password", "-U", "-s", "acl", "-a", "x", "-T", fixture.otherTool])
        #expect(sneaked.status != 0, "\(sneaked)")
        let refusedChange = try fixture.onTerminal(
            fixture.otherTool, ["add-generic-password", "-U", "-s", "acl", "-a", "x", "-T", fixture.otherTool],
            answering: "\t\t")
        #expect(
            refusedChange.status != 0 && refusedChange.out.contains("change") && refusedChange.out.contains("Deny"),
            "\(refusedChange.out)")
        #expect(try fixture.read(fixture.otherTool).status != 0)

        // An empty list trusts nobody.
        #expect(
            try fixture.run(fixture.security, ["add-generic-password", "-U", "-s", "acl", "-a", "x", "-T", ""]).status
                == 0)
        #expect(try fixture.read(fixture.security).status != 0)
        let dump = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(dump.out.contains("access list: trusts no application"), "\(dump.out)")
    }

    @Test(
        "security revoke-access takes a program off the lists unasked, however it got there (-T, or pinned by Always Allow); it is asked again, other items and programs keep theirs"
    )
    func revokeAccess() throws {
        let fixture = try Fixture()
        let secret = "acl-\(UUID().uuidString.prefix(8))"
        let trusted = URL(fileURLWithPath: "/usr/bin/true").resolvingSymlinksInPath().path
        for (service, list) in [("acl", ["-T", "/usr/bin/true", "-T", fixture.otherTool]), ("acl2", ["-T", ""])] {
            let added = try fixture.run(
                fixture.security, ["add-generic-password", "-s", service, "-a", "x", "-w", secret] + list)
            try #require(added.status == 0, "\(added)")
        }
        // Always Allow puts the other tool on the second list, pinned by its digest.
        let always = try fixture.onTerminal(
            fixture.otherTool, ["find-generic-password", "-s", "acl2", "-w"], answering: "\t")
        #expect(always.status == 0 && always.out.contains(secret), "\(always)\n\(always.out)")
        for service in ["acl", "acl2"] {
            #expect(try fixture.run(fixture.otherTool, ["find-generic-password", "-s", service, "-w"]).status == 0)
        }

        // The security tool, on neither list and with nobody to ask, takes it off the first.
        let first = try fixture.run(fixture.security, ["revoke-access", "-s", "acl", fixture.otherTool])
        #expect(first.status == 0 && first.out.contains("taken off its access list"), "\(first)")
        #expect(first.out.contains("service acl,") && !first.out.contains("acl2"), "\(first.out)")
        #expect(try fixture.run(fixture.otherTool, ["find-generic-password", "-s", "acl", "-w"]).status != 0)
        #expect(try fixture.run(fixture.otherTool, ["find-generic-password", "-s", "acl2", "-w"]).status == 0)
        // Without options, from every list: the pinned entry goes too.
        let every = try fixture.run(fixture.security, ["revoke-access", fixture.otherTool])
        #expect(every.status == 0 && every.out.contains("service acl2,"), "\(every)")
        #expect(try fixture.run(fixture.otherTool, ["find-generic-password", "-s", "acl2", "-w"]).status != 0)
        // Nothing names it any more: errSecItemNotFound's 44, as find-* exit.
        let none = try fixture.run(fixture.security, ["revoke-access", fixture.otherTool])
        #expect(none.status == 44 && none.err.contains("no matching item's access list names"), "\(none)")
        // The other program stays on its list, and the secrets stay.
        let dump = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(dump.out.contains("    trusted: \(trusted)\n") && !dump.out.contains("other-tool"), "\(dump.out)")
        let asked = try fixture.onTerminal(
            fixture.otherTool, ["find-generic-password", "-s", "acl", "-w"], answering: "")
        #expect(asked.status == 0 && asked.out.contains(secret), "asked again, and allowed once: \(asked.out)")
    }

    @Test(
        "A Flatpak app named on the list reads unasked from its bwrap sandbox; a path names no program in a sandbox; a host program is asked"
    )
    func flatpakAppOnTheList() throws {
        let fixture = try Fixture()
        let appID = "org.example.Listed"
        let info = fixture.bus.root + "/flatpak-info"
        try "[Application]\nname=\(appID)\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n"
            .write(toFile: info, atomically: true, encoding: .utf8)
        let products = URL(fileURLWithPath: fixture.security).deletingLastPathComponent().path
        let sandbox = [
            "--unshare-pid", "--die-with-parent", "--tmpfs", "/", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc",
            "/etc", "--ro-bind", "/opt", "/opt", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--bind", fixture.bus.root,
            fixture.bus.root, "--ro-bind", products, products, "--ro-bind", info, "/.flatpak-info",
        ]
        let bwrap = try requireTool("/usr/bin/bwrap")
        func inSandbox(_ arguments: [String]) throws -> ToolResult {
            try fixture.run(bwrap, sandbox + [fixture.security] + arguments)
        }
        // keychaind runs on the host before the sandbox connects to it (one the sandbox started
        // would run inside it), with the default keychain made.
        #expect(
            try fixture.run(fixture.security, ["add-generic-password", "-s", "host", "-a", "x", "-w", "h"]).status == 0)
        let secret = "flatpak-\(UUID().uuidString.prefix(8))"
        let added = try inSandbox([
            "add-generic-password", "-s", "fp", "-a", "x", "-w", secret, "-T", "flatpak:" + appID,
        ])
        try #require(added.status == 0, "\(added)")
        let read = try inSandbox(["find-generic-password", "-s", "fp", "-w"])
        #expect(read.status == 0 && read.out == secret + "\n", "\(read)")
        // The host's tool sees the item (its groups are all groups) and is not on the list.
        let host = try fixture.run(fixture.security, ["find-generic-password", "-s", "fp", "-w"])
        #expect(host.status != 0 && !host.out.contains(secret), "\(host)")
        let dump = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(dump.out.contains("trusted: Flatpak app \(appID)"), "\(dump.out)")

        // An executable's path names nothing inside a sandbox, where it may be any file.
        let pathOnly = try inSandbox([
            "add-generic-password", "-s", "fp-path", "-a", "x", "-w", secret, "-T", fixture.security,
        ])
        try #require(pathOnly.status == 0, "\(pathOnly)")
        let refused = try inSandbox(["find-generic-password", "-s", "fp-path", "-w"])
        #expect(refused.status != 0 && !refused.out.contains(secret), "\(refused)")
        #expect(try fixture.run(fixture.security, ["find-generic-password", "-s", "fp-path", "-w"]).status == 0)
    }

    @Test(
        "A system service named on the list (systemd:UNIT) reads unasked from its cgroup, in a mount namespace of its own too; the same name in the user's own service manager, or outside, is refused; revoke-access takes it off; Always Allow from it remembers the program, never the service"
    )
    func systemServiceOnTheList() throws {
        let fixture = try Fixture()
        let unit = "keychain-test-\(UUID().uuidString.prefix(8).lowercased()).service"
        let service = try ScratchCgroup("system.slice/" + unit)
        let delegated = try ScratchCgroup("user.slice/user-0.slice/user@0.service/app.slice/" + unit)
        let unshare = try requireTool("/usr/bin/unshare")
        let secret = "unit-\(UUID().uuidString.prefix(8))"
        // keychaind starts outside the cgroups, before any call from them.
        let added = try fixture.run(
            fixture.security, ["add-generic-password", "-s", "acl", "-a", "x", "-w", secret, "-T", "systemd:" + unit])
        try #require(added.status == 0, "\(added)")
        func read(in cgroup: ScratchCgroup, _ prefix: [String] = []) throws -> ToolResult {
            let arguments = cgroup.running(prefix + [fixture.otherTool, "find-generic-password", "-s", "acl", "-w"])
            return try fixture.run(arguments[0], Array(arguments.dropFirst()))
        }
        let inService = try read(in: service)
        #expect(inService.status == 0 && inService.out == secret + "\n", "\(inService)")
        // A service with a root of its own (ProtectSystem=, PrivateTmp=): its path names nothing
        // there, its unit still does.
        let ownRoot = try read(in: service, [unshare, "--mount", "--propagation", "private"])
        #expect(ownRoot.status == 0 && ownRoot.out == secret + "\n", "\(ownRoot)")
        let userUnit = try read(in: delegated)
        #expect(userUnit.status != 0 && !userUnit.out.contains(secret), "\(userUnit)")
        let outside = try fixture.read(fixture.otherTool)
        #expect(outside.status != 0 && !outside.out.contains(secret), "\(outside)")
        let dump = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(dump.out.contains("    trusted: system service \(unit)\n"), "\(dump.out)")
        let log = try fixture.run(fixture.security, ["access-log"]).out
        #expect(log.contains("system service \(unit)") && log.contains("its access list"), "\(log)")

        // Taken off, the service is asked again; on its terminal, Always Allow remembers the
        // program that asked, not the service (which may run far more), so another program in it
        // is still asked.
        let revoked = try fixture.run(fixture.security, ["revoke-access", "systemd:" + unit])
        #expect(revoked.status == 0 && revoked.out.contains("taken off its access list"), "\(revoked)")
        #expect(try read(in: service).status != 0)
        let asking = service.running([fixture.otherTool, "find-generic-password", "-s", "acl", "-w"])
        let always = try fixture.onTerminal(asking[0], Array(asking.dropFirst()), answering: "\t")
        #expect(always.status == 0 && always.out.contains(secret), "\(always)\n\(always.out)")
        #expect(always.out.contains(unit), "the dialog names the service: \(always.out)")
        let listed = try fixture.run(fixture.security, ["dump-keychain", "-a"])
        #expect(
            listed.out.contains("    trusted: \(fixture.otherTool) (sha256 ") && !listed.out.contains("system service"),
            "\(listed.out)")
        #expect(try read(in: service).status == 0)
        let another = service.running([fixture.security, "find-generic-password", "-s", "acl", "-w"])
        let neighbour = try fixture.run(another[0], Array(another.dropFirst()))
        #expect(neighbour.status != 0 && !neighbour.out.contains(secret), "\(neighbour)")
    }

    @Test(
        "Through the Secret Service, a client the list names reads the item; to any other it is locked, and unlocking asks: nobody to ask or Deny refuse, Allow reads, Always Allow is remembered"
    )
    func secretServiceFollowsTheList() throws {
        let fixture = try Fixture()
        let secretTool = try requireTool("/usr/bin/secret-tool")
        let secret = "acl-\(UUID().uuidString.prefix(8))"
        for (service, trusted) in [("for-secret-tool", secretTool), ("for-true", "/usr/bin/true")] {
            let added = try fixture.run(
                fixture.security, ["add-generic-password", "-s", service, "-a", "x", "-w", secret, "-T", trusted])
            try #require(added.status == 0, "\(added)")
        }
        #expect(
            try fixture.run(fixture.security, ["add-generic-password", "-s", "open", "-a", "x", "-w", "open-secret"])
                .status == 0)
        let named = try fixture.run(secretTool, ["lookup", "service", "for-secret-tool"])
        #expect(named.status == 0 && named.out == secret, "\(named)")
        let other = try fixture.run(secretTool, ["lookup", "service", "for-true"])
        #expect(other.status != 0 && !other.out.contains(secret), "\(other)")
        #expect(try fixture.run(secretTool, ["lookup", "service", "open"]).out == "open-secret")
        // The item is locked to a client the list does not name; GetSecret says why.
        let script = """
            import secretstorage
            from secretstorage.util import open_session
            bus = secretstorage.dbus_init()
            item = next(secretstorage.search_items(bus, {"service": "for-secret-tool"}))
            print("locked" if item.is_locked() else "open", end=" ")
            try:
                item._item.call("GetSecret", "o", open_session(bus).object_path)
                print("read")
            except Exception as error:
                print("refused:", error)
            """
        let python = try fixture.run(fixture.python, ["-c", script])
        #expect(
            python.out.hasPrefix("locked refused:") && python.out.contains("access list"), "\(python) \(python.out)")
        #expect(!python.out.contains(secret))

        // libsecret unlocks a locked item: the Unlock prompt asks on secret-tool's terminal.
        func lookupOnTerminal(answering keys: String) throws -> ToolResult {
            try fixture.onTerminal(secretTool, ["lookup", "service", "for-true"], answering: keys)
        }
        let denied = try lookupOnTerminal(answering: "\t\t")
        #expect(denied.status != 0 && !denied.out.contains(secret), "\(denied)\n\(denied.out)")
        #expect(denied.out.contains("secret-tool") && denied.out.contains("Deny"), "\(denied.out)")
        let once = try lookupOnTerminal(answering: "")
        #expect(once.status == 0 && once.out.contains(secret), "\(once)\n\(once.out)")
        #expect(try fixture.run(secretTool, ["lookup", "service", "for-true"]).status != 0, "Allow is not remembered")
        let always = try lookupOnTerminal(answering: "\t")
        #expect(always.status == 0 && always.out.contains(secret), "\(always)\n\(always.out)")
        let remembered = try fixture.run(secretTool, ["lookup", "service", "for-true"])
        #expect(remembered.status == 0 && remembered.out == secret, "\(remembered)")
        let log = try fixture.run(fixture.security, ["access-log"]).out
        #expect(log.contains("secret-tool") && log.contains("its access list"), "\(log)")
    }

    @Test("Dismissing a Secret Service prompt takes its access-list dialog off the screen")
    func dismissingThePromptClosesTheDialog() throws {
        let fixture = try Fixture()
        let added = try fixture.run(
            fixture.security, ["add-generic-password", "-s", "held", "-a", "x", "-w", "kept", "-T", "/usr/bin/true"])
        try #require(added.status == 0, "\(added)")
        // On a terminal of its own, where the dialog shows; nobody types.
        let run = try runTool(
            fixture.python,
            [
                PinentryTests.clients + "terminal.py", fixture.python, PinentryTests.clients + "dismiss_prompt.py",
                "held",
            ],
            stdin: Data(), environment: fixture.bus.environment, deadline: 120)
        // The client's lines follow the dialog's drawing on the same screen.
        #expect(run.out.contains("asked") && !run.out.contains("never asked"), "\(run)\n\(run.out)")
        #expect(run.out.contains("dismissed") && run.out.contains("closed"), "\(run)\n\(run.out)")
        #expect(!run.out.contains("still open"), "\(run.out)")
        // Nothing was allowed: the item stays locked to others.
        #expect(try fixture.read("/usr/bin/secret-tool").status != 0)
    }
}
