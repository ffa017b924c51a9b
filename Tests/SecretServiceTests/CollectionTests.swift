import Foundation
import KeychainCore
import KeychainLibc
import SecretService
import Testing

/// Collections: one per keychain, the in-memory `session` collection, `CreateCollection`,
/// `SetAlias("default", …)` and `Collection.Delete`, driven by `secret-tool`, `gdbus` and
/// `security` on a private bus that activates the built `keychaind`.
@Suite("Secret Service collections")
struct CollectionTests {
    static let prefix = "/org/freedesktop/secrets/collection/"

    func secretTool(_ bus: PrivateSessionBus, _ arguments: [String], stdin: Data? = nil) throws -> ToolResult {
        try runTool(try requireTool("/usr/bin/secret-tool"), arguments, stdin: stdin, environment: bus.environment)
    }

    func security(_ bus: PrivateSessionBus, _ arguments: [String]) throws -> ToolResult {
        try runTool(try requireTool(productsDirectory + "/security"), arguments, environment: bus.environment)
    }

    func gdbus(_ bus: PrivateSessionBus, _ path: String, _ method: String, _ arguments: [String]) throws -> ToolResult {
        try runTool(
            try requireTool("/usr/bin/gdbus"),
            ["call", "--session", "--dest", SecretServiceProvider.busName, "--object-path", path, "--method", method]
                + arguments, environment: bus.environment)
    }

    func property(_ bus: PrivateSessionBus, _ path: String, _ interface: String, _ name: String) throws -> String {
        try gdbus(bus, path, "org.freedesktop.DBus.Properties.Get", [interface, name]).out
    }

    func collections(_ bus: PrivateSessionBus) throws -> String {
        try property(bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Collections")
    }

    /// Waits (5 s at most) until the service's collections satisfy `condition`: the provider
    /// reads the keychains directory again at most once a second.
    func waitForCollections(_ bus: PrivateSessionBus, _ condition: (String) -> Bool) throws -> String {
        var listed = try collections(bus)
        let end = Date().addingTimeInterval(5)
        while !condition(listed) && Date() < end {
            usleep(200_000)
            listed = try collections(bus)
        }
        return listed
    }

    @Test(
        "A collection's Label is its keychain's name, kept in the file and settable; Created and Modified are the file's"
    )
    func collectionProperties() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let collection = "org.freedesktop.Secret.Collection"
        let started = UInt64(Date().timeIntervalSince1970)
        let created = try gdbus(
            bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.CreateCollection",
            ["{'org.freedesktop.Secret.Collection.Label': <'Work Stuff'>}", "''"])
        #expect(created.status == 0, "\(created)")
        let work = Self.prefix + "Work_Stuff"
        #expect(try property(bus, work, collection, "Label").contains("'Work Stuff'"), "the label, not the file's name")
        #expect(try property(bus, Self.prefix + "login", collection, "Label").contains("'Login'"))

        let set = try gdbus(
            bus, work, "org.freedesktop.DBus.Properties.Set", [collection, "Label", "<'Projects, 2026'>"])
        #expect(set.status == 0, "\(set)")
        #expect(try property(bus, work, collection, "Label").contains("'Projects, 2026'"))
        let keychainFile = bus.root + "/data/keychains/Work_Stuff.keychain-db"
        let deviceKey = DeviceKeySource.file(at: bus.root + "/config/keychain/device-key")
        let kept = try KeychainDatabase.open(at: keychainFile, configuration: .testing(deviceKey: deviceKey))
            .displayName
        #expect(kept == "Projects, 2026", "kept in the keychain's file")
        let renamed = try gdbus(
            bus, Self.prefix + "session", "org.freedesktop.DBus.Properties.Set", [collection, "Label", "<'x'>"])
        #expect(renamed.status != 0 && "\(renamed)".contains("NotSupported"), "the session keeps its name: \(renamed)")

        func seconds(_ name: String) throws -> UInt64 {
            let text = try property(bus, work, collection, name)
            // `(<uint64 1795770000>,)`: the number after the type.
            let value = text.components(separatedBy: "uint64 ").last ?? ""
            return UInt64(value.prefix { $0.isNumber }) ?? 0
        }
        let made = try seconds("Created")
        let now = UInt64(Date().timeIntervalSince1970)
        #expect(made + 1 >= started && made <= now + 1, "made at \(made), between \(started) and \(now)")
        let before = try seconds("Modified")
        #expect(before >= made)
        #expect(
            try secretTool(
                bus, ["store", "--collection=\(work)", "--label=W", "service", "w", "account", "b"],
                stdin: Data("work-secret".utf8)
            ).status == 0)
        #expect(try seconds("Modified") >= before)
    }

    @Test(
        "The session collection keeps items in memory only; CreateCollection makes a keychain; SetAlias makes it the default; Delete removes it"
    )
    func collectionsAreKeychains() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let keychains = bus.root + "/data/keychains"
        func files() -> Set<String> {
            Set((try? FileManager.default.contentsOfDirectory(atPath: keychains)) ?? []).filter {
                $0.hasSuffix(".keychain-db")
            }
        }

        // The session collection (libsecret's alias `session`): found by lookups, in no file.
        #expect(
            try secretTool(
                bus, ["store", "--label=Default", "service", "d", "account", "x"], stdin: Data("in-login".utf8)
            ).status == 0)
        let before = files()
        let stored = try secretTool(
            bus, ["store", "--collection=session", "--label=Temporary", "service", "tmp", "account", "a"],
            stdin: Data("only-in-memory".utf8))
        #expect(stored.status == 0, "\(stored)")
        let found = try secretTool(bus, ["lookup", "service", "tmp", "account", "a"])
        #expect(found.stdout == Data("only-in-memory".utf8), "\(found)")
        #expect(files() == before, "the session collection wrote no keychain file: \(files())")
        let notInLogin = try security(bus, ["find-generic-password", "-s", "tmp", "-a", "a"])
        #expect(notInLogin.status != 0, "the session item is not in the default keychain: \(notInLogin)")
        for name in ["login", "session"] {
            #expect(try collections(bus).contains(Self.prefix + name), "\(name) is listed")
        }
        let sessionLabel = try property(
            bus, "/org/freedesktop/secrets/aliases/session", "org.freedesktop.Secret.Collection", "Label")
        #expect(sessionLabel.contains("Session"), "\(sessionLabel)")

        // CreateCollection: a password-less keychain named after the label.
        let created = try gdbus(
            bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.CreateCollection",
            ["{'org.freedesktop.Secret.Collection.Label': <'Work Stuff'>}", "''"])
        let work = Self.prefix + "Work_Stuff"
        #expect(created.status == 0 && created.out.contains("'\(work)'") && created.out.contains("'/'"), "\(created)")
        #expect(files().contains("Work_Stuff.keychain-db"), "\(files())")
        #expect(try collections(bus).contains(work))
        let again = try gdbus(
            bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.CreateCollection",
            ["{'org.freedesktop.Secret.Collection.Label': <'Anything'>}", "'default'"])
        #expect(again.out.contains("'\(Self.prefix)login'"), "an alias that exists returns its collection: \(again)")
        #expect(!files().contains("Anything.keychain-db"))

        // An item stored in it is in that keychain, not the default one.
        #expect(
            try secretTool(
                bus, ["store", "--collection=\(work)", "--label=W", "service", "w", "account", "b"],
                stdin: Data("work-secret".utf8)
            ).status == 0)
        let inWork = try security(
            bus, ["find-generic-password", "-s", "w", "-a", "b", "-w", keychains + "/Work_Stuff.keychain-db"])
        #expect(inWork.status == 0 && inWork.out == "work-secret\n", "\(inWork)")
        #expect(
            try security(bus, ["find-generic-password", "-s", "w", "-a", "b", "-w", "login.keychain-db"]).status != 0)
        let searched = try gdbus(
            bus, work, "org.freedesktop.Secret.Collection.SearchItems", ["{'service': 'w'}"])
        #expect(searched.out.contains(work + "/"), "\(searched)")
        let notThere = try gdbus(
            bus, Self.prefix + "login", "org.freedesktop.Secret.Collection.SearchItems", ["{'service': 'w'}"])
        #expect(!notThere.out.contains("/collection/"), "\(notThere)")

        // A keychain made by security is a collection too; locked, it is a locked collection.
        #expect(try security(bus, ["create-keychain", "-p", "pw", "other"]).status == 0)
        let listed = try waitForCollections(bus) { $0.contains(Self.prefix + "other") }
        #expect(listed.contains(Self.prefix + "other"), "\(listed)")
        #expect(try security(bus, ["lock-keychain", "other"]).status == 0)
        let locked = try property(bus, Self.prefix + "other", "org.freedesktop.Secret.Collection", "Locked")
        #expect(locked.contains("true"), "\(locked)")

        // SetAlias("default"): the default keychain, for security and secret-tool alike.
        let set = try gdbus(
            bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SetAlias", ["default", work])
        #expect(set.status == 0, "\(set)")
        #expect(
            try gdbus(bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", ["default"]).out
                .contains(work))
        let shown = try security(bus, ["default-keychain"])
        #expect(shown.out.contains("Work_Stuff.keychain-db"), "\(shown)")
        #expect(
            try secretTool(
                bus, ["store", "--label=D2", "service", "d2", "account", "c"], stdin: Data("to-default".utf8)
            )
            .status == 0)
        let inNewDefault = try security(
            bus, ["find-generic-password", "-s", "d2", "-w", keychains + "/Work_Stuff.keychain-db"])
        #expect(inNewDefault.out == "to-default\n", "\(inNewDefault)")

        // Delete: the default keychain is refused; another is deleted with its file.
        let refused = try gdbus(bus, work, "org.freedesktop.Secret.Collection.Delete", [])
        #expect(refused.status != 0 && "\(refused)".contains("NotSupported"), "\(refused)")
        #expect(
            try gdbus(
                bus, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SetAlias",
                ["default", Self.prefix + "login"]
            )
            .status == 0)
        let deleted = try gdbus(bus, work, "org.freedesktop.Secret.Collection.Delete", [])
        #expect(deleted.status == 0 && deleted.out.contains("'/'"), "\(deleted)")
        #expect(!files().contains("Work_Stuff.keychain-db"), "\(files())")
        #expect(!(try collections(bus).contains(work)))
        let gone = try secretTool(bus, ["lookup", "service", "w", "account", "b"])
        #expect(gone.status != 0 && gone.stdout.isEmpty, "\(gone)")
        // The default keychain's item is still found, and the session's.
        #expect(try secretTool(bus, ["lookup", "service", "d", "account", "x"]).stdout == Data("in-login".utf8))
        #expect(try secretTool(bus, ["lookup", "service", "tmp"]).stdout == Data("only-in-memory".utf8))
    }
}
