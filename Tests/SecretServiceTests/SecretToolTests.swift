import Foundation
import KeychainCore
import KeychainLibc
import SecretService
import Testing

/// The Secret Service driven by the real `secret-tool`, `gdbus` and the `security` tool, on a
/// private session bus that activates the built `keychaind` from the repository's service file.
@Suite("Secret Service with real clients")
struct SecretToolTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    func secretTool(_ bus: PrivateSessionBus, _ arguments: [String], stdin: Data? = nil) throws -> ToolResult {
        try runTool(try requireTool("/usr/bin/secret-tool"), arguments, stdin: stdin, environment: bus.environment)
    }

    func security(_ bus: PrivateSessionBus, _ arguments: [String]) throws -> ToolResult {
        try runTool(try requireTool(productsDirectory + "/security"), arguments, environment: bus.environment)
    }

    /// The defect: more than 64 calls in flight were refused for all the bus's clients together,
    /// and libsecret asks for every found item's properties at once, so `secret-tool search
    /// --all` failed above 64 matches.
    @Test func searchAllListsTenThousandMatches() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let paths = KeychainPaths(environment: bus.environment)
        let configuration = KeychainConfiguration(
            deviceKey: .file(at: paths.deviceKeyFile), keyDerivation: .unsafeTestingOnly,
            allowsUnsafeKeyDerivation: true, accessGroups: .standard)
        let keychain = try KeychainDatabase.create(at: paths.loginKeychain, password: nil, configuration: configuration)
        let count = 10_000
        _ = try keychain.add(
            contentsOf: (0..<count).map { index in
                Item(
                    class: .genericPassword,
                    attributes: SecretAttributes.keychainAttributes(
                        for: ["service": "bulk", "account": "user\(index)"], label: "bulk \(index)"),
                    data: Data("secret \(index)".utf8))
            })
        try keychain.close()
        let search = try secretTool(bus, ["search", "--all", "service", "bulk"])
        #expect(search.status == 0, "\(search.status) \(String(decoding: search.stderr.prefix(500), as: UTF8.self))")
        let listed = search.out + String(decoding: search.stderr, as: UTF8.self)
        #expect(listed.components(separatedBy: "attribute.service = bulk\n").count - 1 == count)
        #expect(listed.contains("secret = secret 9999\n") && listed.contains("label = bulk 0\n"))
    }

    /// `Lock` on the password-less default collection cannot lock it (nothing could unlock it
    /// again): it says so by leaving the collection out of the `locked` list, and `Locked` stays
    /// false (issue 50, item 15: documented in docs/secret-service.md).
    @Test func lockOnThePasswordlessDefaultCollectionAnswersThatNothingWasLocked() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let gdbus = try requireTool("/usr/bin/gdbus")
        func call(_ arguments: [String]) throws -> ToolResult {
            try runTool(
                gdbus, ["call", "--session", "--dest", SecretServiceProvider.busName] + arguments,
                environment: bus.environment)
        }
        let collection = "/org/freedesktop/secrets/collection/login"
        let lock = try call([
            "--object-path", "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.Lock",
            "['\(collection)']",
        ])
        #expect(lock.status == 0 && lock.out.contains("(@ao [], objectpath '/')"), "\(lock) \(lock.out)")
        let locked = try call([
            "--object-path", collection, "--method", "org.freedesktop.DBus.Properties.Get",
            "org.freedesktop.Secret.Collection", "Locked",
        ])
        #expect(locked.out.contains("<false>"), "\(locked.out)")
    }

    @Test("secret-tool store, lookup, search, clear and replace; security and secret-tool see each other's items")
    func realClients() throws {
        let bus = try PrivateSessionBus(
            serviceFile: Self.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }

        // Activation through the service file, store, then lookup: the exact bytes.
        let stored = try secretTool(
            bus, ["store", "--label=Mail", "service", "mail", "account", "alice", "extra", "x"],
            stdin: Data("pässwörd 1".utf8))
        #expect(stored.status == 0, "\(stored)")
        let found = try secretTool(bus, ["lookup", "service", "mail", "account", "alice"])
        #expect(found.status == 0 && found.stdout == Data("pässwörd 1".utf8), "\(found)")
        #expect(try bus.ownerPID(of: SecretServiceProvider.busName) != nil, "keychaind owns the name")

        // A miss: exit 1, nothing printed. Attribute names are case-sensitive.
        let miss = try secretTool(bus, ["lookup", "Service", "mail"])
        #expect(miss.status == 1 && miss.stdout.isEmpty, "\(miss)")

        // Store twice with the same attributes: one item, the new secret.
        #expect(
            try secretTool(
                bus, ["store", "--label=Mail", "service", "mail", "account", "alice", "extra", "x"],
                stdin: Data("second".utf8)
            ).status == 0)
        let replaced = try secretTool(bus, ["lookup", "extra", "x"])
        #expect(replaced.stdout == Data("second".utf8), "\(replaced)")
        let search = try secretTool(bus, ["search", "--all", "service", "mail"])
        #expect(search.status == 0, "\(search)")
        let listed = search.out + String(decoding: search.stderr, as: UTF8.self)
        #expect(listed.components(separatedBy: "attribute.extra = x").count == 2, "one item: \(listed)")
        #expect(listed.contains("label = Mail") && listed.contains("attribute.account = alice"), "\(listed)")

        // Clear, then the lookup misses.
        #expect(try secretTool(bus, ["clear", "service", "mail"]).status == 0)
        #expect(try secretTool(bus, ["lookup", "service", "mail"]).status == 1)

        // security → secret-tool.
        let added = try security(bus, ["add-generic-password", "-s", "S", "-a", "A", "-w", "from-security"])
        #expect(added.status == 0, "\(added)")
        let crossed = try secretTool(bus, ["lookup", "service", "S", "account", "A"])
        #expect(crossed.stdout == Data("from-security".utf8), "\(crossed)")

        // secret-tool → security.
        #expect(
            try secretTool(bus, ["store", "--label=T", "service", "T", "account", "B"], stdin: Data("from-dbus".utf8))
                .status == 0)
        let back = try security(bus, ["find-generic-password", "-s", "T", "-a", "B", "-w"])
        #expect(back.status == 0 && back.out == "from-dbus\n", "\(back)")

        // Introspection parses.
        let introspection = try runTool(
            try requireTool("/usr/bin/gdbus"),
            [
                "introspect", "--session", "--dest", SecretServiceProvider.busName, "--object-path",
                "/org/freedesktop/secrets",
            ],
            environment: bus.environment)
        #expect(introspection.status == 0 && introspection.out.contains("OpenSession"), "\(introspection)")
    }

    @Test(
        "Internet passwords cross both ways: security's is found by server and user, secret-tool's network item by find-internet-password"
    )
    func internetPasswords() throws {
        let bus = try PrivateSessionBus.activatingKeychaind()
        defer { bus.stop() }
        let added = try security(
            bus,
            [
                "add-internet-password", "-s", "host.example", "-a", "carol", "-r", "htps", "-P", "8443", "-w",
                "from-security",
            ])
        #expect(added.status == 0, "\(added)")
        let found = try secretTool(bus, ["lookup", "server", "host.example", "user", "carol"])
        #expect(found.status == 0 && found.stdout == Data("from-security".utf8), "\(found)")
        let listed = try secretTool(bus, ["search", "--all", "server", "host.example"])
        let shown = listed.out + String(decoding: listed.stderr, as: UTF8.self)
        #expect(
            shown.contains("attribute.protocol = https") && shown.contains("attribute.port = 8443")
                && shown.contains("attribute.user = carol"), "\(shown)")

        // A network-schema item stored by secret-tool is an internet password for security.
        #expect(
            try secretTool(
                bus, ["store", "--label=FTP", "server", "files.example", "protocol", "ftp", "user", "dave"],
                stdin: Data("from-dbus".utf8)
            ).status == 0)
        let back = try security(bus, ["find-internet-password", "-s", "files.example", "-a", "dave", "-w"])
        #expect(back.status == 0 && back.out == "from-dbus\n", "\(back)")
        #expect(try security(bus, ["find-generic-password", "-a", "dave"]).status != 0, "not a generic password")
        // Replacing by the same attributes updates that one item.
        #expect(
            try secretTool(
                bus, ["store", "--label=FTP", "server", "files.example", "protocol", "ftp", "user", "dave"],
                stdin: Data("second".utf8)
            ).status == 0)
        #expect(
            try security(bus, ["find-internet-password", "-s", "files.example", "-a", "dave", "-w"]).out == "second\n")
        #expect(try secretTool(bus, ["clear", "server", "files.example"]).status == 0)
        #expect(try security(bus, ["find-internet-password", "-s", "files.example"]).status != 0, "cleared")
    }

    func gdbus(
        _ bus: PrivateSessionBus, _ method: String, _ arguments: [String], path: String = "/org/freedesktop/secrets"
    )
        throws -> ToolResult
    {
        try runTool(
            try requireTool("/usr/bin/gdbus"),
            ["call", "--session", "--dest", SecretServiceProvider.busName, "--object-path", path, "--method", method]
                + arguments, environment: bus.environment)
    }

    @Test(
        "Protocol: DH and plain sessions, an unknown algorithm is NotSupported, sessions belong to their caller, aliases; a taken name is reported"
    )
    func protocolAndNameOwnership() throws {
        let bus = try PrivateSessionBus(
            serviceFile: Self.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let service = "org.freedesktop.Secret.Service."

        let weak = try gdbus(bus, service + "OpenSession", ["dh-ietf1024-sha256-aes128-cbc-pkcs7", "<@ay [1]>"])
        #expect(weak.status != 0 && "\(weak)".contains("org.freedesktop.DBus.Error.InvalidArgs"), "\(weak)")
        let dh = try gdbus(bus, service + "OpenSession", ["dh-ietf1024-sha256-aes128-cbc-pkcs7", "<@ay [2]>"])
        #expect(dh.status == 0 && dh.out.contains("/org/freedesktop/secrets/session/"), "\(dh)")
        let other = try gdbus(bus, service + "OpenSession", ["dh-ietf2048-sha256-aes128-cbc-pkcs7", "<@ay [2]>"])
        #expect(other.status != 0 && "\(other)".contains("org.freedesktop.DBus.Error.NotSupported"), "\(other)")
        let plain = try gdbus(bus, service + "OpenSession", ["plain", "<''>"])
        #expect(plain.status == 0 && plain.out.contains("/org/freedesktop/secrets/session/"), "\(plain)")

        // The session belonged to the gdbus process that opened it, which has left the bus.
        let session = plain.out.components(separatedBy: "'").first { $0.hasPrefix("/org/freedesktop/secrets/session/") }
        let foreign = try gdbus(bus, service + "GetSecrets", ["@ao []", session ?? "/"])
        #expect(foreign.status != 0 && "\(foreign)".contains("org.freedesktop.Secret.Error.NoSession"), "\(foreign)")

        let alias = try gdbus(bus, service + "ReadAlias", ["default"])
        #expect(alias.out.contains("/org/freedesktop/secrets/collection/login"), "\(alias)")
        let unknown = try gdbus(bus, service + "ReadAlias", ["nothing"])
        #expect(unknown.out.contains("objectpath '/'"), "\(unknown)")
        let label = try runTool(
            try requireTool("/usr/bin/gdbus"),
            [
                "call", "--session", "--dest", SecretServiceProvider.busName, "--object-path",
                "/org/freedesktop/secrets/aliases/default", "--method", "org.freedesktop.DBus.Properties.Get",
                "org.freedesktop.Secret.Collection", "Label",
            ], environment: bus.environment)
        #expect(label.status == 0 && label.out.contains("Login"), "\(label)")

        // A second keychaind on another socket finds the name taken: it says so and serves its socket.
        var environment = bus.environment
        try FileManager.default.createDirectory(
            atPath: bus.root + "/run2", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        environment["KEYCHAIN_AGENT_SOCK"] = bus.root + "/run2/agent.sock"
        let errors = bus.root + "/second.err"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        defer { try? handle.close() }
        let second = Process()
        second.executableURL = URL(fileURLWithPath: try requireTool(productsDirectory + "/keychaind"))
        second.arguments = ["--secret-service"]
        second.environment = environment
        second.standardError = handle
        second.standardInput = FileHandle.nullDevice
        try second.run()
        defer { kill(second.processIdentifier, SIGTERM) }
        let end = Date().addingTimeInterval(60)
        var said = ""
        while Date() < end && !said.contains("owned by another program") {
            usleep(20_000)
            said = String(decoding: FileManager.default.contents(atPath: errors) ?? Data(), as: UTF8.self)
        }
        #expect(said.contains("org.freedesktop.secrets is owned by another program"), "\(said)")
        #expect(second.isRunning && FileManager.default.fileExists(atPath: bus.root + "/run2/agent.sock"))
    }

    @Test("Items of different schemas with one service and account are different items; the plain one is security's")
    func schemasDoNotCollide() throws {
        let bus = try PrivateSessionBus(
            serviceFile: Self.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        let stores: [(attributes: [String], secret: String)] = [
            (["service", "mail", "account", "alice"], "plain"),
            (["service", "mail", "account", "alice", "xdg:schema", "org.gnome.keyring.NetworkPassword"], "network"),
            (["service", "mail", "account", "alice", "xdg:schema", "org.example.Other"], "other"),
        ]
        for store in stores {
            let stored = try secretTool(bus, ["store", "--label=L"] + store.attributes, stdin: Data(store.secret.utf8))
            #expect(stored.status == 0, "\(stored)")
        }
        for store in stores.dropFirst() {
            let found = try secretTool(bus, ["lookup"] + store.attributes.suffix(2))
            #expect(found.out == store.secret, "\(found)")
        }
        let search = try secretTool(bus, ["search", "--all", "service", "mail", "account", "alice"])
        let listed = search.out + String(decoding: search.stderr, as: UTF8.self)
        #expect(listed.components(separatedBy: "label = L").count == 4, "\(listed)")
        // The plain item is the keychain's item with that service and account.
        let duplicate = try security(bus, ["add-generic-password", "-s", "mail", "-a", "alice", "-w", "again"])
        #expect(duplicate.status != 0 && "\(duplicate)".contains("already exists"), "\(duplicate)")
        let updated = try security(bus, ["add-generic-password", "-U", "-s", "mail", "-a", "alice", "-w", "again"])
        #expect(updated.status == 0, "\(updated)")
        let plain = try secretTool(
            bus, ["lookup", "service", "mail", "account", "alice", "xdg:schema", "org.example.Other"])
        #expect(plain.out == "other", "\(plain)")
    }

    /// libsecret clients that search with a schema (git's credential helper, libsecret's
    /// `secret_password_lookup` with a schema) send its name as `xdg:schema`: an item made by
    /// `security` shows the schema libsecret would give its class, and such a search finds it,
    /// and no D-Bus item of another schema (issue 50, item 14).
    @Test("Items made by security show libsecret's schema for their class, and schema searches find them")
    func keychainItemsShowTheirSchema() throws {
        let bus = try PrivateSessionBus(
            serviceFile: Self.repository + "/dist/dbus-1/services/org.freedesktop.secrets.service",
            keychaind: try requireTool(productsDirectory + "/keychaind"))
        defer { bus.stop() }
        #expect(
            try security(bus, ["add-generic-password", "-s", "mail", "-a", "alice", "-w", "generic-pw"]).status == 0)
        #expect(
            try security(
                bus, ["add-internet-password", "-s", "example.com", "-a", "bob", "-r", "htps", "-w", "net-pw"]
            )
            .status == 0)
        let other = try secretTool(
            bus, ["store", "--label=Other", "service", "mail", "account", "alice", "xdg:schema", "org.example.Other"],
            stdin: Data("other-pw".utf8))
        #expect(other.status == 0, "\(other)")

        let generic = ["xdg:schema", "org.freedesktop.Secret.Generic"]
        let found = try secretTool(bus, ["lookup"] + generic + ["service", "mail", "account", "alice"])
        #expect(found.out == "generic-pw", "\(found)")
        let byUsername = try secretTool(bus, ["lookup"] + generic + ["service", "mail", "username", "alice"])
        #expect(byUsername.out == "generic-pw", "\(byUsername)")
        let search = try secretTool(bus, ["search", "--all"] + generic)
        let listed = search.out + String(decoding: search.stderr, as: UTF8.self)
        #expect(listed.contains("schema = org.freedesktop.Secret.Generic"), "\(listed)")
        #expect(listed.contains("secret = generic-pw") && !listed.contains("other-pw"), "\(listed)")
        #expect(!listed.contains("net-pw"), "an internet password is not of the generic schema: \(listed)")

        let network = ["xdg:schema", "org.gnome.keyring.NetworkPassword"]
        let internet = try secretTool(
            bus, ["lookup"] + network + ["server", "example.com", "user", "bob", "protocol", "https"])
        #expect(internet.out == "net-pw", "\(internet)")
        let wrongSchema = try secretTool(bus, ["lookup"] + network + ["service", "mail", "account", "alice"])
        #expect(wrongSchema.status != 0 && wrongSchema.stdout.isEmpty, "\(wrongSchema)")
        // The D-Bus item of another schema is still found by its own.
        let own = try secretTool(bus, ["lookup", "xdg:schema", "org.example.Other", "service", "mail"])
        #expect(own.out == "other-pw", "\(own)")
    }

    @Test("The attribute map: service and account go to svce and acct, the whole map comes back exactly")
    func mapping() {
        let attributes = ["service": "s", "username": "u", "z": "1", "a": ""]
        let stored = SecretAttributes.keychainAttributes(for: attributes, label: "L")
        #expect(stored[.service] == .string("s") && stored[.account] == .string("u") && stored[.label] == .string("L"))
        let item = Item(class: .genericPassword, attributes: stored)
        #expect(SecretAttributes.attributes(of: item) == attributes)
        let plain = Item(class: .genericPassword, attributes: [.service: .string("S"), .account: .string("A")])
        #expect(
            SecretAttributes.attributes(of: plain)
                == ["service": "S", "account": "A", "xdg:schema": "org.freedesktop.Secret.Generic"])
        #expect(SecretAttributes.matches(attributes, ["z": "1"]) && !SecretAttributes.matches(attributes, ["Z": "1"]))
        // SecItem changed the service and account since: the map shows them as they are now.
        var changed = item
        changed.attributes[.service] = .string("s2")
        changed.attributes[.account] = .string("u2")
        #expect(SecretAttributes.attributes(of: changed) == ["service": "s2", "username": "u2", "z": "1", "a": ""])
        #expect(
            SecretAttributes.matches(changed, ["service": "s2"]) && !SecretAttributes.matches(changed, ["service": "s"])
        )
    }
}
