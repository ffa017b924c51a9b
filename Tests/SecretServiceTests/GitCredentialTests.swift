import Foundation
import KeychainLibc
import SecretService
import Testing

/// git's own credential helper for the Secret Service, `git-credential-libsecret`, on a private
/// bus that activates the built `keychaind`. Debian ships it only as source, in the `git`
/// package's contrib directory; the test compiles it as that directory's Makefile does
/// (`pkg-config --cflags --libs libsecret-1 glib-2.0`, from `libsecret-1-dev`, which `.ci/run`
/// installs) and runs it as git does: `git-credential-libsecret get|store|erase`, the credential
/// on standard input.
///
/// The helper stores with libsecret's `org.gnome.keyring.NetworkPassword` schema: the attributes
/// `user`, `protocol`, `server`, and `port` and `object` when git gives a port or a path, plus
/// `xdg:schema`, which libsecret adds. The provider keeps every D-Bus item as a generic password:
/// `user` becomes `acct` (there is no `service`, so `svce` stays unset), the label
/// `Git: https://example.com/` `labl`, and the whole map `gena` (with a `pkdx` digest, as for any
/// map beyond a service and an account); `server`, `protocol` and `port` do not become an
/// internet password's `srvr`, `ptcl` and `port`. So `security find-generic-password -a alice -l
/// 'Git: https://example.com/'` finds git's item and `security find-internet-password -s
/// example.com` does not.
@Suite("Secret Service with git's credential helper")
struct GitCredentialTests {
    static let source = "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"

    /// Compiles `git-credential-libsecret` into `directory`; a missing source, compiler or
    /// libsecret-1-dev throws (the test fails, it is never skipped).
    static func buildHelper(in directory: String) throws -> String {
        guard FileManager.default.fileExists(atPath: source) else {
            throw ToolMissing(description: "\(source) is missing (Debian's git package ships it)")
        }
        let environment = ProcessInfo.processInfo.environment
        let flags = try runTool(
            try requireTool("/usr/bin/pkg-config"), ["--cflags", "--libs", "libsecret-1", "glib-2.0"],
            environment: environment)
        guard flags.status == 0 else {
            throw ToolMissing(description: "libsecret-1-dev is missing (bash .ci/run installs it): \(flags)")
        }
        let helper = directory + "/git-credential-libsecret"
        let compiled = try runTool(
            try requireTool("/usr/bin/cc"),
            ["-O2", "-Wall", "-o", helper, source] + flags.out.split(whereSeparator: \.isWhitespace).map(String.init),
            environment: environment)
        guard compiled.status == 0 else { throw ToolMissing(description: "cc failed: \(compiled)") }
        return try requireTool(helper)
    }

    /// The standard input git gives a helper: `key=value` lines, then an empty line.
    static func credential(_ pairs: [(String, String)]) -> Data {
        Data((pairs.map { "\($0.0)=\($0.1)\n" }.joined() + "\n").utf8)
    }

    static func bus() throws -> PrivateSessionBus {
        try PrivateSessionBus.activatingKeychaind()
    }

    /// What `secret-tool search --all` lists for `attributes` (it writes part to standard error).
    static func search(_ bus: PrivateSessionBus, _ attributes: [String]) throws -> String {
        let search = try runTool(
            try requireTool("/usr/bin/secret-tool"), ["search", "--all"] + attributes, environment: bus.environment)
        return search.out + String(decoding: search.stderr, as: UTF8.self)
    }

    static func count(_ text: String, _ part: String) -> Int { text.components(separatedBy: part).count - 1 }

    @Test("git-credential-libsecret stores, gets, lists, updates and erases; security and secret-tool see its items")
    func storeGetUpdateErase() throws {
        let bus = try Self.bus()
        defer { bus.stop() }
        let helper = try Self.buildHelper(in: bus.root)
        let security = try requireTool(productsDirectory + "/security")
        func git(_ operation: String, _ pairs: [(String, String)]) throws -> ToolResult {
            try runTool(helper, [operation], stdin: Self.credential(pairs), environment: bus.environment)
        }
        let site = [("protocol", "https"), ("host", "example.com")]
        let first = "pw-\(UUID().uuidString.prefix(8))"

        // store, then get: git's username and password back.
        let stored = try git("store", site + [("username", "alice"), ("password", first)])
        #expect(stored.status == 0, "\(stored)")
        let got = try git("get", site)
        #expect(got.status == 0 && got.out == "username=alice\npassword=\(first)\n", "\(got) \(got.out)")

        // The item is an internet password, as macOS's git helper keeps one: srvr, acct from
        // `user`, ptcl htps; the whole map in gena. It is not a generic password.
        let internet = try runTool(
            security, ["find-internet-password", "-s", "example.com", "-a", "alice", "-w"], environment: bus.environment
        )
        #expect(internet.status == 0 && internet.out == first + "\n", "\(internet)")
        let generic = try runTool(
            security, ["find-generic-password", "-a", "alice", "-l", "Git: https://example.com/", "-w"],
            environment: bus.environment)
        #expect(generic.status == 44 && generic.stdout.isEmpty, "\(generic)")
        let block = try runTool(
            security, ["find-internet-password", "-s", "example.com", "-a", "alice"], environment: bus.environment)
        #expect(
            block.out.contains("\"srvr\"<blob>=\"example.com\"") && block.out.contains("\"acct\"<blob>=\"alice\"")
                && block.out.contains("\"ptcl\"<uint32>=\"htps\""), "\(block.out)")
        #expect(block.out.contains("class: \"inet\""), "\(block.out)")

        // secret-tool lists it with the attributes the helper gave.
        var listed = try Self.search(bus, ["protocol", "https"])
        #expect(Self.count(listed, "label = Git: https://example.com/") == 1, "\(listed)")
        #expect(
            listed.contains("attribute.server = example.com") && listed.contains("attribute.user = alice")
                && listed.contains("attribute.protocol = https") && listed.contains("secret = \(first)")
                && listed.contains("schema = org.gnome.keyring.NetworkPassword"),
            "\(listed)")
        #expect(!listed.contains("attribute.port") && !listed.contains("attribute.object"), "\(listed)")

        // Update: store again for the same host and user; one item, the new password.
        let second = "pw2-\(UUID().uuidString.prefix(8))"
        #expect(try git("store", site + [("username", "alice"), ("password", second)]).status == 0)
        let updated = try git("get", site)
        #expect(updated.status == 0 && updated.out == "username=alice\npassword=\(second)\n", "\(updated.out)")
        listed = try Self.search(bus, ["server", "example.com"])
        #expect(Self.count(listed, "label = ") == 1 && listed.contains("secret = \(second)"), "\(listed)")

        // Another user on the same host: each get by username finds its own.
        let bobs = "bob-\(UUID().uuidString.prefix(8))"
        #expect(try git("store", site + [("username", "bob"), ("password", bobs)]).status == 0)
        let bob = try git("get", site + [("username", "bob")])
        #expect(bob.status == 0 && bob.out == "username=bob\npassword=\(bobs)\n", "\(bob.out)")
        let alice = try git("get", site + [("username", "alice")])
        #expect(alice.status == 0 && alice.out == "username=alice\npassword=\(second)\n", "\(alice.out)")
        listed = try Self.search(bus, ["server", "example.com"])
        #expect(Self.count(listed, "label = ") == 2, "\(listed)")

        // A port and a path are the attributes `port` and `object`: another item, found only with them.
        let portPath = [("protocol", "https"), ("host", "git.example.org:8443"), ("path", "team/repo.git")]
        #expect(try git("store", portPath + [("username", "carol"), ("password", "with-port")]).status == 0)
        let withPort = try git("get", portPath)
        #expect(withPort.out == "username=carol\npassword=with-port\n", "\(withPort)")
        let otherPort = try git(
            "get", [("protocol", "https"), ("host", "git.example.org:9000"), ("path", "team/repo.git")])
        #expect(otherPort.status == 0 && otherPort.stdout.isEmpty, "\(otherPort)")
        listed = try Self.search(bus, ["server", "git.example.org"])
        #expect(
            listed.contains("attribute.port = 8443") && listed.contains("attribute.object = team/repo.git")
                && listed.contains("label = Git: https://git.example.org:8443/team/repo.git"), "\(listed)")

        // erase: git gives the whole credential; a get then finds no password and succeeds (it
        // echoes the username it was given, as for any miss).
        let erased = try git("erase", site + [("username", "alice"), ("password", second)])
        #expect(erased.status == 0, "\(erased)")
        let gone = try git("get", site + [("username", "alice")])
        #expect(gone.status == 0 && gone.out == "username=alice\n", "\(gone) \(gone.out)")
        let goneGeneric = try runTool(
            security, ["find-generic-password", "-a", "alice", "-l", "Git: https://example.com/"],
            environment: bus.environment)
        #expect(goneGeneric.status == 44, "\(goneGeneric)")
        let kept = try git("get", site)
        #expect(kept.out == "username=bob\npassword=\(bobs)\n", "bob's item stays: \(kept.out)")
        // Without a username, erase removes every item of the host.
        #expect(try git("erase", site).status == 0)
        let none = try git("get", site)
        #expect(none.status == 0 && none.stdout.isEmpty, "\(none) \(none.out)")
        listed = try Self.search(bus, ["server", "example.com"])
        #expect(Self.count(listed, "label = ") == 0, "\(listed)")
        #expect(try git("get", portPath).out == "username=carol\npassword=with-port\n")
    }

    /// Debian's helper searches with `SECRET_SCHEMA_COMPAT_NETWORK`, so with
    /// `xdg:schema=org.gnome.keyring.NetworkPassword`: the internet password that
    /// `security add-internet-password` (or macOS's git helper's shape through SecItem) made is
    /// found, shown with that schema (issue 50, item 14).
    @Test("git-credential-libsecret gets the internet password security stored")
    func getFindsSecurityMadeInternetPassword() throws {
        let bus = try Self.bus()
        defer { bus.stop() }
        let helper = try Self.buildHelper(in: bus.root)
        let security = try requireTool(productsDirectory + "/security")
        let added = try runTool(
            security,
            ["add-internet-password", "-s", "example.com", "-a", "alice", "-r", "htps", "-w", "from-security"],
            environment: bus.environment)
        #expect(added.status == 0, "\(added)")
        let site = [("protocol", "https"), ("host", "example.com")]
        let got = try runTool(helper, ["get"], stdin: Self.credential(site), environment: bus.environment)
        #expect(got.status == 0 && got.out == "username=alice\npassword=from-security\n", "\(got) \(got.out)")
        let http = try runTool(
            helper, ["get"], stdin: Self.credential([("protocol", "http"), ("host", "example.com")]),
            environment: bus.environment)
        #expect(http.status == 0 && http.stdout.isEmpty, "another protocol is another credential: \(http.out)")
    }

    /// A password keychain that is the default and locked. The helper's `get` searches with
    /// `SECRET_SEARCH_UNLOCK`: the locked keychain's index finds git's item by its server and
    /// protocol (`srvr`, `ptcl`) and lists it as locked; libsecret reads its properties (shown
    /// without label or attributes while locked), asks to unlock it, and the provider's prompt
    /// completes when `security unlock-keychain` unlocks the keychain. The helper then prints the
    /// password; the user name is not printed, because libsecret keeps the attributes it read
    /// while the item was locked (docs/secret-service.md, "Not yet"). `store` goes through
    /// `CreateItem`, whose `IsLocked` libsecret answers by unlocking the collection, the same way.
    @Test("A locked keychain: get and store wait on the Unlock prompt until security unlocks, then complete")
    func lockedKeychain() throws {
        let bus = try Self.bus()
        defer { bus.stop() }
        let helper = try Self.buildHelper(in: bus.root)
        let security = try requireTool(productsDirectory + "/security")
        let keychain = bus.root + "/data/keychains/login.keychain-db"
        let created = try runTool(security, ["create-keychain", "-p", "pw", keychain], environment: bus.environment)
        #expect(created.status == 0, "\(created)")
        func git(_ operation: String, _ pairs: [(String, String)]) throws -> ToolResult {
            try runTool(helper, [operation], stdin: Self.credential(pairs), environment: bus.environment)
        }
        let site = [("protocol", "https"), ("host", "example.com")]
        let first = "pw-\(UUID().uuidString.prefix(8))"
        #expect(try git("store", site + [("username", "alice"), ("password", first)]).status == 0)
        #expect(try git("get", site).out == "username=alice\npassword=\(first)\n", "unlocked, it is found")
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        // get while locked waits on the prompt, then prints the password once security unlocks.
        let get = try LaunchedTool(
            helper, ["get"], stdin: Self.credential(site), environment: bus.environment, deadline: 120)
        defer { get.stop() }
        usleep(1_500_000)
        #expect(try get.running(), "get waits for the keychain to be unlocked: \(get.outputSoFar)")
        #expect(
            try runTool(security, ["unlock-keychain", "-p", "pw", keychain], environment: bus.environment).status == 0)
        while try get.running() { usleep(20_000) }
        #expect(get.result.status == 0 && get.result.out == "password=\(first)\n", "\(get.result) \(get.result.out)")
        #expect(try runTool(security, ["lock-keychain", keychain], environment: bus.environment).status == 0)

        // store while locked waits on the prompt, then completes once security unlocks.
        let second = "pw2-\(UUID().uuidString.prefix(8))"
        let store = try LaunchedTool(
            helper, ["store"], stdin: Self.credential(site + [("username", "alice"), ("password", second)]),
            environment: bus.environment, deadline: 120)
        defer { store.stop() }
        usleep(1_500_000)
        #expect(try store.running(), "the store waits for the keychain to be unlocked: \(store.outputSoFar)")
        let unlocked = try runTool(security, ["unlock-keychain", "-p", "pw", keychain], environment: bus.environment)
        #expect(unlocked.status == 0, "\(unlocked)")
        while try store.running() { usleep(20_000) }
        #expect(store.result.status == 0, "\(store.result)")

        // Unlocked: get finds the password the waiting store wrote, in the one item.
        let got = try git("get", site)
        #expect(got.status == 0 && got.out == "username=alice\npassword=\(second)\n", "\(got) \(got.out)")
        let listed = try Self.search(bus, ["server", "example.com"])
        #expect(Self.count(listed, "label = ") == 1, "\(listed)")
    }
}
