import KeychainLibc
import TOMLKit

/// A root-owned declaration that binds executables to an app id and its access groups, as a
/// signed entitlement does on macOS; the package manager is the trust anchor.
///
/// ```toml
/// # /usr/share/keychain/apps.d/com.example.mail.toml
/// app-id = "com.example.mail"
/// access-groups = ["com.example.mail", "com.example.shared"]   # the first is where adds go
///
/// [[executable]]
/// path = "/usr/bin/example-mail"
/// sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"   # optional
/// ```
public struct AppManifest: Sendable, Hashable, Decodable {
    /// The app id.
    public var appID: String
    /// The groups, in order; the first is where items without a group are added.
    public var accessGroups: [String]
    /// The executables that are this app.
    public var executables: [Executable]
    /// The manifest file this came from (empty when built in code).
    public var source: String = ""

    /// One bound executable.
    public struct Executable: Sendable, Hashable, Decodable {
        /// The absolute, canonical path (as `/proc/PID/exe` shows it).
        public var path: String
        /// The SHA-256 of the file, lowercase hex, if pinned.
        public var sha256: String?

        /// Creates an entry.
        public init(path: String, sha256: String? = nil) {
            self.path = path
            self.sha256 = sha256?.lowercased()
        }

        private enum CodingKeys: String, CodingKey { case path, sha256 }

        /// Decodes `path` and the optional `sha256`.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                path: try container.decode(String.self, forKey: .path),
                sha256: try container.decodeIfPresent(String.self, forKey: .sha256))
        }
    }

    /// Creates a manifest.
    public init(appID: String, accessGroups: [String], executables: [Executable], source: String = "") {
        self.appID = appID
        self.accessGroups = accessGroups
        self.executables = executables
        self.source = source
    }

    private enum CodingKeys: String, CodingKey {
        case appID = "app-id"
        case accessGroups = "access-groups"
        case executables = "executable"
    }

    /// Decodes the TOML keys `app-id`, `access-groups` and `[[executable]]`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appID = try container.decode(String.self, forKey: .appID)
        accessGroups = try container.decode([String].self, forKey: .accessGroups)
        executables = try container.decodeIfPresent([Executable].self, forKey: .executables) ?? []
    }

    /// Parses and validates manifest text.
    /// - Throws: ``AgentError/Code/invalidManifest`` for bad TOML, an empty app id or group list,
    ///   a `"*"` group, a relative path or a malformed hash.
    public static func parse(_ text: String, source: String = "") throws -> AppManifest {
        var manifest: AppManifest
        do {
            manifest = try TOMLDecoder().decode(AppManifest.self, from: text)
        } catch {
            throw AgentError(.invalidManifest, "\(source): not a valid manifest (\(error))")
        }
        manifest.source = source
        try manifest.validate()
        return manifest
    }

    private func validate() throws {
        guard !appID.isEmpty, !accessGroups.isEmpty, !accessGroups.contains(where: { $0.isEmpty || $0 == "*" })
        else {
            throw AgentError(.invalidManifest, "\(source): app-id and access-groups must be non-empty, without \"*\"")
        }
        for executable in executables {
            guard executable.path.hasPrefix("/"), !executable.path.contains("/../"), !executable.path.contains("/./")
            else {
                throw AgentError(.invalidManifest, "\(source): \(executable.path) is not a canonical absolute path")
            }
            if let hash = executable.sha256 {
                guard hash.count == 64, hash.allSatisfy(\.isHexDigit) else {
                    throw AgentError(.invalidManifest, "\(source): sha256 of \(executable.path) is not 64 hex digits")
                }
            }
        }
    }
}

/// The manifests of one directory (`/usr/share/keychain/apps.d` by default), loaded with the
/// ownership rules: the directory, its ancestors and each `*.toml` file must be root-owned and
/// not writable by group or others. A file that breaks a rule is skipped and reported.
public struct ManifestDirectory: Sendable, Hashable {
    /// The system location.
    public static let systemPath = "/usr/share/keychain/apps.d"

    /// The directory.
    public var path: String

    /// Creates a reference to a directory of manifests.
    public init(path: String = ManifestDirectory.systemPath) { self.path = path }

    /// The result of a load.
    public struct Contents: Sendable {
        /// The manifests that passed every check.
        public var manifests: [AppManifest]
        /// Files skipped, with the reason.
        public var rejected: [AgentError]
    }

    /// Reads every `*.toml` file in the directory, in name order.
    /// - Returns: No manifests (and one rejection) when the directory itself is unsafe; none
    ///   and no rejection when it does not exist.
    public func load() -> Contents {
        var info = stat()
        guard lstat(path, &info) == 0 else { return Contents(manifests: [], rejected: []) }
        do {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw AgentError(.invalidManifest, "\(path) is not a directory")
            }
            try PathSafety.requireRootOwned(info, path)
            try PathSafety.requireRootOwnedAncestors(of: path)
        } catch let error as AgentError {
            return Contents(manifests: [], rejected: [error])
        } catch {
            return Contents(manifests: [], rejected: [AgentError(.invalidManifest, "\(path): \(error)")])
        }
        var contents = Contents(manifests: [], rejected: [])
        for name in fileNames() where name.hasSuffix(".toml") && !name.hasPrefix(".") {
            do {
                contents.manifests.append(try loadFile(path + "/" + name))
            } catch let error as AgentError {
                contents.rejected.append(error)
            } catch {
                contents.rejected.append(AgentError(.invalidManifest, "\(path)/\(name): \(error)"))
            }
        }
        return contents
    }

    private func loadFile(_ file: String) throws -> AppManifest {
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw AgentError(.invalidManifest, "\(file) cannot be opened (a link?)", errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw AgentError(.invalidManifest, "\(file) is not a regular file")
        }
        try PathSafety.requireRootOwned(info, file)
        guard let text = ProcFS.readAll(fd, limit: 256 * 1024) else {
            throw AgentError(.invalidManifest, "\(file) is unreadable or larger than 256 KiB")
        }
        return try AppManifest.parse(text, source: file)
    }

    private func fileNames() -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            names.append(name)
        }
        return names.sorted()
    }
}
