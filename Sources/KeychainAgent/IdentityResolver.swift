import KeychainCore
import KeychainLibc

/// Turns a peer's kernel credentials into a ``CallerIdentity``: sandboxed app, manifest-bound
/// executable, or unidentified (or, for a sandbox whose `/.flatpak-info` is unusable, no groups).
///
/// ```swift
/// let resolver = IdentityResolver(defaultGroups: .fromEnvironment())
/// let caller = try resolver.identify(try PeerCredentials(socket: fd))
/// let group = try AccessGroupPolicy.resolve(requested: nil, for: caller)
/// ```
public struct IdentityResolver: Sendable {
    /// Where manifests are read from.
    public var manifests: ManifestDirectory
    /// The groups of unidentified callers: the user's configuration (today `KEYCHAIN_ACCESS_GROUPS`
    /// as the agent sees it, ``KeychainModel/AccessGroups/standard`` when unset).
    public var defaultGroups: AccessGroups
    /// The digest cache for pinned executables.
    public let hashCache: ExecutableHashCache

    /// Executable names that run code they do not contain: never bound by a manifest, because
    /// binding one would hand its groups to every script.
    public static let interpreterNames: Set<String> = [
        "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "deno", "bun", "php",
        "lua", "luajit", "tclsh", "wish", "java", "gjs", "osascript", "sh", "bash", "dash", "zsh", "ksh", "mksh",
        "fish", "csh", "tcsh", "busybox", "env", "swift", "swift-frontend", "awk", "gawk", "mawk", "ld.so",
        "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "gdb", "valgrind", "qemu-x86_64", "r", "rscript", "julia",
        "guile", "racket", "ocaml", "irb", "expect", "pwsh", "dotnet", "mono", "erl", "escript", "elixir",
    ]

    /// Creates a resolver.
    /// - Parameters:
    ///   - manifests: The manifest directory (tests point it at a temporary one).
    ///   - defaultGroups: The groups of unidentified callers.
    ///   - hashCache: A digest cache (a new one by default).
    public init(
        manifests: ManifestDirectory = ManifestDirectory(), defaultGroups: AccessGroups = .fromEnvironment(),
        hashCache: ExecutableHashCache = ExecutableHashCache()
    ) {
        self.manifests = manifests
        self.defaultGroups = defaultGroups
        self.hashCache = hashCache
    }

    /// Identifies `peer`.
    /// - Returns: The strongest identity the kernel facts support.
    /// - Throws: ``AgentError/Code/peerGone`` if the process stopped being the one that connected
    ///   while it was examined.
    public func identify(_ peer: PeerCredentials) throws -> CallerIdentity {
        let identity = identifyUnchecked(peer)
        guard peer.isStillTheSameProcess() else {
            throw AgentError(.peerGone, "pid \(peer.pid) changed while it was being identified")
        }
        return identity
    }

    private func identifyUnchecked(_ peer: PeerCredentials) -> CallerIdentity {
        let catalog = manifests.load().manifests
        let appID: String?
        do {
            appID = try FlatpakInfo.appID(pid: peer.pid)
        } catch {
            return CallerIdentity(tier: .invalidSandbox, accessGroups: AccessGroups([]), pid: peer.pid)
        }
        if let appID {
            return CallerIdentity(
                tier: .sandboxed(appID: appID), accessGroups: AccessGroups(Self.sandboxGroups(appID, catalog)),
                pid: peer.pid)
        }
        if let manifest = boundManifest(for: peer, in: catalog) {
            return CallerIdentity(
                tier: .manifestBound(appID: manifest.appID, executable: peer.executable?.path ?? ""),
                accessGroups: AccessGroups(manifest.accessGroups), pid: peer.pid)
        }
        // The user's own programs manage keychains whatever groups they read (issue 50, item 6).
        return CallerIdentity(
            tier: .unidentified, accessGroups: AccessGroups(defaultGroups.groups, managesKeychains: true),
            pid: peer.pid)
    }

    /// The access groups of the Flatpak app `appID` as a caller in its sandbox gets them
    /// (``sandboxGroups(_:_:)``), for a caller that acts for the app (xdg-desktop-portal, through
    /// the Secret portal); `nil` for a name that is not a valid Flatpak app id.
    public func accessGroups(forSandboxedApp appID: String) -> AccessGroups? {
        guard FlatpakInfo.isValidAppID(appID) else { return nil }
        return AccessGroups(Self.sandboxGroups(appID, manifests.load().manifests))
    }

    /// The groups of a sandbox whose `/.flatpak-info` names `appID`: those a root-owned manifest
    /// for that app id declares when it binds no executable (a Flatpak app's manifest), else the
    /// app id alone, less every group a manifest gives host executables, and none at all for an
    /// app id a manifest binds to host executables.
    ///
    /// Any program of the user can make such a sandbox (`bwrap --unshare-user` with a made-up
    /// `/.flatpak-info`), so the claim proves only that the caller is not another sandboxed app
    /// (which can neither make user namespaces nor change its own root): it must never reach what
    /// manifests keep for bound executables from the user's other programs.
    static func sandboxGroups(_ appID: String, _ catalog: [AppManifest]) -> [String] {
        let bound = catalog.filter { !$0.executables.isEmpty }
        guard !bound.contains(where: { $0.appID == appID }) else { return [] }
        let hostGroups = Set(bound.flatMap(\.accessGroups))
        let declared = catalog.first { $0.appID == appID && $0.executables.isEmpty }?.accessGroups
        return (declared ?? [appID]).filter { !hostGroups.contains($0) }
    }

    /// Whether `path` names an interpreter (`python3.11` and `perl5.36` count as `python3` and `perl`).
    public static func isInterpreter(_ path: String) -> Bool {
        let name = String(path.split(separator: "/").last ?? "").lowercased()
        if interpreterNames.contains(name) { return true }
        let stem = String(name.reversed().drop(while: { $0.isNumber || $0 == "." || $0 == "-" }).reversed())
        return interpreterNames.contains(stem)
    }

    /// The one manifest that validly binds the peer's executable, or `nil` (none, or several).
    private func boundManifest(for peer: PeerCredentials, in catalog: [AppManifest]) -> AppManifest? {
        guard let executable = peer.executable, !Self.isInterpreter(executable.path) else { return nil }
        let candidates = catalog.filter { manifest in manifest.executables.contains { $0.path == executable.path } }
        guard candidates.count == 1, let manifest = candidates.first,
            let entry = manifest.executables.first(where: { $0.path == executable.path })
        else { return nil }
        return (try? verify(entry, peer: peer, identity: executable)) == true ? manifest : nil
    }

    /// Checks the running file is the manifest's file, root-owned, safely placed and, when
    /// pinned, has the manifest's digest. Reads the file through `/proc/PID/exe`, so what is
    /// checked is what runs, not whatever the path names now.
    private func verify(_ entry: AppManifest.Executable, peer: PeerCredentials, identity: ExecutableIdentity) throws
        -> Bool
    {
        let fd = open("/proc/\(peer.pid)/exe", O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var running = stat()
        var named = stat()
        guard fstat(fd, &running) == 0, identity.matches(running), running.st_mode & S_IFMT == S_IFREG,
            lstat(entry.path, &named) == 0, named.st_dev == running.st_dev, named.st_ino == running.st_ino
        else { return false }
        try PathSafety.requireRootOwned(running, entry.path)
        try PathSafety.requireRootOwnedAncestors(of: entry.path)
        if let pinned = entry.sha256 {
            return try hashCache.digest(of: fd, info: running) == pinned
        }
        return true
    }
}
