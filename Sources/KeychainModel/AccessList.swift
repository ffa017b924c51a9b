import Foundation

/// An application an item's access list trusts: it reads and changes the item without being
/// asked about (macOS's trusted applications, `SecTrustedApplicationCreateFromPath`).
///
/// On Linux an application is named by what the kernel says of a process, never by what it
/// says of itself:
/// - an executable, by the path its process runs (`/proc/PID/exe`) outside any sandbox, and
///   by that file's SHA-256 when pinned, so that a replaced or changed file is asked about again;
/// - a Flatpak app, by the app id its sandbox's `/.flatpak-info` names;
/// - a system service, by its unit's name in the cgroup the system's service manager put it in
///   (`/system.slice/backup.service`), which only root can make or move a process into.
public struct TrustedApplication: Sendable, Hashable, CustomStringConvertible {
    /// How the application is named.
    public enum Identity: Sendable, Hashable {
        /// A program outside any sandbox, by its executable's absolute path, and the lowercase
        /// hex SHA-256 of its contents when pinned.
        case executable(path: String, sha256: String?)
        /// A Flatpak app, by its app id.
        case flatpak(appID: String)
        /// A unit of the system's service manager (`backup.service`), by the cgroup its processes
        /// run in. A user's own service manager is no name: any program of the user can start a
        /// unit of any name in it.
        case systemService(unit: String)
    }

    /// How the application is named.
    public var identity: Identity

    /// An application named by `identity`.
    public init(_ identity: Identity) {
        self.identity = identity
    }

    /// Whether a `security … -T` argument names an application by an identifier
    /// (`flatpak:APP.ID`, `systemd:UNIT.service`) rather than by an executable's path.
    public static func isIdentifier(_ argument: String) -> Bool {
        argument.hasPrefix("flatpak:") || argument.hasPrefix("systemd:")
    }

    /// The application a `security … -T` argument names: `flatpak:APP.ID` for a Flatpak app,
    /// `systemd:UNIT.service` for a system service, else an absolute executable path, trusted by
    /// path; `nil` for anything else.
    public init?(argument: String) {
        if argument.hasPrefix("flatpak:") {
            self.init(.flatpak(appID: String(argument.dropFirst(8))))
        } else if argument.hasPrefix("systemd:") {
            self.init(.systemService(unit: String(argument.dropFirst(8))))
        } else {
            self.init(.executable(path: argument, sha256: nil))
        }
        guard isWellFormed else { return nil }
    }

    /// The program at `path` as the kernel names it when it runs: by its file's real path
    /// (symbolic links followed, made absolute; `/usr/bin/python3` is `/usr/bin/python3.11`).
    /// `nil` when no executable file is there (unless `mustExist` is false: a program taken off
    /// a list may be gone), or the path cannot be stored.
    public init?(programAt path: String, mustExist: Bool = true) {
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard !mustExist || FileManager.default.isExecutableFile(atPath: real) else { return nil }
        self.init(.executable(path: real, sha256: nil))
        guard isWellFormed else { return nil }
    }

    /// Whether the name can be stored and matched: an absolute path with no line break and no
    /// `..` step, a lowercase 64-digit hex digest, an app id of Flatpak's characters, a service
    /// unit's name.
    public var isWellFormed: Bool {
        switch identity {
        case .executable(let path, let digest):
            let steps = path.split(separator: "/", omittingEmptySubsequences: false)
            return path.hasPrefix("/") && !path.contains("\n") && !path.contains("\0") && !steps.contains("..")
                && !steps.contains(".") && path.utf8.count <= 4096
                && digest.map { $0.count == 64 && $0.allSatisfy { "0123456789abcdef".contains($0) } } ?? true
        case .flatpak(let appID):
            return Self.isValidFlatpakAppID(appID)
        case .systemService(let unit):
            return Self.isValidServiceUnitName(unit)
        }
    }

    /// systemd's rules for a service unit's name (`unit_name_is_valid`): at most 255 bytes,
    /// `.service` after a non-empty prefix of ASCII letters, digits and `:-_.\`, with at most
    /// one `@` (a template's instance).
    package static func isValidServiceUnitName(_ name: String) -> Bool {
        guard name.utf8.count <= 255, name.hasSuffix(".service") else { return false }
        let prefix = name.dropLast(8)
        guard !prefix.isEmpty, prefix.filter({ $0 == "@" }).count <= 1, !prefix.hasPrefix("@") else { return false }
        return prefix.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || ":-_.\\@".unicodeScalars.contains($0)
        }
    }

    /// Flatpak's app id rules (`flatpak_is_valid_name`): at most 255 bytes, at least three
    /// dot-separated elements, each of `[A-Za-z0-9_-]` and not starting with a digit.
    package static func isValidFlatpakAppID(_ name: String) -> Bool {
        guard name.utf8.count <= 255 else { return false }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
            return element.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
                    || $0 == "-"
            }
        }
    }

    /// Whether `caller` is this application.
    public func matches(_ caller: CallingApplication) -> Bool {
        switch identity {
        case .executable(let path, let digest):
            guard caller.executable == path else { return false }
            return digest.map { $0 == caller.executableSHA256() } ?? true
        case .flatpak(let appID):
            return caller.flatpakAppID == appID
        case .systemService(let unit):
            return caller.systemService == unit
        }
    }

    /// Whether `name` names this application: the same executable path, whatever either pins,
    /// or the same Flatpak app id or service unit.
    public func isNamed(by name: TrustedApplication) -> Bool {
        switch (identity, name.identity) {
        case (.executable(let path, _), .executable(let named, _)): return path == named
        case (.flatpak(let appID), .flatpak(let named)): return appID == named
        case (.systemService(let unit), .systemService(let named)): return unit == named
        default: return false
        }
    }

    /// The stored line: `exe PATH`, `exe sha256:HEX PATH`, `flatpak APP.ID`,
    /// `systemd-system UNIT.service`.
    var line: String {
        switch identity {
        case .executable(let path, nil): return "exe " + path
        case .executable(let path, let digest?): return "exe sha256:" + digest + " " + path
        case .flatpak(let appID): return "flatpak " + appID
        case .systemService(let unit): return "systemd-system " + unit
        }
    }

    /// The application a stored line names; `nil` for a line this version cannot read.
    init?(line: Substring) {
        if line.hasPrefix("flatpak ") {
            self.init(.flatpak(appID: String(line.dropFirst(8))))
        } else if line.hasPrefix("systemd-system ") {
            self.init(.systemService(unit: String(line.dropFirst(15))))
        } else if line.hasPrefix("exe sha256:") {
            let rest = line.dropFirst(11)
            guard let space = rest.firstIndex(of: " ") else { return nil }
            self.init(.executable(path: String(rest[rest.index(after: space)...]), sha256: String(rest[..<space])))
        } else if line.hasPrefix("exe ") {
            self.init(.executable(path: String(line.dropFirst(4)), sha256: nil))
        } else {
            return nil
        }
        guard isWellFormed else { return nil }
    }

    /// `/usr/bin/tool`, `/usr/bin/tool (sha256 0a1b2c3d…)`, `Flatpak app org.example.App`,
    /// `system service backup.service`, escaped for a terminal.
    public var description: String {
        switch identity {
        case .executable(let path, nil): return path.printable
        case .executable(let path, let digest?): return path.printable + " (sha256 " + digest.prefix(16) + "…)"
        case .flatpak(let appID): return "Flatpak app " + appID.printable
        case .systemService(let unit): return "system service " + unit.printable
        }
    }
}

/// An item's access list (`kSecAttrAccess`, stored as `acls`): the applications that read and
/// change the item without being asked. Any other caller that may see the item (its access
/// group) is asked about, Deny / Allow / Always Allow, as on macOS; "Always Allow" adds it here.
///
/// An item without an access list is guarded by its access group alone. An empty list
/// (`security add-generic-password -T ""`) trusts no application: every read asks. A list that
/// this version cannot read trusts no application either.
public struct AccessList: Sendable, Hashable {
    /// The trusted applications, in the order they were added.
    public var applications: [TrustedApplication]

    /// A list trusting `applications`.
    public init(applications: [TrustedApplication]) {
        self.applications = applications
    }

    /// The list stored as `serialized`; one trusting no application when it cannot be read
    /// (fail closed: a damaged list never opens an item to everyone).
    public init(serialized: Data) {
        let text = String(decoding: serialized, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first == Self.header else {
            self.init(applications: [])
            return
        }
        lines.removeFirst()
        let parsed = lines.map(TrustedApplication.init(line:))
        self.init(applications: parsed.contains(nil) ? [] : parsed.compactMap { $0 })
    }

    /// The stored form: a header line, then a line for each application.
    public var serialized: Data {
        Data(([String(Self.header)] + applications.map(\.line)).joined(separator: "\n").utf8 + [UInt8(ascii: "\n")])
    }

    private static let header: Substring = "keychain-access-list 1"

    /// Whether `caller` is on the list.
    public func trusts(_ caller: CallingApplication) -> Bool {
        applications.contains { $0.matches(caller) }
    }

    /// The list with `application` on it (once).
    public func adding(_ application: TrustedApplication) -> AccessList {
        applications.contains(application) ? self : AccessList(applications: applications + [application])
    }

    /// The list without the applications `name` names: every entry for that executable path
    /// (pinned or not), that Flatpak app id or that service unit.
    public func removing(_ name: TrustedApplication) -> AccessList {
        AccessList(applications: applications.filter { !$0.isNamed(by: name) })
    }

    /// Whether `other` trusts no application this list does not: each of its entries is one of
    /// this list's. Taking entries off a list gives no program anything, so it needs no trust
    /// (as deleting the item needs none); an unpinned entry where this list pins one is new.
    public func isNarrowed(to other: AccessList) -> Bool {
        other.applications.allSatisfy(applications.contains)
    }
}

/// Who calls the keychain, as keychaind's kernel facts name it: what an access list is matched
/// against (``TrustedApplication/matches(_:)``).
public struct CallingApplication: Sendable {
    /// The executable its process runs, for a process in the agent's own root and mount
    /// namespace; `nil` in a sandbox, where a path names whatever the sandbox put there.
    public var executable: String?
    /// Its Flatpak app id, when it runs in a Flatpak sandbox.
    public var flatpakAppID: String?
    /// The system service it runs in (`backup.service`), from its cgroup: set only where the
    /// system's service manager put it, never for a unit of the user's own service manager.
    public var systemService: String?
    /// The lowercase hex SHA-256 of the running executable, read when a pinned entry asks.
    public var executableSHA256: @Sendable () -> String?
    /// Its process id.
    public var pid: Int32
    /// Why nothing names it, for a caller no list can trust (``unnamed(pid:_:)``).
    public var unnamedReason: String?

    /// How a prompt names it, from the kernel's facts, never from what it calls itself: made
    /// when it is shown, not on every call.
    public var displayName: String {
        if let flatpakAppID { return "the Flatpak app \(flatpakAppID) (pid \(pid))" }
        let service = systemService.map { ", system service \($0)" } ?? ""
        if let executable { return "\(executable) (pid \(pid)\(service))" }
        if let systemService { return "the system service \(systemService) (pid \(pid))" }
        return "pid \(pid) (\(unnamedReason ?? "not identified"))"
    }

    /// Whether an item with `attributes` (persistent identity `id`) gives its secret to this
    /// caller without asking: it has no access list, the person allowed this caller the item
    /// (`allowed`), or its list names the caller. The engine's check on every read, and what
    /// the Secret Service shows as locked.
    public func mayOpen(_ attributes: Attributes, id: UUID?, allowing allowed: Set<UUID>) -> Bool {
        guard let stored = attributes[.access]?.dataValue else { return true }
        if let id, allowed.contains(id) { return true }
        return AccessList(serialized: stored).trusts(self)
    }

    /// A caller nothing names (a process gone, a sandbox with no usable app id, a bus client
    /// whose credentials are unknown), for `reason`: no access list trusts it.
    public static func unnamed(pid: Int32, _ reason: String) -> CallingApplication {
        var caller = CallingApplication(executable: nil, flatpakAppID: nil, executableSHA256: { nil }, pid: pid)
        caller.unnamedReason = reason
        return caller
    }

    /// A caller; `systemService` is the system service its cgroup names, if any.
    public init(
        executable: String?, flatpakAppID: String?, systemService: String? = nil,
        executableSHA256: @escaping @Sendable () -> String?, pid: Int32
    ) {
        self.executable = executable
        self.flatpakAppID = flatpakAppID
        self.systemService = systemService
        self.executableSHA256 = executableSHA256
        self.pid = pid
    }
}

/// What keychaind asks the person when an item's access list does not name the caller: which
/// item (its class and the names a person knows it by), carried by the engine's
/// ``KeychainError/Reason/confirmApplication`` error. Never a secret.
package struct ApplicationConfirmation: Error, Sendable, CustomStringConvertible {
    /// The item's persistent identity.
    package var item: UUID
    /// How a prompt names the item: `"Team wiki" (service wiki, account alice)`.
    package var itemName: String

    package init(item: UUID, attributes: Attributes) {
        self.item = item
        var names: [String] = []
        for (name, title) in [
            (AttributeName.service, "service"), (.server, "server"), (.account, "account"),
        ] {
            if let value = attributes[name]?.stringValue, !value.isEmpty { names.append(title + " " + value) }
        }
        let label = attributes[.label]?.stringValue.map { "\"" + $0 + "\"" }
        itemName = ([label].compactMap { $0 } + (names.isEmpty ? [] : ["(" + names.joined(separator: ", ") + ")"]))
            .joined(separator: " ")
        if itemName.isEmpty { itemName = "an item" }
    }

    package var description: String { "an item's access list does not name the caller" }
}
