import Foundation
@testable import KeychainAgent
import KeychainCore
import KeychainLibc
import Testing

/// A root-owned tree of executables and manifests: `bin/` with copies of the worker, `apps.d/`
/// with manifests, both 0755 under a 0755 temporary directory.
final class ManifestFixture {
    let root: TemporaryDirectory
    let bin: String
    let apps: String
    let agent: TestAgent
    let hashCache = ExecutableHashCache()
    static let defaults = AccessGroups(["user"])

    init() throws {
        root = try TemporaryDirectory()
        bin = try root.make("bin")
        apps = try root.make("apps.d")
        agent = try TestAgent()
    }

    var resolver: IdentityResolver {
        IdentityResolver(
            manifests: ManifestDirectory(path: apps), defaultGroups: Self.defaults, hashCache: hashCache)
    }

    /// Copies the worker to bin/`name`.
    func install(_ name: String) throws -> String { try root.copyWorker(to: "bin/" + name) }

    /// Writes apps.d/`file`.
    @discardableResult
    func manifest(_ file: String, appID: String, groups: [String], executables: [(String, String?)]) throws
        -> String
    {
        var text = "app-id = \"\(appID)\"\naccess-groups = [\(groups.map { "\"\($0)\"" }.joined(separator: ", "))]\n"
        for (path, hash) in executables {
            text += "\n[[executable]]\npath = \"\(path)\"\n"
            if let hash { text += "sha256 = \"\(hash)\"\n" }
        }
        return try root.write("apps.d/" + file, text)
    }

    /// Runs `executable` as a client of the test agent and identifies it.
    func identify(_ executable: String) throws -> CallerIdentity {
        let child = try Child(executable, ["connect", agent.socketPath])
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let (fd, peer) = try agent.acceptPeer()
        defer { close(fd) }
        return try resolver.identify(peer)
    }
}

/// sha256sum's answer, an implementation independent of ours.
func sha256sum(_ path: String) throws -> String {
    String(try run(try requiredTool("sha256sum"), [path]).prefix(64))
}

@Suite("Identity tiers: manifests")
struct ManifestIdentityTests {
    /// The documented limit of the manifest tier (docs/agent.md, issue 50, item 3): a connection
    /// is identified by the program its process runs when it asks, so a program of the user that
    /// connects and then execs a bound executable (keeping the socket for a child) gets that
    /// app's groups, as one that starts the bound executable under a debugger or with
    /// LD_PRELOAD does. The manifest tier keeps honest programs and sandboxed apps apart; it is
    /// not a boundary against the user's own programs.
    @Test("exec after connect: the connection is identified by the program that runs when it asks")
    func execAfterConnectTakesTheBoundIdentity() throws {
        let fixture = try ManifestFixture()
        let app = try fixture.install("app")
        let other = try fixture.install("other")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["com.example.a"], executables: [(app, nil)])
        let child = try Child(other, ["connect", fixture.agent.socketPath])
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let (fd, before) = try fixture.agent.acceptPeer()
        defer { close(fd) }
        #expect(try fixture.resolver.identify(before).tier == .unidentified)
        child.send("exec \(app) secret plain")
        var now = try PeerCredentials(socket: fd)
        for _ in 0..<3000 where now.executable?.path != app {
            usleep(10_000)
            now = try PeerCredentials(socket: fd)
        }
        #expect(!before.isStillTheSameProcess(), "what was identified at first is gone")
        #expect(try fixture.resolver.identify(now).tier == .manifestBound(appID: "com.example.a", executable: app))
    }

    @Test("two executables with different root-owned manifests get disjoint groups; others get the defaults")
    func disjointGroups() throws {
        let fixture = try ManifestFixture()
        let a = try fixture.install("app-a")
        let b = try fixture.install("app-b")
        let other = try fixture.install("other")
        try fixture.manifest(
            "a.toml", appID: "com.example.a", groups: ["com.example.a", "com.example.shared-a"],
            executables: [(a, try sha256sum(a))])
        try fixture.manifest("b.toml", appID: "com.example.b", groups: ["com.example.b"], executables: [(b, nil)])

        let callerA = try fixture.identify(a)
        let callerB = try fixture.identify(b)
        let stranger = try fixture.identify(other)
        #expect(callerA.tier == .manifestBound(appID: "com.example.a", executable: a))
        #expect(callerA.accessGroups.groups == ["com.example.a", "com.example.shared-a"])
        #expect(callerB.tier == .manifestBound(appID: "com.example.b", executable: b))
        #expect(callerB.accessGroups.groups == ["com.example.b"])
        #expect(stranger.tier == .unidentified && stranger.accessGroups.groups == ManifestFixture.defaults.groups)
        // The user's own programs manage keychains whatever groups they read; bound apps without
        // `*` do not (issue 50, item 6).
        #expect(stranger.accessGroups.managesKeychains && !ManifestFixture.defaults.managesKeychains)
        #expect(!callerA.accessGroups.managesKeychains && !callerB.accessGroups.managesKeychains)
        #expect(Set(callerA.accessGroups.groups).isDisjoint(with: callerB.accessGroups.groups))

        // Neither can name the other's group, for writes or for queries.
        for (caller, foreign) in [(callerA, "com.example.b"), (callerB, "com.example.a"), (stranger, "com.example.a")] {
            #expect(throws: AgentError.self) { try AgentGroupProbe.write(foreign, caller) }
            #expect(throws: AgentError.self) { try AccessGroupPolicy.queryScope(requested: foreign, for: caller) }
        }
        #expect(try AccessGroupPolicy.resolve(requested: nil, for: callerA) == "com.example.a")
        #expect(try AccessGroupPolicy.resolve(requested: nil, for: stranger) == "user")
    }

    @Test("a group-writable manifest is ignored (and reported); its neighbour still binds")
    func groupWritableManifestIgnored() throws {
        let fixture = try ManifestFixture()
        let a = try fixture.install("app-a")
        let b = try fixture.install("app-b")
        let manifestA = try fixture.manifest("a.toml", appID: "com.example.a", groups: ["a"], executables: [(a, nil)])
        try fixture.manifest("b.toml", appID: "com.example.b", groups: ["b"], executables: [(b, nil)])
        #expect(chmod(manifestA, 0o664) == 0)
        #expect(try fixture.identify(a).tier == .unidentified)
        #expect(try fixture.identify(b).appID == "com.example.b")
        let rejected = ManifestDirectory(path: fixture.apps).load().rejected
        #expect(rejected.contains { $0.message.contains(manifestA) && $0.message.contains("writable") })
    }

    @Test(
        "an unsafe place voids the binding",
        arguments: ["executable dir 0775", "manifest dir 0775", "executable 0775", "executable not root's"])
    func unsafePlacesIgnored(change: String) throws {
        let fixture = try ManifestFixture()
        let a = try fixture.install("app-a")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["a"], executables: [(a, nil)])
        #expect(try fixture.identify(a).appID == "com.example.a", "bound before the change")
        switch change {
        case "executable dir 0775": #expect(chmod(fixture.bin, 0o775) == 0)
        case "manifest dir 0775": #expect(chmod(fixture.apps, 0o775) == 0)
        case "executable 0775": #expect(chmod(a, 0o775) == 0)
        default: #expect(chown(a, 65534, 65534) == 0)
        }
        #expect(try fixture.identify(a).tier == .unidentified)
    }

    @Test("a sha256 mismatch voids the binding; the digest is cached until the file changes")
    func digestPinning() throws {
        let fixture = try ManifestFixture()
        let a = try fixture.install("app-a")
        let b = try fixture.install("app-b")
        let wrong = String(repeating: "0", count: 64)
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["a"], executables: [(a, try sha256sum(a))])
        try fixture.manifest("b.toml", appID: "com.example.b", groups: ["b"], executables: [(b, wrong)])
        #expect(try fixture.identify(b).tier == .unidentified)
        #expect(fixture.hashCache.filesHashed == 1)
        #expect(try fixture.identify(a).appID == "com.example.a")
        #expect(try fixture.identify(a).appID == "com.example.a")
        #expect(fixture.hashCache.filesHashed == 2, "the second identification of a used the cache")
        #expect(utimes(a, nil) == 0)  // new mtime and ctime: the cache key changes
        #expect(try fixture.identify(a).appID == "com.example.a")
        #expect(fixture.hashCache.filesHashed == 3)
    }

    @Test("an interpreter never binds, even when a manifest names it")
    func interpretersNeverBind() throws {
        let fixture = try ManifestFixture()
        let python = try fixture.install("python3")
        let perl = try fixture.install("perl5.36")
        try fixture.manifest(
            "py.toml", appID: "com.example.py", groups: ["py"], executables: [(python, nil), (perl, nil)])
        #expect(try fixture.identify(python).tier == .unidentified)
        #expect(try fixture.identify(perl).tier == .unidentified)
    }

    @Test(
        "interpreter names",
        arguments: [
            ("/usr/bin/python3", true), ("/usr/bin/python3.11", true), ("/usr/bin/perl5.36.0", true),
            ("/usr/bin/node", true), ("/bin/bash", true), ("/usr/bin/dash", true), ("/usr/bin/ruby3.1", true),
            ("/usr/lib/jvm/bin/java", true), ("/usr/bin/example-mail", false), ("/usr/bin/security", false),
        ])
    func interpreterNames(path: String, isInterpreter: Bool) {
        #expect(IdentityResolver.isInterpreter(path) == isInterpreter)
    }

    @Test("a byte-identical copy at another path is not bound (the manifest names a path, not content)")
    func copyAtAnotherPathNotBound() throws {
        let fixture = try ManifestFixture()
        let a = try fixture.install("app-a")
        let copy = try fixture.install("app-a-copy")
        let digest = try sha256sum(a)
        #expect(try sha256sum(copy) == digest)
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["a"], executables: [(a, digest)])
        #expect(try fixture.identify(copy).tier == .unidentified)
        #expect(try fixture.identify(a).appID == "com.example.a")
    }

    @Test("two manifests claiming one executable bind neither")
    func ambiguousClaimsBindNothing() throws {
        let fixture = try ManifestFixture()
        let a = try fixture.install("app-a")
        try fixture.manifest("a.toml", appID: "com.example.a", groups: ["a"], executables: [(a, nil)])
        try fixture.manifest("z.toml", appID: "com.example.z", groups: ["z"], executables: [(a, nil)])
        #expect(try fixture.identify(a).tier == .unidentified)
    }

    @Test(
        "malformed manifests are rejected",
        arguments: [
            "access-groups = [\"a\"]\n",
            "app-id = \"x\"\naccess-groups = []\n",
            "app-id = \"x\"\naccess-groups = [\"*\"]\n",
            "app-id = \"x\"\naccess-groups = [\"a\"]\n[[executable]]\npath = \"bin/x\"\n",
            "app-id = \"x\"\naccess-groups = [\"a\"]\n[[executable]]\npath = \"/bin/x\"\nsha256 = \"abc\"\n",
            "app-id = = \n",
        ])
    func malformed(text: String) {
        #expect {
            try AppManifest.parse(text, source: "t.toml")
        } throws: { ($0 as? AgentError)?.code == .invalidManifest }
    }
}

enum AgentGroupProbe {
    static func write(_ group: String, _ caller: CallerIdentity) throws {
        _ = try AccessGroupPolicy.resolve(requested: group, for: caller)
    }
}

@Suite("Identity tiers: Flatpak sandbox")
struct FlatpakIdentityTests {
    /// Runs the worker under bwrap with `info` at the sandbox's `/.flatpak-info` (or a link to it).
    func sandboxed(info: String, asLink: Bool = false, manifests: String? = nil) throws -> CallerIdentity {
        let bwrap = try requiredTool("bwrap")
        let fixture = try ManifestFixture()
        let worker = try fixture.install("app")
        let infoPath = try fixture.root.write("flatpak-info", info)
        let socketDirectory = (fixture.agent.socketPath as NSString).deletingLastPathComponent
        var arguments = [
            "--unshare-pid", "--die-with-parent", "--tmpfs", "/", "--ro-bind", "/usr", "/usr",
            "--ro-bind", "/opt", "/opt", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
            "--ro-bind", fixture.root.path, fixture.root.path, "--bind", socketDirectory, socketDirectory,
        ]
        arguments += asLink ? ["--symlink", infoPath, "/.flatpak-info"] : ["--ro-bind", infoPath, "/.flatpak-info"]
        arguments += [worker, "connect", fixture.agent.socketPath]
        let child = try Child(bwrap, arguments)
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        let (fd, peer) = try fixture.agent.acceptPeer()
        defer { close(fd) }
        var resolver = fixture.resolver
        if let manifests { resolver.manifests = ManifestDirectory(path: manifests) }
        return try resolver.identify(peer)
    }

    @Test("a process under bwrap with a .flatpak-info at its / gets that app id and only its groups")
    func bwrapSandboxIdentified() throws {
        let caller = try sandboxed(info: "[Application]\nname=org.example.Sandboxed\nruntime=x\n\n[Instance]\nx=1\n")
        #expect(caller.tier == .sandboxed(appID: "org.example.Sandboxed"))
        #expect(caller.accessGroups.groups == ["org.example.Sandboxed"])
        #expect(!caller.accessGroups.managesKeychains)
        #expect(throws: AgentError.self) { try AccessGroupPolicy.resolve(requested: "user", for: caller) }
        #expect(throws: AgentError.self) { try AccessGroupPolicy.queryScope(requested: "default", for: caller) }
    }

    @Test("a sandboxed app id takes the groups a root-owned manifest declares for it")
    func sandboxGroupsFromManifest() throws {
        let directory = try TemporaryDirectory()
        let apps = try directory.make("apps.d")
        _ = try directory.write(
            "apps.d/s.toml", "app-id = \"org.example.Sandboxed\"\naccess-groups = [\"team.sandboxed\", \"shared\"]\n")
        let caller = try sandboxed(info: "[Application]\nname=org.example.Sandboxed\n", manifests: apps)
        #expect(caller.tier == .sandboxed(appID: "org.example.Sandboxed"))
        #expect(caller.accessGroups.groups == ["team.sandboxed", "shared"])
    }

    /// Any program of the user can make a sandbox with a made-up `/.flatpak-info` (this one is
    /// bwrap's, as `bwrap --unshare-user` makes it without root): the claim must not reach what
    /// root-owned manifests keep for host executables (issue 50, item 1).
    @Test("a sandbox claim gets no group a manifest gives host executables, and nothing for a bound app id")
    func sandboxClaimCannotReachBoundGroups() throws {
        let directory = try TemporaryDirectory()
        let apps = try directory.make("apps.d")
        _ = try directory.write(
            "apps.d/mail.toml",
            """
            app-id = "com.example.mail"
            access-groups = ["com.example.mail", "com.example.shared"]

            [[executable]]
            path = "/usr/bin/true"
            """)
        _ = try directory.write(
            "apps.d/s.toml",
            "app-id = \"org.example.Sandboxed\"\naccess-groups = [\"team.sandboxed\", \"com.example.shared\"]\n")
        let forged = try sandboxed(info: "[Application]\nname=com.example.mail\n", manifests: apps)
        #expect(forged.tier == .sandboxed(appID: "com.example.mail"))
        #expect(forged.accessGroups.groups.isEmpty, "\(forged.accessGroups.groups)")
        #expect(throws: AgentError.self) { try AccessGroupPolicy.queryScope(requested: nil, for: forged) }
        let flatpak = try sandboxed(info: "[Application]\nname=org.example.Sandboxed\n", manifests: apps)
        #expect(flatpak.accessGroups.groups == ["team.sandboxed"])
    }

    @Test("a .flatpak-info that is a symbolic link inside the sandbox gets no groups at all")
    func linkedInfoRefused() throws {
        let caller = try sandboxed(info: "[Application]\nname=org.example.Sandboxed\n", asLink: true)
        #expect(caller.tier == .invalidSandbox && caller.accessGroups.groups.isEmpty, "fails closed")
        #expect(throws: AgentError.self) { try AccessGroupPolicy.resolve(requested: nil, for: caller) }
    }

    @Test(
        "an invalid app id gets no groups at all",
        arguments: ["[Application]\nname=../../etc\n", "[Instance]\nname=a.b.c\n"])
    func invalidAppIDRefused(info: String) throws {
        let caller = try sandboxed(info: info)
        #expect(caller.tier == .invalidSandbox && caller.accessGroups.groups.isEmpty)
    }

    @Test("an unsandboxed process that writes its own .flatpak-info gets no app id")
    func forgedInfoOutsideSandbox() throws {
        let fixture = try ManifestFixture()
        let worker = try fixture.install("app")
        let own = try fixture.root.make("fake-root", mode: 0o755)
        let child = try Child(worker, ["fake-flatpak", own, fixture.agent.socketPath, "org.example.Forged"])
        defer { child.finish() }
        try #require(child.readLine() == "connected")
        #expect(FileManager.default.fileExists(atPath: own + "/.flatpak-info"))
        let (fd, peer) = try fixture.agent.acceptPeer()
        defer { close(fd) }
        #expect(try FlatpakInfo.appID(pid: peer.pid) == nil)
        let caller = try fixture.resolver.identify(peer)
        #expect(caller.tier == .unidentified && caller.accessGroups.groups == ManifestFixture.defaults.groups)
    }

    @Test("this (unsandboxed) process has no Flatpak app id, and shares the agent's root and mount namespace")
    func hostProcess() throws {
        #expect(try FlatpakInfo.appID(pid: getpid()) == nil)
        #expect(!FlatpakInfo.isInSeparateRoot(pid: getpid()))
    }

    @Test("a bwrap child is seen in a separate root; its host-side twin is not")
    func separateRootDetected() throws {
        let bwrap = try requiredTool("bwrap")
        let sandbox = try Child(
            bwrap, ["--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "/bin/sh", "-c", "echo up; read x"])
        defer { sandbox.finish() }
        #expect(sandbox.readLine() == "up")
        let host = try Child("/bin/sh", ["-c", "echo up; read x"])
        defer { host.finish() }
        #expect(host.readLine() == "up")
        // bwrap forks: the shell is bwrap's child. Find it through /proc/<bwrap>/task/*/children.
        let children =
            (try? String(contentsOfFile: "/proc/\(sandbox.pid)/task/\(sandbox.pid)/children", encoding: .utf8)) ?? ""
        let inner = try #require(children.split(separator: " ").first.flatMap { Int32($0) })
        #expect(FlatpakInfo.isInSeparateRoot(pid: inner))
        #expect(!FlatpakInfo.isInSeparateRoot(pid: host.pid))
    }
}
